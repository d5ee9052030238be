"""Errors about wheel archives."""

from __future__ import annotations


class WheelError(ValueError):
    """A wheel file is missing, unreadable or inconsistent."""


class BuildError(WheelError):
    """A wheel could not be built from a source tree (``wheelwise build``).

    ``output`` holds the last lines the build backend (or the installer of its
    build requirements) printed, when there were any.
    """

    def __init__(self, message: str, *, output: str = "") -> None:
        super().__init__(message)
        self.output = output
