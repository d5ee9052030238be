"""How long a bare Python loop takes to hard-link a tree: the least a Python
installer that places a cached wheel's files one by one can take for it.

FOLDER is an unpacked wheel (for the torch CUDA stack, torch's entry in the unpacked
cache: ``find CACHE/unpacked -maxdepth 4 -type d -name torch``, its parent). Each run,
in one thread, makes FOLDER's folders in a new folder beside it (parents first, one
``mkdir`` each), then hard-links each of its files there (one ``link`` each), timed
apart; ``os.sync()`` before each run. Nothing is journaled or checked, and no
``RECORD`` is written. The new folders stay until the end (deleting many files slows
the next creations on some disks), then go. Medians of ``--runs``.

Usage::

    .venv/bin/python bench/link_floor.py FOLDER [--runs 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import machine_info


def tree(folder: str) -> tuple[list[str], list[str]]:
    """*folder*'s folders (parents first) and files, relative to it."""
    folders: list[str] = []
    files: list[str] = []
    for current, _, names in os.walk(folder):
        relative = os.path.relpath(current, folder)
        if relative != os.curdir:
            folders.append(relative)
        files += [os.path.join(relative, name) for name in names]  # noqa: PTH118
    return folders, files


def one_run(source: str, target: str, folders: list[str], files: list[str]) -> tuple[float, float]:
    """Seconds making *folders*, then linking *files*, from *source* into *target*."""
    os.sync()
    start = time.perf_counter()
    for relative in folders:
        os.mkdir(os.path.join(target, relative))  # noqa: PTH102, PTH118
    made = time.perf_counter()
    for relative in files:
        os.link(os.path.join(source, relative), os.path.join(target, relative))  # noqa: PTH118
    return made - start, time.perf_counter() - made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"{args.folder}: not a folder")
    source = str(args.folder.resolve())
    folders, files = tree(source)
    # Beside FOLDER: on its file system, which a hard link needs.
    scratch = tempfile.mkdtemp(prefix="link-floor-", dir=args.folder.resolve().parent)
    runs: list[tuple[float, float]] = []
    try:
        for index in range(args.runs):
            target = os.path.join(scratch, str(index))  # noqa: PTH118
            os.mkdir(target)  # noqa: PTH102
            runs.append(one_run(source, target, folders, files))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report = {
        "machine": machine_info(),
        "folders": len(folders),
        "files": len(files),
        "runs": args.runs,
        "median_s": {
            "folders": statistics.median(made for made, _ in runs),
            "links": statistics.median(linked for _, linked in runs),
            "both": statistics.median(made + linked for made, linked in runs),
        },
        "runs_s": [[round(made, 4), round(linked, 4)] for made, linked in runs],
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    medians = report["median_s"]
    print(f"{len(folders)} folders, {len(files)} files, {args.runs} runs, one thread")
    print(
        f"folders {medians['folders']:.3f} s, links {medians['links']:.3f} s, "
        f"both {medians['both']:.3f} s (medians)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
