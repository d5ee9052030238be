"""A few small members of a wheel held in memory, read without :mod:`zipfile`.

``index build`` reads the METADATA of every wheel of a folder of thousands, and
for a wheel of a dozen members zipfile's directory objects and member streams cost
more than the inflating. :func:`read_small_members` reads the common shape of a
wheel straight from its bytes: the end record last with no comment, no ZIP64, no
bytes before the archive, no extra fields in the directory, members stored or
deflated. It applies :class:`~wheelwise.wheels.archive.WheelArchive`'s rules to
every directory entry (:func:`~wheelwise.wheels.archive.member_problem`, one
``.dist-info``) and checks each member it reads as zipfile does (local header
signature and name, no overlap with the next member, exact size, CRC-32).

It never reports an error: a wheel it cannot read this way, broken or merely
unusual, gives None, and the caller reads that wheel with ``WheelArchive``, whose
errors say what is wrong. So it can only be faster, never more lenient.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import NamedTuple

from wheelwise.wheels.archive import dist_info_dirs, member_problem
from wheelwise.wheels.zip_layout import (
    CENTRAL,
    CENTRAL_SIGNATURE,
    END,
    END_SIGNATURE,
    FLAG_UTF8_NAME,
    LOCAL,
    LOCAL_SIGNATURE,
    ZIP64_LOCATOR_SIGNATURE,
)

__all__ = ["SmallMembers", "read_small_members"]

_ZIP64_LOCATOR_SIZE = 20
_STORED, _DEFLATED = 0, 8
# Encrypted, compressed patched data, strong encryption: zipfile refuses or
# special-cases them.
_UNREAD_FLAGS = 0x1 | 0x20 | 0x40
# The highest "version needed to extract" zipfile accepts.
_MAX_VERSION = 63
_NO_ZIP64 = 0xFFFFFFFF


class SmallMembers(NamedTuple):
    """The wheel's ``.dist-info`` directory and the wanted members found in it,
    by their names relative to it."""

    dist_info: str
    files: dict[str, bytes]


class _Entry(NamedTuple):
    raw_name: bytes
    flags: int
    method: int
    crc: int
    compress_size: int
    file_size: int
    offset: int


def read_small_members(data: bytes, wanted: Mapping[str, int]) -> SmallMembers | None:
    """The members of *data*'s ``.dist-info`` named in *wanted* (name -> most bytes
    accepted) that the wheel has; None when the wheel must be read with
    ``WheelArchive`` (module docstring)."""
    directory = _directory(data)
    if directory is None:
        return None
    entries, directory_start = directory
    dist_infos = dist_info_dirs(name for name in entries if not name.endswith("/"))
    ends = _member_ends(entries, directory_start)
    if len(dist_infos) != 1 or ends is None:
        return None
    files: dict[str, bytes] = {}
    for short, limit in wanted.items():
        entry = entries.get(f"{dist_infos[0]}/{short}")
        if entry is None:
            continue
        if entry.file_size > limit:
            return None
        content = _read(data, entry, ends[entry.offset])
        if content is None:
            return None
        files[short] = content
    return SmallMembers(dist_infos[0], files)


def _directory(data: bytes) -> tuple[dict[str, _Entry], int] | None:
    """The directory's entries by name, and where the directory starts."""
    end = len(data) - END.size
    if end < _ZIP64_LOCATOR_SIZE:
        return None
    signature, disk, start_disk, disk_entries, count, size, start, comment = END.unpack_from(
        data, end
    )
    if (
        signature != END_SIGNATURE
        or comment
        or disk
        or start_disk
        or disk_entries != count
        or start + size != end
        or data[end - _ZIP64_LOCATOR_SIZE : end - _ZIP64_LOCATOR_SIZE + 4]
        == ZIP64_LOCATOR_SIGNATURE
    ):
        return None
    entries: dict[str, _Entry] = {}
    position = start
    while position < end:
        if position + CENTRAL.size > end:
            return None
        (
            signature,
            _made_by,
            _system,
            version_needed,
            _reserved,
            flags,
            method,
            _time,
            _date,
            crc,
            compress_size,
            file_size,
            name_length,
            extra_length,
            comment_length,
            _disk,
            _internal_attr,
            external_attr,
            offset,
        ) = CENTRAL.unpack_from(data, position)
        if (
            signature != CENTRAL_SIGNATURE
            or version_needed > _MAX_VERSION
            or extra_length
            or flags & _UNREAD_FLAGS
            or method not in (_STORED, _DEFLATED)
            or _NO_ZIP64 in (compress_size, file_size, offset)
        ):
            return None
        position += CENTRAL.size
        raw_name = data[position : position + name_length]
        position += name_length + comment_length
        if position > end or b"\0" in raw_name:
            return None
        try:
            # ASCII reads the same in both encodings, and its codec is the fastest.
            name = raw_name.decode(
                "ascii" if raw_name.isascii() else "utf-8" if flags & FLAG_UTF8_NAME else "cp437"
            )
        except UnicodeDecodeError:
            return None
        problem = member_problem(
            name,
            seen=entries,  # directories too: one that repeats is left to WheelArchive
            external_attr=external_attr,
            compress_type=method,
            flag_bits=flags,
            file_size=file_size,
            compress_size=compress_size,
        )
        if problem is not None:
            return None
        entries[name] = _Entry(raw_name, flags, method, crc, compress_size, file_size, offset)
    if position != end or len(entries) != count:
        return None
    return entries, start


def _member_ends(entries: dict[str, _Entry], directory_start: int) -> dict[int, int] | None:
    """Where each member's bytes must end, by its local header's offset: the next
    member's local header, or the directory for the last one (zipfile refuses
    overlapping members). None when two members share a header."""
    offsets = sorted(entry.offset for entry in entries.values())
    if len(set(offsets)) != len(offsets):
        return None
    return dict(zip(offsets, [*offsets[1:], directory_start], strict=True))


def _read(data: bytes, entry: _Entry, limit: int) -> bytes | None:
    header_end = entry.offset + LOCAL.size
    if header_end > limit:
        return None
    signature, _version, _reserved, flags, *_, name_length, extra_length = LOCAL.unpack_from(
        data, entry.offset
    )
    if (
        signature != LOCAL_SIGNATURE
        or (flags ^ entry.flags) & FLAG_UTF8_NAME
        or data[header_end : header_end + name_length] != entry.raw_name
    ):
        return None
    start = header_end + name_length + extra_length
    if start + entry.compress_size > limit:
        return None
    raw = data[start : start + entry.compress_size]
    if entry.method == _STORED:
        content = raw
    else:
        inflater = zlib.decompressobj(-15)
        try:
            content = inflater.decompress(raw, entry.file_size + 1)
        except zlib.error:
            return None
        if not inflater.eof or inflater.unconsumed_tail or inflater.unused_data:
            return None
    if len(content) != entry.file_size or zlib.crc32(content) != entry.crc:
        return None
    return content
