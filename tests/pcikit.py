"""A fake sysfs PCI folder for the providers that find devices on the PCI bus."""

from __future__ import annotations

from pathlib import Path


def pci_tree(root: Path, *devices: tuple[str, str, str]) -> Path:
    """A sysfs ``/sys/bus/pci/devices`` folder of (address, vendor, device)."""
    folder = root / "pci"
    folder.mkdir(parents=True, exist_ok=True)
    for address, vendor, device in devices:
        (folder / address).mkdir()
        (folder / address / "vendor").write_text(vendor + "\n")
        (folder / address / "device").write_text(device + "\n")
    return folder
