"""What the target's own shared objects (extension modules, bundled libraries) ask of
the machine: the CUDA/ROCm SONAMEs they need (``DT_NEEDED``) and the GPU
architectures their kernels (``.nv_fatbin``) carry code for. Read as bytes, bounded,
the ``nvidia-*`` wheels' own folder left out."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from wheelwise.doctor.elf import ElfError, read_elf
from wheelwise.doctor.fatbin import FatbinCode, FatbinError, read_fatbin_file
from wheelwise.doctor.library_names import parse_library_name

__all__ = ["SharedObjects", "scan_shared_objects"]

# "_C.cpython-312-x86_64-linux-gnu.so", "libtorch_cuda.so", "libfoo.so.1.2".
_SHARED_OBJECT = re.compile(r"\.so(?:\.[0-9]+)*$")
MAX_SCANNED_FILES = 200_000
MAX_SCANNED_OBJECTS = 20_000
# How many of the files that need a SONAME are named.
MAX_CONSUMERS = 5


@dataclass(frozen=True)
class SharedObjects:
    needed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """CUDA/ROCm SONAME -> (some of) the files that need it, relative to their site
    folder."""
    gpu_code: Mapping[str, FatbinCode] = field(default_factory=dict)
    """File (relative to its site folder) -> the GPU code of its readable fat binary."""
    scanned: int = 0
    complete: bool = True


def scan_shared_objects(site_dirs: Iterable[Path]) -> SharedObjects:
    needed: dict[str, list[str]] = {}
    gpu_code: dict[str, FatbinCode] = {}
    visited = objects = 0
    for site in site_dirs:
        top = str(site)
        for current, folders, files in os.walk(top):
            if current == top:
                folders[:] = [f for f in folders if f != "nvidia" and not f.endswith(".dist-info")]
            folders[:] = [f for f in folders if f != "__pycache__"]
            for name in files:
                visited += 1
                if visited > MAX_SCANNED_FILES or objects >= MAX_SCANNED_OBJECTS:
                    return SharedObjects(_sorted(needed), gpu_code, objects, complete=False)
                if not _SHARED_OBJECT.search(name):
                    continue
                objects += 1
                path = Path(current, name)
                relative = path.relative_to(site).as_posix()
                try:
                    info = read_elf(path, sections=True)
                except (ElfError, OSError):
                    continue
                for soname in info.dynamic.needed:
                    if parse_library_name(soname) is not None:
                        users = needed.setdefault(soname, [])
                        if len(users) < MAX_CONSUMERS:
                            users.append(relative)
                section = info.section(".nv_fatbin")
                if section is not None and section.size:
                    try:
                        gpu_code[relative] = read_fatbin_file(path, section.offset, section.size)
                    except (FatbinError, OSError):
                        continue
    return SharedObjects(_sorted(needed), gpu_code, objects)


def _sorted(found: Mapping[str, list[str]]) -> dict[str, tuple[str, ...]]:
    return {soname: tuple(found[soname]) for soname in sorted(found)}
