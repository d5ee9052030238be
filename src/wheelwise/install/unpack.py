"""Writing one wheel's files into an environment: checked, journaled and cheap.

``installer`` drives each install (schemes, entry-point scripts, shebangs, the
installed ``RECORD``); this module gives it

* a source that checks every member against the wheel's ``RECORD`` as it is read,
  so each byte is read and hashed once;
* a destination that writes with plain ``os`` calls (installer's own goes through
  ``pathlib`` several times per file), refuses to replace any file
  (``O_EXCL``: a clash is found by the write itself, even between two wheels
  written at the same time), and notes every file and folder it creates in a
  :class:`Journal`, so that a failed transaction removes exactly those. With a
  :class:`~wheelwise.install.journal.WriteAhead`, each creation is also written
  down on disk *before* it is made, for a run killed midway to be undone.

Several wheels may be unpacked at once, in threads sharing one journal: file
creation, decompression and hashing all release the GIL.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import threading
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, cast

import installer
from installer.destinations import WheelDestination
from installer.records import Hash, RecordEntry
from installer.scripts import Script
from installer.sources import WheelContentElement, WheelSource
from installer.utils import Scheme, fix_shebang, parse_wheel_filename

from wheelwise.environment.shared_files import ComparingWriter, FileClash, holds_bytes, holds_file
from wheelwise.install.journal import WriteAhead
from wheelwise.install.link import Linker
from wheelwise.models.errors import InstallError
from wheelwise.open_folders import AVAILABLE, OpenFolders
from wheelwise.userfiles import write_all
from wheelwise.wheels.archive import InMemoryWheel, dist_info_problem, open_zip
from wheelwise.wheels.members import MemberReader
from wheelwise.wheels.record import RecordRow, encode_digest, write_record

if TYPE_CHECKING:
    from installer.scripts import LauncherKind, ScriptSection

__all__ = [
    "Cancelled",
    "Journal",
    "LinkedFile",
    "LinkedMember",
    "VerifyingWheel",
    "copy_member",
    "install_source",
    "unpack_wheel",
]

INSTALLER_METADATA = {"INSTALLER": b"wheelwise\n"}
# Members up to this size are read whole: one hash, one write. Larger ones stream.
_WHOLE_MEMBER = 4 << 20
_CHUNK = 1 << 20
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
# Placing the files of an unpacked wheel: threads from this many files on (while
# it is the only wheel being placed: see Journal.placing_threads).
_THREADED_LINKS = 512
_LINK_THREADS = 4
# Folders of one depth made by threads from this many on: a thread costs about as much
# as a few ``mkdir`` calls.
_THREADED_DIRS = 16
# Files linked from their folders, kept open (wheelwise.open_folders): False links
# whole paths (a test compares the two).
OPEN_FOLDERS = AVAILABLE


class Cancelled(Exception):
    """Another wheel of the same transaction failed; this one stops early."""


class Journal:
    """What the steps of one transaction share: its write-ahead journal (each file
    and folder written down there before it is made, which is what a rollback or a
    recovery undoes), whether it was cancelled, and its warnings.

    Shared by the threads of one transaction, and by its forked workers (which
    write to the same journal file): a folder two of them both create is the
    one's whose ``mkdir`` won; the other notes it skipped.
    """

    def __init__(self, wal: WriteAhead | None = None) -> None:
        self.wal = wal
        self._cancelled = threading.Event()
        self._known_dirs: set[str] = set()
        self._on_cancel: list[Callable[[], None]] = []
        self.warnings: list[str] = []
        self.placing_threads = _LINK_THREADS
        """Threads one :meth:`link_many` may use. 1 while wheels are placed side by
        side (:func:`~wheelwise.install.parallel.run_tasks`): each worker has a core
        already, and more threads only contend for it and for the folders' locks."""

    def cancel(self) -> None:
        """Make every later :meth:`create` raise :class:`Cancelled` (and tell whoever
        asked, with :meth:`when_cancelled`: forked workers, say)."""
        self._cancelled.set()
        for callback in self._on_cancel:
            callback()

    def when_cancelled(self, callback: Callable[[], None]) -> None:
        self._on_cancel.append(callback)

    def is_cancelled(self) -> bool:
        return self._cancelled.is_set()

    def note_warning(self, message: str) -> None:
        """A problem worked around (told once the transaction ends)."""
        self.warnings.append(message)

    def ensure_dir(self, directory: str) -> None:
        """*directory* and any missing parent made, each journaled."""
        if directory not in self._known_dirs:
            self._ensure_dirs((directory,), 1)

    def _ensure_dirs(self, directories: Iterable[str], workers: int) -> None:
        """Each of *directories* and its missing parents: the missing folders written
        down first, then made a level at a time by *workers* threads (a ``mkdir``
        costs this disk ~0.2 ms). A folder another worker made first is skipped (or
        a file is there: creating the file inside it will say)."""
        missing: set[str] = set()
        for directory in directories:
            current = directory
            while current not in self._known_dirs and current not in missing:
                if os.path.isdir(current):
                    self._known_dirs.add(current)
                    break
                missing.add(current)
                parent = os.path.dirname(current)
                if parent == current:
                    break
                current = parent
        if not missing:
            return
        levels: dict[int, list[str]] = {}
        for folder in missing:
            levels.setdefault(folder.count(os.sep), []).append(folder)
        ordered = [folder for depth in sorted(levels) for folder in sorted(levels[depth])]
        if self.wal is not None:
            self.wal.note_many("dir", ordered)

        def make(folder: str) -> bool:
            try:
                os.mkdir(folder)
            except FileExistsError:
                return False  # made by another worker (or a file is there: linking says)
            return True

        for depth in sorted(levels):
            folders = sorted(levels[depth])
            made = _in_threads(make, folders, workers if len(folders) >= _THREADED_DIRS else 1)
            for folder, new in zip(folders, made, strict=True):
                if not new and self.wal is not None:
                    self.wal.note("skip", folder)
        self._known_dirs.update(missing)

    def create(self, target: str, executable: bool) -> BinaryIO | ComparingWriter:
        """A new file at *target*, opened for writing; never replaces one. Where a
        file is already, what is written is compared with it instead (the caller
        then calls :meth:`keep_existing`)."""
        try:
            fd = self._create_fd(target, executable)
        except FileExistsError:
            return ComparingWriter.at(target)
        return open(fd, "wb")  # closed by the caller

    def keep_existing(self, target: str, compared: ComparingWriter) -> None:
        """After :meth:`create` found a file at *target*: kept, shared, when it held
        what was written (:mod:`~wheelwise.environment.shared_files`), else a clash."""
        if not compared.same():
            raise self._clash(target)
        self._shared(target)

    def write_new(self, target: str, data: bytes, executable: bool) -> None:
        """A new file at *target* holding *data*; never replaces one (one holding
        *data* already is shared)."""
        try:
            fd = self._create_fd(target, executable)
        except FileExistsError:
            if not holds_bytes(target, data):
                raise self._clash(target) from None
            self._shared(target)
            return
        try:
            write_all(fd, data)
        finally:
            os.close(fd)

    def link_new(self, target: str, source: str, executable: bool, linker: Linker) -> None:
        """A new file at *target* with *source*'s content, placed by *linker*
        (hard link, clone, copy or symbolic link); never replaces one (one with
        *source*'s bytes already is shared)."""
        self._intend(target)
        try:
            linker.place(source, target, executable)
        except FileExistsError:
            self._share_or_clash(target, source)

    def link_many(self, placements: Sequence[tuple[str, str, bool]], linker: Linker) -> None:
        """``link_new(target, source, executable, linker)`` for each placement, with
        every intent written down first in a few writes, and the files placed by a
        few threads (a link or a clone is a system call that releases the GIL)."""
        if self.is_cancelled():
            raise Cancelled
        workers = self.placing_threads if len(placements) >= _THREADED_LINKS else 1
        self._ensure_dirs({os.path.dirname(target) for target, _, _ in placements}, workers)
        if self.wal is not None:
            self.wal.note_many("file", [target for target, _, _ in placements])
        # Links: each thread a run of neighbours, whose folders it keeps open. Copies:
        # every workers-th file, so that no thread gets all of one folder's big files.
        if linker.mode == "hardlink" and linker.fell_back is None:
            bounds = [len(placements) * index // workers for index in range(workers + 1)]
            shares = [placements[bounds[index] : bounds[index + 1]] for index in range(workers)]
        else:
            shares = [placements[index::workers] for index in range(workers)]
        failures: list[BaseException | None] = [None] * len(shares)

        def place(index: int) -> None:
            folders = (OpenFolders(), OpenFolders()) if OPEN_FOLDERS else None
            try:
                for count, (target, source, executable) in enumerate(shares[index]):
                    try:
                        if not count % 256 and self.is_cancelled():
                            raise Cancelled
                        try:
                            linker.place(source, target, executable, folders)
                        except FileExistsError:
                            self._share_or_clash(target, source)
                    except BaseException as exc:  # told to the caller, in order
                        failures[index] = exc
                        return
            finally:
                if folders is not None:
                    folders[0].close()
                    folders[1].close()

        if workers == 1:
            place(0)
        else:
            threads = [threading.Thread(target=place, args=(i,)) for i in range(workers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        for failure in failures:
            if failure is not None:
                raise failure

    def _create_fd(self, target: str, executable: bool) -> int:
        """A new file at *target*, its intent journaled first; raises
        FileExistsError when a file is there."""
        self._intend(target)
        return os.open(target, _CREATE_FLAGS, 0o777 if executable else 0o666)

    def _share_or_clash(self, target: str, source: str) -> None:
        """*target* turned out to exist: shared when it holds *source*'s bytes."""
        if not holds_file(target, source):
            raise self._clash(target) from None
        self._shared(target)

    def _shared(self, target: str) -> None:
        """*target* was there already with the bytes meant for it: kept, not ours
        to remove (the new RECORD lists it as well)."""
        if self.wal is not None:
            self.wal.note("skip", target)

    def _intend(self, target: str) -> None:
        """Before creating *target*: stop if cancelled, make its folder, journal it."""
        if self.is_cancelled():
            raise Cancelled
        self.ensure_dir(os.path.dirname(target))
        if self.wal is not None:
            self.wal.note("file", target)

    def _clash(self, target: str) -> FileClash:
        """*target* turned out to exist, with other bytes: not ours to remove."""
        if self.wal is not None:
            self.wal.note("skip", target)
        return FileClash(target)


class LinkedFile(NamedTuple):
    """A file already unpacked and checked (in the cache), to be placed at *path*
    (a tuple: torch places 12,000 of them)."""

    path: str
    """Relative and ``/``-separated, without ``.`` or ``..`` parts (a cache entry's
    paths are checked so when it is read), so it stays inside any folder it is
    joined to."""
    source: str
    executable: bool
    sha256: str
    size: int


class LinkedMember(io.RawIOBase):
    """A member already unpacked (in the cache) and checked there: the destination
    places the file itself (:meth:`Journal.link_new`) rather than reading it."""

    def __init__(self, source: str, sha256: str, size: int) -> None:
        super().__init__()
        self.source = source
        self.sha256 = sha256
        self.size = size

    def readable(self) -> bool:
        return False


class _CheckedMember(io.BytesIO):
    """A member read whole and already checked against RECORD; knows its sha256."""

    def __init__(self, data: bytes, sha256: str) -> None:
        super().__init__(data)
        self.sha256 = sha256


class _CheckedStream(io.RawIOBase):
    """A large member, hashed as it is read and checked against RECORD at its end."""

    def __init__(self, stream: BinaryIO, entry: RecordEntry, wheel_name: str) -> None:
        assert entry.hash_ is not None
        self._stream = stream
        self._entry = entry
        self._wheel_name = wheel_name
        self._digest = hashlib.new(entry.hash_.name)
        self.algorithm = entry.hash_.name
        self._size = 0
        self.sha256: str | None = None

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        """The next chunk, as the underlying stream gives it (no copy); at most
        *size* bytes (all that is left when negative)."""
        if size < 0:
            return b"".join(iter(lambda: self.read(_CHUNK), b""))
        data = self._stream.read(size)
        if not data:
            self._finish()
            return b""
        self._digest.update(data)
        self._size += len(data)
        return data

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(target))
        target[: len(data)] = data
        return len(data)

    def _finish(self) -> None:
        if self.sha256 is not None:
            return
        digest = self._digest.digest()
        encoded = encode_digest(digest)
        _check(self._entry, encoded, self._size, self._wheel_name)
        if self._digest.name == "sha256":
            self.sha256 = encoded


def _check(entry: RecordEntry, encoded: str, size: int, wheel_name: str) -> None:
    """*encoded*: the member's digest, as RECORD writes it (urlsafe base64)."""
    assert entry.hash_ is not None
    if encoded != entry.hash_.value or (entry.size is not None and entry.size != size):
        raise InstallError(
            f"refusing to install {wheel_name}: member {entry.path!r} does not match its "
            "RECORD hash/size: the wheel was modified or corrupted"
        )


class VerifyingWheel(WheelSource):
    """The wheel as installer's documented :class:`~installer.sources.WheelSource`:
    each member read once, and checked against RECORD as it is read."""

    def __init__(
        self,
        archive: zipfile.ZipFile,
        dist_info: str,
        expected: dict[str, RecordEntry],
        wheel_name: str,
        data: bytes | None,
    ) -> None:
        # As installer names the wheel's .data folder: after the file name.
        parsed = parse_wheel_filename(wheel_name)
        super().__init__(parsed.distribution, parsed.version)
        problem = dist_info_problem(dist_info, wheel_name)
        if problem is not None:
            raise InstallError(f"refusing to install {wheel_name}: {problem}")
        self._zipfile = archive
        self._dist_info = dist_info
        self.expected = expected
        self.wheel_name = wheel_name
        self.data = data  # the wheel's bytes, when it is in memory

    @property
    def dist_info_dir(self) -> str:
        return self._dist_info

    @property
    def dist_info_filenames(self) -> list[str]:
        prefix = self._dist_info + "/"
        return [
            name[len(prefix) :]
            for name in self._zipfile.namelist()
            if name.startswith(prefix) and not name.endswith("/")
        ]

    def read_dist_info(self, filename: str) -> str:
        return self._zipfile.read(f"{self._dist_info}/{filename}").decode("utf-8")

    def validate_record(self) -> None:
        """Nothing left to check here: :func:`~wheelwise.fetch.verify.verify_wheel`
        checked that RECORD lists every member with a strong hash, and
        :meth:`get_contents` compares each member with it as it is read."""

    def get_contents(self) -> Iterator[WheelContentElement]:
        # Small members are read whole, with one slice or pread; scripts too, as
        # installer seeks in them to fix the shebang.
        scripts = f"{self.data_dir}/scripts/"
        reader = MemberReader(self._zipfile, self.data)
        for info in self._zipfile.infolist():
            path = info.filename
            if path.endswith("/"):
                continue
            mode = info.external_attr >> 16
            is_executable = bool(mode and stat.S_ISREG(mode) and mode & 0o111)
            entry = self.expected.get(path)
            if entry is None or entry.hash_ is None:
                # RECORD itself, signatures: installer writes or skips them.
                with self._zipfile.open(info) as stream:
                    yield (path, "", ""), cast("BinaryIO", stream), is_executable
                continue
            record = (path, f"{entry.hash_.name}={entry.hash_.value}", str(entry.size or ""))
            data = None
            if info.file_size <= _WHOLE_MEMBER or path.startswith(scripts):
                data = reader.read(info)
                if data is None:
                    with self._zipfile.open(info) as stream:
                        data = stream.read()
            if data is None:
                # Read in chunks straight from the file (or through zipfile when
                # the member is not plainly stored or deflated).
                direct = reader.stream(info)
                with direct if direct is not None else self._zipfile.open(info) as stream:
                    checked = _CheckedStream(cast("BinaryIO", stream), entry, self.wheel_name)
                    yield record, cast("BinaryIO", checked), is_executable
                continue
            digest = hashlib.new(entry.hash_.name, data).digest()
            encoded = encode_digest(digest)
            _check(entry, encoded, len(data), self.wheel_name)
            if entry.hash_.name == "sha256":
                sha256 = encoded
            else:
                sha256 = encode_digest(hashlib.sha256(data).digest())
            yield record, _CheckedMember(data, sha256), is_executable


def _path_key(keyed: tuple[str, RecordRow]) -> str:
    return keyed[0]


class _JournalingDestination(WheelDestination):
    """installer's documented :class:`~installer.destinations.WheelDestination`,
    writing every file through a :class:`Journal` with plain ``os`` calls and never
    replacing one; scripts and RECORD as installer's own destination writes them."""

    def __init__(
        self,
        scheme: dict[str, str],
        interpreter: str,
        script_kind: LauncherKind,
        journal: Journal,
        linker: Linker | None = None,
        left: frozenset[str] = frozenset(),
    ) -> None:
        self.linker = linker if linker is not None else Linker()
        # Files another wheel of the transaction places with the same bytes.
        self.left = left
        self.scheme = scheme
        self.interpreter = interpreter
        self.script_kind = script_kind
        self.journal = journal
        self.roots = {
            name: os.path.normpath(os.path.abspath(folder))  # abspath: keep venv links
            for name, folder in scheme.items()
        }
        # Files placed by place_all, for RECORD.
        self.placed: list[tuple[Scheme, Sequence[LinkedFile]]] = []

    def write_script(
        self, name: str, module: str, attr: str, section: ScriptSection
    ) -> RecordEntry:
        script_name, data = Script(name, module, attr, section).generate(
            self.interpreter, self.script_kind
        )
        entry = self._write(Scheme("scripts"), script_name, io.BytesIO(data), True)
        # Executable by whoever may read it, as installer's own destination makes it.
        target = self._target(Scheme("scripts"), script_name)
        mode = os.stat(target).st_mode
        os.chmod(target, mode | (mode & 0o444) >> 2)
        return entry

    def write_file(
        self, scheme: Scheme, path: str | os.PathLike[str], stream: BinaryIO, is_executable: bool
    ) -> RecordEntry:
        path = os.fspath(path)
        if scheme == "scripts":  # ``#!python`` becomes the target's interpreter
            with fix_shebang(stream, self.interpreter) as fixed:
                return self._write(scheme, path, fixed, is_executable)
        return self._write(scheme, path, stream, is_executable)

    def place_all(self, scheme: Scheme, members: Sequence[LinkedFile]) -> None:
        """Place *members* (paths within *scheme*) at once (:meth:`Journal.link_many`);
        their rows join the installed RECORD."""
        # Their paths stay inside the root (see LinkedFile): a join is enough.
        root = self.roots[scheme] + os.sep
        convert = os.sep != "/"
        placements = [
            (root + (path.replace("/", os.sep) if convert else path), source, executable)
            for path, source, executable, _, _ in members
        ]
        if self.left:
            placements = [row for row in placements if row[0] not in self.left]
        self.journal.link_many(placements, self.linker)
        self.placed.append((scheme, members))

    def finalize_installation(
        self, scheme: Scheme, record_file_path: str, records: Iterable[tuple[Scheme, RecordEntry]]
    ) -> None:
        """RECORD as installer's ``construct_record_file`` writes it (rows sorted by
        path, prefixed where their scheme is not RECORD's), the placed files' rows
        made straight from their hashes: torch has 12,000 of them."""

        def prefix_for_scheme(file_scheme: Scheme) -> str:
            if file_scheme == scheme:
                return ""
            if os.name == "nt":
                return os.path.abspath(self.scheme[file_scheme]) + "/"
            return os.path.relpath(self.scheme[file_scheme], start=self.scheme[scheme]) + "/"

        keyed: list[tuple[str, RecordRow]] = []
        for placed_scheme, members in self.placed:
            prefix = prefix_for_scheme(placed_scheme)
            keyed += [
                (path, (prefix + path, f"sha256={sha256}", str(size)))
                for path, _, _, sha256, size in members
            ]
        keyed += [
            (entry.path, entry.to_row(prefix_for_scheme(file_scheme) or None))
            for file_scheme, entry in records
        ]
        keyed.sort(key=_path_key)  # stable, as installer's sorted()
        record = write_record([row for _, row in keyed])
        self._write(scheme, record_file_path, io.BytesIO(record), False)

    def _target(self, scheme: Scheme, path: str) -> str:
        root = self.roots[scheme]
        target = os.path.normpath(os.path.join(root, path))
        if not target.startswith(root + os.sep):
            raise InstallError(f"refusing to write {path!r} outside {root}")
        return target

    def _write(
        self, scheme: Scheme, path: str, stream: BinaryIO, is_executable: bool
    ) -> RecordEntry:
        target = self._target(scheme, path)
        if target in self.left:  # placed by another wheel: checked, listed, not written
            return self._left_to_another(path, stream)
        if isinstance(stream, LinkedMember):
            self.journal.link_new(target, stream.source, is_executable, self.linker)
            return RecordEntry(path, Hash("sha256", stream.sha256), stream.size)
        if type(stream) is _CheckedMember:  # not replaced by a fixed-shebang copy
            data = stream.getvalue()
            self.journal.write_new(target, data, is_executable)
            return RecordEntry(path, Hash("sha256", stream.sha256), len(data))
        out = self.journal.create(target, is_executable)
        if isinstance(out, ComparingWriter):  # a file is there: shared, or a clash
            try:
                sha256, size = copy_member(stream, out.write)
                self.journal.keep_existing(target, out)
            finally:
                out.close()
            return RecordEntry(path, Hash("sha256", sha256), size)
        with out:
            sha256, size = copy_member(stream, out.write)
        return RecordEntry(path, Hash("sha256", sha256), size)

    @staticmethod
    def _left_to_another(path: str, stream: BinaryIO) -> RecordEntry:
        if isinstance(stream, LinkedMember | _CheckedMember):
            size = stream.size if isinstance(stream, LinkedMember) else len(stream.getvalue())
            return RecordEntry(path, Hash("sha256", stream.sha256), size)
        sha256, size = copy_member(stream, len)  # read through: checked against RECORD
        return RecordEntry(path, Hash("sha256", sha256), size)


def copy_member(stream: BinaryIO, write: Callable[[bytes], object]) -> tuple[str, int]:
    """Pass *stream*'s bytes to *write*; their sha256 (as RECORD writes it) and size.
    A member :class:`VerifyingWheel` checked against a sha256 RECORD row is not
    hashed again."""
    if type(stream) is _CheckedMember:
        data = stream.getvalue()
        write(data)
        return stream.sha256, len(data)
    # A large member checked while streaming knows its sha256 at the end.
    raw = stream if isinstance(stream, _CheckedStream) else getattr(stream, "raw", None)
    hashed = isinstance(raw, _CheckedStream) and raw.algorithm == "sha256"
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(_CHUNK):
        if not hashed:
            digest.update(chunk)
        write(chunk)
        size += len(chunk)
    if hashed:
        assert isinstance(raw, _CheckedStream)
        assert raw.sha256 is not None  # set when the stream ended, after the check
        return raw.sha256, size
    return encode_digest(digest.digest()), size


def unpack_wheel(
    wheel: str | InMemoryWheel,
    expected: dict[str, RecordEntry],
    *,
    scheme: dict[str, str],
    interpreter: str,
    script_kind: LauncherKind,
    journal: Journal,
    dist_info: str,
    archive: zipfile.ZipFile | None = None,
    metadata: Mapping[str, bytes] = INSTALLER_METADATA,
    left: frozenset[str] = frozenset(),
) -> None:
    """Install *wheel* (a path, or one in memory) into the folders of *scheme*,
    without bytecode.

    *expected* is the wheel's RECORD, already checked to list every member with a
    strong hash (:meth:`WheelArchive.check_record_listing`); each member is
    compared with it as it is written. *metadata*: the files added to its
    ``.dist-info`` (``INSTALLER``, and ``direct_url.json`` where given). *dist_info*:
    its ``.dist-info`` folder's name. *archive*: *wheel* already opened (its
    directory parsed), closed here. *left*: the files (their paths) another wheel of
    the same transaction places with the same bytes: listed in RECORD, not written.
    """
    destination = _JournalingDestination(scheme, interpreter, script_kind, journal, left=left)
    name = wheel.name if isinstance(wheel, InMemoryWheel) else os.path.basename(wheel)
    if archive is None or archive.fp is None:  # not given, or already used and closed
        archive = open_zip(wheel)
    with archive:
        data = wheel.data if isinstance(wheel, InMemoryWheel) else None
        source = VerifyingWheel(archive, dist_info, expected, name, data)
        installer.install(source, destination, additional_metadata=dict(metadata))


def install_source(
    source: WheelSource,
    *,
    scheme: dict[str, str],
    interpreter: str,
    script_kind: LauncherKind,
    journal: Journal,
    linker: Linker,
    placed: tuple[Scheme, Sequence[LinkedFile]] | None = None,
    metadata: Mapping[str, bytes] = INSTALLER_METADATA,
    left: frozenset[str] = frozenset(),
) -> None:
    """Install *source*, whose members are :class:`LinkedMember` (placed by
    *linker*) or checked streams, into the folders of *scheme*, as
    :func:`unpack_wheel` does. *placed*: files of the wheel that *source* leaves
    out, all in one scheme, placed first in one go (their rows join RECORD). *left*:
    as :func:`unpack_wheel` takes it."""
    destination = _JournalingDestination(
        scheme, interpreter, script_kind, journal, linker, left=left
    )
    if placed is not None:
        destination.place_all(*placed)
    installer.install(source, destination, additional_metadata=dict(metadata))


def _in_threads(work: Callable[[str], bool], items: Sequence[str], workers: int) -> list[bool]:
    """``[work(item) for item in items]``, by *workers* threads each taking a run of
    neighbouring items (siblings stay in one thread); an exception is raised after
    every thread has stopped. A plain thread per run, not a pool's future per item:
    per item, a future costs as much as the ``mkdir`` it would wrap."""
    if workers <= 1:
        return [work(item) for item in items]
    bounds = [len(items) * index // workers for index in range(workers + 1)]
    results: list[list[bool]] = [[] for _ in range(workers)]
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            results[index] = [work(item) for item in items[bounds[index] : bounds[index + 1]]]
        except BaseException as exc:  # raised by the caller's thread below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return [made for share in results for made in share]
