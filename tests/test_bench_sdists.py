"""The smoke run of bench/sdists.py on two small source-only projects (built by the
tests' own backend, published beside them) instead of the five from the registry:
every installer, cold and warm, with peak RSS and the ratios."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun import run_bench
from buildkit import backend_wheel, project, sdist

pytestmark = pytest.mark.bench


def test_smoke_run_on_two_sdists(tmp_path: Path) -> None:
    files = tmp_path / "files"
    backend_wheel(files)
    for name in ("srcone", "srctwo"):
        sdist(project(tmp_path / name, name, "1.0"), files, name, "1.0")
    report = run_bench(
        "sdists.py",
        "--files", str(files), "--requirement", "srcone", "--requirement", "srctwo",
        "--rounds", "1", "--no-warm-up",
        timeout=300,
    )  # fmt: skip
    assert set(report["median_s"]) == {"uv", "wheelwise", "pip"}
    for phases in report["median_s"].values():
        assert phases["cold"] > 0
        assert phases["warm"] > 0
    assert all(rss > 0 for rss in report["peak_rss_mb"].values())
    assert set(report["ratios"]) == {
        "wheelwise/pip cold",
        "wheelwise/uv cold",
        "wheelwise/pip warm",
        "wheelwise/uv warm",
        "wheelwise above the floor/uv warm",
    }
    # Measured, not compared: one round on a busy machine can put the floor above a
    # warm install (the order of two timings is the benchmark's to report).
    assert report["import_floor_s"] > 0
