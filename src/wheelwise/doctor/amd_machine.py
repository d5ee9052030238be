"""AMD GPUs and ROCm as the machine's files show them, read without running ROCm's
tools: the ROCm version (``$ROCM_PATH/.info/version``, or ``/opt/rocm``'s: what the
amd provider reads), every GPU the amdgpu driver exposes for compute
(``/sys/class/kfd/kfd/topology/nodes/*/properties``, whose ``gfx_target_version``
names the LLVM target), ``/dev/kfd``, and the AMD display controllers on the PCI bus."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wheelwise.doctor.context import MachineRoots
from wheelwise.doctor.machine_files import VersionFile, first_line, read_text
from wheelwise.doctor.pci import AMD, PciDevice, display_devices
from wheelwise.providers.amd import GFX_TARGETS, parse_version_file

__all__ = [
    "KFD_DEVICE",
    "KFD_NODES",
    "AmdGpu",
    "AmdMachine",
    "Rocm",
    "gfx_name",
    "look_at_amd",
    "parse_kfd_properties",
]

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
KFD_DEVICE = "/dev/kfd"
DEFAULT_ROCM = "/opt/rocm"
_MAX_NODES = 1024
_KNOWN_GFX = frozenset(GFX_TARGETS)


@dataclass(frozen=True)
class Rocm(VersionFile):
    """An installed ROCm: its version file and its folder."""

    path: str = DEFAULT_ROCM

    def to_dict(self) -> dict[str, str | None]:
        return {"path": self.path, **super().to_dict()}


@dataclass(frozen=True)
class AmdGpu:
    """A compute node of the amdgpu driver: its topology node and LLVM target."""

    node: str
    gfx: str | None
    target_version: int

    @property
    def known(self) -> bool:
        return self.gfx in _KNOWN_GFX

    def to_dict(self) -> dict[str, object]:
        return {"node": self.node, "gfx": self.gfx, "gfx_target_version": self.target_version}


@dataclass(frozen=True)
class AmdMachine:
    rocm: Rocm | None
    rocm_path: str = DEFAULT_ROCM  # where ROCm is looked for
    gpus: Sequence[AmdGpu] = ()
    pci: Sequence[PciDevice] = ()
    kfd_device: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "rocm": self.rocm.to_dict() if self.rocm else None,
            "gpus": [gpu.to_dict() for gpu in self.gpus],
            "pci_devices": [device.to_dict() for device in self.pci],
            "kfd_device": self.kfd_device,
        }


def parse_kfd_properties(text: str) -> dict[str, int]:
    """A topology node's ``properties`` (``name value`` lines, decimal) → a dict;
    lines of any other shape are left out."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[1].isascii() and len(parts[1]) < 21:
            values.setdefault(parts[0], int(parts[1]))
    return values


def gfx_name(target_version: int) -> str | None:
    """KFD's ``gfx_target_version`` (major * 10000 + minor * 100 + stepping) → the
    LLVM target: 90402 → ``gfx942``, 90010 → ``gfx90a``, 110000 → ``gfx1100``;
    None for 0 (a CPU node) or a value no target has."""
    major, minor, stepping = (
        target_version // 10000,
        target_version // 100 % 100,
        target_version % 100,
    )
    if major == 0 or minor > 9 or stepping > 15:
        return None
    return f"gfx{major}{minor}{stepping:x}"


def rocm_path(environ: Mapping[str, str]) -> str:
    return environ.get("ROCM_PATH") or DEFAULT_ROCM


def _rocm(roots: MachineRoots, path: str) -> Rocm | None:
    source = f"{path}/.info/version"
    text = read_text(roots, source)
    if text is None:
        # Installed without its version file: its tools are there.
        if roots.path(f"{path}/bin/rocminfo").exists():
            return Rocm(source, None, path=path)
        return None
    try:
        parse_version_file(text)
    except ValueError:
        return Rocm(source, None, first_line(text), path=path)
    return Rocm(source, first_line(text).split("-", 1)[0], path=path)


def _gpus(roots: MachineRoots) -> list[AmdGpu]:
    try:
        nodes = [entry.name for entry in roots.path(KFD_NODES).iterdir()]
    except OSError:
        return []
    gpus = []
    for node in sorted(nodes, key=lambda name: (not name.isdigit(), name.zfill(8)))[:_MAX_NODES]:
        properties = parse_kfd_properties(read_text(roots, f"{KFD_NODES}/{node}/properties") or "")
        target = properties.get("gfx_target_version", 0)
        if target:  # CPU nodes have none
            gpus.append(AmdGpu(node, gfx_name(target), target))
    return gpus


def look_at_amd(roots: MachineRoots, environ: Mapping[str, str]) -> AmdMachine:
    """What the machine's files say of ROCm and AMD GPUs."""
    path = rocm_path(environ)
    return AmdMachine(
        rocm=_rocm(roots, path),
        rocm_path=path,
        gpus=_gpus(roots),
        pci=display_devices(roots, AMD),
        kfd_device=roots.path(KFD_DEVICE).exists(),
    )
