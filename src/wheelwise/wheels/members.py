"""Reading a small zip member whole, without :mod:`zipfile`'s per-member machinery.

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
"""

from __future__ import annotations

import os
import zipfile
import zlib

from wheelwise.wheels.zip_layout import FLAG_ENCRYPTED, FLAG_UTF8_NAME, LOCAL, LOCAL_SIGNATURE

__all__ = ["MemberReader"]


class MemberReader:
    """Reads members of *archive*, whose bytes are *data* (an in-memory wheel) or
    are read from its open file."""

    def __init__(self, archive: zipfile.ZipFile, data: bytes | None = None) -> None:
        self._view = memoryview(data) if data is not None else None
        fp = archive.fp
        self._fd = fp.fileno() if data is None and fp is not None else None
        self._name = archive.filename or "wheel"

    def read(self, info: zipfile.ZipInfo) -> bytes | None:
        """The member's bytes, or None when it is not a plain stored or deflated
        member (read it with ``ZipFile.open``). Raises :class:`zipfile.BadZipFile`
        when its local header or compressed data do not match the directory."""
        if info.flag_bits & FLAG_ENCRYPTED or info.compress_type not in (
            zipfile.ZIP_STORED,
            zipfile.ZIP_DEFLATED,
        ):
            return None
        if self._view is None and self._fd is None:
            return None
        start = self.data_offset(info)
        raw = self._bytes(start, info.compress_size)
        if len(raw) != info.compress_size:
            raise zipfile.BadZipFile(f"{self._name}: {info.filename!r} is truncated")
        if info.compress_type == zipfile.ZIP_STORED:
            data = bytes(raw)
        else:
            inflater = zlib.decompressobj(-15)
            try:
                # One byte over the announced size: enough to catch a member that lies.
                data = inflater.decompress(raw, info.file_size + 1)
            except zlib.error as exc:
                raise zipfile.BadZipFile(f"{self._name}: {info.filename!r}: {exc}") from None
        if len(data) != info.file_size:
            raise zipfile.BadZipFile(
                f"{self._name}: {info.filename!r} is {len(data)} bytes, "
                f"its directory entry says {info.file_size}"
            )
        return data

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
