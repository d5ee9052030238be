"""Benchmark: simple-page requests per second, ``wheelwise index serve`` vs pypiserver.

Both servers serve the same directory of wheels (the 2,000 generated variant
wheels of bench/index_build.py) on 127.0.0.1, one after the other, each as a
single process with its default settings. ``wrk`` (Debian package) loads one
project page, ``/simple/bench-pkg07/``, with 2 threads and 32 connections for
10 seconds after a 2-second warm-up; the two machines' cores are shared by the
server and wrk alike.

pypiserver runs from its own virtual environment (``bench/.venv-pypiserver``,
created on first use from the package registry).

Usage::

    .venv/bin/python bench/serve.py [--seconds 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import cpu_model, free_port
from index_build import generate

ROOT = Path(__file__).resolve().parent.parent
PYPISERVER_VENV = ROOT / "bench" / ".venv-pypiserver"
PAGE = "/simple/bench-pkg07/"


def ensure_pypiserver() -> Path:
    executable = PYPISERVER_VENV / "bin" / "pypi-server"
    if not executable.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PYPISERVER_VENV)], check=True)
        pip = [str(PYPISERVER_VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
        # watchdog: needed by the cached-dir backend measured below.
        subprocess.run([*pip, "pypiserver==2.4.2", "watchdog"], check=True)
    return executable


def wait_until_up(url: str, deadline_s: float = 20.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server at {url} did not come up")


def load(url: str, seconds: int) -> float:
    subprocess.run(["wrk", "-t2", "-c32", "-d2s", url], check=True, capture_output=True)
    out = subprocess.run(
        ["wrk", "-t2", "-c32", f"-d{seconds}s", url], check=True, capture_output=True, text=True
    ).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if match is None:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{url}: {errors.group(1)} error responses")
    return float(match.group(1))


def measure(argv: Sequence[str], port: int, seconds: int) -> float:
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}{PAGE}"
        wait_until_up(url)
        return load(url, seconds)
    finally:
        server.terminate()
        server.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="simple-page throughput vs pypiserver")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print("bench/serve.py needs wrk: apt-get install wrk", file=sys.stderr)
        return 2
    wheelwise = str(Path(sys.executable).parent / "wheelwise")
    pypiserver = str(ensure_pypiserver())
    with tempfile.TemporaryDirectory() as tmp_name:
        wheels = Path(tmp_name) / "wheels"
        wheels.mkdir()
        count = generate(wheels)
        port = free_port()
        ww = measure(
            [wheelwise, "index", "serve", str(wheels), "--host", "127.0.0.1", "--port", str(port)],
            port,
            args.seconds,
        )
        port = free_port()
        ps = measure(
            [pypiserver, "run", "-i", "127.0.0.1", "-p", str(port), str(wheels)], port, args.seconds
        )
        # pypiserver hashes every listed file on each request by default; its best
        # case: the cached-dir backend and no hashes in links.
        port = free_port()
        ps_fast = measure(
            [
                pypiserver, "run", "-i", "127.0.0.1", "-p", str(port),
                "--backend", "cached-dir", "--hash-algo", "off", str(wheels),
            ],
            port,
            args.seconds,
        )  # fmt: skip
    machine = {"python": sys.version.split()[0], "cpu": cpu_model(), "nproc": os.cpu_count()}
    result = {
        "command": "python bench/serve.py " + " ".join(argv or sys.argv[1:]),
        "machine": machine,
        "wheels": count,
        "page": PAGE,
        "requests_per_second": {
            "wheelwise index serve": ww,
            "pypiserver 2.4.2": ps,
            "pypiserver 2.4.2 (cached-dir, no hashes)": ps_fast,
        },
        "ratio": ww / ps,
        "ratio_best_case": ww / ps_fast,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"machine: Python {machine['python']}, {machine['cpu']}, "
        f"nproc={machine['nproc']}; {count} wheels; wrk -t2 -c32 -d{args.seconds}s {PAGE}"
    )
    print(f"wheelwise index serve: {ww:10.1f} requests/s")
    print(f"pypiserver 2.4.2:      {ps:10.1f} requests/s")
    print(f"  cached-dir, no hashes: {ps_fast:10.1f} requests/s")
    print(f"wheelwise / pypiserver: {ww / ps:.1f}x, best case {ww / ps_fast:.1f}x (aim: >= 2x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
