"""The probes ``wheelwise doctor`` runs (each isolated; see
:mod:`wheelwise.doctor.runner`)."""

from __future__ import annotations

from wheelwise.doctor.builds_probe import builds_probe
from wheelwise.doctor.providers_probe import providers_probe
from wheelwise.doctor.runner import Probe

__all__ = ["PROBES"]

PROBES: tuple[Probe, ...] = (
    ("providers", providers_probe),
    ("builds", builds_probe),
)
