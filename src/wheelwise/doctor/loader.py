"""Finding a shared library the way the dynamic loader (``ld.so``) would for the
target interpreter, without loading it: the folders of ``LD_LIBRARY_PATH``, then the
loader cache ``/etc/ld.so.cache``, then the default folders; a file whose ELF header
does not suit the target's machine (a 32-bit copy, another architecture) is passed
over, as the loader passes it over.

Also where else a library lies that the loader would not find: the folders
``/etc/ld.so.conf`` lists (whose libraries the loader sees only once ``ldconfig`` has
written them to the cache) and folders the caller names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from wheelwise.doctor.context import MachineRoots
from wheelwise.doctor.elf import read_header
from wheelwise.doctor.ldcache import CacheEntry, parse_ld_so_cache

__all__ = [
    "LD_LIBRARY_PATH",
    "LD_SO_CACHE",
    "LD_SO_CONF",
    "FoundLibrary",
    "Loader",
    "machine_path",
    "parse_ld_so_conf",
    "split_library_path",
]

LD_LIBRARY_PATH = "LD_LIBRARY_PATH"
LD_SO_CACHE = "/etc/ld.so.cache"
LD_SO_CONF = "/etc/ld.so.conf"
# Debian-style multiarch folder names, by platform.machine().
_MULTIARCH = {
    "x86_64": "x86_64-linux-gnu",
    "aarch64": "aarch64-linux-gnu",
    "ppc64le": "powerpc64le-linux-gnu",
    "s390x": "s390x-linux-gnu",
    "riscv64": "riscv64-linux-gnu",
    "i686": "i386-linux-gnu",
    "i386": "i386-linux-gnu",
    "armv7l": "arm-linux-gnueabihf",
}
_MAX_CACHE_BYTES = 64 << 20
_MAX_CONF_FILES = 256
_MAX_CONF_DEPTH = 8

# How the loader reaches a library.
VIA_ENVIRONMENT = "LD_LIBRARY_PATH"
VIA_CACHE = "ld.so.cache"
VIA_DEFAULT = "default folder"


@dataclass(frozen=True)
class FoundLibrary:
    """A library as the loader would open it: *path* is the name it opens (often a
    symbolic link), *real_path* the file the links end at (both as paths of the
    machine, ``/usr/lib/...``), *via* how the loader reaches it."""

    name: str
    path: str
    real_path: str
    via: str

    @property
    def file_name(self) -> str:
        return PurePosixPath(self.real_path).name

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "file": self.real_path, "via": self.via}


def _join(folder: str, name: str) -> str:
    return str(PurePosixPath(folder) / name)


def machine_path(roots: MachineRoots, path: str | os.PathLike[str]) -> str:
    """*path* (under *roots*) as the machine names it: ``/usr/lib/...``."""
    text = os.fspath(path)
    root = os.fspath(roots.root)
    if root == "/" or not Path(text).is_absolute():
        return text
    # The root itself may lie behind a symbolic link that realpath() resolved.
    for base in dict.fromkeys((root, os.path.realpath(root))):
        relative = os.path.relpath(text, base)
        if relative == os.curdir:
            return "/"
        if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
            return "/" + relative
    return text


def split_library_path(value: str) -> list[str]:
    """``LD_LIBRARY_PATH`` folders: glibc separates them by colons or semicolons. An
    empty entry means the current folder; doctor leaves those out."""
    return [part for part in re.split(r"[:;]", value) if part]


def parse_ld_so_conf(text: str) -> list[tuple[str, str]]:
    """The lines of one ``ld.so.conf`` file, in order, as ``("folder", path)`` and
    ``("include", pattern)``: ``ldconfig`` reads an included file where its
    ``include`` line stands. ``#`` starts a comment; ``hwcap`` lines are ignored; a
    folder may carry an old ``=TYPE`` suffix, and several may share a line."""
    entries: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if words[0] == "include":
            entries += [("include", pattern) for pattern in words[1:]]
        elif words[0] != "hwcap":
            for word in line.replace(",", " ").replace(":", " ").split():
                folder = word.split("=", 1)[0]
                if folder:
                    entries.append(("folder", folder))
    return entries


@dataclass
class Loader:
    """The loader's view for one target: its machine (``platform.machine()``; ""
    accepts any ELF file) and the environment it runs with."""

    roots: MachineRoots
    environ: Mapping[str, str]
    machine: str = ""
    _cache: list[CacheEntry] | None = field(default=None, init=False, repr=False)
    _cache_state: str = field(default="", init=False, repr=False)
    _conf: list[str] | None = field(default=None, init=False, repr=False)

    def environment_folders(self) -> list[str]:
        """``LD_LIBRARY_PATH``'s folders (ones with loader variables such as $ORIGIN
        left out)."""
        value = self.environ.get(LD_LIBRARY_PATH, "")
        return [part for part in split_library_path(value) if "$" not in part]

    def default_folders(self) -> list[str]:
        folders = []
        triplet = _MULTIARCH.get(self.machine.lower())
        if triplet:
            folders += [f"/lib/{triplet}", f"/usr/lib/{triplet}"]
        return [*folders, "/lib64", "/usr/lib64", "/lib", "/usr/lib"]

    def cache_entries(self) -> list[CacheEntry]:
        """The loader cache's entries; [] when it is missing or unreadable (then
        :attr:`cache_state` says which)."""
        if self._cache is None:
            self._cache = []
            path = self.roots.path(LD_SO_CACHE)
            try:
                with path.open("rb") as handle:
                    data = handle.read(_MAX_CACHE_BYTES)
            except FileNotFoundError:
                self._cache_state = "missing"
                return self._cache
            except OSError as exc:
                self._cache_state = f"unreadable ({exc.strerror or exc})"
                return self._cache
            entries = parse_ld_so_cache(data)
            if entries is None:
                self._cache_state = "not in a format this version reads"
            else:
                self._cache, self._cache_state = entries, "read"
        return self._cache

    @property
    def cache_state(self) -> str:
        self.cache_entries()
        return self._cache_state

    def _suits(self, path: str) -> bool:
        header = read_header(self.roots.path(path))
        return header is not None and (not self.machine or header.suits(self.machine))

    def _found(self, name: str, path: str, via: str) -> FoundLibrary:
        rooted = self.roots.path(path)
        try:
            real = os.path.realpath(rooted)
        except (OSError, ValueError):
            real = os.fspath(rooted)
        return FoundLibrary(name, path, machine_path(self.roots, real), via)

    def find(self, name: str) -> FoundLibrary | None:
        """*name* (``libcuda.so.1``) as the loader would find it, or None."""
        for folder in self.environment_folders():
            path = _join(folder, name)
            if self._suits(path):
                return self._found(name, path, VIA_ENVIRONMENT)
        for entry in self.cache_entries():
            if entry.name == name and self._suits(entry.path):
                return self._found(name, entry.path, VIA_CACHE)
        for folder in self.default_folders():
            path = _join(folder, name)
            if self._suits(path):
                return self._found(name, path, VIA_DEFAULT)
        return None

    def conf_folders(self) -> list[str]:
        """The folders ``/etc/ld.so.conf`` lists, following ``include``s."""
        if self._conf is None:
            self._conf = []
            seen: set[str] = set()
            self._read_conf(LD_SO_CONF, seen, 0)
        return list(self._conf)

    def _read_conf(self, path: str, seen: set[str], depth: int) -> None:
        assert self._conf is not None
        if path in seen or len(seen) >= _MAX_CONF_FILES or depth > _MAX_CONF_DEPTH:
            return
        seen.add(path)
        try:
            text = self.roots.path(path).read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            return
        for kind, value in parse_ld_so_conf(text):
            if kind == "folder":
                normal = str(PurePosixPath(value))  # "/usr/lib/wsl/lib/" lists the same folder
                if normal not in self._conf:
                    self._conf.append(normal)
                continue
            # ldconfig's globs: relative to the including file's folder; patterns in
            # the last component only.
            absolute = PurePosixPath(path).parent / value
            try:
                matches = sorted(self.roots.path(str(absolute.parent)).glob(absolute.name))
            except (OSError, ValueError):
                continue
            for match in matches:
                self._read_conf(machine_path(self.roots, match), seen, depth + 1)

    def locate(self, name: str, folders: Iterable[str]) -> list[str]:
        """Every file called *name* in *folders* that suits the target, as machine
        paths (for saying where a library is when the loader cannot find it)."""
        found = []
        for folder in dict.fromkeys(folders):
            path = _join(folder, name)
            if self._suits(path):
                found.append(path)
        return found

    def searched(self) -> dict[str, Sequence[str] | str]:
        """What :meth:`find` looks at, for the report."""
        return {
            "LD_LIBRARY_PATH": self.environment_folders(),
            "ld.so.cache": self.cache_state,
            "default folders": self.default_folders(),
        }
