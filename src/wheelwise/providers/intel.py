"""The ``intel`` provider: device IPs (GMDIDs) of the machine's Intel GPUs.

The vocabulary follows the published ``intel-variant-provider``: one multi-value
feature, ``device_ip``, whose values are the human-readable device IP versions
``ARCHITECTURE.RELEASE.REVISION`` (``"12.55.8"`` for Arc A770, ``"12.60.7"`` for Data
Center GPU Max). For each GPU the answer is its own IP, then the IP of the base
platform whose code it also runs (an Arc A380, ``12.56.5``, also takes ``12.55.8``).
IPs the table below does not know are left out, as the published provider does.

Detection loads no GPU runtime: it lists ``/sys/bus/pci/devices``, keeps Intel
(vendor ``0x8086``) display controllers (class ``0x03xxxx``) and maps their PCI
device ids to IPs with :data:`PCI_DEVICE_IPS`. ``docs/provider-intel.md`` says where
every table entry comes from. Environment variables replace detection.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from wheelwise.providers.base import (
    BuiltinProvider,
    Environment,
    FeatureConfig,
    Probe,
    ProviderUnavailable,
)
from wheelwise.providers.pci_ids import parse_sysfs_hex, read_id_file

DEVICE_IP = "device_ip"
PUBLISHED_VARIABLE = "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP"
DEVICE_IP_VARIABLES = ("WHEELWISE_INTEL_DEVICE_IP", PUBLISHED_VARIABLE)
PCI_DEVICES = "/sys/bus/pci/devices"
INTEL_VENDOR = 0x8086
DISPLAY_CLASS = 0x03  # PCI base class "display controller": VGA, 3D, other display

# Device IP -> (platform names as the Intel offline compiler spells them, base IP or
# ""), newest first: the published provider's table. A device also runs code built
# for its base IP.
DEVICE_IP_TABLE: dict[str, tuple[tuple[str, ...], str]] = {
    "35.11.0": (("cri",), ""),
    "35.10.4": (("nvl-p",), ""),
    "30.5.4": (("nvl-u", "nvl-h"), "30.0.4"),
    "30.4.4": (("nvl-s", "nvl-hx", "nvl-ul"), "30.0.4"),
    "30.3.1": (("wcl",), "30.0.4"),
    "30.1.0": (("ptl-u",), "30.0.4"),
    "30.0.4": (("ptl-h",), ""),
    "20.4.4": (("lnl-m",), "20.1.0"),
    "20.2.0": (("bmg-g31",), "20.1.0"),
    "20.1.0": (("bmg-g21",), ""),
    "12.74.4": (("arl-h",), ""),
    "12.71.4": (("mtl-h",), "12.70.4"),
    "12.70.4": (("mtl-u", "arl-u", "arl-s"), ""),
    "12.60.7": (("pvc",), ""),
    "12.57.0": (("acm-g12", "dg2-g12"), "12.55.8"),
    "12.56.5": (("acm-g11", "dg2-g11", "ats-m75"), "12.55.8"),
    "12.55.8": (("acm-g10", "dg2-g10", "ats-m150"), ""),
    "12.10.0": (("dg1",), ""),
    "12.4.0": (("adl-n",), ""),
    "12.3.0": (("adl-p", "rpl-p"), ""),
    "12.2.0": (("adl-s", "rpl-s"), ""),
    "12.1.0": (("rkl",), ""),
    "12.0.0": (("tgllp", "tgl"), ""),
}
# Xe3 IPs the published provider's README names as build targets (``ocloc ids xe3``)
# without a table entry: valid in variant properties, never detected.
_XE3_TARGETS = ("30.0.0", "30.1.1")


def _ip_key(ip: str) -> tuple[int, ...]:
    return tuple(int(part) for part in ip.split("."))


# Every value a variant may name, newest first.
DEVICE_IPS = tuple(sorted({*DEVICE_IP_TABLE, *_XE3_TARGETS}, key=_ip_key, reverse=True))
_KNOWN_IPS = frozenset(DEVICE_IPS)

# PCI device id -> device IP, from the Linux kernel's Intel PCI id lists and the
# Intel compute runtime's per-platform device id lists (docs/provider-intel.md).
_PCI_GROUPS = (
    ("35.11.0", "674C 674D 674E 674F 6750"),  # CRI
    ("35.10.4", "D750 D751 D752 D753 D754 D755 D756 D757 D75F"),  # NVL-P
    ("30.4.4", "D740 D741 D742 D743 D745 D74A D74B"),  # NVL-S
    ("30.3.1", "FD80 FD81"),  # WCL
    ("30.1.0", "B090"),  # PTL-U
    ("30.0.4", "B080 B081 B082 B083 B08F B0A0 B0B0"),  # PTL-H
    ("20.4.4", "6420 64A0 64B0"),  # LNL
    ("20.2.0", "E220 E221 E222 E223"),  # BMG-G31
    # BMG-G21: Arc B580 (E20B), B570 (E20C)
    ("20.1.0", "E202 E209 E20B E20C E20D E210 E211 E212 E215 E216"),
    ("12.74.4", "7D51 7DD1"),  # ARL-H
    ("12.71.4", "7D55 7DD5"),  # MTL-H
    ("12.70.4", "7D40 7D45 7D41 7D67 B640"),  # MTL-U, ARL-U, ARL-S
    # PVC: Data Center GPU Max 1550 (0BD5, 0BD6), 1350, 1100 (0BDA), 1450, ...
    ("12.60.7", "0B69 0B6E 0BD0 0BD4 0BD5 0BD6 0BD7 0BD8 0BD9 0BDA 0BDB 0BE0 0BE1 0BE5"),
    ("12.57.0", "56A3 56A4 56B2 56B3 5696 5697"),  # DG2-G12
    # DG2-G11 (Arc A380 56A5, A310 56A6), ATS-M75 (Data Center GPU Flex 140 56C1)
    ("12.56.5", "56A5 56A6 56B0 56B1 56BA 56BB 56BC 56BD 5693 5694 5695 56C1"),
    # DG2-G10 (Arc A770 56A0, A750 56A1, A580 56A2), ATS-M150 (Flex 170 56C0, 56C2)
    ("12.55.8", "56A0 56A1 56A2 56BE 56BF 5690 5691 5692 56C0 56C2"),
    ("12.10.0", "4905 4906 4907 4908 4909"),  # DG1
    ("12.4.0", "46D0 46D1 46D2 46D3 46D4"),  # ADL-N
    (  # ADL-P, then RPL-P and RPL-U
        "12.3.0",
        "46A0 46A1 46A2 46A3 46A6 46A8 46AA 462A 4626 4628 46B0 46B1 46B2 46B3 46C0 46C1 "
        "46C2 46C3 A720 A7A0 A7A8 A7AA A7AB A721 A7A1 A7A9 A7AC A7AD",
    ),
    (  # ADL-S, then RPL-S
        "12.2.0",
        "4680 4682 4688 468A 468B 4690 4692 4693 A780 A781 A782 A783 A788 A789 A78A A78B",
    ),
    ("12.1.0", "4C80 4C8A 4C8B 4C8C 4C90 4C9A"),  # RKL
    ("12.0.0", "9A60 9A68 9A70 9A40 9A49 9A59 9A78 9AC0 9AC9 9AD9 9AF8"),  # TGL
)
PCI_DEVICE_IPS: dict[int, str] = {
    int(device, 16): ip for ip, devices in _PCI_GROUPS for device in devices.split()
}

# More entries than any machine has PCI functions: a bound on a fake or broken tree.
MAX_PCI_DEVICES = 4096
# Field widths of a device IP (Level Zero ``ipVersion``: revision 6 bits, release 8
# bits, architecture 10 bits).
_ARCHITECTURE_MAX = (1 << 10) - 1
_RELEASE_MAX = (1 << 8) - 1
_REVISION_MAX = (1 << 6) - 1
# A pattern, not a compiled one: compiled by re on first use, off the detection path.
_IP_PATTERN = r"([0-9]{1,4})\.([0-9]{1,3})\.([0-9]{1,2})"
_NONE = "none"


def parse_device_ip(text: str) -> str:
    """``"12.55.8"`` → ``"12.55.8"`` (leading zeros dropped: ``"12.055.08"`` is the
    same IP). Raises ValueError unless *text* is ``ARCHITECTURE.RELEASE.REVISION``
    within the widths of a device IP (10, 8 and 6 bits)."""
    match = re.fullmatch(_IP_PATTERN, text.strip())
    if not match:
        raise ValueError(f"{text.strip()[:40]!r} is not a device IP such as 12.55.8")
    architecture, release, revision = (int(part) for part in match.groups())
    if architecture > _ARCHITECTURE_MAX or release > _RELEASE_MAX or revision > _REVISION_MAX:
        raise ValueError(
            f"{text.strip()!r} is out of range (architecture 0-{_ARCHITECTURE_MAX}, "
            f"release 0-{_RELEASE_MAX}, revision 0-{_REVISION_MAX})"
        )
    return f"{architecture}.{release}.{revision}"


def parse_device_ip_override(variable: str, text: str) -> list[str]:
    """``"12.55.8"`` (several separated by commas, spaces or ';') → IPs in the order
    given; ``"none"`` → []. Raises :class:`ProviderUnavailable` naming *variable* on
    anything else."""
    value = text.strip()
    if value.lower() == _NONE:
        return []
    ips = []
    for item in re.split(r"[,;\s]+", value):
        if not item:
            continue
        try:
            ips.append(parse_device_ip(item))
        except ValueError as exc:
            raise ProviderUnavailable(
                f"invalid {variable}={text[:80]!r}: expected Intel device IPs "
                f"ARCHITECTURE.RELEASE.REVISION, comma-separated (e.g. 12.55.8), or 'none'; "
                f"{exc}",
                variable,
            ) from None
    if not ips:
        raise ProviderUnavailable(
            f"invalid {variable}={text[:80]!r}: expected an Intel device IP such as 12.55.8 "
            "or 'none'",
            variable,
        )
    return ips


def compatible_ips(ip: str) -> tuple[str, ...]:
    """The IPs whose code a device of *ip* runs, best first: *ip*, then its base."""
    entry = DEVICE_IP_TABLE.get(ip)
    if entry is None or not entry[1]:
        return (ip,)
    return (ip, entry[1])


def platform_name(ip: str) -> str:
    """``"12.55.8"`` → ``"acm-g10"``; ``""`` for an IP without a table entry."""
    entry = DEVICE_IP_TABLE.get(ip)
    return entry[0][0] if entry else ""


class PciDevice:
    """An Intel display controller found in sysfs."""

    __slots__ = ("address", "device_id")

    def __init__(self, address: str, device_id: int) -> None:
        self.address = address
        self.device_id = device_id

    def __repr__(self) -> str:
        return f"PciDevice({self.address!r}, {self.device_id:#06x})"


class IntelProvider(BuiltinProvider):
    namespace = "intel"

    def __init__(self, env: Environment | None = None, pci_devices: str = PCI_DEVICES) -> None:
        super().__init__(env)
        self.pci_devices = pci_devices

    def get_all_configs(self) -> Sequence[FeatureConfig]:
        return (FeatureConfig(DEVICE_IP, DEVICE_IPS, multi_value=True),)

    def probe(self) -> Probe:
        override = self.env.first_set(DEVICE_IP_VARIABLES)
        if override:
            variable, text = override
            ips = parse_device_ip_override(variable, text)
            if not ips:
                raise ProviderUnavailable(f"no Intel GPU ({variable}={text})", variable)
            # The published variable means what the published plugin makes of it,
            # the forced IPs alone; wheelwise's own simulates a machine with them.
            alone = variable == PUBLISHED_VARIABLE
            return self._answer([(ip, "") for ip in ips], variable, [], with_base=not alone)
        devices, notes, listed = self.scan()
        if not devices:
            reason = (
                f"no Intel GPU: none of the {listed} PCI devices in {self.pci_devices} is an "
                "Intel display controller (vendor 0x8086, class 0x03xxxx)"
            )
            raise ProviderUnavailable("; ".join([reason, *notes]), self.pci_devices)
        found = []
        unknown = []
        for device in devices:
            where = f"PCI {device.device_id:#06x} at {device.address}"
            ip = PCI_DEVICE_IPS.get(device.device_id)
            if ip is None:
                unknown.append(where)
            else:
                found.append((ip, where))
        if unknown:
            notes.append(f"Intel GPU(s) with no known device IP left out: {', '.join(unknown)}")
        if not found:
            raise ProviderUnavailable(
                f"Intel GPU(s) found but none has a known device IP: {', '.join(unknown)} "
                f"(set {DEVICE_IP_VARIABLES[0]} to name its IP)",
                self.pci_devices,
            )
        return self._answer(found, self.pci_devices, notes)

    def _answer(
        self,
        found: Sequence[tuple[str, str]],
        source: str,
        notes: list[str],
        *,
        with_base: bool = True,
    ) -> Probe:
        """The probe for *found*: (IP, where it was found or "") per GPU, in order,
        each followed by its base IP when *with_base*."""
        values: dict[str, None] = {}
        shown: dict[str, None] = {}
        unknown: dict[str, None] = {}
        for ip, where in found:
            if ip not in _KNOWN_IPS:
                unknown[ip] = None
                continue
            values.update(dict.fromkeys(compatible_ips(ip) if with_base else (ip,)))
            about = ", ".join(part for part in (platform_name(ip), where) if part)
            shown[f"{ip} ({about})" if about else ip] = None
        if unknown:
            listed = ", ".join(unknown)
            if not values:
                raise ProviderUnavailable(
                    f"Intel device IP(s) {listed} not known (known: {', '.join(DEVICE_IPS)})",
                    source,
                )
            notes.append(f"unknown Intel device IP(s) {listed} left out")
        detail = f"GPUs: {'; '.join(shown)}"
        configs = (FeatureConfig(DEVICE_IP, tuple(values), multi_value=True),)
        return Probe(configs, source, "; ".join([detail, *notes]))

    def scan(self) -> tuple[list[PciDevice], list[str], int]:
        """Intel display controllers under :attr:`pci_devices` in address order, notes
        on entries that could not be read, and how many entries were looked at.
        Raises :class:`ProviderUnavailable` when the folder cannot be listed."""
        try:
            with os.scandir(self.pci_devices) as entries:
                names = []
                for entry in entries:
                    names.append(entry.name)
                    if len(names) >= MAX_PCI_DEVICES:
                        break
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise ProviderUnavailable(
                f"no Intel GPU: cannot list PCI devices ({self.pci_devices}: {reason})",
                self.pci_devices,
            ) from None
        devices = []
        notes = []
        for name in sorted(names):
            folder = os.path.join(self.pci_devices, name)
            try:
                vendor = parse_sysfs_hex(self._read(folder, "vendor"), 16)
                if vendor != INTEL_VENDOR:
                    continue
                if parse_sysfs_hex(self._read(folder, "class"), 24) >> 16 != DISPLAY_CLASS:
                    continue
                device_id = parse_sysfs_hex(self._read(folder, "device"), 16)
            except (OSError, ValueError) as exc:
                notes.append(f"{folder} unreadable ({_reason(exc)})")
                continue
            devices.append(PciDevice(name, device_id))
        return devices, notes, len(names)

    @staticmethod
    def _read(folder: str, name: str) -> str:
        return read_id_file(os.path.join(folder, name))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc)
