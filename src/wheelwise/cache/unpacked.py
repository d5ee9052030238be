"""Wheels kept unpacked, by the hash of the wheel: installs link their files in.

An entry lives at ``<folder>/<algorithm>/<h[:2]>/<h>/`` (*h*: the hex digest the
package source gives for the wheel file, as :mod:`wheelwise.cache.wheel_cache`
keys it) and holds

* ``files/``: every member of the wheel, at its path in the archive, each one
  checked against the wheel's ``RECORD`` as it was written;
* ``entry.json``: the wheel's file name, its ``.dist-info`` folder, and each
  file's path, sha256, size, executable bit and modification time.

An entry is built in a scratch folder of the cache (``scratch/unpack-PID-...``)
and renamed into place whole, so no reader sees half of one, and a run killed
while building one leaves only a scratch folder, cleared by a later run. Removing
an entry renames it out first, for the same reason.

Installs place an entry's files with hard links (or clones, copies, symbolic
links: :mod:`wheelwise.install.link`), so a file edited in place in an
environment is also changed here. Before an entry's files are placed, every file's
size and modification time are compared with ``entry.json`` (a ``stat`` each, no
reading): by :meth:`UnpackedStore.lookup`, or, for a lookup told not to,
by :func:`changed_entries` later, for all the entries of an install at once. An
entry that does not match is removed: the wheel is fetched and unpacked again.
:func:`verify_entry` re-hashes every file (``wheelwise cache verify``).

Nothing here raises for a cache that cannot be read or written: a lookup answers
None, and :meth:`UnpackedStore.publish` raises OSError for its caller to install
without the cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from packaging.utils import canonicalize_name

from wheelwise.cache.scratch import new_scratch_folder
from wheelwise.cache.wheel_cache import content_key
from wheelwise.delete_tree import delete_tree
from wheelwise.open_folders import AVAILABLE, OpenFolders
from wheelwise.untrusted_json import UntrustedDocumentError, loads_json
from wheelwise.userfiles import open_regular, read_regular_file, write_all

__all__ = [
    "ENTRY_FILE",
    "EntryFile",
    "UnpackedStore",
    "UnpackedWheel",
    "changed_entries",
    "entry_matches",
    "files_match",
    "verify_entries",
    "verify_entry",
]

_log = logging.getLogger(__name__)

ENTRY_FILE = "entry.json"
FILES = "files"
FORMAT = 1
# Files compared from their folders, kept open (False: by whole paths; a test
# compares the two).
OPEN_FOLDERS = AVAILABLE
# A project with an entry of this many files or more is noted (a file named after
# it in this folder, listing its latest such entries), so that an install can tell
# at once whether one of its wheels may be worth placing ahead, and read that entry
# beforehand (install.head_start).
MANY_FILES = 1000
MANY_FILES_FOLDER = "many-files"
_HINTED_ENTRIES = 2
_HINT_LIMIT = 4096
# An entry's place in the store: algorithm/<h[:2]>/<h> (see path_for).
_HINT_LINE = re.compile(r"[a-z0-9_]{1,16}/([0-9a-f]{2})/\1[0-9a-f]{30,126}\Z")
_PROJECT = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
# An entry.json is a few hundred bytes per file: far below this for any wheel.
_ENTRY_LIMIT = 64 << 20
_CHUNK = 1 << 20


class EntryFile(NamedTuple):
    """One file of an entry, as it was when the entry was made (a tuple: an
    entry.json holds one per file, 12,000 for torch, each made as it is read)."""

    path: str
    """Its path in the wheel (``/``-separated)."""
    sha256: str
    """Its sha256, urlsafe base64 without padding (as ``RECORD`` writes it)."""
    size: int
    executable: bool
    mtime_ns: int


@dataclass(frozen=True)
class UnpackedWheel:
    """A wheel unpacked in the cache, ready to be linked into an environment."""

    folder: Path
    """The entry."""
    filename: str
    """The wheel's file name."""
    dist_info: str
    files: tuple[EntryFile, ...] = field(compare=False)
    checked: bool = field(default=False, compare=False)
    """Whether its files are known to be as they were made: just built, or compared
    by :meth:`UnpackedStore.lookup` (False: read from ``entry.json`` only; see
    :func:`changed_entries`)."""
    _root: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Joined once: every file's path starts with it.
        object.__setattr__(self, "_root", os.fspath(self.folder / FILES) + os.sep)

    @property
    def root(self) -> Path:
        """Where the wheel's members are."""
        return self.folder / FILES

    @property
    def name(self) -> str:
        return self.filename

    @property
    def path(self) -> Path:
        """The wheel's file name, for messages (as for a wheel held in memory)."""
        return Path(self.filename)

    def file_path(self, member: str) -> str:
        return self._root + (member if os.sep == "/" else member.replace("/", os.sep))

    def read(self, member: str, limit: int = _ENTRY_LIMIT) -> bytes:
        """A small member's bytes (its ``METADATA``, say). Raises OSError."""
        with open_regular(self.file_path(member)) as stream:
            data = stream.read(limit + 1)
        if len(data) > limit:
            raise OSError(f"{member} is larger than {limit} bytes")
        return data


# A relative ``/``-separated path of non-empty parts, none of them ``.`` or ``..``,
# without a backslash or NUL: a path that stays inside the folder it is joined to.
_SAFE_MEMBER = re.compile(r"(?:(?!\.\.?(?:/|\Z))[^/\\\x00]+/)*(?!\.\.?\Z)[^/\\\x00]+\Z")


def _safe_member(path: object) -> bool:
    return isinstance(path, str) and _SAFE_MEMBER.match(path) is not None


def parse_entry(data: bytes, folder: Path) -> UnpackedWheel | None:
    """The entry described by *data* (an ``entry.json``), or None when it is not one
    this version wrote (damaged, or another format)."""
    try:
        document = loads_json(data)
    except UntrustedDocumentError:
        return None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return None
    filename, dist_info, rows = (document.get(k) for k in ("wheel", "dist_info", "files"))
    if not (isinstance(filename, str) and _safe_member(filename) and "/" not in filename):
        return None
    if not (isinstance(dist_info, str) and _safe_member(dist_info) and "/" not in dist_info):
        return None
    if not (isinstance(rows, list) and _rows_valid(rows)):
        return None
    return UnpackedWheel(folder, filename, dist_info, tuple(map(EntryFile._make, rows)))


def _rows_valid(rows: list[Any]) -> bool:
    """Whether every row is ``[path, sha256, size, executable, mtime_ns]`` of the
    right types, each path safe (:func:`_safe_member`). Checked a column at a time,
    in loops that run in C: torch's entry has 12,000 rows, read on every install."""
    if not rows:
        return True
    if set(map(type, rows)) != {list} or set(map(len, rows)) != {5}:
        return False
    paths, digests, sizes, executables, times = zip(*rows, strict=True)
    return (
        set(map(type, paths)) == {str}
        and _all_safe_members(paths)
        and set(map(type, digests)) == {str}
        and set(map(len, digests)) == {43}
        and set(map(type, sizes)) == {int}
        and min(sizes) >= 0
        and set(map(type, executables)) == {bool}
        and set(map(type, times)) == {int}
    )


def _all_safe_members(paths: Sequence[str]) -> bool:
    """:func:`_safe_member` for every one of *paths*, in a few scans of one string
    rather than a pattern match each. Joined by ``/`` between ``/``s, the paths
    have no empty part (``//``) exactly when none is empty, starts or ends with
    ``/`` or holds ``//``; then their parts are the string's parts, and a ``.`` or
    ``..`` part among them shows as ``/./`` or ``/../``."""
    if not paths:
        return True
    joined = "/" + "/".join(paths) + "/"
    return not any(bad in joined for bad in ("//", "/./", "/../", "\\", "\x00"))


def _entry_json(filename: str, dist_info: str, files: list[EntryFile]) -> bytes:
    rows = [[f.path, f.sha256, f.size, f.executable, f.mtime_ns] for f in files]
    document = {"format": FORMAT, "wheel": filename, "dist_info": dist_info, "files": rows}
    return json.dumps(document, separators=(",", ":")).encode("utf-8")


def entry_matches(entry: UnpackedWheel) -> bool:
    """Every file is there, a regular file with the size and time it was made with."""
    return files_match(entry, 0, len(entry.files))


def files_match(entry: UnpackedWheel, start: int, stop: int) -> bool:
    """:func:`entry_matches` for *entry*'s files from *start* to *stop* (indexes),
    each looked up from its folder, kept open (:mod:`wheelwise.open_folders`)."""
    folders = OpenFolders() if OPEN_FOLDERS else None
    try:
        for item in entry.files[start:stop]:
            path = entry.file_path(item.path)
            try:
                if folders is None:
                    found = os.lstat(path)
                else:
                    folder, name = folders.split(path)
                    found = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except OSError:
                return False
            if (
                not stat.S_ISREG(found.st_mode)
                or found.st_size != item.size
                or found.st_mtime_ns != item.mtime_ns
            ):
                return False
        return True
    finally:
        if folders is not None:
            folders.close()


# Files one worker of changed_entries compares per item of work.
_FILES_PER_CHECK = 256


def changed_entries(entries: Sequence[UnpackedWheel], *, busy: int = 0) -> list[UnpackedWheel]:
    """Those of *entries* not found as they were made (:func:`entry_matches`).

    An install's entries hold tens of thousands of files, a ``stat`` each; compared
    in runs of files over the cores (:func:`~wheelwise.forked_map.forked_map`; *busy*:
    cores kept busy by other work meanwhile), after resolving rather than among its
    threads, which made each ``stat`` wait for the interpreter lock."""
    from wheelwise.forked_map import forked_map

    runs = [
        (index, start, min(start + _FILES_PER_CHECK, len(entry.files)))
        for index, entry in enumerate(entries)
        for start in range(0, len(entry.files), _FILES_PER_CHECK)
    ]
    matched = forked_map(lambda run: files_match(entries[run[0]], run[1], run[2]), runs, busy=busy)
    changed = {index for (index, _, _), ok in zip(runs, matched, strict=True) if not ok}
    return [entries[index] for index in sorted(changed)]


# Writes a wheel's members under the folder it is given; what it wrote, and the
# name of the wheel's .dist-info folder.
Builder = Callable[[Path], tuple[list[EntryFile], str]]


class UnpackedStore:
    """One folder of unpacked wheels (see the module's docstring); *scratch*: where
    entries are built, on the same file system (the cache's ``scratch/``)."""

    def __init__(self, folder: Path, scratch: Path) -> None:
        self.folder = folder
        self.scratch = scratch

    def path_for(self, hashes: Mapping[str, str]) -> Path | None:
        """Where the entry of a wheel with *hashes* lives (whether or not it is
        there); None when such a wheel is not kept (no sha256 or stronger hash)."""
        key = content_key(hashes)
        if key is None:
            return None
        algorithm, digest = key
        return self.folder / algorithm / digest[:2] / digest

    def lookup(
        self, hashes: Mapping[str, str], filename: str, *, check: bool = True
    ) -> UnpackedWheel | None:
        """The entry for the wheel *filename* with *hashes*, every file as it was
        made (sizes and times); None when there is none. A damaged or changed entry
        is removed. Without *check*, its files are not compared (``checked`` is
        False): the caller does that before using them (:func:`changed_entries`)."""
        folder = self.path_for(hashes)
        if folder is None or not folder.is_dir():
            return None
        entry = self.read_entry(folder)
        if entry is not None and check:
            entry = dataclasses.replace(entry, checked=True) if entry_matches(entry) else None
        if entry is None or entry.filename != filename:
            _log.debug("%s is damaged or was changed: removed from the cache", folder)
            self.remove(folder)
            return None
        with contextlib.suppress(OSError):  # its last use, for pruning
            os.utime(folder / ENTRY_FILE)
        return entry

    def publish(self, hashes: Mapping[str, str], filename: str, build: Builder) -> UnpackedWheel:
        """Build the entry of the wheel *filename* with *build*, then put it in place
        whole (or find another run's, put there first). Raises OSError when the
        cache cannot hold it (read-only, full), and what *build* raises; then
        nothing is left behind."""
        folder = self.path_for(hashes)
        if folder is None:
            raise OSError(f"{filename}: no sha256 (or stronger) hash to keep it under")
        work = new_scratch_folder("unpack", self.scratch)
        try:
            files, dist_info = build(work / FILES)
            entry = UnpackedWheel(folder, filename, dist_info, tuple(files), checked=True)
            (work / ENTRY_FILE).write_bytes(_entry_json(filename, dist_info, files))
            folder.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(work, folder)  # noqa: PTH104
            except OSError:
                if not (folder / ENTRY_FILE).is_file():
                    raise
                # Another run published the same wheel first: its entry is as good.
                shutil.rmtree(work, ignore_errors=True)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        if len(files) >= MANY_FILES:
            self.note_many_files(filename, folder)
        return entry

    def note_many_files(self, filename: str, folder: Path) -> None:
        """Note that the entry at *folder*, of the wheel *filename*, has many files:
        its project's hint lists it first, then the one it listed first before (a
        hint only: nothing is raised)."""
        name = _project_of(filename)
        if name is None:
            return
        hint = self.folder / MANY_FILES_FOLDER / name
        known = self._hinted(hint)
        if known[:1] == [folder]:
            return
        kept = [folder, *(entry for entry in known if entry != folder)][:_HINTED_ENTRIES]
        text = "".join(f"{entry.relative_to(self.folder).as_posix()}\n" for entry in kept)
        with contextlib.suppress(OSError):
            hint.parent.mkdir(parents=True, exist_ok=True)
            # Not blocking on a FIFO put there, nor following a link.
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            descriptor = os.open(hint, flags)
            try:
                write_all(descriptor, text.encode("ascii"))
            finally:
                os.close(descriptor)

    def with_many_files(self, names: Iterable[str]) -> set[str]:
        """Those of *names* (canonical project names) that have had an entry of
        :data:`MANY_FILES` files or more here."""
        folder = self.folder / MANY_FILES_FOLDER
        return {name for name in names if _PROJECT.match(name) and (folder / name).exists()}

    def hinted_entries(self, names: Iterable[str]) -> list[Path]:
        """The entries of many files last noted for *names* (canonical project
        names), the latest of each project first; whether they are still there or
        not."""
        folder = self.folder / MANY_FILES_FOLDER
        return [
            entry
            for name in sorted(set(names))
            if _PROJECT.match(name)
            for entry in self._hinted(folder / name)
        ]

    def _hinted(self, hint: Path) -> list[Path]:
        """The entries *hint* lists: its lines that are an entry's place (two runs
        may have written it at once, or one been killed while writing it)."""
        try:
            text = read_regular_file(hint, limit=_HINT_LIMIT).decode("ascii", "replace")
        except OSError:
            return []
        return [self.folder / line for line in text.splitlines() if _HINT_LINE.match(line)]

    def remove(self, folder: Path) -> None:
        """Take the entry at *folder* out (renamed away first, then deleted)."""
        try:
            away = new_scratch_folder("removed", self.scratch)
        except OSError:
            return
        with contextlib.suppress(OSError):
            os.rename(folder, away / "entry")  # noqa: PTH104
        delete_tree(away)

    def entries(self) -> Iterator[Path]:
        """Every entry folder in the store (whether whole or not)."""
        with contextlib.suppress(OSError):
            for algorithm in sorted(self.folder.iterdir()):
                for prefix in sorted(_folders(algorithm)):
                    yield from sorted(_folders(prefix))

    def read_entry(self, folder: Path) -> UnpackedWheel | None:
        """The entry at *folder* as its ``entry.json`` describes it (unchecked)."""
        try:
            with open_regular(folder / ENTRY_FILE) as stream:
                data = stream.read(_ENTRY_LIMIT + 1)
        except OSError:
            return None
        return parse_entry(data, folder) if len(data) <= _ENTRY_LIMIT else None


def _project_of(filename: str) -> str | None:
    """The canonical project name a wheel's file name starts with, if it is one."""
    name = canonicalize_name(filename.split("-", 1)[0])
    return name if _PROJECT.match(name) else None


def _folders(parent: Path) -> list[Path]:
    try:
        return [child for child in parent.iterdir() if child.is_dir()]
    except OSError:
        return []


# One item of work of verify_entries: files of one entry, up to this many bytes (a
# bigger file alone) or this many files.
_VERIFY_BYTES = 64 << 20
_VERIFY_FILES = 256


def verify_entry(entry: UnpackedWheel) -> list[str]:
    """What differs between *entry*'s files and what they held when it was made
    (every file is read and hashed); empty when nothing does."""
    return _files_verified(entry, 0, len(entry.files))


def verify_entries(entries: Sequence[UnpackedWheel]) -> list[list[str]]:
    """:func:`verify_entry` of each of *entries*, in runs of files over the cores
    (:func:`~wheelwise.forked_map.forked_map`), the biggest runs first so that no
    core is left alone with one at the end: the cache of the torch stack holds
    5.5 GB."""
    from wheelwise.forked_map import forked_map

    runs: list[tuple[int, int, int, int]] = []  # bytes, entry, first file, after last
    for index, entry in enumerate(entries):
        start = size = 0
        for position, item in enumerate(entry.files):
            if position > start and (
                size + item.size > _VERIFY_BYTES or position - start >= _VERIFY_FILES
            ):
                runs.append((size, index, start, position))
                start, size = position, 0
            size += item.size
        if start < len(entry.files):
            runs.append((size, index, start, len(entry.files)))
    runs.sort(reverse=True)
    found = forked_map(lambda run: _files_verified(entries[run[1]], run[2], run[3]), runs)
    problems: list[list[str]] = [[] for _ in entries]
    for (_, index, _, _), some in sorted(zip(runs, found, strict=True), key=_entry_order):
        problems[index] += some
    return problems


def _entry_order(run: tuple[tuple[int, int, int, int], list[str]]) -> tuple[int, int]:
    (_, index, start, _), _ = run
    return index, start


def _files_verified(entry: UnpackedWheel, start: int, stop: int) -> list[str]:
    """:func:`verify_entry` for *entry*'s files from *start* to *stop*."""
    from wheelwise.wheels.record import encode_digest  # loads installer: only here

    problems: list[str] = []
    for item in entry.files[start:stop]:
        path = entry.file_path(item.path)
        digest = hashlib.sha256()
        size = 0
        try:
            with open_regular(path) as stream:
                while chunk := stream.read(_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
        except OSError as exc:
            problems.append(f"{item.path}: {exc.strerror or exc}")
            continue
        if encode_digest(digest.digest()) != item.sha256 or size != item.size:
            problems.append(f"{item.path}: changed since it was unpacked")
    return problems
