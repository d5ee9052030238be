"""Damage one member of a zip written by :mod:`zipfile`, the way a hostile or
corrupted wheel is damaged: header fields rewritten in place (both the local
header and the central directory entry), or its compressed bytes garbled."""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

# Offsets inside the local header (PK\3\4) and the central directory entry (PK\1\2).
_LOCAL = {"version": 4, "flags": 6, "method": 8, "name_len": 26, "extra_len": 28, "name": 30}
_CENTRAL = {"version": 6, "flags": 8, "method": 10, "name_len": 28, "name": 46}


def _central_offset(data: bytes, name: bytes) -> int:
    start = data.find(b"PK\x01\x02")
    while start != -1:
        (length,) = struct.unpack_from("<H", data, start + _CENTRAL["name_len"])
        if data[start + 46 : start + 46 + length] == name:
            return start
        start = data.find(b"PK\x01\x02", start + 4)
    raise LookupError(name)


def patch_member(
    path: Path,
    member: str,
    *,
    flags: int | None = None,
    method: int | None = None,
    version: int | None = None,
    name: bytes | None = None,
) -> Path:
    """Rewrite *member*'s header fields (a new *name* must have the same length)."""
    with zipfile.ZipFile(path) as archive:
        local = archive.getinfo(member).header_offset
    data = bytearray(path.read_bytes())
    central = _central_offset(bytes(data), member.encode())
    for base, fields in ((local, _LOCAL), (central, _CENTRAL)):
        for key, value in (("flags", flags), ("method", method), ("version", version)):
            if value is not None:
                struct.pack_into("<H", data, base + fields[key], value)
        if name is not None:
            assert len(name) == len(member.encode())
            data[base + fields["name"] : base + fields["name"] + len(name)] = name
    path.write_bytes(bytes(data))
    return path


def garble_member(path: Path, member: str, garbage: bytes = b"\xff\xff\xff\xff") -> Path:
    """Overwrite the start of *member*'s compressed bytes (a deflate block of the
    reserved type 3: zlib refuses it)."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    data = bytearray(path.read_bytes())
    offset = info.header_offset
    name_len, extra_len = struct.unpack_from("<HH", data, offset + _LOCAL["name_len"])
    start = offset + 30 + name_len + extra_len
    size = min(len(garbage), info.compress_size)
    data[start : start + size] = garbage[:size]
    path.write_bytes(bytes(data))
    return path


def raw_zip(entries: list[tuple[bytes, bytes, int, int, int]]) -> bytes:
    """A zip written by hand: each entry is (name, stored bytes, flags, compression
    method, version needed to extract), with no check that they agree."""
    body = bytearray()
    central = bytearray()
    for name, data, flags, method, version in entries:
        crc = zlib.crc32(data)
        fields = (version, flags, method, 0, 0x21, crc, len(data), len(data), len(name), 0)
        central += struct.pack(
            "<4sH5H3L2H3H2L", b"PK\x01\x02", 0x314, *fields, 0, 0, 0, 0o644 << 16, len(body)
        )
        central += name
        body += struct.pack("<4s5H3L2H", b"PK\x03\x04", *fields) + name + data
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(central), len(body), 0
    )
    return bytes(body + central + end)


def zip64_sizes(
    path: Path,
    *,
    extra: bool = True,
    lie: tuple[int, int] | None = None,
    only: str | None = None,
) -> Path:
    """Give every central directory entry the ZIP64 size markers (both sizes
    0xffffffff, the real ones in a ZIP64 extra field), as some writers do for any
    member and all must past 4 GiB; without *extra*, the markers alone (a broken
    archive whose sizes say 4 GiB); with *lie*, the extra field gives every member
    those (uncompressed, compressed) sizes (or only the member *only*)."""
    data = path.read_bytes()
    end = data.rindex(b"PK\x05\x06")
    (size, offset) = struct.unpack_from("<LL", data, end + 12)
    central = bytearray()
    position = offset
    while position < offset + size:
        name_len, extra_len, comment_len = struct.unpack_from("<3H", data, position + 28)
        compressed, uncompressed = struct.unpack_from("<LL", data, position + 20)
        header = bytearray(data[position : position + 46])
        struct.pack_into("<LL", header, 20, 0xFFFFFFFF, 0xFFFFFFFF)
        struct.pack_into("<H", header, 30, extra_len + (20 if extra else 0))
        name = data[position + 46 : position + 46 + name_len]
        rest = data[position + 46 + name_len : position + 46 + name_len + extra_len + comment_len]
        if lie is not None and only in (
            None,
            data[position + 46 : position + 46 + name_len].decode(),
        ):
            uncompressed, compressed = lie
        zip64 = struct.pack("<HHQQ", 1, 16, uncompressed, compressed) if extra else b""
        central += header + name + rest[:extra_len] + zip64 + rest[extra_len:]
        position += 46 + name_len + extra_len + comment_len
    tail = bytearray(data[end:])
    struct.pack_into("<L", tail, 12, len(central))
    path.write_bytes(data[:offset] + bytes(central) + bytes(tail))
    return path
