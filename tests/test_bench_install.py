"""The smoke run of bench/install.py on its generated variant set: every installer
reported, and the builds each one installed."""

from __future__ import annotations

import pytest

from benchrun import run_bench

pytestmark = pytest.mark.bench


CHOOSERS = ("uv", "wheelwise", "wheelwise-markers")


def test_smoke_run_of_the_variant_set() -> None:
    # The script checks each install itself (distributions, builds, the same builds
    # from every installer that chooses variants, no .pyc) and exits non-zero on a
    # wrong venv or a failed installer.
    report = run_bench(
        "install.py", "--set", "variants", "--runs", "1", "--no-warm-up", timeout=300
    )
    assert report["set"] == "variants"
    assert set(report["median_s"]) == {"pip", *CHOOSERS}
    assert all(seconds > 0 for seconds in report["median_s"].values())
    assert report["simulated_machine"] == {
        "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "13.0",
        "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0",
    }
    builds = report["builds"]
    assert builds["pip"] == {"faketorch": None, "fakesimd": None}
    # The x86-64 level is the CPU's own, so fakesimd's build depends on the machine;
    # every installer that chooses variants must agree on it.
    assert {name: builds[name]["faketorch"] for name in CHOOSERS} == dict.fromkeys(
        CHOOSERS, "cu130"
    )
    assert len({builds[name]["fakesimd"] for name in CHOOSERS}) == 1
    assert set(report["ratios"]) >= {
        "wheelwise/uv",
        "wheelwise-markers/uv",
        "uv/pip",
        "wheelwise above the floor/uv",
        "wheelwise-markers above the floor/uv",
    }
    floor = report["import_floor_s"]
    # Measured, not compared: one round on a busy machine can put the floor above a
    # warm install.
    assert floor > 0
    above = (report["median_s"]["wheelwise"] - floor) / report["median_s"]["uv"]
    assert report["ratios"]["wheelwise above the floor/uv"] == pytest.approx(above)
    assert set(report["aims"]) == {"wheelwise/uv <= 1.0x", "wheelwise above the floor/uv <= 1.5x"}
