"""The catalog of a wheel directory that changes while it is served.

:meth:`LiveCatalog.fresh` gives the last snapshot while the directory's mtime is
unchanged (one ``stat`` per request); otherwise, or when the last check is older
than *recheck_interval* seconds (which catches a file rewritten in place), the
caller rescans with :meth:`~LiveCatalog.refresh`. A rescan only reads the files
it does not know with the same size and mtime; while a file cannot be read (it may
be one still being copied in), every request rescans.

A snapshot caches its rendered pages (HTML and JSON, with their ETags) and the
core metadata of its wheels.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from wheelwise.publish.catalog import Catalog, Problem, VariantsFile, build_catalog, scan
from wheelwise.publish.distfiles import DistFile
from wheelwise.publish.http import etag_for
from wheelwise.publish.negotiation import JSON_V1
from wheelwise.publish.pages import Urls, project_html, project_json, root_html, root_json


@dataclass(frozen=True)
class Page:
    body: bytes
    etag: str


@dataclass
class Snapshot:
    catalog: Catalog
    # filename -> the wheel's METADATA
    metadata: dict[str, bytes]
    problems: tuple[Problem, ...] = ()
    _pages: dict[tuple[str | None, bool], Page] = field(default_factory=dict)
    _variants: dict[tuple[str, str], VariantsFile] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for project, variants in self.catalog.variants_files():
            self._variants[(project, variants.filename)] = variants

    def page(self, project: str | None, media_type: str) -> Page:
        """``/simple/`` (project None) or a project page in HTML or JSON."""
        as_json = media_type == JSON_V1
        key = (project, as_json)
        found = self._pages.get(key)
        if found is None:
            urls = Urls()
            if project is None:
                names = list(self.catalog.projects)
                body = root_json(names) if as_json else root_html(names, urls)
            else:
                entry = self.catalog.projects[project]
                body = project_json(entry, urls) if as_json else project_html(entry, urls)
            found = Page(body, etag_for(hashlib.sha256(body).hexdigest()[:40]))
            self._pages[key] = found
        return found

    def variants_file(self, project: str, filename: str) -> VariantsFile | None:
        return self._variants.get((project, filename))


class LiveCatalog:
    def __init__(
        self,
        directory: Path,
        *,
        recheck_interval: float = 2.0,
    ) -> None:
        self.directory = directory
        self.recheck_interval = recheck_interval
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._dir_mtime: int | None = None
        self._checked_at = 0.0

    def _stale(self) -> bool:
        if self._snapshot is None:
            return True
        if time.monotonic() - self._checked_at >= self.recheck_interval:
            return True
        try:
            mtime = self.directory.stat().st_mtime_ns
        except OSError:
            return True
        return mtime != self._dir_mtime

    def fresh(self) -> Snapshot | None:
        """The snapshot if the directory has not changed since; None: call :meth:`refresh`
        (in a worker thread, from async code: it may read files)."""
        snapshot = self._snapshot
        if snapshot is None or self._stale():
            return None
        return snapshot

    def refresh(self) -> Snapshot:
        """Rescan now (files already known with the same stat are not read again)."""
        with self._lock:
            checked_at = time.monotonic()
            dir_mtime = self.directory.stat().st_mtime_ns
            old = self._snapshot
            known: dict[str, DistFile] = dict(old.catalog.by_filename) if old else {}
            scanned = scan(self.directory, known)
            unchanged = (
                old is not None
                and not scanned.read
                and not scanned.problems
                and not old.problems
                and len(scanned.files) == len(known)
            )
            if not unchanged:
                metadata = {
                    name: data
                    for name, data in (old.metadata.items() if old else ())
                    if name in known
                }
                for read in scanned.read:
                    if read.core_metadata is not None:
                        metadata[read.dist.filename] = read.core_metadata
                live_names = {d.filename for d in scanned.files}
                metadata = {k: v for k, v in metadata.items() if k in live_names}
                catalog = build_catalog(scanned.files, scanned.problems)
                self._snapshot = Snapshot(catalog, metadata, tuple(scanned.problems))
            # A file that could not be read may be one still being written: the
            # directory will not change when it is finished, so look again next time.
            unfinished = scanned.problems or scanned.skipped
            self._dir_mtime = None if unfinished else dir_mtime
            self._checked_at = checked_at
            assert self._snapshot is not None
            return self._snapshot
