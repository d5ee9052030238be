"""The write-ahead journal of a transaction, and the recovery that replays it.

Before a transaction changes anything it writes a journal file (a JSON header:
who, when, which environment, where its backups go) next to the environment's
lock, atomically (temporary file, fsync, rename, fsync of the folder). Then every
change is recorded *before* it is made, one JSON line appended per step:

* ``["file", PATH]`` / ``["dir", PATH]``: about to create this file or folder
  (``["skip", PATH]`` follows when it turned out to exist: not ours to remove);
* ``["move", ORIGINAL, BACKUP]``: about to move an old file into the backup
  folder (``["moved", ORIGINAL]`` once it is there);
* ``["commit"]``: every change is made (fsynced); only clean-up is left;
* ``["undone"]``: a rollback has removed every created file and folder.

A run killed at any point leaves the journal behind. The next run that takes the
lock replays it (:func:`recover_pending`): without ``commit`` it removes what was
created and moves the backups back; with it, it finishes the clean-up. Either way
the journal is deleted last, and replaying is idempotent, so a run killed while
recovering is recovered by the next. A line cut short by a kill is ignored: it
recorded no change yet. Lines are not fsynced one by one (the kernel keeps what a
killed process wrote); the header and ``commit`` are.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _quote
from pathlib import Path
from typing import Any

from wheelwise.cachedir import user_cache_dir
from wheelwise.delete_tree import delete_tree
from wheelwise.environment.dist_files import inside_any, is_inside
from wheelwise.untrusted_json import loads_json
from wheelwise.userfiles import write_all

__all__ = [
    "JOURNAL_NAME",
    "LOCK_NAME",
    "Recovered",
    "StatePaths",
    "WriteAhead",
    "candidate_paths",
    "pending",
    "recover_pending",
    "replay",
    "state_paths",
]

LOCK_NAME = ".wheelwise.lock"
# note_many's writes: a few dozen pages, so a 12,000-file wheel takes ~25 writes.
_NOTE_BATCH = 64 << 10
JOURNAL_NAME = ".wheelwise-journal"
FORMAT = 1


@dataclass(frozen=True)
class StatePaths:
    """Where an environment's lock and journal live."""

    lock: Path
    journal: Path


def _fallback(prefix: Path) -> StatePaths:
    """For an environment whose root is not writable: files in the cache, keyed by
    the environment's path."""
    key = hashlib.sha256(os.fsencode(os.path.abspath(prefix))).hexdigest()[:20]  # noqa: PTH100
    folder = Path(user_cache_dir()) / "environments"
    return StatePaths(folder / f"{key}.lock", folder / f"{key}.journal")


def candidate_paths(prefix: Path) -> list[StatePaths]:
    """Every place a journal of the environment at *prefix* may be, preferred first."""
    return [StatePaths(prefix / LOCK_NAME, prefix / JOURNAL_NAME), _fallback(prefix)]


def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK)


def state_paths(prefix: Path, *, in_root: bool = True) -> StatePaths:
    """The environment's root (as uv keeps ``.lock`` there), outside the folders an
    install changes; a folder in the cache when the root is not writable, or not
    *in_root* (a ``--target`` folder, whose root holds the packages) and the cache
    can be written."""
    preferred, fallback = candidate_paths(prefix)
    if in_root and _writable(prefix):
        return preferred
    try:
        fallback.lock.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        if in_root or not _writable(prefix):
            raise
        return preferred
    return fallback


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not possible everywhere (Windows): the rename is what matters
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _line(fields: list[str] | dict[str, Any]) -> bytes:
    return (json.dumps(fields) + "\n").encode("ascii")


class WriteAhead:
    """An open journal: :meth:`note` a step before making it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def begin(cls, path: Path, header: dict[str, Any]) -> WriteAhead:
        """Write the header atomically and durably; the journal, open for appending."""
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_all(fd, _line({"format": FORMAT, **header}))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)  # noqa: PTH105
        _fsync_dir(path.parent)
        return cls(path, os.open(path, os.O_WRONLY | os.O_APPEND))

    def note(self, *fields: str) -> None:
        # One write per line: O_APPEND keeps lines whole, from threads and forked
        # workers alike. The line is json.dumps's, without its per-call set-up (one
        # line per file of a 16,000-file wheel).
        write_all(self._fd, ("[" + ", ".join(map(_quote, fields)) + "]\n").encode("ascii"))

    def note_many(self, kind: str, paths: Sequence[str]) -> None:
        """``note(kind, path)`` for each of *paths*, in few writes (each of whole
        lines, so that O_APPEND still keeps every line whole)."""
        self._write_lines([("[" + _quote(kind) + ", " + _quote(path) + "]\n") for path in paths])

    def note_rows(self, kind: str, rows: Sequence[Sequence[str]]) -> None:
        """``note(kind, *row)`` for each of *rows*, in few writes."""
        prefix = "[" + _quote(kind) + ", "
        self._write_lines([prefix + ", ".join(map(_quote, row)) + "]\n" for row in rows])

    def _write_lines(self, lines: list[str]) -> None:
        batch: list[str] = []
        size = 0
        for line in lines:
            batch.append(line)
            size += len(line)
            if size >= _NOTE_BATCH:
                write_all(self._fd, "".join(batch).encode("ascii"))
                batch, size = [], 0
        if batch:
            write_all(self._fd, "".join(batch).encode("ascii"))

    def mark(self, kind: str) -> None:
        """A phase change, on disk before what follows it."""
        self.note(kind)
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def finish(self) -> None:
        """The transaction is over (done, or undone): the journal goes."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # noqa: PTH108
        _fsync_dir(self.path.parent)


# -- replaying ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Recovered:
    """A journal found and replayed."""

    operation: str
    target: str
    started: str
    pid: int
    rolled_forward: bool
    """True: the transaction had made every change, its clean-up was finished;
    False: it was rolled back."""
    unreadable: str | None = None
    """The journal's path when it had no header (not written by a transaction: its
    header is written whole, by rename): there was nothing to replay."""

    def describe(self) -> str:
        if self.unreadable is not None:
            return f"removed {self.unreadable}: not a journal wheelwise wrote, nothing to undo"
        done = "finished" if self.rolled_forward else "rolled back"
        return (
            f"{done} an interrupted {self.operation} in {self.target} "
            f"(started {self.started}, pid {self.pid})"
        )


_ARITY = {"file": 2, "dir": 2, "skip": 2, "move": 3, "moved": 2, "commit": 1, "undone": 1}


def _read(path: Path) -> tuple[dict[str, Any], list[list[str]]] | None:
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):  # no journal (a cache that is a file)
        return None
    header: dict[str, Any] | None = None
    records: list[list[str]] = []
    for line in raw.split(b"\n")[:-1]:  # the last piece has no newline: cut short
        try:
            value = loads_json(line)
        except ValueError:
            continue
        if header is None:
            header = value if isinstance(value, dict) else {}
        elif (
            isinstance(value, list)
            and value
            and all(isinstance(v, str) for v in value)
            and _ARITY.get(value[0]) == len(value)
        ):
            records.append(value)
    return (header or {}), records


def replay(path: Path) -> tuple[Recovered | None, list[str]]:
    """Undo (or finish) the transaction of the journal at *path*, then delete it:
    what it was, and the problems met (the journal is kept when there are any)."""
    read = _read(path)
    if read is None:
        return None, []
    header, records = read
    if not isinstance(header.get("roots"), list) or not isinstance(header.get("operation"), str):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # noqa: PTH108
        _fsync_dir(path.parent)
        return Recovered("?", str(path.parent), "?", 0, False, unreadable=str(path)), []
    listed = header.get("roots")
    roots = [str(root) for root in listed] if isinstance(listed, list) else []
    backup = header.get("backup")
    # Never trust a path outside the environment (a damaged or foreign journal).
    if not isinstance(backup, str) or not (
        os.path.basename(backup).startswith(".wheelwise-backup-")  # noqa: PTH119
        and any(is_inside(backup, root) for root in roots)
    ):
        backup = None
    inside = inside_any(roots)
    records = [r for r in records if all(inside(p) for p in r[1:])]
    committed = any(record[0] == "commit" for record in records)
    problems: list[str] = []
    if committed:
        if backup is not None:
            delete_tree(backup)
        prune([record[1] for record in records if record[0] == "moved"], roots)
    else:
        started = header.get("started_ns")
        problems = _roll_back(path, records, started if isinstance(started, int) else None)
        if not problems and backup is not None:
            delete_tree(backup)
    if not problems:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # noqa: PTH108
        _fsync_dir(path.parent)
    recovered = Recovered(
        operation=str(header.get("operation", "install")),
        target=str(header.get("target", path.parent)),
        started=str(header.get("started", "?")),
        pid=pid if isinstance(pid := header.get("pid"), int) else 0,
        rolled_forward=committed,
    )
    return recovered, problems


# File-system clocks are coarse: a file made just after the header may look a
# little older than it.
_CLOCK_SLACK_NS = 2_000_000_000


def _older_than(name: str, started_ns: int | None) -> bool:
    """Whether the file at *name* was last changed before the transaction began: a
    kill between an intent and its ``skip`` leaves a file that was never ours."""
    if started_ns is None:
        return False
    try:
        found = os.lstat(name)
    except OSError:
        return False
    # The inode's change time too: a hard link made from the cache keeps the cached
    # file's modification time, but linking changes the inode.
    return max(found.st_mtime_ns, found.st_ctime_ns) < started_ns - _CLOCK_SLACK_NS


def _roll_back(path: Path, records: list[list[str]], started_ns: int | None) -> list[str]:
    problems: list[str] = []
    if not any(record[0] == "undone" for record in records):
        # A path intended more often than skipped was created by this transaction.
        intended = Counter((r[0], r[1]) for r in records if r[0] in ("file", "dir"))
        skipped = Counter(r[1] for r in records if r[0] == "skip")
        created = [
            (kind, name) for (kind, name), count in intended.items() if count > skipped[name]
        ]
        files = [name for kind, name in reversed(created) if kind == "file"]
        folders = sorted((name for kind, name in created if kind == "dir"), key=len, reverse=True)
        for name in files:
            if not _older_than(name, started_ns):
                _remove(os.unlink, name, problems)
        for name in folders:  # deepest first
            _remove(os.rmdir, name, problems)
        if problems:
            return problems
        # From here on a file at a moved-out path is not a new one: never remove
        # it as such again.
        with open(path, "ab") as journal:  # noqa: PTH123
            journal.write(_line(["undone"]))
            journal.flush()
            os.fsync(journal.fileno())
    done = {r[1] for r in records if r[0] == "moved"}
    for record in reversed(records):
        if record[0] != "move" or len(record) < 3:
            continue
        original, backup = record[1], record[2]
        try:
            _restore(original, backup, moved=original in done)
        except OSError as exc:
            problems.append(f"cannot restore {original} from {backup}: {exc}")
    return problems


def _remove(remove: Callable[[str], None], name: str, problems: list[str]) -> None:
    try:
        remove(name)
    except FileNotFoundError:
        pass
    except OSError as exc:
        problems.append(f"cannot remove {name}: {exc}")


def _restore(original: str, backup: str, *, moved: bool) -> None:
    if not os.path.lexists(backup):
        return  # never moved, or already back
    if os.path.lexists(original):
        if os.path.isdir(original) and not os.path.islink(original):  # noqa: PTH112, PTH114
            # A folder made again where a whole folder was moved out from (not by
            # this transaction: its own are gone by now): put back only when empty.
            os.rmdir(original)  # noqa: PTH106
        elif not moved:  # a move across file systems cut short: the original is whole
            os.unlink(backup)  # noqa: PTH108
            return
        else:
            os.unlink(original)  # noqa: PTH108 - a restoring copy cut short
    os.makedirs(os.path.dirname(original), exist_ok=True)  # noqa: PTH103, PTH120
    shutil.move(backup, original)


def prune(originals: list[str], roots: list[str]) -> None:
    """Remove the folders that moving *originals* out left empty, up to *roots*:
    each folder tried once, the deepest first (torch's 12,000 files are in 780)."""
    absolute = {os.path.abspath(root) for root in roots}  # noqa: PTH100
    inside = inside_any(absolute)
    folders: set[str] = set()
    for original in originals:
        directory = os.path.dirname(original)  # noqa: PTH120 - plain strings throughout
        while directory not in folders and directory not in absolute:
            if not inside(directory):
                break
            folders.add(directory)
            directory = os.path.dirname(directory)  # noqa: PTH120
    kept: set[str] = set()  # not empty: neither are the folders above it
    for directory in sorted(folders, key=len, reverse=True):
        if directory in kept:
            kept.add(os.path.dirname(directory))  # noqa: PTH120
            continue
        try:
            os.rmdir(directory)  # noqa: PTH106
        except FileNotFoundError:
            pass  # pruned by a run killed before it reached the parents
        except OSError:
            kept.add(os.path.dirname(directory))  # noqa: PTH120


def pending(prefix: Path) -> bool:
    """Whether a run left a journal (or the start of one) for *prefix*."""
    for paths in candidate_paths(prefix):
        if paths.journal.exists() or any(_temporaries(paths.journal)):
            return True
    return False


def _temporaries(journal: Path) -> list[Path]:
    try:
        return list(journal.parent.glob(f"{journal.name}.*.tmp"))
    except OSError:
        return []


def recover_pending(prefix: Path) -> tuple[list[Recovered], list[str]]:
    """Replay every journal left for the environment at *prefix* (the caller holds
    its lock): what was recovered, and the problems met."""
    found: list[Recovered] = []
    problems: list[str] = []
    for paths in candidate_paths(prefix):
        # A header being written when the run was killed: nothing was changed yet.
        for temporary in _temporaries(paths.journal):
            with contextlib.suppress(OSError):
                temporary.unlink()
        recovered, met = replay(paths.journal)
        if recovered is not None:
            found.append(recovered)
        problems += met
    return found, problems


def header(operation: str, target: Path, roots: list[Path], backup: Path) -> dict[str, Any]:
    """A journal header for :meth:`WriteAhead.begin`."""
    return {
        "operation": operation,
        "pid": os.getpid(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "started_ns": time.time_ns(),
        "target": str(target),
        "roots": [os.path.abspath(root) for root in roots],  # noqa: PTH100
        "backup": str(backup),
    }
