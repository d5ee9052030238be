"""Bench setup: wheels of a requirement and all it needs, made from an environment that
has them installed (a GPU machine with no package registry, whose torch stack then
feeds ``bench/gpu_stack.py --wheels DIR`` and ``bench/torch_wheel.py --wheel FILE``).

Run it with that environment's interpreter (it needs ``packaging``). The requirements
are followed through each installed distribution's ``Requires-Dist`` (markers evaluated
for that interpreter, extras followed). Each distribution's wheel holds the files its
RECORD lists inside site-packages, leaving out its scripts (``../`` paths), byte-code
and the installer's own files (``INSTALLER``, ``REQUESTED``, ``direct_url.json``); its
name carries the tags of its ``WHEEL`` file; its RECORD is written anew with sha256
hashes. Members are deflated at ``--level`` (1: published wheels use 6 or 9, which
inflate at about the same speed but take many times longer to make). One process per
wheel, the largest first; each wheel is written under a temporary name, then renamed.

Usage::

    PYTHON bench/rewheel.py torch -d DIR [--jobs N] [--level 1] [--no-deps]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import sys
import zipfile
from concurrent.futures import ProcessPoolExecutor
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

LEFT_OUT = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def needed(requirements: list[str], deps: bool = True) -> list[metadata.Distribution]:
    """The installed distributions *requirements* need (with *deps*, else the
    distributions they name), each once."""
    found: dict[str, metadata.Distribution] = {}
    done: set[tuple[str, str]] = set()
    todo = [Requirement(text) for text in requirements]
    while todo:
        requirement = todo.pop()
        key = canonicalize_name(requirement.name)
        try:
            dist = found.get(key) or metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"rewheel: {requirement.name} is not installed here") from None
        found[key] = dist
        for extra in () if not deps else {"", *requirement.extras}:
            if (key, extra) in done:
                continue
            done.add((key, extra))
            for text in dist.requires or []:
                child = Requirement(text)
                if child.marker is None or child.marker.evaluate({"extra": extra}):
                    todo.append(child)
    return list(found.values())


def where(dist: metadata.Distribution, path: metadata.PackagePath) -> Path:
    """The installed file of *dist* at *path* (relative to its site-packages)."""
    return Path(str(dist.locate_file(path)))


def members(dist: metadata.Distribution) -> list[metadata.PackagePath]:
    """The files of *dist* its wheel holds, the ``.dist-info`` ones last."""
    kept = []
    for path in dist.files or []:
        parts = path.parts
        if parts[0] in ("..", "/") or "__pycache__" in parts or path.suffix == ".pyc":
            continue
        if parts[0].endswith(".dist-info") and path.name in LEFT_OUT:
            continue
        if where(dist, path).is_file():
            kept.append(path)
    return sorted(kept, key=lambda p: (p.parts[0].endswith(".dist-info"), str(p)))


def wheel_name(dist: metadata.Distribution) -> str:
    """The filename of *dist*'s wheel, from its name, version and ``WHEEL`` tags."""
    tags = [
        line.split(":", 1)[1].strip()
        for line in (dist.read_text("WHEEL") or "").splitlines()
        if line.startswith("Tag:")
    ]
    if not tags:
        raise SystemExit(f"rewheel: {dist.name} has no Tag in its WHEEL file")
    columns = []
    for index in range(3):
        column = dict.fromkeys(tag.split("-")[index] for tag in tags)
        columns.append(".".join(column))
    name = re.sub(r"[-_.]+", "_", dist.name).lower()
    return f"{name}-{dist.version}-{'-'.join(columns)}.whl"


def record_line(path: str, source: Path) -> str:
    digest = hashlib.sha256()
    with source.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    encoded = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    return f"{path},sha256={encoded},{source.stat().st_size}"


def write_wheel(name: str, folder: str, level: int) -> str:
    """Write the wheel of the installed distribution *name* into *folder*."""
    dist = metadata.distribution(name)
    target = Path(folder) / wheel_name(dist)
    partial = target.with_name(target.name + ".part")
    kept = members(dist)
    info = next(p.parts[0] for p in kept if p.parts[0].endswith(".dist-info"))
    record_path = f"{info}/RECORD"
    lines = []
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as archive:
        for path in kept:
            source = where(dist, path)
            archive.write(source, path.as_posix())
            lines.append(record_line(path.as_posix(), source))
        lines.append(f"{record_path},,")
        archive.writestr(record_path, "\n".join(lines) + "\n")
    partial.replace(target)
    return target.name


def size(dist: metadata.Distribution) -> int:
    return sum(where(dist, p).stat().st_size for p in members(dist))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requirement", nargs="+")
    parser.add_argument("-d", "--dest", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--level", type=int, default=1)
    parser.add_argument("--no-deps", dest="deps", action="store_false", help="only those named")
    args = parser.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    dists = sorted(needed(args.requirement, args.deps), key=size, reverse=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [
            pool.submit(write_wheel, dist.name, str(args.dest), args.level) for dist in dists
        ]
        for future in futures:
            print(future.result())
    return 0


if __name__ == "__main__":
    sys.exit(main())
