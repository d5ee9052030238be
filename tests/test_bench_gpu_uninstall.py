"""The smoke run of bench/gpu_uninstall.py on a small stand-in for the torch stack:
torch 2.14.1 and the two CUDA wheels it takes out, timed for uv and wheelwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun import run_bench
from installkit import simple_wheel
from wheelfactory import make_wheel

pytestmark = pytest.mark.bench


def test_smoke_run_on_a_small_stack(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    make_wheel(
        wheels,
        "torch-2.14.1-py3-none-any.whl",
        extra_members={"torch/__init__.py": b"", "torch/sub/mod.py": b"X = 1\n"},
        record=True,
        requires_dist=["nvidia-cublas", "nvidia-cudnn-cu13", "beta"],
    )
    for name in ("nvidia_cublas", "nvidia_cudnn_cu13", "beta"):
        simple_wheel(wheels, name, "1.0")
    report = run_bench(
        "gpu_uninstall.py", "--wheels", str(wheels), "--rounds", "1", "--settle", "0",
        timeout=300,
    )  # fmt: skip
    assert report["rounds"] == 1
    for name in ("uv", "wheelwise"):
        assert set(report["runs_s"][name]) == {"uninstall", "reinstall"}
        assert all(len(runs) == 1 for runs in report["runs_s"][name].values())
        assert all(seconds > 0 for seconds in report["median_s"][name].values())
    assert set(report["ratios"]) == {"wheelwise/uv uninstall", "wheelwise/uv reinstall"}
