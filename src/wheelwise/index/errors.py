"""Errors of the index layer."""

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


class SourceError(WheelwiseError):
    """A package source (index or find-links location) could not be read.

    The message says which URL, what happened and what to check; ``url`` is the
    URL (or path) that failed.
    """

    def __init__(self, url: str, message: str) -> None:
        super().__init__(message)
        self.url = url
        self.message = message


class SourceTimeout(SourceError):
    """A source did not answer in time (``--timeout`` or the request's deadline)."""


class InvalidPage(SourceError):
    """A page or file of a source is not what the Simple Repository API allows."""


class HashMismatch(SourceError):
    """A downloaded file does not have the hash its index page gave for it."""
