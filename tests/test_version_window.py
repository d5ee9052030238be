"""The window of releases a set of ranges can match (wheelwise.resolve.version_window):
never too narrow, and narrow where the ranges bound it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fuzzkit import bounded
from wheelwise.resolve.version_window import window

FUZZ = bounded(300)

parts = st.sampled_from(["0", "1", "1.0", "1.0.0", "1.2", "1.10", "2", "2!1.0", "1.0.post1"])
suffixes = st.sampled_from(["", "rc1", "a0", ".dev3", ".post2", "+local", "+1.x", "b2.post1"])


def _joined(part: str, suffix: str) -> Version:
    try:
        return Version(part + suffix)
    except InvalidVersion:
        return Version(part)


versions = st.builds(_joined, parts, suffixes)
operators = st.sampled_from([">=", ">", "<", "<=", "==", "!=", "~=", "===", "=="])


@st.composite
def specifier_sets(draw: st.DrawFn) -> SpecifierSet:
    specs = []
    for _ in range(draw(st.integers(0, 3))):
        operator = draw(operators)
        version = str(draw(versions))
        if operator not in ("==", "!=", "==="):
            version = version.split("+")[0]  # a local label only with == and !=
        if operator == "~=" and "." not in version.split("!")[-1]:
            version += ".0"
        if operator in ("==", "!=") and draw(st.booleans()):
            version = version.split("+")[0] + ".*"
        try:
            specs.append(str(SpecifierSet(operator + version)))
        except InvalidSpecifier:
            continue
    return SpecifierSet(",".join(specs))


@pytest.mark.slow
@FUZZ
@given(st.lists(versions, max_size=30), st.lists(specifier_sets(), max_size=3))
def test_no_match_lies_outside_the_window(found: list[Version], ranges: list[SpecifierSet]) -> None:
    ascending = sorted(set(found))
    start, stop = window(ascending, ranges)
    assert 0 <= start <= stop <= len(ascending)
    for index, version in enumerate(ascending):
        if all(r.contains(version, prereleases=True) for r in ranges):
            assert start <= index < stop, (version, [str(r) for r in ranges])


def test_a_narrow_range_gives_a_narrow_window() -> None:
    ascending = [Version(f"1.{minor}.{patch}") for minor in range(45) for patch in range(100)]
    start, stop = window(ascending, [SpecifierSet(">=1.33.7,<1.33.8"), SpecifierSet("<1.30")])
    assert stop - start == 0
    start, stop = window(ascending, [SpecifierSet(">=1.33.7,<1.33.8")])
    assert ascending[start:stop] == [Version("1.33.7")]
    assert window(ascending, [SpecifierSet("==1.2.3")]) == (203, 204)
    assert window(ascending, [SpecifierSet("!=1.2.3")]) == (0, len(ascending))
