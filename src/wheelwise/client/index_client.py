"""A Simple Repository API client: project listings from indexes and find-links.

* :class:`IndexSource`: an index (``http(s)://`` or ``file://`` URL of its
  ``simple/`` root) or a find-links location (a directory, or an HTML page of links).
* :class:`IndexClient`: one ``httpx.Client`` (proxies from the environment, explicit
  timeouts, redirects followed), retries with exponential backoff on connection
  errors, timeouts and 5xx answers, and an on-disk cache of pages, used as they are
  while their ``Cache-Control: max-age`` lasts and then revalidated with
  ``If-None-Match`` / ``If-Modified-Since`` (see :mod:`wheelwise.cache.http_cache`).

  - :meth:`IndexClient.fetch_project`: a :class:`ProjectListing` (PEP 691 JSON
    preferred, PEP 503 HTML understood; a 404 is an empty listing).
  - :meth:`IndexClient.fetch_variants_json`: a release's
    ``{name}-{version}-variants.json`` (PEP 825 "Index-level metadata"), hash checked.
  - :meth:`IndexClient.fetch_metadata`: a wheel's PEP 658 core metadata, hash checked.

* :func:`find_candidates` / :func:`first_viable_source`: several sources, each
  listing kept apart: variant metadata is never merged across sources (PEP 825
  "Installing wheels from multiple sources"); the first source in order with a
  viable candidate for a version is the one to install from.

Every failure raises :class:`~wheelwise.client.errors.SourceError` (or a subclass)
with the URL, what happened and what to check.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Protocol
from urllib.parse import quote, unquote, urljoin, urlsplit, urlunsplit

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise import __version__
from wheelwise.cache.http_cache import (
    CachedResponse,
    HttpCache,
    StoredEntry,
    default_cache_dir,
    freshness,
)
from wheelwise.client.bounded import (
    ACCEPT_ENCODING,
    DEFAULT_DEADLINE,
    FILE_CAP,
    PAGE_CAP,
    WHEEL_RATE,
    BodyLimit,
    Deadline,
    read_body,
)
from wheelwise.client.connection import Connection
from wheelwise.client.errors import (
    AccessDenied,
    HashMismatch,
    InvalidPage,
    SourceError,
    SourceTimeout,
)
from wheelwise.client.grouped_cache import MIN_BODY, GroupedPages
from wheelwise.client.index_file import SDIST, VARIANTS_JSON, WHEEL, IndexFile
from wheelwise.client.index_strategy import (
    FIRST_INDEX,
    UNSAFE_BEST_MATCH,
    UNSAFE_FIRST_MATCH,
    IndexStrategy,
)
from wheelwise.client.lazy_http import LazyHttpClient
from wheelwise.client.page_files import SDIST_LINK, WHEEL_LINK, PageFiles
from wheelwise.client.simple_parse import page_kind, read_html_page, read_json_page, read_page
from wheelwise.policy.hashes import new_hashers
from wheelwise.policy.retry import RetryableFailure, RetryPolicy, with_retries
from wheelwise.variants.errors import InvalidMetadata
from wheelwise.variants.filenames import variants_json_filename

if TYPE_CHECKING:
    import httpx

    # loaded with the first release that has variant wheels
    from wheelwise.cache.wheel_cache import ContentStore
    from wheelwise.variants.metadata import VariantMetadata

__all__ = [
    "PAGE_ACCEPT",
    "FetchObserver",
    "HashMismatch",
    "IndexClient",
    "IndexFile",
    "IndexSource",
    "InvalidPage",
    "ProjectListing",
    "SourceError",
    "SourceListing",
    "find_candidates",
    "first_viable_source",
]

PAGE_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01"
)
_FIND_LINKS_ACCEPT = "text/html, */*;q=0.1"
_FILE_ACCEPT = "*/*"
_DIST_SUFFIXES = (".whl", ".tar.gz", ".zip", "-variants.json")
INDEX_HINT = "check --index-url and that the index is up"
_FIND_LINKS_HINT = "check --find-links"
_NETWORK_HINT = (
    "check the network connection and proxy settings (--proxy, HTTP_PROXY, HTTPS_PROXY, NO_PROXY)"
)

INDEX = "index"
FIND_LINKS = "find-links"


def _to_url(location: str | Path, kind: str) -> str:
    text = str(location)
    if "://" in text:
        return text
    try:
        return Path(text).expanduser().resolve().as_uri()
    except (ValueError, OSError, RuntimeError) as exc:  # a NUL byte, a symlink loop
        hint = INDEX_HINT if kind == INDEX else _FIND_LINKS_HINT
        raise SourceError(text, f"{text}: not a usable local path ({exc}); {hint}") from None


@dataclass(frozen=True)
class IndexSource:
    """Where to look for a project's files.

    ``kind`` is ``index`` (*url* is the ``simple/`` root: the project page is
    ``<url>/<normalized name>/``) or ``find-links`` (*url* is a directory or a page
    whose links are files of any project). Use :meth:`index` / :meth:`find_links`,
    which also take local paths.
    """

    url: str
    kind: str = INDEX

    def __post_init__(self) -> None:
        hint = INDEX_HINT if self.kind == INDEX else _FIND_LINKS_HINT
        try:
            parts = urlsplit(self.url)
            parts.port  # noqa: B018 - raises on a port that is no number or out of range
        except ValueError as exc:
            raise SourceError(self.url, f"{self.url}: not a valid URL ({exc}); {hint}") from None
        if parts.scheme.lower() not in ("http", "https", "file"):
            raise SourceError(
                self.url,
                f"{self.url}: not an http://, https:// or file:// URL or a local path; {hint}",
            )
        if self.kind not in (INDEX, FIND_LINKS):
            raise ValueError(f"unknown source kind {self.kind!r}")
        if self.kind == INDEX and not parts.path.endswith("/"):
            # The path ends in "/", the query kept after it (not "?token=t/").
            slashed = urlunsplit(parts._replace(path=parts.path + "/"))
            object.__setattr__(self, "url", slashed)

    @classmethod
    def index(cls, location: str | Path) -> IndexSource:
        return cls(_to_url(location, INDEX), INDEX)

    @classmethod
    def find_links(cls, location: str | Path) -> IndexSource:
        return cls(_to_url(location, FIND_LINKS), FIND_LINKS)

    @property
    def is_local(self) -> bool:
        return urlsplit(self.url).scheme.lower() == "file"

    @property
    def hint(self) -> str:
        return INDEX_HINT if self.kind == INDEX else _FIND_LINKS_HINT

    def project_url(self, name: str) -> str:
        """An index's page for *name* (PEP 503: the normalized name). An index URL's
        query (a token some private indexes take there) goes with every project
        page, as uv sends it; file URLs come from the pages as they are."""
        parts = urlsplit(self.url)
        base = urlunsplit(parts._replace(query="", fragment=""))
        page = urljoin(base, quote(canonicalize_name(name)) + "/")
        return f"{page}?{parts.query}" if parts.query else page


class ProjectListing:
    """The files one source lists for one project (its own files only).

    *files*: the files, or a page read lazily (:class:`PageFiles`: each version's
    links are read in full when that version is asked for). *found* is False when
    the source does not have the project (404, no page).
    """

    __slots__ = ("found", "name", "page", "page_url", "source")

    def __init__(
        self,
        name: NormalizedName,
        source: IndexSource,
        files: Iterable[IndexFile] | PageFiles = (),
        page_url: str | None = None,
        found: bool = True,
    ) -> None:
        self.name = name
        self.source = source
        self.page = files if isinstance(files, PageFiles) else PageFiles.of(files)
        self.page_url = page_url
        self.found = found

    def __repr__(self) -> str:
        return f"ProjectListing({self.name!r}, {self.source!r}, {len(self.page)} links)"

    def __eq__(self, other: object) -> bool:  # every file read: for tests, not hot paths
        if not isinstance(other, ProjectListing):
            return NotImplemented
        return (self.name, self.source, self.files, self.page_url, self.found) == (
            other.name,
            other.source,
            other.files,
            other.page_url,
            other.found,
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def files(self) -> tuple[IndexFile, ...]:
        """Every file, in page order (all read in full: prefer the methods below)."""
        return self.page.all()

    def versions(self, kinds: int = WHEEL_LINK | SDIST_LINK) -> list[Version]:
        """The versions with a link of one of *kinds* (``WHEEL_LINK``, ``SDIST_LINK``:
        both by default), oldest first, as the file names give them."""
        return self.page.versions(kinds)

    def files_for(self, version: str | Version) -> list[IndexFile]:
        """Its wheels and sdists of *version* (in page order)."""
        wanted = _version(version)
        if wanted is None:
            return []
        return [file for file in self.page.files_for(wanted) if file.kind in (WHEEL, SDIST)]

    def wheels_for(self, version: str | Version) -> list[IndexFile]:
        return [file for file in self.files_for(version) if file.kind == WHEEL]

    def has_variant_wheels(self, version: str | Version) -> bool:
        return any(file.is_variant_wheel for file in self.files_for(version))

    def variants_json(self, version: str | Version) -> IndexFile | None:
        """The ``{name}-{version}-variants.json`` link of *version*, if listed."""
        wanted = _version(version)
        if wanted is None:
            return None
        expected = variants_json_filename(self.name, wanted)
        fallback: IndexFile | None = None
        for file in self.page.files_for(wanted):
            if file.filename == expected:
                return file
            if fallback is None and file.kind == VARIANTS_JSON and file.project == self.name:
                fallback = file
        return fallback


def _version(version: str | Version) -> Version | None:
    if isinstance(version, Version):
        return version
    try:
        return Version(version)
    except InvalidVersion:
        return None


class FetchObserver(Protocol):
    """Told how a file download goes, piece by piece, as it is written."""

    def started(self, part: Path) -> None:
        """The download is written to *part* (renamed to its target once checked)."""

    def restarted(self) -> None:
        """A retry starts the file again from its first byte."""

    def received(self, piece: bytes) -> None:
        """*piece* is now in the file, after every piece before it."""


class SourceListing(NamedTuple):
    """A listing with its position in the list of sources (0: the first)."""

    position: int
    listing: ProjectListing

    @property
    def source(self) -> IndexSource:
        return self.listing.source


class _Fetched(NamedTuple):
    url: str  # after redirects: relative links resolve against it
    content_type: str | None
    read_body: Callable[[], bytes]  # a cached body is read when first needed
    size: int
    kept: bool = False  # the body is in the HTTP cache (it came from there, or went there)
    stamp: str | None = None  # the cached body's body_stamp, where the entry records it

    @property
    def body(self) -> bytes:
        return self.read_body()

    @classmethod
    def read(cls, url: str, content_type: str | None, body: bytes) -> _Fetched:
        """A body read from the network."""
        return cls(url, content_type, lambda: body, len(body))

    @classmethod
    def stored(cls, entry: StoredEntry) -> _Fetched:
        response = entry.response
        return cls(
            response.url, response.content_type, entry.read_body, entry.size, True, entry.stamp
        )


class IndexClient:
    """Fetches pages and files of sources over one HTTP connection pool.

    *timeout*: seconds to connect and between bytes read; *deadline*: seconds for a
    whole request (a wheel gets more time as bytes arrive, see
    :mod:`wheelwise.client.bounded`). *cache_dir*: where pages are cached (default
    ``<user cache dir>/http``); ``cache=False`` disables the cache; with *revalidate*
    every cached page is revalidated, however fresh. *metadata_cache*, if given, keeps
    the PEP 658 metadata files fetched, by the hash their page gives. *warn* hears each
    link of a page that was skipped because it cannot be read. *connection*: the
    certificates, trusted hosts and proxy of the command line. Use as a context
    manager, or call :meth:`close`.
    """

    def __init__(
        self,
        *,
        timeout: float = 15.0,
        retry: RetryPolicy | None = None,
        cache_dir: Path | None = None,
        cache: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
        deadline: float = DEFAULT_DEADLINE,
        warn: Callable[[str], None] | None = None,
        revalidate: bool = False,
        metadata_cache: ContentStore | None = None,
        connection: Connection | None = None,
    ) -> None:
        self.revalidate = revalidate
        self.metadata_cache = metadata_cache
        self.timeout = timeout
        self.deadline = deadline
        self.warn = warn
        # Indexes that refused a page and were passed over (warned of once each).
        self.passed_over: set[str] = set()
        self.retry = retry if retry is not None else RetryPolicy()
        self.cache = HttpCache(cache_dir or default_cache_dir()) if cache else None
        # Big JSON pages, grouped by version, beside the entries they were read from.
        self.grouped = GroupedPages(self.cache.directory / "grouped") if self.cache else None
        self._sleep = sleep
        self.connection = connection if connection is not None else Connection()
        self._http = LazyHttpClient(lambda: _http_client(timeout, transport, self.connection))

    @property
    def http(self) -> httpx.Client:
        """The underlying client, for downloads that should share its connections
        (made now if no request has needed it yet)."""
        return self._http()

    @property
    def http_source(self) -> LazyHttpClient:
        """What gives the underlying client, made by the first request that needs it
        (see :mod:`wheelwise.client.lazy_http`)."""
        return self._http

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> IndexClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- listings --------------------------------------------------------------------

    def fetch_project(self, source: IndexSource, name: str) -> ProjectListing:
        """The files *source* lists for project *name* (an empty listing, ``found``
        False, when the source does not have the project)."""
        normalized = canonicalize_name(name)
        if source.kind == FIND_LINKS:
            return self._find_links(source, normalized)
        if source.is_local:
            return self._local_index(source, normalized)
        url = source.project_url(normalized)
        fetched = self._get(url, PAGE_ACCEPT, source.hint, cached=True, missing_ok=True)
        if fetched is None:
            return ProjectListing(normalized, source, (), url, found=False)
        if (
            fetched.kept
            and self.grouped is not None
            and fetched.size >= MIN_BODY
            and page_kind(fetched.content_type) == "json"
        ):
            files = self.grouped.read(
                fetched.read_body, fetched.url, self.warn, stamp=fetched.stamp
            )
        else:
            files = read_page(fetched.body, fetched.url, fetched.content_type, warn=self.warn)
        return ProjectListing(normalized, source, files, fetched.url)

    def fetch_project_names(self, source: IndexSource) -> list[NormalizedName]:
        """Every project an index lists on its root page, normalized and sorted."""
        from wheelwise.client.project_list import read_project_names

        if source.is_local:
            directory = local_path(source.url)
            try:
                return sorted(
                    canonicalize_name(entry.name) for entry in directory.iterdir() if entry.is_dir()
                )
            except OSError as exc:
                raise SourceError(source.url, f"{directory}: cannot be read ({exc})") from None
        fetched = self._get(source.url, PAGE_ACCEPT, source.hint, cached=True)
        assert fetched is not None
        return read_project_names(fetched.body, fetched.url, fetched.content_type)

    def _local_index(self, source: IndexSource, name: NormalizedName) -> ProjectListing:
        page = source.project_url(name)
        directory = local_path(page)
        for filename, read in (("index.json", read_json_page), ("index.html", read_html_page)):
            path = directory / filename
            try:
                body = path.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise SourceError(page, f"{path}: cannot be read ({exc}); {source.hint}") from None
            url = path.as_uri()
            return ProjectListing(name, source, read(body, url, warn=self.warn), url)
        if not local_path(source.url).is_dir():
            raise SourceError(source.url, f"{source.url}: no such directory; {source.hint}")
        return ProjectListing(name, source, (), page, found=False)

    def _find_links(self, source: IndexSource, name: NormalizedName) -> ProjectListing:
        if source.is_local:
            path = local_path(source.url)
            if path.is_dir():
                files = PageFiles.of(
                    IndexFile(filename=entry.name, url=entry.resolve().as_uri())
                    for entry in sorted(path.iterdir())
                    if entry.name.endswith(_DIST_SUFFIXES)
                    and not entry.name.startswith(".")
                    and entry.is_file()
                )
                url = source.url
            else:
                try:
                    body = path.read_bytes()
                except OSError as exc:
                    raise SourceError(
                        source.url, f"{source.url}: cannot be read ({exc}); {source.hint}"
                    ) from None
                url = source.url
                files = read_html_page(body, url, warn=self.warn)
        else:
            fetched = self._get(source.url, _FIND_LINKS_ACCEPT, source.hint, cached=True)
            assert fetched is not None
            url = fetched.url
            files = read_html_page(fetched.body, url, fetched.content_type, warn=self.warn)
        mine = files.only(name)
        return ProjectListing(name, source, mine, url, found=len(mine) > 0)

    # -- files -------------------------------------------------------------------------

    def fetch_file_to(
        self, file: IndexFile, dest: Path, observer: FetchObserver | None = None
    ) -> None:
        """*file* streamed into *dest* (never held in memory), hash checked; nothing is
        left at *dest* unless it is complete and verified. Over HTTP, the body may not
        exceed the size the page gives, and has the deadline of a wheel. *observer* is
        told of each piece once it is in the file (before the hash is checked)."""
        url = file.url
        part = dest.with_name(dest.name + ".part")
        hashers = new_hashers(file.hashes)
        cap = file.size if file.size is not None else sys.maxsize

        def write(out: IO[bytes], pieces: Iterable[bytes]) -> None:
            if out.tell() and observer is not None:
                observer.restarted()
            out.seek(0)
            out.truncate()  # a retry starts again
            for name in hashers:
                hashers[name] = hashlib.new(name)
            for piece in pieces:
                out.write(piece)
                for hasher in hashers.values():
                    hasher.update(piece)
                if observer is not None:
                    out.flush()
                    observer.received(piece)

        try:
            with part.open("wb") as out:
                if observer is not None:
                    observer.started(part)
                if urlsplit(url).scheme.lower() == "file":
                    path = local_path(url)
                    try:
                        with path.open("rb") as source:
                            write(out, iter(lambda: source.read(1 << 20), b""))
                    except OSError as exc:
                        raise SourceError(url, f"{path}: cannot be read ({exc})") from None
                else:

                    def read(response: httpx.Response, deadline: Deadline) -> bytes:
                        what = f"this wheel (the {cap} bytes its index page gives)"
                        body = read_body(
                            response,
                            cap=cap,
                            what=what,
                            deadline=deadline,
                            expansion=_WHEEL_EXPANSION,
                        )
                        write(out, body)
                        return b""

                    self._get(
                        url, _FILE_ACCEPT, INDEX_HINT, cached=False, read=read, rate=WHEEL_RATE
                    )
            _check_digests(url, {name: h.hexdigest() for name, h in hashers.items()}, file.hashes)
            part.replace(dest)
        finally:
            with contextlib.suppress(FileNotFoundError):
                part.unlink()

    def fetch_variants_json(self, file: IndexFile) -> VariantMetadata:
        """A release's ``*-variants.json``, hash checked where the page gave a hash."""
        from wheelwise.variants.metadata import VariantMetadata

        data = self._fetch_checked(file.url, file.hashes, cached=True)
        try:
            return VariantMetadata.from_json(data, source=file.url)
        except InvalidMetadata as exc:
            raise InvalidPage(
                file.url, f"{exc}; the index serves invalid variant metadata: report it"
            ) from None
        except (RecursionError, ValueError) as exc:  # what json cannot hold
            what = "its JSON is nested too deeply" if isinstance(exc, RecursionError) else exc
            raise InvalidPage(
                file.url,
                f"{file.url}: not valid variant metadata: {what}; the index serves invalid "
                "variant metadata: report it",
            ) from None

    def fetch_metadata(self, file: IndexFile) -> bytes:
        """*file*'s PEP 658 core metadata, checked against the hash the page gave (from
        the metadata cache when it holds that hash)."""
        if not file.core_metadata:
            raise SourceError(
                file.url,
                f"{file.url}: the index does not serve this file's core metadata (PEP 658); "
                "read it from the file itself",
            )
        url, hashes = file.metadata_url, file.core_metadata_hashes
        cache = self.metadata_cache if urlsplit(url).scheme.lower() != "file" else None
        name = f"{file.filename}.metadata"
        if cache is not None:
            found = cache.read(hashes, name)
            if found is not None:
                return found
        data = self._fetch_checked(url, hashes)
        if cache is not None:
            cache.store_bytes(hashes, name, data)
        return data

    def _fetch_checked(self, url: str, hashes: Mapping[str, str], *, cached: bool = False) -> bytes:
        if urlsplit(url).scheme.lower() == "file":
            path = local_path(url)
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise SourceError(url, f"{path}: cannot be read ({exc})") from None
        else:
            fetched = self._get(url, _FILE_ACCEPT, INDEX_HINT, cached=cached, cap=FILE_CAP)
            assert fetched is not None
            data = fetched.body
        try:
            verify_hashes(url, data, hashes)
        except HashMismatch:
            if cached and self.cache is not None:
                # Not kept: once the index serves the right file, it is fetched again.
                self.cache.forget(url, _FILE_ACCEPT)
            raise
        return data

    # -- HTTP ------------------------------------------------------------------------

    def _get(
        self,
        url: str,
        accept: str,
        hint: str,
        *,
        cached: bool,
        missing_ok: bool = False,
        cap: int = PAGE_CAP,
        read: _Reader | None = None,
        rate: int | None = None,
    ) -> _Fetched | None:
        """A 2xx answer's body, read within *cap* and the deadline (or by *read*,
        which then gets the deadline, grown by *rate*); None for a 404 when
        *missing_ok*."""
        stored = self.cache.open(url, accept) if (cached and self.cache is not None) else None
        if stored is not None and not self.revalidate and stored.response.is_fresh():
            return _Fetched.stored(stored)
        headers = {"Accept": accept}
        if stored is not None:
            headers.update(stored.response.validators())
        what = "an index page" if cap == PAGE_CAP else "an index file"

        def whole(response: httpx.Response, deadline: Deadline) -> bytes:
            return b"".join(read_body(response, cap=cap, what=what, deadline=deadline))

        response, body = self._request(url, headers, hint, read or whole, rate)
        if response.status_code == 304 and stored is not None:
            entry = stored.response
            # Fresh again from now, for the lifetime the 304 gives (else the stored one).
            lifetime = (
                freshness(response.headers).lifetime
                if "cache-control" in response.headers
                else entry.lifetime
            )
            if lifetime > 0 and self.cache is not None:
                self.cache.put(
                    url,
                    accept,
                    entry._replace(
                        body=stored.read_body(), stored_at=time.time(), lifetime=lifetime
                    ),
                )
            return _Fetched.stored(stored)
        if response.status_code == 404 and missing_ok:
            return None
        if response.status_code >= 400 or response.status_code == 304:
            reason = response.reason_phrase or ""
            message = (
                f"{url}: the server answered {response.status_code} {reason}".rstrip() + f"; {hint}"
            )
            if response.status_code in (401, 403):
                raise AccessDenied(url, message, response.status_code)
            raise SourceError(url, message)
        fetched = _Fetched.read(str(response.url), response.headers.get("content-type"), body)
        allowed = freshness(response.headers)
        if cached and self.cache is not None and allowed.store:
            fetched = fetched._replace(kept=True)
            self.cache.put(
                url,
                accept,
                CachedResponse(
                    url=fetched.url,
                    content_type=fetched.content_type,
                    etag=response.headers.get("etag"),
                    last_modified=response.headers.get("last-modified"),
                    body=fetched.body,
                    stored_at=time.time(),
                    lifetime=allowed.lifetime,
                ),
            )
        return fetched

    def _request(
        self,
        url: str,
        headers: Mapping[str, str],
        hint: str,
        read: _Reader,
        rate: int | None,
    ) -> tuple[httpx.Response, bytes]:
        """The answer (a 2xx one with its body read by *read*), after retries."""
        import httpx  # with the first request: see wheelwise.client.lazy_http

        def one_try() -> tuple[httpx.Response, bytes]:
            deadline = Deadline(self.deadline, rate)
            try:
                with deadline, self._http().stream("GET", url, headers=dict(headers)) as response:
                    if response.status_code >= 500:
                        status = f"{response.status_code} {response.reason_phrase}"
                        raise RetryableFailure(
                            lambda tries: SourceError(
                                url,
                                f"{url}: the server answered {status} ({_tries(tries)}); the "
                                f"index is failing: try again later, or {hint}",
                            )
                        )
                    if 200 <= response.status_code < 300:
                        return response, read(response, deadline)
                    if response.status_code == 304:
                        # A 304 has no body; reading its end lets the pool keep the
                        # connection instead of closing it.
                        response.read()
                    return response, b""
            except BodyLimit as exc:
                error = SourceTimeout if deadline.passed else SourceError
                raise error(url, f"{url}: {exc.reason}; {hint}") from None
            except httpx.TimeoutException:
                if deadline.passed:  # the deadline, not --timeout, ended it
                    raise SourceTimeout(url, f"{url}: {deadline.reason()}; {hint}") from None
                raise RetryableFailure(
                    lambda tries: SourceTimeout(
                        url,
                        f"{url}: no answer within {self.timeout:g} s "
                        f"({_tries(tries)}); {hint}, or {_NETWORK_HINT}",
                    )
                ) from None
            except httpx.UnsupportedProtocol as exc:
                raise SourceError(url, f"{url}: {exc}; {hint}") from None
            except httpx.InvalidURL as exc:
                raise SourceError(url, f"{url}: invalid URL ({exc}); {hint}") from None
            except httpx.TransportError as exc:
                problem = tls_problem(url, exc)
                if problem is not None:
                    raise SourceError(url, f"{url}: {problem}") from None
                what = str(exc) or type(exc).__name__
                # A body cut short or a reset after connecting is no failure to connect.
                failed = (
                    "cannot connect"
                    if isinstance(exc, httpx.ConnectError)
                    else "the connection broke off"
                )
                raise RetryableFailure(
                    lambda tries: SourceError(
                        url,
                        f"{url}: {failed} ({what}; {_tries(tries)}); {hint}, or {_NETWORK_HINT}",
                    )
                ) from None
            except httpx.RequestError as exc:  # too many redirects, undecodable body
                what = str(exc) or type(exc).__name__
                raise SourceError(url, f"{url}: {what}; {hint}") from None
            except UnicodeError as exc:
                problem = host_problem(url, exc)
                if problem is None:
                    raise
                raise SourceError(url, f"{url}: {problem}; {hint}") from None

        return with_retries(self.retry, one_try, sleep=self._sleep)


_Reader = Callable[["httpx.Response", Deadline], bytes]


# The alerts a server sends when it wants another client certificate (--client-cert).
_CLIENT_CERT_ALERTS = {
    "TLSV13_ALERT_CERTIFICATE_REQUIRED": "the server asks for a client certificate",
    "SSLV3_ALERT_BAD_CERTIFICATE": "the server refused the client certificate",
    "TLSV1_ALERT_UNKNOWN_CA": "the server does not trust the client certificate",
}


def tls_problem(url: str, exc: BaseException) -> str | None:
    """What to say (after the URL) when *exc*, a request to *url*, is the server's
    certificate failing the check, or the server asking for a client certificate;
    else None. Neither is mended by trying again."""
    import ssl

    cause: BaseException | None = exc
    for _ in range(8):  # httpx's error, httpcore's, then the ssl module's
        if cause is None or isinstance(cause, ssl.SSLError):
            break
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, ssl.SSLCertVerificationError):
        parts = urlsplit(url)
        if parts.scheme.lower() == "http":  # no TLS to the server: the https proxy's
            return (
                f"the https proxy's certificate is not trusted ({cause.verify_message}); "
                "give the certificate of the authority that signed it with --cert PATH "
                "(or SSL_CERT_FILE), or take the system's certificates with --native-tls"
            )
        host = parts.hostname or "HOST"
        return (
            f"the server's certificate is not trusted ({cause.verify_message}); give "
            "the certificate of the authority that signed it with --cert PATH (or "
            "SSL_CERT_FILE), take the system's certificates with --native-tls, or, for a "
            f"server you trust, leave its certificate unchecked with --trusted-host {host}"
        )
    if isinstance(cause, ssl.SSLError) and cause.reason in _CLIENT_CERT_ALERTS:
        return (
            f"{_CLIENT_CERT_ALERTS[cause.reason]} ({cause.reason}); give one it "
            "accepts with --client-cert PATH (or SSL_CLIENT_CERT): one PEM file holding "
            "the certificate and its private key"
        )
    return None


def host_problem(url: str, exc: UnicodeError) -> str | None:
    """What is wrong with *url*'s host name, when *exc* is the IDNA codec's refusal
    of it (``a..b``, ``xn--zz``: no resolver takes such a name); else None (a
    decoding error of another kind)."""
    if isinstance(exc, UnicodeDecodeError | UnicodeEncodeError | UnicodeTranslateError):
        return None
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return None
    return f"{host!r} is not a valid host name ({exc})"


def _http_client(
    timeout: float, transport: httpx.BaseTransport | None, connection: Connection
) -> httpx.Client:
    """The client an :class:`IndexClient` sends its requests with."""
    import httpx

    from wheelwise.client.deadline_transport import deadline_client
    from wheelwise.client.netrc_auth import netrc_auth
    from wheelwise.client.tls import client_tls_context, insecure_tls_context

    options: dict[str, Any] = {
        "timeout": httpx.Timeout(timeout),
        "follow_redirects": True,
        # Only the encodings read_body decodes in bounded steps.
        "headers": {
            "User-Agent": f"wheelwise/{__version__}",
            "Accept-Encoding": ACCEPT_ENCODING,
        },
    }
    auth = netrc_auth()
    if auth is not None:
        options["auth"] = auth
    if transport is not None:
        return httpx.Client(trust_env=True, transport=transport, **options)
    insecure = None
    if connection.insecure_hosts:
        insecure = (insecure_tls_context(connection), connection.is_insecure)
    # The deadline bounds the whole request, headers and TLS included.
    return deadline_client(
        verify=client_tls_context(connection), proxy=connection.proxy, insecure=insecure, **options
    )


# A wheel is a zip archive: compressing it again for transfer hardly shrinks it.
_WHEEL_EXPANSION = 16


def _check_digests(url: str, digests: Mapping[str, str], hashes: Mapping[str, str]) -> None:
    for algorithm, actual in digests.items():
        expected = hashes[algorithm]
        if actual != expected.lower():
            raise HashMismatch(
                url,
                f"{url}: {algorithm} is {actual}, but the index page says {expected}: the file "
                "changed after the page was made, or was tampered with; try again, and "
                "report it to the index if it persists",
            )


def _tries(tries: int) -> str:
    return "1 try" if tries == 1 else f"{tries} tries"


def local_path(url: str) -> Path:
    """The path a ``file:`` URL names."""
    path = urlsplit(url).path
    if sys.platform != "win32":  # url2pathname's whole job here, without its module
        return Path(unquote(path, sys.getfilesystemencoding(), "surrogateescape"))
    # Imported here: urllib.request loads http.client and ssl (20 ms), which no
    # other part of an install from an HTTP index needs.
    from urllib.request import url2pathname

    return Path(url2pathname(path))


def verify_hashes(url: str, data: bytes, hashes: Mapping[str, str]) -> None:
    """Raise :class:`HashMismatch` unless *data* has every known hash in *hashes*."""
    hashers = new_hashers(hashes)
    for hasher in hashers.values():
        hasher.update(data)
    _check_digests(url, {name: h.hexdigest() for name, h in hashers.items()}, hashes)


# -- several sources -------------------------------------------------------------------


# Projects given sources of their own, in order: the first that has the project is
# its only one (--torch-backend's PyTorch indexes).
Routes = Mapping[str, Sequence[IndexSource]]


def find_candidates(
    name: str,
    sources: Sequence[IndexSource],
    client: IndexClient,
    routes: Routes | None = None,
    strategy: IndexStrategy | None = None,
) -> list[SourceListing]:
    """Each source's listing for *name*, in the order of *sources*, kept apart: the
    files (and variant metadata) of one source are never mixed with another's. A
    project *routes* names has the first of its own sources that lists it instead
    (all of them, none listing it, when none does). With the ``first-index``
    *strategy*, only the first index that lists it is kept, with the find-links
    sources; under the unsafe ones an index that refuses the page (401, 403) lists
    nothing (see :mod:`wheelwise.client.index_strategy`)."""
    own = routes.get(canonicalize_name(name)) if routes else None
    if own is not None:
        return _first_listing(name, own, client, keep_find_links=False)
    if strategy == FIRST_INDEX:
        return _first_listing(name, sources, client, keep_find_links=True)
    if strategy in (UNSAFE_FIRST_MATCH, UNSAFE_BEST_MATCH):
        return [
            SourceListing(position, _listing_unless_refused(client, source, name, strategy))
            for position, source in enumerate(sources)
        ]
    return [
        SourceListing(position, client.fetch_project(source, name))
        for position, source in enumerate(sources)
    ]


def _listing_unless_refused(
    client: IndexClient, source: IndexSource, name: str, strategy: IndexStrategy
) -> ProjectListing:
    """*source*'s listing of *name*; under the unsafe strategies, an index that
    refuses the request (401, 403) lists nothing, with a warning, as uv passes over
    it: the other indexes may have the project."""
    try:
        return client.fetch_project(source, name)
    except AccessDenied as exc:
        if client.warn is not None and source.url not in client.passed_over:
            client.passed_over.add(source.url)
            client.warn(
                f"{exc.url}: the server answered {exc.status}; this index is passed over "
                f"under --index-strategy {strategy} (give its credentials in the URL or "
                "~/.netrc for it to be read)"
            )
        return ProjectListing(canonicalize_name(name), source, (), exc.url, found=False)


def _first_listing(
    name: str, sources: Sequence[IndexSource], client: IndexClient, *, keep_find_links: bool
) -> list[SourceListing]:
    """The listing of the first of *sources* that lists *name* (the indexes after it
    are not asked), and with *keep_find_links* every find-links source's; every
    listing asked for when none lists it (for the messages)."""
    kept: list[SourceListing] = []
    tried: list[SourceListing] = []
    chosen = False
    for position, source in enumerate(sources):
        if keep_find_links and source.kind == FIND_LINKS:
            kept.append(SourceListing(position, client.fetch_project(source, name)))
        elif not chosen:
            listing = SourceListing(position, client.fetch_project(source, name))
            (kept if listing.listing.found else tried).append(listing)
            chosen = listing.listing.found
    return kept if chosen else sorted([*tried, *kept], key=lambda entry: entry.position)


def _default_viable(file: IndexFile) -> bool:
    return not file.yanked


def first_viable_source(
    version: str | Version,
    listings: Iterable[SourceListing],
    viable: Callable[[IndexFile], bool] = _default_viable,
) -> SourceListing | None:
    """The first listing, in source order, with a file of *version* that *viable*
    accepts (default: not yanked); None if no source has one. The installer then
    selects among that source's files only ("index priority", PEP 825)."""
    for listing in listings:
        if any(viable(file) for file in listing.listing.files_for(version)):
            return listing
    return None
