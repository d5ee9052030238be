"""Benchmark: taking the biggest of the torch CUDA stack out again, wheelwise vs uv.

Setup (untimed): the wheels and the index of ``bench/gpu_stack.py`` (``--wheels``,
served by nginx on 127.0.0.1, or ``python -m http.server`` without it), and, per
round, two new venvs per contender, each given ``torch==2.14.1`` with its CUDA
dependencies by that contender from its own cache; then ``--settle`` seconds (65)
pass, as a freshly written tree is slower to change on this machine's disk
(docs/benchmarks-method.md, "This machine's disk"). Timed as whole processes, the
contenders alternating, ``os.sync()`` before each:

* *uninstall*: ``torch``, ``nvidia-cublas`` and ``nvidia-cudnn-cu13`` (12,000 files,
  3.3 GB) out of the first venv (``wheelwise uninstall -y``; ``uv pip uninstall``);
* *reinstall*: ``install --reinstall-package torch torch==2.14.1`` into the second
  (its old files out, the cached ones linked in again).

Each run is checked (the three gone; torch there again). Medians of ``--rounds`` (3)
and ratios.

Usage::

    .venv/bin/python bench/gpu_uninstall.py [--rounds 3] [--wheels DIR] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import GPU_STACK_WHEELS, clean_env, installer_paths, machine_info
from gpu_stack import REQUIREMENT, build_site, ensure_wheels, serve
from install import installed

CONTENDERS = ("uv", "wheelwise")
REMOVED = ("torch", "nvidia-cublas", "nvidia-cudnn-cu13")
PHASES = ("uninstall", "reinstall")


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


class Stack:
    """The contenders' commands against the index at *url*, each with its own cache
    under *tmp*."""

    def __init__(self, tmp: Path, url: str, uv: Path, wheelwise: Path) -> None:
        self.tmp, self.url, self.uv, self.wheelwise = tmp, url, uv, wheelwise
        self.env = clean_env()
        self.env.update(
            UV_CACHE_DIR=str(tmp / "cache-uv"), WHEELWISE_CACHE_DIR=str(tmp / "cache-wheelwise")
        )

    def install(self, name: str, python: Path, *extra: str) -> list[str]:
        if name == "uv":
            return [str(self.uv), "pip", "install", "-q", "--python", str(python), *extra,
                    "--index-url", self.url, REQUIREMENT]  # fmt: skip
        return [str(self.wheelwise), "install", "-q", "--python", str(python), *extra,
                "--index-url", self.url, REQUIREMENT]  # fmt: skip

    def uninstall(self, name: str, python: Path) -> list[str]:
        if name == "uv":
            return [str(self.uv), "pip", "uninstall", "-q", "--python", str(python), *REMOVED]
        return [str(self.wheelwise), "uninstall", "-y", "-q", "--python", str(python), *REMOVED]

    def run(self, argv: list[str], where: str) -> float:
        os.sync()
        start = time.perf_counter()
        result = subprocess.run(argv, env=self.env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        if result.returncode != 0:
            raise SystemExit(f"{where} failed ({result.returncode}):\n{result.stderr[-3000:]}")
        return elapsed


def one_round(stack: Stack, number: int, settle: float) -> dict[str, dict[str, float]]:
    """Two venvs per contender given the stack, *settle* seconds, then each phase
    timed, the contenders alternating (the leader changes round by round)."""
    order = CONTENDERS[number % 2 :] + CONTENDERS[: number % 2]
    venvs: dict[str, tuple[Path, Path]] = {}
    for name in order:
        pair = tuple(_venv(stack.tmp / f"r{number}-{name}-{n}") for n in (1, 2))
        for venv in pair:
            stack.run(stack.install(name, _python(venv)), f"{name} install")
        venvs[name] = (pair[0], pair[1])
    time.sleep(settle)
    times: dict[str, dict[str, float]] = {name: {} for name in order}
    for name in order:
        first = venvs[name][0]
        removing = stack.uninstall(name, _python(first))
        times[name]["uninstall"] = stack.run(removing, f"{name} uninstall")
        left = installed(first)
        if set(REMOVED) & left:
            raise SystemExit(f"{name} uninstall left {sorted(set(REMOVED) & left)}")
    for name in order:
        second = venvs[name][1]
        again = stack.install(name, _python(second), "--reinstall-package", "torch")
        times[name]["reinstall"] = stack.run(again, f"{name} reinstall")
        if "torch" not in installed(second):
            raise SystemExit(f"{name} reinstall left no torch")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--wheels", type=Path, default=GPU_STACK_WHEELS)
    parser.add_argument("--settle", type=float, default=65.0, help="seconds before timing")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    ensure_wheels(args.wheels)
    wheelwise, uv = installer_paths()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    runs: dict[str, dict[str, list[float]]] = {n: {p: [] for p in PHASES} for n in CONTENDERS}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wheelwise-gpu-")))
        site = build_site(args.wheels, tmp, wheelwise)
        url, server = stack.enter_context(serve(site, tmp))
        contest = Stack(tmp, url, uv, wheelwise)
        for number in range(args.rounds):
            for name, phases in one_round(contest, number, args.settle).items():
                for phase, seconds in phases.items():
                    runs[name][phase].append(round(seconds, 3))
    medians = {n: {p: statistics.median(runs[n][p]) for p in PHASES} for n in CONTENDERS}
    report = {
        "machine": machine_info(),
        "server": server,
        "rounds": args.rounds,
        "runs_s": runs,
        "median_s": medians,
        "ratios": {f"wheelwise/uv {p}": medians["wheelwise"][p] / medians["uv"][p] for p in PHASES},
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for phase in PHASES:
            print(f"{phase:10s} uv {medians['uv'][phase]:.2f} s, wheelwise "
                  f"{medians['wheelwise'][phase]:.2f} s "
                  f"({report['ratios'][f'wheelwise/uv {phase}']:.2f}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
