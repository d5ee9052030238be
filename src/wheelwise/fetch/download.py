"""Parallel, verified downloads of distribution files.

Every file is streamed into a temporary file next to its destination while its
hashes are computed; only a complete file whose hashes match is renamed into
place. With a memory budget, a file whose size is announced and small stays
in memory instead (an :class:`InMemoryWheel`), within a budget. ``file://`` URLs
and local paths are copied the same way (and verified).

Connection errors and 5xx answers are retried with exponential backoff; a hash
mismatch, a body shorter than its ``Content-Length`` or longer than the size its
index gives, a compressed body that decodes to implausibly much, a download slower
than its deadline (see :mod:`wheelwise.client.bounded`), any other HTTP error or a
read timeout fails the item. When an item fails, the others are cancelled and
:meth:`Fetcher.fetch_all` raises :class:`DownloadError` for the first failing item
(in the order given); files that were completely downloaded and verified stay in the
destination folder, nothing partial does.

With a *cache* (a :class:`~wheelwise.cache.wheel_cache.ContentStore`), an
``http(s)`` item whose hash the cache holds is not downloaded: the cached file,
hashed again, is the result. Every other ``http(s)`` item is kept there once it is
complete and verified. With an *unpacked* store as well
(:mod:`wheelwise.cache.unpacked`), fetching for an install answers a wheel found
unpacked there with that entry (an :class:`UnpackedWheel`): nothing is read. A
wheel not found there, and too big for memory, is unpacked into its entry as it
downloads (:mod:`wheelwise.cache.stream_entry`): the wheel file itself is never
written, and the entry is published only once the file's hash and every member
are checked. One that cannot be read that way, or that the store cannot hold, is
downloaded whole instead.

:class:`Fetcher` is the one place these rules live: every wheel the installer
downloads (read while resolving, fetched ahead, or fetched for the install) goes
through one, with one retry policy (:mod:`wheelwise.policy.retry`) and one hash policy
(:mod:`wheelwise.policy.hashes`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol, TypeVar

from wheelwise.cache.stream_entry import NotStreamable, StreamUnpacker
from wheelwise.cache.unpacked import EntryFile, UnpackedStore, UnpackedWheel
from wheelwise.cache.wheel_cache import ContentStore
from wheelwise.client.bounded import (
    ACCEPT_ENCODING,
    DEFAULT_DEADLINE,
    WHEEL_RATE,
    BodyLimit,
    Deadline,
    read_body,
)
from wheelwise.client.index_client import host_problem, local_path, tls_problem
from wheelwise.client.lazy_http import LazyHttpClient, as_client_source
from wheelwise.fetch.handover import prompt_handover
from wheelwise.forked_map import cores
from wheelwise.models.errors import DownloadDeadline, DownloadError, InstallError
from wheelwise.policy.hashes import checked_hashes, trusted_hashes
from wheelwise.policy.retry import RetryableFailure, RetryPolicy, with_retries
from wheelwise.userfiles import open_regular
from wheelwise.wheels.archive import InMemoryWheel
from wheelwise.wheels.errors import WheelError, renamed

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DownloadError",
    "DownloadItem",
    "Fetched",
    "Fetcher",
    "ProgressSink",
]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

# A fetched wheel: a file, its bytes, or (for an install) its unpacked cache entry.
Fetched = Path | InMemoryWheel | UnpackedWheel

_CHUNK = 1 << 16
# Wheels from this size on (or of no known size) are unpacked as they download, when
# kept unpacked: below it, a wheel fits the memory budget, and is unpacked from there.
STREAM_UNPACK_FROM = 32 << 20
# A wheel is a zip archive: compressing it again for transfer hardly shrinks it.
_EXPANSION = 16
# Downloads at once: at least this many (a small wheel's download mostly waits for the
# server), and one per core up to the most (a big wheel unpacked as it downloads keeps
# a core busy, so on a many-core machine the biggest no longer queue behind each other).
MIN_DOWNLOADS = 4
MAX_DOWNLOADS = 16


def download_workers() -> int:
    """How many downloads :meth:`Fetcher.fetch_all` runs at once on this machine."""
    return max(MIN_DOWNLOADS, min(MAX_DOWNLOADS, cores()))


def unpacking_downloads() -> int:
    """How many downloads are unpacked as they arrive at once: one per core (each
    keeps one busy inflating, hashing and writing; more only hand the interpreter
    lock to and fro), at least two."""
    return max(2, min(MAX_DOWNLOADS, cores()))


class ProgressSink(Protocol):
    """Receives download progress; calls come from worker threads.

    ``start`` may come again for the same *name* when a download is retried: the
    sink should then restart that file's progress.
    """

    def expect(self, sizes: Mapping[str, int | None]) -> None:
        """Before any ``start``: every file the batch fetches, by name, with the size
        its source gives (None: not given), for a display to show the whole."""
        ...

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

    @property
    def origin(self) -> str:
        """The file as the user knows it: a ``file:`` URL's path, another URL as it is
        (errors name it, never a scratch copy)."""
        if urllib.parse.urlsplit(self.url).scheme.lower() == "file":
            return str(local_path(self.url))
        return self.url

    def expected_hashes(self) -> dict[str, str]:
        """The hashes that are verified (see :func:`trusted_hashes`), by name."""
        return trusted_hashes(self.hashes)

    def cache_hashes(self) -> dict[str, str]:
        """The hashes the wheel cache keeps this file under: its verified hashes for
        an ``http(s)`` URL; none for a local file, which is on disk already."""
        return self.expected_hashes() if _is_http(self.url) else {}

    def unpacked_hashes(self) -> dict[str, str]:
        """The hashes the unpacked cache keeps this wheel under: its verified hashes,
        whatever its URL. A local wheel (one built from an sdist, say) is linked
        from there the next time, as a downloaded one is, instead of unpacked into
        new files again."""
        return self.expected_hashes()


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


class _Sink(Protocol):
    """Where a download's bytes go: :class:`_Output`, or a :class:`StreamUnpacker`."""

    def begin(self, size: int | None) -> None: ...

    def write(self, data: bytes) -> None: ...


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
            # Closing flushes what is buffered: on a full disk that fails again, and
            # the error being reported is the first one.
            with contextlib.suppress(OSError):
                self.file.close()
        if self.temp is not None:
            with contextlib.suppress(OSError):
                self.temp.unlink(missing_ok=True)


class _Fetcher:
    """One batch of downloads under a :class:`Fetcher`'s policy: where files go, who
    hears progress, and the event that cancels the batch."""

    def __init__(
        self,
        dest_dir: Path | None,
        client: Callable[[], httpx.Client],
        progress: ProgressSink | None,
        *,
        retry: RetryPolicy,
        cancel: threading.Event,
        sleep: Callable[[float], None],
        budget: _Budget | None = None,
        deadline: float = DEFAULT_DEADLINE,
        cache: ContentStore | None = None,
        unpacked: UnpackedStore | None = None,
        slots: threading.Semaphore | None = None,
        unpacking: threading.Semaphore | None = None,
    ) -> None:
        self.cache = cache
        self.unpacked = unpacked
        self.slots = slots
        self.unpacking = unpacking
        self.deadline = deadline
        self.budget = budget
        self.dest_dir = dest_dir
        self.client = client
        self.progress = progress
        self.retry = retry
        self.cancel = cancel
        self.sleep = sleep

    def fetch(
        self, item: DownloadItem, on_memory: Callable[[int], object] | None = None
    ) -> Fetched:
        """*item*, verified. *on_memory* hears the size of a download that goes to
        memory, before its first byte (or of the cached file that is used instead)."""
        kept = item.cache_hashes()
        unpacked_key = item.unpacked_hashes()
        if self.unpacked is not None and unpacked_key:
            # Its files are compared later, for the whole install at once.
            entry = self.unpacked.lookup(unpacked_key, item.name, check=False)
            if entry is not None:
                if on_memory is not None:
                    on_memory(0)
                _whole(self.progress, item.size or 0, item.name)
                return entry
        cache = self.cache if kept else None
        if cache is not None:
            cached = cache.lookup(kept, item.name, size=item.size)
            if cached is not None:
                size = _size_of(cached)
                if on_memory is not None:
                    on_memory(size)
                _whole(self.progress, size, item.name)
                return cached
        if self._streams(item, kept):
            try:
                with (
                    self.unpacking if self.unpacking is not None else contextlib.nullcontext(),
                    prompt_handover,
                ):
                    entry = self._fetch_unpacked(item, kept)
            except (NotStreamable, OSError) as exc:  # fetched whole, as any other
                _log.debug("%s is not unpacked as it downloads: %s", item.name, exc)
            else:
                if self.progress is not None:
                    self.progress.finish(item.name)
                return entry
        out = _Output(self.dest_dir, item.name, self.budget, on_memory)
        try:
            self._fetch_into(item, out)
            result = out.finish()
        except OSError as exc:  # writing it: reading a local file is a DownloadError
            out.discard()
            raise DownloadError(
                item.url,
                f"cannot save it in {self.dest_dir} ({exc.strerror or exc}); free some space "
                "there, or set WHEELWISE_CACHE_DIR to a folder with room",
            ) from None
        except BaseException:
            out.discard()
            raise
        if cache is not None:  # complete and verified
            if isinstance(result, InMemoryWheel):
                cache.store_bytes(kept, item.name, result.data)
            else:
                cache.store_file(kept, item.name, result)
        if self.progress is not None:
            self.progress.finish(item.name)
        return result

    def _stop_if_cancelled(self) -> None:
        if self.cancel.is_set():
            raise _Cancelled

    def _streams(self, item: DownloadItem, kept: Mapping[str, str]) -> bool:
        """Whether *item* is unpacked into the store as it downloads."""
        return (
            self.unpacked is not None
            and self.dest_dir is not None  # a batch that fetches big files at all
            and bool(kept)  # an http(s) URL with a hash to keep it under
            and (item.size is None or item.size >= STREAM_UNPACK_FROM)
        )

    def _fetch_unpacked(self, item: DownloadItem, kept: Mapping[str, str]) -> UnpackedWheel:
        """*item* downloaded straight into its entry of the unpacked store. Raises
        NotStreamable, or OSError where the store cannot hold it (nothing is left
        behind either way)."""
        store = self.unpacked
        assert store is not None

        def build(folder: Path) -> tuple[list[EntryFile], str]:
            unpacker = StreamUnpacker(folder, item.name)
            try:
                self._check_digests(item, self._http(item, unpacker))
                return unpacker.finish()
            except WheelError as exc:
                raise InstallError(f"refusing to install {item.name}: {exc}") from None
            finally:
                unpacker.close()

        return self._retried(item.url, lambda: store.publish(kept, item.name, build))

    def _retried(self, url: str, attempt: Callable[[], _T]) -> _T:
        """*attempt* (an HTTP download), tried again on a :class:`_Retryable` failure
        as the retry policy allows."""

        def one_try() -> _T:
            try:
                return attempt()
            except _Retryable as exc:
                reason = exc.reason
                raise RetryableFailure(
                    lambda tries: DownloadError(url, f"{reason} (gave up after {tries} tries)")
                ) from None

        return with_retries(
            self.retry, one_try, sleep=self.sleep, before_retry=self._stop_if_cancelled
        )

    def _fetch_into(self, item: DownloadItem, out: _Output) -> None:
        url = item.url
        try:
            scheme = urllib.parse.urlsplit(url).scheme.lower()
        except ValueError:
            raise DownloadError(url, "not a valid URL") from None
        if len(scheme) == 1:  # a drive letter (C:\\wheels\\x.whl): a path
            scheme = ""
        if scheme in ("http", "https"):
            digests = self._retried(url, lambda: self._http(item, out))
        elif scheme == "file":
            parts = urllib.parse.urlsplit(url)
            path = local_path(url)
            if parts.netloc not in ("", "localhost"):
                raise DownloadError(url, f"file URL with a remote host {parts.netloc!r}")
            digests = self._copy(item, path, out)
        elif scheme:
            raise DownloadError(url, f"unsupported URL scheme {scheme!r}")
        else:
            digests = self._copy(item, Path(url), out)
        self._check_digests(item, digests)

    @staticmethod
    def _check_digests(item: DownloadItem, digests: Mapping[str, str]) -> None:
        for name, expected in checked_hashes(item.hashes).items():
            actual = digests[name]
            if actual != expected:
                raise DownloadError(
                    item.url,
                    f"{name} mismatch: expected {expected}, got {actual} (file corrupted?)",
                )

    def _chunks_into(
        self, item: DownloadItem, chunks: Iterator[bytes], out: _Sink
    ) -> tuple[dict[str, str], int]:
        hashers = {name: hashlib.new(name) for name in checked_hashes(item.hashes)}
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
            with open_regular(path) as source:  # a FIFO would block the open forever
                size = os.fstat(source.fileno()).st_size
                out.begin(size)
                if self.progress is not None:
                    self.progress.start(size, item.name)
                digests, _ = self._chunks_into(item, iter(lambda: source.read(_CHUNK), b""), out)
        except OSError as exc:
            raise DownloadError(item.url, f"cannot read the file: {exc.strerror or exc}") from None
        return digests

    def _http(self, item: DownloadItem, out: _Sink) -> dict[str, str]:
        """One try at downloading *item* into *out*, once a slot is free (the
        user's bound on downloads at once, across batches); the wait is not part of
        its deadline."""
        with self.slots if self.slots is not None else contextlib.nullcontext():
            return self._http_now(item, out)

    def _http_now(self, item: DownloadItem, out: _Sink) -> dict[str, str]:
        import httpx  # with the first download: see wheelwise.client.lazy_http

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
            error = DownloadDeadline if deadline.passed else DownloadError
            raise error(url, exc.reason) from None
        except httpx.TimeoutException as exc:
            if deadline.passed:  # the deadline, not --timeout, ended it
                raise DownloadDeadline(url, deadline.reason()) from None
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
            problem = tls_problem(url, exc)
            if problem is not None:  # no retry mends it
                raise DownloadError(url, problem) from None
            raise _Retryable(f"connection error: {exc}") from None
        except httpx.HTTPError as exc:
            raise DownloadError(url, f"HTTP error: {exc}") from None
        except UnicodeError as exc:
            problem = host_problem(url, exc)
            if problem is None:
                raise
            raise DownloadError(url, problem) from None
        if expected is not None and received != expected:
            raise _Retryable(f"truncated body: got {received} of {expected} bytes")
        return digests


def _is_http(url: str) -> bool:
    return "://" in url and urllib.parse.urlsplit(url).scheme.lower() in ("http", "https")


def _whole(progress: ProgressSink | None, size: int, name: str) -> None:
    """Tell *progress* of a file that was at hand already (cached, fetched ahead)."""
    if progress is not None:
        progress.start(size, name)
        progress.advance(size)
        progress.finish(name)


def _fetched_size(found: Fetched, item: DownloadItem) -> int:
    if isinstance(found, InMemoryWheel):
        return len(found.data)
    if isinstance(found, UnpackedWheel):
        return item.size or 0  # what its download would have been
    return _size_of(found)


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _capped(item: DownloadItem, expected: int | None) -> str:
    if item.size is not None and (expected is None or item.size <= expected):
        return f"this file (the size its index page or lock file gives, {item.size} bytes)"
    return f"this file (its Content-Length, {expected} bytes)"


class Fetcher:
    """The installer's one way to download a distribution file (see the module's
    docstring): the retry policy *retry* (the index client's), the hash policy of
    :func:`trusted_hashes`, the wheel *cache*, and one memory budget, *in_memory*
    bytes in all (each file at most *in_memory_per_file*), that small files take
    instead of temporary files, whichever batch fetches them. *client* (a client, or
    what gives one when first needed) defaults to one of this fetcher's own, with
    *timeout*; :meth:`close` closes that one.
    """

    def __init__(
        self,
        client: httpx.Client | Callable[[], httpx.Client] | None = None,
        *,
        retry: RetryPolicy | None = None,
        deadline: float = DEFAULT_DEADLINE,
        cache: ContentStore | None = None,
        unpacked: UnpackedStore | None = None,
        in_memory: int = 0,
        in_memory_per_file: int = 32 << 20,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        downloads: int | None = None,
    ) -> None:
        self._own: LazyHttpClient | None = None
        if client is None:
            self._own = LazyHttpClient(lambda: _own_client(timeout))
            self.client: Callable[[], httpx.Client] = self._own
        else:
            self.client = as_client_source(client)
        self.retry = retry if retry is not None else RetryPolicy()
        self.deadline = deadline
        self.cache = cache
        self.unpacked = unpacked
        self.sleep = sleep
        # Downloads at once, by every batch together (None: download_workers()); the
        # downloads fetched ahead of need count against it as well as the install's.
        self.downloads = downloads
        self._slots = threading.BoundedSemaphore(downloads or download_workers())
        self._unpacking = threading.BoundedSemaphore(unpacking_downloads())
        self._total = max(0, in_memory)
        self._budget = _Budget(self._total, in_memory_per_file) if in_memory > 0 else None

    @property
    def bytes_in_memory(self) -> int:
        """Memory given to downloads so far (of the budget)."""
        if self._budget is None:
            return 0
        with self._budget.lock:
            return self._total - self._budget.left

    def batch(
        self,
        dest_dir: Path | None,
        *,
        progress: ProgressSink | None = None,
        cancel: threading.Event | None = None,
        tries: int | None = None,
        in_memory: bool = True,
        unpacked: bool = True,
    ) -> _Fetcher:
        """A batch of downloads into *dest_dir* (None: into memory only, and what
        does not fit there is not fetched). *tries* caps the tries of each file below
        the retry policy's (one, for a download that is only a guess). With
        *unpacked* (and an unpacked store), a wheel unpacked in the cache is
        answered with its entry, its files not yet compared with what they were
        (:func:`~wheelwise.cache.unpacked.changed_entries`)."""
        retry = self.retry if tries is None else self.retry._replace(retries=max(0, tries - 1))
        return _Fetcher(
            dest_dir,
            self.client,
            progress,
            retry=retry,
            cancel=cancel if cancel is not None else threading.Event(),
            sleep=self.sleep,
            budget=self._budget if in_memory else None,
            deadline=self.deadline,
            cache=self.cache,
            unpacked=self.unpacked if unpacked else None,
            slots=self._slots,
            unpacking=self._unpacking,
        )

    def fetch_to(self, item: DownloadItem, dest_dir: Path) -> Path:
        """*item*, verified, as a file in *dest_dir* (or the cache's copy)."""
        found = self.batch(dest_dir, in_memory=False, unpacked=False).fetch(item)
        assert isinstance(found, Path)  # no memory budget for this batch
        return found

    def fetch_all(
        self,
        items: Sequence[DownloadItem],
        dest_dir: str | os.PathLike[str],
        *,
        progress: ProgressSink | None = None,
        max_workers: int | None = None,
        require_hashes: bool = False,
        then: Callable[[Fetched], object] | None = None,
        ready: Callable[[DownloadItem], Fetched | None] | None = None,
    ) -> list[Fetched]:
        """*items*, in their order, fetched in parallel into *dest_dir* (or memory).

        *then*, if given, is called in the worker thread with each file once it is
        complete and verified (to check it while others still download); what it
        raises fails that item like a download error.

        *ready*, if given, may supply an item fetched already (ahead, by this
        fetcher's rules): it is used instead of fetching it, and passed to *then*
        like any other.

        *max_workers* downloads run at once (default: the fetcher's ``downloads``, else
        :func:`download_workers`)."""
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
        cancel = threading.Event()
        fetcher = self.batch(dest, progress=progress, cancel=cancel)
        if progress is not None:
            progress.expect({item.name: item.size for item in items})

        def run(item: DownloadItem) -> Fetched:
            try:
                early = ready(item) if ready is not None else None
                if early is not None:
                    _whole(progress, _fetched_size(early, item), item.name)
                    found = early
                else:
                    found = fetcher.fetch(item)
                if then is not None:
                    try:
                        then(found)
                    except WheelError as exc:
                        if not isinstance(found, Path):
                            raise
                        raise renamed(exc, found, item.origin) from None
                return found
            except BaseException:
                cancel.set()
                raise

        try:
            workers = max_workers or self.downloads or download_workers()
            with ThreadPoolExecutor(max_workers=max(1, min(workers, len(items)))) as pool:
                # The largest first (unpacked as they download, they take the
                # longest), so that none starts last and finishes alone.
                order = sorted(items, key=lambda item: -(item.size or sys.maxsize))
                started = {item.name: pool.submit(run, item) for item in order}
                futures = [started[item.name] for item in items]
                results: list[Fetched | BaseException] = []
                for future in futures:
                    try:
                        results.append(future.result())
                    except BaseException as exc:
                        results.append(exc)
        finally:
            if progress is not None:
                progress.close()
        errors = [
            r for r in results if isinstance(r, BaseException) and not isinstance(r, _Cancelled)
        ]
        if errors:
            raise errors[0]
        if any(isinstance(r, BaseException) for r in results):  # pragma: no cover
            raise DownloadError(items[0].url, "cancelled")
        return [r for r in results if not isinstance(r, BaseException)]

    def close(self) -> None:
        if self._own is not None:
            self._own.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _own_client(timeout: float) -> httpx.Client:
    """The client of downloads not given one."""
    from wheelwise.client.deadline_transport import deadline_client

    return deadline_client(
        timeout=timeout, follow_redirects=True, headers={"Accept-Encoding": ACCEPT_ENCODING}
    )
