"""The ``tpu`` provider: whether this machine has a Google TPU, as uv answers it.

uv 0.13.9 reimplements the ``tpu-variant-provider`` plugin
(``tpu_variant_provider.plugin:TpuVariantPlugin``) with one feature, ``present``:
``tpu :: present :: true`` on a machine with a TPU and ``tpu :: present :: false``
on any other, so that a wheel built for machines without one can say so. It looks
for a PCI device of vendor ``0x1ae0`` (Google) whose device id is a TPU's, in
``/sys/bus/pci/devices``; ``TPU_VARIANT_PROVIDER_FORCE_PRESENT`` replaces detection
(``1``, ``true`` or ``yes`` in any case: present; any other value: absent).

``WHEELWISE_TPU_PRESENT`` does the same with a stricter reading: ``true``/``1``/
``yes``/``on``, ``false``/``0``/``no``/``off`` or ``none`` (no TPU); anything else is
reported as invalid rather than read as "no".
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from wheelwise.providers.base import (
    BuiltinProvider,
    Environment,
    FeatureConfig,
    Probe,
    ProviderUnavailable,
)
from wheelwise.providers.pci_ids import devices_of

PRESENT = "present"
TRUE, FALSE = "true", "false"
PRESENT_VARIABLE = "WHEELWISE_TPU_PRESENT"
UV_VARIABLE = "TPU_VARIANT_PROVIDER_FORCE_PRESENT"
PRESENT_VARIABLES = (PRESENT_VARIABLE, UV_VARIABLE)

GOOGLE_VENDOR = 0x1AE0
# The Google device ids uv 0.13.9 takes for a TPU (found by presenting it each id
# from 0x0000 to 0x00ff as a sysfs PCI device; see docs/provider-ascend-tpu.md).
TPU_DEVICE_IDS = frozenset({0x0027, 0x0056, 0x005E, 0x0062, 0x0063, 0x006F, 0x0076, 0x007C, 0x0083})
PCI_DEVICES = "/sys/bus/pci/devices"

_YES = frozenset({"true", "1", "yes", "on"})
_NO = frozenset({"false", "0", "no", "off", "none"})
_UV_YES = frozenset({"1", "true", "yes"})


def parse_present_override(variable: str, text: str) -> bool:
    """Whether *text* says a TPU is present.

    uv's variable reads as uv reads it (exactly ``1``, ``true`` or ``yes`` in any case
    is "present", anything else "absent"); ``WHEELWISE_TPU_PRESENT`` raises
    :class:`ProviderUnavailable` for a value that is neither yes nor no.
    """
    if variable == UV_VARIABLE:
        return text.lower() in _UV_YES
    value = text.strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise ProviderUnavailable(
        f"invalid {variable}={text!r}: expected true or false (or 1/0, yes/no, on/off), "
        "or 'none' for no TPU",
        variable,
    )


class TPUProvider(BuiltinProvider):
    namespace = "tpu"

    def __init__(self, env: Environment | None = None, pci_devices: str = PCI_DEVICES) -> None:
        super().__init__(env)
        self.pci_devices = pci_devices

    def get_all_configs(self) -> Sequence[FeatureConfig]:
        return (FeatureConfig(PRESENT, (TRUE, FALSE)),)

    def probe(self) -> Probe:
        override = self.env.first_set(PRESENT_VARIABLES)
        if override:
            variable, text = override
            present = parse_present_override(variable, text)
            detail = (
                f"TPU present ({variable}={text})" if present else f"no TPU ({variable}={text})"
            )
            return self._answer(present, variable, detail)
        if not os.path.isdir(self.pci_devices):
            return self._answer(
                False, self.pci_devices, f"no TPU ({self.pci_devices} does not exist)"
            )
        try:
            tpus = self.tpu_devices()
        except OSError as exc:
            raise ProviderUnavailable(
                f"cannot list {self.pci_devices}: {exc.strerror or type(exc).__name__}",
                self.pci_devices,
            ) from None
        if not tpus:
            return self._answer(
                False, self.pci_devices, f"no TPU (no Google TPU device in {self.pci_devices})"
            )
        listed = ", ".join(f"{address} (1ae0:{device:04x})" for address, device in tpus)
        return self._answer(True, self.pci_devices, f"TPUs: {listed}")

    def tpu_devices(self) -> list[tuple[str, int]]:
        """``(PCI address, device id)`` of every TPU in the sysfs PCI folder.

        Devices whose ids cannot be read are skipped; raises OSError when the folder
        itself cannot be listed.
        """
        found = []
        for address, device in devices_of(self.pci_devices, GOOGLE_VENDOR):
            if device in TPU_DEVICE_IDS:
                found.append((address, device))
        return found

    @staticmethod
    def _answer(present: bool, source: str, detail: str) -> Probe:
        return Probe((FeatureConfig(PRESENT, (TRUE if present else FALSE,)),), source, detail)
