"""Reading ELF shared objects as bytes: the dynamic section (``DT_SONAME``,
``DT_NEEDED``, ``DT_RPATH``, ``DT_RUNPATH``) and the section table, for 32- and
64-bit, little- and big-endian files.

Nothing here loads or runs what it reads: ``doctor`` inspects CUDA libraries that may
be broken, for another machine, or hostile. Every count and length read from the file
is bounded, so a damaged or crafted file costs at most a few megabytes of reads and
raises :class:`ElfError`, the only error the parser raises (reading a path can also
raise :class:`OSError`).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "ElfError",
    "ElfInfo",
    "Section",
    "is_elf",
    "parse_elf",
    "read_elf",
    "read_needed",
    "read_soname",
]

MAGIC = b"\x7fELF"
# Dynamic tags (System V gABI).
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
PT_LOAD, PT_DYNAMIC = 1, 2
SHT_NOBITS = 8

# Bounds on what a file may make the reader do.
MAX_PROGRAM_HEADERS = 4096
MAX_SECTIONS = 65536
MAX_DYNAMIC_ENTRIES = 65536
MAX_NEEDED = 4096
MAX_STRING = 4096


class ElfError(ValueError):
    """The bytes are not an ELF file this reader understands (truncated, inconsistent
    offsets, not ELF at all)."""


@dataclass(frozen=True)
class Section:
    """One entry of the section table (``.nv_fatbin``, ``.dynstr``...)."""

    name: str
    type: int
    offset: int
    size: int


@dataclass(frozen=True)
class ElfInfo:
    """What the dynamic loader reads from a shared object, and its sections."""

    bits: int
    little_endian: bool
    machine: int
    kind: int
    """``e_type``: 3 for a shared object (``ET_DYN``)."""
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    sections: tuple[Section, ...] = ()
    """Filled only when asked for (``sections=True``)."""

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)


# A function that returns exactly `size` bytes at `offset`, or raises ElfError.
_Read = Callable[[int, int], bytes]


def parse_elf(data: bytes, *, sections: bool = False) -> ElfInfo:
    """Parse an ELF file held in *data*; raises :class:`ElfError` only."""

    def read(offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > len(data):
            raise ElfError(f"truncated: {size} bytes at offset {offset} past the end")
        return data[offset : offset + size]

    return _parse(read, len(data), sections=sections)


def read_elf(path: str | os.PathLike[str], *, sections: bool = False) -> ElfInfo:
    """Parse the ELF file at *path*, reading only the parts it needs. Raises
    :class:`ElfError` for a file that is not a readable ELF file, :class:`OSError`
    when it cannot be opened or read."""
    with Path(path).open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        return _parse(_file_reader(handle, size), size, sections=sections)


def read_soname(path: str | os.PathLike[str]) -> str | None:
    """The ``DT_SONAME`` of the shared object at *path* (None when it has none)."""
    return read_elf(path).soname


def read_needed(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The ``DT_NEEDED`` entries of the ELF file at *path*, in order."""
    return read_elf(path).needed


def is_elf(path: str | os.PathLike[str]) -> bool:
    """Whether *path* starts with the ELF magic (False when it cannot be read)."""
    try:
        with Path(path).open("rb") as handle:
            return handle.read(4) == MAGIC
    except OSError:
        return False


def _file_reader(handle: BinaryIO, size: int) -> _Read:
    def read(offset: int, count: int) -> bytes:
        if offset < 0 or count < 0 or offset + count > size:
            raise ElfError(f"truncated: {count} bytes at offset {offset} past the end")
        handle.seek(offset)
        chunk = handle.read(count)
        if len(chunk) != count:
            raise ElfError(f"short read at offset {offset}")
        return chunk

    return read


@dataclass(frozen=True)
class _Layout:
    """The struct formats of one ELF class and byte order."""

    bits: int
    order: str

    @property
    def word(self) -> str:
        return "Q" if self.bits == 64 else "I"

    def unpack(self, fmt: str, data: bytes) -> tuple[int, ...]:
        return struct.unpack(self.order + fmt, data)


def _parse(read: _Read, size: int, *, sections: bool) -> ElfInfo:
    ident = read(0, 16)
    if ident[:4] != MAGIC:
        raise ElfError("not an ELF file (bad magic)")
    if ident[4] not in (1, 2):
        raise ElfError(f"unknown ELF class {ident[4]}")
    if ident[5] not in (1, 2):
        raise ElfError(f"unknown ELF data encoding {ident[5]}")
    layout = _Layout(64 if ident[4] == 2 else 32, "<" if ident[5] == 1 else ">")
    w = layout.word
    header_format = f"HHI{w}{w}{w}IHHHHHH"
    header = layout.unpack(header_format, read(16, struct.calcsize(layout.order + header_format)))
    kind, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, shstrndx = header
    segments = _program_headers(read, layout, phoff, phentsize, phnum)
    loads = [
        (vaddr, offset, filesz) for ptype, offset, vaddr, filesz in segments if ptype == PT_LOAD
    ]
    dynamic = next(((off, sz) for ptype, off, _, sz in segments if ptype == PT_DYNAMIC), None)
    soname: str | None = None
    needed: list[str] = []
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    if dynamic is not None:
        entries = _dynamic_entries(read, layout, *dynamic)
        strtab = next((v for tag, v in entries if tag == DT_STRTAB), None)
        strsz = next((v for tag, v in entries if tag == DT_STRSZ), None)
        if strtab is not None:
            table = _StringTable(read, size, _file_offset(loads, strtab), strsz)
            for tag, value in entries:
                if tag == DT_NEEDED and len(needed) < MAX_NEEDED:
                    needed.append(table.get(value))
                elif tag == DT_SONAME and soname is None:
                    soname = table.get(value)
                elif tag == DT_RPATH and not rpath:
                    rpath = _split_path(table.get(value))
                elif tag == DT_RUNPATH and not runpath:
                    runpath = _split_path(table.get(value))
    table_entries: tuple[Section, ...] = ()
    if sections and shoff:
        table_entries = _sections(read, size, layout, shoff, shentsize, shnum, shstrndx)
    return ElfInfo(
        bits=layout.bits,
        little_endian=layout.order == "<",
        machine=machine,
        kind=kind,
        soname=soname,
        needed=tuple(needed),
        rpath=rpath,
        runpath=runpath,
        sections=table_entries,
    )


def _program_headers(
    read: _Read, layout: _Layout, phoff: int, phentsize: int, phnum: int
) -> list[tuple[int, int, int, int]]:
    """(type, file offset, virtual address, size in the file) of each segment."""
    if phoff == 0 or phnum == 0:
        return []
    if layout.bits == 64:
        fmt, names = "IIQQQQQQ", (0, 2, 3, 5)
    else:
        fmt, names = "IIIIIIII", (0, 1, 2, 4)
    needed = struct.calcsize(layout.order + fmt)
    if phentsize < needed:
        raise ElfError(f"program header entries of {phentsize} bytes are too small")
    count = min(phnum, MAX_PROGRAM_HEADERS)
    table = read(phoff, phentsize * count)
    result = []
    for index in range(count):
        fields = layout.unpack(fmt, table[index * phentsize : index * phentsize + needed])
        kind, offset, address, size = (fields[i] for i in names)
        result.append((kind, offset, address, size))
    return result


def _dynamic_entries(read: _Read, layout: _Layout, offset: int, size: int) -> list[tuple[int, int]]:
    fmt = "qQ" if layout.bits == 64 else "iI"
    entry = struct.calcsize(layout.order + fmt)
    count = min(size // entry, MAX_DYNAMIC_ENTRIES)
    data = read(offset, entry * count)
    entries = []
    for index in range(count):
        tag, value = layout.unpack(fmt, data[index * entry : (index + 1) * entry])
        if tag == DT_NULL:
            break
        entries.append((tag, value))
    return entries


def _file_offset(loads: list[tuple[int, int, int]], address: int) -> int:
    """Where the byte the loader maps at *address* lies in the file."""
    for vaddr, offset, filesz in loads:
        if vaddr <= address < vaddr + filesz:
            return offset + (address - vaddr)
    raise ElfError(f"address {address:#x} of the string table is in no loaded segment")


class _StringTable:
    """NUL-terminated strings at offsets into a table, each read on its own (the
    ``.dynstr`` of a large C++ library runs to megabytes)."""

    def __init__(self, read: _Read, file_size: int, offset: int, size: int | None) -> None:
        self.read = read
        self.offset = offset
        self.end = min(file_size, offset + size) if size is not None else file_size

    def get(self, index: int) -> str:
        start = self.offset + index
        if index < 0 or start >= self.end:
            raise ElfError(f"string offset {index} is outside the string table")
        chunk = self.read(start, min(MAX_STRING, self.end - start))
        end = chunk.find(b"\0")
        if end < 0:
            raise ElfError(f"string at offset {index} is not terminated")
        return chunk[:end].decode("utf-8", errors="replace")


def _split_path(value: str) -> tuple[str, ...]:
    return tuple(part for part in value.split(":") if part)


def _sections(
    read: _Read,
    size: int,
    layout: _Layout,
    shoff: int,
    shentsize: int,
    shnum: int,
    shstrndx: int,
) -> tuple[Section, ...]:
    w = layout.word
    fmt = f"II{w}{w}{w}{w}II{w}{w}"
    needed = struct.calcsize(layout.order + fmt)
    if shentsize < needed:
        raise ElfError(f"section header entries of {shentsize} bytes are too small")
    first = layout.unpack(fmt, read(shoff, needed))
    # More than 0xff00 sections: the count and the names' index live in entry 0.
    count = shnum or first[5]
    if shstrndx == 0xFFFF:
        shstrndx = first[6]
    count = min(count, MAX_SECTIONS, max(0, (size - shoff) // shentsize))
    table = read(shoff, shentsize * count)
    raw = [
        layout.unpack(fmt, table[index * shentsize : index * shentsize + needed])
        for index in range(count)
    ]
    if not 0 <= shstrndx < len(raw):
        return tuple(Section("", e[1], e[4], e[5]) for e in raw)
    names = raw[shstrndx]
    table_names = _StringTable(read, size, names[4], names[5])
    result = []
    for entry in raw:
        try:
            name = table_names.get(entry[0])
        except ElfError:
            name = ""
        result.append(Section(name, entry[1], entry[4], 0 if entry[1] == SHT_NOBITS else entry[5]))
    return tuple(result)
