"""The smoke run of bench/noop.py on two small wheels instead of the 31 of the
registry: every installer, with the index up and down (each run checks that it exits
0 and changes nothing), and the ratios."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun import run_bench
from installkit import simple_wheel

pytestmark = pytest.mark.bench


def test_smoke_run_on_two_wheels(tmp_path: Path) -> None:
    simple_wheel(tmp_path, "alpha", "1.0")
    simple_wheel(tmp_path, "beta", "1.0")
    report = run_bench(
        "noop.py", "--wheels", str(tmp_path), "--requirement", "alpha",
        "--requirement", "beta", "--rounds", "1", "--no-warm-up",
        timeout=300,
    )  # fmt: skip
    assert report["requirements"] == 2
    assert set(report["median_s"]) == {"uv", "wheelwise", "pip"}
    for phases in report["median_s"].values():
        assert phases["up"] > 0
        assert phases["down"] > 0
    assert set(report["ratios"]) == {
        "wheelwise/uv up", "wheelwise/uv down", "wheelwise/pip up", "wheelwise/pip down",
    }  # fmt: skip
