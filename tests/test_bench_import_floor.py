"""The smoke run of bench/import_floor.py: every row timed, every module it names
importable (the script fails otherwise)."""

from __future__ import annotations

import pytest

from benchrun import run_bench

pytestmark = pytest.mark.bench


def test_smoke_run() -> None:
    report = run_bench("import_floor.py", "--runs", "1", timeout=120)
    assert set(report["medians"]) == {
        "interpreter (python -c pass)",
        "chosen libraries",
        "wheelwise install's modules",
    }
    assert all(len(times) == 1 and times[0] > 0 for times in report["times"].values())
