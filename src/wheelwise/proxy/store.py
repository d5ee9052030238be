"""A bounded, content-addressed folder of built files, each built once.

Layout under the store's folder, every name derived from ``sha256(key)`` (the
*name*, 64 hex digits) so that a key may hold any characters::

    entries/ab/<name>        the built file
    entries/ab/<name>.json   its sidecar: {"sha256", "size", "info"}
    locks/<name>.lock        the entry's lock between processes
    tmp/<name>.<random>/     a builder's private folder

An entry is present only when its sidecar reads and the file's size matches it.
Publishing renames the file into place, then the sidecar, so a reader (or a kill
between the two) never sees a sidecar vouching for a half-written file.

Building: one thread per process waits on the file lock of a name; the others
wait on a thread lock, so threads do not poll the file. The builder runs
``make`` in a new folder under ``tmp/``. When ``make`` raises, nothing is
published and the error goes to that caller alone: each waiting caller then
takes the lock in turn, finds no entry and runs ``make`` itself. A ``make`` that
always fails is thus run once per waiting caller, never two at a time.

A builder's folder in ``tmp/`` is only ever there while its builder holds the
name's lock, so whoever holds that lock may remove what it finds: the leftovers
of a builder that was killed. Starting a store removes those of every idle name,
and a build removes those of its own name.

Bounds: each process keeps the sizes of the entries it knows (those found when it
started, built, or read since) and after each build evicts the least recently
used of them until the total is within ``max_bytes``, sparing the entry just
built. Recency is the sidecar's mtime across processes (touched at most once a
minute per entry) and exact within one. Entries another process adds are not
counted until this one reads them, so the bound holds per process, approximately.
An entry whose lock is busy is not evicted (it is being rebuilt).

Eviction unlinks the sidecar, then the file. A reader that already opened the
file keeps reading it (POSIX keeps an unlinked file until its last descriptor
closes); a caller should open ``StoredFile.path`` soon after getting it, and call
:meth:`BuildStore.build` again if the file has gone. Lock files stay: unlinking
one that another process has open would let two processes hold the same lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import filelock

from ..untrusted_json import UntrustedDocumentError, loads_json

__all__ = ["BuildStore", "StoredFile"]

# A sidecar holds a few short strings; anything longer is not one of ours.
_SIDECAR_LIMIT = 1 << 20
# Touching a sidecar on every read would write to the disk on every request.
_TOUCH_AFTER_SECONDS = 60.0


@dataclass(frozen=True)
class StoredFile:
    """A finished entry of a :class:`BuildStore`."""

    path: Path
    sha256: str
    size: int
    info: Mapping[str, str]


@dataclass
class _Waiters:
    """The thread lock of one name, and how many threads hold or wait for it."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    count: int = 0


class BuildStore:
    """Built files under *directory*, at most about *max_bytes* of them."""

    def __init__(self, directory: Path, *, max_bytes: int) -> None:
        self._entries = directory / "entries"
        self._locks = directory / "locks"
        self._tmp = directory / "tmp"
        for folder in (self._entries, self._locks, self._tmp):
            folder.mkdir(parents=True, exist_ok=True)
        self._max_bytes = max_bytes
        self._guard = threading.Lock()
        self._waiters: dict[str, _Waiters] = {}
        # Known entries, least recently used first, with their sizes.
        self._sizes: OrderedDict[str, int] = OrderedDict()
        self._total = 0
        self._remove_leftovers()
        self._scan()

    def get(self, key: str) -> StoredFile | None:
        """The finished entry of *key*, or None; it becomes the most recently used."""
        name = _name(key)
        found = self._read(name)
        with self._guard:
            if found is None:
                self._forget(name)
            else:
                self._remember(name, found.size)
        return found

    def build(self, key: str, make: Callable[[Path], Mapping[str, str]]) -> StoredFile:
        """The entry of *key*, made by ``make(folder)`` if there is none.

        ``make`` writes exactly one file into the empty *folder* and returns small
        facts about it, kept in the sidecar. What ``make`` raises propagates, and
        nothing is published."""
        found = self.get(key)
        if found is not None:
            return found
        name = _name(key)
        with self._thread_lock(name), self._file_lock(name):
            found = self.get(key)
            if found is not None:
                return found
            built = self._make(name, make)
        with self._guard:
            self._remember(name, built.size)
            self._evict(spare=name)
        return built

    def _data(self, name: str) -> Path:
        return self._entries / name[:2] / name

    def _sidecar(self, name: str) -> Path:
        return self._entries / name[:2] / f"{name}.json"

    def _read(self, name: str) -> StoredFile | None:
        sidecar = self._sidecar(name)
        data = self._data(name)
        try:
            with sidecar.open("rb") as stream:
                text = stream.read(_SIDECAR_LIMIT + 1)
                used = os.fstat(stream.fileno()).st_mtime
            size = data.stat().st_size
            record = loads_json(text) if len(text) <= _SIDECAR_LIMIT else None
        except (OSError, UntrustedDocumentError):
            return None
        found = _stored(data, record)
        if found is None or found.size != size:
            return None
        if time.time() - used >= _TOUCH_AFTER_SECONDS:
            with contextlib.suppress(OSError):
                os.utime(sidecar)
        return found

    def _make(self, name: str, make: Callable[[Path], Mapping[str, str]]) -> StoredFile:
        """Run *make* and publish its file; the caller holds *name*'s locks."""
        self._remove_scratch(name)
        scratch = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=self._tmp))
        try:
            info = dict(make(scratch))
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in info.items()):
                raise TypeError(
                    f"the builder of store entry {name} returned facts that are not all"
                    " strings; return a mapping of str to str"
                )
            made = _only_file(scratch, name)
            digest, size = _digest(made)
            record = {"sha256": digest, "size": size, "info": info}
            fd, sidecar_temporary = tempfile.mkstemp(dir=scratch, suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                json.dump(record, stream)
            data, sidecar = self._data(name), self._sidecar(name)
            data.parent.mkdir(exist_ok=True)
            # A sidecar left from a damaged entry must not vouch for the new file.
            sidecar.unlink(missing_ok=True)
            made.replace(data)
            Path(sidecar_temporary).replace(sidecar)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return StoredFile(path=data, sha256=digest, size=size, info=info)

    @contextlib.contextmanager
    def _thread_lock(self, name: str) -> Iterator[None]:
        with self._guard:
            waiters = self._waiters.setdefault(name, _Waiters())
            waiters.count += 1
        try:
            with waiters.lock:
                yield
        finally:
            with self._guard:
                waiters.count -= 1
                if not waiters.count:
                    del self._waiters[name]

    def _file_lock(self, name: str) -> filelock.FileLock:
        return filelock.FileLock(str(self._locks / f"{name}.lock"))

    @contextlib.contextmanager
    def _idle(self, name: str) -> Iterator[bool]:
        """Holds *name*'s file lock if no one else does; yields whether it does."""
        lock = self._file_lock(name)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def _remove_scratch(self, name: str) -> None:
        for folder in self._tmp.glob(f"{name}.*"):
            shutil.rmtree(folder, ignore_errors=True)

    def _remove_leftovers(self) -> None:
        """Remove what killed builders left: their folders and unvouched files."""
        names = {folder.name.partition(".")[0] for folder in self._tmp.iterdir()}
        # A file without its sidecar: its builder was killed between the two renames.
        names.update(
            path.name
            for path in self._entries.glob("*/*")
            if path.suffix != ".json" and not self._sidecar(path.name).exists()
        )
        for name in filter(_is_name, names):
            with self._idle(name) as idle:
                if idle:
                    self._remove_scratch(name)
                    if not self._sidecar(name).exists():
                        self._data(name).unlink(missing_ok=True)

    def _scan(self) -> None:
        found: list[tuple[float, str, int]] = []
        for sidecar in self._entries.glob("*/*.json"):
            name = sidecar.name.removesuffix(".json")
            try:
                used = sidecar.stat().st_mtime
                size = self._data(name).stat().st_size
            except OSError:
                continue
            found.append((used, name, size))
        for _used, name, size in sorted(found):
            self._remember(name, size)

    def _remember(self, name: str, size: int) -> None:
        """Count *name* as the most recently used entry; the caller holds the guard."""
        self._total += size - self._sizes.get(name, 0)
        self._sizes[name] = size
        self._sizes.move_to_end(name)

    def _forget(self, name: str) -> None:
        self._total -= self._sizes.pop(name, 0)

    def _evict(self, spare: str) -> None:
        """Remove least recently used entries until within bounds; the caller holds
        the guard."""
        for name in list(self._sizes):
            if self._total <= self._max_bytes:
                return
            if name == spare:
                continue
            with self._idle(name) as idle:
                if idle:
                    self._sidecar(name).unlink(missing_ok=True)
                    self._data(name).unlink(missing_ok=True)
                    self._forget(name)


def _name(key: str) -> str:
    # Lone surrogates are valid in a str key, so they must hash too.
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _is_name(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _stored(data: Path, record: object) -> StoredFile | None:
    """The entry a decoded sidecar describes, or None if it is not a sidecar."""
    if not isinstance(record, dict):
        return None
    digest, size, info = record.get("sha256"), record.get("size"), record.get("info")
    if isinstance(size, bool) or not isinstance(size, int):
        return None
    if not (isinstance(digest, str) and isinstance(info, dict)):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in info.items()):
        return None
    return StoredFile(path=data, sha256=digest, size=size, info=info)


def _only_file(folder: Path, name: str) -> Path:
    made = list(folder.iterdir())
    if len(made) != 1 or not stat.S_ISREG(made[0].lstat().st_mode):
        raise ValueError(
            f"the builder of store entry {name} left {len(made)} entries in {folder};"
            " it must write exactly one regular file there"
        )
    return made[0]


def _digest(path: Path) -> tuple[str, int]:
    """The sha256 and size of *path*, flushed to the disk before it is published."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
            size += len(block)
        # Without this, a power cut could leave a published file of the right size
        # but holding zeros.
        os.fsync(stream.fileno())
    return digest.hexdigest(), size
