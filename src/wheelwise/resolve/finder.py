"""The resolver's :class:`~wheelwise.resolve.candidates.Finder` over package sources.

For every project, each source (``--index-url``, ``--extra-index-url``,
``--find-links``, in that order) is asked for its listing; the listings stay apart.
For every version, the first source in order with a viable wheel (compatible with
the target's tags and ``Requires-Python``, not yanked) is the one the release comes
from, and only that source's files and variant metadata are used (PEP 825
"Installing wheels from multiple sources").

A release's variant metadata is its ``*-variants.json``, fetched only when the
release has variant wheels; when the source lists none, the ``variant.json`` of one
wheel per label is read (the wheel is downloaded into the cache folder, where the
installer finds it again) and the documents are merged. Invalid metadata degrades
gracefully (PEP 825 "Implementation requirements"), each step with a warning: an
invalid ``*-variants.json`` (bad JSON, schema, unknown major version) gives way to
the wheels' own ``variant.json``; a wheel whose ``variant.json`` is unusable leaves
its label out (its wheels count as incompatible); with no usable metadata at all,
the release has none, and only its non-variant wheels can be chosen. Dependencies come from PEP
658 metadata when the source serves it, else from the wheel's ``METADATA``.

The finder only answers queries, each when first asked; what is fetched ahead of
the resolver is :mod:`wheelwise.resolve.lookahead`'s business, which hands the
finder listings it fetched already (:meth:`IndexFinder.versions`).
"""

from __future__ import annotations

import bisect
import functools
import os
import tempfile
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from packaging.tags import Tag
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wheelwise.cache.scratch import make_scratch
from wheelwise.client.index_client import (
    INDEX,
    IndexClient,
    IndexFile,
    IndexSource,
    InvalidPage,
    ProjectListing,
    Routes,
    SourceListing,
    find_candidates,
    first_viable_source,
    local_path,
)
from wheelwise.client.index_file import SDIST, python_allowed
from wheelwise.client.index_strategy import (
    FIRST_INDEX,
    UNSAFE_BEST_MATCH,
    UNSAFE_FIRST_MATCH,
    IndexStrategy,
)
from wheelwise.client.page_files import SDIST_LINK, WHEEL_LINK
from wheelwise.fetch.download import DownloadItem, Fetcher
from wheelwise.policy.hashes import file_sha256
from wheelwise.resolve.candidates import ReleaseFiles, WheelFile
from wheelwise.resolve.formats import FormatPolicy, wheels_only_advice
from wheelwise.resolve.upload_cutoff import UploadCutoffs, uploaded_before
from wheelwise.variants.labels import NULL_LABEL
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.core_metadata import read_core_metadata
from wheelwise.wheels.errors import WheelError, renamed

if TYPE_CHECKING:  # variant metadata loads only for releases with variant wheels
    from wheelwise.cache.wheel_cache import ContentStore
    from wheelwise.variants.metadata import VariantMetadata

__all__ = [
    "WHEELS_METADATA",
    "IndexFinder",
    "IndexRelease",
    "Link",
    "Warn",
    "link_of",
    "requires_dist",
]

# Where a release's variant metadata came from when no index file was used.
WHEELS_METADATA = "the variant.json of its variant wheels"

Warn = Callable[[str], None]
"""Receives one line for each problem the installer worked around (never raises)."""

BuildSource = Callable[[IndexFile, Path], Path]
"""Builds the sdist *file* (downloaded to the path) into a wheel; the wheel's path."""


class Link(NamedTuple):
    """Where a wheel of a release comes from: the index entry and its source."""

    file: IndexFile
    source: IndexSource


def requires_dist(metadata: bytes) -> list[str]:
    """The ``Requires-Dist`` values of a core metadata file."""
    return list(_fields(metadata)[0])


def requires_python(metadata: bytes) -> str | None:
    """The ``Requires-Python`` value of a core metadata file, if it has one."""
    return _fields(metadata)[1]


def provides_extra(metadata: bytes) -> frozenset[str]:
    """The ``Provides-Extra`` names of a core metadata file, normalized."""
    return _fields(metadata)[2]


@functools.lru_cache(maxsize=64)
def _fields(metadata: bytes) -> tuple[tuple[str, ...], str | None, frozenset[str]]:
    """All three, from one reading: the resolver asks for them of each wheel it pins."""
    found = read_core_metadata(metadata, body=False)
    extras = frozenset(canonicalize_name(e) for e in found.values("Provides-Extra"))
    return tuple(found.requires_dist), found.first("Requires-Python") or None, extras


class IndexRelease:
    """One version of a project, from the one source chosen for it among
    *listings*: chosen, and its wheels read, when first asked for (a listing may
    hold thousands of versions, and the resolver looks at a few)."""

    def __init__(
        self, version: Version, listings: Sequence[SourceListing], finder: IndexFinder
    ) -> None:
        self.version = version
        self.finder = finder
        self._listings = listings
        self._chosen: tuple[ProjectListing, list[WheelFile], list[WheelFile]] | None = None
        self._metadata: VariantMetadata | None = None
        self._loaded = False
        # Where the variant metadata came from: the ``*-variants.json`` URL, or
        # WHEELS_METADATA (None until loaded, or without any).
        self.variant_source: str | None = None
        # Why the release has no variant metadata although it has variant wheels.
        self.variant_metadata_problem: str | None = None

    def __repr__(self) -> str:
        return f"IndexRelease({self.version!s})"

    @property
    def listing(self) -> ProjectListing:
        return self._choose()[0]

    @property
    def files(self) -> Sequence[WheelFile]:
        """Its wheels the target may install: not yanked, ``Requires-Python`` met."""
        return self._choose()[1]

    @property
    def yanked_files(self) -> Sequence[WheelFile]:
        """Its yanked wheels with ``Requires-Python`` met, when it has no other
        (PEP 592: installed only when pinned with ``==`` or ``===``)."""
        return self._choose()[2]

    @property
    def source(self) -> IndexSource:
        return self.listing.source

    @property
    def listings(self) -> Sequence[SourceListing]:
        """Every source's listing of the project, the chosen one among them."""
        return self._listings

    def variant_metadata(self) -> VariantMetadata | None:
        if not self._loaded:
            self._metadata = self.finder.load_variant_metadata(self)
            self._loaded = True
        return self._metadata

    def _choose(self) -> tuple[ProjectListing, list[WheelFile], list[WheelFile]]:
        if self._chosen is None:
            self._chosen = self.finder.choose_source(self.version, self._listings)
        return self._chosen


def _with_null(metadata: VariantMetadata, files: Sequence[WheelFile]) -> VariantMetadata:
    """*metadata* with the ``null`` label where a wheel has it and the document does
    not list it: PEP 825 reserves that label for the variant with zero properties,
    "always compatible", so its meaning needs no listing."""
    if NULL_LABEL in metadata.variants or not any(f.filename.is_null_variant for f in files):
        return metadata
    return metadata.with_variants({**metadata.variants, NULL_LABEL: {}})


class IndexFinder:
    """Releases and dependencies from *sources*, for a target with *tags* and Python
    *python_version* (``X.Y.Z``). Wheels read for their metadata are kept in
    *cache_dir* (a temporary folder when not given; :meth:`close` removes it).

    Wheels read while resolving are downloaded by *fetcher* (the installer's one
    fetcher; else one with *wheel_cache* and the client's retry policy).
    *wheel_cache*, if given, supplies the wheels it holds, and keeps those
    downloaded. *warn* hears each problem with variant metadata that was worked
    around (see the module's docstring)."""

    def __init__(
        self,
        sources: Sequence[IndexSource],
        client: IndexClient,
        *,
        tags: Collection[Tag],
        python_version: str,
        cache_dir: Path | None = None,
        warn: Warn | None = None,
        wheel_cache: ContentStore | None = None,
        fetcher: Fetcher | None = None,
        build: BuildSource | None = None,
        formats: FormatPolicy | None = None,
        exclude_newer: UploadCutoffs | None = None,
        routes: Routes | None = None,
        strategy: IndexStrategy | None = None,
    ) -> None:
        if not sources:
            raise ValueError("IndexFinder needs at least one source")
        self.wheel_cache = wheel_cache
        self.fetcher = (
            fetcher
            if fetcher is not None
            else Fetcher(
                client.http_source, retry=client.retry, deadline=client.deadline, cache=wheel_cache
            )
        )
        self.warn: Warn = warn if warn is not None else _ignore
        self.sources = list(sources)
        # Projects with sources of their own, and how the sources combine (see
        # find_candidates).
        self.routes = routes
        self.strategy = strategy
        # unsafe-first-match: each index's group, the first tried first.
        indexes = [source for source in self.sources if source.kind == INDEX]
        self._ranks = {source: rank for rank, source in enumerate(indexes)}
        self.client = client
        self.tags = frozenset(tags)
        self.python_version = python_version
        self._temp: tempfile.TemporaryDirectory[str] | None = None
        if cache_dir is None:
            self._temp = make_scratch("wheels")
            cache_dir = Path(self._temp.name)
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.cache_dir = cache_dir
        self._releases: dict[NormalizedName, list[IndexRelease]] = {}
        self._listings: dict[NormalizedName, list[SourceListing]] = {}
        self._metadata: dict[str, bytes] = {}
        self._wheels: dict[str, Path] = {}
        # sdists are candidates only with a builder, and as the policy allows.
        self.build = build
        self.formats = formats if formats is not None else FormatPolicy()
        # The wheel built from each sdist, by the sdist's URL.
        self._built: dict[str, IndexFile] = {}
        # --exclude-newer's and --exclude-newer-package's moments: later files are
        # unseen, and how many versions that hid, by project (for messages).
        self.exclude_newer = exclude_newer
        self.hidden_versions: dict[NormalizedName, tuple[int, str]] = {}

    def close(self) -> None:
        if self._temp is not None:
            self._temp.cleanup()
            self._temp = None

    # -- Finder --------------------------------------------------------------------

    def versions(
        self,
        name: NormalizedName,
        fetched: Callable[[], list[SourceListing] | None] | None = None,
    ) -> Sequence[IndexRelease]:
        """The releases of *name*, oldest first. *fetched*, when the name is first
        asked for, may give its listings fetched already (None: fetched here)."""
        name = canonicalize_name(name)
        found = self._releases.get(name)
        if found is None:
            found = self._releases[name] = self._find(name, fetched)
        return found

    def sources_of(self, name: str | None) -> Sequence[IndexSource]:
        """The sources *name*'s releases are looked for in: its own, with routes;
        with ``first-index``, once its listings are read, those asked (the
        find-links sources and the indexes up to the first that lists it)."""
        key = canonicalize_name(name) if name else None
        own = self.routes.get(key) if self.routes and key else None
        if own is not None:
            return own
        read = self._listings.get(key, []) if key is not None else []
        if self.strategy == FIRST_INDEX:
            chosen = [e.position for e in read if e.source.kind == INDEX and e.listing.found]
            if chosen:
                return self.sources[: chosen[0] + 1]
        return self.sources

    def strategy_advice(self, name: str | None) -> str:
        """Under ``first-index``, when indexes after the one that lists *name* were not
        asked: which strategy asks them (empty otherwise)."""
        routed = bool(self.routes and name and canonicalize_name(name) in self.routes)
        if self.strategy != FIRST_INDEX or routed:
            return ""  # a project with its own indexes reads them whatever the strategy
        if len(self.sources_of(name)) == len(self.sources):
            return ""
        return (
            f" (--index-strategy {FIRST_INDEX} reads only the first index that lists "
            f"{name}; --index-strategy {UNSAFE_BEST_MATCH} reads every index)"
        )

    @property
    def exhausts_indexes_in_order(self) -> bool:
        """Whether the resolver tries every release of one index before the next's
        (``unsafe-first-match``; see :meth:`index_rank`)."""
        return self.strategy == UNSAFE_FIRST_MATCH

    def index_rank(self, release: ReleaseFiles) -> int:
        """The group of the index *release* comes from (0 is tried first): a
        find-links file's is that of the first index that lists its project (uv
        reads them with every index that does)."""
        if not isinstance(release, IndexRelease):
            return 0
        rank = self._ranks.get(release.source)
        if rank is not None:
            return rank
        listed = [
            self._ranks[entry.source]
            for entry in release.listings
            if entry.source in self._ranks and entry.listing.found
        ]
        return min(listed, default=0)

    def knows(self, name: NormalizedName) -> bool:
        """Whether the releases of *name* were asked for already."""
        return canonicalize_name(name) in self._releases

    def dependencies(self, file: WheelFile) -> list[str]:
        return requires_dist(self.core_metadata(file))

    def missing_extras(
        self, file: WheelFile, extras: frozenset[str], metadata: bytes | None = None
    ) -> frozenset[str]:
        """Those of *extras* (normalized) that *file*'s metadata (*metadata*, else
        read here) does not provide; none when it lists no ``Provides-Extra`` at all
        (older metadata leaves them out)."""
        provided = provides_extra(self.core_metadata(file) if metadata is None else metadata)
        return extras - provided if provided else frozenset()

    def python_excluded(self, file: WheelFile, metadata: bytes | None = None) -> str | None:
        """The ``Requires-Python`` of *file*'s own metadata (*metadata*, else read
        here) when it leaves out the target's Python and the index did not give it
        (an index's range is applied before: :meth:`viable`); else None."""
        if _link(file).file.requires_python:
            return None
        found = requires_python(self.core_metadata(file) if metadata is None else metadata)
        if found is None or python_allowed(found, self.python_version):
            return None
        return found

    # -- helpers ---------------------------------------------------------------------

    def release(self, name: str, version: Version) -> IndexRelease | None:
        releases = self.versions(canonicalize_name(name))  # oldest first
        index = bisect.bisect_left(releases, version, key=lambda release: release.version)
        if index < len(releases) and releases[index].version == version:
            return releases[index]
        return None

    def core_metadata(self, file: WheelFile) -> bytes:
        """The ``METADATA`` of *file* (PEP 658 when served, else from the wheel; for an
        sdist, from the wheel built from it)."""
        link = _link(file)
        found = self._metadata.get(link.file.url)
        if found is not None:
            return found
        wheel = self.built(link.file) if link.file.kind == SDIST else link.file
        if wheel.core_metadata:
            found = self.client.fetch_metadata(wheel)
        else:
            path = self.wheel_path(wheel)
            try:
                with WheelArchive(path) as archive:
                    found = archive.metadata()
            except WheelError as exc:  # named as the user gave it, not the scratch copy
                item = DownloadItem(wheel.url, wheel.hashes, wheel.filename)
                raise renamed(exc, path, item.origin) from None
        self._metadata[link.file.url] = found
        return found

    def built(self, sdist: IndexFile) -> IndexFile:
        """The wheel built from *sdist* (built now if need be), as a local file."""
        found = self._built.get(sdist.url)
        if found is None:
            if self.build is None:  # pragma: no cover - sdists are listed only with one
                raise RuntimeError("no builder for source distributions")
            archive = self.wheel_path(sdist)
            path = self.build(sdist, archive)
            found = IndexFile(
                filename=path.name,
                url=path.as_uri(),
                hashes={"sha256": file_sha256(path)},
                size=path.stat().st_size,
            )
            self._built[sdist.url] = found
            self._wheels[found.url] = path
        return found

    def built_from(self, sdist: IndexFile) -> IndexFile | None:
        """The wheel built from *sdist*, if it was built."""
        return self._built.get(sdist.url)

    def wheel_path(self, file: IndexFile) -> Path:
        """*file* downloaded by the fetcher (verified, onto disk: a wheel may be big)
        into the cache folder, or the wheel cache's verified copy."""
        found = self._wheels.get(file.url)
        if found is None:
            folder = Path(tempfile.mkdtemp(prefix="w-", dir=self.cache_dir))
            item = DownloadItem(file.url, file.hashes, file.filename, file.size)
            found = self._wheels[file.url] = self.fetcher.fetch_to(item, folder)
        return found

    def has_wheel(self, file: IndexFile) -> bool:
        """Whether *file* was downloaded while resolving."""
        return file.url in self._wheels

    def downloaded(self, url: str) -> Path | None:
        """The wheel at *url*, if it was downloaded while resolving."""
        found = self._wheels.get(url)
        return found if found is not None and found.is_file() else None

    def viable(self, file: IndexFile) -> bool:
        """A wheel the target can use: tags, ``Requires-Python``, not yanked."""
        wheel = file.wheel
        return (
            wheel is not None
            and not file.yanked
            and file.allows_python(self.python_version)
            and any(tag in self.tags for tag in wheel.tags)
        )

    def built_from_source(self, release: IndexRelease) -> bool:
        """With --prefer-binary: whether *release* would be built from its sdist (no
        wheel of it fits the target), so that releases with wheels come first."""
        files = release.files or release.yanked_files
        return (
            self.formats.prefer_binary
            and bool(files)
            and all(_link(file).file.kind == SDIST for file in files)
        )

    def admits(self, file: IndexFile, source: IndexSource, name: NormalizedName) -> bool:
        """Whether *file* of project *name*, listed by *source*, was uploaded before
        its --exclude-newer(-package) moment (if any). Only an index gives upload
        times: files of find-links folders and pages, and those of direct references,
        are taken, as uv takes them."""
        if self.exclude_newer is None or source.kind != INDEX:
            return True
        cutoff = self.exclude_newer.of(name)
        return cutoff is None or uploaded_before(file.upload_time, cutoff)

    def _find(
        self, name: NormalizedName, fetched: Callable[[], list[SourceListing] | None] | None
    ) -> list[IndexRelease]:
        listings = fetched() if fetched is not None else None
        if listings is None:
            listings = find_candidates(name, self.sources, self.client, self.routes, self.strategy)
        self._listings[name] = listings
        return self.releases_from(listings)

    def source_only_versions(self, name: NormalizedName) -> list[Version]:
        """The versions of *name* the sources list source distributions of, and no
        wheels, where building them is off (for messages)."""
        if self._kinds(canonicalize_name(name)) & SDIST_LINK:
            return []
        self.versions(name)
        listings = self._listings.get(canonicalize_name(name), [])
        wheels = {v for entry in listings for v in entry.listing.versions(WHEEL_LINK)}
        sources = {v for entry in listings for v in entry.listing.versions(SDIST_LINK)}
        return sorted(sources - wheels)

    def _kinds(self, name: NormalizedName) -> int:
        """The kinds of file *name* may be installed from (WHEEL_LINK, SDIST_LINK)."""
        kinds = WHEEL_LINK if self.formats.takes_wheels(name) else 0
        if self.build is not None and self.formats.builds(name):
            kinds |= SDIST_LINK
        return kinds

    def not_built_reason(self, name: NormalizedName, version: Version) -> str:
        """Why the source distributions of *name* are not built (for messages)."""
        if self.build is None:
            return wheels_only_advice(name, version)
        option = self.formats.why_not_built(canonicalize_name(name))
        return f"it is not built, as {option} is given"

    def releases_from(self, listings: list[SourceListing]) -> list[IndexRelease]:
        """A release for each version that a source lists wheels of, or an sdist of
        where it may be built (read lazily)."""
        if not listings:
            return []
        kinds = self._kinds(listings[0].listing.name)
        if len(listings) == 1:  # sorted already, and without duplicates
            versions = listings[0].listing.versions(kinds) if kinds else []
        else:
            versions = sorted({v for e in listings for v in e.listing.versions(kinds)})
        if self.exclude_newer is not None:
            listed = len(versions)
            versions = [
                v
                for v in versions
                if any(
                    self.admits(f, e.listing.source, e.listing.name)
                    for e in listings
                    for f in e.listing.files_for(v)
                )
            ]
            name = listings[0].listing.name
            self.hidden_versions[name] = (listed - len(versions), self.exclude_newer.option(name))
        return [IndexRelease(version, listings, self) for version in versions]

    def choose_source(
        self, version: Version, listings: Sequence[SourceListing]
    ) -> tuple[ProjectListing, list[WheelFile], list[WheelFile]]:
        """The listing *version* comes from (the first source with a viable wheel of
        it; else, where it may be built, the first with an sdist of it; else the
        first with any wheel of it, so that the resolver can say what was
        available), its installable files and its yanked ones (only when it has no
        other). An sdist stands in as a wheel named ``{name}-{version}-py3-none-any``
        whose link is the sdist: built when its dependencies are asked for."""
        kinds = self._kinds(listings[0].listing.name) if listings else WHEEL_LINK
        if self.strategy == UNSAFE_FIRST_MATCH:
            listings = self._owner(version, listings)
        chosen = self._first_viable(version, listings) if kinds & WHEEL_LINK else None
        if chosen is None and kinds & SDIST_LINK:
            found = self._sdist_source(version, listings)
            if found is not None:
                return found
        if chosen is None:
            chosen = next((e for e in listings if e.listing.wheels_for(version)), listings[0])
        listing = chosen.listing
        usable: list[WheelFile] = []
        yanked: list[WheelFile] = []
        if kinds & WHEEL_LINK:
            for file in listing.wheels_for(version):
                if (
                    file.wheel is not None
                    and file.allows_python(self.python_version)
                    and self.admits(file, listing.source, listing.name)
                ):
                    wheel = WheelFile(file.wheel, Link(file, listing.source))
                    (yanked if file.yanked else usable).append(wheel)
        return listing, usable, ([] if usable else yanked)

    def _owner(self, version: Version, listings: Sequence[SourceListing]) -> list[SourceListing]:
        """Under ``unsafe-first-match``, the listings whose files of *version* are
        looked at: the find-links sources that have it (they come first, see
        :func:`~wheelwise.client.index_strategy.find_links_first`), else the first
        index that lists it (a later index's are never looked at, even where this
        one's do not fit the target, as in uv)."""
        owners = [entry for entry in listings if entry.listing.files_for(version)]
        if not owners:
            return list(listings)
        links = [entry for entry in owners if entry.source.kind != INDEX]
        return links or owners[:1]

    def _first_viable(
        self, version: Version, listings: Sequence[SourceListing]
    ) -> SourceListing | None:
        """The first listing with a viable wheel of *version* that --exclude-newer
        admits (see :func:`first_viable_source`)."""
        if self.exclude_newer is None:
            return first_viable_source(version, listings, self.viable)
        for entry in listings:
            source = entry.listing.source
            if any(
                self.viable(f) and self.admits(f, source, entry.listing.name)
                for f in entry.listing.files_for(version)
            ):
                return entry
        return None

    def _sdist_source(
        self, version: Version, listings: Sequence[SourceListing]
    ) -> tuple[ProjectListing, list[WheelFile], list[WheelFile]] | None:
        """The first source's sdist of *version* with ``Requires-Python`` met (not
        yanked; else yanked, PEP 592), as a stand-in wheel."""
        for want_yanked in (False, True):
            for entry in listings:
                for file in entry.listing.files_for(version):
                    if (
                        file.kind == SDIST
                        and file.yanked == want_yanked
                        and file.allows_python(self.python_version)
                        and self.admits(file, entry.listing.source, entry.listing.name)
                    ):
                        name = entry.listing.name.replace("-", "_")
                        stand_in = WheelFile.parse(
                            f"{name}-{version}-py3-none-any.whl", Link(file, entry.listing.source)
                        )
                        files = [stand_in]
                        return (
                            entry.listing,
                            ([] if want_yanked else files),
                            (files if want_yanked else []),
                        )
        return None

    def load_variant_metadata(self, release: IndexRelease) -> VariantMetadata | None:
        """The release's ``*-variants.json``, else the merged ``variant.json`` of one
        tag-compatible wheel per label; None without variant wheels, or when no
        usable metadata was found (``release.variant_metadata_problem`` says why)."""
        variant_files = [
            f for f in (release.files or release.yanked_files) if f.filename.is_variant
        ]
        if not variant_files:
            return None
        listed = release.listing.variants_json(release.version)
        if listed is not None:
            try:
                metadata = self.client.fetch_variants_json(listed)
            except InvalidPage as exc:  # only the document itself is invalid
                self.warn(f"{exc.message}; reading each variant wheel's own variant.json instead")
            else:
                release.variant_source = listed.url
                metadata = _with_null(metadata, variant_files)
                self._warn_unlisted(release, variant_files, metadata, listed.filename)
                return metadata
        merged = self._metadata_from_wheels(release, variant_files)
        if merged is not None:
            release.variant_source = WHEELS_METADATA
        return merged

    def _warn_unlisted(
        self,
        release: IndexRelease,
        variant_files: Sequence[WheelFile],
        metadata: VariantMetadata,
        document: str,
    ) -> None:
        """Warn of variant wheels whose label *document* lacks: PEP 825 has them
        treated as incompatible (the selection says so too), and a publisher who
        added a build without regenerating the file wants to know."""
        unlisted = sorted(
            {
                label
                for f in variant_files
                if (label := f.filename.variant_label) is not None
                and label not in metadata.variants
            }
        )
        if unlisted:
            names = ", ".join(repr(label) for label in unlisted[:5])
            more = f" and {len(unlisted) - 5} more" if len(unlisted) > 5 else ""
            self.warn(
                f"{release.listing.name} {release.version}: {document} does not list the "
                f"variant label(s) {names}{more} of its wheels; those wheels are treated as "
                "incompatible (PEP 825). The index should publish a variants.json that "
                "lists every variant wheel"
            )

    def _metadata_from_wheels(
        self, release: IndexRelease, variant_files: Sequence[WheelFile]
    ) -> VariantMetadata | None:
        from wheelwise.variants.errors import VariantError
        from wheelwise.variants.merging import merge
        from wheelwise.wheels.errors import WheelError
        from wheelwise.wheels.variant_info import read_wheel_variant

        per_label: dict[str, IndexFile] = {}
        for file in variant_files:
            link = _link(file)
            label = file.filename.variant_label
            compatible = any(tag in self.tags for tag in file.filename.tags)
            if label is not None and compatible and label not in per_label:
                per_label[label] = link.file
        where = f"{release.listing.name} {release.version}"
        documents = []
        for label, index_file in per_label.items():
            path = self.wheel_path(index_file)
            try:
                metadata = read_wheel_variant(path).metadata
            except WheelError as exc:
                reason = str(exc).replace(str(path), index_file.url)  # not the cache folder
                self.warn(f"{reason}; the variant {label!r} of {where} is treated as incompatible")
                continue
            if metadata is not None:
                documents.append(metadata)
        problem = None
        if not documents:
            problem = "no variant wheel has a usable variant.json"
        else:
            try:
                return merge(documents)
            except VariantError as exc:
                problem = f"its variant wheels' variant.json disagree ({exc})"
        release.variant_metadata_problem = problem
        self.warn(
            f"{where}: {problem}: its variant wheels are treated as incompatible, and only a "
            "non-variant wheel can be installed"
        )
        return None


def _ignore(message: str) -> None:
    pass


def link_of(file: WheelFile) -> Link:
    """Where *file*, a wheel this module listed, comes from."""
    return _link(file)


def _link(file: WheelFile) -> Link:
    if not isinstance(file.link, Link):  # pragma: no cover - files come from this module
        raise TypeError(f"{file}: not a wheel from an index source")
    return file.link


def source_label(source: IndexSource) -> str:
    """How the output names a source: its URL (a path for local ones)."""
    if source.is_local:
        return str(local_path(source.url)).rstrip(os.sep) or source.url
    return source.url
