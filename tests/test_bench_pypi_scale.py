"""The smoke run of bench/pypi_scale.py: every installer and mode, on the backtracking
set and the ordinary one, checked.

``boto3`` and ``pydantic`` run the same code of the script on other data; the
script's full runs (docs/benchmarks.md) take every set.
"""

from __future__ import annotations

import pytest
from packaging.version import Version

from benchrun import run_bench

pytestmark = pytest.mark.bench


INSTALLERS = {"pip", "uv", "wheelwise"}
SETS = {"boto3-backtrack", "ordinary"}


def test_smoke_run_reports_every_installer() -> None:
    # The script checks each install itself and exits non-zero on a wrong venv, a
    # request for a file that does not exist, or a failed installer.
    report = run_bench(
        "pypi_scale.py",
        "--runs",
        "1",
        "--no-warm-up",
        "--scale",
        "0.02",
        "--sets",
        ",".join(sorted(SETS)),
        timeout=600,
    )
    assert set(report["median_s"]) == SETS
    for set_name, modes in report["median_s"].items():
        assert set(modes) == {"cold", "warm"}
        for mode, by_installer in modes.items():
            assert set(by_installer) == INSTALLERS, (set_name, mode)
            assert all(seconds > 0 for seconds in by_installer.values())
            # A cold install has to fetch the pages from the index.
            if mode == "cold":
                traffic = report["requests"][set_name][mode]
                assert all(traffic[n][0]["pages"] > 0 for n in INSTALLERS), traffic
    backtracked = report["expected"]["boto3-backtrack"]
    newest = report["expected"]["boto3"]
    assert Version(backtracked["scale-botocore"]) < Version("1.30")
    assert Version(backtracked["scale-boto3"]) < Version(newest["scale-boto3"])
    assert {aim["ratio"] for aim in report["aims"]} == {
        "wheelwise/pip",
        "wheelwise/uv",
        "wheelwise above the floor/uv",
    }
    assert all(aim["overall"] is not None for aim in report["aims"])
    floor = report["import_floor_s"]
    medians = report["median_s"]["ordinary"]["warm"]
    # Measured, not compared: one round on a busy machine can put the floor above a
    # warm install.
    assert floor > 0
    assert report["ratios"]["ordinary"]["warm"]["wheelwise above the floor/uv"] == pytest.approx(
        (medians["wheelwise"] - floor) / medians["uv"]
    )
