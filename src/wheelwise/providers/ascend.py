"""The ``ascend`` provider: the type of the Huawei Ascend NPUs in this machine.

The vocabulary follows the published ``huawei-ascend-variant-provider``: one feature,
``npu_type``, whose value is the NPU family in lower case without the chip's bin
number (``npu-smi`` names ``910B3``, the property is ``ascend :: npu_type :: 910b``,
as vllm-ascend's variant index keys on). The Atlas A3 chips (``Ascend910`` /
``910_93xx``) are ``910c``.

Detection runs ``npu-smi info`` (the published provider's source) and reads the
Name column of its table. Without an answer from it, the PCI ids of Huawei NPUs in
``/sys/bus/pci/devices`` (vendor ``0x19e5``: ``d100`` 310, ``d500`` 310P, ``d802``
910B, ``d803`` 910_93) name the family. No vendor library is loaded. On Linux
``npu-smi`` only runs when a Huawei NPU is on the PCI bus or ``/dev/davinci_manager``
exists. Environment variables override detection; ``none`` means no NPU.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

from wheelwise.providers.amd import Runner, run_command
from wheelwise.providers.base import (
    BuiltinProvider,
    Environment,
    FeatureConfig,
    Probe,
    ProviderUnavailable,
)
from wheelwise.providers.pci_ids import devices_of

NPU_TYPE = "npu_type"
NPU_TYPE_VARIABLES = ("WHEELWISE_ASCEND_NPU_TYPE", "ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE")

# Every family the provider can report, newest first.
NPU_TYPES = (
    "950",
    "910c",
    "910b",
    "910premiuma",
    "910proa",
    "910prob",
    "910a",
    "310p",
    "310b",
    "310",
)
_KNOWN = frozenset(NPU_TYPES)

HUAWEI_VENDOR = 0x19E5
# PCI device ids of Huawei NPUs -> family. d801 (the first Ascend 910) is left out:
# its four models (910A, 910ProA, 910ProB, 910PremiumA) share it.
PCI_NPU_TYPES = {0xD100: "310", 0xD500: "310p", 0xD802: "910b", 0xD803: "910c"}
PCI_AMBIGUOUS = {0xD801: "Ascend 910 (d801)"}

COMMAND_TIMEOUT = 5.0
NPU_SMI = ("npu-smi", "info")
# Where driver installs put npu-smi when it is not on PATH.
NPU_SMI_FOLDERS = ("/usr/local/bin", "/usr/local/sbin", "/usr/local/Ascend/driver/tools")
DAVINCI_MANAGER = "davinci_manager"
PCI_DEVICES = "/sys/bus/pci/devices"

_NONE = "none"
# Patterns, not compiled ones: re compiles them on first use, which detection on a
# machine without an NPU never reaches.
# An npu-smi chip name: digits then letters, digits, '_' or '-' ("910B3", "310P3",
# "910_9391", "910PremiumA"), optionally after "Ascend" ("Ascend910").
_NAME_PATTERN = r"(?i:ascend)?(\d+[a-zA-Z0-9_-]*)"
_FAMILY_PATTERN = r"(\d+[a-z]+)\d*"


def normalize_npu_type(name: str) -> str:
    """``"Ascend910B3"`` / ``"910B3"`` → ``"910b"``; ``"310P3"`` → ``"310p"``;
    ``"Ascend910"`` / ``"910_9391"`` → ``"910c"``. Raises ValueError for anything
    that is not a chip name."""
    match = re.fullmatch(_NAME_PATTERN, name.strip())
    if not match:
        raise ValueError(f"{name.strip()[:40]!r} is not an Ascend chip name")
    chip = match.group(1).lower()
    if chip.startswith("910_93") or (chip == "910" and name.strip().lower() != "910"):
        return "910c"
    if chip.startswith("950"):
        return "950"
    family = re.match(_FAMILY_PATTERN, chip)
    if family is None:
        if chip in _KNOWN:
            return chip
        raise ValueError(f"{name.strip()[:40]!r} is not an Ascend chip name")
    return family.group(1)


def parse_npu_smi(text: str) -> list[str]:
    """NPU families of ``npu-smi info`` output, one per NPU row, in table order.

    An NPU row starts ``| INDEX  NAME ...|``; the chip rows under it (``| 0  0 |``),
    the header and the process table have no chip name there. Raises ValueError
    when no NPU row is found.
    """
    types = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = line.strip("|").split("|")
        words = cells[0].split()
        if len(words) < 2 or not (words[0].isascii() and words[0].isdigit()):
            continue
        name = words[1]
        if name.isdigit():
            continue  # a chip row: chip id, device id
        try:
            types.append(normalize_npu_type(name))
        except ValueError:
            continue
    if not types:
        raise ValueError("no NPU listed")
    return types


def parse_npu_type_override(variable: str, text: str) -> list[str]:
    """``"910b"`` / ``"910B3"`` / ``"910b,310p"`` → families; ``"none"`` → []."""
    value = text.strip()
    if value.lower() == _NONE:
        return []
    types = []
    for item in re.split(r"[,;\s]+", value):
        if not item:
            continue
        try:
            types.append(normalize_npu_type(item))
        except ValueError:
            raise ProviderUnavailable(
                f"invalid {variable}={text!r}: expected an Ascend NPU type such as 910b "
                f"(e.g. 910b or 310p), comma-separated, or 'none'; {item[:40]!r} is not one",
                variable,
            ) from None
    if not types:
        raise ProviderUnavailable(
            f"invalid {variable}={text!r}: expected an Ascend NPU type such as 910b or 'none'",
            variable,
        )
    return types


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


class AscendProvider(BuiltinProvider):
    namespace = "ascend"

    def __init__(
        self,
        env: Environment | None = None,
        run: Runner | None = None,
        pci_devices: str = PCI_DEVICES,
        dev_dir: str = "/dev",
        timeout: float = COMMAND_TIMEOUT,
    ) -> None:
        super().__init__(env)
        self._run = run
        self.pci_devices = pci_devices
        self.dev_dir = dev_dir
        self.timeout = timeout

    def run(self, argv: Sequence[str], timeout: float) -> str:
        if self._run is not None:
            return self._run(argv, timeout)
        return run_command(argv, timeout, search=NPU_SMI_FOLDERS)

    def get_all_configs(self) -> Sequence[FeatureConfig]:
        return (FeatureConfig(NPU_TYPE, NPU_TYPES),)

    def probe(self) -> Probe:
        notes: list[str] = []
        override = self.env.first_set(NPU_TYPE_VARIABLES)
        if override:
            variable, text = override
            detected = parse_npu_type_override(variable, text)
            if not detected:
                raise ProviderUnavailable(f"no Ascend NPU ({variable}={text})", variable)
            source = variable
        else:
            detected, source = self._detect(notes)
        types = _unique(detected)
        known = [npu for npu in types if npu in _KNOWN]
        unknown = [npu for npu in types if npu not in _KNOWN]
        if unknown:
            notes.append(f"unknown NPU type(s) {', '.join(unknown)} left out")
        if not known:
            raise ProviderUnavailable(
                f"Ascend NPU(s) {', '.join(unknown)} found but none is a known type", source
            )
        if len(known) > 1:
            notes.append("NPUs of more than one type")
        detail = f"NPUs: {', '.join(known)}"
        return Probe((FeatureConfig(NPU_TYPE, tuple(known)),), source, "; ".join([detail, *notes]))

    def pci_npus(self) -> tuple[list[str], list[str]]:
        """Families of the Huawei NPUs on the PCI bus, and notes on ones it cannot name.

        Raises OSError when the folder cannot be listed.
        """
        types, notes = [], []
        for address, device in devices_of(self.pci_devices, HUAWEI_VENDOR):
            if device in PCI_NPU_TYPES:
                types.append(PCI_NPU_TYPES[device])
            elif device in PCI_AMBIGUOUS:
                notes.append(f"{PCI_AMBIGUOUS[device]} at {address} needs npu-smi to be named")
        return types, _unique(notes)

    def _detect(self, notes: list[str]) -> tuple[list[str], str]:
        try:
            pci, pci_notes = self.pci_npus()
            pci_failure = "" if pci or pci_notes else "no Huawei NPU"
        except OSError as exc:
            pci, pci_notes = [], []
            pci_failure = f"cannot list: {exc.strerror or type(exc).__name__}"
        manager = os.path.join(self.dev_dir, DAVINCI_MANAGER)
        if (
            self._run is None
            and sys.platform.startswith("linux")
            and not pci
            and not pci_notes
            and not os.path.exists(manager)
        ):
            # No NPU on the bus and no driver: npu-smi could not list one.
            raise ProviderUnavailable(
                f"no Ascend NPU ({self.pci_devices}: {pci_failure}; {manager} does not exist)",
                self.pci_devices,
            )
        command = " ".join(NPU_SMI)
        try:
            output = self.run(NPU_SMI, self.timeout)
            smi = parse_npu_smi(output)
        except ValueError as exc:
            smi_failure = f"{command}: unexpected output ({exc})"
        except Exception as exc:  # any runner failure means "no answer"
            smi_failure = f"{command}: {str(exc) or type(exc).__name__}"
        else:
            return smi, NPU_SMI[0]
        if pci:
            notes.append(smi_failure)
            return pci, self.pci_devices
        reasons = [smi_failure, *pci_notes]
        if pci_failure:
            reasons.append(f"{self.pci_devices}: {pci_failure}")
        raise ProviderUnavailable(f"no Ascend NPU: {'; '.join(reasons)}", "npu-smi, PCI")
