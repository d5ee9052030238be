"""``--exclude-newer``: only files uploaded before a moment, as uv takes it; and
``--exclude-newer-package NAME=MOMENT`` (or ``NAME=false``: no moment), one project's
own, which comes before it.

The moment is an RFC 3339 timestamp (``2024-05-01T12:00:00Z``; without an offset,
this machine's time zone), a date (``2024-05-01``: the whole day here, so the next
midnight, as uv reads it), or a span
back from now: ``7 days``, ``24 hours``, ``2 weeks`` or ISO 8601's ``P7D``,
``PT24H`` (a day is 24 hours). A file's upload time is its page's ``upload-time``
(PEP 700; ``data-upload-time`` on an HTML page, as PyTorch's index writes it). A
file without one is left out, as uv leaves it out: nothing says it is old enough.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from packaging.utils import InvalidName, NormalizedName, canonicalize_name

from wheelwise.errors import WheelwiseError

__all__ = [
    "CutoffError",
    "UploadCutoffs",
    "parse_cutoff",
    "parse_project_cutoff",
    "uploaded_before",
]


class CutoffError(ValueError, WheelwiseError):
    """An ``--exclude-newer`` value that is no moment."""


_STAMP = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[Tt ](?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.(?P<fraction>\d{1,9}))?)?"
    r"(?P<offset>[Zz]|[+-]\d{2}:?\d{2})?)?"
)
_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_FRIENDLY = re.compile(r"(\d{1,9})\s*([a-z]+)")
_ISO_SPAN = re.compile(
    r"P(?:(?P<w>\d{1,9})W)?(?:(?P<d>\d{1,9})D)?(?:T(?:(?P<h>\d{1,9})H)?(?:(?P<m>\d{1,9})M)?(?:(?P<s>\d{1,9})S)?)?"
)


def _stamp(text: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp or a date; None if *text*
    is neither (a ValueError for one with impossible fields)."""
    found = _STAMP.fullmatch(text.strip())
    if found is None:
        return None
    year, month, day = (int(part) for part in found["date"].split("-"))
    fraction = (found["fraction"] or "0")[:6].ljust(6, "0")
    moment = datetime(
        year,
        month,
        day,
        int(found["hour"] or 0),
        int(found["minute"] or 0),
        int(found["second"] or 0),
        int(fraction),
    )
    offset = found["offset"]
    if found["hour"] is None:  # a date: up to its end, here
        moment += timedelta(days=1)
    if offset is None:
        return moment.astimezone().timestamp()  # this machine's time zone
    if offset in ("Z", "z"):
        return moment.replace(tzinfo=timezone.utc).timestamp()
    sign = -1 if offset[0] == "-" else 1
    digits = offset[1:].replace(":", "")
    shift = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return moment.replace(tzinfo=timezone(sign * shift)).timestamp()


def _span(text: str) -> float | None:
    """Seconds of ``7 days``, ``1 week 2 days`` or ``P7D``; None if *text* is no span."""
    iso = _ISO_SPAN.fullmatch(text)
    if iso is not None and text not in ("P", "PT") and not text.endswith("T"):
        weights = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
        return float(sum(int(iso[key] or 0) * weight for key, weight in weights.items()))
    lowered = text.lower().replace(",", " ")
    parts = _FRIENDLY.findall(lowered)
    if not parts or _FRIENDLY.sub("", lowered).strip():
        return None
    if any(unit not in _UNITS for _, unit in parts):
        return None
    return float(sum(int(count) * _UNITS[unit] for count, unit in parts))


def parse_cutoff(text: str, now: float | None = None) -> float:
    """The moment *text* names, in seconds since the epoch (*now*: the clock)."""
    shown = repr(text) if len(text) <= 40 else repr(text[:37] + "...")
    try:
        stamp = _stamp(text)
    except (ValueError, OverflowError, OSError) as exc:  # fields out of range
        raise CutoffError(f"{shown} is not a valid date ({exc})") from None
    if stamp is not None:
        return stamp
    span = _span(text.strip())
    if span is None:
        raise CutoffError(
            f"{shown} is not a moment: give a date (2024-05-01), a timestamp "
            "(2024-05-01T12:00:00Z) or a span back from now (7 days, P7D)"
        )
    return (time.time() if now is None else now) - span


def parse_project_cutoff(
    text: str, now: float | None = None
) -> tuple[NormalizedName, float | None]:
    """``NAME=MOMENT`` as uv's ``--exclude-newer-package`` takes it: the project's
    normalized name and its moment (None for ``NAME=false``: no moment for it)."""
    name, equals, moment = text.partition("=")
    shown = repr(text) if len(text) <= 60 else repr(text[:57] + "...")
    if not equals:
        raise CutoffError(f"{shown} is not NAME=MOMENT (or NAME=false)")
    try:
        project = canonicalize_name(name, validate=True)
    except InvalidName:
        raise CutoffError(f"{shown}: {name!r} is not a project name") from None
    if moment == "false":  # as uv spells it
        return project, None
    return project, parse_cutoff(moment, now)


@dataclass(frozen=True)
class UploadCutoffs:
    """The moment before which a project's files were uploaded to be seen: its own
    (``--exclude-newer-package``), else everyone's (``--exclude-newer``)."""

    default: float | None = None
    # By normalized name; None: no moment for that project.
    projects: Mapping[NormalizedName, float | None] = field(default_factory=dict)

    def of(self, name: NormalizedName) -> float | None:
        return self.projects.get(name, self.default)

    def option(self, name: NormalizedName) -> str:
        """The option that set *name*'s moment (for messages)."""
        return "--exclude-newer-package" if name in self.projects else "--exclude-newer"


@functools.lru_cache(maxsize=4096)
def _uploaded(text: str) -> float | None:
    try:
        return _stamp(text)
    except (ValueError, OverflowError, OSError):
        return None


def uploaded_before(upload_time: str | None, cutoff: float) -> bool:
    """Whether a file uploaded at *upload_time* (a page's value; None: not given)
    was uploaded before *cutoff*: a time that does not parse is none."""
    if upload_time is None:
        return False
    moment = _uploaded(upload_time)
    return moment is not None and moment < cutoff
