"""Benchmark: the torch 2.14.1 CUDA 13 stack, cold and warm, wheelwise vs uv vs pip.

Setup (untimed): the wheels are fetched once from the package registry with ``pip
download torch==2.14.1 --only-binary=:all: -d DIR`` (``--wheels DIR``, default
``~/.cache/wheelwise-bench/gpu-stack``; 29 wheels, 2.9 GB, for this interpreter's
Python), ``wheelwise index build`` makes a static index of them, and nginx serves it
on 127.0.0.1 (``sendfile``: the server costs the two cores next to nothing; without
nginx, ``python -m http.server``, said in the output). With ``--tls`` (nginx only),
it serves HTTPS, as PyPI does, with a certificate of a new authority (``trustme``)
that every contender trusts through ``SSL_CERT_FILE``.

Contenders, each installing ``torch==2.14.1`` into a new venv made before the clock
starts, with no byte-compilation, timed as whole processes:

* uv: ``uv pip install --python VENV/bin/python`` with ``UV_CACHE_DIR``;
* wheelwise: ``wheelwise install -q --python VENV/bin/python`` with
  ``WHEELWISE_CACHE_DIR``;
* pip: ``VENV/bin/python -m pip install --no-compile`` with ``PIP_CACHE_DIR`` (the
  venv gets this environment's pip version, untimed, as in ``bench/install.py``).

Every cache is on the same file system as the venvs (a temporary folder), so uv and
wheelwise hard-link by default. Per round, each contender in turn (the rounds
rotate who goes first): a new empty cache, then *cold* into a new venv, then
*warm*: the same cache, another new venv, ``--warm-runs`` times (5; a warm install
takes a fraction of a second, and single ones vary by a fifth) for uv and wheelwise,
once for pip (whose warm install takes as long as its cold one). ``os.sync()``
before every timed run.
After each run the venv must hold the 29 distributions and no ``.pyc`` file. A
contender's venvs and cache are deleted once its round is over, and ``--settle``
seconds (65) pass before the next cold run: on ext4 without a journal (this
machine's disk), an inode freed in the last 60 seconds (longer until its table
block is written) is skipped when a new file is made, one lookup each, and a cold
run just after deleting another's 30,000 files paid several seconds for it, more
or less by chance (docs/benchmarks-method.md, "This machine's disk"); with a
journal, ext4 skips nothing. ``--settle 0`` measures that case. Peak RSS is the
largest resident set of the process and any of its children (``wait4``); installed
size is the apparent size of the venv's ``site-packages``. Medians of ``--rounds``
(3) after one untimed warm-up round (``--no-warm-up`` skips it), and ratios.
Right after each warm wheelwise run, the import floor is timed three times
(``bench/import_floor.py``'s "chosen libraries": the interpreter starting and importing
the libraries wheelwise is built on, nothing of its own), so that the warm time above it
is compared with uv's in the same minutes.
``--contenders uv,wheelwise`` leaves pip out (a machine with too little time for it).

Usage::

    .venv/bin/python bench/gpu_stack.py [--rounds 3] [--warm-runs 5] [--wheels DIR] [--tls] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import (
    GPU_STACK_WHEELS,
    add_warm_up_option,
    clean_env,
    free_port,
    installer_paths,
    machine_info,
    round_orders,
)
from import_floor import floor_seconds
from install import ensure_tools, installed, make_venv, site_packages, venv_python, wait_for

REQUIREMENT = "torch==2.14.1"
CONTENDERS = ("uv", "wheelwise", "pip")

NGINX_CONFIG = """\
daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
{user}
events {{ worker_connections 64; }}
http {{
    access_log off;
    sendfile on;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    types {{ text/html html; application/json json; text/plain metadata; }}
    default_type application/octet-stream;
    map $http_accept $simple_index {{
        default index.html;
        "~application/vnd\\.pypi\\.simple\\.(v1|latest)\\+json" index.json;
    }}
    server {{
        listen 127.0.0.1:{port}{tls};
        root {site};
        location /simple/ {{
            index $simple_index;
            types {{ text/html html; application/vnd.pypi.simple.v1+json json; }}
            add_header Vary Accept;
        }}
    }}
}}
"""


def ensure_wheels(folder: Path) -> list[Path]:
    """The stack's wheels in *folder*, downloaded once (when it holds none)."""
    if not list(folder.glob("*.whl")):
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
             "-d", str(folder), REQUIREMENT],
            check=True,
        )  # fmt: skip
    return sorted(folder.glob("*.whl"))


def build_site(wheels: Path, tmp: Path, wheelwise: Path) -> Path:
    """A static index of the wheels in *wheels*, made by ``wheelwise index build`` in
    *tmp* (untimed)."""
    site = tmp / "site"
    subprocess.run(
        [str(wheelwise), "index", "build", str(wheels), "-o", str(site)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return site


def certificate(tmp: Path) -> tuple[str, Path]:
    """nginx's TLS lines for a certificate of 127.0.0.1 from a new authority, and the
    authority's certificate (for ``SSL_CERT_FILE``)."""
    import trustme

    authority = trustme.CA()
    leaf = authority.issue_cert("127.0.0.1")
    leaf.private_key_pem.write_to_path(str(tmp / "server.key"))
    leaf.cert_chain_pems[0].write_to_path(str(tmp / "server.pem"))
    authority.cert_pem.write_to_path(str(tmp / "authority.pem"))
    lines = f" ssl;\n        ssl_certificate {tmp}/server.pem;\n"
    lines += f"        ssl_certificate_key {tmp}/server.key"
    return lines, tmp / "authority.pem"


@contextlib.contextmanager
def serve(site: Path, tmp: Path, tls: str = "") -> Iterator[tuple[str, str]]:
    """The index URL of *site* on 127.0.0.1, and what serves it; with *tls* (nginx's
    lines from :func:`certificate`), over HTTPS."""
    port = free_port()
    nginx = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if nginx is not None:
        user = "user root;" if os.geteuid() == 0 else ""
        conf = tmp / "nginx.conf"
        conf.write_text(NGINX_CONFIG.format(tmp=tmp, site=site, port=port, user=user, tls=tls))
        argv = [nginx, "-p", str(tmp), "-c", str(conf), "-e", str(tmp / "error.log")]
        server = "nginx, HTTPS" if tls else "nginx"
    elif tls:
        raise SystemExit("--tls needs nginx")
    else:
        argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
        argv += ["--directory", str(site)]
        server = "python -m http.server (no nginx)"
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}/simple/"
    try:
        wait_for(url, process)
        yield url, server
    finally:
        process.terminate()
        process.wait()


# Seconds after a contender's files are deleted before the next cold run.
SETTLE = 65.0
# Warm installs per round and contender (pip: one).
WARM_RUNS = 5


@dataclass
class Run:
    seconds: float
    rss_mb: float


def measured(argv: list[str], env: dict[str, str], log: Path, where: str) -> Run:
    """*argv* as a whole process: its seconds and the peak RSS of its process tree."""
    os.sync()
    with log.open("wb") as out:
        start = time.perf_counter()
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{where} failed ({process.returncode}):\n{log.read_text()[-3000:]}")
    return Run(elapsed, usage.ru_maxrss / 1024)


@dataclass
class Contest:
    """uv, wheelwise and pip installing *requirements* from the index at *url*, each
    into a new venv under *tmp*; after each run the venv must hold *expected* (and
    pip) and no ``.pyc`` file. ``sizes`` gets each contender's installed size;
    ``floors`` the import floor timed right after each warm wheelwise run."""

    tmp: Path
    url: str
    uv: Path
    wheelwise: Path
    pip_version: str
    base: dict[str, str]
    requirements: list[str]
    expected: set[str]
    sizes: dict[str, int] = field(default_factory=dict)
    floors: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.counter = iter(range(10**6))

    def one(self, name: str, phase: str, cache: Path) -> Run:
        """One timed install by *name* with the cache folder *cache*."""
        venv = self.tmp / f"venv-{name}-{next(self.counter)}"
        make_venv(venv, self.uv, self.pip_version if name == "pip" else None, self.base)
        python = str(venv_python(venv))
        env = dict(self.base)
        if name == "uv":
            command = [str(self.uv), "pip", "install", "--python", python, "--index-url", self.url]
            env["UV_CACHE_DIR"] = str(cache)
        elif name == "wheelwise":
            command = [str(self.wheelwise), "install", "-q", "--python", python]
            command += ["--index-url", self.url]
            env["WHEELWISE_CACHE_DIR"] = str(cache)
        else:
            command = [python, "-m", "pip", "install", "--quiet", "--no-compile"]
            command += ["--index-url", self.url]
            env["PIP_CACHE_DIR"] = str(cache)
        before = pyc_count(venv)
        where = f"{name} {phase}"
        run = measured([*command, *self.requirements], env, self.tmp / "log", where)
        got = installed(venv) - {"pip"}
        if got != self.expected:
            missing, extra = self.expected - got, got - self.expected
            raise SystemExit(f"{where}: missing {missing}, extra {extra}")
        if pyc_count(venv) != before:
            raise SystemExit(f"{where} byte-compiled files")
        self.sizes.setdefault(name, apparent_size(site_packages(venv)))
        if name == "wheelwise" and phase == "warm":
            self.floors.append(floor_seconds())
        return run

    def floor(self, runs: int) -> float:
        """The median import floor of the last *runs* warm wheelwise runs (the timed
        ones)."""
        return statistics.median(self.floors[-runs:])


def cold_and_warm(
    contest: Contest,
    rounds: int,
    warm_up: bool,
    contenders: tuple[str, ...] = CONTENDERS,
    settle: float = 0.0,
    warm_runs: int = 1,
) -> dict[str, dict[str, list[Run]]]:
    """Per round, each of *contenders* in turn (the rounds rotate who goes first): a
    new empty cache, a cold run, then *warm_runs* warm ones with the same cache (pip:
    one); the runs of the timed rounds (all but the first with *warm_up*) by
    contender and phase. After a contender's files are deleted, *settle* seconds pass
    before the next cold run."""
    results: dict[str, dict[str, list[Run]]] = {c: {"cold": [], "warm": []} for c in contenders}
    orders = round_orders(contenders)
    total = rounds + (1 if warm_up else 0)
    for index in range(total):
        for name in orders[index % len(orders)]:
            cache = contest.tmp / f"cache-{name}-{next(contest.counter)}"
            cold = contest.one(name, "cold", cache)
            times = 1 if name == "pip" else warm_runs
            warm = [contest.one(name, "warm", cache) for _ in range(times)]
            if index >= total - rounds:
                results[name]["cold"].append(cold)
                results[name]["warm"] += warm
            for leftover in [cache, *contest.tmp.glob(f"venv-{name}-*")]:
                shutil.rmtree(leftover, ignore_errors=True)
            os.sync()  # the freed inodes' table blocks written: then 60 s is enough
            time.sleep(settle)
    return results


def timings(results: dict[str, dict[str, list[Run]]]) -> dict[str, Any]:
    """The report's figures of *results*: medians, each run, and peak RSS."""
    phases = ("cold", "warm")
    return {
        "median_s": {
            n: {p: statistics.median(r.seconds for r in runs[p]) for p in phases}
            for n, runs in results.items()
        },
        "runs_s": {
            n: {p: [round(r.seconds, 2) for r in runs[p]] for p in phases}
            for n, runs in results.items()
        },
        "peak_rss_mb": {
            n: max(r.rss_mb for p in phases for r in runs[p]) for n, runs in results.items()
        },
    }


def ratios(results: dict[str, dict[str, list[Run]]], floor: float) -> dict[str, float]:
    """wheelwise's medians against the other contenders' in *results*; warm, also its
    time above the import floor *floor* against uv's whole time."""

    def median(name: str, phase: str) -> float:
        return statistics.median(run.seconds for run in results[name][phase])

    found: dict[str, float] = {}
    for peer, phases in (("uv", ("cold", "warm")), ("pip", ("cold",))):
        for phase in phases if peer in results else ():
            found[f"wheelwise/{peer} {phase}"] = median("wheelwise", phase) / median(peer, phase)
    if "uv" in results:
        found["wheelwise above the floor/uv warm"] = (median("wheelwise", "warm") - floor) / median(
            "uv", "warm"
        )
    return found


def pyc_count(venv: Path) -> int:
    root = site_packages(venv)
    return sum(1 for path in root.rglob("*.pyc") if path.relative_to(root).parts[0] != "pip")


def apparent_size(folder: Path) -> int:
    total = 0
    for current, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(current, name)).st_size  # noqa: PTH118
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--wheels", type=Path, default=GPU_STACK_WHEELS)
    parser.add_argument(
        "--requirement",
        action="append",
        help=f"what to install from --wheels, repeatable (default {REQUIREMENT}; a smoke "
        "run: a small folder of wheels, every one of which must be installed)",
    )
    parser.add_argument(
        "--tls", action="store_true", help="serve the index over HTTPS (needs nginx)"
    )
    parser.add_argument(
        "--contenders",
        default=",".join(CONTENDERS),
        help="which installers race, comma-separated (default: all three; a machine with "
        "no time for pip's runs leaves it out, and its ratio with it)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=SETTLE,
        metavar="SECONDS",
        help=f"pause after deleting a contender's files, before the next cold run "
        f"(default {SETTLE:g}; see the module's docstring)",
    )
    parser.add_argument(
        "--warm-runs",
        type=int,
        default=WARM_RUNS,
        metavar="N",
        help=f"warm installs per round for uv and wheelwise (default {WARM_RUNS}; pip: one)",
    )
    parser.add_argument("--json", action="store_true")
    add_warm_up_option(parser)
    args = parser.parse_args(argv)
    contenders = tuple(name for name in CONTENDERS if name in args.contenders.split(","))
    if "wheelwise" not in contenders or set(args.contenders.split(",")) - set(contenders):
        parser.error(f"--contenders: wheelwise and any of {', '.join(CONTENDERS)}")

    wheels = ensure_wheels(args.wheels)
    expected = {w.name.split("-")[0].replace("_", "-").lower() for w in wheels}
    wheelwise, uv = installer_paths()
    pip_version = metadata.version("pip")
    if "pip" in contenders:
        ensure_tools(pip_version)
    base = clean_env()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wheelwise-gpu-")))
        site = build_site(args.wheels, tmp, wheelwise)
        tls = ""
        if args.tls:
            tls, authority = certificate(tmp)
            # Every contender, and the wait for the server, trust the new authority.
            os.environ["SSL_CERT_FILE"] = base["SSL_CERT_FILE"] = str(authority)
            base["PIP_CERT"] = str(authority)
        url, server = stack.enter_context(serve(site, tmp, tls))
        contest = Contest(
            tmp, url, uv, wheelwise, pip_version, base, args.requirement or [REQUIREMENT], expected
        )
        results = cold_and_warm(
            contest, args.rounds, args.warm_up, contenders, args.settle, args.warm_runs
        )
        sizes = contest.sizes
        floor = contest.floor(len(results["wheelwise"]["warm"]))

    def median(name: str, phase: str) -> float:
        return statistics.median(run.seconds for run in results[name][phase])

    report = {
        "machine": machine_info(),
        "server": server,
        "wheels": len(wheels),
        "wheel_bytes": sum(w.stat().st_size for w in wheels),
        "rounds": args.rounds,
        "settle_s": args.settle,
        "warm_runs": args.warm_runs,
        **timings(results),
        "installed_bytes": sizes,
        "import_floor_s": floor,
        "ratios": ratios(results, floor),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{len(wheels)} wheels, {report['wheel_bytes'] / 1e9:.2f} GB, served by {server}")
    print(f"{'':10} {'cold s':>8} {'warm s':>8} {'peak RSS MB':>12} {'installed GB':>13}")
    for name in contenders:
        print(
            f"{name:10} {median(name, 'cold'):8.2f} {median(name, 'warm'):8.2f} "
            f"{report['peak_rss_mb'][name]:12.0f} {sizes[name] / 1e9:13.2f}"
        )
    print(f"import floor (chosen libraries): {floor:.3f} s")
    for label, value in report["ratios"].items():
        print(f"{label}: {value:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
