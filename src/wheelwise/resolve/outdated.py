"""``wheelwise list --outdated``: for each installed distribution, the newest
release its sources offer for the environment, as ``pip list --outdated`` reads
it, with the variant build ``wheelwise install`` would choose of it for this machine.

The newest release is the newest version with a file the environment can take: a
wheel whose tags and ``Requires-Python`` fit (the best one, selected as an install
selects it, variant included), else an sdist where building is allowed; yanked files
are not, nor pre-releases without ``pre``. Nothing is downloaded but the pages and
the releases' variant metadata; nothing is built. The projects' pages are fetched
several at a time. The finder and the target come from the caller
(:func:`wheelwise.install.options.listing_finder`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.client.index_client import find_candidates
from wheelwise.client.index_file import SDIST
from wheelwise.resolve.finder import IndexFinder, IndexRelease, link_of
from wheelwise.resolve.selection import Selection, TargetSpec, select_wheel

if TYPE_CHECKING:
    from wheelwise.client.index_client import IndexFile, SourceListing
    from wheelwise.environment.installed import InstalledDist

__all__ = ["Newer", "newer_releases"]

# Project pages fetched at once.
_PAGES_AT_ONCE = 8
WHEEL_TYPE = "wheel"
SDIST_TYPE = "sdist"


@dataclass(frozen=True)
class Newer:
    """An installed distribution, and the newer release its sources offer."""

    name: str
    version: str
    variant: str | None
    latest: str
    # The variant label install would choose of the latest release (None: a
    # non-variant wheel, or an sdist).
    latest_variant: str | None
    # "wheel" or "sdist", as pip list --outdated says.
    latest_type: str


def newer_releases(
    dists: Sequence[InstalledDist],
    finder: IndexFinder,
    spec: TargetSpec,
    pre: bool,
    pages_at_once: int | None = None,
) -> list[Newer]:
    """Those of *dists* of which *finder*'s sources offer a newer release for
    *spec*'s target, in the order of *dists*; pre-releases only with *pre*. The
    pages are fetched *pages_at_once* at a time (default 8)."""
    installed = {canonicalize_name(d.name): (d, _version(d.version)) for d in dists}
    wanted = {name: (dist, version) for name, (dist, version) in installed.items() if version}
    listings = _pages(finder, list(wanted), pages_at_once or _PAGES_AT_ONCE)
    found = []
    for name, (dist, version) in wanted.items():
        assert version is not None
        releases = finder.versions(name, functools.partial(listings.get, name))
        newest = (
            _first_match(releases, finder, name, spec, pre, version)
            if finder.exhausts_indexes_in_order
            else _newest(releases, name, spec, pre, version)
        )
        if newest is None:
            continue
        release, selection = newest
        sdist = _is_sdist(selection)
        found.append(
            Newer(
                dist.name,
                dist.version,
                dist.variant,
                str(release.version),
                None if sdist else selection.label,
                SDIST_TYPE if sdist else WHEEL_TYPE,
            )
        )
    return found


def never_built(sdist: IndexFile, path: Path) -> Path:
    """The builder of a finder that lists sdists without building any: a finder
    lists them only with a builder, and listing never builds one."""
    raise RuntimeError(f"{sdist.filename}: listing releases builds nothing")


def _pages(
    finder: IndexFinder, names: Sequence[NormalizedName], at_once: int
) -> dict[str, list[SourceListing]]:
    """Every source's page of each of *names*, *at_once* fetched at a time."""
    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="page") as pool:
        pages = pool.map(
            lambda n: find_candidates(
                n, finder.sources, finder.client, finder.routes, finder.strategy
            ),
            names,
        )
        return dict(zip(names, pages, strict=True))


def _newest(
    releases: Sequence[IndexRelease],
    name: NormalizedName,
    spec: TargetSpec,
    pre: bool,
    installed: Version,
) -> tuple[IndexRelease, Selection] | None:
    """The newest of *releases* (oldest first) newer than *installed* with a file
    for the target, and the one install would choose of it; the releases at or
    below *installed* are not looked at (each may cost its variant metadata)."""
    for release in reversed(releases):
        if release.version <= installed:
            return None
        if release.version.is_prerelease and not pre:
            continue
        if not release.files:  # none fits, or only yanked ones
            continue
        chosen = select_wheel(name, release, spec)
        if isinstance(chosen, Selection):
            return release, chosen
    return None


def _first_match(
    releases: Sequence[IndexRelease],
    finder: IndexFinder,
    name: NormalizedName,
    spec: TargetSpec,
    pre: bool,
    installed: Version,
) -> tuple[IndexRelease, Selection] | None:
    """Under ``unsafe-first-match``: the release install would try first, when it is
    newer than *installed*: the first index's newest release with a file for the
    target, before the next index's; an index's pre-releases only where none of its
    final releases has one (as the resolver allows them, index by index)."""
    groups: dict[int, list[IndexRelease]] = {}
    for release in reversed(releases):  # newest first within each index
        groups.setdefault(finder.index_rank(release), []).append(release)
    for group in sorted(groups):
        first_pre: tuple[IndexRelease, Selection] | None = None
        for release in groups[group]:
            if not release.files:
                continue
            chosen = select_wheel(name, release, spec)
            if not isinstance(chosen, Selection):
                continue
            if release.version.is_prerelease and not pre:
                first_pre = first_pre or (release, chosen)
                continue
            return (release, chosen) if release.version > installed else None
        if first_pre is not None:
            return first_pre if first_pre[0].version > installed else None
    return None


def _is_sdist(selection: Selection) -> bool:
    return link_of(selection.file).file.kind == SDIST


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None
