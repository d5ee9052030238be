"""How long a bare Python loop takes to hard-link a tree: the least a Python
installer that places a cached wheel's files one by one can take for it.

FOLDER is an unpacked wheel (for the torch CUDA stack, torch's entry in the unpacked
cache: ``find CACHE/unpacked -maxdepth 4 -type d -name torch``, its parent). Each run,
in one thread, makes FOLDER's folders in a new folder beside it (parents first, one
``mkdir`` each), then hard-links each of its files there (one ``link`` each), timed
apart; then the same into a second new folder, each link made from the two folders
kept open (``dir_fd``, as ``Journal.link_many`` does: :mod:`wheelwise.open_folders`),
the two in turn first; ``os.sync()`` before each. Nothing is journaled or checked, and no
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


def one_run(
    source: str, target: str, folders: list[str], files: list[str], *, open_folders: bool = False
) -> tuple[float, float]:
    """Seconds making *folders*, then linking *files*, from *source* into *target*
    (*open_folders*: each link from its two folders, kept open)."""
    from wheelwise.open_folders import OpenFolders

    os.sync()
    start = time.perf_counter()
    for relative in folders:
        os.mkdir(os.path.join(target, relative))  # noqa: PTH102, PTH118
    made = time.perf_counter()
    if not open_folders:
        for relative in files:
            os.link(os.path.join(source, relative), os.path.join(target, relative))  # noqa: PTH118
        return made - start, time.perf_counter() - made
    sources, targets = OpenFolders(), OpenFolders()
    try:
        for relative in files:
            source_folder, name = sources.split(os.path.join(source, relative))  # noqa: PTH118
            target_folder, _ = targets.split(os.path.join(target, relative))  # noqa: PTH118
            os.link(name, name, src_dir_fd=source_folder, dst_dir_fd=target_folder)
    finally:
        sources.close()
        targets.close()
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
    from_folders: list[float] = []
    try:
        for index in range(args.runs):
            for open_folders in (False, True) if index % 2 == 0 else (True, False):
                target = os.path.join(scratch, f"{index}-{int(open_folders)}")  # noqa: PTH118
                os.mkdir(target)  # noqa: PTH102
                timed = one_run(source, target, folders, files, open_folders=open_folders)
                if open_folders:
                    from_folders.append(timed[1])
                else:
                    runs.append(timed)
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
            "links_from_open_folders": statistics.median(from_folders),
        },
        "runs_s": [[round(made, 4), round(linked, 4)] for made, linked in runs],
        "links_from_open_folders_s": [round(linked, 4) for linked in from_folders],
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    medians = report["median_s"]
    print(f"{len(folders)} folders, {len(files)} files, {args.runs} runs, one thread")
    print(
        f"folders {medians['folders']:.3f} s, links {medians['links']:.3f} s, "
        f"both {medians['both']:.3f} s (medians); links from open folders "
        f"{medians['links_from_open_folders']:.3f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
