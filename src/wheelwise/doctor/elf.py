"""Reading ELF shared objects as bytes, without loading them: the header (word size,
byte order, machine), the dynamic segment (``DT_SONAME``, ``DT_NEEDED``,
``DT_RPATH``, ``DT_RUNPATH``) and the section table (names, offsets, sizes, and the
bytes of a named section), for 32- and 64-bit, little- and big-endian files.

``doctor`` inspects libraries that may be broken, for another machine, or hostile:
every count and length read from a file is bounded and checked against the file's
size. :class:`ElfReader`, :func:`parse_elf` and :func:`read_elf` raise
:class:`ElfError` (and :class:`OSError` for a file that cannot be read) for a file
that is not a readable ELF file, so that a misread never passes for an answer; the
``read_*`` and :func:`section_contains` helpers give ``None`` (or nothing) instead,
for callers that only ask whether a file says something.
"""

from __future__ import annotations

import io
import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

from wheelwise.errors import WheelwiseError

__all__ = [
    "ELF_MACHINES",
    "Dynamic",
    "ElfError",
    "ElfHeader",
    "ElfInfo",
    "ElfReader",
    "Section",
    "parse_elf",
    "read_dynamic",
    "read_elf",
    "read_header",
    "read_soname",
    "read_strings",
    "section_contains",
]

MAGIC = b"\x7fELF"
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
    "ppc": (32, False, 20),
}

# Dynamic tags (System V gABI).
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
PT_LOAD, PT_DYNAMIC = 1, 2
SHT_NOBITS = 8
SHN_XINDEX = 0xFFFF

# Bounds: no real library comes near them; a damaged or crafted one must not make
# doctor read gigabytes or loop for long.
MAX_PROGRAM_HEADERS = 4096
MAX_SECTIONS = 65536
MAX_DYNAMIC_ENTRIES = 65536
MAX_NEEDED = 4096
MAX_STRING = 4096
_CHUNK = 1 << 20
_T = TypeVar("_T")


class ElfError(ValueError, WheelwiseError):
    """The bytes are not an ELF file this reader understands (truncated, inconsistent
    offsets, not ELF at all)."""


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
    """The dynamic segment's names: what the library calls itself and needs."""

    soname: str | None = None
    needed: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()


@dataclass(frozen=True)
class Section:
    """One entry of the section table (``.nv_fatbin``, ``.rodata``...): where its
    bytes lie in the file (*size* is 0 for a section that holds none, ``.bss``)."""

    name: str
    type: int
    offset: int
    size: int


@dataclass(frozen=True)
class ElfInfo:
    """What the dynamic loader reads from a shared object, and (when asked for) its
    section table."""

    header: ElfHeader
    dynamic: Dynamic
    sections: tuple[Section, ...] = ()

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)


class ElfReader:
    """An ELF file open for reading (any seekable binary file object of *size*
    bytes). The header is read at once; the rest when asked for. Raises
    :class:`ElfError` only."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self._handle = handle
        self._size = size
        self._sections: tuple[Section, ...] | None = None
        ident = self._read(0, 16)
        if ident[:4] != MAGIC:
            raise ElfError("not an ELF file (bad magic)")
        if ident[4] not in (1, 2):
            raise ElfError(f"unknown ELF class {ident[4]}")
        if ident[5] not in (1, 2):
            raise ElfError(f"unknown ELF data encoding {ident[5]}")
        self._order = "<" if ident[5] == 1 else ">"
        self._wide = ident[4] == 2
        w = self._word
        fields = self._unpack(f"HHI{w}{w}{w}IHHHHHH", 16)
        kind, machine, _, _, self._phoff, self._shoff, _, _, *tables = fields
        self._phentsize, self._phnum, self._shentsize, self._shnum, self._shstrndx = tables
        self.header = ElfHeader(64 if self._wide else 32, self._order == "<", machine, kind)

    @property
    def _word(self) -> str:
        return "Q" if self._wide else "I"

    def _read(self, offset: int, length: int) -> bytes:
        """Exactly *length* bytes at *offset*."""
        if offset < 0 or length < 0 or offset + length > self._size:
            raise ElfError(f"truncated: {length} bytes at offset {offset} past the end")
        self._handle.seek(offset)
        data = self._handle.read(length)
        if len(data) != length:
            raise ElfError(f"short read at offset {offset}")
        return data

    def _unpack(self, layout: str, offset: int) -> tuple[int, ...]:
        layout = self._order + layout
        return struct.unpack(layout, self._read(offset, struct.calcsize(layout)))

    def _string(self, offset: int, end: int, index: int) -> str:
        """The NUL-terminated string at *index* of the string table at *offset*
        (which ends at *end*)."""
        start = offset + index
        if index < 0 or start >= end:
            raise ElfError(f"string offset {index} is outside the string table")
        data = self._read(start, min(MAX_STRING, end - start))
        stop = data.find(b"\0")
        if stop < 0:
            raise ElfError(f"string at offset {index} is not terminated")
        return data[:stop].decode("utf-8", errors="replace")

    # -- the dynamic segment

    def dynamic(self) -> Dynamic:
        """SONAME, NEEDED and search paths, from ``PT_DYNAMIC`` as the loader reads
        them (empty for a file without one)."""
        segments = self._program_headers()
        loads = [(vaddr, offset, size) for kind, offset, vaddr, size in segments if kind == PT_LOAD]
        span = next(((off, size) for kind, off, _, size in segments if kind == PT_DYNAMIC), None)
        if span is None:
            return Dynamic()
        entries = self._dynamic_entries(*span)
        strtab = next((value for tag, value in entries if tag == DT_STRTAB), None)
        strsz = next((value for tag, value in entries if tag == DT_STRSZ), None)
        if strtab is None:
            return Dynamic()
        offset = _file_offset(loads, strtab)
        end = min(self._size, offset + strsz) if strsz is not None else self._size
        soname: str | None = None
        needed: list[str] = []
        rpath: tuple[str, ...] = ()
        runpath: tuple[str, ...] = ()
        for tag, value in entries:
            if tag == DT_NEEDED and len(needed) < MAX_NEEDED:
                needed.append(self._string(offset, end, value))
            elif tag == DT_SONAME and soname is None:
                soname = self._string(offset, end, value)
            elif tag == DT_RPATH and not rpath:
                rpath = _split_path(self._string(offset, end, value))
            elif tag == DT_RUNPATH and not runpath:
                runpath = _split_path(self._string(offset, end, value))
        return Dynamic(soname, tuple(needed), runpath, rpath)

    def _program_headers(self) -> list[tuple[int, int, int, int]]:
        """(type, file offset, virtual address, size in the file) of each segment."""
        if self._phoff == 0 or self._phnum == 0:
            return []
        layout, picks = ("IIQQQQQQ", (0, 2, 3, 5)) if self._wide else ("IIIIIIII", (0, 1, 2, 4))
        width = struct.calcsize(self._order + layout)
        if self._phentsize < width:
            raise ElfError(f"program header entries of {self._phentsize} bytes are too small")
        count = min(self._phnum, MAX_PROGRAM_HEADERS)
        table = self._read(self._phoff, self._phentsize * count)
        segments = []
        for index in range(count):
            start = index * self._phentsize
            values = struct.unpack(self._order + layout, table[start : start + width])
            kind, offset, address, size = (values[i] for i in picks)
            segments.append((kind, offset, address, size))
        return segments

    def _dynamic_entries(self, offset: int, size: int) -> list[tuple[int, int]]:
        layout = self._order + ("qQ" if self._wide else "iI")
        width = struct.calcsize(layout)
        count = min(size // width, MAX_DYNAMIC_ENTRIES)
        data = self._read(offset, width * count)
        entries = []
        for index in range(count):
            tag, value = struct.unpack_from(layout, data, index * width)
            if tag == DT_NULL:
                break
            entries.append((tag, value))
        return entries

    # -- sections

    def sections(self) -> tuple[Section, ...]:
        """The section table (empty for a file without one)."""
        if self._sections is None:
            self._sections = self._section_table() if self._shoff else ()
        return self._sections

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections() if s.name == name), None)

    def _section_table(self) -> tuple[Section, ...]:
        w = self._word
        layout = f"II{w}{w}{w}{w}II{w}{w}"
        width = struct.calcsize(self._order + layout)
        if self._shentsize < width:
            raise ElfError(f"section header entries of {self._shentsize} bytes are too small")
        first = self._unpack(layout, self._shoff)
        # More than 0xff00 sections: the count and the names' index live in entry 0.
        count = self._shnum or first[5]
        names_index = first[6] if self._shstrndx == SHN_XINDEX else self._shstrndx
        count = min(count, MAX_SECTIONS, max(0, (self._size - self._shoff) // self._shentsize))
        table = self._read(self._shoff, self._shentsize * count)
        raw = [
            struct.unpack(
                self._order + layout, table[i * self._shentsize : i * self._shentsize + width]
            )
            for i in range(count)
        ]
        if not 0 <= names_index < len(raw):
            return tuple(Section("", e[1], e[4], _bytes_held(e)) for e in raw)
        names = raw[names_index]
        names_end = min(self._size, names[4] + names[5])
        result = []
        for entry in raw:
            try:
                name = self._string(names[4], names_end, entry[0])
            except ElfError:
                name = ""
            result.append(Section(name, entry[1], entry[4], _bytes_held(entry)))
        return tuple(result)

    def section_chunks(self, name: str, overlap: int = 0) -> Iterator[bytes]:
        """The bytes of section *name* in pieces (consecutive pieces share *overlap*
        bytes, so that a search never misses a string cut in two); nothing when the
        file has no such section."""
        section = self.section(name)
        if section is None:
            return
        end = section.offset + section.size
        if end > self._size:
            raise ElfError(f"section {name} runs past the end of the file")
        position = section.offset
        while position < end:
            length = min(_CHUNK, end - position)
            yield self._read(position, length)
            if position + length >= end:
                return
            position += max(1, length - overlap)


def _bytes_held(entry: tuple[int, ...]) -> int:
    return 0 if entry[1] == SHT_NOBITS else entry[5]


def _file_offset(loads: list[tuple[int, int, int]], address: int) -> int:
    """Where the byte the loader maps at *address* lies in the file."""
    for vaddr, offset, size in loads:
        if vaddr <= address < vaddr + size:
            return offset + (address - vaddr)
    raise ElfError(f"address {address:#x} of the string table is in no loaded segment")


def _split_path(value: str) -> tuple[str, ...]:
    return tuple(part for part in value.split(":") if part)


def _info(reader: ElfReader, sections: bool) -> ElfInfo:
    return ElfInfo(reader.header, reader.dynamic(), reader.sections() if sections else ())


def parse_elf(data: bytes, *, sections: bool = False) -> ElfInfo:
    """Parse an ELF file held in *data*; raises :class:`ElfError` only."""
    return _info(ElfReader(io.BytesIO(data), len(data)), sections)


def read_elf(path: str | os.PathLike[str], *, sections: bool = False) -> ElfInfo:
    """Parse the ELF file at *path*, reading only the parts it needs. Raises
    :class:`ElfError` for a file that is not a readable ELF file, :class:`OSError`
    when it cannot be opened or read."""
    with Path(path).open("rb") as handle:
        return _info(ElfReader(handle, os.fstat(handle.fileno()).st_size), sections)


# -- answers or None: for callers that only ask whether a file says something


def _look(path: str | os.PathLike[str], look: Callable[[ElfReader], _T], default: _T) -> _T:
    """*look* at the ELF file *path*; *default* when it cannot be opened or read."""
    try:
        with Path(path).open("rb") as handle:
            return look(ElfReader(handle, os.fstat(handle.fileno()).st_size))
    except (OSError, ValueError):  # ElfError; ValueError: a NUL in a path read from a file
        return default


def read_header(path: str | os.PathLike[str]) -> ElfHeader | None:
    """The ELF header of *path*, or None (missing, unreadable, not ELF)."""
    return _look(path, lambda reader: reader.header, None)


def read_dynamic(path: str | os.PathLike[str]) -> Dynamic | None:
    """The dynamic segment's names of *path*, or None."""
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
        present = [name for name in sections if reader.section(name) is not None]
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
