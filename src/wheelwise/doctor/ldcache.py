"""The dynamic loader's cache, ``/etc/ld.so.cache`` (written by ``ldconfig``): for a
library name, the files the loader opens when ``LD_LIBRARY_PATH`` does not name one.
Read as ``ldconfig -p`` would print it, without running anything.

The format is glibc's "new" cache (``glibc-ld.so.cache1.1``), alone (glibc 2.32 and
later) or after the old libc5 table: a header (magic, entry count, string-table
length, byte-order flag), then 24-byte entries whose name and path are offsets into
the string table, counted from the new header's first byte.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["CacheEntry", "parse_ld_so_cache"]

_MAGIC = b"glibc-ld.so.cache1.1"
_HEADER = 48  # magic and version (20), nlibs, len_strings, flags, padding, extension, unused
_ENTRY = 24  # flags (i32), key, value, osversion (u32), hwcap (u64)
_BIG_ENDIAN_FLAG = 3
_MAX_STRING = 4096


@dataclass(frozen=True)
class CacheEntry:
    """One library the cache lists: its name (``libcuda.so.1``), the file the loader
    opens for it, and ldconfig's flags (ELF kind and machine)."""

    name: str
    path: str
    flags: int


def parse_ld_so_cache(data: bytes) -> list[CacheEntry] | None:
    """The entries of a loader cache, in the cache's order (the loader takes the
    first that suits); None when *data* is not a cache of this format. Entries whose
    strings lie outside the data are left out."""
    start = data.find(_MAGIC)
    if start < 0 or len(data) < start + _HEADER:
        return None
    order = ">" if data[start + 28] == _BIG_ENDIAN_FLAG else "<"
    count, _ = struct.unpack_from(order + "II", data, start + 20)
    available = (len(data) - start - _HEADER) // _ENTRY
    entries = []
    for index in range(min(count, available)):
        flags, key, value = struct.unpack_from(
            order + "iII", data, start + _HEADER + index * _ENTRY
        )
        name, path = _string(data, start + key), _string(data, start + value)
        if name and path:
            entries.append(CacheEntry(name, path, flags))
    return entries


def _string(data: bytes, offset: int) -> str | None:
    if offset >= len(data):
        return None
    end = data.find(b"\0", offset, offset + _MAX_STRING)
    if end < 0:
        return None
    return data[offset:end].decode("utf-8", "replace")
