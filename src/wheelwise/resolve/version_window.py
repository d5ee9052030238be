"""The part of a sorted list of versions that a set of ranges can match, by bisection.

A project may have thousands of releases, and the resolver asks for the candidates
of one many times with different ranges (each boto3 release tried pins a narrow
botocore range). Checking every release against every range each time is work that
grows with (candidates x releases); the bounds of ``>=``, ``>``, ``<``, ``<=``,
``==`` and ``~=`` give a window by bisection instead, and only the releases inside
it are checked in full. The window may hold versions no range matches (it is a
bound, not the answer), never leave one out.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Sequence

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

__all__ = ["window"]


@functools.lru_cache(maxsize=4096)
def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _end_of_public(ascending: Sequence[Version], start: int, version: Version) -> int:
    """The index after the versions from *start* on whose public part is *version*'s
    (``1.0+local`` sorts after ``1.0``, and ``<=1.0`` and ``==1.0`` match it)."""
    public = _version(version.public)
    stop = start
    while stop < len(ascending) and _version(ascending[stop].public) == public:
        stop += 1
    return stop


def window(ascending: Sequence[Version], specifiers: Iterable[SpecifierSet]) -> tuple[int, int]:
    """``(start, stop)``: the versions of *ascending* (sorted, oldest first) that
    every range of *specifiers* may match lie in ``ascending[start:stop]``."""
    start, stop = 0, len(ascending)
    for specifier_set in specifiers:
        for spec in specifier_set:
            operator = spec.operator
            if operator not in (">=", ">", "<", "<=", "==", "~=") or spec.version.endswith(".*"):
                continue  # !=, ===, prefix matches: no bound
            version = _version(spec.version)
            if version is None:
                continue
            if operator in (">=", "~="):
                start = max(start, bisect.bisect_left(ascending, version))
            elif operator == ">":
                start = max(start, bisect.bisect_right(ascending, version))
            elif operator == "<":
                stop = min(stop, bisect.bisect_left(ascending, version))
            elif operator == "<=":
                found = bisect.bisect_right(ascending, version)
                stop = min(stop, _end_of_public(ascending, found, version))
            else:  # == without a wildcard: the version, with any local label
                first = bisect.bisect_left(ascending, version)
                start = max(start, first)
                if version.local is None:
                    stop = min(stop, _end_of_public(ascending, first, version))
                else:
                    stop = min(stop, bisect.bisect_right(ascending, version))
    return start, max(start, stop)
