"""Where the target's process finds a shared library, in the dynamic loader's order,
and the other folders that hold CUDA/ROCm libraries without being searched.

The order doctor models (glibc's, for a library the target's packages ask for by
SONAME; see docs/doctor.md):

1. ``LD_PRELOAD``: loaded before anything, and a later request for the same SONAME
   gets the copy already loaded;
2. copies a framework loads by path before its own libraries ask: JAX's CUDA plugin
   loads the ``nvidia-*`` wheels' copies (see :mod:`wheelwise.doctor.library_survey`);
3. ``LD_LIBRARY_PATH``, in order (searched before any ``DT_RUNPATH``);
4. the environment's own copies: the ``nvidia-*`` wheels' folders (which PyTorch,
   CuPy and the wheels themselves reach through ``DT_RUNPATH``), then the conda
   environment's ``lib/``;
5. the libraries the loader cache (``/etc/ld.so.cache``) lists, in its order;
6. the default folders.

Stages 3, 5 and 6 are the machine's loader, :class:`wheelwise.doctor.loader.Loader`
(the same one the machine section finds ``libcuda.so.1`` with). The folders
``/etc/ld.so.conf`` lists are searched only through the cache ``ldconfig`` writes
from them: one not in the cache is listed, not searched.

Paths the process environment names (``LD_LIBRARY_PATH``, ``LD_PRELOAD``,
``CONDA_PREFIX``, ``CUDA_HOME``) and fixed machine paths are read under
``context.roots``; paths the target interpreter reported (its site folders and
prefix) are read as they are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from wheelwise.doctor.context import MachineRoots
from wheelwise.doctor.loader import VIA_CACHE, VIA_DEFAULT, VIA_ENVIRONMENT, Loader

__all__ = [
    "CACHE",
    "DEFAULT",
    "ENVIRONMENT",
    "FRAMEWORK",
    "LIBRARY_PATH",
    "PRELOAD",
    "Folder",
    "PreloadEntry",
    "SearchPath",
    "search_path",
    "split_preload",
]

# The loader's stages, in order (a rank is (stage, position within it)).
PRELOAD, FRAMEWORK, LIBRARY_PATH, ENVIRONMENT, CACHE, DEFAULT = range(6)
Rank = tuple[int, int]
# How the environment's own folders are reached.
VIA_OWN = "environment"
# How many folders of loader-cache entries are looked into.
MAX_CACHE_FOLDERS = 512


@dataclass(frozen=True)
class Folder:
    """A folder that holds (or may hold) libraries."""

    shown: str
    """The path as the user knows it (``/usr/local/cuda/lib64``)."""
    actual: Path
    """Where it is read (under the doctor root for machine paths)."""
    kind: str
    """What it is: ``nvidia wheel``, ``conda``, ``CUDA toolkit``, ``ROCm``, ``system``
    or ``folder``."""
    searched: str | None
    """How the loader searches it (``LD_LIBRARY_PATH``, ``environment``, ``default
    folder``), or None when it does not."""
    rank: Rank | None
    cached: Mapping[str, int] = field(default_factory=dict)
    """Library names the loader cache lists in this folder, with their position in
    the cache: the loader finds those even when it does not search the folder."""

    def reach(self, soname: str) -> tuple[str, Rank] | None:
        """How the loader finds ``FOLDER/SONAME`` first, and when; None: it does not."""
        ways: list[tuple[Rank, str]] = []
        if self.searched is not None and self.rank is not None:
            ways.append((self.rank, self.searched))
        if soname in self.cached:
            ways.append(((CACHE, self.cached[soname]), VIA_CACHE))
        if not ways:
            return None
        rank, how = min(ways)
        return how, rank

    @property
    def order(self) -> Rank | None:
        """Where the folder comes in the search (its first cached library, for a
        folder only the cache reaches)."""
        if self.rank is not None:
            return self.rank
        return (CACHE, min(self.cached.values())) if self.cached else None


@dataclass(frozen=True)
class PreloadEntry:
    """One entry of ``LD_PRELOAD``."""

    shown: str
    actual: Path | None
    """The file it names (None: a bare name the loader finds nowhere)."""


@dataclass(frozen=True)
class SearchPath:
    preload: tuple[PreloadEntry, ...]
    folders: tuple[Folder, ...]
    """The folders the loader reaches, then those it does not."""
    ld_preload: str | None
    ld_library_path: str | None
    cache_state: str = ""
    """What became of ``/etc/ld.so.cache`` (``read``, ``missing``...)."""

    @property
    def searched(self) -> tuple[Folder, ...]:
        """The folders the loader reaches, in its order."""
        reached = [f for f in self.folders if f.order is not None]
        return tuple(sorted(reached, key=lambda f: f.order or (0, 0)))


def split_preload(value: str) -> list[str]:
    """``LD_PRELOAD`` entries: glibc separates them by spaces or colons."""
    return [part for part in re.split(r"[ :]", value) if part]


def wheel_folders(site_dirs: Iterable[Path]) -> list[Path]:
    """``nvidia/*/lib`` of each site folder: where ``nvidia-*`` wheels put libraries
    (``nvidia/cublas/lib``, and ``nvidia/cu13/lib`` for CUDA 13)."""
    found: list[Path] = []
    for site in site_dirs:
        try:
            with os.scandir(site / "nvidia") as scan:
                names = sorted(entry.name for entry in scan if entry.is_dir())
        except OSError:
            continue
        found += [
            site / "nvidia" / name / "lib"
            for name in names
            if (site / "nvidia" / name / "lib").is_dir()
        ]
    return found


def conda_prefixes(prefixes: Iterable[Path]) -> list[Path]:
    """Those of *prefixes* that are conda environments (they have ``conda-meta/``)."""
    return [p for p in dict.fromkeys(prefixes) if (p / "conda-meta").is_dir()]


def toolkit_folders(roots: MachineRoots, environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(shown folder, kind)`` of the CUDA toolkits under ``/usr/local/cuda*``, the
    ones ``CUDA_HOME`` / ``CUDA_PATH`` name, and ROCm under ``/opt/rocm*``."""
    found: list[tuple[str, str]] = []
    for base, pattern, kind in (("/usr/local", "cuda*", "CUDA toolkit"), ("/opt", "rocm*", "ROCm")):
        try:
            names = sorted(p.name for p in roots.path(base).glob(pattern) if p.is_dir())
        except OSError:
            names = []
        for name in names:
            for lib in ("lib64", "lib"):
                if roots.path(f"{base}/{name}/{lib}").is_dir():
                    found.append((f"{base}/{name}/{lib}", kind))
                    break
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        home = environ.get(variable, "")
        if home.startswith("/"):
            found.append((str(PurePosixPath(os.path.normpath(home), "lib64")), "CUDA toolkit"))
    return found


def _key(path: Path) -> str:
    return os.path.realpath(path)


def _cached_by_folder(loader: Loader) -> dict[str, tuple[str, dict[str, int]]]:
    """Resolved folder -> (the folder as the cache names it, {library name: position
    in the cache}); the first entry of each name and folder counts."""
    folders: dict[str, tuple[str, dict[str, int]]] = {}
    for index, entry in enumerate(loader.cache_entries()):
        path = PurePosixPath(entry.path)
        folder = str(path.parent)
        if not folder.startswith("/"):
            continue
        key = _key(loader.roots.path(folder))
        if key not in folders and len(folders) >= MAX_CACHE_FOLDERS:
            continue
        folders.setdefault(key, (folder, {}))[1].setdefault(path.name, index)
    return folders


def search_path(
    *,
    roots: MachineRoots,
    environ: Mapping[str, str],
    site_dirs: Iterable[Path],
    prefixes: Iterable[Path],
    machine: str,
) -> SearchPath:
    """The loader's search order for the target (*site_dirs* and the interpreter's
    *prefixes*: its prefix and base prefix; *machine*: its ``platform.machine()``),
    and the unsearched library folders."""
    site_dirs = list(site_dirs)
    loader = Loader(roots, environ, machine)
    # What each known folder is, by its resolved path.
    kinds: dict[str, tuple[str, str, Path]] = {}
    for folder in wheel_folders(site_dirs):
        kinds.setdefault(_key(folder), (str(folder), "nvidia wheel", folder))
    target_conda = conda_prefixes(prefixes)
    for prefix in target_conda:
        kinds.setdefault(_key(prefix / "lib"), (str(prefix / "lib"), "conda", prefix / "lib"))
    others: list[tuple[str, str, Path]] = []
    conda_prefix = environ.get("CONDA_PREFIX", "")
    if conda_prefix.startswith("/"):
        actual = roots.path(conda_prefix)
        if (actual / "conda-meta").is_dir():
            shown = str(PurePosixPath(os.path.normpath(conda_prefix), "lib"))
            others.append((shown, "conda", actual / "lib"))
    for shown, kind in toolkit_folders(roots, environ):
        others.append((shown, kind, roots.path(shown)))
    for shown, kind, actual in others:
        kinds.setdefault(_key(actual), (shown, kind, actual))

    cached = _cached_by_folder(loader)
    ordered: dict[str, Folder] = {}

    def add(shown: str, actual: Path, searched: str | None, rank: Rank | None, kind: str) -> None:
        key = _key(actual)
        if key in ordered:
            return
        kind = kinds[key][1] if key in kinds else kind
        names = cached[key][1] if key in cached else {}
        ordered[key] = Folder(shown, actual, kind, searched, rank, names)

    for index, shown in enumerate(loader.environment_folders()):
        add(shown, roots.path(shown), VIA_ENVIRONMENT, (LIBRARY_PATH, index), "folder")
    environment = wheel_folders(site_dirs) + [prefix / "lib" for prefix in target_conda]
    for index, folder in enumerate(environment):
        add(str(folder), folder, VIA_OWN, (ENVIRONMENT, index), "folder")
    for index, shown in enumerate(loader.default_folders()):
        add(shown, roots.path(shown), VIA_DEFAULT, (DEFAULT, index), "system")
    # Folders the loader reaches only through its cache, then those it does not reach:
    # the toolkits, the conda environment, ld.so.conf folders ldconfig has not cached.
    for shown in [*(folder for folder, _ in cached.values()), *loader.conf_folders()]:
        if shown.startswith("/") and "\0" not in shown:  # a damaged file names anything
            add(shown, roots.path(shown), None, None, "system")
    for shown, kind, actual in kinds.values():
        add(shown, actual, None, None, kind)

    preload_value = environ.get("LD_PRELOAD")
    preload = tuple(
        _preload_entry(roots, loader, entry) for entry in split_preload(preload_value or "")
    )
    return SearchPath(
        preload,
        tuple(ordered.values()),
        preload_value,
        environ.get("LD_LIBRARY_PATH"),
        loader.cache_state,
    )


def _preload_entry(roots: MachineRoots, loader: Loader, entry: str) -> PreloadEntry:
    if "/" in entry:
        return PreloadEntry(entry, roots.path(entry))
    # A bare name is looked up like a needed library (the environment's RUNPATHs
    # do not apply to it).
    found = loader.find(entry)
    return PreloadEntry(entry, roots.path(found.path) if found is not None else None)
