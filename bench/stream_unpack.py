"""Benchmark: one big wheel unpacked as it downloads, alone: the longest thread of a
cold GPU-stack install on a machine with many cores.

On many cores every other wheel is done early and a cold install of the torch stack
ends when torch's own download thread does (docs/benchmarks.md, the 16-core run).
This times that thread's work without the network: the wheel's bytes (read into
memory first, untimed) fed in pieces of 1 MiB, as the HTTP transport hands them over
(``client.deadline_transport.READ_BYTES``), to a
:class:`~wheelwise.cache.stream_entry.StreamUnpacker` writing into a new folder,
hashed with sha256 on the way as a download is, then ``finish()`` (the central
directory and ``RECORD`` checked). Each run is a new process; ``--tree`` names the
``src`` folders to compare (default: this checkout's), which take turns; before each
run the previous output is deleted, ``os.sync()`` runs and the script waits
``--pause`` seconds (docs/benchmarks-method.md, "This machine's disk"). Medians of
``--runs`` of the wall, user and system seconds.

Usage::

    .venv/bin/python bench/stream_unpack.py [--wheel WHEEL] [--tree SRC ...]
        [--runs 5] [--pause 65] [--json]

``--wheel`` defaults to torch's wheel in ``bench/gpu_stack.py``'s folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import GPU_STACK_WHEELS, machine_info, torch_wheel

ROOT = Path(__file__).resolve().parent.parent
PIECE = 1 << 20

# One run, in a process of its own: argv = tree, wheel, output folder.
_CHILD = """
import hashlib, json, os, sys, time
sys.path.insert(0, sys.argv[1])
from wheelwise.cache.stream_entry import StreamUnpacker
data = open(sys.argv[2], "rb").read()
view = memoryview(data)
start, times = time.perf_counter(), os.times()
unpacker = StreamUnpacker(sys.argv[3], os.path.basename(sys.argv[2]))
digest = hashlib.sha256()
try:
    for offset in range(0, len(data), PIECE):
        piece = bytes(view[offset : offset + PIECE])
        digest.update(piece)
        unpacker.write(piece)
    files, _ = unpacker.finish()
finally:
    unpacker.close()
end = os.times()
print(json.dumps({"wall": time.perf_counter() - start, "user": end.user - times.user,
                  "sys": end.system - times.system, "files": len(files)}))
""".replace("PIECE", str(PIECE))


def one_run(tree: Path, wheel: Path, output: Path) -> dict[str, float]:
    found = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tree), str(wheel), str(output)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(found.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path)
    parser.add_argument("--tree", type=Path, action="append", help="a src folder (repeatable)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pause", type=float, default=65.0, metavar="SECONDS")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    wheel = args.wheel or torch_wheel(GPU_STACK_WHEELS)
    trees = [tree.resolve() for tree in args.tree or [ROOT / "src"]]
    runs: dict[str, list[dict[str, float]]] = {str(tree): [] for tree in trees}
    with tempfile.TemporaryDirectory(prefix="wheelwise-stream-") as tmp:
        output = Path(tmp) / "out"
        for index in range(args.runs):
            # Consecutive runs led by different trees.
            order = trees[index % len(trees) :] + trees[: index % len(trees)]
            for tree in order:
                shutil.rmtree(output, ignore_errors=True)
                os.sync()
                time.sleep(args.pause)
                runs[str(tree)].append(one_run(tree, wheel, output))
    report: dict[str, Any] = {
        "machine": machine_info(),
        "wheel": wheel.name,
        "wheel_bytes": wheel.stat().st_size,
        "pause_s": args.pause,
        "files": {tree: found[0]["files"] for tree, found in runs.items()},
        "median_s": {
            tree: {
                key: statistics.median(run[key] for run in found) for key in ("wall", "user", "sys")
            }
            for tree, found in runs.items()
        },
        "runs_wall_s": {
            tree: [round(run["wall"], 2) for run in found] for tree, found in runs.items()
        },
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{wheel.name}, {wheel.stat().st_size / 1e6:.0f} MB, pieces of {PIECE >> 10} KiB")
    for tree, medians in report["median_s"].items():
        print(
            f"{tree}: wall {medians['wall']:.2f} s, user {medians['user']:.2f} s, "
            f"sys {medians['sys']:.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
