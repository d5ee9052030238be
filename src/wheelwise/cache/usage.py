"""What the cache holds, kind by kind (``wheelwise cache info``).

The cache root (``WHEELWISE_CACHE_DIR``, else the platform's per-user cache folder)
holds one folder or file per kind; :data:`KINDS` names each with what it is for.
Sizes are those of regular files, found without following symbolic links (a link is
counted as a link, never as what it points to); what cannot be read is left out and
counted in ``unreadable``. Nothing here writes or removes anything.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KINDS", "Kind", "KindUsage", "cache_usage", "measure"]


@dataclass(frozen=True)
class Kind:
    name: str
    # Relative to the cache root; a folder, or a file.
    path: str
    what: str


# In the order `cache info` lists them.
KINDS = (
    Kind("wheels", "wheels", "wheels installs fetched, by their hash"),
    Kind("unpacked", "unpacked", "wheels unpacked once, linked into environments"),
    Kind("built", "built", "wheels built from source distributions, by the sdist's hash"),
    Kind("metadata", "metadata", "PEP 658 metadata files, by their hash"),
    Kind("pages", "http", "index pages and *-variants.json, with their validators"),
    Kind("plugins", "plugins", "environments of third-party provider plugins"),
    Kind("detection", "detect.cache", "the providers' answers for this machine"),
    Kind("proxy", "proxy", "wheelwise proxy: pages, metadata and rewritten wheels"),
    Kind("environments", "environments", "locks, journals of read-only and --target environments"),
    Kind("scratch", "scratch", "folders of runs in progress, or left by killed ones"),
)


@dataclass(frozen=True)
class KindUsage:
    kind: Kind
    files: int
    bytes: int
    unreadable: int
    exists: bool


def _walk(top: Path) -> tuple[int, int, int]:
    """(files, bytes, unreadable) under *top*, links not followed."""
    files = size = unreadable = 0
    pending = [os.fspath(top)]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        unreadable += 1
                        continue
                    if stat.S_ISDIR(info.st_mode):
                        pending.append(entry.path)
                    else:
                        files += 1
                        size += info.st_size if stat.S_ISREG(info.st_mode) else 0
        except OSError:
            unreadable += 1
    return files, size, unreadable


def measure(path: Path) -> tuple[int, int]:
    """(files, bytes) of *path*: a folder's regular files (links not followed), or
    the file itself; (0, 0) when it cannot be read."""
    try:
        info = path.lstat()
    except OSError:
        return 0, 0
    if stat.S_ISDIR(info.st_mode):
        files, size, _ = _walk(path)
        return files, size
    return 1, info.st_size if stat.S_ISREG(info.st_mode) else 0


def cache_usage(root: Path) -> list[KindUsage]:
    """Each kind of :data:`KINDS` under *root*, with what it holds."""
    found: list[KindUsage] = []
    for kind in KINDS:
        path = root / kind.path
        try:
            info = path.lstat()
        except FileNotFoundError:
            found.append(KindUsage(kind, 0, 0, 0, exists=False))
            continue
        except OSError:
            found.append(KindUsage(kind, 0, 0, 1, exists=True))
            continue
        if stat.S_ISDIR(info.st_mode):
            found.append(KindUsage(kind, *_walk(path), exists=True))
        else:
            size = info.st_size if stat.S_ISREG(info.st_mode) else 0
            found.append(KindUsage(kind, 1, size, 0, exists=True))
    return found
