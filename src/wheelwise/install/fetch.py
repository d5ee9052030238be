"""The second stage of an install: fetch the plan's wheels, and check each.

:func:`fetch` gets every wheel a :class:`~wheelwise.resolve.decide.Plan` installs
through the installer's one :class:`~wheelwise.fetch.download.Fetcher` (its retry
policy, its hash policy, its cache, one progress sink), or takes one the decide
stage fetched ahead by the same fetcher. Each wheel, wherever it came from, is
opened and checked by the same :class:`Verifier`, then checked against what chose
it: its PEP 658 metadata file, and a variant wheel's own ``variant.json``. The
answer is the list of verified wheels, in the plan's order.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path

from wheelwise.cache.unpacked import UnpackedStore
from wheelwise.fetch.consistency import check_variant_consistency
from wheelwise.fetch.core_metadata import check_core_metadata
from wheelwise.fetch.download import DownloadItem, Fetched, Fetcher, ProgressSink
from wheelwise.fetch.verify import VerifiedWheel, verify_wheel
from wheelwise.install.unpack_ahead import UnpackAhead
from wheelwise.models.errors import DownloadError
from wheelwise.resolve.decide import Plan
from wheelwise.resolve.lookahead import item_of

__all__ = ["Verifier", "fetch"]


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
) -> list[VerifiedWheel]:
    """The wheels *plan* installs, verified, in its order. Those not in memory are
    written into *folder*. *ready* may give a wheel fetched ahead (see
    :meth:`Fetcher.fetch_all`). With *require_hashes*, a wheel whose source gives
    no sha256 (or stronger) hash is refused before anything is fetched. With
    *unpack_into*, a wheel fetched whole may come back as its entry there, unpacked
    while other wheels downloaded (:mod:`wheelwise.install.unpack_ahead`)."""
    wanted = plan.to_install
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
    then: Callable[[Fetched], object] = verify
    if ahead is not None:
        hashes = {item.name: item.unpacked_hashes() for item in items}

        def then(wheel: Fetched) -> None:
            name = wheel.name if isinstance(wheel, Path) else wheel.path.name
            ahead.submit(wheel, verify(wheel), hashes.get(name, {}))

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
