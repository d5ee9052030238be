"""The smoke run of bench/proxy.py on its generated variant set: every installer and
route timed, every load measured, the proxy's rewritten wheel served."""

from __future__ import annotations

import pytest

from benchrun import run_bench

pytestmark = pytest.mark.bench


ROUTES = {"direct", "proxy-cold", "proxy-warm"}
TARGETS = {"page", "page-plain", "file", "file-rewritten"}


def test_smoke_run_of_the_variant_set() -> None:
    # The script checks each install itself (distributions, builds, no .pyc) and each
    # answer of a load (a 200 of the expected size), and exits non-zero otherwise.
    report = run_bench(
        "proxy.py",
        *("--set", "variants", "--runs", "1", "--load-runs", "1", "--no-warm-up"),
        *("--requests", "24", "--concurrency", "3", "--warmup", "6"),
        timeout=300,
    )
    assert set(report["median_s"]) == {"pip", "uv"}
    for installer, by_route in report["median_s"].items():
        assert set(by_route) == ROUTES, installer
        assert all(seconds > 0 for seconds in by_route.values())
        assert set(report["ratios"][installer]) == {"cold", "warm"}
        cpu = report["server_cpu_s"][installer]
        assert set(cpu["direct"]) == {"upstream"}
        assert set(cpu["proxy-cold"]) == set(cpu["proxy-warm"]) == {"proxy", "upstream"}
    load = report["load"]
    assert set(load["requests_per_s"]) == TARGETS
    for target, by_server in load["requests_per_s"].items():
        assert set(by_server) == {"upstream", "proxy"}, target
        assert all(rate > 0 for rate in by_server.values())
        assert load["ratios"][target] > 0
    # The upstream serves fakesimd's variant wheel itself, the proxy the plain wheel it
    # made of it, under the plain name.
    urls = load["urls"]
    assert urls["upstream"]["file-rewritten"].endswith("/fakesimd-1.2.0-py3-none-any-x86_64_v3.whl")
    assert urls["proxy"]["file-rewritten"].endswith("/fakesimd-1.2.0-py3-none-any.whl")
    assert urls["proxy"]["page"].endswith("/simple/faketorch/")
    cpu = load["cpu_ms_per_request"]["page"]["proxy"]
    assert set(cpu) == {"client", "proxy", "upstream"}
