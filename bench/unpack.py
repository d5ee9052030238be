"""Benchmark: ``install_wheels`` alone, per unpacking strategy, in this process.

Installs the 31 wheels of ``bench/.wheelhouse`` (fetched by ``bench/install.py``)
into a new venv with :func:`wheelwise.install.install_wheels` (verify, lock, unpack,
commit), once per strategy of ``wheelwise.install.parallel``: ``serial`` (one wheel
after the other), ``threads`` (a pool of 4) and ``fork`` (this process and one
forked worker per further core; Linux only). No network, no resolver: this is the
part of ``wheelwise install`` that writes the environment. Each run gets a venv made
before the clock starts, then ``--pause`` seconds (see docs/benchmarks.md, "This
machine's disk"); strategies take turns; median and min of N runs.

Usage::

    .venv/bin/python bench/unpack.py [--runs 5] [--pause 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import bin_dir, machine_info
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.install import parallel
from wheelwise.install.transaction import install_wheels

WHEELHOUSE = Path(__file__).resolve().parent / ".wheelhouse"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="install_wheels per unpacking strategy")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pause", type=float, default=2.0, metavar="SECONDS")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    wheels = sorted(WHEELHOUSE.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"no wheels in {WHEELHOUSE}: run bench/install.py once first")
    strategies = ["serial", "threads"] + (["fork"] if sys.platform == "linux" else [])
    times: dict[str, list[float]] = {name: [] for name in strategies}
    with tempfile.TemporaryDirectory(prefix="wheelwise-bench-unpack-") as tmp_name:
        counter = 0
        for _ in range(args.runs):
            for name in strategies:
                counter += 1
                venv = Path(tmp_name) / f"venv-{counter}"
                command = [sys.executable, "-m", "venv", "--without-pip", str(venv)]
                subprocess.run(command, check=True)
                env = TargetEnvironment.from_python(bin_dir(venv) / "python")
                parallel.STRATEGY = name
                time.sleep(args.pause)
                start = time.perf_counter()
                report = install_wheels(env, wheels)
                times[name].append(time.perf_counter() - start)
                if len(report.installed) != len(wheels):
                    raise SystemExit(f"{name}: installed {len(report.installed)} of {len(wheels)}")
    result: dict[str, Any] = {
        "command": "python bench/unpack.py " + " ".join(argv or sys.argv[1:]),
        "machine": machine_info(),
        "wheels": len(wheels),
        "median_s": {name: statistics.median(values) for name, values in times.items()},
        "min_s": {name: min(values) for name, values in times.items()},
        "times_s": times,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    machine = result["machine"]
    print(f"machine: Python {machine['python']}, {machine['cpu']}, nproc={machine['nproc']}")
    print(f"install_wheels of {len(wheels)} wheels into fresh venvs; {args.runs} runs each")
    print(f"{'strategy':<10}{'median s':>10}{'min s':>9}")
    for name in strategies:
        print(f"{name:<10}{result['median_s'][name]:>10.3f}{result['min_s'][name]:>9.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
