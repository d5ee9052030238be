"""Reading zip members without :mod:`zipfile`'s per-member machinery: the speed
tricks of unpacking.

``ZipFile.open`` builds a shared file handle, a decompressor and a CRC-checking
stream for every member: for a wheel of many small files that costs more than the
decompression itself. :class:`MemberReader` reads a stored or deflated member's
local header and compressed bytes with one slice (an in-memory wheel) or two
``pread`` calls (a wheel on disk) and inflates them in one call. It checks what
``zipfile`` checks before reading: the local header's signature and file name,
and the sizes. The CRC is not checked: every member read this way is compared with
the SHA-256 in the wheel's RECORD by the caller, which is the stronger check.
Anything else (encrypted, other compressions) returns None: read it with
``ZipFile.open``.

:meth:`MemberReader.stream` reads a large member the same way, in chunks
(:class:`InflatingReader`): ``pread`` of the compressed bytes, inflated by
ISA-L (:mod:`isal`) where it is installed (about 1.9 times as fast as zlib on the
shared libraries of GPU wheels, 1.3 times zlib-ng), else zlib.
"""

from __future__ import annotations

import io
import os
import zipfile
import zlib
from collections.abc import Callable
from types import ModuleType

from wheelwise.wheels.zip_layout import FLAG_ENCRYPTED, FLAG_UTF8_NAME, LOCAL, LOCAL_SIGNATURE

__all__ = ["INFLATE_ERRORS", "OUT_CHUNK", "InflatingReader", "MemberReader", "new_inflater"]


def _inflater_module() -> ModuleType:
    try:
        from isal import isal_zlib
    except ImportError:  # no wheel of it for this platform: zlib does the same, slower
        return zlib
    module: ModuleType = isal_zlib
    return module


_INFLATE = _inflater_module()
INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, _INFLATE.error)
# Compressed bytes read at once, and the most one inflate call gives back: pieces
# of 128 KiB cost far fewer page faults than of 1 MiB (docs/benchmarks-method.md,
# "Figures behind design choices").
_IN_CHUNK = 1 << 17
OUT_CHUNK = 1 << 17


def new_inflater() -> zlib._Decompress:
    """A decompressor of a deflated member's raw stream (ISA-L's where installed);
    its errors are :data:`INFLATE_ERRORS`."""
    inflater: zlib._Decompress = _INFLATE.decompressobj(-15)
    return inflater


class MemberReader:
    """Reads members of *archive*, whose bytes are *data* (an in-memory wheel) or
    are read from its open file."""

    def __init__(self, archive: zipfile.ZipFile, data: bytes | memoryview | None = None) -> None:
        self._view = memoryview(data) if data is not None else None
        fp = archive.fp
        self._fd = fp.fileno() if data is None and fp is not None else None
        self._name = archive.filename or "wheel"
        # A member's compressed bytes must lie within the archive (a lying ZIP64 size
        # would ask one read for gigabytes).
        if self._view is not None:
            self._size = len(self._view)
        else:
            self._size = os.fstat(self._fd).st_size if self._fd is not None else 0

    def read(self, info: zipfile.ZipInfo) -> bytes | None:
        """The member's bytes, or None when it is not a plain stored or deflated
        member (read it with ``ZipFile.open``). Raises :class:`zipfile.BadZipFile`
        when its local header or compressed data do not match the directory."""
        if not self._readable(info):
            return None
        start = self.data_offset(info)
        if start + info.compress_size > self._size:
            raise zipfile.BadZipFile(f"{self._name}: {info.filename!r} is truncated")
        raw = self._bytes(start, info.compress_size)
        if len(raw) != info.compress_size:
            raise zipfile.BadZipFile(f"{self._name}: {info.filename!r} is truncated")
        if info.compress_type == zipfile.ZIP_STORED:
            data = bytes(raw)
        else:
            inflater = new_inflater()
            try:
                # One byte over the announced size: enough to catch a member that lies.
                data = inflater.decompress(raw, info.file_size + 1)
            except INFLATE_ERRORS as exc:
                raise zipfile.BadZipFile(f"{self._name}: {info.filename!r}: {exc}") from None
        if len(data) != info.file_size:
            raise zipfile.BadZipFile(
                f"{self._name}: {info.filename!r} is {len(data)} bytes, "
                f"its directory entry says {info.file_size}"
            )
        return data

    def stream(self, info: zipfile.ZipInfo) -> InflatingReader | None:
        """A reader of the member's bytes, chunk by chunk; None as for :meth:`read`."""
        if not self._readable(info):
            return None
        start = self.data_offset(info)
        return InflatingReader(self._bytes, start, info, self._name)

    def _readable(self, info: zipfile.ZipInfo) -> bool:
        """A plain stored or deflated member, and the wheel's bytes at hand."""
        plain = not info.flag_bits & FLAG_ENCRYPTED and info.compress_type in (
            zipfile.ZIP_STORED,
            zipfile.ZIP_DEFLATED,
        )
        return plain and (self._view is not None or self._fd is not None)

    def data_offset(self, info: zipfile.ZipInfo) -> int:
        """Where *info*'s compressed bytes start, once its local header is checked
        (signature and file name). Raises :class:`zipfile.BadZipFile`."""
        encoding = "utf-8" if info.flag_bits & FLAG_UTF8_NAME else "cp437"
        expected = info.orig_filename.encode(encoding)
        # The header and the name it should hold, in one read.
        head = self._bytes(info.header_offset, LOCAL.size + len(expected))
        fields = LOCAL.unpack(head[: LOCAL.size]) if len(head) >= LOCAL.size else None
        if fields is None or fields[0] != LOCAL_SIGNATURE:
            raise zipfile.BadZipFile(f"{self._name}: bad local header for {info.filename!r}")
        name_length: int = fields[-2]
        extra_length: int = fields[-1]
        start = info.header_offset + LOCAL.size
        name = head[LOCAL.size :]
        if name_length != len(expected) or name != expected:
            if name_length != len(expected):
                name = self._bytes(start, name_length)
            shown = bytes(name).decode(encoding, "replace")
            raise zipfile.BadZipFile(
                f"{self._name}: the local header of {info.orig_filename!r} names {shown!r}; "
                "the archive is corrupt or crafted"
            )
        return start + name_length + extra_length

    def _bytes(self, offset: int, size: int) -> bytes | memoryview:
        if self._view is not None:
            return self._view[offset : offset + size]  # no copy: zlib reads it as it is
        assert self._fd is not None
        return os.pread(self._fd, size, offset)


class InflatingReader(io.RawIOBase):
    """A stored or deflated member, read in chunks: :meth:`read` gives the next
    chunk (at most :data:`OUT_CHUNK` bytes) without copying it. Raises
    :class:`zipfile.BadZipFile` when the data is truncated, does not inflate, or
    holds more or fewer bytes than the directory says."""

    def __init__(
        self,
        read_at: Callable[[int, int], bytes | memoryview],
        start: int,
        info: zipfile.ZipInfo,
        wheel: str,
    ) -> None:
        super().__init__()
        self._read_at = read_at
        self._position = start
        self._end = start + info.compress_size
        self._inflater = new_inflater() if info.compress_type == zipfile.ZIP_DEFLATED else None
        self._expected = info.file_size
        self._given = 0
        self._what = f"{wheel}: {info.filename!r}"

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""
        limit = OUT_CHUNK if size < 0 else min(size, OUT_CHUNK)
        while True:
            chunk = self._next(limit)
            if chunk is None:
                return b""
            if chunk:
                self._given += len(chunk)
                if self._given > self._expected:
                    raise zipfile.BadZipFile(
                        f"{self._what} holds more than the {self._expected} bytes its "
                        "directory entry says"
                    )
                return chunk

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        chunk = self.read(len(target))
        target[: len(chunk)] = chunk
        return len(chunk)

    def _next(self, limit: int) -> bytes | None:
        """The next piece (maybe empty); None at the end, once it is checked."""
        inflater = self._inflater
        try:
            if inflater is not None and (tail := inflater.unconsumed_tail):
                piece = bytes(inflater.decompress(tail, limit))
                if not piece and len(inflater.unconsumed_tail) >= len(tail):
                    raise zipfile.BadZipFile(f"{self._what} does not inflate")
                return piece
            if self._position < self._end:
                # A stored member's bytes are the piece itself: at most *limit*.
                size = min(_IN_CHUNK if inflater else limit, self._end - self._position)
                raw = self._read_at(self._position, size)
                if not raw:
                    raise zipfile.BadZipFile(f"{self._what} is truncated")
                self._position += len(raw)
                return bytes(raw) if inflater is None else bytes(inflater.decompress(raw, limit))
            if inflater is not None and not inflater.eof:
                tail = bytes(inflater.flush())
                if tail:
                    return tail
                raise zipfile.BadZipFile(f"{self._what}: the compressed data ends early")
        except INFLATE_ERRORS as exc:
            raise zipfile.BadZipFile(f"{self._what}: {exc}") from None
        if self._given != self._expected:
            raise zipfile.BadZipFile(
                f"{self._what} is {self._given} bytes, its directory entry says {self._expected}"
            )
        return None
