"""The proxy's work, without HTTP: pages, files and explanations per machine.

Everything here is blocking (the index client, wheel rewriting): the ASGI app
(:mod:`wheelwise.proxy.app`) runs it in worker threads. Upstream failures become
:class:`~wheelwise.proxy.errors.ProxyError` subclasses, so one broken project or
upstream never stops the others.

File URLs carry a content key (``files/<project>/<key>/<filename>``): the upstream
sha256 for a file passed through, :attr:`Rewrite.key` for a rewritten wheel. A URL
therefore always names the same bytes and can be cached for good, while the page
that links it changes when a better build appears.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Generic, TypeVar
from urllib.parse import quote

from packaging.utils import NormalizedName, canonicalize_name

from wheelwise.client.errors import SourceError, SourceTimeout
from wheelwise.client.index_client import INDEX_HINT, IndexClient, IndexFile, IndexSource
from wheelwise.proxy.choice import Entry, Passthrough, ProjectView, Rewrite, decide
from wheelwise.proxy.errors import NotFound, ProxyError, UpstreamFailed, UpstreamTimeout
from wheelwise.proxy.machines import Machine
from wheelwise.proxy.store import BuildStore, StoredFile
from wheelwise.proxy.stream import Growing, PassthroughTee, PrefixRewrite
from wheelwise.publish.pages import FileLink
from wheelwise.variants.errors import VariantError
from wheelwise.variants.markers import variant_environment
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.plain import make_plain_wheel, plain_metadata

__all__ = ["SKIPPED_LINKS", "Proxy", "SkippedLinks"]

METADATA_SUFFIX = ".metadata"
_OFFERED_LIMIT = 100_000
_VARIANTS_JSON_LIMIT = 1_000
_VIEWS_LIMIT = 10_000
K = TypeVar("K")
V = TypeVar("V")


_UPSTREAM_HINT = "check the proxy's --upstream and that the index is up"


def _upstream_error(exc: SourceError) -> ProxyError:
    error = UpstreamTimeout if isinstance(exc, SourceTimeout) else UpstreamFailed
    # The client's advice names the installer's option; the proxy's is --upstream.
    return error(f"upstream: {exc.message.replace(INDEX_HINT, _UPSTREAM_HINT)}")


@contextlib.contextmanager
def _upstream() -> Iterator[None]:
    try:
        yield None
    except SourceError as exc:
        raise _upstream_error(exc) from None


class _Recent(Generic[K, V]):
    """At most *limit* values by key, shared by threads; the least recently put go."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        self.put_all(((key, value),))

    def put_all(self, items: Iterable[tuple[K, V]]) -> None:
        with self._lock:
            for key, value in items:
                self._items[key] = value
                self._items.move_to_end(key)
            while len(self._items) > self._limit:
                self._items.popitem(last=False)


class SkippedLinks:
    """Hears the index client's word on each upstream link it skipped, and keeps it
    for the page being read on that thread (pages are read one per thread)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def note(self, message: str) -> None:
        notes: list[str] | None = getattr(self._local, "notes", None)
        if notes is not None:
            notes.append(message)

    @contextlib.contextmanager
    def collecting(self) -> Iterator[list[str]]:
        notes: list[str] = []
        self._local.notes = notes
        try:
            yield notes
        finally:
            self._local.notes = None


SKIPPED_LINKS = SkippedLinks()


class Proxy:
    """Pages and files of *upstreams* for each of *machines* (keyed by profile name;
    None is the default machine)."""

    def __init__(
        self,
        upstreams: Sequence[str],
        machines: Mapping[str | None, Machine],
        store: BuildStore,
        client: IndexClient,
        scratch: Path,
    ) -> None:
        self.sources = [IndexSource.index(url) for url in upstreams]
        self.machines = machines
        self.store = store
        self.client = client
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        # Every entry a page offered, by its URL: a key names fixed content, so a file
        # request needs no new look at the upstream page.
        self._offered: _Recent[tuple[str, str, str, str], Entry] = _Recent(_OFFERED_LIMIT)
        # Each *-variants.json read, by its URL and the sha256 its page gives: those
        # name fixed content, so later pages need not fetch it again.
        self._variants: _Recent[tuple[str, str], VariantMetadata] = _Recent(_VARIANTS_JSON_LIMIT)
        # The last page read of each project, per machine: given again while the
        # upstreams fail.
        self._views: _Recent[tuple[str, NormalizedName], ProjectView] = _Recent(_VIEWS_LIMIT)
        # Files being built in the background, by store key, for the requests that
        # send them as they grow.
        self._growing: dict[str, Growing] = {}
        self._growing_lock = threading.Lock()

    # -- pages -----------------------------------------------------------------------

    def project_names(self) -> list[str]:
        """Every project of every upstream, each once, sorted."""
        names: set[NormalizedName] = set()
        with _upstream():
            for source in self.sources:
                names.update(self.client.fetch_project_names(source))
        return sorted(names)

    def view(self, machine: Machine, project: str) -> ProjectView:
        """What *project*'s page lists for *machine*. While the upstreams fail, the
        last page read (in this process) is given again, saying why (``stale``)."""
        name = canonicalize_name(project)
        key = (machine.name, name)
        try:
            view = self._fresh_view(machine, name)
        except UpstreamFailed as exc:
            last = self._views.get(key)
            if last is None:
                raise
            return dataclasses.replace(last, stale=exc.message)
        self._views.put(key, view)
        return view

    def _fresh_view(self, machine: Machine, name: NormalizedName) -> ProjectView:
        with _upstream(), SKIPPED_LINKS.collecting() as skipped:
            listings = [self.client.fetch_project(source, name) for source in self.sources]
            found = [listing for listing in listings if listing.found]
            if not found:
                raise NotFound(f"no project {name!r} on the upstream indexes")
            try:
                view = decide(
                    name,
                    found,
                    machine=machine.name,
                    supported=machine.supported,
                    metadata_for=self._variants_json,
                )
            except VariantError as exc:
                raise UpstreamFailed(f"upstream: {name}: {exc}") from None
        if skipped:
            view = dataclasses.replace(view, skipped=tuple(skipped))
        self._remember(machine, view)
        return view

    def _remember(self, machine: Machine, view: ProjectView) -> None:
        self._offered.put_all(
            ((machine.name, view.name, _key(entry), entry.filename), entry)
            for entry in view.entries()
        )

    def _variants_json(self, file: IndexFile) -> VariantMetadata:
        digest = file.hashes.get("sha256")
        if digest is None:
            return self.client.fetch_variants_json(file)
        key = (file.url, digest)
        found = self._variants.get(key)
        if found is None:
            found = self.client.fetch_variants_json(file)
        self._variants.put(key, found)
        return found

    def links(self, view: ProjectView) -> list[FileLink]:
        """The page's links, with hashes and sizes where they are known."""
        return [self._link(view.name, entry) for entry in view.entries()]

    def _link(self, project: str, entry: Entry) -> FileLink:
        url = f"../../files/{quote(project)}/{_key(entry)}/{quote(entry.filename)}"
        if isinstance(entry, Passthrough):
            file = entry.file
            note = {"why": entry.why} if entry.why else None
            return FileLink(
                filename=file.filename,
                url=url,
                sha256=file.hashes.get("sha256"),
                size=file.size,
                requires_python=file.requires_python,
                metadata_sha256=file.core_metadata_hashes.get("sha256"),
                metadata_unhashed=file.core_metadata and "sha256" not in file.core_metadata_hashes,
                yanked=file.yanked_reason or file.yanked,
                note=note,
            )
        built = self.store.get(entry.key)
        source = entry.source
        note = {"variant": entry.label, "from": source.filename, "why": entry.why}
        return FileLink(
            filename=entry.filename,
            url=url,
            sha256=built.sha256 if built else None,
            size=built.size if built else None,
            requires_python=source.requires_python,
            metadata_sha256=built.info.get("metadata_sha256") if built else None,
            metadata_unhashed=built is None,
            yanked=source.yanked_reason or source.yanked,
            note=note,
        )

    # -- files ------------------------------------------------------------------------

    def entry(self, machine: Machine, project: str, key: str, filename: str) -> Entry:
        """The entry *key*/*filename* of *project*'s page for *machine*."""
        offered = self._offered.get((machine.name, project, key, filename))
        if offered is not None:
            return offered
        view = self.view(machine, project)
        entry = view.find(filename)
        if entry is None or _key(entry) != key:
            raise NotFound(
                f"{project}: {filename} is not offered for {machine.name} under this URL "
                "(the upstream or the choice changed): fetch the project page again"
            )
        return entry

    def file(self, entry: Entry, growing: Growing | None = None) -> StoredFile:
        """The bytes of *entry*, fetched (and rewritten) once, from the store after;
        offered in *growing* as they arrive, if given."""
        if isinstance(entry, Passthrough):
            return self.store.build(_key(entry), lambda out: self._fetch(entry.file, out, growing))
        return self.store.build(entry.key, lambda out: self._rewrite(entry, out, growing))

    def file_or_growing(self, entry: Entry) -> StoredFile | Growing:
        """*entry*'s stored file, or the one being built for it in the background
        (started now if need be), to be sent as it grows."""
        key = _key(entry)
        stored = self.store.get(key)
        if stored is not None:
            return stored
        with self._growing_lock:
            growing = self._growing.get(key)
            if growing is None:
                growing = self._growing[key] = Growing()
                worker = threading.Thread(
                    target=self._build, args=(entry, key, growing), daemon=True
                )
                worker.start()
        return growing

    def _build(self, entry: Entry, key: str, growing: Growing) -> None:
        try:
            growing.finish(self.file(entry, growing))
        except ProxyError as exc:
            growing.fail(exc)
        except Exception as exc:  # the requests waiting on it get a 500, not a hang
            growing.fail(ProxyError(f"{entry.filename}: {type(exc).__name__}: {exc}"))
        finally:
            with self._growing_lock:
                self._growing.pop(key, None)

    def metadata(self, entry: Entry) -> bytes:
        """*entry*'s core metadata (PEP 658): that of the wheel served."""
        if isinstance(entry, Passthrough):
            if entry.file.core_metadata:
                with _upstream():
                    return self.client.fetch_metadata(entry.file)
            return _wheel_metadata(self.file(entry), entry.filename)
        built = self.store.get(entry.key)
        if built is None and entry.source.core_metadata:
            # The wheel's METADATA is checked against this when the wheel is built.
            with _upstream():
                upstream = self.client.fetch_metadata(entry.source)
            return _settled(upstream, entry)
        if built is None:
            built = self.file(entry)
        return _wheel_metadata(built, entry.filename)

    def _fetch(self, file: IndexFile, out: Path, growing: Growing | None) -> Mapping[str, str]:
        tee = PassthroughTee(growing) if growing is not None else None
        with _upstream():
            self.client.fetch_file_to(file, out / file.filename, tee)
        return {"filename": file.filename}

    def _rewrite(self, entry: Rewrite, out: Path, growing: Growing | None) -> Mapping[str, str]:
        source = entry.source
        with tempfile.TemporaryDirectory(dir=self.scratch) as scratch:
            upstream = Path(scratch) / source.filename
            prefix = None
            if growing is not None:
                settle = functools.partial(plain_metadata, variant_env=_variant_env(entry))
                prefix = PrefixRewrite(out / entry.filename, growing, settle)
            try:
                with _upstream():
                    self.client.fetch_file_to(source, upstream, prefix)
                _check_agrees(upstream, entry)
                whole = Path(scratch) / "whole" if prefix is not None else out
                plain = make_plain_wheel(upstream, whole, _variant_env(entry))
                if prefix is not None:
                    prefix.finish(plain.path)
            except WheelError as exc:
                # Clients know the download by its URL, not by the proxy's scratch path.
                reason = str(exc).replace(str(upstream), source.filename)
                raise UpstreamFailed(f"upstream: {source.url}: {reason}") from None
            finally:
                if prefix is not None:
                    prefix.close()
        return {
            "filename": entry.filename,
            "metadata_sha256": plain.metadata_sha256,
            "label": entry.label,
            "upstream": source.filename,
        }


def _key(entry: Entry) -> str:
    if isinstance(entry, Rewrite):
        return entry.key
    file = entry.file
    return file.hashes.get("sha256") or hashlib.sha256(file.url.encode("utf-8")).hexdigest()


def _variant_env(entry: Rewrite) -> dict[str, str | frozenset[str]]:
    return variant_environment(entry.label, entry.properties)


def _settled(metadata: bytes, entry: Rewrite) -> bytes:
    try:
        return plain_metadata(metadata, _variant_env(entry))
    except WheelError as exc:
        raise UpstreamFailed(f"upstream: {entry.source.metadata_url}: {exc}") from None


def _check_agrees(wheel: Path, entry: Rewrite) -> None:
    """The wheel must be what the page and ``*-variants.json`` say it is."""
    source = entry.source
    with WheelArchive(wheel) as archive:
        own = archive.variant_metadata()
        if own is None or entry.label not in own.variants:
            raise WheelError(f"{source.filename}: no variant.json describing {entry.label!r}")
        if set(own.properties(entry.label)) != set(entry.metadata.properties(entry.label)):
            raise WheelError(
                f"{source.filename}: its variant.json gives {entry.label!r} other properties "
                "than the release's *-variants.json; the index is inconsistent: report it"
            )
        expected = source.core_metadata_hashes.get("sha256")
        if expected is not None:
            metadata = archive.read(archive.dist_info_path("METADATA"))
            if hashlib.sha256(metadata).hexdigest() != expected:
                raise WheelError(
                    f"{source.filename}: its METADATA differs from the core metadata file the "
                    "index serves for it (PEP 658); the index is inconsistent: report it"
                )


def _wheel_metadata(stored: StoredFile, filename: str) -> bytes:
    try:
        with WheelArchive(stored.path, name=filename) as archive:
            return archive.read(archive.dist_info_path("METADATA"))
    except WheelError as exc:
        raise UpstreamFailed(f"upstream: {filename}: {exc}") from None
