"""Reading a PCI device's id files in sysfs (``/sys/bus/pci/devices/*/vendor``,
``device``, ``class``): the one reader the providers that find their devices on the
PCI bus (intel, ascend, tpu) share."""

from __future__ import annotations

import os

__all__ = ["MAX_PCI_DEVICES", "devices_of", "parse_sysfs_hex", "read_id_file"]

# Entries of the PCI folder looked at: far more than any machine has.
MAX_PCI_DEVICES = 4096

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_READ_LIMIT = 64
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def parse_sysfs_hex(text: str, bits: int = 16) -> int:
    """A sysfs PCI id file (``"0x8086\\n"``) -> its value. Raises ValueError when the
    text is not one hexadecimal number that fits in *bits* bits (16 for a vendor or
    device id, 24 for a class)."""
    stripped = text.strip()
    digits = stripped[2:]
    if stripped[:2] not in ("0x", "0X") or not 1 <= len(digits) <= 8 or set(digits) - _HEX_DIGITS:
        raise ValueError(f"unexpected content {stripped[:40]!r}")
    value = int(digits, 16)
    if value >> bits:
        raise ValueError(f"{text.strip()[:40]!r} does not fit in {bits} bits")
    return value


def read_id_file(path: str) -> str:
    """The first bytes of a sysfs id file (an id is a dozen characters). Opened
    non-blocking: a FIFO in a broken or fake tree must not stop detection. Raises
    OSError."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    try:
        return os.read(fd, _READ_LIMIT).decode("ascii", "replace")
    finally:
        os.close(fd)


def devices_of(folder: str, vendor: int) -> list[tuple[str, int]]:
    """(address, device id) of each device of *vendor* in the sysfs PCI *folder*, in
    address order. Devices whose ids cannot be read are skipped; raises OSError when
    the folder itself cannot be listed."""
    found = []
    for address in sorted(os.listdir(folder))[:MAX_PCI_DEVICES]:
        device = os.path.join(folder, address)
        try:
            if parse_sysfs_hex(read_id_file(os.path.join(device, "vendor"))) != vendor:
                continue
            found.append((address, parse_sysfs_hex(read_id_file(os.path.join(device, "device")))))
        except (OSError, ValueError):
            continue  # not a device that can be read: not one that can be named
    return found
