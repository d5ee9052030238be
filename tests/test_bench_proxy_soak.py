"""The small form of bench/proxy_soak.py (seconds, not minutes): a burst of clients
on one wheel not yet built, then a soak of pages and files across three profiles
with the upstream failing for a while in the middle."""

from __future__ import annotations

import pytest

from benchrun import run_bench

pytestmark = pytest.mark.bench


def test_burst_and_soak_in_small() -> None:
    # The script itself fails when the burst's rules break (one upstream fetch, every
    # client a 200 with the same bytes) or anything is written outside the cache.
    report = run_bench(
        "proxy_soak.py",
        *("--burst-clients", "16", "--soak-clients", "6", "--seconds", "5"),
        *("--fail-seconds", "1.5", "--payload-mib", "2"),
        timeout=240,
    )
    burst, soak = report["burst"], report["soak"]
    assert burst["by_status"] == {"200": 16}
    assert burst["upstream_fetches_of_the_wheel"] == 1
    assert soak["requests"] > 100
    # Whatever fails while the upstream does is a 502 or 504 with its message, never
    # the proxy's own failure.
    assert set(soak["by_status"]) <= {"200", "502", "504"}, soak["by_status"]
    assert soak["by_status"].get("200", 0) > 0.5 * soak["requests"]
    assert soak["fds"]["end"] <= soak["fds"]["start"] + 12, soak["fds"]
    assert report["written_outside_the_cache"] == []
    assert report["proxy_log_tracebacks"] == 0
