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
import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import TypeVar

from packaging.utils import NormalizedName, canonicalize_name

from wheelwise.client.index_client import (
    IndexClient,
    IndexSource,
    Routes,
    SourceListing,
    find_candidates,
)
from wheelwise.client.index_strategy import IndexStrategy

__all__ = ["ListingPrefetcher"]

# Requests in flight at once: enough to hide round trips, few enough for any index.
WORKERS = 6

FollowUp = Callable[[NormalizedName, list[SourceListing]], None]
T = TypeVar("T")


class ListingPrefetcher:
    def __init__(
        self,
        sources: Sequence[IndexSource],
        client: IndexClient,
        *,
        workers: int = WORKERS,
        routes: Routes | None = None,
        strategy: IndexStrategy | None = None,
    ) -> None:
        self.sources = list(sources)
        self.client = client
        self.routes = routes
        self.strategy = strategy
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._pending: dict[NormalizedName, Future[list[SourceListing]]] = {}
        self._followed: set[NormalizedName] = set()
        self._closed = False
        self._lock = threading.Lock()

    def want(self, names: Iterable[str], then: FollowUp | None = None) -> None:
        """Start fetching the listings of *names* (a hint: nothing waits for it).
        *then*, if given, runs in the background with each listing (for more
        prefetching), also for a listing asked for earlier without it; what it
        raises is ignored."""
        if self._closed:
            return
        for name in names:
            key = canonicalize_name(name)
            pending = self._pending.get(key)
            if pending is None:
                started = self._start(self._job, key, then)
                if started is None:
                    return
                self._pending[key] = started
            elif then is not None and key not in self._followed:
                # Runs in the thread that completes the fetch, or here if it is done.
                pending.add_done_callback(functools.partial(self._follow, key, then))
            if then is not None:
                self._followed.add(key)

    def submit(self, job: Callable[[], T]) -> Future[T] | None:
        """Run *job* in the background (more prefetching); None once closed."""
        return self._start(job)

    def _start(self, job: Callable[..., T], *args: object) -> Future[T] | None:
        with self._lock:  # no pool may start once closed: the installer may fork
            if self._closed:
                return None
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="prefetch")
            return self._pool.submit(job, *args)

    def _job(self, name: NormalizedName, then: FollowUp | None) -> list[SourceListing]:
        listings = find_candidates(name, self.sources, self.client, self.routes, self.strategy)
        if then is not None:
            self._follow(name, then, listings)
        return listings

    def _follow(
        self,
        name: NormalizedName,
        then: FollowUp,
        done: Future[list[SourceListing]] | list[SourceListing],
    ) -> None:
        if self._closed:
            return
        # A hint only: if it fails, the resolver fetches again and reports.
        with contextlib.suppress(Exception):
            then(name, done.result() if isinstance(done, Future) else done)

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
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ListingPrefetcher:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
