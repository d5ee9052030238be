"""Benchmark: installing through ``wheelwise proxy`` against installing from its upstream.

The upstream is ``wheelwise index serve`` on 127.0.0.1, serving a folder that holds
the wheels of the set (``--set``) and the generated variant wheels of
``bench/variant_house.py``:

* ``wheelhouse`` (default): the 31 real wheels of ``bench/install.py`` (its
  ``REQUIREMENTS``, downloaded once into ``bench/.wheelhouse``), installed by their
  pinned requirements;
* ``variants``: the variant wheels alone, ``faketorch`` and ``fakesimd`` installed
  (generated, so it needs no registry: the smoke test's set).

The proxy runs as ``python -m wheelwise proxy --upstream URL --cache-dir DIR --system
H100.json`` (the ``variant_house.H100`` document, so that it chooses the same builds
on any machine: ``faketorch`` ``cu130``, ``fakesimd`` ``x86_64_v3``, rewritten as
plain wheels). Both servers get the caller's ``PYTHONPATH`` (which may name the
source tree to measure); the installers get neither it nor any tool's settings.

**Installs**, timed as whole processes, each into a new venv made before the clock
starts, installer caches off, no byte-compilation:

* pip: ``VENV/bin/python -m pip install --quiet --no-compile --no-cache-dir
  --index-url URL REQS`` (the venv's pip installed untimed from a wheel, as
  ``bench/install.py`` does);
* uv: ``uv pip install --quiet --no-cache --index-url URL --python VENV/bin/python
  REQS``;

each **direct** (URL: the upstream), through the proxy **cold** (a proxy just started
on a new, empty ``--cache-dir``; started untimed) and **warm** (that same proxy, the
next install into another new venv). One untimed round of everything comes first
(the OS file cache, the installers' and the proxy's bytecode); then each round runs
pip direct, pip through a proxy (cold then warm), uv direct and uv through a proxy in
the next of all their orders, consecutive rounds led by different ones; medians of
``--runs``. After every install the venv must hold exactly the expected
distributions (for ``variants``: through the proxy, the ``cu130`` and ``x86_64_v3``
builds and the variant-gated ``fakecublas``; directly, the non-variant builds without
it) and no ``.pyc`` file, or the script stops. The CPU seconds the upstream and the
proxy spent during each install (from ``/proc``, Linux only, in clock ticks) are
reported beside the times.

**Requests per second**, the proxy (warmed, its own cache) against the upstream, on:

* ``page``: the JSON page (PEP 691) of the busiest project, ``faketorch`` (four
  builds and a ``*-variants.json``; the proxy chooses one and rewrites it);
* ``page-plain``: the JSON page of a project with one plain wheel;
* ``file``: that plain wheel, passed through by the proxy;
* ``file-rewritten``: ``fakesimd``'s ``x86_64_v3`` build: from the upstream the variant
  wheel itself, from the proxy the plain wheel it made of it.

``--concurrency`` threads, each with its own ``httpx.Client`` (one keep-alive
connection), share ``--requests`` requests, after ``--warmup`` requests the same way;
every answer must be a 200 of the expected length. Each target is loaded
``--load-runs`` times, the two servers in alternating order; medians. The client, the
proxy and the upstream share this machine's cores; the CPU seconds each process spent
per request (from ``/proc``, Linux only) say where the time goes. The JSON report's
``versions.servers_import`` names the ``wheelwise`` package the servers ran.

Usage::

    .venv/bin/python bench/proxy.py [--runs 5] [--set wheelhouse] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from urllib.parse import urljoin

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import variant_house
from benchkit import (
    add_warm_up_option,
    clean_env,
    cpu_model,
    cpu_seconds,
    free_port,
    installer_paths,
    machine_info,
    round_orders,
    run_timed,
)
from install import (
    EXPECTED,
    REQUIREMENTS,
    WHEELHOUSE,
    count_pyc,
    ensure_tools,
    ensure_wheelhouse,
    installed,
    make_venv,
    site_packages,
    tool_version,
    venv_python,
    wait_for,
)
from lock_install import source_commit

JSON_PAGE = "application/vnd.pypi.simple.v1+json"
SETS = ["wheelhouse", "variants"]
ROUTES = ["direct", "proxy-cold", "proxy-warm"]
INSTALLERS = ["pip", "uv"]
TARGETS = ["page", "page-plain", "file", "file-rewritten"]
SERVERS = ["upstream", "proxy"]
BUSIEST = "faketorch"
REWRITTEN = ("fakesimd", "x86_64_v3")


@dataclass(frozen=True)
class WheelSet:
    """What to install, and what each route must leave in the venv."""

    name: str
    requirements: list[str]
    plain_wheel: str  # the one wheel of a project, for page-plain and file
    distributions: dict[str, set[str]]  # "direct" / "proxy" -> distributions
    builds: dict[str, dict[str, str | None]] = field(default_factory=dict)


def wheel_set(name: str, upstream: Path) -> WheelSet:
    """The set *name*, its wheels copied into *upstream* beside the variant wheels."""
    variant_house.write_house(upstream)
    if name == "variants":
        ensure_tools(metadata.version("pip"))
        return WheelSet(
            name,
            variant_house.REQUIREMENTS,
            only_wheel(upstream, "fakefilelock"),
            {"direct": variant_house.WITHOUT_GATED, "proxy": variant_house.DISTRIBUTIONS},
            {"direct": variant_house.PLAIN_BUILDS, "proxy": variant_house.VARIANT_BUILDS},
        )
    ensure_wheelhouse(metadata.version("pip"))
    for wheel in WHEELHOUSE.glob("*.whl"):
        shutil.copy2(wheel, upstream / wheel.name)
    plain_wheel = only_wheel(upstream, "requests")
    return WheelSet(name, REQUIREMENTS, plain_wheel, {"direct": EXPECTED, "proxy": EXPECTED})


def only_wheel(folder: Path, project: str) -> str:
    (wheel,) = folder.glob(f"{project}-*.whl")
    return wheel.name


@contextlib.contextmanager
def server(argv: Sequence[str], url: str, env: Mapping[str, str]) -> Iterator[int]:
    """*argv*, a server, running until the block ends, once *url* answers; yields its pid."""
    process = subprocess.Popen(
        list(argv), env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(url, process)
        yield process.pid
    finally:
        process.terminate()
        process.wait()


def proxy_argv(upstream: str, cache: Path, system: Path, port: int) -> list[str]:
    return [
        sys.executable, "-m", "wheelwise", "proxy", "--port", str(port), "--upstream",
        upstream, "--cache-dir", str(cache), "--system", str(system),
    ]  # fmt: skip


@dataclass
class Load:
    """One measured load: its rate, and the CPU seconds per request of each process."""

    requests_per_s: float
    cpu_ms_per_request: dict[str, float | None]


@dataclass
class Run:
    """One timed install, and the CPU seconds each server spent meanwhile."""

    seconds: float
    cpu_s: dict[str, float | None]


def cpu_used(
    before: Mapping[str, float | None], after: Mapping[str, float | None]
) -> dict[str, float | None]:
    """The CPU seconds each process used between two readings (None where unknown)."""
    used: dict[str, float | None] = {}
    for name, start in before.items():
        end = after.get(name)
        used[name] = None if start is None or end is None else end - start
    return used


def load(
    url: str, expected_size: int, *, requests: int, concurrency: int, pids: Mapping[str, int]
) -> Load:
    """*requests* GETs of *url* from *concurrency* threads, each on its own connection;
    every answer must be a 200 of *expected_size* bytes."""
    shares = [requests // concurrency + (i < requests % concurrency) for i in range(concurrency)]
    clients = [httpx.Client(headers={"Accept": JSON_PAGE}, timeout=60) for _ in shares]
    start = threading.Barrier(concurrency + 1)
    failures: list[str] = []

    def work(client: httpx.Client, count: int) -> None:
        client.get(url)  # connect before the clock starts
        start.wait()
        for _ in range(count):
            response = client.get(url)
            if response.status_code != 200 or len(response.content) != expected_size:
                failures.append(f"{url}: {response.status_code}, {len(response.content)} bytes")
                return

    threads = [
        threading.Thread(target=work, args=pair) for pair in zip(clients, shares, strict=True)
    ]
    for thread in threads:
        thread.start()
    start.wait()
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    own_before = time.process_time()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    cpu_after = {name: cpu_seconds(pid) for name, pid in pids.items()}
    own = time.process_time() - own_before
    for client in clients:
        client.close()
    if failures:
        raise SystemExit(f"bench/proxy.py: unexpected answer: {failures[0]}")
    cpu: dict[str, float | None] = {"client": own / requests * 1000}
    for name, used in cpu_used(cpu_before, cpu_after).items():
        cpu[name] = None if used is None else used / requests * 1000
    return Load(requests / elapsed, cpu)


def answer_size(url: str) -> int:
    """The length of *url*'s answer (fetching it builds a proxy's rewritten wheel)."""
    response = httpx.get(url, headers={"Accept": JSON_PAGE}, timeout=60)
    if response.status_code != 200:
        raise SystemExit(f"bench/proxy.py: {url}: {response.status_code}")
    return len(response.content)


def file_url(page_url: str, filename: str) -> str:
    """The URL of *filename* on the JSON page *page_url*."""
    page = httpx.get(page_url, headers={"Accept": JSON_PAGE}, timeout=60).json()
    for file in page["files"]:
        if file["filename"] == filename:
            return urljoin(page_url, str(file["url"]))
    raise SystemExit(f"bench/proxy.py: {page_url} does not list {filename}")


def targets(base: str, plain_wheel: str, proxied: bool) -> dict[str, tuple[str, int]]:
    """Each target's URL on the server at *base*, with the size of its answer."""
    plain_project = plain_wheel.split("-")[0]
    project, label = REWRITTEN
    version = next(p.version for p in variant_house.PROJECTS if p.name == project)
    rewritten = f"{project}-{version}-py3-none-any{'' if proxied else '-' + label}.whl"
    urls = {
        "page": f"{base}/simple/{BUSIEST}/",
        "page-plain": f"{base}/simple/{plain_project}/",
        "file": file_url(f"{base}/simple/{plain_project}/", plain_wheel),
        "file-rewritten": file_url(f"{base}/simple/{project}/", rewritten),
    }
    return {target: (url, answer_size(url)) for target, url in urls.items()}


def measure_loads(
    urls: Mapping[str, Mapping[str, tuple[str, int]]],
    pids: Mapping[str, Mapping[str, int]],
    args: argparse.Namespace,
) -> dict[str, dict[str, list[Load]]]:
    """Each target loaded ``--load-runs`` times on each server (*urls*: server ->
    target -> URL and answer size; *pids*: server -> the processes that serve it),
    the servers in alternating order, each load after its own warm-up."""
    loads: dict[str, dict[str, list[Load]]] = {t: {s: [] for s in SERVERS} for t in TARGETS}
    for target in TARGETS:
        for run in range(args.load_runs):
            for name in SERVERS if run % 2 == 0 else SERVERS[::-1]:
                url, size = urls[name][target]
                if args.warmup:
                    warmup = max(args.warmup, args.concurrency)
                    load(url, size, requests=warmup, concurrency=args.concurrency, pids={})
                measured = load(
                    url, size, requests=args.requests, concurrency=args.concurrency,
                    pids=pids[name],
                )  # fmt: skip
                loads[target][name].append(measured)
    return loads


def server_source(env: Mapping[str, str]) -> str:
    """The folder of the ``wheelwise`` package the servers import under *env*."""
    result = subprocess.run(
        [sys.executable, "-c", "import wheelwise; print(wheelwise.__file__)"],
        env=dict(env),
        capture_output=True,
        text=True,
        check=True,
    )
    return str(Path(result.stdout.strip()).parent)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="installing through wheelwise proxy")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--set", choices=SETS, default="wheelhouse", dest="set_name")
    parser.add_argument("--requests", type=int, default=2000, help="per load")
    parser.add_argument("--concurrency", type=int, default=8, help="client threads")
    parser.add_argument("--warmup", type=int, default=200, help="requests before each load")
    parser.add_argument("--load-runs", type=int, default=3, help="loads of each target")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one install may take")
    parser.add_argument("--json", action="store_true")
    add_warm_up_option(parser)
    args = parser.parse_args(argv)
    for option in ("runs", "requests", "concurrency", "load_runs"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')}: at least 1")
    if args.requests < args.concurrency:
        parser.error("--requests: at least --concurrency")

    started = time.perf_counter()
    wheelwise, uv = installer_paths()
    pip_version = metadata.version("pip")
    server_env = clean_env()
    # PYTHONPATH reaches the servers only (it may name the source tree to measure).
    installer_env = {k: v for k, v in server_env.items() if k != "PYTHONPATH"}

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wheelwise-proxybench-")))
        chosen = wheel_set(args.set_name, tmp / "upstream")
        system = tmp / "h100-cuda13.json"
        system.write_text(json.dumps(variant_house.H100))
        port = free_port()
        upstream_base = f"http://127.0.0.1:{port}"
        upstream_pid = stack.enter_context(
            server(
                [str(wheelwise), "index", "serve", str(tmp / "upstream"), "--port", str(port)],
                f"{upstream_base}/simple/",
                server_env,
            )
        )
        upstream_url = f"{upstream_base}/simple/"
        counter = itertools.count()

        @contextlib.contextmanager
        def new_proxy() -> Iterator[tuple[str, int]]:
            """A proxy just started on an empty cache: its base URL and pid."""
            port = free_port()
            argv = proxy_argv(upstream_url, tmp / f"proxy-{next(counter)}", system, port)
            base = f"http://127.0.0.1:{port}"
            with server(argv, f"{base}/simple/", server_env) as pid:
                yield base, pid

        def new_venv(with_pip: bool) -> Path:
            venv = tmp / f"venv-{next(counter)}"
            return make_venv(venv, uv, pip_version if with_pip else None, installer_env)

        def install(installer: str, index_url: str, route: str) -> float:
            """One checked install into a new venv: its seconds."""
            venv = new_venv(with_pip=installer == "pip")
            python = str(venv_python(venv))
            if installer == "pip":
                command = [python, "-m", "pip", "install", "--quiet", "--no-compile"]
                command += ["--no-cache-dir"]
            else:
                command = [str(uv), "pip", "install", "--quiet", "--no-cache", "--python", python]
            command += ["--index-url", index_url, *chosen.requirements]
            where = f"{installer} {route}, set {chosen.name}"
            elapsed = run_timed(
                command, env=installer_env, cwd=tmp, timeout=args.timeout, where=where,
                on_timeout="raise --timeout",
            )  # fmt: skip
            kind = "direct" if route == "direct" else "proxy"
            builds = chosen.builds.get(kind)
            want = {"distributions": chosen.distributions[kind], "builds": builds, "pyc": 0}
            held = {
                "distributions": installed(venv),
                "builds": variant_house.builds(site_packages(venv)) if builds else None,
                "pyc": count_pyc(venv),
            }
            if held != want:
                raise SystemExit(f"{where}: the venv holds {held}, not {want}")
            # Venvs stay until the end: deleting thousands of files slows the next
            # installer's file creation on some disks (see docs/benchmarks.md).
            return elapsed

        def timed(installer: str, url: str, route: str, pids: Mapping[str, int]) -> Run:
            """One checked install, with the CPU seconds the servers *pids* spent on it."""
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            seconds = install(installer, url, route)
            after = {name: cpu_seconds(pid) for name, pid in pids.items()}
            return Run(seconds, cpu_used(before, after))

        def direct(installer: str) -> dict[str, Run]:
            pids = {"upstream": upstream_pid}
            return {"direct": timed(installer, upstream_url, "direct", pids)}

        def proxied(installer: str) -> dict[str, Run]:
            with new_proxy() as (base, pid):
                pids = {"proxy": pid, "upstream": upstream_pid}
                url = f"{base}/simple/"
                return {
                    route: timed(installer, url, route, pids)
                    for route in ("proxy-cold", "proxy-warm")
                }

        units = {
            f"{installer} {kind}": functools.partial(
                direct if kind == "direct" else proxied, installer
            )
            for installer in INSTALLERS
            for kind in ("direct", "proxy")
        }
        for unit in units.values() if args.warm_up else ():
            unit()  # warm-up: OS file cache, bytecode
        runs: dict[str, dict[str, list[Run]]] = {i: {r: [] for r in ROUTES} for i in INSTALLERS}
        orders = round_orders(list(units))
        for round_ in range(args.runs):
            for name in orders[round_ % len(orders)]:
                installer = name.split()[0]
                for route, run in units[name]().items():
                    runs[installer][route].append(run)
        installs_s = time.perf_counter() - started

        # Requests per second: one warmed proxy against its upstream.
        base, proxy_pid = stack.enter_context(new_proxy())
        urls = {
            "upstream": targets(upstream_base, chosen.plain_wheel, proxied=False),
            "proxy": targets(base, chosen.plain_wheel, proxied=True),
        }
        pids = {"upstream": {"upstream": upstream_pid}}
        pids["proxy"] = {"proxy": proxy_pid, "upstream": upstream_pid}
        loads = measure_loads(urls, pids, args)
        total_s = time.perf_counter() - started

    times = {i: {r: [x.seconds for x in v] for r, v in by.items()} for i, by in runs.items()}
    medians = {i: {r: statistics.median(v) for r, v in by.items()} for i, by in times.items()}
    install_cpu = {
        i: {r: _median_cpu([x.cpu_s for x in v]) for r, v in by.items()} for i, by in runs.items()
    }
    ratios = {
        i: {mode: by[f"proxy-{mode}"] / by["direct"] for mode in ("cold", "warm")}
        for i, by in medians.items()
    }
    rates = {
        t: {s: statistics.median(x.requests_per_s for x in by[s]) for s in SERVERS}
        for t, by in loads.items()
    }
    cpu = {
        t: {s: _median_cpu([x.cpu_ms_per_request for x in by[s]]) for s in SERVERS}
        for t, by in loads.items()
    }
    load_ratios = {t: by["proxy"] / by["upstream"] for t, by in rates.items()}
    versions = {
        "pip": pip_version,
        "uv": tool_version([str(uv), "--version"]),
        "wheelwise": metadata.version("wheelwise"),
        "wheelwise_source": source_commit(),
        "servers_import": server_source(server_env),
    }
    result = {
        "command": "python bench/proxy.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_info(),
        "versions": versions,
        "set": chosen.name,
        "requirements": chosen.requirements,
        "runs": args.runs,
        "installs_s": installs_s,
        "total_s": total_s,
        "median_s": medians,
        "times_s": times,
        "min_s": {i: {r: min(v) for r, v in by.items()} for i, by in times.items()},
        "server_cpu_s": install_cpu,
        "ratios": ratios,
        "load": {
            "requests": args.requests,
            "concurrency": args.concurrency,
            "warmup": args.warmup,
            "runs": args.load_runs,
            "urls": {s: {t: urls[s][t][0] for t in TARGETS} for s in SERVERS},
            "bytes": {s: {t: urls[s][t][1] for t in TARGETS} for s in SERVERS},
            "requests_per_s": rates,
            "all_requests_per_s": {
                t: {s: [x.requests_per_s for x in by[s]] for s in SERVERS}
                for t, by in loads.items()
            },
            "cpu_ms_per_request": cpu,
            "ratios": load_ratios,
        },
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"machine: Python {result['machine']['python']}, {cpu_model()}, "
        f"nproc={result['machine']['nproc']}; pip {pip_version}, {versions['uv']}, "
        f"wheelwise {versions['wheelwise']} ({versions['wheelwise_source']})"
    )
    print(f"set {chosen.name}, {args.runs} runs each, interleaved; {total_s:.0f} s in all")
    print(
        f"{'installer':<9}"
        + "".join(f" {r + ' s':>13}" for r in ROUTES)
        + "   cold/direct  warm/direct"
    )
    for installer in INSTALLERS:
        row = "".join(f" {medians[installer][r]:>13.3f}" for r in ROUTES)
        cells = "".join(f" {ratios[installer][m]:>11.2f}x" for m in ("cold", "warm"))
        print(f"{installer:<9}{row}  {cells}")
    for installer in INSTALLERS:
        for route in ROUTES:
            used = ", ".join(
                f"{name} {_number(value)}" for name, value in install_cpu[installer][route].items()
            )
            print(f"  {installer} {route}: CPU s of the servers per install: {used}")
    print(
        f"requests/s, {args.requests} requests from {args.concurrency} threads, "
        f"median of {args.load_runs}"
    )
    print(f"{'target':<15} {'upstream':>10} {'proxy':>10} {'proxy/upstream':>15}")
    for target in TARGETS:
        print(
            f"{target:<15} {rates[target]['upstream']:>10.1f} {rates[target]['proxy']:>10.1f} "
            f"{load_ratios[target]:>14.2f}x"
        )
        for name in SERVERS:
            used = ", ".join(f"{n} {_number(v)}" for n, v in cpu[target][name].items())
            print(f"  via {name}: CPU ms per request: {used}")
    return 0


def _number(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.3f}"


def _median_cpu(samples: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    names = samples[0].keys()
    found: dict[str, float | None] = {}
    for name in names:
        values = [s[name] for s in samples]
        known = [v for v in values if v is not None]
        found[name] = statistics.median(known) if len(known) == len(values) else None
    return found


if __name__ == "__main__":
    raise SystemExit(main())
