"""Errors of reading package sources (indexes and find-links locations)."""

from __future__ import annotations

from wheelwise.errors import WheelwiseError


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


class AccessDenied(SourceError):
    """A source answered 401 or 403 (*status*): credentials are missing or refused."""

    def __init__(self, url: str, message: str, status: int) -> None:
        super().__init__(url, message)
        self.status = status
