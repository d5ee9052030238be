"""The NVIDIA driver as the machine's files show it, read without loading anything:
the kernel module's version (``/proc/driver/nvidia/version``, or
``/sys/module/nvidia/version``), each GPU the module drives
(``/proc/driver/nvidia/gpus/*/information``), the NVIDIA display controllers on the
PCI bus, the device nodes, and the user-mode driver libraries (``libcuda.so.1``,
``libnvidia-ml.so.1``) the loader would open, with the version their file names
carry (``libcuda.so.580.95.05``), confirmed from the library's own bytes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from wheelwise.doctor.context import MachineRoots
from wheelwise.doctor.elf import read_soname, section_contains
from wheelwise.doctor.loader import FoundLibrary, Loader
from wheelwise.doctor.machine_files import VersionFile, first_line, read_text
from wheelwise.doctor.pci import NVIDIA, PciDevice, display_devices
from wheelwise.doctor.virtualization import WSL_LIBRARIES

__all__ = [
    "LIBCUDA",
    "LIBNVML",
    "PROC_VERSION",
    "SYS_VERSION",
    "GpuInformation",
    "KernelModule",
    "NvidiaMachine",
    "UserLibrary",
    "library_version",
    "look_at_nvidia",
    "parse_gpu_information",
    "parse_kernel_version",
    "parse_module_version",
    "version_key",
]

PROC_VERSION = "/proc/driver/nvidia/version"
SYS_VERSION = "/sys/module/nvidia/version"
PROC_GPUS = "/proc/driver/nvidia/gpus"
LIBCUDA = "libcuda.so.1"
LIBNVML = "libnvidia-ml.so.1"
# Folders where drivers keep libraries outside the loader's usual search: WSL, GKE
# and older container images, distribution driver folders, CUDA forward
# compatibility packages.
DRIVER_FOLDERS = (
    WSL_LIBRARIES,
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/nvidia",
    "/usr/lib64/nvidia",
    "/usr/local/cuda/compat",
)
# The sections where a user-mode driver keeps the version string it hands the
# kernel module (which refuses any other version).
_VERSION_SECTIONS = (".rodata", ".data")

# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue ..." and
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ..."
_NVRM_RE = re.compile(
    r"NVRM version:[^\n]*?\b(Open )?Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+){1,3})(?!\S)"
)
_VERSION_RE = re.compile(r"\d+(?:\.\d+){1,3}")
# A driver version in a library's file name: a major of three or more digits
# (libcuda.so.1.1 on WSL and Jetson is not one).
_DRIVER_VERSION_RE = re.compile(r"[1-9]\d{2,}(?:\.\d+){1,2}")


@dataclass(frozen=True)
class KernelModule(VersionFile):
    """The loaded kernel module's version file, and its flavor (``open`` or
    ``proprietary``) where the file says."""

    flavor: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        values = super().to_dict()
        if self.flavor:
            values["flavor"] = self.flavor
        return values


@dataclass(frozen=True)
class GpuInformation:
    """One GPU the kernel module drives."""

    address: str
    model: str | None
    minor: int | None

    def to_dict(self) -> dict[str, str | int | None]:
        return {"address": self.address, "model": self.model, "device_minor": self.minor}


@dataclass(frozen=True)
class UserLibrary:
    """A user-mode driver library: where the loader finds it (None: nowhere), the
    version its file name carries, its SONAME, whether its bytes hold that version,
    and where copies lie that the loader would not find."""

    name: str
    found: FoundLibrary | None
    version: str | None = None
    soname: str | None = None
    version_in_library: bool | None = None
    elsewhere: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        if self.found is None:
            return {"found": False, "elsewhere": list(self.elsewhere)}
        return {
            "found": True,
            **self.found.to_dict(),
            "version": self.version,
            "soname": self.soname,
            "version_in_library": self.version_in_library,
        }


@dataclass(frozen=True)
class NvidiaMachine:
    kernel: KernelModule | None
    gpus: Sequence[GpuInformation] = ()
    pci: Sequence[PciDevice] = ()
    device_nodes: Sequence[str] = ()
    libraries: dict[str, UserLibrary] = field(default_factory=dict)

    @property
    def has_gpu_nodes(self) -> bool:
        """Whether the control node or a GPU node exists (what CUDA opens)."""
        return any(
            node == "nvidiactl" or node[len("nvidia") :].isdigit() for node in self.device_nodes
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "kernel_module": self.kernel.to_dict() if self.kernel else None,
            "gpus": [gpu.to_dict() for gpu in self.gpus],
            "pci_devices": [device.to_dict() for device in self.pci],
            "device_nodes": [f"/dev/{node}" for node in self.device_nodes],
            "user_mode_driver": {name: lib.to_dict() for name, lib in self.libraries.items()},
        }


def parse_kernel_version(text: str) -> tuple[str, str] | None:
    """``/proc/driver/nvidia/version`` → (version, flavor), flavor ``open`` or
    ``proprietary``; None when no ``NVRM version`` line names one."""
    match = _NVRM_RE.search(text)
    if not match:
        return None
    return match.group(2), "open" if match.group(1) else "proprietary"


def parse_module_version(text: str) -> str | None:
    """``/sys/module/nvidia/version`` (``"580.95.05\\n"``) → the version, or None."""
    value = text.strip()
    return value if _VERSION_RE.fullmatch(value) else None


def parse_gpu_information(text: str) -> dict[str, str]:
    """``/proc/driver/nvidia/gpus/*/information``: ``Key: value`` lines → a dict."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon and key.strip() and key.strip() not in values:
            values[key.strip()] = value.strip()
    return values


def library_version(file_name: str, library: str) -> str | None:
    """The driver version in a library's file name: ``libcuda.so.580.95.05`` →
    ``580.95.05`` (for *library* ``libcuda.so.1``); None when it carries none."""
    stem = library.split(".so", 1)[0] + ".so."
    if not file_name.startswith(stem):
        return None
    version = file_name[len(stem) :]
    return version if _DRIVER_VERSION_RE.fullmatch(version) else None


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _kernel_module(roots: MachineRoots) -> KernelModule | None:
    text = read_text(roots, PROC_VERSION)
    if text is not None:
        parsed = parse_kernel_version(text)
        if parsed:
            return KernelModule(PROC_VERSION, parsed[0], flavor=parsed[1])
    fallback = read_text(roots, SYS_VERSION)
    if fallback is not None and parse_module_version(fallback):
        return KernelModule(SYS_VERSION, parse_module_version(fallback))
    if text is None and fallback is None:
        return None
    source, raw = (PROC_VERSION, text) if text is not None else (SYS_VERSION, fallback or "")
    return KernelModule(source, None, first_line(raw))


def _gpus(roots: MachineRoots) -> list[GpuInformation]:
    try:
        addresses = sorted(entry.name for entry in roots.path(PROC_GPUS).iterdir())
    except OSError:
        return []
    gpus = []
    for address in addresses[:256]:
        information = read_text(roots, f"{PROC_GPUS}/{address}/information")
        values = parse_gpu_information(information or "")
        minor = values.get("Device Minor", "")
        gpus.append(
            GpuInformation(
                values.get("Bus Location") or address,
                values.get("Model") or None,
                int(minor) if minor.isdigit() else None,
            )
        )
    return gpus


def _device_nodes(roots: MachineRoots) -> list[str]:
    try:
        names = [entry.name for entry in roots.path("/dev").iterdir()]
    except OSError:
        return []
    return sorted(name for name in names if name.startswith("nvidia"))


def _user_library(loader: Loader, name: str) -> UserLibrary:
    found = loader.find(name)
    if found is None:
        folders = [*loader.conf_folders(), *DRIVER_FOLDERS]
        return UserLibrary(name, None, elsewhere=tuple(loader.locate(name, folders)))
    real = loader.roots.path(found.real_path)
    version = library_version(found.file_name, name)
    confirmed = (
        section_contains(real, version.encode("ascii"), _VERSION_SECTIONS) if version else None
    )
    return UserLibrary(name, found, version, read_soname(real), confirmed)


def look_at_nvidia(roots: MachineRoots, loader: Loader) -> NvidiaMachine:
    """What the machine's files say of the NVIDIA driver and GPUs."""
    return NvidiaMachine(
        kernel=_kernel_module(roots),
        gpus=_gpus(roots),
        pci=display_devices(roots, NVIDIA),
        device_nodes=_device_nodes(roots),
        libraries={name: _user_library(loader, name) for name in (LIBCUDA, LIBNVML)},
    )
