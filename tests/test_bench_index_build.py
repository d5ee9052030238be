"""The smoke run of bench/index_build.py: every peer and the update are reported."""

from __future__ import annotations

import pytest

from benchrun import run_bench

pytestmark = pytest.mark.bench


def test_smoke_run() -> None:
    report = run_bench("index_build.py", "--wheels", "40", "--runs", "1", timeout=600)
    assert report["wheels"] == 40
    assert report["added"] == 10
    names = set(report["median_s"])
    assert {
        "wheelwise index build (new site)",
        "simple503 -e (in place)",
        "dumb-pypi, full (list maker + dumb-pypi)",
        "dumb-pypi, pages only",
        "wheelwise index build (10 wheels added)",
    } == names
    assert all(seconds > 0 for seconds in report["median_s"].values())
    assert set(report["over_wheelwise"]) == names - {
        "wheelwise index build (new site)",
        "wheelwise index build (10 wheels added)",
    }
    assert report["updated_site_identical"] is True
    assert set(report["aims"]) == {"full_build_3x", "update_under_0.5s"}
