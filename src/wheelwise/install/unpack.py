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
from base64 import urlsafe_b64encode
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, BinaryIO, cast

import installer
from installer.destinations import SchemeDictionaryDestination
from installer.records import Hash, RecordEntry
from installer.sources import WheelContentElement, WheelFile
from installer.utils import Scheme

from wheelwise.install.errors import InstallError
from wheelwise.install.journal import WriteAhead
from wheelwise.wheels.archive import InMemoryWheel, open_zip
from wheelwise.wheels.members import MemberReader

if TYPE_CHECKING:
    from installer.scripts import LauncherKind

__all__ = ["Cancelled", "Journal", "unpack_wheel"]

INSTALLER_METADATA = {"INSTALLER": b"wheelwise\n"}
# Members up to this size are read whole: one hash, one write. Larger ones stream.
_WHOLE_MEMBER = 4 << 20
_CHUNK = 1 << 20
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


class Cancelled(Exception):
    """Another wheel of the same transaction failed; this one stops early."""


def _b64(digest: bytes) -> str:
    return urlsafe_b64encode(digest).decode("ascii").rstrip("=")


class Journal:
    """Every file and folder the transaction created, in creation order.

    Shared by the threads of one transaction: appends to a list are atomic, and a
    folder two threads both create is journaled by the one whose ``mkdir`` won.
    """

    def __init__(self, wal: WriteAhead | None = None) -> None:
        self.wal = wal
        self.files: list[str] = []
        self.dirs: list[str] = []
        self._cancelled = threading.Event()
        self._known_dirs: set[str] = set()
        self._on_cancel: list[Callable[[], None]] = []

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

    def note_file(self, path: str) -> None:
        self.files.append(path)

    def note_dir(self, path: str) -> None:
        self.dirs.append(path)

    def ensure_dir(self, directory: str) -> None:
        if directory in self._known_dirs:
            return
        missing: list[str] = []
        current = directory
        while not os.path.isdir(current):
            missing.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for folder in reversed(missing):
            if self.wal is not None:
                self.wal.note("dir", folder)
            try:
                os.mkdir(folder)
            except FileExistsError:
                if self.wal is not None:
                    self.wal.note("skip", folder)
                continue  # made by another worker (or a file is there: open() will say)
            self.note_dir(folder)
        self._known_dirs.add(directory)

    def create(self, target: str, executable: bool) -> BinaryIO:
        """A new file at *target*, opened for writing; never replaces one."""
        return open(self._create_fd(target, executable), "wb")  # closed by the caller

    def write_new(self, target: str, data: bytes, executable: bool) -> None:
        """A new file at *target* holding *data*; never replaces one."""
        fd = self._create_fd(target, executable)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def _create_fd(self, target: str, executable: bool) -> int:
        if self.is_cancelled():
            raise Cancelled
        self.ensure_dir(os.path.dirname(target))
        if self.wal is not None:
            self.wal.note("file", target)
        try:
            fd = os.open(target, _CREATE_FLAGS, 0o777 if executable else 0o666)
        except FileExistsError:
            if self.wal is not None:
                self.wal.note("skip", target)
            raise InstallError(
                f"{target} already exists and belongs to no distribution being replaced"
            ) from None
        self.note_file(target)
        return fd


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

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._stream.read(len(target))
        if not data:
            self._finish()
            return 0
        self._digest.update(data)
        self._size += len(data)
        target[: len(data)] = data
        return len(data)

    def _finish(self) -> None:
        if self.sha256 is not None:
            return
        digest = self._digest.digest()
        encoded = _b64(digest)
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


class _VerifyingWheelFile(WheelFile):
    """installer's wheel source, checking each member against RECORD as it is read."""

    def __init__(
        self,
        archive: zipfile.ZipFile,
        expected: dict[str, RecordEntry],
        wheel_name: str,
        data: bytes | None,
    ) -> None:
        super().__init__(archive)
        self.expected = expected
        self.wheel_name = wheel_name
        self.data = data  # the wheel's bytes, when it is in memory

    @property
    def dist_info_filenames(self) -> list[str]:
        # installer's compares every member's path with posixpath.commonpath.
        prefix = self.dist_info_dir + "/"
        return [
            name[len(prefix) :]
            for name in self._zipfile.namelist()
            if name.startswith(prefix) and not name.endswith("/")
        ]

    def get_contents(self) -> Iterator[WheelContentElement]:
        # installer's own reads RECORD again and opens every member with
        # ZipFile.open; small members are read whole here, with one slice or pread.
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
            # Scripts are read whole too: installer seeks in them to fix the shebang.
            data = None
            if info.file_size <= _WHOLE_MEMBER or path.startswith(scripts):
                data = reader.read(info)
                if data is None:
                    with self._zipfile.open(info) as stream:
                        data = stream.read()
            if data is None:
                with self._zipfile.open(info) as stream:
                    checked = _CheckedStream(stream, entry, self.wheel_name)  # type: ignore[arg-type]
                    yield record, io.BufferedReader(checked), is_executable
                continue
            digest = hashlib.new(entry.hash_.name, data).digest()
            encoded = _b64(digest)
            _check(entry, encoded, len(data), self.wheel_name)
            if entry.hash_.name == "sha256":
                sha256 = encoded
            else:
                sha256 = _b64(hashlib.sha256(data).digest())
            yield record, _CheckedMember(data, sha256), is_executable


class _JournalingDestination(SchemeDictionaryDestination):
    """installer's destination, writing through a :class:`Journal`."""

    journal: Journal
    roots: dict[str, str]

    def write_to_fs(
        self, scheme: Scheme, path: str, stream: BinaryIO, is_executable: bool
    ) -> RecordEntry:
        root = self.roots[scheme]
        target = os.path.normpath(os.path.join(root, path))
        if not target.startswith(root + os.sep):
            raise InstallError(f"refusing to write {path!r} outside {root}")
        if type(stream) is _CheckedMember:  # not replaced by a fixed-shebang copy
            data = stream.getvalue()
            self.journal.write_new(target, data, is_executable)
            return RecordEntry(path, Hash("sha256", stream.sha256), len(data))
        with self.journal.create(target, is_executable) as out:
            # A large member checked while streaming already has its sha256 at the end.
            raw = getattr(stream, "raw", None)
            hashed = isinstance(raw, _CheckedStream) and raw.algorithm == "sha256"
            digest = hashlib.sha256()
            size = 0
            while chunk := stream.read(_CHUNK):
                if not hashed:
                    digest.update(chunk)
                out.write(chunk)
                size += len(chunk)
        if hashed:
            assert isinstance(raw, _CheckedStream)
            assert raw.sha256 is not None  # set when the stream ended, after the check
            return RecordEntry(path, Hash("sha256", raw.sha256), size)
        return RecordEntry(path, Hash("sha256", _b64(digest.digest())), size)


def unpack_wheel(
    wheel: str | InMemoryWheel,
    expected: dict[str, RecordEntry],
    *,
    scheme: dict[str, str],
    interpreter: str,
    script_kind: LauncherKind,
    journal: Journal,
    archive: zipfile.ZipFile | None = None,
) -> None:
    """Install *wheel* (a path, or one in memory) into the folders of *scheme*,
    without bytecode.

    *expected* is the wheel's RECORD, already checked to list every member with a
    strong hash (:meth:`WheelArchive.check_record_listing`); each member is
    compared with it as it is written. ``INSTALLER`` is ``wheelwise``. *archive*:
    *wheel* already opened (its directory parsed), closed here.
    """
    destination = _JournalingDestination(
        scheme_dict=scheme,
        interpreter=interpreter,
        script_kind=script_kind,
        bytecode_optimization_levels=(),
    )
    destination.journal = journal
    destination.roots = {
        name: os.path.normpath(os.path.abspath(folder))  # abspath: keep venv links
        for name, folder in scheme.items()
    }
    name = wheel.name if isinstance(wheel, InMemoryWheel) else os.path.basename(wheel)
    if archive is None or archive.fp is None:  # not given, or already used and closed
        archive = open_zip(wheel)
    with archive:
        data = wheel.data if isinstance(wheel, InMemoryWheel) else None
        source = _VerifyingWheelFile(archive, expected, name, data)
        installer.install(source, destination, additional_metadata=INSTALLER_METADATA)
