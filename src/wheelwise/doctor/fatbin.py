"""Which GPU architectures a CUDA fat binary (the ``.nv_fatbin`` section of a shared
object) carries code for: SASS (cubin) and PTX, read from the headers alone.

The layout is NVIDIA's undocumented one, as ``cuobjdump`` reads it: a section holds
containers one after another (each 8-byte aligned), each a 16-byte header (magic
``0xBA55ED50``, version 1, header size, size of what follows) and entries, each with
its own header (kind at offset 0: 1 for PTX, 2 for an ELF cubin; the size of its
header at 4; the size of its payload at 8; the architecture, as 86 for sm_86, at 28)
and payload. Anything that does not fit that layout makes the whole section
unreadable (:class:`FatbinError`), so that a misread never passes for missing code.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wheelwise.errors import WheelwiseError

__all__ = [
    "FATBIN_MAGIC",
    "FatbinCode",
    "FatbinError",
    "parse_fatbin",
    "read_fatbin",
    "read_fatbin_file",
]

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX = 1
KIND_CUBIN = (2, 0x10)
# Bounds on what a section may make the reader do.
MAX_CONTAINERS = 100_000
MAX_ENTRIES = 500_000
_HEADER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQ12xI")  # kind, flags, header size, payload size, arch


class FatbinError(ValueError, WheelwiseError):
    """The bytes do not follow the fat binary layout."""


@dataclass(frozen=True)
class FatbinCode:
    """Architectures with SASS and with PTX, as (major, minor)."""

    sass: frozenset[tuple[int, int]]
    ptx: frozenset[tuple[int, int]]


# A function that returns exactly `size` bytes at `offset` of the section.
_Read = Callable[[int, int], bytes]


def parse_fatbin(data: bytes) -> FatbinCode:
    """The code in a ``.nv_fatbin`` section held in *data*; raises FatbinError only."""

    def read(offset: int, size: int) -> bytes:
        if offset < 0 or offset + size > len(data):
            raise FatbinError(f"truncated at offset {offset}")
        return data[offset : offset + size]

    return read_fatbin(read, len(data))


def read_fatbin(read: _Read, size: int) -> FatbinCode:
    """The code in a ``.nv_fatbin`` section of *size* bytes, read through *read*."""
    sass: set[tuple[int, int]] = set()
    ptx: set[tuple[int, int]] = set()
    position = containers = entries = 0
    while position + _HEADER.size <= size:
        magic, version, header_size, body_size = _HEADER.unpack(read(position, _HEADER.size))
        if magic != FATBIN_MAGIC:
            # Zero padding may close the section; anything else is not a fat binary.
            if any(read(position, min(size - position, 64))):
                raise FatbinError(f"no fat binary header at offset {position}")
            break
        if version != 1 or header_size < _HEADER.size:
            raise FatbinError(f"fat binary header at offset {position}: version {version}")
        containers += 1
        if containers > MAX_CONTAINERS:
            raise FatbinError("too many fat binaries")
        entry = position + header_size
        end = entry + body_size
        if end > size:
            raise FatbinError(f"fat binary at offset {position} runs past the section")
        while entry < end:
            if entry + _ENTRY.size > end:
                raise FatbinError(f"entry at offset {entry} runs past its fat binary")
            kind, _, entry_header, payload, arch = _ENTRY.unpack(read(entry, _ENTRY.size))
            entries += 1
            if entries > MAX_ENTRIES or entry_header < _ENTRY.size or not 10 <= arch < 1000:
                raise FatbinError(f"entry at offset {entry} does not fit the layout")
            if kind == KIND_PTX:
                ptx.add(divmod(arch, 10))
            elif kind in KIND_CUBIN:
                sass.add(divmod(arch, 10))
            entry += entry_header + payload
        if entry != end:
            raise FatbinError(f"entries of the fat binary at offset {position} overrun it")
        position = end if _starts_container(read, end, size) else end + (-end % 8)
    return FatbinCode(frozenset(sass), frozenset(ptx))


def _starts_container(read: _Read, position: int, size: int) -> bool:
    if position + 4 > size:
        return False
    return int.from_bytes(read(position, 4), "little") == FATBIN_MAGIC


def read_fatbin_file(path: str | os.PathLike[str], offset: int, size: int) -> FatbinCode:
    """The code in the fat binary section at *offset* (*size* bytes) of the file at
    *path*. Raises FatbinError, or OSError when the file cannot be read."""
    with Path(path).open("rb") as handle:

        def read(at: int, count: int) -> bytes:
            if at < 0 or count < 0 or at + count > size:
                raise FatbinError(f"truncated at offset {at}")
            handle.seek(offset + at)
            chunk = handle.read(count)
            if len(chunk) != count:
                raise FatbinError(f"short read at offset {at}")
            return chunk

        return read_fatbin(read, size)
