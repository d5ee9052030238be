"""What the installer fetches ahead of need, so that the resolver seldom waits.

The resolver asks one question at a time (a project's releases, a wheel's
dependencies), and each answer is a round trip. Most questions can be guessed: the
requested projects, the dependencies of each pinned candidate, the next releases of
a project the resolver works back through; and the wheel of a pin is usually the one
installed. :class:`Lookahead` acts on those guesses in background threads:

* the listings of the projects the resolver will probably ask for;
* the PEP 658 metadata of the wheels it will probably read next: a few viable wheels
  of the newest release in a range, and the next releases of a project it works
  back through;
* the wheels of pinned candidates, and the one wheel that alone can satisfy a range,
  downloaded into memory by the installer's :class:`~wheelwise.fetch.download.Fetcher`
  (one try) and verified as they complete, so that most are there when resolution
  ends. A small one is read for its ``METADATA`` rather than fetching its metadata
  file: one request less, for a wait of about one round trip.

What needs no fetching at all: a wheel (or sdist) of exactly the distribution that
is installed and kept (:meth:`Lookahead.keep_installed`) is answered from the
installed ``METADATA``, as pip reads an installed candidate's: an sdist-only release
is not built again just to read its dependencies.

It stands between the resolver and the :class:`~wheelwise.resolve.finder.IndexFinder`:
the resolver asks it (it is a :class:`~wheelwise.resolve.candidates.Finder`) and
tells it what it is about to do (it is the resolver's
:class:`~wheelwise.resolve.candidates.Hints`); it answers from what it fetched ahead,
else asks the finder, which knows nothing of it. A wrong guess costs a request,
nothing more: whatever fails here is dropped, and the question is asked again the
plain way, which reports the failure.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name, canonicalize_version
from packaging.version import InvalidVersion, Version

from wheelwise.client.errors import SourceError
from wheelwise.client.index_client import (
    IndexClient,
    IndexFile,
    IndexSource,
    Routes,
    SourceListing,
)
from wheelwise.client.index_file import WHEEL
from wheelwise.client.index_strategy import IndexStrategy
from wheelwise.environment.installed import InstalledDist, read_metadata
from wheelwise.fetch.download import DownloadItem, Fetched, Fetcher
from wheelwise.models.errors import DownloadDeadline
from wheelwise.resolve.candidates import ReleaseFiles, WheelFile
from wheelwise.resolve.finder import IndexFinder, IndexRelease, link_of, requires_dist
from wheelwise.resolve.prefetch import ListingPrefetcher
from wheelwise.variants.filenames import WheelFilename
from wheelwise.wheels.core_metadata import CoreMetadataError

if TYPE_CHECKING:
    from wheelwise.fetch.verify import VerifiedWheel

__all__ = ["Lookahead", "item_of"]

# Wheels of one release whose metadata is fetched ahead (platform wheels of a
# binary project: usually one or two fit the target).
WARM_FILES = 3

# A wheel downloaded early that is at most this big is read for its METADATA rather
# than fetching its PEP 658 file: one request less, for a wait that on most links is
# about one round trip. A bigger one gets its metadata file fetched as usual.
SMALL_WHEEL = 512 << 10

# Early downloads at once: they share the link with the resolver's own requests.
EARLY_WORKERS = 4

# Where the METADATA of a wheel downloaded early comes from: not decided yet (its
# size is not known), the wheel, or its metadata file as usual.
_UNDECIDED, _FROM_WHEEL, _FROM_FILE = "undecided", "wheel", "file"

Verify = Callable[[Fetched], "VerifiedWheel"]
"""Opens and checks a fetched wheel (the install's own check, run as each completes)."""


def item_of(file: IndexFile) -> DownloadItem:
    """What the fetcher downloads for *file*."""
    return DownloadItem(file.url, file.hashes, file.filename, file.size)


class Lookahead:
    """Listings, metadata files and wheels fetched ahead for one resolution over
    *sources* (see the module's docstring). :meth:`want` may name projects before
    the target is known; :meth:`serve` then puts a finder behind it, and with a
    *fetcher* and *verify*, pinned wheels are downloaded early (not in a dry run,
    nor for a lock). Use as a context manager, or call :meth:`close`, which leaves
    no thread running (the installer may fork)."""

    def __init__(
        self,
        sources: Sequence[IndexSource],
        client: IndexClient,
        routes: Routes | None = None,
        strategy: IndexStrategy | None = None,
    ) -> None:
        self._listings = ListingPrefetcher(sources, client, routes=routes, strategy=strategy)
        self._client = client
        self._finder: IndexFinder | None = None
        self._on_pinned: Callable[[IndexFile], None] | None = None
        self._wheels: _EarlyWheels | None = None
        # METADATA answered from what was fetched ahead, by URL.
        self._metadata: dict[str, bytes] = {}
        # PEP 658 metadata being fetched ahead, by URL, and what the finder was asked
        # for instead (never fetched ahead after that); _fetching_lock guards both.
        self._fetching: dict[str, Future[bytes]] = {}
        self._asked: set[str] = set()
        self._fetching_lock = threading.Lock()
        # Small wheels downloaded early, by URL (_early_lock guards their source).
        self._early: dict[str, _EarlyWheel] = {}
        self._early_lock = threading.Lock()
        # Installed distributions the resolution keeps when it chooses them, by
        # name, and their METADATA once read (None: unreadable, asked as usual).
        self._kept: dict[str, InstalledDist] = {}
        self._kept_metadata: dict[str, bytes | None] = {}

    def want(self, names: Iterable[str]) -> None:
        """Start fetching the listings of *names* (the requested projects)."""
        self._listings.want(names)

    def serve(
        self,
        finder: IndexFinder,
        *,
        fetcher: Fetcher | None = None,
        verify: Verify | None = None,
        installed: Collection[tuple[str, str]] = (),
        pinned: Callable[[IndexFile], None] | None = None,
    ) -> None:
        """Answer for *finder* from now on. With *fetcher* and *verify*, pinned wheels
        are downloaded early, but not those of an *installed* (name, version): most
        likely kept. *pinned* hears of each wheel the resolver pins (in its thread)."""
        self._finder = finder
        self._on_pinned = pinned
        if fetcher is not None and verify is not None:
            self._wheels = _EarlyWheels(fetcher, verify, set(installed))

    def keep_installed(self, dists: Iterable[InstalledDist]) -> None:
        """*dists* are kept as installed wherever the resolution chooses them (not
        reinstalled): the dependencies of the same name, version and variant label
        come from their installed ``METADATA``, with nothing downloaded or built."""
        self._kept = {dist.name: dist for dist in dists}
        self._kept_metadata = {}

    @property
    def finder(self) -> IndexFinder:
        if self._finder is None:
            raise RuntimeError("Lookahead.serve() comes first")
        return self._finder

    # -- Finder: what the resolver asks ---------------------------------------------

    def versions(self, name: NormalizedName) -> Sequence[IndexRelease]:
        name = canonicalize_name(name)
        return self.finder.versions(name, lambda: self._listings.take(name))

    def dependencies(self, file: WheelFile) -> list[str]:
        installed = self._installed_metadata(file)
        if installed is not None:
            return requires_dist(installed)
        index_file = _index_file(file)
        if index_file.url not in self._metadata and self._early_source(index_file) == _FROM_WHEEL:
            verified = self._verified(index_file)  # None if it failed: as below
            if verified is not None:
                self._metadata[index_file.url] = verified.metadata
                return list(verified.requires_dist)  # parsed already by the check
        found = self._ahead(index_file)
        if found is not None:
            return requires_dist(found)
        return self.finder.dependencies(file)

    def missing_extras(self, file: WheelFile, extras: frozenset[str]) -> frozenset[str]:
        """:meth:`IndexFinder.missing_extras`, from the metadata fetched ahead."""
        return self.finder.missing_extras(file, extras, self.core_metadata(file))

    def python_excluded(self, file: WheelFile) -> str | None:
        """:meth:`IndexFinder.python_excluded`, from the metadata fetched ahead."""
        if _index_file(file).requires_python:
            return None
        return self.finder.python_excluded(file, self.core_metadata(file))

    def core_metadata(self, file: WheelFile) -> bytes:
        """The ``METADATA`` of *file*: installed and kept, fetched ahead, else the
        finder's answer."""
        installed = self._installed_metadata(file)
        if installed is not None:
            return installed
        index_file = _index_file(file)
        if self._early_source(index_file) == _FROM_WHEEL and index_file.url not in self._metadata:
            verified = self._verified(index_file)
            if verified is not None:
                self._metadata[index_file.url] = verified.metadata
        found = self._ahead(index_file)
        return found if found is not None else self.finder.core_metadata(file)

    def source_only_versions(self, name: NormalizedName) -> list[Version]:
        return self.finder.source_only_versions(name)

    def not_built_reason(self, name: NormalizedName, version: Version) -> str:
        return self.finder.not_built_reason(name, version)

    @property
    def exhausts_indexes_in_order(self) -> bool:
        return self.finder.exhausts_indexes_in_order

    def index_rank(self, release: ReleaseFiles) -> int:
        return self.finder.index_rank(release)

    def built_from_source(self, release: IndexRelease) -> bool:
        return self.finder.built_from_source(release)

    @property
    def hidden_versions(self) -> dict[NormalizedName, tuple[int, str]]:
        return self.finder.hidden_versions

    def _installed_metadata(self, file: WheelFile) -> bytes | None:
        """The installed ``METADATA`` of the kept distribution *file* is a build of
        (see :meth:`keep_installed`); None when there is none, or it does not read."""
        name = file.filename.name
        dist = self._kept.get(name)
        if dist is None or not _same_build(dist, file.filename):
            return None
        if name not in self._kept_metadata:
            self._kept_metadata[name] = _readable(read_metadata(dist))
        return self._kept_metadata[name]

    def _ahead(self, index_file: IndexFile) -> bytes | None:
        """The METADATA of *index_file* from an early wheel or a metadata file fetched
        ahead; None if neither (the finder is asked then, and it is not fetched
        ahead from then on)."""
        url = index_file.url
        found = self._metadata.get(url)
        if found is not None:
            return found
        with self._fetching_lock:
            job = self._fetching.pop(url, None)
            if job is None:
                self._asked.add(url)
        if job is None or job.cancelled():
            return None
        try:
            found = job.result()
        except SourceError:
            raise  # tried with the client's own retries: asking again would repeat it
        except Exception:
            return None  # asked again of the finder, which reports the failure
        self._metadata[url] = found
        return found

    # -- Hints: what the resolver is about to do --------------------------------------

    def will_ask(self, wants: Iterable[tuple[str, SpecifierSet]]) -> None:
        """These projects will probably be asked for, at a version in these ranges:
        their listings are fetched, then the metadata of a few viable wheels of the
        newest version in range (the usual pick)."""
        for name, specifier in wants:
            key = canonicalize_name(name)
            if not self.finder.knows(key):
                self._listings.want([key], functools.partial(self._warm, specifier))

    def will_read(self, files: Iterable[WheelFile]) -> None:
        """The dependencies of these wheels will probably be read next: their PEP 658
        metadata is fetched (a wheel without any is not downloaded ahead)."""
        for file in files:
            self._prefetch_metadata(_index_file(file))

    def pinned(self, file: WheelFile) -> None:
        """The resolver pinned the release *file* belongs to, and *file* is the wheel it
        would install: it starts downloading (unless the finder has it already)."""
        index_file = _index_file(file)
        if self._on_pinned is not None:
            self._on_pinned(index_file)
        if (
            self._wheels is not None
            and index_file.kind == WHEEL  # an sdist is built when its metadata is asked for
            and not self.finder.has_wheel(index_file)
        ):
            self._wheels.start(index_file)

    def _warm(
        self, specifier: SpecifierSet, name: NormalizedName, listings: list[SourceListing]
    ) -> None:
        finder = self.finder
        releases = finder.releases_from(listings)
        in_range = [r for r in releases if specifier.contains(r.version)]
        if not in_range:
            return
        newest = max(in_range, key=lambda r: r.version)
        viable = [f for f in newest.files if any(t in finder.tags for t in f.filename.tags)]
        if (
            self._wheels is not None
            and len(in_range) == 1
            and len(viable) == 1
            and viable[0].filename.variant_label is None
            and finder.viable(_index_file(viable[0]))  # not yanked, Requires-Python met
        ):
            # The one wheel that can satisfy this range: its download need not wait
            # for the resolver to get there (big wheels would otherwise come last).
            index_file = _index_file(viable[0])
            size = self._wheels.start(index_file)
            if size is not None and (index_file.size or 0) <= SMALL_WHEEL:
                with self._early_lock:
                    self._early.setdefault(index_file.url, _EarlyWheel(size))
                size.add_done_callback(functools.partial(self._sized, index_file))
                return  # the metadata file is fetched only if the wheel is big
        for file in viable[:WARM_FILES]:
            self._prefetch_metadata(_index_file(file))

    def _prefetch_metadata(self, index_file: IndexFile) -> None:
        url = index_file.url
        if not index_file.core_metadata or index_file.kind != WHEEL:
            return
        with self._fetching_lock:  # the finder may be fetching it right now
            if url in self._metadata or url in self._fetching or url in self._asked:
                return
            job = self._listings.submit(functools.partial(self._client.fetch_metadata, index_file))
            if job is not None:
                self._fetching[url] = job

    def _sized(self, index_file: IndexFile, size: Future[int | None]) -> None:
        # Runs in a download thread: a hint only, so nothing may escape.
        with contextlib.suppress(Exception):
            if self._decide(index_file.url, size.result()) == _FROM_FILE:
                self._prefetch_metadata(index_file)

    def _decide(self, url: str, size: int | None) -> str | None:
        """An early download announced its *size* (None: not kept): a small wheel is
        read for its METADATA, else its metadata file is fetched. The decision, if
        this call made it."""
        with self._early_lock:
            early = self._early.get(url)
            if early is None or early.source != _UNDECIDED:
                return None
            early.source = _FROM_WHEEL if size is not None and size <= SMALL_WHEEL else _FROM_FILE
            return early.source

    def _early_source(self, file: IndexFile) -> str | None:
        """Where the METADATA of *file* comes from, if it is downloaded early."""
        with self._early_lock:
            early = self._early.get(file.url)
            source = None if early is None else early.source
        if early is not None and source == _UNDECIDED:
            assert self._wheels is not None
            size = early.size
            # The answer is worth waiting for (about a round trip), unless the
            # download waits for others to end before it even starts.
            if not size.done() and not self._wheels.queued(file):
                with contextlib.suppress(Exception):
                    size.result()
            announced = size.result() if size.done() and not size.cancelled() else None
            self._decide(file.url, announced)  # unless the callback did already
            with self._early_lock:
                source = early.source
        return source

    def _verified(self, file: IndexFile) -> VerifiedWheel | None:
        assert self._wheels is not None  # only early wheels are read
        return self._wheels.verified(file)

    # -- what the fetch stage takes ---------------------------------------------------

    def end_resolution(self) -> None:
        """The resolver is done: nothing more is fetched ahead of it (early wheel
        downloads go on, for :meth:`take`)."""
        self._listings.close()

    def take(self, item: DownloadItem) -> Fetched | None:
        """*item* as fetched ahead, waiting for it if it is still in flight: a wheel
        downloaded early, or one the finder downloaded while resolving; None if
        neither (or it failed)."""
        found = self._wheels.take(item) if self._wheels is not None else None
        if found is None and self._finder is not None:
            found = self._finder.downloaded(item.url)
        return found

    def close(self) -> None:
        """Stop what is in flight and wait for every thread."""
        self._listings.close()
        if self._wheels is not None:
            self._wheels.close()

    def __enter__(self) -> Lookahead:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass
class _EarlyWheel:
    """A small wheel downloaded early: the future of its size, and where its
    METADATA comes from (see _UNDECIDED)."""

    size: Future[int | None]
    source: str = _UNDECIDED


class _Started(NamedTuple):
    """One early download: the wheel (None if it failed or is not kept), and its size
    once the answer announces it (None if it never will)."""

    wheel: Future[Fetched | None]
    size: Future[int | None]


class _EarlyWheels:
    """Wheels downloaded before they are known to be needed: into memory only (what
    does not fit in the fetcher's budget is left for later), with one try, each
    verified as it completes. A download that fails, or is never taken, is only
    dropped: the install's own download of that item tries again and reports the
    failure. A file the fetcher's cache holds is taken from there (any size: it is
    on disk already)."""

    def __init__(self, fetcher: Fetcher, verify: Verify, installed: set[tuple[str, str]]) -> None:
        self._fetcher = fetcher
        self._verify = verify
        self._installed = installed
        self._cancel = threading.Event()
        self._batch = fetcher.batch(None, cancel=self._cancel, tries=1)
        self._pool: ThreadPoolExecutor | None = None
        self._started: dict[str, _Started] = {}
        self._verified: dict[str, VerifiedWheel] = {}
        # Downloads that reached the request deadline, by URL.
        self._deadlines: dict[str, DownloadDeadline] = {}
        self._busy = 0  # downloads under way (the others wait for a worker)
        # Never more at once than the user allows downloads in all.
        self._workers = min(EARLY_WORKERS, fetcher.downloads or EARLY_WORKERS)
        self._lock = threading.Lock()
        self._closed = False

    def start(self, file: IndexFile) -> Future[int | None] | None:
        """Start fetching *file* if it is not already (``http(s)`` URLs only). The
        future of its size in bytes, set once the answer announces it and it fits in
        memory, or at once when the cache holds it (None when it will not be kept,
        or fails first); None when *file* is not fetched early."""
        wheel = file.wheel
        version = None if wheel is None else (wheel.name, canonicalize_version(wheel.version))
        if version in self._installed or not file.url.lower().startswith(("http:", "https:")):
            return None
        item = item_of(file)
        with self._lock:
            if self._closed:
                return None
            if item.url not in self._started:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="download")
                size: Future[int | None] = Future()
                cache = self._fetcher.cache
                if cache is not None:  # a stat: the worker verifies it
                    cached = cache.size(item.expected_hashes(), item.name)
                    if cached is not None:
                        size.set_result(cached)
                job = self._pool.submit(self._fetch, item, size)
                self._started[item.url] = _Started(job, size)
            return self._started[item.url].size

    def _fetch(self, item: DownloadItem, size: Future[int | None]) -> Fetched | None:
        def sized(n: int) -> None:
            if not size.done():  # set already from the cache's entry
                size.set_result(n)

        with self._lock:
            self._busy += 1
        try:
            found = self._batch.fetch(item, on_memory=sized)
            self._verified[item.url] = self._verify(found)
        except DownloadDeadline as exc:  # a deadline is paid once: kept, raised when asked
            self._deadlines[item.url] = exc
            return None
        except Exception:
            return None  # the install's own download reports it
        finally:
            with self._lock:
                self._busy -= 1
            if not size.done():
                size.set_result(None)
        return found  # in memory, or the cache's file

    def queued(self, file: IndexFile) -> bool:
        """Whether *file*'s download waits for others to end before it starts."""
        with self._lock:
            started = self._started.get(file.url)
            return (
                started is not None
                and not started.wheel.running()
                and not started.wheel.done()
                and self._busy >= self._workers
            )

    def verified(self, file: IndexFile) -> VerifiedWheel | None:
        """*file* opened and checked, once downloaded (waiting for it); None when it
        was not started or did not succeed. One the cache holds (its size was known
        at once) that still waits for a worker is read here, by the caller, rather
        than after the downloads ahead of it."""
        here: _Started | None = None
        with self._lock:
            started = self._started.get(file.url)
            if started is not None and started.size.done() and started.wheel.cancel():
                here = _Started(Future(), started.size)
                here.wheel.set_running_or_notify_cancel()
                self._started[file.url] = started = here
        if here is not None:
            try:
                fetched = self._fetch(item_of(file), here.size)
            except BaseException:  # interrupted: a later take() must not wait for it
                here.wheel.set_result(None)
                raise
            here.wheel.set_result(fetched)
        found = _result(started)
        self._raise_deadline(file.url)
        return self._verified.get(file.url) if found is not None else None

    def _raise_deadline(self, url: str) -> None:
        error = self._deadlines.get(url)
        if error is not None:
            raise error

    def take(self, item: DownloadItem) -> Fetched | None:
        """*item*, complete and verified (waiting for it if still in flight), or None
        when it was not started, did not succeed, or is not the file *item* names."""
        with self._lock:
            started = self._started.pop(item.url, None)
        found = _result(started)
        self._raise_deadline(item.url)
        if found is None or found.name != item.name:
            return None
        return found

    def close(self) -> None:
        """Stop what is in flight and wait for every thread (the installer may fork)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
            started, self._started = self._started, {}
        self._cancel.set()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for download in started.values():  # cancelled before they began
            if not download.size.done():
                download.size.set_result(None)


def _result(started: _Started | None) -> Fetched | None:
    if started is None or started.wheel.cancelled():
        return None
    return started.wheel.result()


def _same_build(dist: InstalledDist, filename: WheelFilename) -> bool:
    """Whether *filename* names the build *dist* is: its version and variant label.
    (An sdist stands in as a non-variant wheel, as a build of it installs.)"""
    try:
        version = Version(dist.version)
    except InvalidVersion:
        return False
    return version == filename.version and dist.variant == filename.variant_label


def _readable(metadata: bytes | None) -> bytes | None:
    """*metadata*, if its fields read (else the index's answer is asked for)."""
    if metadata is None:
        return None
    try:
        requires_dist(metadata)
    except CoreMetadataError:
        return None
    return metadata


def _index_file(file: WheelFile) -> IndexFile:
    return link_of(file).file
