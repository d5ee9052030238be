"""The smoke run of bench/stream_unpack.py on a small wheel instead of torch's: each
tree's runs timed, and every member unpacked and checked."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from benchrun import run_bench
from wheelfactory import make_wheel

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parent.parent


def test_smoke_run_on_a_small_wheel(tmp_path: Path) -> None:
    noise = random.Random(5)
    members = {f"beta/sub{i % 7}/m{i}.py": noise.randbytes(2000) for i in range(120)}
    members["beta/big.so"] = noise.randbytes(3 << 20)
    wheel = make_wheel(tmp_path, "beta-1.0-py3-none-any.whl", extra_members=members, record=True)
    src = str(ROOT / "src")
    report = run_bench(
        "stream_unpack.py", "--wheel", str(wheel), "--tree", src, "--runs", "2", "--pause", "0",
        timeout=300,
    )  # fmt: skip
    assert report["wheel"] == wheel.name
    assert report["files"][src] >= len(members)
    assert len(report["runs_wall_s"][src]) == 2
    medians = report["median_s"][src]
    # CPU times come in clock ticks (os.times): a small wheel's system time may read 0.
    assert medians["wall"] > 0
    assert medians["user"] >= 0
    assert medians["sys"] >= 0
