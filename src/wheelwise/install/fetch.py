"""The second stage of an install: fetch the plan's wheels, and check each.

:func:`fetch` gets every wheel a :class:`~wheelwise.resolve.decide.Plan` installs
through the installer's one :class:`~wheelwise.fetch.download.Fetcher` (its retry
policy, its hash policy, its cache, one progress sink), or takes one the decide
stage fetched ahead by the same fetcher. Each wheel, wherever it came from, is
opened and checked by the same :class:`Verifier`, then checked against what chose
it: its PEP 658 metadata file, and a variant wheel's own ``variant.json``. The
answer is the list of verified wheels, in the plan's order.

Small wheels are unpacked into the cache while the big ones still download
(:class:`UnpackAhead`). A big wheel is unpacked into the unpacked cache as it
downloads (:mod:`wheelwise.cache.stream_entry`); a small one arrives whole, in memory
or in a file, and was otherwise unpacked only by the transaction, after the last
download. On a GPU stack the last download is the biggest wheel's, unpacked by one
thread alone while the other cores wait; the small wheels (sympy's 1,570 files, say)
then queued behind it. :class:`UnpackAhead` gives them one background thread: each
whole wheel is unpacked into its cache entry as soon as it is verified, the one with
the most to write first, and the transaction links it like any other entry.

It only ever saves work. A wheel it did not finish when the downloads end is left to
the transaction (whose forked workers use every core), and one it could not unpack (a
full cache, a member that fails its ``RECORD``) is unpacked again by the transaction,
which fails it with its usual message. Entries are published as the cache always
publishes them (built in a scratch folder, renamed into place), so a run killed
meanwhile leaves only a scratch folder that a later run clears.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from packaging.utils import NormalizedName

from wheelwise.cache.unpacked import EntryFile, UnpackedStore, UnpackedWheel
from wheelwise.fetch.consistency import check_variant_consistency
from wheelwise.fetch.core_metadata import check_core_metadata
from wheelwise.fetch.download import DownloadItem, Fetched, Fetcher, ProgressSink
from wheelwise.fetch.verify import VerifiedWheel, verify_wheel
from wheelwise.models.errors import DownloadError
from wheelwise.resolve.decide import Plan
from wheelwise.resolve.lookahead import item_of
from wheelwise.resolve.user_hashes import Hashes, check_fetched, check_index

__all__ = ["UnpackAhead", "Verifier", "fetch"]

# Seconds a wheel waits before it is begun: when every download is done already (a
# small set, fetched while resolving), the transaction starts within them, and
# nothing is begun only to be stopped.
GRACE = 0.05


class Verifier:
    """Opens and checks each fetched wheel once (:func:`verify_wheel`), from any
    thread: a wheel fetched ahead is checked as it completes, while resolving goes on."""

    def __init__(self) -> None:
        self._verified: dict[Fetched, VerifiedWheel] = {}
        self._lock = threading.Lock()

    def __call__(self, wheel: Fetched) -> VerifiedWheel:
        with self._lock:
            found = self._verified.get(wheel)
        if found is None:
            found = verify_wheel(wheel)
            with self._lock:
                self._verified[wheel] = found
        return found


def fetch(
    plan: Plan,
    fetcher: Fetcher,
    folder: Path,
    verify: Verifier,
    *,
    ready: Callable[[DownloadItem], Fetched | None] | None = None,
    progress: ProgressSink | None = None,
    require_hashes: bool = False,
    unpack_into: UnpackedStore | None = None,
    user_hashes: Mapping[NormalizedName, Hashes] | None = None,
) -> list[VerifiedWheel]:
    """The wheels *plan* installs, verified, in its order. Those not in memory are
    written into *folder*. *ready* may give a wheel fetched ahead (see
    :meth:`Fetcher.fetch_all`). With *require_hashes*, a wheel whose source gives
    no sha256 (or stronger) hash is refused before anything is fetched. With
    *unpack_into*, a wheel fetched whole may come back as its entry there, unpacked
    while other wheels downloaded (:class:`UnpackAhead`). *user_hashes*: the hashes
    given for each project, in hash-checking mode (:mod:`~wheelwise.resolve.user_hashes`)."""
    wanted = plan.to_install
    # Files whose index gives no trusted hash: hashed themselves, once fetched.
    digested: dict[str, tuple[str, Hashes]] = {}
    for planned in wanted:
        allowed = (user_hashes or {}).get(planned.name)
        if allowed and check_index(planned.file, allowed):
            digested[planned.file.filename] = (planned.file.url, allowed)
    if require_hashes:
        for planned in wanted:
            if not item_of(planned.file).expected_hashes():
                raise DownloadError(
                    planned.file.url,
                    "the source gives no sha256 (or stronger) hash for it, and "
                    "--require-hashes is on",
                )
    items = [item_of(planned.file) for planned in wanted]
    ahead = UnpackAhead(unpack_into) if unpack_into is not None else None
    checked: Callable[[Fetched], object] = verify
    if ahead is not None:
        hashes = {item.name: item.unpacked_hashes() for item in items}

        def checked(wheel: Fetched) -> None:
            name = wheel.name if isinstance(wheel, Path) else wheel.path.name
            ahead.submit(wheel, verify(wheel), hashes.get(name, {}))

    def then(wheel: Fetched) -> object:
        found = digested.get(wheel.name if isinstance(wheel, Path) else wheel.path.name)
        if found is not None:
            url, allowed = found
            if isinstance(wheel, UnpackedWheel):  # pragma: no cover - never cached
                raise DownloadError(url, "cannot check --hash of a cached entry")
            check_fetched(url, wheel if isinstance(wheel, Path) else wheel.data, allowed)
        return checked(wheel)

    try:
        found = fetcher.fetch_all(
            items,
            folder,
            progress=progress,
            require_hashes=require_hashes,
            then=then,
            ready=ready,
        )
    finally:
        if ahead is not None:  # no thread left running: the installer may fork
            ahead.finish()
    wheels = []
    for planned, wheel in zip(wanted, found, strict=True):
        verified = verify(wheel)
        if ahead is not None:
            verified = ahead.unpacked(wheel, verified)
        # The hashes that keep it unpacked in the cache, and what errors call it.
        item = item_of(planned.file)
        verified = dataclasses.replace(
            verified,
            hashes=item.unpacked_hashes(),
            origin=item.origin,
            direct_url=planned.direct_url,
        )
        if planned.file.core_metadata:
            check_core_metadata(
                planned.file.metadata_url,
                planned.metadata,
                planned.file.filename,
                verified.metadata,
            )
        check_variant_consistency(
            verified, planned.package.label, planned.properties, planned.variant_source
        )
        wheels.append(verified)
    return wheels


class UnpackAhead:
    """One background thread publishing whole wheels into *store* (see the
    module's docstring). Thread-safe; :meth:`finish` must follow."""

    def __init__(self, store: UnpackedStore) -> None:
        # Here, not at the top: a dry run imports this module, and never unpacks.
        from wheelwise.install.cache_entry import build_entry
        from wheelwise.install.unpack import Journal

        self.store = store
        self._build_entry = build_entry
        self._queue: list[tuple[Fetched, VerifiedWheel, Mapping[str, str]]] = []
        self._first_queued = 0.0  # when the queue last went from empty to not
        self._done: dict[Fetched, UnpackedWheel] = {}
        self._lock = threading.Condition()
        self._stopping = False
        # Stops the wheel being unpacked at its next member.
        self._journal = Journal()
        self._thread: threading.Thread | None = None
        self._busy = False

    @property
    def pending(self) -> int:
        """How many wheels are queued or being unpacked."""
        with self._lock:
            return len(self._queue) + self._busy

    def submit(self, fetched: Fetched, wheel: VerifiedWheel, hashes: Mapping[str, str]) -> None:
        """Unpack *wheel*, fetched whole as *fetched*, into its entry under *hashes*
        (nothing for a wheel with no hash, or one already unpacked)."""
        if isinstance(fetched, UnpackedWheel) or not hashes:
            return
        with self._lock:
            if self._stopping:
                return
            if not self._queue:
                self._first_queued = time.monotonic()
            self._queue.append((fetched, wheel, hashes))
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="unpack-ahead", daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # no thread to be had: the transaction does it all
                    self._stopping = True
                    self._queue.clear()
                    return
                self._thread = thread
            self._lock.notify()

    def finish(self) -> None:
        """Take no more wheels: drop those not begun, stop the one being unpacked at
        its next member (the transaction, about to start, unpacks them with every
        core), and wait for the thread to end."""
        with self._lock:
            self._stopping = True
            self._queue.clear()
            thread = self._thread
            self._lock.notify()
        self._journal.cancel()
        if thread is not None:
            thread.join()

    def unpacked(self, fetched: Fetched, wheel: VerifiedWheel) -> VerifiedWheel:
        """*wheel* (fetched as *fetched*) as its cache entry, where this unpacked it;
        else *wheel* itself. Call after :meth:`finish`."""
        entry = self._done.get(fetched)
        if entry is None:
            return wheel
        return dataclasses.replace(wheel, path=entry.path, source=entry, record={}, opened=None)

    def _run(self) -> None:
        while True:
            with self._lock:
                self._busy = False  # the last one's entry, if any, is noted
                while not self._stopping:
                    if not self._queue:
                        self._lock.wait()
                        continue
                    waited = time.monotonic() - self._first_queued
                    if waited >= GRACE:
                        break
                    self._lock.wait(GRACE - waited)
                if self._stopping:
                    return
                # The one with the most to write first: it would end last.
                job = max(self._queue, key=lambda queued: queued[1].work)
                self._queue.remove(job)
                self._busy = True
            fetched, wheel, hashes = job

            def build(folder: Path, wheel: VerifiedWheel = wheel) -> tuple[list[EntryFile], str]:
                return self._build_entry(wheel, folder, self._journal)

            try:
                name = wheel.path.name
                entry = self.store.lookup(hashes, name) or self.store.publish(hashes, name, build)
            except Exception:  # the transaction unpacks it again, and says what fails
                continue
            self._done[fetched] = entry
