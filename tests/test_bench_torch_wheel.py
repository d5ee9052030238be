"""The smoke run of bench/torch_wheel.py on a small wheel instead of torch's: every
rewrite timed, and pip through the proxy behind a throttled upstream."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from benchrun import run_bench
from wheelfactory import make_wheel

pytestmark = pytest.mark.bench


def test_smoke_run_on_a_small_wheel(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()
    blob = {"beta/blob.bin": random.Random(3).randbytes(1 << 20)}
    wheel = make_wheel(folder, "beta-1.0-py3-none-any.whl", extra_members=blob, record=True)
    report = run_bench(
        "torch_wheel.py", "--wheel", str(wheel), "--rounds", "1", "--rate", "4", timeout=300
    )
    assert set(report["median_seconds"]) == {"cp", "cp+sync", "read", "make", "strip"}
    assert all(seconds > 0 for seconds in report["median_seconds"].values())
    assert report["make_over_cp_read"] > 0
    assert report["make_over_synced_cp_read"] > 0
    proxy = report["proxy"]
    assert proxy["pip_succeeded"], proxy
    assert proxy["same_bytes_as_stored"]
