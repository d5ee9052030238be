"""The smoke run of bench/large_wheels.py at a few MB: every installer and the disk
probe reported, with a throughput."""

from __future__ import annotations

import pytest

from benchrun import run_bench

pytestmark = pytest.mark.bench


CONTENDERS = {"disk", "disk (write only)", "pip", "uv", "wheelwise"}


def test_smoke_run_at_a_few_megabytes() -> None:
    # The script checks each install itself (the three distributions, every member at
    # its size, no .pyc) and exits non-zero on a wrong venv or a failed installer.
    report = run_bench(
        "large_wheels.py",
        "--megabytes", "4", "--small-files", "120", "--pause", "0", "--runs", "1",
        timeout=300,
    )  # fmt: skip
    assert report["wheels"] == 3
    assert report["member_bytes"] >= 4_000_000
    # Nine shared objects, the small modules, and two metadata files per wheel.
    assert report["files"] == 9 + 120 + 3 * 3
    assert set(report["median_s"]) == CONTENDERS
    assert set(report["mb_per_s"]) == CONTENDERS
    assert all(rate > 0 for rate in report["mb_per_s"].values())
    assert set(report["of_disk_limit"]) == {"pip", "uv", "wheelwise"}
    assert set(report["ratios"]) == {"wheelwise/uv", "wheelwise/pip", "uv/pip"}
