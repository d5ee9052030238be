"""Errors about wheel archives."""

from __future__ import annotations

from pathlib import Path

from wheelwise.errors import WheelwiseError

# Some zipfile messages quote a whole damaged header: an error line keeps this much.
MAX_REASON_CHARS = 300


def describe(exc: BaseException) -> str:
    """*exc* as a short phrase on one line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


class WheelError(ValueError, WheelwiseError):
    """A wheel file is missing, unreadable or inconsistent."""


def renamed(error: WheelError, copy: Path, origin: str) -> WheelError:
    """*error* about the file *copy* (a scratch copy) saying *origin* instead: the
    file or URL the user gave."""
    return WheelError(str(error).replace(str(copy), origin))


class BuildError(WheelError):
    """A wheel could not be built from a source tree (``wheelwise build``).

    ``output`` holds the last lines the build backend (or the installer of its
    build requirements) printed, when there were any.
    """

    def __init__(self, message: str, *, output: str = "") -> None:
        super().__init__(message)
        self.output = output
