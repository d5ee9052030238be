"""The smoke run of bench/plain_wheel.py on this interpreter's extension modules."""

from __future__ import annotations

import sysconfig

import pytest

from benchrun import run_bench

pytestmark = pytest.mark.bench


def test_smoke_run() -> None:
    libraries = sysconfig.get_config_var("DESTSHARED")
    report = run_bench(
        "plain_wheel.py", "--mib", "1", "--runs", "1", "--lib-dir", libraries, timeout=120
    )
    assert report["wheel_bytes"] > 0
    assert report["uncompressed_bytes"] >= 1 << 20
    assert report["rewrite_s"] > 0
    assert report["verify_s"] > 0
