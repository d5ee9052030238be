"""A head start: the biggest wheel of a warm install placed while the rest resolves.

Placing a wheel kept unpacked in the cache is a system call per file and folder:
torch's 12,000 files take longer than resolving its 28 dependencies. The resolver
pins the requested project first, so its wheel is known long before the plan is
whole. When one of the requested projects has had an entry of many files in the
cache (:meth:`~wheelwise.cache.unpacked.UnpackedStore.with_many_files`), a
:class:`HeadStart` forks a standby worker before the install starts any thread (a
fork must not inherit a lock held elsewhere). While it waits, the worker reads the
entries the cache last noted for those projects
(:meth:`~wheelwise.cache.unpacked.UnpackedStore.hinted_entries`) and compares their
files with what they were made with. When the resolver pins a wheel whose cache
entry is big (:data:`MIN_ENTRY_BYTES` of ``entry.json``, some 700 files) and that
is not installed yet, the install's transaction is begun there and then (lock,
recovery, journal: :func:`~wheelwise.install.transaction.open_transaction`) and the
worker places that wheel through it, on another core, journaling each step as the
transaction's own workers do (:mod:`wheelwise.install.parallel`). The install
compares the files of that entry the worker had not compared while the worker
places them (:meth:`HeadStart.left_to_compare`); an entry the worker found changed
is declined, and refused by the install as any changed entry is.

Once the plan is known, :func:`~wheelwise.install.transaction.install_wheels`
takes the head start over when the plan installs that very wheel, and installs the
others meanwhile; otherwise (resolution went elsewhere, failed, or was
interrupted) the worker is stopped and what it placed is rolled back before the
install goes on as usual. A head start that fails is rolled back with the whole
transaction (:class:`HeadStartFailed`); the install is then made again without
one, which succeeds or says why. A kill at any moment leaves the journal, which the
next run replays as for any install.
"""

from __future__ import annotations

import contextlib
import dataclasses
import mmap
import os
import pickle
import select
import signal
from collections.abc import Collection
from pathlib import Path
from typing import NamedTuple

from packaging.utils import canonicalize_name

from wheelwise.cache.unpacked import ENTRY_FILE, UnpackedStore, UnpackedWheel, files_match
from wheelwise.client.index_file import WHEEL, IndexFile
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.fetch.verify import VerifiedWheel, verify_wheel
from wheelwise.forked_map import can_fork, describe_status, reap, stop, stop_on_ctrl_c
from wheelwise.install.journal import WriteAhead
from wheelwise.install.link import Placement
from wheelwise.install.parallel import ERROR, ReportingJournal, receive, send
from wheelwise.install.transaction import (
    OpenTransaction,
    Warn,
    open_transaction,
    place_cached,
)
from wheelwise.install.unpack import Cancelled, Journal
from wheelwise.models.errors import InstallError
from wheelwise.userfiles import write_all

__all__ = ["HeadStart", "HeadStartFailed"]

# "auto", or "off": never (the kill tests keep every step in one process's order).
SWITCH = "auto"
# An entry whose entry.json is at least this big (some 700 files) is worth it.
MIN_ENTRY_BYTES = 64 << 10

# What the worker reports besides parallel's kinds: it declined (the entry is gone,
# changed, or not that wheel's), it started placing (followed by how many of the
# entry's first files it found as they were made), it placed every file.
_DECLINED, _STARTED, _DONE = b"N", b"S", b"K"
# Files compared between two looks for the command, while the worker waits.
_FILES_BETWEEN_LOOKS = 256


class HeadStartFailed(InstallError):
    """The wheel placed ahead could not be placed; the transaction was rolled back."""


class HeadStart:
    """One install's head start (see the module's docstring): made before any
    thread starts, offered each pinned wheel, then taken over or abandoned by
    :func:`~wheelwise.install.transaction.install_wheels`. :meth:`close` (always)
    abandons what is not taken over and leaves no worker behind."""

    def __init__(self, placement: Placement, requested: Collection[str]) -> None:
        self.placement = placement
        self.opened: OpenTransaction | None = None
        self._pid: int | None = None  # the worker, until it is waited for
        self._entry: tuple[Path, str] | None = None  # the entry offered, and its wheel
        self._reports: list[bytes] = []  # read from the worker, not yet journaled
        self._unread = b""
        self._ended = False  # the worker closed its end: every report is read
        self._interrupted = False  # Ctrl-C came while waiting for the worker
        self._status: int | None = None
        self._compared = 0  # the entry's first files the worker found as they were made
        self._command = self._pipe = -1
        store = placement.unpacked
        if SWITCH == "off" or store is None or not likely(store, requested) or not can_fork():
            return
        self._flag = mmap.mmap(-1, 1)
        commands, self._command = os.pipe()
        self._pipe, reports = os.pipe()
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:  # no process to spare: the install goes on without a worker
            for fd in (commands, self._command, self._pipe, reports):
                os.close(fd)
            self._command = self._pipe = -1
            self._flag.close()
            return
        if pid == 0:  # pragma: no cover - the worker; coverage does not follow forks
            code = 1
            try:
                os.close(self._command)
                os.close(self._pipe)
                stop_on_ctrl_c(self._flag)
                code = _standby(commands, reports, self._flag, placement, parent, requested)
            finally:
                os._exit(code)
        os.close(commands)
        os.close(reports)
        self._pid = pid

    # -- while resolving -----------------------------------------------------------

    def offer(
        self,
        file: IndexFile,
        env: TargetEnvironment,
        installed: Collection[str],
        *,
        warn: Warn | None = None,
        break_system_packages: bool = False,
    ) -> None:
        """The resolver pinned *file*: place it ahead if it is the first wheel worth
        it (its cache entry big, its project not among *installed* in *env*)."""
        store = self.placement.unpacked
        if self._pid is None or self._entry is not None or store is None:
            return
        wheel = file.wheel
        if file.kind != WHEEL or wheel is None or canonicalize_name(wheel.name) in installed:
            return
        folder = store.path_for(file.hashes)
        if folder is None:
            return
        try:
            if (folder / ENTRY_FILE).stat().st_size < MIN_ENTRY_BYTES:
                return
        except OSError:
            return
        self._entry = (folder, file.filename)  # offered once, whatever comes of it
        store.note_many_files(file.filename, folder)  # for the next install's worker
        self.opened = open_transaction(
            env, self.placement, warn, break_system_packages=break_system_packages
        )
        if self.opened is None:
            return
        assert self.opened.transaction.wal is not None
        command = (env, str(folder), file.filename, str(self.opened.transaction.wal.path))
        try:
            write_all(self._command, pickle.dumps(command))
        finally:
            self._close_command()

    # -- once the plan is known ------------------------------------------------------

    def adopt(self, wheels: list[VerifiedWheel]) -> VerifiedWheel | None:
        """The one of *wheels* being placed ahead, once its worker has read the
        entry and started; else None, the head start abandoned."""
        if self.opened is not None and self._entry is not None:
            for wheel in wheels:
                source = wheel.source
                if not isinstance(source, UnpackedWheel):
                    continue
                if (source.folder, source.filename) == self._entry and self._started():
                    return wheel
        self.abandon()
        return None

    def left_to_compare(self, ahead: VerifiedWheel) -> UnpackedWheel | None:
        """The entry of *ahead* (adopted) with only the files its worker did not
        compare with what they were made with while it waited: those the install
        compares (None: none left, or the entry is known to be as it was made)."""
        source = ahead.source
        if not isinstance(source, UnpackedWheel) or source.checked:
            return None
        if self._compared >= len(source.files):
            return None
        return dataclasses.replace(source, files=source.files[self._compared :])

    def hand_over(self) -> OpenTransaction:
        """The transaction, for the install that took the head start over (which
        commits it or rolls it back, and lets its lock go)."""
        opened, self.opened = self.opened, None
        assert opened is not None
        return opened

    def cancel(self) -> None:
        """Ctrl-C: the worker stops at its next file."""
        if self._pid is not None:
            stop(self._flag)

    def join(self, journal: Journal) -> None:
        """Wait for the worker to end, its warnings taken into *journal*. Raises
        HeadStartFailed unless it placed every file."""
        self.stop(journal, finish=True)
        if _DONE not in self._reports:
            assert self._entry is not None
            error = next((r[1:] for r in self._reports if r[:1] == ERROR), None)
            why = (
                error.decode("utf-8", "replace")
                if error is not None
                else describe_status(self._status or 0)
            )
            raise HeadStartFailed(f"placing {self._entry[1]} ahead failed ({why})")

    def stop(self, journal: Journal, *, finish: bool = False) -> None:
        """Stop the worker (with *finish*: let it end), wait for it, and take its
        warnings into *journal* (its steps are in the journal file, written by the
        worker itself). Idempotent; Ctrl-C meanwhile is only noted."""
        if self._pid is None:
            return
        if not finish:
            stop(self._flag)
        self._close_command()
        while not self._ended:
            try:
                self._read()
            except KeyboardInterrupt:
                self._interrupted = True
                stop(self._flag)
        for report in self._reports:
            receive(report, journal)
        self._status, stopped = reap(self._pid, self._flag)
        self._interrupted = self._interrupted or stopped
        self._pid = None

    def abandon(self) -> None:
        """Stop the worker, undo what it placed and let the lock go; Ctrl-C that
        came meanwhile is raised once that is done."""
        opened, self.opened = self.opened, None
        try:
            self.stop(opened.transaction.journal if opened is not None else Journal())
        finally:
            if opened is not None:
                opened.abandon()
        if self._interrupted:
            self._interrupted = False
            raise KeyboardInterrupt

    def close(self) -> None:
        """:meth:`abandon` what was not taken over; free what the worker shared."""
        try:
            self.abandon()
        finally:
            if self._pipe >= 0:
                os.close(self._pipe)
                self._pipe = -1
                self._flag.close()

    # -- the worker's reports ----------------------------------------------------------

    def _close_command(self) -> None:
        if self._command >= 0:
            os.close(self._command)
            self._command = -1

    def _started(self) -> bool:
        """Whether the worker started placing (waiting for its first word)."""
        while True:
            for report in self._reports:
                if report[:1] in (_STARTED, _DECLINED, ERROR):
                    if report[:1] == _STARTED and report[1:].isdigit():
                        self._compared = int(report[1:])
                    return report[:1] == _STARTED
            if self._ended:
                return False
            self._read()

    def _read(self) -> None:
        chunk = os.read(self._pipe, 1 << 16)
        if not chunk:
            self._ended = True
            return
        *whole, self._unread = (self._unread + chunk).split(b"\0")
        self._reports += whole


def likely(store: UnpackedStore, requested: Collection[str]) -> bool:
    """Whether a head start may come for an install of *requested* (canonical
    names): one of them has had a big entry in *store*. A worker costs the install
    its fork, and every page it writes while the worker waits."""
    return bool(store.with_many_files(requested))


def _die_with(parent: int) -> None:  # pragma: no cover - runs in the worker
    """Have the kernel kill this worker when *parent* dies. The worker does not hold
    the environment's lock (it was forked before it was taken): killed with the
    install, it must not go on placing files while the next run recovers."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # it died before that was set
        os._exit(1)


def _standby(
    commands: int,
    reports: int,
    flag: mmap.mmap,
    placement: Placement,
    parent: int,
    requested: Collection[str],
) -> int:  # pragma: no cover - runs in the worker
    """The worker: reads ahead while it waits for a command (none: the install
    ended, or died), then places its wheel; the exit status."""
    _die_with(parent)
    store = placement.unpacked
    assert store is not None
    ready = _read_ahead(store, requested, commands)
    with os.fdopen(commands, "rb") as stream:
        data = stream.read()
    if not data:
        return 0
    env, folder, filename, journal_path = pickle.loads(data)
    try:
        found = ready.get(Path(folder))
        if found is None:
            entry = store.read_entry(Path(folder))
            found = None if entry is None else _Ready(entry, verify_wheel(entry), 0)
        if found is None or found.entry.filename != filename or found.compared is None:
            send(reports, _DECLINED)  # the install finds what is wrong, as usual
            return 0
        wheel, compared = found.wheel, found.compared
        wal = WriteAhead(Path(journal_path), os.open(journal_path, os.O_WRONLY | os.O_APPEND))
        journal = ReportingJournal(reports, flag, Journal(wal))
        # The install resolves, then places the others, on the other cores: threads
        # here would only hand the interpreter lock to and fro, a futex per link.
        journal.placing_threads = 1
        send(reports, _STARTED + b"%d" % compared)
        place_cached(env, placement, wheel, journal)
    except Cancelled:
        return 0
    except Exception as exc:
        message = str(exc) if isinstance(exc, InstallError) else f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(OSError):
            send(reports, ERROR + message.encode("utf-8", "replace"))
        return 1
    send(reports, _DONE)
    os.close(reports)  # the install reads on while this process ends
    return 0


class _Ready(NamedTuple):
    """An entry read by the worker, its wheel, and how many of its first files were
    found as they were made (None: one was not)."""

    entry: UnpackedWheel
    wheel: VerifiedWheel
    compared: int | None


def _read_ahead(
    store: UnpackedStore, requested: Collection[str], commands: int
) -> dict[Path, _Ready]:  # pragma: no cover - in the worker
    """Until a command comes: the entries the cache's hints name for the requested
    projects, read, then their files compared with what they were made with.
    Reading torch's ``entry.json`` takes longer than resolving up to torch, and
    comparing its 12,000 files longer still: begun here, on a core that would
    wait, they are not left for after (the install compares what is left)."""
    ready: dict[Path, _Ready] = {}
    for folder in store.hinted_entries(requested):
        if _came(commands):
            return ready
        entry = store.read_entry(folder)
        if entry is not None:
            try:
                ready[folder] = _Ready(entry, verify_wheel(entry), 0)
            except InstallError:
                continue  # declined if offered: the install finds what is wrong
    for folder, (entry, wheel, _) in list(ready.items()):
        total = len(entry.files)
        for start in range(0, total, _FILES_BETWEEN_LOOKS):
            if _came(commands):
                return ready
            if not files_match(entry, start, start + _FILES_BETWEEN_LOOKS):
                ready[folder] = _Ready(entry, wheel, None)
                break
            ready[folder] = _Ready(entry, wheel, min(start + _FILES_BETWEEN_LOOKS, total))
    return ready


def _came(commands: int) -> bool:  # pragma: no cover - in the worker
    """Whether the command (or the end of the pipe) can be read."""
    return bool(select.select([commands], [], [], 0)[0])
