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
5. the folders of ``/etc/ld.so.conf`` (``ldconfig``'s cache), then the default ones.

Paths the process environment names (``LD_LIBRARY_PATH``, ``LD_PRELOAD``,
``CONDA_PREFIX``, ``CUDA_HOME``) and fixed machine paths are read under
``context.roots``; paths the target interpreter reported (its site folders and
prefix) are read as they are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from wheelwise.doctor.context import MachineRoots

__all__ = [
    "ENVIRONMENT",
    "FRAMEWORK",
    "LIBRARY_PATH",
    "PRELOAD",
    "SYSTEM",
    "Folder",
    "PreloadEntry",
    "SearchPath",
    "ld_so_conf_folders",
    "search_path",
    "split_library_path",
    "split_preload",
]

# The loader's stages, in order (a rank is (stage, position within it)).
PRELOAD, FRAMEWORK, LIBRARY_PATH, ENVIRONMENT, SYSTEM = range(5)
Rank = tuple[int, int]

# How far ld.so.conf "include" lines are followed, and how many folders are kept.
MAX_INCLUDE_DEPTH = 8
MAX_CONF_FOLDERS = 512
_MULTIARCH = {
    "x86_64": "x86_64-linux-gnu",
    "aarch64": "aarch64-linux-gnu",
    "ppc64le": "powerpc64le-linux-gnu",
    "s390x": "s390x-linux-gnu",
}


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
    """How the loader reaches it (``LD_LIBRARY_PATH``, ``environment``,
    ``ld.so.conf``, ``default``), or None when it does not search it."""
    rank: Rank | None


@dataclass(frozen=True)
class PreloadEntry:
    """One entry of ``LD_PRELOAD``."""

    shown: str
    actual: Path | None
    """The file it names (None: a bare name found in no searched folder)."""


@dataclass(frozen=True)
class SearchPath:
    preload: tuple[PreloadEntry, ...]
    folders: tuple[Folder, ...]
    """Searched folders in the loader's order, then the folders it does not search."""
    ld_preload: str | None
    ld_library_path: str | None

    @property
    def searched(self) -> tuple[Folder, ...]:
        return tuple(f for f in self.folders if f.rank is not None)


def split_preload(value: str) -> list[str]:
    """``LD_PRELOAD`` entries: glibc separates them by spaces or colons."""
    return [part for part in re.split(r"[ :]", value) if part]


def split_library_path(value: str) -> list[str]:
    """``LD_LIBRARY_PATH`` folders: glibc separates them by colons or semicolons. An
    empty entry means the current folder; doctor leaves those out."""
    return [part for part in re.split(r"[:;]", value) if part]


def machine_path(roots: MachineRoots, shown: str) -> Path:
    """Where the machine path *shown* is read."""
    return roots.path(shown)


def ld_so_conf_folders(roots: MachineRoots, conf: str = "/etc/ld.so.conf") -> list[str]:
    """The folders ``/etc/ld.so.conf`` lists, ``include`` lines followed (globs,
    relative to the including file's folder), in order, each once."""
    folders: list[str] = []
    _read_conf(roots, conf, folders, set(), 0)
    return list(dict.fromkeys(folders))[:MAX_CONF_FOLDERS]


def _read_conf(
    roots: MachineRoots, conf: str, folders: list[str], seen: set[str], depth: int
) -> None:
    if depth > MAX_INCLUDE_DEPTH or conf in seen or len(folders) >= MAX_CONF_FOLDERS:
        return
    seen.add(conf)
    try:
        text = roots.path(conf).read_text("utf-8", errors="replace")
    except OSError:
        return
    base = PurePosixPath(conf).parent
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("hwcap "):
            continue
        if line.startswith("include") and line[7:8] in (" ", "\t"):
            for pattern in line[8:].split():
                absolute = base / pattern
                root = roots.path("/")
                try:
                    matches = sorted(root.glob(str(absolute.relative_to("/"))))
                except (OSError, ValueError):
                    continue
                for match in matches:
                    relative = match.relative_to(root).as_posix()
                    _read_conf(roots, "/" + relative, folders, seen, depth + 1)
            continue
        # "dir=TYPE" marks a library type in old formats; the folder is before it.
        for folder in re.split(r"[\s,:]+", line):
            folder = folder.split("=", 1)[0]
            if folder.startswith("/"):
                folders.append(os.path.normpath(folder))


def default_folders(machine: str) -> list[str]:
    """The folders glibc searches after its cache (with the Debian multiarch ones)."""
    triplet = _MULTIARCH.get(machine)
    multiarch = [f"/lib/{triplet}", f"/usr/lib/{triplet}"] if triplet else []
    return [*multiarch, "/lib64", "/usr/lib64", "/lib", "/usr/lib"]


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


def search_path(
    *,
    roots: MachineRoots,
    environ: Mapping[str, str],
    site_dirs: Iterable[Path],
    prefixes: Iterable[Path],
    machine: str,
) -> SearchPath:
    """The loader's search order for the target (*site_dirs* and the interpreter's
    *prefixes*: its prefix and base prefix), and the unsearched library folders."""
    site_dirs = list(site_dirs)
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
        actual = machine_path(roots, conda_prefix)
        if (actual / "conda-meta").is_dir():
            shown = str(PurePosixPath(os.path.normpath(conda_prefix), "lib"))
            others.append((shown, "conda", actual / "lib"))
    for shown, kind in toolkit_folders(roots, environ):
        others.append((shown, kind, machine_path(roots, shown)))
    for shown, kind, actual in others:
        kinds.setdefault(_key(actual), (shown, kind, actual))

    ordered: dict[str, Folder] = {}

    def add(shown: str, actual: Path, searched: str, rank: Rank, default_kind: str) -> None:
        key = _key(actual)
        if key in ordered:
            return
        kind = kinds[key][1] if key in kinds else default_kind
        ordered[key] = Folder(shown, actual, kind, searched, rank)

    library_path = environ.get("LD_LIBRARY_PATH")
    for index, shown in enumerate(split_library_path(library_path or "")):
        add(shown, machine_path(roots, shown), "LD_LIBRARY_PATH", (LIBRARY_PATH, index), "folder")
    environment = wheel_folders(site_dirs) + [prefix / "lib" for prefix in target_conda]
    for index, folder in enumerate(environment):
        add(str(folder), folder, "environment", (ENVIRONMENT, index), "folder")
    system = [(f, "ld.so.conf") for f in ld_so_conf_folders(roots)]
    system += [(f, "default") for f in default_folders(machine)]
    for index, (shown, how) in enumerate(system):
        add(shown, machine_path(roots, shown), how, (SYSTEM, index), "system")
    folders = list(ordered.values())
    for key, (shown, kind, actual) in kinds.items():
        if key not in ordered:
            folders.append(Folder(shown, actual, kind, None, None))
            ordered[key] = folders[-1]

    preload_value = environ.get("LD_PRELOAD")
    preload = tuple(
        _preload_entry(roots, entry, folders) for entry in split_preload(preload_value or "")
    )
    return SearchPath(preload, tuple(folders), preload_value, library_path)


def _preload_entry(roots: MachineRoots, entry: str, folders: list[Folder]) -> PreloadEntry:
    if "/" in entry:
        return PreloadEntry(entry, machine_path(roots, entry))
    # A bare name is looked up like a needed library (the environment's RUNPATHs
    # do not apply to it).
    for folder in folders:
        if folder.searched in ("LD_LIBRARY_PATH", "ld.so.conf", "default"):
            candidate = folder.actual / entry
            if candidate.exists():
                return PreloadEntry(entry, candidate)
    return PreloadEntry(entry, None)
