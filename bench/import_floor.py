"""How long a Python installer takes before it does any work: the interpreter's own
start, importing the libraries wheelwise is built on, and importing what ``wheelwise
install`` loads. Each is a new process, timed whole, the rows interleaved; medians of
``--runs``. ``--uv`` also times uv's own start (``uv --version``) for scale.

The floor it shows bounds every ratio against uv on small installs: a run of
``wheelwise install`` cannot take less than its imports.

    .venv/bin/python bench/import_floor.py --runs 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from benchkit import machine_info

# What `wheelwise install` uses from each chosen library (pyproject.toml), as the
# install path imports it: httpx with httpcore, its transport (imported at the first
# request); httpx's own command line is never loaded (cli/__init__.py).
LIBRARIES = [
    "click",
    "httpx",
    "httpcore",
    "packaging.markers",
    "packaging.metadata",
    "packaging.requirements",
    "packaging.specifiers",
    "packaging.tags",
    "packaging.utils",
    "packaging.version",
    "resolvelib",
    "installer",
    "installer.destinations",
    "installer.sources",
    "filelock",
]
# The modules an install from an index loads, its stages' top modules (each imports
# the rest).
WHEELWISE = [
    "wheelwise.cli.app",
    "wheelwise.cli.install_cmd",
    "wheelwise.install.plan",
    "wheelwise.install.transaction",
    "wheelwise.install.unpack",
    "wheelwise.client.deadline_transport",
    "wheelwise.providers.detect",
    "wheelwise.variants.metadata",
]
_BLOCK_HTTPX_CLI = "import sys; sys.modules['httpx._main'] = None"
# As the command line ends (cli/__init__.py, _exit_now): without the interpreter's
# teardown, which would be timed otherwise.
_EXIT = "import os; os._exit(0)"


def code_for(modules: list[str]) -> str:
    return "; ".join([_BLOCK_HTTPX_CLI, *(f"import {name}" for name in modules), _EXIT])


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def floor_seconds(runs: int = 3) -> float:
    """The floor now, for a benchmark to report beside its ratios: the median of *runs*
    starts of this interpreter importing the chosen libraries (and nothing of
    wheelwise's own), each a new process timed whole."""
    argv = [sys.executable, "-c", code_for(LIBRARIES)]
    return statistics.median(timed(argv) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--uv", default=None, help="a uv executable to time too")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = {
        "interpreter (python -c pass)": [sys.executable, "-c", code_for([])],
        "chosen libraries": [sys.executable, "-c", code_for(LIBRARIES)],
        "wheelwise install's modules": [sys.executable, "-c", code_for(LIBRARIES + WHEELWISE)],
    }
    if args.uv:
        rows["uv --version"] = [args.uv, "--version"]
    for argv in rows.values():  # warm-up: byte-code written, files in the page cache
        timed(argv)
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.runs):
        for name, argv in rows.items():
            times[name].append(timed(argv))
    medians = {name: statistics.median(values) for name, values in times.items()}
    if args.json:
        print(json.dumps({"machine": machine_info(), "medians": medians, "times": times}))
        return
    info = machine_info()
    print(f"machine: Python {info['python']}, {info['cpu']}, nproc={info['nproc']}")
    for name, value in medians.items():
        print(f"{name:32s} {value * 1000:7.1f} ms (min {min(times[name]) * 1000:.1f})")


if __name__ == "__main__":
    main()
