"""Errors about lock files (``pylock.toml``)."""

from __future__ import annotations

from wheelwise.errors import WheelwiseError


class LockError(ValueError, WheelwiseError):
    """A ``pylock.toml`` cannot be read, is not valid, or asks for what wheelwise
    cannot do; ``str()`` is one line naming the file and the place in it."""
