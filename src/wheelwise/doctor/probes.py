"""The probes ``wheelwise doctor`` runs (each isolated; see
:mod:`wheelwise.doctor.runner`)."""

from __future__ import annotations

from wheelwise.doctor.compatibility_probe import compatibility_probe
from wheelwise.doctor.libraries_probe import libraries_probe
from wheelwise.doctor.providers_probe import providers_probe
from wheelwise.doctor.runner import Probe

__all__ = ["PROBES"]

PROBES: tuple[Probe, ...] = (
    ("providers", providers_probe),
    ("libraries", libraries_probe),
    ("compatibility", compatibility_probe),
)
