"""Errors of publishing: a static build that cannot go ahead, a refused upload."""

from __future__ import annotations

from wheelwise.errors import WheelwiseError


class IndexBuildError(ValueError, WheelwiseError):
    """The wheel directory cannot be published as it is (the message says why)."""


class UploadRejected(ValueError, WheelwiseError):
    """An upload was refused; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
