"""Unpacking a wheel from its bytes as they arrive: a download goes straight into
its folder (an unpacked cache entry), and the wheel file is never written or read.

:class:`StreamUnpacker` is given the wheel's bytes in order (:meth:`~StreamUnpacker.write`).
Each local member (:class:`~wheelwise.wheels.zip_stream.LocalMembers`) is
inflated, hashed (sha256) and written as it arrives; what follows the members, the
central directory, is kept. :meth:`~StreamUnpacker.finish`, called once the caller
has checked the whole file's hash, makes the checks a wheel read from its
directory gets (:mod:`wheelwise.wheels.archive`):

* the central directory lists exactly the members written, at the offsets, with
  the sizes, CRCs and compression their local headers gave (readers go by the
  directory: a wheel whose local headers say otherwise is refused);
* every member passes :func:`~wheelwise.wheels.archive.member_problem`;
* one ``.dist-info`` folder, named after the wheel file;
* ``RECORD`` lists every member with a strong hash
  (:func:`~wheelwise.wheels.archive.check_listing`), and every member written
  matches its entry.

Small members are written by :class:`_FileWriters`, a few threads of their own:
in a wheel of many small files (torch's 12,261), creating each file costs more
than inflating it, and one thread doing both would make that wheel's stream the
last to end. Large members are inflated by the caller's thread and, while the
process has a core to spare for it (:func:`_core_to_spare`), hashed and written,
piece by piece in order, by one thread of their own (:class:`_LargeWriter`): the
stream of a big wheel then keeps two cores busy, not one (on many cores, and at the
end of any cold install, torch's stream is what the install waits for last). Else
the caller's thread hashes and writes them too: with every core busy, handing
pieces over only adds switches.

Executable bits, which only the directory gives, are set then. Content problems
are kept until :meth:`~StreamUnpacker.finish` (a download cut or changed on the way
is told as such by the caller's hash check first), and raised as
:class:`~wheelwise.wheels.errors.WheelError`. A wheel this cannot read as it
arrives (a member whose sizes follow its data or are ZIP64, anything before the
first member, a directory past :data:`MAX_DIRECTORY_BYTES`) raises
:class:`NotStreamable` at once: the caller fetches it whole instead.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import queue
import stat
import threading
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from wheelwise.cache.unpacked import EntryFile
from wheelwise.forked_map import cores
from wheelwise.userfiles import open_regular, write_all
from wheelwise.wheels.archive import (
    MAX_METADATA_BYTES,
    check_listing,
    dist_info_dirs,
    dist_info_problem,
    zip_member_problem,
)
from wheelwise.wheels.errors import WheelError, describe
from wheelwise.wheels.members import INFLATE_ERRORS, new_inflater
from wheelwise.wheels.zip_stream import LocalMembers, MemberBytes

__all__ = ["MAX_DIRECTORY_BYTES", "NotStreamable", "StreamUnpacker"]

# A central directory is ~100 bytes a member: far below this for any wheel.
MAX_DIRECTORY_BYTES = 64 << 20
_MEMBERS_END = "the local members end"
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
# A member's name that cannot be a file next to the others (a folder of that name,
# a file where a folder should be): the wheel's fault, not the cache's.
_CLASHES = (errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG)
# Members up to this size are held whole and written by _FileWriters.
SMALL_MEMBER = 1 << 20
# Compressed bytes given to one inflate call, and the most it gives back: what it
# cannot inflate within _INFLATE_OUTPUT is copied into its unconsumed tail, so a
# network read of 1 MiB fed whole would be copied again and again. Pieces of
# 256/512 KiB, not 64/128 KiB: each piece hands the interpreter lock to and fro
# several times (inflate, hash, write), and the unpacking threads queue for it.
_INFLATE_INPUT = 256 << 10
_INFLATE_OUTPUT = 512 << 10
# Threads writing small members, per stream; and the bytes they may hold at once.
WRITERS = 2
_WRITER_BYTES = 16 << 20
# A batch handed to one of them: this many bytes or files, whichever comes first.
_BATCH_BYTES = 256 << 10
_BATCH_FILES = 32
# Pieces of large members the large members' thread may hold at once (each at most
# _INFLATE_OUTPUT, or a stored member's piece as it arrived).
_LARGE_PIECES = 8


class NotStreamable(Exception):
    """The wheel cannot be read as it arrives; fetch it whole instead."""


@dataclass
class _Member:
    """A local member as its header gave it, and what was written of it."""

    info: zipfile.ZipInfo
    path: str | None  # None: a folder entry
    fd: int = -1
    inflater: zlib._Decompress | None = None
    digest: hashlib._Hash = field(default_factory=hashlib.sha256)
    size: int = 0
    mtime_ns: int = 0
    held: list[bytes] | None = None  # a small member's bytes, until _FileWriters takes them
    handed_over: bool = False  # a large member hashed and written by _LargeWriter


def _clash(member: _Member) -> WheelError:
    return WheelError(f"member {member.info.filename!r} clashes with another member")


_Small = tuple[_Member, str, list[bytes], int]  # the member, its file, its bytes, their size


class _Discarded(Exception):
    """The stream stopped: what the writers still hold is not written."""


class _FileWriters:
    """Writes small members, each whole, in :data:`WRITERS` threads: hashes the
    bytes, creates the file, writes, closes. Members go in batches (one hand-over
    per member would cost more than it saves), and at most :data:`_WRITER_BYTES`
    are held (:meth:`write` waits). The first failure is kept and raised by the
    next :meth:`write` or by :meth:`wait`; later members are then skipped."""

    def __init__(self) -> None:
        # A folder's files all go to one thread: two creating files in one folder
        # spin on its lock.
        self._threads = [
            ThreadPoolExecutor(1, thread_name_prefix="stream-writer") for _ in range(WRITERS)
        ]
        self._batches: list[list[_Small]] = [[] for _ in range(WRITERS)]
        self._batch_bytes = [0] * WRITERS
        self._room = threading.Condition()
        self._held = 0
        self._failure: BaseException | None = None

    def write(self, member: _Member, target: str, data: list[bytes], size: int) -> None:
        with self._room:
            self._raise()
        which = hash(os.path.dirname(target)) % WRITERS  # noqa: PTH120
        self._batches[which].append((member, target, data, size))
        self._batch_bytes[which] += size
        if self._batch_bytes[which] >= _BATCH_BYTES or len(self._batches[which]) >= _BATCH_FILES:
            self._hand_over(which)

    def _hand_over(self, which: int) -> None:
        batch, size = self._batches[which], self._batch_bytes[which]
        if not batch:
            return
        self._batches[which], self._batch_bytes[which] = [], 0
        with self._room:
            while self._held and self._held + size > _WRITER_BYTES and self._failure is None:
                self._room.wait()
            self._raise()
            self._held += size
        self._threads[which].submit(self._write, batch, size)

    def _write(self, batch: list[_Small], size: int) -> None:
        try:
            for member, target, data, _ in batch:
                if self._failure is not None:
                    break
                for piece in data:
                    member.digest.update(piece)
                try:
                    fd = os.open(target, _CREATE_FLAGS, 0o666)
                except OSError as exc:
                    if exc.errno not in _CLASHES:
                        raise  # the folder's file system: full, read-only...
                    raise _clash(member) from None
                try:
                    for piece in data:
                        write_all(fd, piece)
                    member.mtime_ns = os.fstat(fd).st_mtime_ns
                finally:
                    os.close(fd)
        except BaseException as exc:  # kept for the stream's thread
            with self._room:
                if self._failure is None:
                    self._failure = exc
        finally:
            with self._room:
                self._held -= size
                self._room.notify_all()

    def _raise(self) -> None:
        if self._failure is not None:
            raise self._failure

    def wait(self, *, discard: bool = False) -> None:
        """Every member given is written (or failed); raises the first failure.
        With *discard*, what is not being written yet is dropped instead."""
        try:
            for which in range(WRITERS):
                if discard:
                    self._batches[which] = []
                    with self._room:
                        self._failure = self._failure or _Discarded()
                else:
                    self._hand_over(which)
        finally:
            for thread in self._threads:
                thread.shutdown(wait=True)
        with self._room:
            self._raise()


# Streams taking bytes in this process now (StreamUnpacker, from its start until its
# members end or it stops).
_streams_lock = threading.Lock()
_streams_now = 0


def _count_streams(change: int) -> None:
    global _streams_now
    with _streams_lock:
        _streams_now += change


def _core_to_spare(machine_cores: int) -> bool:
    """Whether every stream of this process could keep two cores busy: its own
    thread inflating, a :class:`_LargeWriter` hashing and writing."""
    return 2 * _streams_now <= machine_cores


# A piece for _LargeWriter: the member and its next bytes (None: the member ends).
_Piece = tuple[_Member, bytes | memoryview | None]


class _LargeWriter:
    """Hashes and writes the pieces of large members, in the order given, in one
    thread: :meth:`write` a piece, :meth:`end` a member (its time read, its file
    closed). At most :data:`_LARGE_PIECES` pieces wait (:meth:`write` waits). The
    first failure is kept and raised by the next :meth:`write` or :meth:`end` or by
    :meth:`wait`; later pieces are then dropped, and every file given is closed."""

    def __init__(self) -> None:
        self._pieces: queue.Queue[_Piece | None] = queue.Queue(_LARGE_PIECES)  # None: stop
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="stream-large", daemon=True)
        self._thread.start()

    def write(self, member: _Member, data: bytes | memoryview) -> None:
        self._raise()
        self._pieces.put((member, data))

    def end(self, member: _Member) -> None:
        self._raise()
        self._pieces.put((member, None))

    def _run(self) -> None:
        while (item := self._pieces.get()) is not None:
            member, data = item
            try:
                if data is None:
                    if self._failure is None:
                        member.mtime_ns = os.fstat(member.fd).st_mtime_ns
                elif self._failure is None:
                    member.digest.update(data)
                    write_all(member.fd, data)
            except BaseException as exc:  # kept for the stream's thread
                self._failure = exc
            finally:
                if data is None:
                    os.close(member.fd)
                    member.fd = -1

    def _raise(self) -> None:
        if self._failure is not None:
            raise self._failure

    def wait(self, *, discard: bool = False) -> None:
        """Every piece given is written (or failed); raises the first failure. With
        *discard*, what is not written yet is dropped instead. A member given
        pieces but no :meth:`end` keeps its file open (the caller closes it)."""
        if discard and self._failure is None:
            self._failure = _Discarded()
        self._pieces.put(None)
        self._thread.join()
        self._raise()


class _Tail(io.RawIOBase):
    """A file of *size* bytes of which only the last ones, from *start*, are kept:
    enough for :class:`zipfile.ZipFile` to read its directory. Bytes before *start*
    read as zeros."""

    def __init__(self, start: int, data: bytes) -> None:
        super().__init__()
        self._start = start
        self._data = data
        self._end = start + len(data)
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._end}[whence]
        self._position = max(0, base + offset)
        return self._position

    def read(self, size: int | None = -1) -> bytes:
        stop = self._end if size is None or size < 0 else min(self._end, self._position + size)
        if stop <= self._position:
            return b""
        zeros = bytes(max(0, min(stop, self._start) - self._position))
        if stop > self._start:
            zeros += self._data[max(self._position, self._start) - self._start : stop - self._start]
        self._position = stop
        return zeros


class StreamUnpacker:
    """Unpacks the wheel *wheel_name* into the new folder *folder* from its bytes,
    given in order (see the module's docstring)."""

    def __init__(self, folder: str | os.PathLike[str], wheel_name: str) -> None:
        self.root = os.fspath(folder)
        self.wheel_name = wheel_name
        self._members = LocalMembers()
        self._written: list[_Member] = []
        self._current: _Member | None = None
        self._names: set[str] = set()
        self._folders: set[str] = set()
        self._tail = bytearray()
        self._failure: WheelError | None = None
        self._writers: _FileWriters | None = None
        self._large: _LargeWriter | None = None
        os.mkdir(self.root)  # noqa: PTH102
        self._cores = cores()
        self._counted = True
        _count_streams(+1)

    def _stop_counting(self) -> None:
        if self._counted:
            self._counted = False
            _count_streams(-1)

    # -- the bytes, as they arrive --------------------------------------------------

    def begin(self, size: int | None) -> None:
        """The download starts (*size*: its announced length, unused)."""

    def write(self, data: bytes) -> None:
        """The next bytes of the wheel."""
        if self._failure is not None:
            return
        if self._members.stopped is not None:
            self._keep_tail(data)
            return
        try:
            for found in self._members.feed(data):
                if isinstance(found, MemberBytes):
                    self._member_bytes(found.data)
                else:
                    self._end_member()
                    self._begin_member(found)
            if self._members.stopped is not None:
                self._end_member()
                self._stop_counting()
                if self._members.stopped != _MEMBERS_END:
                    raise NotStreamable(self._members.stopped)
                if not self._written:
                    raise NotStreamable("the zip does not start with a member")
                self._keep_tail(self._members.leftover())
        except WheelError as exc:
            self._fail(exc)

    def _fail(self, error: WheelError) -> None:
        self._stop_counting()
        # The current member's file is closed once no thread writes into it.
        with contextlib.suppress(Exception):  # the stream has failed already
            self._stop_large(discard=True)
        self._close_current()
        self._failure = error

    def _keep_tail(self, data: bytes | memoryview) -> None:
        self._tail += data
        if len(self._tail) > MAX_DIRECTORY_BYTES:
            raise NotStreamable(f"its central directory is over {MAX_DIRECTORY_BYTES} bytes")

    def _begin_member(self, info: zipfile.ZipInfo) -> None:
        name = info.filename
        # A local header gives no file mode: finish() checks the directory's.
        problem = zip_member_problem(info, self._names)
        if problem is not None:
            raise WheelError(problem)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise NotStreamable(f"member {name!r} uses compression method {info.compress_type}")
        if name.endswith("/"):
            self._current = _Member(info, None)
            self._make_folder(name.rstrip("/"))
            return
        self._names.add(name)
        parent, _, _ = name.rpartition("/")
        if parent:
            self._make_folder(parent)
        self._current = member = _Member(info, name)
        if info.file_size <= SMALL_MEMBER:
            member.held = []  # written whole once it ends, by _FileWriters
        else:
            member.handed_over = _core_to_spare(self._cores)
            try:
                member.fd = os.open(self._target(name), _CREATE_FLAGS, 0o666)
            except OSError as exc:
                if exc.errno not in _CLASHES:
                    raise  # the folder's file system: full, read-only...
                raise _clash(member) from None
        if info.compress_type == zipfile.ZIP_DEFLATED:
            self._current.inflater = new_inflater()

    def _target(self, name: str) -> str:
        return os.path.join(self.root, *name.split("/"))  # noqa: PTH118

    def _make_folder(self, name: str) -> None:
        if name not in self._folders:
            try:
                os.makedirs(self._target(name), exist_ok=True)  # noqa: PTH103
            except OSError as exc:
                if exc.errno not in _CLASHES:
                    raise
                raise WheelError(f"folder {name!r} clashes with a member") from None
            self._folders.add(name)

    def _member_bytes(self, data: bytes | memoryview) -> None:
        member = self._current
        assert member is not None
        if member.path is None:
            if len(data):
                raise WheelError(f"folder entry {member.info.filename!r} holds data")
            return
        inflater = member.inflater
        try:
            if inflater is None:
                self._write_out(member, data)
                return
            view = memoryview(data)
            for start in range(0, len(view), _INFLATE_INPUT):
                piece = inflater.decompress(view[start : start + _INFLATE_INPUT], _INFLATE_OUTPUT)
                self._write_out(member, piece)
                while tail := inflater.unconsumed_tail:
                    piece = inflater.decompress(tail, _INFLATE_OUTPUT)
                    if not piece and len(inflater.unconsumed_tail) >= len(tail):
                        raise WheelError(
                            f"member {member.info.filename!r} does not inflate: the archive "
                            "is damaged"
                        )
                    self._write_out(member, piece)
        except INFLATE_ERRORS as exc:
            raise WheelError(
                f"cannot read member {member.info.filename!r} ({describe(exc)}): the archive "
                "is damaged"
            ) from None

    def _write_out(self, member: _Member, data: bytes | memoryview) -> None:
        if not data:
            return
        member.size += len(data)
        if member.size > member.info.file_size:
            raise WheelError(
                f"member {member.info.filename!r} holds more than the {member.info.file_size} "
                "bytes its header says"
            )
        if member.held is not None:
            member.held.append(data if isinstance(data, bytes) else bytes(data))
            return
        if not member.handed_over:
            member.digest.update(data)
            write_all(member.fd, data)
            return
        # Another thread writes it later: a piece must not change meanwhile.
        if isinstance(data, memoryview) and not isinstance(data.obj, bytes):
            data = bytes(data)
        self._large_writer().write(member, data)

    def _large_writer(self) -> _LargeWriter:
        if self._large is None:
            self._large = _LargeWriter()
        return self._large

    def _end_member(self) -> None:
        """The member last begun has all its bytes: check and close it."""
        member = self._current
        if member is None:
            return
        if member.path is not None:
            inflater = member.inflater
            try:
                if inflater is not None:
                    self._write_out(member, inflater.flush())
                    if not inflater.eof and member.info.compress_size:
                        raise WheelError(
                            f"member {member.info.filename!r}: the compressed data ends early"
                        )
            except INFLATE_ERRORS as exc:
                raise WheelError(
                    f"cannot read member {member.info.filename!r} ({describe(exc)})"
                ) from None
            if member.size != member.info.file_size:
                raise WheelError(
                    f"member {member.info.filename!r} is {member.size} bytes, its header "
                    f"says {member.info.file_size}"
                )
            member.inflater = None
            if member.held is not None:
                if self._writers is None:
                    self._writers = _FileWriters()
                held, member.held = member.held, None
                self._writers.write(member, self._target(member.path), held, member.size)
            elif member.handed_over:
                self._large_writer().end(member)
            else:
                member.mtime_ns = os.fstat(member.fd).st_mtime_ns
                os.close(member.fd)
                member.fd = -1
        self._written.append(member)
        self._current = None

    def _close_current(self) -> None:
        if self._current is not None and self._current.fd >= 0:
            os.close(self._current.fd)
            self._current.fd = -1

    def _stop_large(self, *, discard: bool) -> None:
        large, self._large = self._large, None
        if large is not None:
            large.wait(discard=discard)

    def _wait_for_writers(self, *, discard: bool = False) -> None:
        writers, self._writers = self._writers, None
        try:
            self._stop_large(discard=discard)
        finally:
            if writers is not None:
                writers.wait(discard=discard)

    def close(self) -> None:
        """Release what a download stopped midway holds open, once no thread
        writes into its folder any more (the folder stays)."""
        self._stop_counting()
        with contextlib.suppress(Exception):  # the download has failed already
            self._wait_for_writers(discard=True)
        self._close_current()

    # -- once every byte has arrived and the file's hash is checked -----------------

    def finish(self) -> tuple[list[EntryFile], str]:
        """What was written, and the ``.dist-info`` folder's name, once every check
        has passed (see the module's docstring); raises WheelError, or
        NotStreamable."""
        self._stop_counting()
        try:
            self._wait_for_writers()
        except WheelError as exc:
            self._fail(exc)
        if self._failure is not None:
            raise self._failure
        if self._members.stopped is None:
            raise WheelError("the archive ends within its members: it is truncated")
        try:
            with zipfile.ZipFile(_Tail(self._members.offset, bytes(self._tail))) as archive:
                listed = archive.infolist()
        except (zipfile.BadZipFile, ValueError, EOFError, OSError) as exc:
            raise WheelError(
                f"not a valid wheel (zip) archive ({describe(exc)}); re-download or rebuild it"
            ) from None
        executable = self._match_directory(listed)
        dist_infos = dist_info_dirs(self._names)
        if len(dist_infos) != 1:
            raise WheelError(
                "no .dist-info directory: not a wheel"
                if not dist_infos
                else f"several .dist-info directories: {', '.join(map(repr, dist_infos))}"
            )
        dist_info = dist_infos[0]
        problem = dist_info_problem(dist_info, self.wheel_name)
        if problem is not None:
            raise WheelError(problem)
        files = self._check_record(dist_info, executable)
        return files, dist_info

    def _match_directory(self, listed: list[zipfile.ZipInfo]) -> set[str]:
        """The directory lists what was written, as written; the executable files."""
        written = {member.info.header_offset: member.info for member in self._written}
        executable: set[str] = set()
        seen: set[str] = set()
        for info in listed:
            local = written.pop(info.header_offset, None)
            if local is None or (
                local.filename,
                local.compress_type,
                local.compress_size,
                local.file_size,
                local.CRC,
            ) != (info.filename, info.compress_type, info.compress_size, info.file_size, info.CRC):
                raise WheelError(
                    f"the central directory's entry {info.filename!r} does not match the "
                    "member's local header: the archive is corrupt or crafted"
                )
            problem = zip_member_problem(info, seen)
            if problem is not None:
                raise WheelError(problem)
            if not info.filename.endswith("/"):
                seen.add(info.filename)
                mode = info.external_attr >> 16
                if mode and stat.S_ISREG(mode) and mode & 0o111:
                    executable.add(info.filename)
        if written:
            name = next(iter(written.values())).filename
            raise WheelError(
                f"member {name!r} is not in the central directory: the archive is corrupt "
                "or crafted"
            )
        return executable

    def _check_record(self, dist_info: str, executable: set[str]) -> list[EntryFile]:
        from wheelwise.wheels.record import encode_digest, parse_record

        record_name = f"{dist_info}/RECORD"
        if record_name not in self._names:
            raise WheelError(f"no {record_name}: not a valid wheel")
        with open_regular(self._target(record_name)) as stream:
            data = stream.read(MAX_METADATA_BYTES + 1)
        if len(data) > MAX_METADATA_BYTES:
            raise WheelError(f"member {record_name!r} is over {MAX_METADATA_BYTES} bytes")
        entries = check_listing(
            [m.path for m in self._written if m.path is not None],
            parse_record(data, name=record_name),
            record_name,
        )
        files: list[EntryFile] = []
        for member in self._written:
            if member.path is None:
                continue
            sha256 = encode_digest(member.digest.digest())
            entry = entries.get(member.path)
            if entry is not None and entry.hash_ is not None:
                value = sha256
                if entry.hash_.name != "sha256":  # rare: hashed again, as RECORD says
                    value = self._digest_of(member.path, entry.hash_.name)
                if value != entry.hash_.value or (
                    entry.size is not None and entry.size != member.size
                ):
                    raise WheelError(
                        f"member {member.path!r} does not match its RECORD hash/size: the "
                        "wheel was modified or corrupted"
                    )
            is_executable = member.path in executable
            if is_executable:
                target = self._target(member.path)
                mode = os.stat(target).st_mode  # noqa: PTH116
                os.chmod(target, mode | (mode & 0o444) >> 2)  # noqa: PTH101
            files.append(
                EntryFile(member.path, sha256, member.size, is_executable, member.mtime_ns)
            )
        return files

    def _digest_of(self, name: str, algorithm: str) -> str:
        from wheelwise.wheels.record import encode_digest

        digest = hashlib.new(algorithm)
        with open_regular(self._target(name)) as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
        return encode_digest(digest.digest())
