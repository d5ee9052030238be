"""Writing a zip whose members are copied as they are compressed.

Rewriting a wheel changes one or two small members; inflating and deflating every
other one again makes a rewrite of a large wheel CPU-bound (deflate is slow on
machine code). :class:`CompressedCopyWriter` writes each copied member's compressed
bytes unchanged, with the CRC and sizes of its directory entry, and deflates only the
members it is given as bytes. Where a source member's local header already is the one
written here, that member and its neighbours in the source are copied by the kernel in
one run (:meth:`CompressedCopyWriter.copy_verbatim`, the rewrite's speed trick): a
big wheel's bytes never pass through the interpreter. The kernel may start on the
first run while the members are still being checked, or even before the archive is
read (:meth:`CompressedCopyWriter.copy_ahead`), so that copying and checking overlap. A
copied member keeps the "version needed to extract" its source gives (up to ZIP64's),
so the headers most tools write, 2.0 for every member, are already the ones written
here. It writes no comments or data descriptors; a size or offset past 32 bits (a
wheel over 4 GiB) goes into ZIP64 records, as APPNOTE 4.5.3 and 4.3.14 say, and only
then.
"""

from __future__ import annotations

import functools
import os
import struct
import threading
import zipfile
import zlib
from collections.abc import Iterable
from typing import BinaryIO

from wheelwise.kernel_copy import copy_range
from wheelwise.wheels.zip_layout import (
    CENTRAL,
    CENTRAL_SIGNATURE,
    END,
    END_SIGNATURE,
    FLAG_UTF8_NAME,
    LOCAL,
    LOCAL_SIGNATURE,
    ZIP64_END,
    ZIP64_END_SIGNATURE,
    ZIP64_EXTRA_ID,
    ZIP64_LOCATOR,
    ZIP64_LOCATOR_SIGNATURE,
    ZIP64_MARKER,
    ZIP64_MEMBERS_MARKER,
)

__all__ = ["CompressedCopyWriter", "Deflating"]

# The version needed to read ZIP64 records.
_ZIP64_VERSION = 45
# Deflate's option bits: which level the data was compressed with, informational.
_DEFLATE_OPTIONS = 0x6
_VERSION = {zipfile.ZIP_STORED: 10, zipfile.ZIP_DEFLATED: 20}
# What zipfile writes by default, so added members compress as they did before.
_LEVEL = 6


def _zip64_extra(*values: int) -> bytes:
    return struct.pack(f"<HH{len(values)}Q", ZIP64_EXTRA_ID, 8 * len(values), *values)


@functools.lru_cache(maxsize=256)  # a wheel's members share a few timestamps
def _dos(date_time: tuple[int, int, int, int, int, int]) -> tuple[int, int]:
    year, month, day, hour, minute, second = date_time
    return (hour << 11) | (minute << 5) | (second // 2), ((year - 1980) << 9) | (month << 5) | day


def _needed(info: zipfile.ZipInfo) -> int:
    """The version a copied member keeps saying it needs: its own, where this writer
    could have written it (most tools write 2.0 for every member, stored folders
    too), so its local header stays the source's and goes in the kernel's run."""
    return info.extract_version if info.extract_version <= _ZIP64_VERSION else 0


def _name(info: zipfile.ZipInfo) -> tuple[bytes, int]:
    try:
        return info.filename.encode("ascii"), 0
    except UnicodeEncodeError:
        return info.filename.encode("utf-8"), FLAG_UTF8_NAME


class CompressedCopyWriter:
    """Writes members one after another to *stream*; :meth:`close` ends the archive."""

    def __init__(self, stream: BinaryIO) -> None:
        self._out = stream
        self._offset = 0
        self._central: list[bytes] = []
        # Copied members not written yet: (source file, offset, length), one run of
        # neighbours in the source, sent by the kernel before anything else is written.
        self._run: tuple[int, int, int] | None = None
        self._ahead: _CopyAhead | None = None

    def _write(self, data: bytes | memoryview) -> None:
        if self._ahead is not None:
            self._settle_ahead()
        if self._run is not None:
            self._send_run()
        self._out.write(data)
        self._offset += len(data)

    def copy_ahead(self, first: zipfile.ZipInfo | None, source: int, length: int) -> None:
        """Before anything is written: when *first*, the first entry to be written,
        sits at the start of the archive open as the file *source* with the local
        header :meth:`copy_verbatim` would write, the kernel starts copying
        *source*'s first *length* bytes (the members likely copied as they are) in
        the background. Of those, only what the members then copied by
        :meth:`copy_verbatim` from that file (through any descriptor of it) confirm
        is kept; the rest is cut off before anything else is written. With *first*
        None, the copy starts unchecked (the archive is not read yet). *stream* must
        be a file written from its start, and :meth:`stop` must follow, whatever
        happens."""
        assert self._offset == 0, "copy_ahead comes first"
        assert self._ahead is None, "one copy ahead"
        if length <= 0:
            return
        if first is not None and (
            first.header_offset != 0 or self._as_written(first, source) is None
        ):
            return
        self._out.flush()
        self._ahead = _CopyAhead(source, self._out.fileno(), length)

    def stop(self) -> None:
        """End a copy :meth:`copy_ahead` started that nothing has settled yet (after
        an error: it stops within a piece, and what it wrote is left to the caller,
        who removes the file), and wait for it."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.cancel()
            ahead.wait()

    def _settle_ahead(self) -> None:
        """Keep what the copy ahead wrote that the members copied so far confirm: the
        start of the run that begins both the source and the output."""
        ahead, self._ahead = self._ahead, None
        assert ahead is not None
        copied = ahead.result()
        run = self._run
        confirmed = 0
        if run is not None and ahead.reads(run[0]) and run[1] == 0 and self._offset == run[2]:
            confirmed = min(copied, run[2])
            left = run[2] - confirmed
            self._run = (run[0], confirmed, left) if left else None
        if confirmed != copied:
            self._out.truncate(confirmed)
        self._out.seek(confirmed)

    def _send_run(self) -> None:
        if self._ahead is not None:
            self._settle_ahead()
            if self._run is None:
                return
        assert self._run is not None
        source, start, length = self._run
        self._run = None
        self._out.flush()  # the kernel writes at the file's position, after these
        copied = copy_range(source, self._out.fileno(), start, length)
        if copied != length:
            raise ValueError(f"the archive ends {length - copied} bytes before its members do")

    def _headers(
        self,
        info: zipfile.ZipInfo,
        crc: int,
        compressed: int,
        size: int,
        flags: int,
        needed: int = 0,
    ) -> tuple[bytes, bytes]:
        """The directory entry and the local header of a member written next, saying
        it needs at least version *needed* to extract."""
        name, utf8 = _name(info)
        flags |= utf8
        dostime, dosdate = _dos(info.date_time)
        version = max(_VERSION[info.compress_type], needed)
        offset = self._offset
        if compressed < ZIP64_MARKER and size < ZIP64_MARKER and offset < ZIP64_MARKER:
            # Nearly every member: no ZIP64 field (a big wheel has 10,000s of them).
            central = CENTRAL.pack(
                CENTRAL_SIGNATURE, max(info.create_version, version), info.create_system,
                version, 0, flags, info.compress_type, dostime, dosdate, crc, compressed, size,
                len(name), 0, 0, 0, 0, info.external_attr, offset,
            )  # fmt: skip
            header = LOCAL.pack(
                LOCAL_SIGNATURE, version, 0, flags, info.compress_type, dostime, dosdate, crc,
                compressed, size, len(name), 0,
            )  # fmt: skip
            return central + name, header + name
        local_extra = b""
        local_sizes = (compressed, size)
        if max(compressed, size) >= ZIP64_MARKER:
            version = max(version, _ZIP64_VERSION)
            local_extra = _zip64_extra(size, compressed)
            local_sizes = (ZIP64_MARKER, ZIP64_MARKER)
        # The directory entry puts in its ZIP64 field only what does not fit.
        big = [value for value in (size, compressed, offset) if value >= ZIP64_MARKER]
        central_extra = _zip64_extra(*big) if big else b""
        if big:
            version = max(version, _ZIP64_VERSION)

        def cap(value: int) -> int:
            return ZIP64_MARKER if value >= ZIP64_MARKER else value

        central = CENTRAL.pack(
            CENTRAL_SIGNATURE, max(info.create_version, version), info.create_system, version,
            0, flags, info.compress_type, dostime, dosdate, crc, cap(compressed), cap(size),
            len(name), len(central_extra), 0, 0, 0, info.external_attr, cap(offset),
        )  # fmt: skip
        header = LOCAL.pack(
            LOCAL_SIGNATURE, version, 0, flags, info.compress_type, dostime, dosdate, crc,
            *local_sizes, len(name), len(local_extra),
        )  # fmt: skip
        return central + name + central_extra, header + name + local_extra

    def _start(self, headers: tuple[bytes, bytes]) -> None:
        """A member's directory entry kept, its local header written."""
        central, header = headers
        self._central.append(central)
        self._write(header)

    @property
    def offset(self) -> int:
        """How many bytes have been written."""
        return self._offset

    def copy(self, info: zipfile.ZipInfo, compressed: Iterable[bytes]) -> None:
        """A member of another archive: its directory entry *info* and its compressed
        bytes (exactly ``info.compress_size`` of them, already checked by the caller)."""
        self.start_copy(info)
        written = 0
        for chunk in compressed:
            self.copy_bytes(chunk)
            written += len(chunk)
        if written != info.compress_size:
            raise ValueError(
                f"{info.filename}: {written} compressed bytes, not {info.compress_size}"
            )

    def start_copy(self, info: zipfile.ZipInfo) -> None:
        """The header of a copied member; its ``info.compress_size`` compressed bytes
        follow through :meth:`copy_bytes`."""
        if info.compress_type not in _VERSION:
            raise ValueError(f"{info.filename}: compression method {info.compress_type}")
        flags = info.flag_bits & _DEFLATE_OPTIONS if info.compress_type else 0
        self._start(
            self._headers(info, info.CRC, info.compress_size, info.file_size, flags, _needed(info))
        )

    def copy_verbatim(self, info: zipfile.ZipInfo, source: int) -> bool:
        """A member of the archive open as the file *source*, copied as it is there
        (header and compressed bytes, with its neighbours in one run, by the kernel)
        when its local header is the one :meth:`copy` would write; False, and nothing
        written, when it is not. *stream* must then be a file."""
        written = self._as_written(info, source)
        if written is None:
            return False
        central, header = written
        self._central.append(central)
        length = len(header) + info.compress_size
        run = self._run
        if run is not None and run[0] == source and run[1] + run[2] == info.header_offset:
            self._run = (source, run[1], run[2] + length)
        else:
            if run is not None:
                self._send_run()
            self._run = (source, info.header_offset, length)
        self._offset += length
        return True

    def _as_written(self, info: zipfile.ZipInfo, source: int) -> tuple[bytes, bytes] | None:
        """The directory entry and local header :meth:`copy` would write for *info*,
        written next, when the local header in the file *source* already is that
        one; None when it is not."""
        if info.compress_type not in _VERSION:
            return None
        flags = info.flag_bits & _DEFLATE_OPTIONS if info.compress_type else 0
        central, header = self._headers(
            info, info.CRC, info.compress_size, info.file_size, flags, _needed(info)
        )
        if os.pread(source, len(header), info.header_offset) != header:
            return None
        return central, header

    def copy_bytes(self, chunk: bytes | memoryview) -> None:
        """Compressed bytes of the member :meth:`start_copy` began."""
        self._write(chunk)

    def add(self, info: zipfile.ZipInfo, data: bytes, deflated: Deflating | None = None) -> None:
        """A new member holding *data*, stored or deflated as *info* says (by
        *deflated*, where it was begun ahead for *data*)."""
        if info.compress_type == zipfile.ZIP_DEFLATED:
            body = (deflated if deflated is not None else Deflating(data, ahead=False)).body()
        elif info.compress_type == zipfile.ZIP_STORED:
            body = data
        else:
            raise ValueError(f"{info.filename}: compression method {info.compress_type}")
        self._start(self._headers(info, zlib.crc32(data), len(body), len(data), 0))
        self._write(body)

    def close(self) -> None:
        start = self._offset
        self._write(b"".join(self._central))  # one write: a big wheel has 10,000s
        count, size = len(self._central), self._offset - start
        if count >= ZIP64_MEMBERS_MARKER or max(start, size) >= ZIP64_MARKER:
            record = self._offset
            end = ZIP64_END.pack(
                ZIP64_END_SIGNATURE, ZIP64_END.size - 12, _ZIP64_VERSION, _ZIP64_VERSION,
                0, 0, count, count, size, start,
            )  # fmt: skip
            self._write(end)
            self._write(ZIP64_LOCATOR.pack(ZIP64_LOCATOR_SIGNATURE, 0, record, 1))
            count = min(count, ZIP64_MEMBERS_MARKER)
            size, start = min(size, ZIP64_MARKER), min(start, ZIP64_MARKER)
        self._write(END.pack(END_SIGNATURE, 0, 0, count, count, size, start, 0))


class Deflating:
    """*data* deflated as :meth:`CompressedCopyWriter.add` writes it; with *ahead*,
    in a thread, while the caller goes on (zlib lets go of the interpreter lock): a
    big wheel's new RECORD is megabytes, tens of milliseconds to deflate."""

    def __init__(self, data: bytes, *, ahead: bool = True) -> None:
        self._data = data
        self._body: bytes | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if ahead:
            self._thread = threading.Thread(target=self._deflate, name="deflate", daemon=True)
            self._thread.start()

    def _deflate(self) -> None:
        try:
            deflater = zlib.compressobj(_LEVEL, zlib.DEFLATED, -15)
            self._body = deflater.compress(self._data) + deflater.flush()
        except BaseException as exc:  # told by body(), in the caller's thread
            self._error = exc

    def body(self) -> bytes:
        if self._thread is not None:
            self._thread.join()
        elif self._body is None and self._error is None:
            self._deflate()
        if self._error is not None:
            raise self._error
        assert self._body is not None
        return self._body


class _CopyAhead:
    """A thread copying the first *length* bytes of the file *source* to the file
    *target* at its position, through descriptors of its own: a caller that stops
    waiting (interrupted) and closes either file cannot have it write elsewhere. It
    goes in pieces, so that a cancelled copy of a huge file ends soon."""

    PIECE = 64 << 20

    def __init__(self, source: int, target: int, length: int) -> None:
        self._file = os.fstat(source)
        self._cancelled = threading.Event()
        self._source = os.dup(source)
        try:
            self._target = os.dup(target)
        except OSError:
            os.close(self._source)
            raise
        self._length = length
        self._copied = 0
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._copy, name="copy-ahead", daemon=True)
        try:
            self._thread.start()
        except BaseException:
            self._close()
            raise

    def reads(self, source: int) -> bool:
        """Whether the open file *source* is the file this copy reads."""
        return os.path.samestat(os.fstat(source), self._file)

    def cancel(self) -> None:
        self._cancelled.set()

    def _copy(self) -> None:
        try:
            while self._copied < self._length and not self._cancelled.is_set():
                piece = min(self.PIECE, self._length - self._copied)
                sent = copy_range(self._source, self._target, self._copied, piece)
                self._copied += sent
                if sent < piece:
                    break  # the source ends here
        except BaseException as exc:  # raised by result(), in the caller's thread
            self._error = exc
        finally:
            self._close()

    def _close(self) -> None:
        os.close(self._source)
        os.close(self._target)

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> int:
        """How many bytes it copied; raises what stopped it."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._copied
