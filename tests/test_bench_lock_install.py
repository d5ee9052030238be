"""The smoke run of bench/lock_install.py on its generated variant set: every command
and mode reported, and each installer's builds checked."""

from __future__ import annotations

import pytest

from benchrun import run_bench

pytestmark = pytest.mark.bench


COMMANDS = {"uv-install", "uv-sync", "wheelwise-install", "wheelwise-sync"}
PLAIN = ["fakefilelock", "fakefsspec", "fakenetworkx", "fakesimd", "fakesympy", "faketorch"]


def test_smoke_run_of_the_variant_set() -> None:
    # The script checks each install itself (distributions, builds, no .pyc) and exits
    # non-zero on a wrong venv or a failed installer.
    report = run_bench(
        "lock_install.py", "--sets", "variants", "--runs", "1", "--no-warm-up", timeout=300
    )
    assert set(report["median_s"]) == {"variants"}
    modes = report["median_s"]["variants"]
    assert set(modes) == {"cold", "warm"}
    for mode, by_command in modes.items():
        assert set(by_command) == COMMANDS, mode
        assert all(seconds > 0 for seconds in by_command.values())
        assert set(report["ratios"]["variants"][mode]) == {
            "wheelwise-install/uv-install",
            "wheelwise-sync/uv-sync",
        }
    # The lock lists every build of both variant projects, with their variants-json.
    lock = report["locks"]["variants"]
    assert (lock["packages"], lock["wheels"], lock["variant_packages"]) == (7, 13, 2)
    held = report["installed"]["variants"]
    for name in ("uv-install", "uv-sync"):
        assert held[name] == {
            "distributions": PLAIN,
            "builds": {"faketorch": None, "fakesimd": None},
        }
    for name in ("wheelwise-install", "wheelwise-sync"):
        assert held[name] == {
            "distributions": sorted([*PLAIN, "fakecublas"]),
            "builds": {"faketorch": "cu130", "fakesimd": "x86_64_v3"},
        }
