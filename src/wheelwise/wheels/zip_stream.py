"""A zip's local members, read in order from its bytes as they arrive.

A zip is meant to be read from its central directory, at its end; a download
reaches that last. :class:`LocalMembers` reads what comes before it: each local
header, then as many compressed bytes as the header gives, until something that is
not a local header (the central directory, or anything else) ends the run. A member
whose header does not give its sizes (a data descriptor follows it), one with ZIP64
or encrypted contents, also ends it, with the reason in :attr:`LocalMembers.stopped`.

Nothing here is trusted: the caller compares what it made from these members with
what it makes from the whole archive once it has it (see :mod:`wheelwise.proxy.stream`).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass

from wheelwise.wheels.zip_layout import FLAG_ENCRYPTED, FLAG_UTF8_NAME, LOCAL, LOCAL_SIGNATURE

__all__ = ["LocalMembers", "MemberBytes"]

_DATA_DESCRIPTOR = 0x8
_ZIP64_MARKER = 0xFFFFFFFF


@dataclass(frozen=True)
class MemberBytes:
    """Compressed bytes of the member last begun."""

    data: bytes | memoryview


def _date_time(time: int, date: int) -> tuple[int, int, int, int, int, int]:
    return (
        (date >> 9) + 1980,
        (date >> 5) & 0xF,
        date & 0x1F,
        time >> 11,
        (time >> 5) & 0x3F,
        (time & 0x1F) * 2,
    )


class LocalMembers:
    """Feed it a zip's bytes in order; it gives each member's header (a ZipInfo) and
    then its compressed bytes, until the run of local members ends."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self._remaining = 0
        self._offset = 0  # of the first pending byte, in the zip
        self.stopped: str | None = None

    @property
    def offset(self) -> int:
        """Where, in the zip, the bytes not given back yet start (once :attr:`stopped`:
        where the run of local members ended)."""
        return self._offset

    def leftover(self) -> bytes:
        """Once :attr:`stopped`, the bytes fed past the run's end, from :attr:`offset`."""
        return bytes(self._pending)

    def feed(self, data: bytes) -> list[zipfile.ZipInfo | MemberBytes]:
        """What *data*, after everything fed before, completes. A member's bytes
        may be a view of *data*: use them before the next call."""
        if self.stopped is not None:
            return []
        found: list[zipfile.ZipInfo | MemberBytes] = []
        view = memoryview(data)
        # Within a member, its bytes are passed on as they came, without a copy.
        if self._remaining and not self._pending:
            take = min(self._remaining, len(view))
            found.append(MemberBytes(view[:take]))
            self._remaining -= take
            self._offset += take
            view = view[take:]
        self._pending += view
        while self.stopped is None:
            if self._remaining:
                take = min(self._remaining, len(self._pending))
                if not take:
                    break
                found.append(MemberBytes(bytes(self._pending[:take])))
                del self._pending[:take]
                self._remaining -= take
                self._offset += take
                continue
            header = self._header()
            if header is None:
                break
            found.append(header)
        return found

    def _header(self) -> zipfile.ZipInfo | None:
        pending = self._pending
        if len(pending) < len(LOCAL_SIGNATURE):
            return None
        if pending[: len(LOCAL_SIGNATURE)] != LOCAL_SIGNATURE:
            self.stopped = "the local members end"
            return None
        if len(pending) < LOCAL.size:
            return None
        fields = LOCAL.unpack_from(pending)
        _, _, _, flags, method, time, date, crc, compressed, size, name_length, extra = fields
        total = LOCAL.size + name_length + extra
        if len(pending) < total:
            return None
        if flags & (_DATA_DESCRIPTOR | FLAG_ENCRYPTED):
            self.stopped = "a member's sizes follow its data, or it is encrypted"
            return None
        if _ZIP64_MARKER in (compressed, size):
            self.stopped = "a member has ZIP64 sizes"
            return None
        raw_name = bytes(pending[LOCAL.size : LOCAL.size + name_length])
        name = raw_name.decode("utf-8" if flags & FLAG_UTF8_NAME else "cp437", "replace")
        info = zipfile.ZipInfo(name, date_time=_date_time(time, date))
        info.flag_bits = flags
        info.compress_type = method
        info.CRC = crc
        info.compress_size = compressed
        info.file_size = size
        info.header_offset = self._offset
        del pending[:total]
        self._offset += total
        self._remaining = compressed
        return info
