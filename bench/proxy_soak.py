"""Load and soak: ``wheelwise proxy`` as a cluster uses it, on 127.0.0.1 only.

The upstream is wheelwise's index app (in this process, uvicorn) serving the GPU demo
wheelhouse of the tests (``tests/gpuhouse.py``) with ``gpukit``'s ``cu128`` build grown
to ``--payload-mib`` MiB; a switch in front of it answers ``503`` to everything while
it is "failing". The proxy runs as ``python -m wheelwise proxy`` with three profiles
(``h100``: a Haswell with a CUDA 12.8 driver and a compute capability 9.0 GPU;
``haswell``: no GPU; ``k10``: an older CPU), from a new empty working folder and a
new ``HOME``, with its own ``--cache-dir``.

1. **Burst**: ``--burst-clients`` threads, each with its own connection, ask at the
   same moment for the ``h100`` build of ``gpukit`` that no one asked for before. It
   must be fetched from the upstream once, and every client must get a ``200`` with
   the same bytes (those the proxy's page then gives the hash of).
2. **Soak**: ``--soak-clients`` threads for ``--seconds``, each in turn asking a
   profile's page of ``gpukit``, ``app`` or ``cudart`` (JSON or HTML) and one file it
   links; from a third of the way in, the upstream fails for ``--fail-seconds``.

Reported (``--json``): per phase, requests, answers by status, p50 and p99 latency;
the proxy's resident memory (peak, and at the start and end of the soak) and open
file descriptors (start and end) from ``/proc``; and every path written outside the
cache folder (its working folder and ``HOME``; there must be none). The script fails
when the burst's rules are broken or something was written outside the cache.

Usage::

    .venv/bin/python bench/proxy_soak.py [--burst-clients 64] [--soak-clients 32]
        [--seconds 60] [--fail-seconds 10] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from benchkit import machine_info
from gpuhouse import CUDA, GATED, HASWELL, K10, NAMESPACES, machine, metadata_member, wheel
from indexkit import free_port, uvicorn_thread, wait_until_up
from proxykit import detect_json

JSON_PAGE = "application/vnd.pypi.simple.v1+json"
PROFILES = ("h100", "haswell", "k10")
PROJECTS = ("gpukit", "app", "cudart")
CU128 = "gpukit-1.0-py3-none-any-cu128.whl"
Message = MutableMapping[str, Any]


class Failing:
    """ASGI middleware: while :attr:`on`, every request gets a 503."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app
        self.on = False
        self.asked: Counter[str] = Counter()

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.asked[scope["path"]] += 1
            if self.on:
                await send({"type": "http.response.start", "status": 503, "headers": []})
                await send({"type": "http.response.body", "body": b"failing"})
                return
        await self.app(scope, receive, send)


def write_house(folder: Path, payload_mib: int) -> None:
    folder.mkdir(parents=True)
    payload = random.Random(1).randbytes(payload_mib << 20)
    wheel(folder, "gpukit-1.0-py3-none-any.whl")
    wheel(folder, "gpukit-1.0-py3-none-any-null.whl", "null", {}, namespaces=NAMESPACES)
    for label, (bound, archs) in CUDA.items():
        properties = {"nvidia": {"cuda_version_lower_bound": [bound], "sm_arch": archs}}
        extra = metadata_member("gpukit", "1.0", GATED)
        if label == "cu128":
            extra["gpukit/kernels.bin"] = payload
        wheel(
            folder,
            f"gpukit-1.0-py3-none-any-{label}.whl",
            label,
            properties,
            namespaces=NAMESPACES,
            extra_members=extra,
        )
    levels = {"x86_64": {"level": ["v3"]}}
    v3 = "gpukit-1.0-py3-none-any-x86_64_v3.whl"
    wheel(folder, v3, "x86_64_v3", levels, namespaces=NAMESPACES)
    wheel(folder, "cudart-1.0-py3-none-any.whl")
    app = metadata_member("app", "1.0", ["gpukit>=1.0"])
    wheel(folder, "app-1.0-py3-none-any.whl", extra_members=app)


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM in KiB, and the count of open descriptors, of *pid*."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    found["fds"] = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    return found


def fd_kinds(pid: int) -> dict[str, int]:
    """The open descriptors of *pid* by kind (socket, pipe, a file's folder...)."""
    kinds: Counter[str] = Counter()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:
            continue
        if ":" in target and not target.startswith("/"):
            kinds[target.split(":")[0]] += 1
        else:  # a file: by the name of its folder (the store's, a lock's...)
            kinds[f"file in {Path(target).parent.name}/"] += 1
    return dict(sorted(kinds.items()))


def summary(latencies: list[float], statuses: Counter[str]) -> dict[str, Any]:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0
    return {
        "requests": len(latencies),
        "by_status": dict(sorted(statuses.items())),
        "p50_ms": round(statistics.median(ordered) * 1000, 1) if ordered else 0.0,
        "p99_ms": round(p99 * 1000, 1),
    }


def burst(base: str, clients: int) -> dict[str, Any]:
    page = httpx.get(f"{base}/p/h100/simple/gpukit/", headers={"Accept": JSON_PAGE}, timeout=60)
    page.raise_for_status()
    [link] = page.json()["files"]
    url = str(httpx.URL(f"{base}/p/h100/simple/gpukit/").join(link["url"]))
    barrier = threading.Barrier(clients)
    results: list[tuple[str, float, str]] = []
    lock = threading.Lock()

    def one() -> None:
        with httpx.Client(timeout=120) as client:
            barrier.wait()
            start = time.perf_counter()
            try:
                response = client.get(url)
                status, digest = (
                    str(response.status_code),
                    hashlib.sha256(response.content).hexdigest(),
                )
            except httpx.HTTPError as exc:
                status, digest = type(exc).__name__, ""
            with lock:
                results.append((status, time.perf_counter() - start, digest))

    threads = [threading.Thread(target=one) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = Counter(status for status, _, _ in results)
    digests = {digest for _, _, digest in results}
    again = httpx.get(f"{base}/p/h100/simple/gpukit/", headers={"Accept": JSON_PAGE}, timeout=60)
    listed = again.json()["files"][0]["hashes"].get("sha256")
    report = summary([seconds for _, seconds, _ in results], statuses)
    report.update(
        clients=clients, identical=len(digests) == 1, page_hash_matches=digests == {listed}
    )
    return report


def soak(
    base: str, clients: int, seconds: float, fail_seconds: float, upstream: Failing, pid: int
) -> dict[str, Any]:
    stop = time.monotonic() + seconds
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    during_failure: Counter[str] = Counter()
    lock = threading.Lock()
    samples: list[dict[str, int]] = [proc_status(pid)]

    def one(index: int) -> None:
        rng = random.Random(index)
        cycle = itertools.cycle(PROFILES[index % 3 :] + PROFILES[: index % 3])
        with httpx.Client(timeout=60) as client:
            while time.monotonic() < stop:
                profile, project = next(cycle), rng.choice(PROJECTS)
                page_url = f"{base}/p/{profile}/simple/{project}/"
                accept = JSON_PAGE if rng.random() < 0.5 else "text/html"
                for url, headers in [(page_url, {"Accept": accept})]:
                    status, files = fetch(client, url, headers)
                    record(status)
                    if files:
                        link = rng.choice(files)
                        status, _ = fetch(client, str(httpx.URL(page_url).join(link)), {})
                        record(status)

    def fetch(client: httpx.Client, url: str, headers: dict[str, str]) -> tuple[str, list[str]]:
        start = time.perf_counter()
        files: list[str] = []
        try:
            response = client.get(url, headers=headers)
            status = str(response.status_code)
            if response.status_code == 200 and "json" in response.headers.get("content-type", ""):
                files = [f["url"] for f in response.json()["files"]]
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        with lock:
            latencies.append(time.perf_counter() - start)
        return status, files

    def record(status: str) -> None:
        with lock:
            statuses[status] += 1
            if upstream.on:
                during_failure[status] += 1

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    begin = time.monotonic()
    fail_from, fail_to = begin + seconds / 3, begin + seconds / 3 + fail_seconds
    while any(thread.is_alive() for thread in threads):
        now = time.monotonic()
        upstream.on = fail_from <= now < fail_to
        samples.append(proc_status(pid))
        time.sleep(0.25)
    upstream.on = False
    for thread in threads:
        thread.join()
    time.sleep(3)  # connections closed by the clients are closed by the proxy too
    samples.append(proc_status(pid))
    kinds_at_end = fd_kinds(pid)
    report = summary(latencies, statuses)
    report.update(
        clients=clients,
        seconds=seconds,
        upstream_failing_s=fail_seconds,
        by_status_while_failing=dict(sorted(during_failure.items())),
        rss_mib={
            "start": samples[0]["VmRSS"] >> 10,
            "end": samples[-1]["VmRSS"] >> 10,
            "peak": max(s["VmHWM"] for s in samples) >> 10,
        },
        fds={
            "start": samples[0]["fds"],
            "end": samples[-1]["fds"],
            "max": max(s["fds"] for s in samples),
            "end_by_kind": kinds_at_end,
        },
    )
    return report


def written(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst-clients", type=int, default=64)
    parser.add_argument("--soak-clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--fail-seconds", type=float, default=10.0)
    parser.add_argument("--payload-mib", type=int, default=32)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        write_house(root / "wheels", args.payload_mib)
        profiles: list[str] = []
        simulated = {
            "h100": machine(HASWELL, "12.8", "9.0"),
            "haswell": machine(HASWELL),
            "k10": machine(K10),
        }
        for name, env in simulated.items():
            system = detect_json(root / f"{name}.json", env, root / "detect")
            profiles += ["--profile", f"{name}={system}"]
        from wheelwise.publish.server import create_app

        upstream = Failing(create_app(root / "wheels"))
        cwd, home, cache = root / "cwd", root / "home", root / "cache"
        cwd.mkdir()
        home.mkdir()
        port = free_port()
        with uvicorn_thread(upstream) as upstream_base:
            argv_ = [sys.executable, "-m", "wheelwise", "proxy", "--port", str(port)]
            argv_ += [
                "--upstream",
                f"{upstream_base}/simple/",
                "--cache-dir",
                str(cache),
                *profiles,
            ]
            env = {k: v for k, v in os.environ.items() if not k.startswith("WHEELWISE_")}
            env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), **machine(K10))
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONDONTWRITEBYTECODE"] = (
                "1"  # the source tree's bytecode is not the proxy's writing
            )
            with (root / "proxy.log").open("wb") as log:
                process = subprocess.Popen(
                    argv_, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT
                )
                try:
                    base = f"http://127.0.0.1:{port}"
                    wait_until_up(f"{base}/simple/", process)
                    burst_report = burst(base, args.burst_clients)
                    builds = sum(n for path, n in upstream.asked.items() if path.endswith(CU128))
                    burst_report["upstream_fetches_of_the_wheel"] = builds
                    soak_report = soak(
                        base,
                        args.soak_clients,
                        args.seconds,
                        args.fail_seconds,
                        upstream,
                        process.pid,
                    )
                finally:
                    process.terminate()
                    process.wait(timeout=30)
        outside = [f"cwd/{p}" for p in written(cwd)] + [f"home/{p}" for p in written(home)]
        log_lines = (root / "proxy.log").read_text(errors="replace").splitlines()
    report = {
        "machine": machine_info(),
        "burst": burst_report,
        "soak": soak_report,
        "written_outside_the_cache": outside,
        "proxy_log_tracebacks": sum("Traceback" in line for line in log_lines),
    }
    print(json.dumps(report, indent=2) if args.json else report)
    problems = []
    if burst_report["by_status"] != {"200": args.burst_clients}:
        problems.append(f"burst answers: {burst_report['by_status']}")
    if not (burst_report["identical"] and burst_report["page_hash_matches"]):
        problems.append("burst: clients got different bytes")
    if burst_report["upstream_fetches_of_the_wheel"] != 1:
        fetched = burst_report["upstream_fetches_of_the_wheel"]
        problems.append(f"burst: the wheel was fetched {fetched} times")
    if outside:
        problems.append(f"written outside the cache: {outside[:5]}")
    if problems:
        print("; ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
