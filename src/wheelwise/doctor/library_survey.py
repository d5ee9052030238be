"""Every CUDA/ROCm library copy the target's process could load, where it came from,
its version, and which copy of each SONAME wins (:mod:`wheelwise.doctor.search_path`
gives the order).

A copy's version comes from, in order: its file name when that says more than the
SONAME (``libcudart.so.12.4.127``), the ``nvidia-*`` wheel or conda package that
installed it (when its major matches the SONAME's: ``nvidia-cublas-cu12 12.4.5.8``
for ``libcublas.so.12``), else the SONAME itself (``libcublas.so.12``: 12). Files are
parsed as bytes (:mod:`wheelwise.doctor.elf`), never loaded; a file whose ELF header
is for another machine than the target's is passed over, as the loader passes it over.

The survey is made once per :class:`~wheelwise.doctor.context.DoctorContext` and
shared by the probes that need it.
"""

from __future__ import annotations

import os
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from wheelwise.doctor.context import DoctorContext
from wheelwise.doctor.distributions import (
    MAX_METADATA_BYTES,
    InstalledDistribution,
    installed_distributions,
    record_files,
)
from wheelwise.doctor.elf import ElfError, ElfInfo, read_elf
from wheelwise.doctor.fatbin import FatbinCode
from wheelwise.doctor.library_names import parse_library_name, version_key
from wheelwise.doctor.search_path import (
    FRAMEWORK,
    PRELOAD,
    Folder,
    Rank,
    SearchPath,
    conda_prefixes,
    search_path,
)
from wheelwise.doctor.shared_objects import scan_shared_objects
from wheelwise.untrusted_json import loads_json

__all__ = [
    "JAX_PRELOADED",
    "SEARCH_RULE",
    "LibraryCopy",
    "Survey",
    "survey",
    "take_survey",
]

SEARCH_RULE = (
    "LD_PRELOAD first; then the nvidia-* wheel copies JAX's CUDA plugin loads by path; "
    "then LD_LIBRARY_PATH in order; then the environment's own copies (the nvidia-* "
    "wheels, which PyTorch and the wheels themselves find through DT_RUNPATH, then the "
    "conda environment's lib/); then the libraries /etc/ld.so.cache lists (ldconfig's "
    "cache of the ld.so.conf folders); then the default folders. A SONAME already "
    "loaded is not looked up again; a file for another machine is passed over."
)

# The SONAMEs jax-cuda12-plugin / jax-cuda13-plugin load from the nvidia-* wheels by
# path when it starts (jax_plugins/xla_cuda*/__init__.py, _load_nvidia_libraries).
JAX_PRELOADED = frozenset(
    {
        "libcudart.so.12",
        "libcudart.so.13",
        "libnvrtc.so.12",
        "libnvrtc.so.13",
        "libcublas.so.12",
        "libcublasLt.so.12",
        "libcublas.so.13",
        "libcublasLt.so.13",
        "libnccl.so.2",
        "libcupti.so.12",
        "libcupti.so.13",
        "libcusparse.so.12",
        "libcusolver.so.11",
        "libcusolver.so.12",
        "libcufft.so.11",
        "libcufft.so.12",
        "libnvshmem_host.so.3",
        "libcudnn.so.9",
    }
)
_JAX_PLUGIN = re.compile(r"jax-cuda[0-9]+-plugin")
# conda-meta records of the packages that ship CUDA/ROCm libraries.
_CONDA_PACKAGES = ("cuda-", "libcu", "libnv", "nccl", "libnccl", "cudnn", "cudatoolkit", "cupti")


@dataclass(frozen=True)
class LibraryCopy:
    """One file holding a CUDA/ROCm library."""

    stem: str
    soname: str
    version: str
    version_from: str
    """``file name``, ``wheel``, ``conda package`` or ``SONAME``."""
    path: str
    """The path the loader opens (the folder's and the SONAME's, or the preload entry)."""
    actual: Path
    kind: str
    """What holds it: ``nvidia wheel``, ``conda``, ``CUDA toolkit``, ``LD_PRELOAD``..."""
    provider: str = ""
    """``nvidia-cublas-cu12 12.4.5.8`` or ``conda cuda-cudart 12.4.127``."""
    distribution: str | None = None
    """The ``nvidia-*`` distribution that installed it."""
    searched: str | None = None
    """How the loader reaches it (``LD_PRELOAD``, ``JAX``, ``LD_LIBRARY_PATH``,
    ``environment``, ``ld.so.cache``, ``default folder``); None: it does not."""
    rank: Rank | None = None

    @property
    def release(self) -> tuple[int, int] | None:
        """(major, minor) when the version is known that precisely (a SONAME alone
        says nothing of the minor: every CUDA 11 runtime is ``libcudart.so.11.0``)."""
        key = version_key(self.version)
        if self.version_from == "SONAME" or key is None or len(key) < 2:
            return None
        return key[0], key[1]

    @property
    def is_own(self) -> bool:
        """A copy the environment itself installed, reached as such (through the
        packages' RUNPATH, or loaded by path by a framework)."""
        return self.searched in ("environment", "JAX")

    @property
    def where(self) -> str:
        """How a message names where it lies."""
        holder = f"{self.provider} ({self.kind})" if self.provider else self.kind
        return f"{self.path}, {holder}"

    def to_fact(self, winner: bool) -> dict[str, Any]:
        return {
            "name": self.stem,
            "soname": self.soname,
            "version": self.version,
            "version_from": self.version_from,
            "path": self.path,
            "kind": self.kind,
            "provider": self.provider or None,
            "searched": self.searched,
            "winner": winner,
        }


@dataclass(frozen=True)
class Survey:
    """What the target's process would find."""

    linux: bool
    search: SearchPath | None
    copies: tuple[LibraryCopy, ...] = ()
    winners: Mapping[str, LibraryCopy] = field(default_factory=dict)
    """The copy that wins, by SONAME."""
    needed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """CUDA/ROCm SONAMEs the target's own shared objects need, with (some of) those
    that need them, relative to their site folder."""
    gpu_code: Mapping[str, FatbinCode] = field(default_factory=dict)
    """The target's shared objects with a readable fat binary, and its GPU code."""
    distributions: tuple[InstalledDistribution, ...] = ()
    frameworks: tuple[str, ...] = ()
    """Installed frameworks that load libraries by path (``jax-cuda12-plugin 0.7.2``)."""
    scanned: int = 0
    scan_complete: bool = True

    @property
    def preloaded(self) -> tuple[LibraryCopy, ...]:
        return tuple(c for c in self.copies if c.searched == "LD_PRELOAD")

    def in_use(self, stem: str) -> list[LibraryCopy]:
        """The winning copy of each SONAME of *stem* the process loads: preloaded,
        needed by the target's packages, or shipped by the environment itself."""
        sonames = {c.soname for c in self.preloaded if c.stem == stem}
        sonames |= {s for s in self.needed if _stem(s) == stem}
        sonames |= {c.soname for c in self.copies if c.stem == stem and c.is_own}
        return [self.winners[s] for s in sorted(sonames) if s in self.winners]


def _stem(soname: str) -> str | None:
    name = parse_library_name(soname)
    return name.stem if name else None


class _PerContext:
    """One survey per context, made by whichever probe asks first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[
            int, tuple[weakref.ref[DoctorContext], threading.Lock, list[Survey]]
        ] = {}

    def get(self, context: DoctorContext, make: Callable[[DoctorContext], Survey]) -> Survey:
        key = id(context)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0]() is not context:
                ref = weakref.ref(context, lambda _: self._forget(key))
                entry = (ref, threading.Lock(), [])
                self._entries[key] = entry
        _, lock, made = entry
        with lock:
            if not made:
                made.append(make(context))
            return made[0]

    def _forget(self, key: int) -> None:
        with self._lock:
            self._entries.pop(key, None)


_SURVEYS = _PerContext()


def survey(context: DoctorContext) -> Survey:
    """The survey of *context*'s target (made once, shared)."""
    return _SURVEYS.get(context, take_survey)


def take_survey(context: DoctorContext) -> Survey:
    target = context.target
    site_dirs = target.site_dirs
    distributions = installed_distributions(target)
    if target.markers.get("sys_platform") != "linux":
        return Survey(linux=False, search=None, distributions=distributions)
    prefixes = [target.prefix, Path(str(target.info.get("base_prefix", target.prefix)))]
    machine = target.markers.get("platform_machine", "")
    search = search_path(
        roots=context.roots,
        environ=context.environ,
        site_dirs=site_dirs,
        prefixes=prefixes,
        machine=machine,
    )
    owners = _wheel_owners(distributions)
    for prefix in conda_prefixes(prefixes):
        owners.update(_conda_owners(prefix))
    conda_prefix = context.environ.get("CONDA_PREFIX", "")
    if conda_prefix.startswith("/"):
        owners.update(_conda_owners(context.roots.path(conda_prefix)))
    copies: list[LibraryCopy] = []
    for index, entry in enumerate(search.preload):
        if entry.actual is not None:
            copies += _copies_of_file(entry.shown, entry.actual, (PRELOAD, index), owners, machine)
    for folder in search.folders:
        copies += _copies_in(folder, owners, machine)
    frameworks = tuple(d.spec for d in distributions if _JAX_PLUGIN.fullmatch(d.name))
    if frameworks:
        copies = [
            replace(c, searched="JAX", rank=(FRAMEWORK, 0))
            if c.kind == "nvidia wheel" and c.rank is not None and c.soname in JAX_PRELOADED
            else c
            for c in copies
        ]
    objects = scan_shared_objects(site_dirs)
    return Survey(
        linux=True,
        search=search,
        copies=tuple(copies),
        winners=_winners(copies),
        needed=objects.needed,
        gpu_code=objects.gpu_code,
        distributions=distributions,
        frameworks=frameworks,
        scanned=objects.scanned,
        scan_complete=objects.complete,
    )


def _winners(copies: Iterable[LibraryCopy]) -> dict[str, LibraryCopy]:
    """By SONAME, the copy the loader takes first."""
    winners: dict[str, LibraryCopy] = {}
    for copy in copies:
        if copy.rank is None:
            continue
        best = winners.get(copy.soname)
        if best is None or best.rank is None or copy.rank < best.rank:
            winners[copy.soname] = copy
    return winners


# -- copies -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Owner:
    spec: str
    version: str
    distribution: str | None


def _wheel_owners(distributions: Iterable[InstalledDistribution]) -> dict[str, _Owner]:
    """Library files of the ``nvidia-*`` distributions, by absolute normalized path."""
    owners: dict[str, _Owner] = {}
    for dist in distributions:
        if not dist.name.startswith("nvidia-"):
            continue
        owner = _Owner(dist.spec, dist.version, dist.name)
        for relative in record_files(dist):
            if ".so" in relative:
                owners[os.path.normpath(dist.site / relative)] = owner
    return owners


def _conda_owners(prefix: Path) -> dict[str, _Owner]:
    """Library files of the CUDA packages of the conda environment at *prefix*."""
    owners: dict[str, _Owner] = {}
    try:
        records = sorted((prefix / "conda-meta").glob("*.json"))
    except OSError:
        return owners
    for record in records:
        if not record.name.startswith(_CONDA_PACKAGES):
            continue
        try:
            if record.stat().st_size > MAX_METADATA_BYTES:
                continue
            document = loads_json(record.read_bytes())
        except (OSError, ValueError):
            continue
        if not isinstance(document, dict):
            continue
        name, version, files = document.get("name"), document.get("version"), document.get("files")
        if not isinstance(name, str) or not isinstance(version, str) or not isinstance(files, list):
            continue
        owner = _Owner(f"conda {name} {version}", version, None)
        for relative in files:
            if isinstance(relative, str) and ".so" in relative:
                owners[os.path.normpath(prefix / relative)] = owner
    return owners


def _copies_in(folder: Folder, owners: Mapping[str, _Owner], machine: str) -> list[LibraryCopy]:
    """The library files of *folder* that suit *machine*, one copy per real file,
    looked up by SONAME."""
    try:
        with os.scandir(folder.actual) as scan:
            entries = sorted((e.name, e.path) for e in scan)
    except OSError:
        return []
    names_of: dict[str, list[str]] = {}
    for name, path in entries:
        if parse_library_name(name) is None:
            continue
        real = os.path.realpath(path)
        if Path(real).is_file():
            names_of.setdefault(real, []).append(name)
    copies = []
    for real, names in names_of.items():
        soname = _soname(real, names, machine)
        if soname is None:
            continue
        # The loader opens FOLDER/SONAME: without that name here, the copy is found
        # only by a path or a development link.
        reach = folder.reach(soname) if soname in names else None
        owner = owners.get(os.path.normpath(folder.actual / names[0])) or owners.get(real)
        copies.append(
            _copy(
                soname,
                [*names, Path(real).name],
                path=str(PurePosixPath(folder.shown, soname if reach else names[0])),
                actual=Path(real),
                kind=folder.kind,
                owner=owner,
                searched=reach[0] if reach else None,
                rank=reach[1] if reach else None,
            )
        )
    return copies


def _copies_of_file(
    shown: str, actual: Path, rank: Rank, owners: Mapping[str, _Owner], machine: str
) -> list[LibraryCopy]:
    """The copy an ``LD_PRELOAD`` entry loads, when it is a CUDA/ROCm library."""
    real = os.path.realpath(actual)
    names = [actual.name, Path(real).name]
    if not Path(real).is_file() or all(parse_library_name(n) is None for n in names):
        return []
    soname = _soname(real, [n for n in names if parse_library_name(n) is not None], machine)
    if soname is None:
        return []
    owner = owners.get(os.path.normpath(actual)) or owners.get(real)
    return [
        _copy(
            soname,
            names,
            path=shown,
            actual=Path(real),
            kind="LD_PRELOAD",
            owner=owner,
            searched="LD_PRELOAD",
            rank=rank,
        )
    ]


def _soname(real: str, names: list[str], machine: str) -> str | None:
    """The file's ``DT_SONAME``, else what its most precise name suggests; None for a
    file built for another machine than *machine*."""
    info: ElfInfo | None
    try:
        info = read_elf(real)
    except (ElfError, OSError):
        info = None
    if info is not None and machine and not info.header.suits(machine):
        return None
    soname = info.dynamic.soname if info is not None else None
    if soname and parse_library_name(soname) is not None:
        return soname
    parsed = [p for p in (parse_library_name(n) for n in names) if p is not None]
    parsed.sort(key=lambda p: len(p.version), reverse=True)
    return parsed[0].soname_guess if parsed else None


def _copy(
    soname: str,
    names: list[str],
    *,
    path: str,
    actual: Path,
    kind: str,
    owner: _Owner | None,
    searched: str | None,
    rank: Rank | None,
) -> LibraryCopy:
    parsed_soname = parse_library_name(soname)
    assert parsed_soname is not None
    version, source = _version(parsed_soname.version, names, owner)
    return LibraryCopy(
        stem=parsed_soname.stem,
        soname=soname,
        version=version,
        version_from=source,
        path=path,
        actual=actual,
        kind=kind,
        provider=owner.spec if owner else "",
        distribution=owner.distribution if owner else None,
        searched=searched,
        rank=rank,
    )


def _version(
    soname_version: tuple[int, ...], names: Iterable[str], owner: _Owner | None
) -> tuple[str, str]:
    """The most precise version known, and where it comes from."""
    from_names = max(
        (p.version for p in (parse_library_name(n) for n in names) if p is not None),
        key=len,
        default=(),
    )
    if len(from_names) > len(soname_version):
        return ".".join(map(str, from_names)), "file name"
    owned = version_key(owner.version.split("+")[0]) if owner else None
    if owner and owned and soname_version and owned[0] == soname_version[0]:
        return ".".join(map(str, owned)), "conda package" if owner.distribution is None else "wheel"
    if soname_version:
        return ".".join(map(str, soname_version)), "SONAME"
    return "unknown", "SONAME"
