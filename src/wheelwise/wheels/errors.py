"""Errors about wheel archives."""

from __future__ import annotations


class WheelError(ValueError):
    """A wheel file is missing, unreadable or inconsistent."""
