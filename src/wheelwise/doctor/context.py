"""What the probes of ``wheelwise doctor`` look at: the target interpreter, the
machine (detected, or described by ``--system``), the process environment, and the
file-system root they read ``/proc``, ``/sys``, ``/dev`` and library folders under
(a fake tree in tests)."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wheelwise.environment.interpreter import TargetEnvironment
    from wheelwise.providers.detect import Detection
    from wheelwise.variants.supported import SupportedProperties

__all__ = [
    "ROOT_VARIABLE",
    "TIMEOUT_VARIABLE",
    "DoctorContext",
    "MachineRoots",
    "probe_timeout",
]

# Where the probes find the machine's files: / unless this names another folder.
ROOT_VARIABLE = "WHEELWISE_DOCTOR_ROOT"
# Seconds each probe may take (a hung driver call must not hang the report).
TIMEOUT_VARIABLE = "WHEELWISE_DOCTOR_TIMEOUT"
DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True)
class MachineRoots:
    """The folder the machine's absolute paths are read under: ``/`` on a real
    machine; a fake tree (``proc/driver/nvidia/version``, ``dev/nvidia0``,
    ``usr/local/cuda/...``) in tests."""

    root: Path = Path("/")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> MachineRoots:
        value = environ.get(ROOT_VARIABLE, "")
        return cls(Path(value)) if value else cls()

    def path(self, absolute: str | os.PathLike[str]) -> Path:
        """*absolute* (``/proc/...``) under this root."""
        text = os.fspath(absolute)
        return self.root / text.lstrip("/") if text.startswith("/") else Path(text)


@dataclass(frozen=True)
class DoctorContext:
    """Everything a probe may look at; nothing a probe finds is kept here."""

    target: TargetEnvironment
    environ: Mapping[str, str]
    roots: MachineRoots = field(default_factory=MachineRoots)
    # The machine as --system describes it; None: detect it (once, shared).
    system: SupportedProperties | None = None
    # Where to ask for a better build of an installed variant wheel (network only
    # when given).
    index_url: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    # Detection runs once, for whichever probe asks first (probes run in threads).
    _detected: list[Detection] = field(default_factory=list, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def detection(self) -> Detection | None:
        """The providers' view of this machine (None when --system describes it)."""
        if self.system is not None:
            return None
        with self._lock:
            if not self._detected:
                from wheelwise.providers.detect import detect

                self._detected.append(detect())
            return self._detected[0]

    @property
    def supported(self) -> SupportedProperties:
        """The variant properties this machine supports."""
        if self.system is not None:
            return self.system
        detection = self.detection
        assert detection is not None
        return detection.system


def probe_timeout(environ: Mapping[str, str]) -> float:
    """Seconds a probe may take: ``WHEELWISE_DOCTOR_TIMEOUT``, else 10."""
    value = environ.get(TIMEOUT_VARIABLE, "")
    try:
        seconds = float(value) if value else DEFAULT_TIMEOUT
    except ValueError:
        raise ValueError(
            f"{TIMEOUT_VARIABLE}={value!r} is not a number of seconds; unset it or give e.g. 10"
        ) from None
    if not 0 < seconds < 3600:
        raise ValueError(f"{TIMEOUT_VARIABLE}={value!r}: give a number of seconds from 0 to 3600")
    return seconds
