"""Removing what the cache holds (``wheelwise cache clean`` and ``cache prune``), and
keeping it under a size (``--max-cache-size``), least recently used first.

Never removed: ``environments`` (the journals that undo killed runs in read-only
environments) and the scratch folders of runs still going. Unpacked wheels are
taken out by :meth:`UnpackedStore.remove` (renamed away first, so no install sees
half an entry); an install that is linking one at that moment fails and is rolled
back. Environments keep the files they hard-linked or copied; those installed with
``--link-mode symlink`` break.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from wheelwise.cache.built_wheels import BuiltWheels
from wheelwise.cache.scratch import clear_stale, process_alive, scratch_root
from wheelwise.cache.stores import ContentCache
from wheelwise.cache.unpacked import entry_matches
from wheelwise.cache.usage import KINDS, cache_usage, measure
from wheelwise.delete_tree import delete_tree

__all__ = ["Removed", "clean", "enforce_size", "prune"]

# Kinds `cache clean` without names removes (all but environments and scratch).
_CLEANED = tuple(kind for kind in KINDS if kind.name not in ("environments", "scratch"))
# wheelwise.atomic_file writes a ".tmp-" file beside what it replaces, then renames it:
# a killed run leaves it. Folders where it writes (an unpacked wheel's, a plugin
# environment's, are the wheels' own files and stay alone), and the root's files.
_TEMPORARY = ".tmp-"
_WITH_TEMPORARIES = ("wheels", "metadata", "http", "proxy")
# Untouched this long, a temporary file has no writer left: none pauses so long.
ABANDONED_AFTER = 3600.0


@dataclass
class Removed:
    """What was removed: files and their bytes."""

    files: int = 0
    bytes: int = 0

    def add(self, path: Path) -> None:
        files, size = measure(path)
        self.files += files
        self.bytes += size


def _remove(path: Path, removed: Removed) -> None:
    removed.add(path)
    if path.is_dir() and not path.is_symlink():
        delete_tree(path)
    else:
        path.unlink(missing_ok=True)


def _project(filename: str) -> str | None:
    name = filename.removesuffix(".metadata")
    try:
        return str(parse_wheel_filename(name)[0])
    except InvalidWheelFilename:
        return None


def _kept_files(folder: Path) -> Iterator[Path]:
    """The files of a hash-keyed store (``ALGORITHM/XX/DIGEST/FILENAME``)."""
    yield from (path for path in folder.glob("*/*/*/*") if path.is_file())


def clean(root: Path, names: Collection[str] = ()) -> Removed:
    """Remove the cache's contents; with *names*, only the wheels, unpacked wheels,
    built wheels and metadata files of those projects."""
    removed = Removed()
    stores = ContentCache.at(root)
    if not names:
        for kind in _CLEANED:
            path = root / kind.path
            if kind.name == "unpacked":
                for entry in list(stores.unpacked.entries()):
                    removed.add(entry)
                    stores.unpacked.remove(entry)
            if path.exists() or path.is_symlink():
                _remove(path, removed)
        clear_stale(scratch_root(root))
        return removed
    wanted = {canonicalize_name(name) for name in names}
    for store in (stores.wheels.folder, stores.metadata.folder):
        for path in list(_kept_files(store)):
            if _project(path.name) in wanted:
                _remove(path.parent, removed)
    for entry in list(stores.unpacked.entries()):
        found = stores.unpacked.read_entry(entry)
        if found is not None and _project(found.filename) in wanted:
            removed.add(entry)
            stores.unpacked.remove(entry)
    # Built wheels: built/XX/KEY/FILENAME.whl
    for path in list((root / "built").glob("*/*/*.whl")):
        if _project(path.name) in wanted:
            _remove(path.parent, removed)
    return removed


def prune(root: Path) -> Removed:
    """Remove what no install needs: scratch folders of runs that ended, unpacked
    wheels that are damaged or half there, wheel files that are also unpacked
    (installs link the unpacked copy; the wheel would only be unpacked again),
    built wheels half copied in by runs that ended, and the temporary files of
    pages, wheels and metadata that killed runs were writing (untouched for
    :data:`ABANDONED_AFTER` seconds)."""
    removed = Removed()
    scratch = scratch_root(root)
    before = measure(scratch)
    clear_stale(scratch)
    after = measure(scratch)
    removed.files += before[0] - after[0]
    removed.bytes += before[1] - after[1]
    stores = ContentCache.at(root)
    unpacked: set[tuple[str, str]] = set()
    for entry in list(stores.unpacked.entries()):
        found = stores.unpacked.read_entry(entry)
        if found is None or not entry_matches(found):
            removed.add(entry)
            stores.unpacked.remove(entry)
            continue
        unpacked.add((entry.name, found.filename))
    for path in list(_kept_files(stores.wheels.folder)):
        if (path.parent.name, path.name) in unpacked:
            _remove(path.parent, removed)
    for part, pid in BuiltWheels(root / "built").parts():
        if not process_alive(pid):  # a built wheel a killed run was copying in
            _remove(part, removed)
    for path in _abandoned_temporaries(root, time.time() - ABANDONED_AFTER):
        _remove(path, removed)
    return removed


def _abandoned_temporaries(root: Path, before: float) -> Iterator[Path]:
    """The temporary files killed runs left in the cache: ``atomic_file``'s last
    written before *before*, and the detection cache's of processes gone."""
    for path in root.glob("detect.cache.*.tmp"):
        pid = path.name.removeprefix("detect.cache.").removesuffix(".tmp")
        if pid.isdigit() and not process_alive(int(pid)) and _regular(path) is not None:
            yield path
    found = list(root.glob(_TEMPORARY + "*"))  # the root's own
    for kind in _WITH_TEMPORARIES:
        for folder, _, names in os.walk(root / kind):
            found += [Path(folder, name) for name in names if name.startswith(_TEMPORARY)]
    for path in found:
        info = _regular(path)
        if info is not None and info.st_mtime < before:
            yield path


def _regular(path: Path) -> os.stat_result | None:
    """*path*'s status if it is a regular file (a link is not followed), else None."""
    try:
        info = path.lstat()
    except OSError:
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def _last_used(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def enforce_size(root: Path, max_bytes: int) -> Removed:
    """Remove unpacked wheels and wheel files, least recently used first (an
    install's lookup marks each one it uses), until the cache's kinds hold at most
    *max_bytes* in all. Files hard-linked into environments count, as ``cache info``
    counts them, though removing them frees no space while an environment links them."""
    removed = Removed()
    total = sum(kind.bytes for kind in cache_usage(root))
    if total <= max_bytes:
        return removed
    stores = ContentCache.at(root)
    candidates: list[tuple[float, Path, bool]] = []  # (last use, path, is unpacked)
    for entry in stores.unpacked.entries():
        candidates.append((_last_used(entry / "entry.json"), entry, True))
    for path in _kept_files(stores.wheels.folder):
        candidates.append((_last_used(path), path.parent, False))
    for _, path, unpacked in sorted(candidates, key=lambda item: item[0]):
        if total <= max_bytes:
            break
        files, size = measure(path)
        if unpacked:
            stores.unpacked.remove(path)
        else:
            delete_tree(path)
        removed.files += files
        removed.bytes += size
        total -= size
    return removed
