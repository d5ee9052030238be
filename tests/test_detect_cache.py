"""The detection cache, its fingerprint and the per-user cache directory."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import platformdirs
import pytest

from wheelwise.cachedir import user_cache_dir
from wheelwise.providers import cache
from wheelwise.providers.fingerprint import (
    OVERRIDE_VARIABLES,
    cpuinfo_identity,
    machine_fingerprint,
)

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz
cpu MHz\t\t: {mhz}
flags\t\t: fpu sse sse2 avx avx2
bogomips\t: {bogomips}

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz
cpu MHz\t\t: {mhz}
flags\t\t: fpu sse sse2 avx avx2
bogomips\t: {bogomips}
"""


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(tmp_path / "cache"))
    for name in OVERRIDE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_cache_dir_override(tmp_path: Path) -> None:
    assert user_cache_dir() == str(tmp_path / "cache")


def test_cache_dir_matches_platformdirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("WHEELWISE_CACHE_DIR")
    expected = platformdirs.user_cache_dir("wheelwise", appauthor=False)
    assert user_cache_dir() == expected
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert user_cache_dir() == platformdirs.user_cache_dir("wheelwise", appauthor=False)
        assert user_cache_dir() == str(tmp_path / "xdg" / "wheelwise")


def test_cpuinfo_identity_ignores_changing_lines() -> None:
    first = cpuinfo_identity(CPUINFO.format(mhz="800.000", bogomips="6800.00"))
    second = cpuinfo_identity(CPUINFO.format(mhz="3400.123", bogomips="6801.00"))
    assert first == second
    assert "flags\t\t: fpu sse sse2 avx avx2" in first
    assert first.count("flags") == 1  # identical processors collapse to one line
    assert "MHz" not in first


def test_fingerprint_follows_the_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO.format(mhz="800", bogomips="1"))
    monkeypatch.setenv("WHEELWISE_CPUINFO", str(cpuinfo))
    base = machine_fingerprint("1.0")
    cpuinfo.write_text(CPUINFO.format(mhz="2900", bogomips="2"))
    assert machine_fingerprint("1.0") == base  # only the clock changed
    cpuinfo.write_text(CPUINFO.format(mhz="800", bogomips="1").replace("avx2", "avx512f"))
    assert machine_fingerprint("1.0") != base  # another CPU
    cpuinfo.write_text(CPUINFO.format(mhz="800", bogomips="1"))
    assert machine_fingerprint("1.0") == base
    assert machine_fingerprint("1.1") != base  # another wheelwise
    monkeypatch.setenv("WHEELWISE_NVIDIA_DRIVER", "12.8")
    with_driver = machine_fingerprint("1.0")
    assert with_driver != base
    monkeypatch.setenv("WHEELWISE_NVIDIA_GPUS", "8.6")
    assert machine_fingerprint("1.0") not in (base, with_driver)


def test_store_and_load() -> None:
    assert cache.load("fp") is None
    cache.store("fp\nwith lines", '{"system": {}}\n')
    assert cache.load("fp\nwith lines") == '{"system": {}}\n'
    assert cache.load("fp\nwith line") is None
    assert cache.load("other") is None
    # No temporary files are left behind.
    assert os.listdir(os.path.dirname(cache.cache_path())) == ["detect.cache"]


def test_stale_entries_are_ignored() -> None:
    cache.store("fp", "{}")
    old = time.time() - cache.MAX_AGE_SECONDS - 60
    os.utime(cache.cache_path(), (old, old))
    assert cache.load("fp") is None


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"garbage",
        b"wheelwise-detect-cache 1 x\nfp{}",
        b"\xff\xfe\x00",
        b"other-header 1 2\nfp{}",
    ],
)
def test_damaged_cache_files_are_misses(content: bytes) -> None:
    Path(cache.cache_path()).parent.mkdir(parents=True)
    Path(cache.cache_path()).write_bytes(content)
    assert cache.load("fp") is None


def test_unwritable_cache_is_skipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(blocker / "cache"))
    cache.store("fp", "{}")  # must not raise
    assert cache.load("fp") is None
