"""Fetching project listings ahead of the resolver.

The resolver asks for one project at a time, and each answer is a round trip to
every source. The names it will ask for are mostly known early: the requested
projects, and the dependencies of each pinned candidate. :class:`ListingPrefetcher`
fetches those listings in a few background threads, so that the resolver usually
finds them waiting; a listing nobody asked for was a wasted request, nothing more.
Failures are kept and raised to whoever takes that listing, exactly as a direct
fetch would raise them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from packaging.utils import NormalizedName, canonicalize_name

from wheelwise.index.client import IndexClient, IndexSource, SourceListing, find_candidates

__all__ = ["ListingPrefetcher"]

# Requests in flight at once: enough to hide round trips, few enough for any index.
WORKERS = 6

FollowUp = Callable[[NormalizedName, list[SourceListing]], None]


class ListingPrefetcher:
    def __init__(
        self, sources: Sequence[IndexSource], client: IndexClient, *, workers: int = WORKERS
    ) -> None:
        self.sources = list(sources)
        self.client = client
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._pending: dict[NormalizedName, Future[list[SourceListing]]] = {}
        self._closed = False

    def want(self, names: Iterable[str], then: FollowUp | None = None) -> None:
        """Start fetching the listings of *names* (a hint: nothing waits for it).
        *then*, if given, runs in the same background job with each listing (for
        more prefetching); what it raises is ignored."""
        if self._closed:
            return
        for name in names:
            key = canonicalize_name(name)
            if key in self._pending:
                continue
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="prefetch")
            self._pending[key] = self._pool.submit(self._job, key, then)

    def _job(self, name: NormalizedName, then: FollowUp | None) -> list[SourceListing]:
        listings = find_candidates(name, self.sources, self.client)
        if then is not None and not self._closed:
            # A hint only: if it fails, the resolver fetches again and reports.
            with contextlib.suppress(Exception):
                then(name, listings)
        return listings

    def take(self, name: NormalizedName) -> list[SourceListing] | None:
        """The prefetched listings of *name* (waiting for them if still in flight),
        or None when it was never asked for. Raises what the fetch raised."""
        future = self._pending.get(name)
        if future is None or future.cancelled():
            return None
        return future.result()

    def close(self) -> None:
        """Stop: cancel what has not started and wait for what has, so that no
        thread is left running (the installer may fork after this)."""
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> ListingPrefetcher:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
