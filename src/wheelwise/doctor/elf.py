"""What ``doctor`` reads from ELF shared libraries without loading them: the header
(word size, byte order, machine), the dynamic section (SONAME, NEEDED, RUNPATH) and
the bytes of named sections.

Every read is bounded and checked against the file's size: a file that is not ELF,
is truncated or contradicts itself gives ``None`` (or nothing found), never an
exception, because ``doctor`` inspects whatever a broken machine holds.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

__all__ = [
    "ELF_MACHINES",
    "Dynamic",
    "ElfError",
    "ElfHeader",
    "ElfInfo",
    "ElfReader",
    "Section",
    "is_elf",
    "parse_elf",
    "read_dynamic",
    "read_elf",
    "read_header",
    "read_needed",
    "read_soname",
    "read_strings",
    "section_contains",
]

_MAGIC = b"\x7fELF"
# platform.machine() names -> (bits, little-endian, e_machine): what a library must
# be for an interpreter of that machine to load it.
ELF_MACHINES: dict[str, tuple[int, bool, int]] = {
    "x86_64": (64, True, 62),
    "amd64": (64, True, 62),
    "aarch64": (64, True, 183),
    "arm64": (64, True, 183),
    "ppc64le": (64, True, 21),
    "ppc64": (64, False, 21),
    "s390x": (64, False, 22),
    "riscv64": (64, True, 243),
    "i386": (32, True, 3),
    "i686": (32, True, 3),
    "armv7l": (32, True, 40),
}

_SHT_DYNAMIC = 6
_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = (
    0,
    1,
    5,
    10,
    14,
    15,
    29,
)
_SHN_XINDEX = 0xFFFF
# Bounds: no real library comes near them; a hostile or corrupt one must not make
# doctor read gigabytes or loop for long.
_MAX_TABLE_ENTRIES = 65536
_MAX_DYNAMIC_BYTES = 1 << 20
_MAX_NAME = 4096
_CHUNK = 1 << 20
_T = TypeVar("_T")


@dataclass(frozen=True)
class ElfHeader:
    """The parts of an ELF header that decide whether a loader can use the file."""

    bits: int  # 32 or 64
    little_endian: bool
    machine: int  # e_machine (62: x86-64, 183: AArch64, ...)
    kind: int  # e_type (3: shared object or PIE)

    def suits(self, machine: str) -> bool:
        """Whether an interpreter of *machine* (``platform.machine()``) can load it;
        True for a machine this module does not know."""
        wanted = ELF_MACHINES.get(machine.lower())
        return wanted is None or wanted == (self.bits, self.little_endian, self.machine)


@dataclass(frozen=True)
class Dynamic:
    """The dynamic section's names: what the library calls itself and needs."""

    soname: str | None
    needed: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Section:
    name_offset: int
    kind: int
    address: int
    offset: int
    size: int
    link: int


class ElfReader:
    """An ELF file open for reading (any seekable binary file object)."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self._handle = handle
        self._size = size
        self.header: ElfHeader | None = None
        self._order = "<"
        self._fields: tuple[int, ...] = ()
        self._sections: list[_Section] | None = None
        self._names: dict[str, _Section] | None = None
        self._read_header()

    def _read(self, offset: int, length: int) -> bytes:
        """Exactly *length* bytes at *offset*, or b"" when the file is shorter."""
        if offset < 0 or length < 0 or offset + length > self._size:
            return b""
        self._handle.seek(offset)
        data = self._handle.read(length)
        return data if len(data) == length else b""

    def _read_header(self) -> None:
        ident = self._read(0, 16)
        if len(ident) != 16 or ident[:4] != _MAGIC or ident[4] not in (1, 2):
            return
        if ident[5] not in (1, 2):
            return
        bits = 32 if ident[4] == 1 else 64
        self._order = "<" if ident[5] == 1 else ">"
        layout = "HHIIIIIHHHHHH" if bits == 32 else "HHIQQQIHHHHHH"
        body = self._read(16, struct.calcsize(self._order + layout))
        if not body:
            return
        self._fields = struct.unpack(self._order + layout, body)
        kind, machine = self._fields[0], self._fields[1]
        self.header = ElfHeader(bits, self._order == "<", machine, kind)

    # -- sections

    def _section_table(self) -> list[_Section]:
        if self._sections is not None:
            return self._sections
        self._sections = []
        if self.header is None:
            return self._sections
        shoff, entsize, count, names_index = (
            self._fields[5],
            self._fields[10],
            self._fields[11],
            self._fields[12],
        )
        wide = self.header.bits == 64
        layout = self._order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII")
        if shoff == 0 or entsize < struct.calcsize(layout):
            return self._sections
        first = self._section_at(shoff, layout)
        if first is None:
            return self._sections
        if count == 0:  # more sections than e_shnum holds: the count is in section 0
            count = first.size
        if names_index == _SHN_XINDEX:
            names_index = first.link
        if count > _MAX_TABLE_ENTRIES:
            return self._sections
        for index in range(count):
            section = self._section_at(shoff + index * entsize, layout)
            if section is None:
                self._sections = []
                return self._sections
            self._sections.append(section)
        self._names = {}
        if names_index < len(self._sections):
            table = self._sections[names_index]
            for section in self._sections:
                name = self._string(table.offset, table.size, section.name_offset)
                if name and name not in self._names:
                    self._names[name] = section
        return self._sections

    def _section_at(self, offset: int, layout: str) -> _Section | None:
        data = self._read(offset, struct.calcsize(layout))
        if not data:
            return None
        values = struct.unpack(layout, data)
        # (name, type, flags, addr, offset, size, link, ...)
        return _Section(values[0], values[1], values[3], values[4], values[5], values[6])

    def _string(self, table_offset: int, table_size: int, index: int) -> str | None:
        """The NUL-terminated string at *index* of a string table, if it is whole."""
        if index < 0 or index >= table_size:
            return None
        length = min(_MAX_NAME, table_size - index, max(0, self._size - table_offset - index))
        data = self._read(table_offset + index, length)
        end = data.find(b"\0")
        if end < 0:
            return None
        return data[:end].decode("utf-8", "replace")

    def section_names(self) -> list[str]:
        self._section_table()
        return list(self._names or {})

    def section_chunks(self, name: str, overlap: int = 0) -> Iterator[bytes]:
        """The bytes of section *name* in pieces (consecutive pieces share *overlap*
        bytes, so that a search never misses a string cut in two); nothing when the
        file has no such section or it lies outside the file."""
        self._section_table()
        section = (self._names or {}).get(name)
        if section is None or section.offset + section.size > self._size:
            return
        start, end = section.offset, section.offset + section.size
        position = start
        while position < end:
            length = min(_CHUNK, end - position)
            data = self._read(position, length)
            if not data:
                return
            yield data
            if position + length >= end:
                return
            position += max(1, length - overlap)

    # -- the dynamic section

    def dynamic(self) -> Dynamic | None:
        """SONAME, NEEDED and search paths, from the section headers or (for a file
        stripped of them) the program headers, as the loader reads them."""
        if self.header is None:
            return None
        found = self._dynamic_from_sections()
        if found is None:
            found = self._dynamic_from_segments()
        if found is None:
            return None
        entries, strtab_offset, strtab_size = found
        names: dict[int, list[str]] = {}
        for tag, value in entries:
            if tag in (_DT_NEEDED, _DT_SONAME, _DT_RPATH, _DT_RUNPATH):
                text = self._string(strtab_offset, strtab_size, value)
                if text is not None:
                    names.setdefault(tag, []).append(text)
        sonames = names.get(_DT_SONAME, [])
        return Dynamic(
            soname=sonames[0] if sonames else None,
            needed=tuple(names.get(_DT_NEEDED, [])),
            runpath=_search_path(names.get(_DT_RUNPATH, [])),
            rpath=_search_path(names.get(_DT_RPATH, [])),
        )

    def _entries(self, offset: int, size: int) -> list[tuple[int, int]]:
        assert self.header is not None
        layout = self._order + ("qQ" if self.header.bits == 64 else "iI")
        width = struct.calcsize(layout)
        data = self._read(offset, min(size, _MAX_DYNAMIC_BYTES, max(0, self._size - offset)))
        entries = []
        for start in range(0, len(data) - width + 1, width):
            tag, value = struct.unpack_from(layout, data, start)
            if tag == _DT_NULL:
                break
            entries.append((tag, value))
        return entries

    def _dynamic_from_sections(self) -> tuple[list[tuple[int, int]], int, int] | None:
        sections = self._section_table()
        for section in sections:
            if section.kind == _SHT_DYNAMIC and section.link < len(sections):
                strtab = sections[section.link]
                return self._entries(section.offset, section.size), strtab.offset, strtab.size
        return None

    def _dynamic_from_segments(self) -> tuple[list[tuple[int, int]], int, int] | None:
        assert self.header is not None
        phoff, entsize, count = self._fields[4], self._fields[8], self._fields[9]
        wide = self.header.bits == 64
        layout = self._order + ("IIQQQQQQ" if wide else "IIIIIIII")
        if phoff == 0 or entsize < struct.calcsize(layout) or count > _MAX_TABLE_ENTRIES:
            return None
        loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
        dynamic: tuple[int, int] | None = None
        for index in range(count):
            data = self._read(phoff + index * entsize, struct.calcsize(layout))
            if not data:
                return None
            values = struct.unpack(layout, data)
            if wide:
                kind, offset, vaddr, filesz = values[0], values[2], values[3], values[5]
            else:
                kind, offset, vaddr, filesz = values[0], values[1], values[2], values[4]
            if kind == _PT_LOAD:
                loads.append((vaddr, offset, filesz))
            elif kind == _PT_DYNAMIC and dynamic is None:
                dynamic = (offset, filesz)
        if dynamic is None:
            return None
        entries = self._entries(*dynamic)
        tags = dict(reversed(entries))  # the first of each tag counts
        strtab_address, strtab_size = tags.get(_DT_STRTAB), tags.get(_DT_STRSZ, 0)
        if strtab_address is None:
            return None
        for vaddr, offset, filesz in loads:
            if vaddr <= strtab_address < vaddr + filesz:
                return entries, offset + (strtab_address - vaddr), strtab_size
        return None


def _search_path(values: list[str]) -> tuple[str, ...]:
    return tuple(folder for value in values for folder in value.split(":") if folder)


def _look(path: str | os.PathLike[str], look: Callable[[ElfReader], _T], default: _T) -> _T:
    """*look* at the ELF file *path*; *default* when it cannot be opened or read."""
    try:
        with Path(path).open("rb") as handle:
            return look(ElfReader(handle, os.fstat(handle.fileno()).st_size))
    except (OSError, ValueError):  # ValueError: a NUL in a path read from a file
        return default


def read_header(path: str | os.PathLike[str]) -> ElfHeader | None:
    """The ELF header of *path*, or None (missing, unreadable, not ELF)."""
    return _look(path, lambda reader: reader.header, None)


def read_dynamic(path: str | os.PathLike[str]) -> Dynamic | None:
    """The dynamic section's names of *path*, or None."""
    return _look(path, ElfReader.dynamic, None)


def read_soname(path: str | os.PathLike[str]) -> str | None:
    """The SONAME *path* declares (``libcuda.so.1``), or None."""
    dynamic = read_dynamic(path)
    return dynamic.soname if dynamic is not None else None


def section_contains(
    path: str | os.PathLike[str], needle: bytes, sections: tuple[str, ...] = (".rodata",)
) -> bool | None:
    """Whether *needle* occurs in one of *sections* of *path*; None when the file
    cannot be read as ELF or has none of them."""

    def look(reader: ElfReader) -> bool | None:
        present = [name for name in sections if name in reader.section_names()]
        if not needle or not present:
            return None
        return any(
            needle in chunk
            for name in present
            for chunk in reader.section_chunks(name, overlap=len(needle) - 1)
        )

    return _look(path, look, None)


def read_strings(
    path: str | os.PathLike[str],
    section: str = ".rodata",
    min_length: int = 4,
    limit: int = 100_000,
) -> list[str]:
    """Printable ASCII runs of at least *min_length* characters in *section* of *path*
    (what ``strings`` shows), at most *limit* of them; [] when there is none."""

    def look(reader: ElfReader) -> list[str]:
        found: list[str] = []
        pending = b""
        for chunk in reader.section_chunks(section):
            data = pending + chunk
            runs = _printable_runs(data)
            # A run reaching the end of the piece may continue in the next one.
            ends = bool(runs) and runs[-1][0] + len(runs[-1][1]) == len(data)
            pending = runs.pop()[1] if ends else b""
            found += [run.decode("ascii") for _, run in runs if len(run) >= min_length]
            if len(found) >= limit:
                break
        if len(pending) >= min_length:
            found.append(pending.decode("ascii"))
        return found[:limit]

    return _look(path, look, [])


_PRINTABLE = re.compile(rb"[\x20-\x7e]+")


def _printable_runs(data: bytes) -> list[tuple[int, bytes]]:
    return [(match.start(), match.group()) for match in _PRINTABLE.finditer(data)]


# -- the whole-file parser (raises ElfError)

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
