"""Errors about lock files (``pylock.toml``)."""

from __future__ import annotations


class LockError(ValueError):
    """A ``pylock.toml`` cannot be read, is not valid, or asks for what wheelwise
    cannot do; ``str()`` is one line naming the file and the place in it."""
