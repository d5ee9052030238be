"""Errors of the index layer."""

from __future__ import annotations


class IndexBuildError(ValueError):
    """The wheel directory cannot be published as it is (the message says why)."""


class UploadRejected(ValueError):
    """An upload was refused; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
