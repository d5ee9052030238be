"""Parallel, verified downloads of distribution files.

Every file is streamed into a temporary file next to its destination while its
hashes are computed; only a complete file whose hashes match is renamed into
place. With :func:`download_wheels`, a file whose size is announced and small stays
in memory instead (an :class:`InMemoryWheel`), within a budget. ``file://`` URLs
and local paths are copied the same way (and verified).

Connection errors and 5xx answers are retried with exponential backoff; a hash
mismatch, a body shorter than its ``Content-Length`` or longer than the size its
index gives, a compressed body that decodes to implausibly much, a download slower
than its deadline (see :mod:`wheelwise.index.bounded`), any other HTTP error or a
read timeout fails the item. When an item fails, the others are cancelled and
:func:`download_all` raises :class:`DownloadError` for the first failing item (in
the order given); files that were completely downloaded and verified stay in the
destination folder, nothing partial does.

With a *cache* (a :class:`~wheelwise.install.wheel_cache.ContentStore`), an
``http(s)`` item whose hash the cache holds is not downloaded: the cached file,
hashed again, is the result. Every other ``http(s)`` item is kept there once it is
complete and verified.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple, Protocol

from wheelwise.index.bounded import (
    ACCEPT_ENCODING,
    DEFAULT_DEADLINE,
    WHEEL_RATE,
    BodyLimit,
    Deadline,
    read_body,
)
from wheelwise.index.lazy_http import LazyHttpClient, as_client_source
from wheelwise.install.errors import DownloadError
from wheelwise.install.wheel_cache import ContentStore
from wheelwise.wheels.archive import InMemoryWheel

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DownloadError",
    "DownloadItem",
    "ProgressSink",
    "SpeculativeDownloads",
    "download_all",
    "download_wheels",
]

_CHUNK = 1 << 16
# A wheel is a zip archive: compressing it again for transfer hardly shrinks it.
_EXPANSION = 16
# Hash names accepted from an index, strongest first.
_HASHES = ("sha512", "sha384", "sha256", "sha3_512", "sha3_384", "sha3_256", "blake2b")


class ProgressSink(Protocol):
    """Receives download progress; calls come from worker threads.

    ``start`` may come again for the same *name* when a download is retried: the
    sink should then restart that file's progress.
    """

    def start(self, total_bytes: int | None, name: str) -> None: ...

    def advance(self, n: int) -> None: ...

    def finish(self, name: str) -> None: ...

    def close(self) -> None:
        """Every download has ended (called once, from the caller's thread): a display
        should stop now, with any thread of its own, before installing starts."""
        ...


@dataclass(frozen=True)
class DownloadItem:
    """One file to fetch: an ``http(s)://`` or ``file://`` URL, or a local path.

    *hashes* maps hash names (``sha256``...) to hex digests, as an index gives them;
    *filename* defaults to the last segment of the URL's path; *size*, the size the
    index gives (PEP 700), bounds what the download may bring.
    """

    url: str
    hashes: Mapping[str, str] = field(default_factory=dict)
    filename: str | None = None
    size: int | None = None

    @property
    def name(self) -> str:
        if self.filename:
            return self.filename
        path = urllib.parse.urlsplit(self.url).path if "://" in self.url else self.url
        return urllib.parse.unquote(path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1])

    def expected_hashes(self) -> dict[str, str]:
        """The hashes this module can check, by name."""
        return {
            name: value.lower() for name, value in self.hashes.items() if name.lower() in _HASHES
        }


class _Cancelled(Exception):
    pass


class _Retryable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Budget:
    """Bytes of memory downloads may still take, shared by the worker threads."""

    def __init__(self, total: int, per_file: int) -> None:
        self.left = total
        self.per_file = per_file
        self.lock = threading.Lock()

    def take(self, size: int | None) -> bool:
        if size is None or size > self.per_file:
            return False
        with self.lock:
            if size > self.left:
                return False
            self.left -= size
            return True


class _NoRoom(Exception):
    """A download that may only go to memory does not fit there."""


class _Output:
    """Where one download goes: memory when its size is known, small, and within the
    budget; else a temporary file next to its destination, renamed into place once
    complete and verified (with no destination folder: :class:`_NoRoom`)."""

    def __init__(
        self,
        dest_dir: Path | None,
        name: str,
        budget: _Budget | None,
        on_memory: Callable[[int], object] | None = None,
    ) -> None:
        self.dest_dir = dest_dir
        self.name = name
        self.budget = budget
        self.on_memory = on_memory
        self.memory: io.BytesIO | None = None
        self.file: IO[bytes] | None = None
        self.temp: Path | None = None

    def begin(self, size: int | None) -> None:
        """Called when the size is known (None: unknown), before the first byte."""
        if self.memory is not None:  # a retry
            self.memory = io.BytesIO()
            return
        if self.file is not None:
            self.file.seek(0)
            self.file.truncate()
            return
        if self.budget is not None and self.budget.take(size):
            self.memory = io.BytesIO()
            if self.on_memory is not None:
                assert size is not None  # the budget takes announced sizes only
                self.on_memory(size)
            return
        if self.dest_dir is None:
            raise _NoRoom(self.name)
        fd, temp_name = tempfile.mkstemp(prefix=f".{self.name}.", suffix=".part", dir=self.dest_dir)
        self.temp = Path(temp_name)
        self.file = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> None:
        target = self.memory if self.memory is not None else self.file
        assert target is not None, "begin() comes first"
        target.write(data)

    def finish(self) -> Path | InMemoryWheel:
        if self.memory is not None:
            return InMemoryWheel(self.name, self.memory.getvalue())
        assert self.file is not None
        assert self.temp is not None
        assert self.dest_dir is not None
        self.file.close()
        target = self.dest_dir / self.name
        self.temp.replace(target)
        self.temp = None
        return target

    def discard(self) -> None:
        if self.file is not None:
            self.file.close()
        if self.temp is not None:
            self.temp.unlink(missing_ok=True)


class _Fetcher:
    def __init__(
        self,
        dest_dir: Path | None,
        client: Callable[[], httpx.Client],
        progress: ProgressSink | None,
        *,
        retries: int,
        backoff: float,
        cancel: threading.Event,
        sleep: Callable[[float], None],
        budget: _Budget | None = None,
        deadline: float = DEFAULT_DEADLINE,
        cache: ContentStore | None = None,
    ) -> None:
        self.cache = cache
        self.deadline = deadline
        self.budget = budget
        self.dest_dir = dest_dir
        self.client = client
        self.progress = progress
        self.retries = retries
        self.backoff = backoff
        self.cancel = cancel
        self.sleep = sleep

    def fetch(
        self, item: DownloadItem, on_memory: Callable[[int], object] | None = None
    ) -> Path | InMemoryWheel:
        """*item*, verified. *on_memory* hears the size of a download that goes to
        memory, before its first byte (or of the cached file that is used instead)."""
        cache = self.cache if _is_http(item.url) else None
        if cache is not None:
            cached = cache.lookup(item.expected_hashes(), item.name, size=item.size)
            if cached is not None:
                size = _size_of(cached)
                if on_memory is not None:
                    on_memory(size)
                if self.progress is not None:
                    self.progress.start(size, item.name)
                    self.progress.advance(size)
                    self.progress.finish(item.name)
                return cached
        out = _Output(self.dest_dir, item.name, self.budget, on_memory)
        try:
            self._fetch_into(item, out)
            result = out.finish()
        except BaseException:
            out.discard()
            raise
        if cache is not None:  # complete and verified
            if isinstance(result, InMemoryWheel):
                cache.store_bytes(item.expected_hashes(), item.name, result.data)
            else:
                cache.store_file(item.expected_hashes(), item.name, result)
        if self.progress is not None:
            self.progress.finish(item.name)
        return result

    def _fetch_into(self, item: DownloadItem, out: _Output) -> None:
        url = item.url
        scheme = urllib.parse.urlsplit(url).scheme.lower() if "://" in url else ""
        if scheme in ("http", "https"):
            attempt = 0
            while True:
                try:
                    digests = self._http(item, out)
                    break
                except _Retryable as exc:
                    attempt += 1
                    if attempt >= self.retries:
                        raise DownloadError(
                            url, f"{exc.reason} (gave up after {attempt} tries)"
                        ) from None
                    self.sleep(self.backoff * 2 ** (attempt - 1))
                    if self.cancel.is_set():
                        raise _Cancelled from None
        elif scheme == "file":
            parts = urllib.parse.urlsplit(url)
            path = Path(urllib.request.url2pathname(parts.path))
            if parts.netloc not in ("", "localhost"):
                raise DownloadError(url, f"file URL with a remote host {parts.netloc!r}")
            digests = self._copy(item, path, out)
        elif scheme:
            raise DownloadError(url, f"unsupported URL scheme {scheme!r}")
        else:
            digests = self._copy(item, Path(url), out)
        for name, expected in item.expected_hashes().items():
            actual = digests[name]
            if actual != expected:
                raise DownloadError(
                    url, f"{name} mismatch: expected {expected}, got {actual} (file corrupted?)"
                )

    def _chunks_into(
        self, item: DownloadItem, chunks: Iterator[bytes], out: _Output
    ) -> tuple[dict[str, str], int]:
        hashers = {name: hashlib.new(name) for name in item.expected_hashes()}
        received = 0
        for chunk in chunks:
            if self.cancel.is_set():
                raise _Cancelled
            out.write(chunk)
            for hasher in hashers.values():
                hasher.update(chunk)
            received += len(chunk)
            if self.progress is not None:
                self.progress.advance(len(chunk))
        return {name: h.hexdigest() for name, h in hashers.items()}, received

    def _copy(self, item: DownloadItem, path: Path, out: _Output) -> dict[str, str]:
        try:
            size = path.stat().st_size
            with path.open("rb") as source:
                out.begin(size)
                if self.progress is not None:
                    self.progress.start(size, item.name)
                digests, _ = self._chunks_into(item, iter(lambda: source.read(_CHUNK), b""), out)
        except OSError as exc:
            raise DownloadError(item.url, f"cannot read the file: {exc.strerror or exc}") from None
        return digests

    def _http(self, item: DownloadItem, out: _Output) -> dict[str, str]:
        import httpx  # with the first download: see wheelwise.index.lazy_http

        url = item.url
        expected: int | None = None
        received = 0
        deadline = Deadline(self.deadline, WHEEL_RATE)
        try:
            with deadline, self.client().stream("GET", url) as response:
                if response.status_code >= 500:
                    raise _Retryable(f"HTTP {response.status_code} {response.reason_phrase}")
                if response.status_code >= 400:
                    raise DownloadError(
                        url, f"HTTP {response.status_code} {response.reason_phrase}"
                    )
                length = response.headers.get("content-length")
                expected = int(length) if length and length.isdigit() else None
                encoded = response.headers.get("content-encoding", "identity") != "identity"
                if encoded:
                    expected = None  # the length is the encoded one
                if expected is not None and item.size is not None and expected > item.size:
                    raise DownloadError(
                        url,
                        f"the server announces {expected} bytes, but its index page (or "
                        f"lock file) gives its size as {item.size} bytes",
                    )
                cap = min(
                    item.size if item.size is not None else sys.maxsize,
                    expected if expected is not None else sys.maxsize,
                )
                out.begin(expected)
                if self.progress is not None:
                    self.progress.start(expected, item.name)

                def counted() -> Iterator[bytes]:
                    nonlocal received
                    for chunk in read_body(
                        response,
                        cap=cap,
                        what=_capped(item, expected),
                        deadline=deadline,
                        expansion=_EXPANSION if encoded else None,
                    ):
                        received += len(chunk)
                        yield chunk

                digests, _ = self._chunks_into(item, counted(), out)
        except BodyLimit as exc:
            raise DownloadError(url, exc.reason) from None
        except httpx.TimeoutException as exc:
            if deadline.passed:  # the deadline, not --timeout, ended it
                raise DownloadError(url, deadline.reason()) from None
            if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
                raise _Retryable(f"connection timed out ({exc})") from None
            waited = self.client().timeout.read
            within = f" within {waited:g} s (--timeout)" if waited is not None else ""
            raise DownloadError(
                url, f"timed out: no data{within} ({type(exc).__name__}); check the network"
            ) from None
        except httpx.RemoteProtocolError as exc:
            if expected is not None and received < expected:
                raise _Retryable(
                    f"truncated body: got {received} of {expected} bytes ({exc})"
                ) from None
            raise _Retryable(f"protocol error: {exc}") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"connection error: {exc}") from None
        except httpx.HTTPError as exc:
            raise DownloadError(url, f"HTTP error: {exc}") from None
        if expected is not None and received != expected:
            raise _Retryable(f"truncated body: got {received} of {expected} bytes")
        return digests


def _is_http(url: str) -> bool:
    return "://" in url and urllib.parse.urlsplit(url).scheme.lower() in ("http", "https")


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _capped(item: DownloadItem, expected: int | None) -> str:
    if item.size is not None and (expected is None or item.size <= expected):
        return f"this file (the size its index page or lock file gives, {item.size} bytes)"
    return f"this file (its Content-Length, {expected} bytes)"


class SpeculativeDownloads:
    """Wheels fetched into memory before they are known to be needed: the installer
    starts one for each candidate the resolver pins, so that most downloads are done
    when resolution ends. Only files that fit in *budget* bytes (each at most
    *per_file*) are fetched, with one try; *then* runs with each complete, verified
    file, in the worker thread. A download that fails, or is never taken, is only
    dropped: the real download of that item tries again and reports the failure.
    With a *cache*, a file the cache holds is taken from there (any size: it is on
    disk already) instead of being downloaded, and a downloaded one is kept there.

    Use as a context manager, or call :meth:`close` (which waits for every thread).
    """

    def __init__(
        self,
        client: httpx.Client | Callable[[], httpx.Client],
        *,
        budget: int,
        per_file: int = 32 << 20,
        max_workers: int = 4,
        then: Callable[[Path | InMemoryWheel], object] | None = None,
        deadline: float = DEFAULT_DEADLINE,
        cache: ContentStore | None = None,
    ) -> None:
        self._cache = cache
        self._budget = _Budget(budget, per_file)
        self._total = budget
        self._cancel = threading.Event()
        self._fetcher = _Fetcher(
            None,
            as_client_source(client),
            None,
            retries=1,
            backoff=0.0,
            cancel=self._cancel,
            sleep=time.sleep,
            budget=self._budget,
            deadline=deadline,
            cache=cache,
        )
        self._then = then
        self._workers = max_workers
        self._pool: ThreadPoolExecutor | None = None
        self._started: dict[tuple[str, str], _Started] = {}
        self._busy = 0  # downloads under way (the others wait for a worker)
        self._lock = threading.Lock()
        self._closed = False

    @property
    def bytes_taken(self) -> int:
        """Memory given to these downloads so far (of the budget)."""
        with self._budget.lock:
            return self._total - self._budget.left

    def start(self, item: DownloadItem) -> Future[int | None] | None:
        """Start fetching *item* if it is not already (``http(s)`` URLs only). The
        future gets its size in bytes once the answer announces it and it fits in
        memory, or at once when the cache holds it (None when it will not be kept,
        or fails first); None when *item* is not fetched here."""
        key = _key(item)
        if urllib.parse.urlsplit(item.url).scheme.lower() not in ("http", "https"):
            return None
        with self._lock:
            if self._closed:
                return None
            if key not in self._started:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="download")
                size: Future[int | None] = Future()
                if self._cache is not None:  # a stat: the worker verifies it
                    cached = self._cache.size(item.expected_hashes(), item.name)
                    if cached is not None:
                        size.set_result(cached)
                self._started[key] = _Started(self._pool.submit(self._fetch, item, size), size)
            return self._started[key].size

    def _fetch(self, item: DownloadItem, size: Future[int | None]) -> Path | InMemoryWheel | None:
        def sized(n: int) -> None:
            if not size.done():  # set already from the cache's entry
                size.set_result(n)

        with self._lock:
            self._busy += 1
        try:
            found = self._fetcher.fetch(item, on_memory=sized)
            if self._then is not None:
                self._then(found)
        except Exception:
            return None  # the real download reports it
        finally:
            with self._lock:
                self._busy -= 1
            if not size.done():
                size.set_result(None)
        return found  # in memory, or the cache's file

    def queued(self, item: DownloadItem) -> bool:
        """Whether *item*'s download waits for others to end before it starts."""
        with self._lock:
            started = self._started.get(_key(item))
            return (
                started is not None
                and not started.wheel.running()
                and not started.wheel.done()
                and self._busy >= self._workers
            )

    def peek(self, item: DownloadItem) -> Path | InMemoryWheel | None:
        """Like :meth:`take`, but *item* stays to be taken."""
        with self._lock:
            started = self._started.get(_key(item))
        return _result(started)

    def take(self, item: DownloadItem) -> Path | InMemoryWheel | None:
        """*item*, complete and verified (waiting for it if still in flight), or None
        when it was not started or did not succeed."""
        with self._lock:
            started = self._started.pop(_key(item), None)
        return _result(started)

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

    def __enter__(self) -> SpeculativeDownloads:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Started(NamedTuple):
    """One speculative download: the wheel (None if it failed or is not kept), and
    its size once the answer announces it (None if it never will)."""

    wheel: Future[Path | InMemoryWheel | None]
    size: Future[int | None]


def _result(started: _Started | None) -> Path | InMemoryWheel | None:
    if started is None or started.wheel.cancelled():
        return None
    return started.wheel.result()


def _key(item: DownloadItem) -> tuple[str, str]:
    return item.url, repr(sorted(item.expected_hashes().items()))


def download_all(
    items: Sequence[DownloadItem],
    dest_dir: str | os.PathLike[str],
    *,
    client: httpx.Client | Callable[[], httpx.Client] | None = None,
    progress: ProgressSink | None = None,
    max_workers: int = 4,
    require_hashes: bool = False,
    retries: int = 3,
    backoff: float = 0.5,
    timeout: float = 30.0,
    deadline: float = DEFAULT_DEADLINE,
) -> list[Path]:
    """Download *items* into *dest_dir*; the paths, in the order of *items*.

    *retries* is the number of tries for connection errors and 5xx answers, waiting
    *backoff*, then twice as long... between them. *timeout* applies to a client
    created here (a given *client* keeps its own).
    """
    found = download_wheels(
        items,
        dest_dir,
        client=client,
        progress=progress,
        max_workers=max_workers,
        require_hashes=require_hashes,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
        deadline=deadline,
    )
    return [path for path in found if isinstance(path, Path)]


def download_wheels(
    items: Sequence[DownloadItem],
    dest_dir: str | os.PathLike[str],
    *,
    in_memory: int = 0,
    in_memory_per_file: int = 32 << 20,
    client: httpx.Client | Callable[[], httpx.Client] | None = None,
    progress: ProgressSink | None = None,
    max_workers: int = 4,
    require_hashes: bool = False,
    retries: int = 3,
    backoff: float = 0.5,
    timeout: float = 30.0,
    deadline: float = DEFAULT_DEADLINE,
    then: Callable[[Path | InMemoryWheel], object] | None = None,
    ready: Callable[[DownloadItem], Path | InMemoryWheel | None] | None = None,
    cache: ContentStore | None = None,
) -> list[Path | InMemoryWheel]:
    """Like :func:`download_all`, but files whose size is known in advance and at most
    *in_memory_per_file* are kept in memory while they fit in *in_memory* bytes in
    all: an install never writes (and then deletes) a small wheel on disk.

    *then*, if given, is called in the worker thread with each file once it is
    complete and verified (to check it while others still download); what it raises
    fails that item like a download error.

    *ready*, if given, may supply an item already downloaded, verified and passed to
    *then* (by :meth:`SpeculativeDownloads.take`, say): it is used as it is.

    *cache*, if given, supplies the items it holds and keeps those downloaded (see
    the module's docstring)."""
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    for item in items:
        if not item.name:
            raise DownloadError(item.url, "no file name in the URL")
        if item.name in names:
            raise DownloadError(item.url, f"same file name {item.name!r} as {names[item.name]}")
        names[item.name] = item.url
        if require_hashes and not item.expected_hashes():
            raise DownloadError(item.url, "no expected hash, and hashes are required")
    if not items:
        return []
    own: LazyHttpClient | None = None
    http: Callable[[], httpx.Client]
    if client is None:
        http = own = LazyHttpClient(lambda: _own_client(timeout))
    else:
        http = as_client_source(client)
    cancel = threading.Event()
    fetcher = _Fetcher(
        dest,
        http,
        progress,
        retries=max(1, retries),
        backoff=backoff,
        cancel=cancel,
        budget=_Budget(in_memory, in_memory_per_file) if in_memory > 0 else None,
        sleep=time.sleep,
        deadline=deadline,
        cache=cache,
    )

    def run(item: DownloadItem) -> Path | InMemoryWheel:
        try:
            early = ready(item) if ready is not None else None
            if early is not None:
                if progress is not None:
                    size = len(early.data) if isinstance(early, InMemoryWheel) else _size_of(early)
                    progress.start(size, item.name)
                    progress.advance(size or 0)
                    progress.finish(item.name)
                return early
            found = fetcher.fetch(item)
            if then is not None:
                then(found)
            return found
        except BaseException:
            cancel.set()
            raise

    try:
        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(items)))) as pool:
            futures = [pool.submit(run, item) for item in items]
            results: list[Path | InMemoryWheel | BaseException] = []
            for future in futures:
                try:
                    results.append(future.result())
                except BaseException as exc:
                    results.append(exc)
    finally:
        if own is not None:
            own.close()
        if progress is not None:
            progress.close()
    errors = [r for r in results if isinstance(r, BaseException) and not isinstance(r, _Cancelled)]
    if errors:
        raise errors[0]
    if any(isinstance(r, BaseException) for r in results):  # pragma: no cover
        raise DownloadError(items[0].url, "cancelled")
    return [r for r in results if isinstance(r, Path | InMemoryWheel)]


def _own_client(timeout: float) -> httpx.Client:
    """The client of downloads not given one."""
    from wheelwise.index.deadline_transport import deadline_client

    return deadline_client(
        timeout=timeout, follow_redirects=True, headers={"Accept-Encoding": ACCEPT_ENCODING}
    )
