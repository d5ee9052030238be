"""``wheelwise list --outdated``: for each installed distribution, the newest
release its sources offer for the environment, as ``pip list --outdated`` reads
it, with the variant build ``wheelwise install`` would choose of it for this machine.

The newest release is the newest version with a file the environment can take: a
wheel whose tags and ``Requires-Python`` fit (the best one, selected as an install
selects it, variant included), else an sdist where building is allowed; yanked files
are not, nor pre-releases without ``pre``. Nothing is downloaded but the pages and
the releases' variant metadata; nothing is built. The projects' pages are fetched
several at a time.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.client.index_client import find_candidates
from wheelwise.client.index_file import SDIST
from wheelwise.install.options import (
    InstallOptions,
    caches_for,
    index_client,
    sources_for,
    supported_for,
)
from wheelwise.resolve.finder import IndexFinder, IndexRelease, link_of
from wheelwise.resolve.selection import Selection, TargetSpec, select_wheel

if TYPE_CHECKING:
    from wheelwise.cache.stores import ContentCache
    from wheelwise.client.index_client import IndexFile, SourceListing
    from wheelwise.environment.installed import InstalledDist
    from wheelwise.environment.interpreter import TargetEnvironment

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
    dists: Sequence[InstalledDist], env: TargetEnvironment, options: InstallOptions
) -> list[Newer]:
    """Those of *dists* whose sources, as *options* give them, offer a newer release
    for *env*, in the order of *dists*."""
    wanted = [dist for dist in dists if _version(dist.version) is not None]
    if not wanted:
        return []
    cache_root, kept = caches_for(options)
    with _finder(env, options, cache_root, kept) as finder:
        listings = _pages(finder, [canonicalize_name(dist.name) for dist in wanted])
        spec = TargetSpec(
            env.tags,
            supported_for(options, env.markers),
            no_variant=options.no_variant,
            variant_choice={canonicalize_name(n): v for n, v in options.variant_choice.items()},
        )
        found = []
        for dist in wanted:
            name = canonicalize_name(dist.name)
            releases = finder.versions(name, functools.partial(listings.get, name))
            newest = _newest(releases, name, spec, options.pre)
            installed = _version(dist.version)
            if newest is None or installed is None or newest[0].version <= installed:
                continue
            release, selection = newest
            found.append(
                Newer(
                    dist.name,
                    dist.version,
                    dist.variant,
                    str(release.version),
                    None if _is_sdist(selection) else selection.label,
                    SDIST_TYPE if _is_sdist(selection) else WHEEL_TYPE,
                )
            )
        return found


@contextlib.contextmanager
def _finder(
    env: TargetEnvironment, options: InstallOptions, cache_root: Path, kept: ContentCache | None
) -> Iterator[IndexFinder]:
    with index_client(options, cache_root, kept) as client:
        finder = IndexFinder(
            sources_for(options),
            client,
            tags=env.tags,
            python_version=".".join(str(part) for part in env.version_info),
            warn=options.warn,
            wheel_cache=kept.wheels if kept is not None else None,
            build=_never_built,
            formats=options.formats,
            exclude_newer=options.exclude_newer,
        )
        try:
            yield finder
        finally:
            finder.close()


def _never_built(sdist: IndexFile, path: Path) -> Path:
    """The finder lists sdists only with a builder; listing never builds one."""
    raise RuntimeError(f"{sdist.filename}: list --outdated builds nothing")


def _pages(finder: IndexFinder, names: Sequence[NormalizedName]) -> dict[str, list[SourceListing]]:
    """Every source's page of each of *names*, several fetched at once."""
    with ThreadPoolExecutor(max_workers=_PAGES_AT_ONCE, thread_name_prefix="page") as pool:
        pages = pool.map(lambda n: find_candidates(n, finder.sources, finder.client), names)
        return dict(zip(names, pages, strict=True))


def _newest(
    releases: Sequence[IndexRelease],
    name: NormalizedName,
    spec: TargetSpec,
    pre: bool,
) -> tuple[IndexRelease, Selection] | None:
    """The newest of *releases* (oldest first) with a file for the target, and the
    one install would choose of it."""
    for release in reversed(releases):
        if release.version.is_prerelease and not pre:
            continue
        if not release.files:  # none fits, or only yanked ones
            continue
        chosen = select_wheel(name, release, spec)
        if isinstance(chosen, Selection):
            return release, chosen
    return None


def _is_sdist(selection: Selection) -> bool:
    return link_of(selection.file).file.kind == SDIST


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None
