"""The machine's GPUs as the PCI bus lists them (``/sys/bus/pci/devices``), whether or
not a driver is loaded: what tells "no GPU" apart from "a GPU without its driver"."""

from __future__ import annotations

from dataclasses import dataclass

from wheelwise.doctor.context import MachineRoots
from wheelwise.doctor.machine_files import read_text

__all__ = ["AMD", "NVIDIA", "PCI_DEVICES", "PciDevice", "display_devices", "parse_hex"]

PCI_DEVICES = "/sys/bus/pci/devices"
NVIDIA = 0x10DE
AMD = 0x1002
# PCI base class 0x03: display controllers (VGA 0x0300, 3D 0x0302, other 0x0380).
# NVIDIA cards also carry audio and USB functions, which are not GPUs.
_DISPLAY_CLASS = 0x03
_MAX_DEVICES = 4096


@dataclass(frozen=True)
class PciDevice:
    """One display controller: its bus address (``0000:01:00.0``), vendor and device
    ids, and the kernel driver bound to it (``nvidia``, ``nouveau``, ``amdgpu``,
    ``vfio-pci``; None when none is)."""

    address: str
    vendor: int
    device: int
    driver: str | None

    def to_dict(self) -> dict[str, str | None]:
        return {"address": self.address, "device": f"0x{self.device:04x}", "driver": self.driver}


def parse_hex(text: str) -> int | None:
    """``"0x10de\\n"`` → 0x10de; None for anything else."""
    value = text.strip().lower()
    if not value.startswith("0x") or len(value) > 18:
        return None
    try:
        return int(value[2:], 16)
    except ValueError:
        return None


def _read_hex(roots: MachineRoots, path: str) -> int | None:
    text = read_text(roots, path, 64)
    return parse_hex(text) if text is not None else None


def display_devices(roots: MachineRoots, vendor: int) -> list[PciDevice]:
    """The display controllers of *vendor*, by bus address; [] when the bus cannot
    be read (no sysfs, a container that hides it)."""
    folder = roots.path(PCI_DEVICES)
    try:
        addresses = sorted(entry.name for entry in folder.iterdir())[:_MAX_DEVICES]
    except OSError:
        return []
    devices = []
    for address in addresses:
        device_folder = f"{PCI_DEVICES}/{address}"
        if _read_hex(roots, f"{device_folder}/vendor") != vendor:
            continue
        pci_class = _read_hex(roots, f"{device_folder}/class")
        if pci_class is None or pci_class >> 16 != _DISPLAY_CLASS:
            continue
        try:
            driver: str | None = roots.path(f"{device_folder}/driver").readlink().name
        except OSError:
            driver = None
        device = _read_hex(roots, f"{device_folder}/device")
        devices.append(PciDevice(address, vendor, device if device is not None else 0, driver))
    return devices
