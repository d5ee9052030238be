"""Conditional and range requests (RFC 9110), as pure functions.

* ``If-None-Match`` uses the weak comparison: ``W/"x"`` matches ``"x"``; ``*``
  matches any current representation.
* ``Range``: one ``bytes=`` range (``a-b``, ``a-``, ``-n``). A header that does
  not parse, another unit, or several ranges are ignored: the whole file is sent,
  as RFC 9110 allows. A range that starts past the end is unsatisfiable (416).
* ``If-Range`` with a strong ETag that no longer matches: the whole file.
"""

from __future__ import annotations

from dataclasses import dataclass


def etag_for(digest: str) -> str:
    """A strong entity tag from a hex digest."""
    return f'"{digest}"'


def _tags(header: str) -> list[str]:
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def none_match(if_none_match: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` says the client already has *etag* (answer 304)."""
    if if_none_match is None:
        return False
    bare = etag.removeprefix("W/")
    return any(tag == "*" or tag.removeprefix("W/") == bare for tag in _tags(if_none_match))


@dataclass(frozen=True)
class ByteRange:
    start: int
    end: int  # inclusive

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.end}/{size}"


class Unsatisfiable:
    """A syntactically valid range that selects nothing of the file (416)."""

    def content_range(self, size: int) -> str:
        return f"bytes */{size}"


UNSATISFIABLE = Unsatisfiable()


def _digits(text: str) -> bool:
    """Empty, or ASCII digits only."""
    return text == "" or (text.isascii() and text.isdigit())


# Past any file size; a longer number is read as this (int() of thousands of digits
# is slow, and refused past 4,300).
_HUGE = 1 << 63


def _number(text: str) -> int:
    digits = text.lstrip("0")
    return _HUGE if len(digits) > len(str(_HUGE)) else int(digits or "0")


def parse_range(
    header: str | None, size: int, *, if_range: str | None = None, etag: str | None = None
) -> ByteRange | Unsatisfiable | None:
    """The part of a *size*-byte file to send; None for the whole file (200)."""
    if header is None:
        return None
    if if_range is not None and (etag is None or if_range.strip() != etag or etag.startswith("W/")):
        return None
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash or not _digits(first) or not _digits(last):
        return None
    if first == "":
        if last == "":
            return None
        suffix = _number(last)
        if suffix == 0 or size == 0:
            return UNSATISFIABLE
        return ByteRange(max(size - suffix, 0), size - 1)
    start = _number(first)
    end = _number(last) if last else size - 1
    if last and end < start:
        return None  # invalid: ignored
    if start >= size:
        return UNSATISFIABLE
    return ByteRange(start, min(end, size - 1))
