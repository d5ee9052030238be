"""The probes ``wheelwise doctor`` runs (each isolated; see
:mod:`wheelwise.doctor.runner`)."""

from __future__ import annotations

from wheelwise.doctor.amd_probe import amd_probe
from wheelwise.doctor.builds_probe import builds_probe
from wheelwise.doctor.compatibility_probe import compatibility_probe
from wheelwise.doctor.libraries_probe import libraries_probe
from wheelwise.doctor.nvidia_probe import nvidia_probe
from wheelwise.doctor.providers_probe import providers_probe
from wheelwise.doctor.runner import Probe
from wheelwise.doctor.virtualization import platform_probe

__all__ = ["PROBES"]

PROBES: tuple[Probe, ...] = (
    ("providers", providers_probe),
    ("platform", platform_probe),
    ("nvidia-driver", nvidia_probe),
    ("amd-driver", amd_probe),
    ("libraries", libraries_probe),
    ("compatibility", compatibility_probe),
    ("builds", builds_probe),
)
