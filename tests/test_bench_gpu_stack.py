"""The smoke run of bench/gpu_stack.py on two small wheels instead of the CUDA stack:
every installer, cold and warm, with peak RSS, installed size and the ratios."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchrun import run_bench
from installkit import alpha_wheel, simple_wheel

pytestmark = pytest.mark.bench


@pytest.mark.parametrize(
    "tls",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.skipif(
                shutil.which("nginx", path="/usr/sbin:/usr/local/sbin:/usr/bin") is None,
                reason="--tls needs nginx",
            ),
        ),
    ],
)
def test_smoke_run_on_two_wheels(tmp_path: Path, tls: bool) -> None:
    wheels = tmp_path / "wheels"
    alpha_wheel(wheels, "1.0")
    simple_wheel(wheels, "beta", "1.0")
    # The script checks that every wheel of the folder is installed: ask for both.
    report = run_bench(
        "gpu_stack.py",
        "--wheels", str(wheels), "--requirement", "alpha", "--requirement", "beta",
        "--rounds", "1", "--no-warm-up", "--settle", "0", "--warm-runs", "1",
        *(["--tls"] if tls else []),
        timeout=300,
    )  # fmt: skip
    assert report["wheels"] == 2
    assert report["server"].endswith(", HTTPS") == tls
    assert set(report["median_s"]) == {"uv", "wheelwise", "pip"}
    for phases in report["median_s"].values():
        assert phases["cold"] > 0
        assert phases["warm"] > 0
    assert all(rss > 0 for rss in report["peak_rss_mb"].values())
    assert set(report["ratios"]) == {
        "wheelwise/uv cold",
        "wheelwise/uv warm",
        "wheelwise/pip cold",
        "wheelwise above the floor/uv warm",
    }
    floor = report["import_floor_s"]
    # Measured, not compared: one round on a busy machine can put the floor above a
    # warm install.
    assert floor > 0
    above = (report["median_s"]["wheelwise"]["warm"] - floor) / report["median_s"]["uv"]["warm"]
    assert report["ratios"]["wheelwise above the floor/uv warm"] == pytest.approx(above)


def test_contenders_leave_pip_out(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    alpha_wheel(wheels, "1.0")
    report = run_bench(
        "gpu_stack.py",
        "--wheels", str(wheels), "--requirement", "alpha", "--contenders", "uv,wheelwise",
        "--rounds", "1", "--no-warm-up", "--settle", "0.2", "--warm-runs", "2",
        timeout=300,
    )  # fmt: skip
    assert set(report["median_s"]) == {"uv", "wheelwise"}
    assert report["settle_s"] == 0.2
    assert report["warm_runs"] == 2
    assert {name: len(runs["warm"]) for name, runs in report["runs_s"].items()} == {
        "uv": 2,
        "wheelwise": 2,
    }
    assert set(report["ratios"]) == {
        "wheelwise/uv cold",
        "wheelwise/uv warm",
        "wheelwise above the floor/uv warm",
    }
