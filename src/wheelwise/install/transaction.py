"""Atomic installs and uninstalls of wheels into a :class:`TargetEnvironment`.

A transaction first verifies every wheel (:func:`verify_wheel`: structure, a RECORD
listing every member with a strong hash, METADATA), then takes the target's lock
(``.wheelwise.lock`` in the environment's root, or in the cache when that is not
writable), replays the journal a killed run left, if any, and starts its own
(:mod:`wheelwise.install.journal`): every step below is written down before it is
made. Every installed distribution that is
replaced or removed has its files (those its ``RECORD`` lists, their
``__pycache__`` bytecode and the rest of its ``.dist-info`` folder) *moved* into a
backup folder ``.wheelwise-backup-*`` inside purelib; then the new wheels are
unpacked, several at once (:mod:`wheelwise.install.parallel`), by the ``installer``
library through a destination that journals every file and folder it creates
(:mod:`wheelwise.install.unpack`). When anything fails, the journal is undone and
the backups are moved back, so the environment is left as it was; on success the
backup folder is deleted and folders left empty are pruned. The journal goes last.

Wheels are installed without byte-compiling (``--compile-bytecode`` compiles after
the transaction: :mod:`wheelwise.install.bytecode`), with ``INSTALLER`` set to
``wheelwise``; every ``.dist-info`` file of the wheel is kept (``variant.json``
included). Tag compatibility with the target is the resolver's business, not
checked here.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import secrets
import shutil
import signal
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import filelock
from packaging.utils import canonicalize_name

from wheelwise.cache.unpacked import UnpackedWheel, changed_entries
from wheelwise.delete_tree import delete_tree
from wheelwise.environment.dist_files import (
    FolderListings,
    KeptRecords,
    RemovableFiles,
    owner_of,
    owners_of,
    removable_files,
    without_shared,
)
from wheelwise.environment.installed import InstalledDist, find_installed, list_installed
from wheelwise.environment.interpreter import TargetEnvironment, refuse_externally_managed
from wheelwise.environment.shared_files import (
    FileClash,
    Sharing,
    replacing_warning,
    root_files_left,
)
from wheelwise.fetch.verify import VerifiedWheel, verify_wheel
from wheelwise.install.cache_entry import EntrySource, build_entry
from wheelwise.install.journal import (
    LOCK_NAME,
    Recovered,
    StatePaths,
    WriteAhead,
    pending,
    prune,
    recover_pending,
    replay,
    state_paths,
)
from wheelwise.install.journal import header as journal_header
from wheelwise.install.link import Linker, Placement
from wheelwise.install.parallel import run_tasks
from wheelwise.install.unpack import (
    INSTALLER_METADATA,
    Cancelled,
    Journal,
    install_source,
    unpack_wheel,
)
from wheelwise.models.errors import ChangedCacheEntries, InstallError, LockTimeoutError
from wheelwise.wheels.archive import InMemoryWheel
from wheelwise.wheels.errors import describe

Warn = Callable[[str], None]

__all__ = [
    "INSTALLER_NAME",
    "LOCK_NAME",
    "InstallReport",
    "OpenTransaction",
    "Placement",
    "PlacingAhead",
    "install_wheels",
    "open_transaction",
    "place_cached",
    "recover",
    "uninstall",
]


class PlacingAhead(Protocol):
    """What :func:`install_wheels` asks of a head start
    (:class:`~wheelwise.install.head_start.HeadStart`)."""

    def adopt(self, wheels: list[VerifiedWheel]) -> VerifiedWheel | None: ...
    def left_to_compare(self, ahead: VerifiedWheel) -> UnpackedWheel | None: ...
    def hand_over(self) -> OpenTransaction: ...
    def cancel(self) -> None: ...
    def join(self, journal: Journal) -> None: ...
    def stop(self, journal: Journal, *, finish: bool = False) -> None: ...
    def abandon(self) -> None: ...


INSTALLER_NAME = "wheelwise"
BACKUP_PREFIX = ".wheelwise-backup-"
DEFAULT_LOCK_TIMEOUT = 300.0


@dataclass(frozen=True)
class InstallReport:
    """What a transaction changed: distributions installed and removed (replaced ones too)."""

    installed: list[InstalledDist] = field(default_factory=list)
    removed: list[InstalledDist] = field(default_factory=list)


class InterruptedAfterCommit(KeyboardInterrupt):
    """Ctrl-C came while the transaction was deleting its backups, once nothing could
    be undone: every change in *report* was made, and the clean-up finished."""

    def __init__(self, report: InstallReport) -> None:
        super().__init__("interrupted once the environment was changed")
        self.report = report


def _folders_named(env: TargetEnvironment, names: set[str]) -> dict[str, Path]:
    """The folders called one of *names* in the target's site folders (first found)."""
    found: dict[str, Path] = {}
    for site in env.site_dirs:
        try:
            with os.scandir(site) as scan:
                for entry in scan:
                    if entry.name in names and entry.name not in found and entry.is_dir():
                        found[entry.name] = Path(entry.path)
        except OSError:
            continue
    return found


# -- the transaction ---------------------------------------------------------------------


class _Transaction:
    def __init__(self, env: TargetEnvironment, placement: Placement | None = None) -> None:
        self.env = env
        self.placement = placement if placement is not None else Placement()
        self.linker = Linker(self.placement.link_mode)
        self.wal: WriteAhead | None = None
        self.journal = Journal()
        self.moved: list[str] = []  # what was moved out: its folders are pruned at commit
        self._backups = 0  # backups are numbered in the order they are made
        self.backup_root = env.purelib / f"{BACKUP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        self._backup_made = False
        self.interrupted = False

    def begin(self, journal_path: Path, operation: str) -> None:
        """Write the journal's header: from here on every change is recorded first."""
        header = journal_header(
            operation, self.env.purelib, self.env.scheme_roots, self.backup_root
        )
        self.wal = WriteAhead.begin(journal_path, header)
        self.journal.wal = self.wal

    def interrupt(self) -> None:
        """Ctrl-C: stop at the next file (every worker), then roll back."""
        self.interrupted = True
        self.journal.cancel()

    # -- removal ----------------------------------------------------------------

    def remove(self, dist: InstalledDist, kept: KeptRecords | None = None) -> None:
        """Move *dist*'s files into the backup folder, a folder at once where every
        file in it is *dist*'s (every move written down first, in a few writes;
        undone by a rollback, deleted with the backup at commit). A file that one of
        the distributions *kept* lists too stays (:mod:`~wheelwise.environment.shared_files`)."""
        assert self.wal is not None
        roots = self.env.scheme_roots
        found = removable_files(dist, roots)  # every check before the first move
        if self.interrupted:
            raise KeyboardInterrupt
        if not found.files:
            return
        self._make_backup()
        if kept is not None:  # a shared file stays, and so its folder
            own = str(dist.location) + os.sep
            shared = kept.shared(path for path in found.files if not path.startswith(own))
            if shared:  # its bytecode stays too
                found = RemovableFiles(without_shared(found.files, shared), found.listings)
        paths = found.whole_folders(roots)
        before = len(self.moved)
        try:
            self._move_out(paths, found)
        finally:
            # Before anything is made at these paths: a rollback then puts back what
            # it finds in the backup, "moved" or not (only a copy across file systems
            # cut short leaves both, and is told apart by it).
            self.wal.note_many("moved", self.moved[before:])

    def set_aside(self, paths: list[str]) -> None:
        """Move the files *paths* (an installed distribution's, which a wheel of this
        install replaces) into the backup folder, as :meth:`remove` moves files:
        written down first, put back by a rollback."""
        assert self.wal is not None
        if not paths:
            return
        self._make_backup()
        before = len(self.moved)
        try:
            self._move_out(paths, RemovableFiles(paths, FolderListings()))
        finally:
            self.wal.note_many("moved", self.moved[before:])

    def _make_backup(self) -> None:
        if not self._backup_made:  # its path is in the journal's header
            os.mkdir(self.backup_root)  # noqa: PTH102
            self._backup_made = True

    def _move_out(self, paths: list[str], found: RemovableFiles) -> None:
        """Move each of *paths* (files, and folders of *found*'s files only) into the
        backup folder, noting each in :attr:`moved`; a folder that cannot be renamed
        there (another file system) goes file by file."""
        assert self.wal is not None
        first, self._backups = self._backups, self._backups + len(paths)
        pairs = [(path, str(self.backup_root / str(first + n))) for n, path in enumerate(paths)]
        self.wal.note_rows("move", pairs)
        for count, (path, backup) in enumerate(pairs):
            if not count % 256 and self.interrupted:
                raise KeyboardInterrupt
            try:
                os.rename(path, backup)  # noqa: PTH104
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                if path in found.folders:
                    self._move_out(found.folders[path], found)
                    continue
                shutil.move(path, backup)  # another file system: copied, then removed
            self.moved.append(path)

    # -- installing -------------------------------------------------------------

    def install_all(
        self,
        wheels: Sequence[VerifiedWheel],
        *,
        busy: int = 0,
        left: Sequence[frozenset[str]] = (),
    ) -> None:
        """Unpack *wheels*, several at once (see :mod:`wheelwise.install.parallel`),
        on the cores but *busy* of them; *left*: for each, the files it leaves to
        another wheel (:func:`~wheelwise.environment.shared_files.root_files_left`)."""
        leaves = [*left, *[frozenset[str]()] * (len(wheels) - len(left))]
        tasks = [
            functools.partial(self._install_one, wheel, left=files)
            for wheel, files in zip(wheels, leaves, strict=True)
        ]
        run_tasks(tasks, [wheel.work for wheel in wheels], self.journal, busy=busy)
        if self.interrupted:  # the workers stopped early
            raise KeyboardInterrupt

    def _entry_of(self, wheel: VerifiedWheel, journal: Journal) -> UnpackedWheel | None:
        """*wheel*'s entry in the unpacked cache, made now if need be; None when
        it is not kept there (no hash, no cache, or one that cannot hold it)."""
        if isinstance(wheel.source, UnpackedWheel):
            return wheel.source
        store = self.placement.unpacked
        if store is None or not wheel.hashes:
            return None
        # A wheel that reached here as a file (a local one, or built from an sdist)
        # may have an entry from an earlier install: linked, not unpacked again.
        found = store.lookup(wheel.hashes, wheel.path.name)
        if found is not None:
            return found
        try:
            return store.publish(
                wheel.hashes, wheel.path.name, lambda folder: build_entry(wheel, folder, journal)
            )
        except OSError as exc:  # the cache is full or read-only: unpacked straight in
            journal.note_warning(
                f"cannot keep wheels unpacked in the cache {store.folder} "
                f"({exc.strerror or exc}); they were unpacked straight into the environment"
            )
            return None

    def _install_one(
        self, wheel: VerifiedWheel, journal: Journal, left: frozenset[str] = frozenset()
    ) -> None:
        metadata = dict(INSTALLER_METADATA)
        if wheel.direct_url is not None:
            metadata["direct_url.json"] = wheel.direct_url.encode()
        try:
            entry = self._entry_of(wheel, journal)
            if entry is not None:
                source = EntrySource(entry)
                install_source(
                    source,
                    scheme=self.env.scheme(wheel.name),
                    interpreter=os.path.abspath(self.env.python),  # noqa: PTH100
                    script_kind=self.env.script_kind,
                    journal=journal,
                    linker=self.linker,
                    placed=source.take_root_files(),
                    metadata=metadata,
                    left=left,
                )
                return
            unpack_wheel(
                wheel.source if isinstance(wheel.source, InMemoryWheel) else str(wheel.source),
                wheel.record,
                scheme=self.env.scheme(wheel.name),
                interpreter=os.path.abspath(self.env.python),  # noqa: PTH100 - keep venv links
                script_kind=self.env.script_kind,
                journal=journal,
                dist_info=wheel.dist_info,
                archive=wheel.opened,
                metadata=metadata,
                left=left,
            )
        except FileClash as exc:
            raise _with_owner(self.env, exc) from None
        except (InstallError, Cancelled):
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise InstallError(
                f"installing {wheel.path.name} failed: the archive is damaged "
                f"({_named(wheel, exc)}); re-download or rebuild it; the environment was "
                "restored"
            ) from exc
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise InstallError(
                    f"installing {wheel.path.name} failed: no space left on the file system "
                    f"of {self.env.prefix} ({exc.strerror}); free some space and try again; "
                    "the environment was restored"
                ) from exc
            raise InstallError(
                f"installing {wheel.path.name} failed ({type(exc).__name__}: "
                f"{_named(wheel, exc)}); the environment was restored"
            ) from exc
        except Exception as exc:
            raise InstallError(
                f"installing {wheel.path.name} failed ({type(exc).__name__}: "
                f"{_named(wheel, exc)}); the environment was restored"
            ) from exc

    # -- ending -----------------------------------------------------------------

    def rollback(self) -> list[str]:
        """Undo every change the journal records (the same replay as a recovery's)."""
        if self.wal is None:
            return []
        self.wal.close()
        return replay(self.wal.path)[1]

    def commit(self) -> None:
        assert self.wal is not None
        self.wal.mark("commit")  # past this point a recovery finishes, never undoes
        if self._backup_made:
            delete_tree(self.backup_root)
        roots = [str(root) for root in self.env.scheme_roots]
        prune(self.moved, roots)
        self.wal.finish()


def _with_owner(env: TargetEnvironment, clash: FileClash) -> FileClash:
    """*clash*, naming the installed distribution whose RECORD lists its file."""
    owner = owner_of(list_installed(env), clash.target)
    return clash if owner is None else clash.with_owner(f"{owner.name} {owner.version}")


def _named(wheel: VerifiedWheel, exc: BaseException) -> str:
    """*exc* described, with the wheel's scratch copy called what the user gave."""
    text = describe(exc)
    return text.replace(str(wheel.path), wheel.origin) if wheel.origin else text


def _verify(wheels: Iterable[Path | InMemoryWheel | VerifiedWheel]) -> list[VerifiedWheel]:
    checked: dict[str, VerifiedWheel] = {}
    for source in wheels:
        wheel = source if isinstance(source, VerifiedWheel) else verify_wheel(source)
        if wheel.name in checked:
            raise InstallError(
                f"{wheel.path.name} and {checked[wheel.name].path.name} are both {wheel.name}"
            )
        checked[wheel.name] = wheel
    return list(checked.values())


def _refuse_changed_entries(
    entries: Sequence[UnpackedWheel], placement: Placement | None, *, busy: int = 0
) -> None:
    """Before anything changes: *entries* (cache entries not compared with what they
    were made with yet) are (on the cores but *busy* of them), and any that differ
    are removed from the cache and refused (:class:`ChangedCacheEntries`: fetched
    again, they install)."""
    changed = changed_entries(entries, busy=busy)
    if not changed:
        return
    store = placement.unpacked if placement is not None else None
    for entry in changed:
        if store is not None:
            store.remove(entry.folder)
        else:
            delete_tree(entry.folder)
    raise ChangedCacheEntries([entry.filename for entry in changed])


def _locked(env: TargetEnvironment, timeout: float) -> tuple[filelock.BaseFileLock, StatePaths]:
    try:
        paths = state_paths(env.prefix, in_root=not env.packages_at_root)
        lock = filelock.FileLock(str(paths.lock), timeout=timeout)
        lock.acquire()
    except filelock.Timeout:
        raise LockTimeoutError(
            f"another run holds the lock {paths.lock} for more than "
            f"{timeout:g} s; is another install into {env.prefix} in progress?"
        ) from None
    except OSError as exc:
        raise InstallError(
            f"cannot take the lock of {env.prefix}: {exc}; neither the environment's "
            "root nor the wheelwise cache (WHEELWISE_CACHE_DIR) can be written"
        ) from None
    return lock, paths


def _recover(env: TargetEnvironment, warn: Warn | None) -> list[Recovered]:
    """Replay what a killed run left (the caller holds the lock)."""
    found, problems = recover_pending(env.prefix)
    if problems:
        raise InstallError(
            f"an interrupted run left {env.prefix} half-changed and undoing it failed: "
            + "; ".join(problems)
            + "; fix that, then run `wheelwise recover`"
        )
    if warn is not None:
        for recovered in found:
            warn(recovered.describe())
    return found


def recover(
    env: TargetEnvironment,
    *,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    warn: Warn | None = None,
) -> list[Recovered]:
    """Undo (or finish) what an interrupted run left in *env*; what it found (each
    also told to *warn*). Takes the lock only when a journal is there.

    Every install and uninstall does this first, after taking the lock; an install
    also before it reads what is installed."""
    if not pending(env.prefix):
        return []
    lock, _ = _locked(env, lock_timeout)
    interrupted: list[bool] = []
    try:
        # Recovering is never left half done; Ctrl-C meanwhile counts once it is over.
        with _interrupts_deferred(lambda: interrupted.append(True)):
            found = _recover(env, warn)
    finally:
        lock.release()
    if interrupted:
        raise KeyboardInterrupt
    return found


def _check_managed(env: TargetEnvironment, break_system_packages: bool) -> None:
    if not break_system_packages:
        refuse_externally_managed(env, override="break_system_packages")


@contextlib.contextmanager
def _interrupts_deferred(on_interrupt: Callable[[], None]) -> Iterator[None]:
    """While a transaction changes the environment, Ctrl-C asks it to stop at the next
    file and roll back, instead of raising wherever Python happens to be (between
    creating a file and journaling it, say, which would leave that file behind).
    Signal handlers belong to the main thread; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, lambda signum, frame: on_interrupt())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def _run(
    env: TargetEnvironment,
    lock_timeout: float,
    body: _Body,
    warn: Warn | None,
    placement: Placement | None = None,
    opened: OpenTransaction | None = None,
) -> InstallReport:
    """*body* in a transaction: *opened* (begun already), else one begun here."""
    if opened is not None:
        lock, transaction = opened.lock, opened.transaction
    else:
        lock, paths = _locked(env, lock_timeout)
    try:
        if opened is None:
            transaction = _Transaction(env, placement)
        with _interrupts_deferred(transaction.interrupt):
            try:
                if opened is None:
                    _recover(env, warn)
                    transaction.begin(paths.journal, "uninstall" if not body.wheels else "install")
                report = body(transaction)
                if transaction.interrupted:  # Ctrl-C after the last file: still undone
                    raise KeyboardInterrupt
            except BaseException as exc:
                interrupted = transaction.interrupted or isinstance(exc, KeyboardInterrupt)
                problems = transaction.rollback()
                if problems:
                    what = "interrupted" if interrupted else str(exc)
                    raise InstallError(
                        f"{what}; rolling back also failed: "
                        + "; ".join(problems)
                        + "; fix that, then run `wheelwise recover`"
                    ) from exc
                if interrupted:
                    raise KeyboardInterrupt from None
                if isinstance(exc, InstallError) or not isinstance(exc, Exception):
                    raise
                raise InstallError(f"installation failed and was rolled back: {exc}") from exc
            transaction.commit()
            if warn is not None:
                for message in dict.fromkeys(transaction.journal.warnings):
                    warn(message)
            if transaction.interrupted:  # too late to undo: say so instead of ignoring it
                raise InterruptedAfterCommit(report)
        return report
    finally:
        lock.release()


class _Body:
    def __init__(
        self,
        env: TargetEnvironment,
        wheels: Sequence[VerifiedWheel],
        remove: Sequence[str],
        ahead: tuple[PlacingAhead, VerifiedWheel] | None = None,
        *,
        missing_ok: bool = False,
    ) -> None:
        self.env = env
        self.wheels = wheels
        self.remove = remove
        self.missing_ok = missing_ok  # a name of *remove* not installed is skipped
        # A wheel of *wheels* a head start is placing already, and that head start.
        self.ahead = ahead

    def __call__(self, transaction: _Transaction) -> InstallReport:
        if self.ahead is None:
            return self._changes(transaction)
        head, _ = self.ahead
        transaction.journal.when_cancelled(head.cancel)
        try:
            return self._changes(transaction)
        except BaseException:
            head.stop(transaction.journal)  # before the rollback: nothing placed after it
            raise

    def _changes(self, transaction: _Transaction) -> InstallReport:
        installed: list[InstalledDist] = []
        removed: list[InstalledDist] = []
        # The wheel placed ahead was not installed (a head start needs that): what
        # is there by its name is its own files, arriving.
        ahead = self.ahead[1] if self.ahead is not None else None
        replaced = [wheel.name for wheel in self.wheels if wheel is not ahead]
        present = find_installed(self.env, [*self.remove, *replaced])
        changed = {*present, *(wheel.name for wheel in self.wheels)}
        kept = KeptRecords(lambda: [d for d in list_installed(self.env) if d.name not in changed])
        for name in self.remove:
            dist = present.get(canonicalize_name(name))
            if dist is None and self.missing_ok:
                continue
            if dist is None:
                raise InstallError(f"cannot remove {name}: it is not installed")
            transaction.remove(dist, kept)
            removed.append(dist)
        # Every replaced version is moved out before any new file is written, so a
        # file that moved from one distribution to another between versions is free.
        for wheel in self.wheels:
            old = present.get(wheel.name)
            if old is not None and old not in removed:
                transaction.remove(old, kept)
                removed.append(old)
        # A head start's worker keeps a core busy meanwhile.
        placed = [wheel for wheel in self.wheels if wheel is not ahead]
        sharing = self._left(placed, ahead)
        self._replace(transaction, sharing)
        transaction.install_all(placed, busy=int(ahead is not None), left=sharing.left)
        if self.ahead is not None:
            self.ahead[0].join(transaction.journal)
        # What was written is known: only where each .dist-info folder went is looked
        # up, rather than every new METADATA read back.
        folders = _folders_named(self.env, {wheel.dist_info for wheel in self.wheels})
        for wheel in self.wheels:
            location = folders.get(wheel.dist_info)
            if location is None:  # pragma: no cover - installer wrote the dist-info
                raise InstallError(f"{wheel.path.name}: installed, but its .dist-info is missing")
            installed.append(
                InstalledDist(wheel.name, wheel.version, INSTALLER_NAME, wheel.variant, location)
            )
        return InstallReport(installed=installed, removed=removed)

    def _left(self, placed: list[VerifiedWheel], ahead: VerifiedWheel | None) -> Sharing:
        """For each of *placed*, the files it does not place: another wheel of this
        install places a file there first (*ahead* first: its worker places all of
        its own), or an installed distribution this install keeps has the same bytes
        there already; and the installed files it replaces
        (:func:`~wheelwise.environment.shared_files.root_files_left`)."""
        purelib = os.path.normpath(os.path.abspath(self.env.purelib))  # noqa: PTH100
        if purelib != os.path.normpath(os.path.abspath(self.env.platlib)):  # noqa: PTH100
            return Sharing([])  # each file found there when placed is compared then
        try:
            present = os.listdir(purelib)  # noqa: PTH208 - the names only
        except OSError:
            present = []
        wheels = [*([ahead] if ahead else []), *placed]
        sharing = root_files_left(wheels, purelib, present, being_placed=int(ahead is not None))
        if ahead:
            sharing.left = sharing.left[1:]
        return sharing

    def _replace(self, transaction: _Transaction, sharing: Sharing) -> None:
        """Tell what *sharing* found, and move out the installed files with other
        bytes that its wheels replace, before any is placed. Raises FileClash, before
        anything is placed, for such a file that no installed distribution lists."""
        for message in sharing.warnings:
            transaction.journal.note_warning(message)
        if not sharing.replaced:
            return
        owners = owners_of(list_installed(self.env), sharing.replaced)
        grouped: dict[tuple[str, str], list[str]] = {}
        for target, wheel in sharing.replaced.items():
            owner = owners.get(os.path.normpath(target))
            if owner is None:
                raise FileClash(target)
            grouped.setdefault((f"{owner.name} {owner.version}", wheel), []).append(target)
        transaction.set_aside(list(sharing.replaced))
        for (owner_name, wheel), targets in grouped.items():
            transaction.journal.note_warning(replacing_warning(targets, owner_name, wheel))


def install_wheels(
    env: TargetEnvironment,
    wheels: Sequence[Path | InMemoryWheel | VerifiedWheel],
    *,
    remove: Sequence[str] = (),
    break_system_packages: bool = False,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    warn: Warn | None = None,
    placement: Placement | None = None,
    head_start: PlacingAhead | None = None,
) -> InstallReport:
    """Install *wheels* into *env* (replacing installed versions), removing *remove*.

    All or nothing: on any failure the environment is restored and
    :class:`InstallError` raised (Ctrl-C: restored, then ``KeyboardInterrupt``; once
    every change is made, :class:`InterruptedAfterCommit` with the report). Waits up
    to *lock_timeout* seconds for another run to finish (:class:`LockTimeoutError`).
    What an interrupted earlier run left is recovered first, and told to *warn*.
    *placement*: the unpacked-wheel cache and the link mode (default: none, each
    wheel unpacked straight into *env*). *head_start*: one that may be placing one
    of *wheels* already, in a transaction it began (:mod:`~wheelwise.install.head_start`);
    taken over, or abandoned when that wheel is not among them.
    """
    try:
        _check_managed(env, break_system_packages)
        checked = _verify(wheels)
        ahead = head_start.adopt(checked) if head_start is not None else None
        entries = [
            wheel.source
            for wheel in checked
            if isinstance(wheel.source, UnpackedWheel)
            and not wheel.source.checked
            and wheel is not ahead
        ]
        # Its entry too, but the files its worker compared while it waited: a changed
        # one is rolled back with it. That worker keeps a core busy meanwhile.
        left = head_start.left_to_compare(ahead) if head_start and ahead else None
        _refuse_changed_entries(
            [*entries, left] if left else entries, placement, busy=int(ahead is not None)
        )
        if warn is not None and placement is not None:
            note = _cross_device(env, placement)
            if note is not None:
                warn(note)
    except BaseException:
        if head_start is not None:
            head_start.abandon()
        raise
    if ahead is None or head_start is None:
        return _run(env, lock_timeout, _Body(env, checked, remove), warn, placement)
    body = _Body(env, checked, remove, (head_start, ahead))
    return _run(env, lock_timeout, body, warn, placement, head_start.hand_over())


@dataclass(frozen=True)
class OpenTransaction:
    """An install transaction begun before its wheels are known: its lock held,
    its journal written (see :func:`open_transaction`)."""

    lock: filelock.BaseFileLock
    transaction: _Transaction

    def abandon(self) -> None:
        """Undo what was done in it (whoever did it has stopped) and let the lock go."""
        try:
            problems = self.transaction.rollback()
        finally:
            self.lock.release()
        if problems:
            raise InstallError(
                "rolling back an install that was started ahead failed: "
                + "; ".join(problems)
                + "; fix that, then run `wheelwise recover`"
            )


def open_transaction(
    env: TargetEnvironment,
    placement: Placement,
    warn: Warn | None,
    *,
    break_system_packages: bool = False,
) -> OpenTransaction | None:
    """An install transaction into *env* begun now, as :func:`install_wheels` begins
    one (a killed run's journal replayed, then its own written), for a head start.
    None when the lock is held by another run or *env* refuses installs: the
    install itself waits, or says why, later."""
    try:
        _check_managed(env, break_system_packages)
        lock, paths = _locked(env, 0)
    except (InstallError, LockTimeoutError):
        return None
    interrupted: list[bool] = []
    try:
        transaction = _Transaction(env, placement)
        with _interrupts_deferred(lambda: interrupted.append(True)):
            _recover(env, warn)
            transaction.begin(paths.journal, "install")
    except BaseException:
        lock.release()
        raise
    opened = OpenTransaction(lock, transaction)
    if interrupted:
        opened.abandon()
        raise KeyboardInterrupt
    return opened


def place_cached(
    env: TargetEnvironment, placement: Placement, wheel: VerifiedWheel, journal: Journal
) -> None:
    """Place *wheel* (one unpacked in the cache) into *env* through *journal*, as a
    transaction places each of its wheels (a head start's worker does this)."""
    _Transaction(env, placement)._install_one(wheel, journal)


def _cross_device(env: TargetEnvironment, placement: Placement) -> str | None:
    """Why ``--link-mode hardlink`` cannot be honoured (the cache and the
    environment on two file systems), or None."""
    if placement.unpacked is None or placement.link_mode != "hardlink":
        return None
    cache = placement.unpacked.folder
    while not cache.exists() and cache.parent != cache:
        cache = cache.parent
    try:
        if cache.stat().st_dev == env.purelib.stat().st_dev:
            return None
    except OSError:
        return None
    return (
        f"cannot hard-link from the cache ({placement.unpacked.folder}) into {env.prefix}: "
        "they are on different file systems; files are cloned or copied instead "
        "(put the cache on the same file system with WHEELWISE_CACHE_DIR, or use "
        "--link-mode copy to silence this)"
    )


def would_uninstall(
    env: TargetEnvironment, names: Sequence[str], *, break_system_packages: bool = False
) -> list[InstalledDist]:
    """What :func:`uninstall` of *names* would remove (those installed, in order),
    after the checks it makes first: an externally managed environment, and each
    distribution's RECORD (readable, naming nothing outside the environment).
    Changes nothing."""
    _check_managed(env, break_system_packages)
    installed = {dist.name: dist for dist in list_installed(env)}
    found = [
        installed[name]
        for name in dict.fromkeys(canonicalize_name(name) for name in names)
        if name in installed
    ]
    for dist in found:
        removable_files(dist, env.scheme_roots)
    return found


def uninstall(
    env: TargetEnvironment,
    names: Sequence[str],
    *,
    break_system_packages: bool = False,
    missing_ok: bool = False,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    warn: Warn | None = None,
) -> list[str]:
    """Remove the distributions *names* from *env*; their normalized names.

    All or nothing, like :func:`install_wheels`. A name that is not installed is an
    error unless *missing_ok* (it is then skipped and left out of the answer).
    """
    _check_managed(env, break_system_packages)
    wanted = list(dict.fromkeys(canonicalize_name(name) for name in names))
    report = _run(env, lock_timeout, _Body(env, (), wanted, missing_ok=missing_ok), warn)
    return [dist.name for dist in report.removed]
