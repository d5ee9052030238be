"""The machines a proxy chooses builds for: this one, a ``--system`` file, or profiles.

A proxy runs no third-party provider plugin: it serves other machines (and many
clients), so only the built-in providers, a system file and a release's static
properties answer. Markers of providers' ``enable-if`` are this interpreter's.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from wheelwise.providers.detect import Detection
from wheelwise.providers.machine import MachineOptions, machine_for
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.supported import SupportedProperties

__all__ = ["THIS_MACHINE", "Machine"]

THIS_MACHINE = "this machine"
_OPTIONS = MachineOptions(
    abi_from_installed=False,
    plugins_refused="the proxy runs no provider plugins; describe the target with --system",
)


@dataclass
class Machine:
    """One target: *system* (from a file) or, when None, this machine's providers."""

    name: str
    system: SupportedProperties | None = None
    source: str = "detected by the built-in providers"
    _detection: Detection | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def supported(self, metadata: VariantMetadata) -> SupportedProperties:
        """What this machine supports of *metadata*'s namespaces."""
        detection = None
        if self.system is None:
            detection = self._detect()
        view = machine_for(
            metadata, _OPTIONS, system=self.system, system_source=self.source, detection=detection
        )
        return view.supported

    def _detect(self) -> Detection:
        # Once per process: the providers' own cache keeps it across restarts.
        with self._lock:
            if self._detection is None:
                from wheelwise.providers.detect import detect_cached

                self._detection, _ = detect_cached()
            return self._detection
