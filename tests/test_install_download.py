"""Verified parallel downloads against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from indexkit import handler_served
from wheelwise.cache.wheel_cache import ContentStore
from wheelwise.client.bounded import DEFAULT_DEADLINE
from wheelwise.fetch.download import DownloadItem, Fetched, Fetcher, ProgressSink
from wheelwise.models.errors import DownloadError
from wheelwise.policy.retry import RetryPolicy
from wheelwise.wheels.archive import InMemoryWheel

# The downloads of these tests go through one Fetcher each, with *retries* tries in all.


def _tries_policy(retries: int, backoff: float) -> RetryPolicy:
    """*retries* tries in all, waiting *backoff*, then twice as long... between them."""
    return RetryPolicy(retries=max(1, retries) - 1, backoff=backoff, max_delay=float("inf"))


def download_all(items: Sequence[DownloadItem], dest_dir: Path, **options: Any) -> list[Path]:
    """:func:`download_wheels` with nothing kept in memory: the paths, in the order of
    *items*."""
    found = download_wheels(items, dest_dir, **options)
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
    then: Callable[[Fetched], object] | None = None,
    cache: ContentStore | None = None,
) -> list[Fetched]:
    """:func:`download_all` with the Fetcher's memory budget, *then* and *cache*."""
    with Fetcher(
        client,
        retry=_tries_policy(retries, backoff),
        deadline=deadline,
        cache=cache,
        in_memory=in_memory,
        in_memory_per_file=in_memory_per_file,
        timeout=timeout,
    ) as fetcher:
        return fetcher.fetch_all(
            items,
            dest_dir,
            progress=progress,
            max_workers=max_workers,
            require_hashes=require_hashes,
            then=then,
        )


FILES = {f"pkg{i}-1.0-py3-none-any.whl": bytes([i]) * (100_000 + i) for i in range(5)}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def _zeros_gzip() -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    return compressor.compress(bytes(64 << 20)) + compressor.flush()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hits: dict[str, int]
    release: threading.Event

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path
        self.hits[path] = self.hits.get(path, 0) + 1
        try:
            name = path.rsplit("/", 1)[-1]
            if path.startswith("/files/") and name in FILES:
                self._send(200, FILES[name])
            elif path.startswith("/truncated/"):
                self.close_connection = True
                self._send(200, b"x" * 10, length=1000)
            elif path.startswith("/error500/"):
                self._send(500, b"boom")
            elif path.startswith("/flaky/"):
                if self.hits[path] < 3:
                    self._send(503, b"busy")
                else:
                    self._send(200, FILES["pkg1-1.0-py3-none-any.whl"])
            elif path.startswith("/hang/"):
                self.release.wait(10)
                self._send(200, b"late")
            elif path.startswith("/gzip/"):
                # 64 MiB of zeros, gzip-encoded: far more than any size given for it.
                body = _zeros_gzip()
                self.send_response(200)
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif path.startswith("/brotli/"):
                self.send_response(200)
                self.send_header("Content-Encoding", "br")
                self.send_header("Content-Length", "4")
                self.end_headers()
                self.wfile.write(b"\x0b\x00\x80\x03")
            elif path.startswith("/drip/"):
                self.close_connection = True
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                for _ in range(400):  # 1 byte every 0.25 s, never complete
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    if self.release.wait(0.25):
                        return
            else:
                self._send(404, b"not found")
        except OSError:  # the client gave up
            self.close_connection = True


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, int]]]:
    hits: dict[str, int] = {}
    release = threading.Event()
    handler = type("Handler", (_Handler,), {"hits": hits, "release": release})
    with handler_served(handler) as base:
        try:
            yield base, hits
        finally:
            release.set()


class RecordingSink:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.expected: dict[str, int | None] = {}
        self.started: dict[str, int | None] = {}
        self.advanced = 0
        self.finished: list[str] = []
        self.closed = 0

    def expect(self, sizes: Mapping[str, int | None]) -> None:
        with self.lock:
            self.expected = dict(sizes)

    def start(self, total_bytes: int | None, name: str) -> None:
        with self.lock:
            self.started[name] = total_bytes

    def advance(self, n: int) -> None:
        with self.lock:
            self.advanced += n

    def finish(self, name: str) -> None:
        with self.lock:
            self.finished.append(name)

    def close(self) -> None:
        self.closed += 1


def _items(base: str) -> list[DownloadItem]:
    return [
        DownloadItem(f"{base}/files/{name}", {"sha256": sha256(data)})
        for name, data in FILES.items()
    ]


def test_parallel_downloads_verified_with_progress(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    base, _ = server
    sink = RecordingSink()
    paths = download_all(_items(base), tmp_path / "dl", progress=sink, require_hashes=True)
    assert [p.name for p in paths] == list(FILES)
    for path in paths:
        assert path.read_bytes() == FILES[path.name]
    assert sink.expected == dict.fromkeys(FILES)  # told first; no sizes given here
    assert sink.started == {name: len(data) for name, data in FILES.items()}
    assert sorted(sink.finished) == sorted(FILES)
    assert sink.advanced == sum(len(d) for d in FILES.values())
    assert sink.closed == 1  # told once that downloading is over
    assert sorted(p.name for p in (tmp_path / "dl").iterdir()) == sorted(FILES)


def test_hash_mismatch(server: tuple[str, dict[str, int]], tmp_path: Path) -> None:
    base, _ = server
    items = _items(base)
    name = "pkg2-1.0-py3-none-any.whl"
    items[2] = DownloadItem(f"{base}/files/{name}", {"sha256": "0" * 64})
    with pytest.raises(DownloadError, match=rf"files/{name}: sha256 mismatch") as info:
        download_all(items, tmp_path / "dl", max_workers=1)
    assert info.value.url == f"{base}/files/{name}"
    left = [p.name for p in (tmp_path / "dl").iterdir()]
    assert name not in left
    assert not [n for n in left if n.endswith(".part")]


def test_truncated_body(server: tuple[str, dict[str, int]], tmp_path: Path) -> None:
    base, hits = server
    url = f"{base}/truncated/t-1.0-py3-none-any.whl"
    with pytest.raises(DownloadError, match=r"truncated/t-1\.0.*truncated body: got 10 of 1000"):
        download_all([DownloadItem(url)], tmp_path / "dl", backoff=0.01)
    assert hits["/truncated/t-1.0-py3-none-any.whl"] == 3
    assert list((tmp_path / "dl").iterdir()) == []


def test_server_errors_retried_then_fail(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    base, hits = server
    url = f"{base}/error500/e-1.0-py3-none-any.whl"
    with pytest.raises(DownloadError, match=r"HTTP 500.*gave up after 3 tries"):
        download_all([DownloadItem(url)], tmp_path / "dl", backoff=0.01)
    assert hits["/error500/e-1.0-py3-none-any.whl"] == 3
    flaky = f"{base}/flaky/pkg1-1.0-py3-none-any.whl"
    (path,) = download_all(
        [DownloadItem(flaky, {"sha256": sha256(FILES["pkg1-1.0-py3-none-any.whl"])})],
        tmp_path / "dl",
        backoff=0.01,
    )
    assert hits["/flaky/pkg1-1.0-py3-none-any.whl"] == 3
    assert path.read_bytes() == FILES["pkg1-1.0-py3-none-any.whl"]


def test_not_found_is_not_retried(server: tuple[str, dict[str, int]], tmp_path: Path) -> None:
    base, hits = server
    with pytest.raises(DownloadError, match="HTTP 404"):
        download_all([DownloadItem(f"{base}/nothing/n-1.0.whl")], tmp_path, backoff=0.01)
    assert hits["/nothing/n-1.0.whl"] == 1


def test_timeout(server: tuple[str, dict[str, int]], tmp_path: Path) -> None:
    base, _ = server
    items = [*_items(base), DownloadItem(f"{base}/hang/h-1.0-py3-none-any.whl")]
    with (
        httpx.Client(timeout=0.3) as client,
        pytest.raises(DownloadError, match=r"hang/h-1\.0.*timed out"),
    ):
        download_all(items, tmp_path / "dl", client=client)
    assert not [p for p in (tmp_path / "dl").iterdir() if p.name.endswith(".part")]
    assert not (tmp_path / "dl" / "h-1.0-py3-none-any.whl").exists()


def test_local_files_and_file_urls(tmp_path: Path) -> None:
    source = tmp_path / "src dir"
    source.mkdir()
    (a_name, a_data), (b_name, b_data) = list(FILES.items())[:2]
    (source / a_name).write_bytes(a_data)
    (source / b_name).write_bytes(b_data)
    sink = RecordingSink()
    paths = download_all(
        [
            DownloadItem(str(source / a_name), {"sha256": sha256(a_data)}),
            DownloadItem((source / b_name).as_uri(), {"sha256": sha256(b_data)}),
        ],
        tmp_path / "dl",
        progress=sink,
    )
    assert [p.read_bytes() for p in paths] == [a_data, b_data]
    assert sorted(sink.finished) == sorted([a_name, b_name])
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        download_all(
            [DownloadItem((source / a_name).as_uri(), {"sha256": sha256(b"other")})],
            tmp_path / "dl2",
        )
    assert list((tmp_path / "dl2").iterdir()) == []
    with pytest.raises(DownloadError, match="cannot read the file"):
        download_all([DownloadItem(str(source / "missing.whl"))], tmp_path / "dl3")


def test_require_hashes(tmp_path: Path) -> None:
    item = DownloadItem("http://127.0.0.1:9/x-1.0-py3-none-any.whl")
    with pytest.raises(DownloadError, match="no expected hash, and hashes are required"):
        download_all([item], tmp_path, require_hashes=True)
    md5_only = DownloadItem(item.url, {"md5": "0" * 32})
    with pytest.raises(DownloadError, match="hashes are required"):
        download_all([md5_only], tmp_path, require_hashes=True)


def test_connection_refused_retried(tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match=r"connection error.*gave up after 2 tries"):
        download_all(
            [DownloadItem("http://127.0.0.1:9/x-1.0-py3-none-any.whl")],
            tmp_path,
            retries=2,
            backoff=0.01,
        )


def test_bad_items(tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match="same file name"):
        download_all(
            [DownloadItem("http://a.invalid/x.whl"), DownloadItem("http://b.invalid/x.whl")],
            tmp_path,
        )
    with pytest.raises(DownloadError, match="unsupported URL scheme 'ftp'"):
        download_all([DownloadItem("ftp://a.invalid/x.whl")], tmp_path)
    assert download_all([], tmp_path) == []
    assert DownloadItem("https://h/p/a%2Bb-1.0.whl#sha256=00").name == "a+b-1.0.whl"


# -- small downloads kept in memory ---------------------------------------------------


def test_small_files_stay_in_memory_within_the_budget(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    """Files (100,000 to 100,004 bytes) fit two at a time in a 250,000-byte budget;
    the rest go to disk, and a file over the per-file limit always does."""
    base, _ = server
    found = download_wheels(
        _items(base), tmp_path / "dl", in_memory=250_000, in_memory_per_file=200_000
    )
    assert [f.name for f in found] == list(FILES)
    in_memory = [f for f in found if isinstance(f, InMemoryWheel)]
    on_disk = [f for f in found if isinstance(f, Path)]
    assert len(in_memory) == 2
    assert len(on_disk) == 3
    for wheel in in_memory:
        assert wheel.data == FILES[wheel.name]
    for path in on_disk:
        assert path.read_bytes() == FILES[path.name]
    assert sorted(p.name for p in (tmp_path / "dl").iterdir()) == sorted(p.name for p in on_disk)
    tiny_limit = download_wheels(
        _items(base)[:1], tmp_path / "dl2", in_memory=10**9, in_memory_per_file=1000
    )
    assert all(isinstance(f, Path) for f in tiny_limit)


def test_in_memory_download_is_verified(server: tuple[str, dict[str, int]], tmp_path: Path) -> None:
    base, _ = server
    name = next(iter(FILES))
    bad = DownloadItem(f"{base}/files/{name}", {"sha256": sha256(b"something else")})
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        download_wheels([bad], tmp_path / "dl", in_memory=10**9)
    assert list((tmp_path / "dl").iterdir()) == []


def test_local_file_goes_to_memory(tmp_path: Path) -> None:
    source = tmp_path / "pkg-1.0-py3-none-any.whl"
    source.write_bytes(b"wheel bytes")
    item = DownloadItem(source.as_uri(), {"sha256": sha256(b"wheel bytes")})
    (found,) = download_wheels([item], tmp_path / "dl", in_memory=10**6)
    assert isinstance(found, InMemoryWheel)
    assert found.data == b"wheel bytes"


def test_then_runs_on_each_complete_file_and_can_fail_it(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    base, _ = server
    seen: list[str] = []
    lock = threading.Lock()

    def check(found: Fetched) -> None:
        with lock:
            seen.append(found.name)

    download_wheels(_items(base), tmp_path / "dl", in_memory=10**7, then=check)
    assert sorted(seen) == sorted(FILES)

    def refuse(found: Fetched) -> None:
        raise DownloadError(found.name, "refused by the check")

    with pytest.raises(DownloadError, match="refused by the check"):
        download_wheels(_items(base)[:2], tmp_path / "dl2", then=refuse)


# -- speculative downloads (started while resolving) ----------------------------------


def _download_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("download")]


def test_a_file_fetched_ahead_is_used_and_checked_like_any_other(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    """A file one batch fetched ahead (into memory) is what a later batch of the same
    fetcher gives for it: not fetched again, passed to *then* and reported to the
    progress sink like the files that batch fetched itself."""
    base, hits = server
    items = _items(base)
    checked: list[str] = []
    with httpx.Client() as client, Fetcher(client, in_memory=10**7) as fetcher:
        ahead = fetcher.batch(None, tries=1).fetch(items[1])
        assert isinstance(ahead, InMemoryWheel)
        assert fetcher.bytes_in_memory == len(ahead.data)
        sink = RecordingSink()
        found = fetcher.fetch_all(
            items[1:4],
            tmp_path / "dl",
            progress=sink,
            then=lambda w: checked.append(w.name),
            ready=lambda item: ahead if item.name == ahead.name else None,
        )
    assert [f.name for f in found] == [i.name for i in items[1:4]]
    assert found[0] is ahead
    assert sorted(checked) == sorted(i.name for i in items[1:4])
    assert sorted(sink.finished) == sorted(i.name for i in items[1:4])
    assert sink.advanced == sum(len(FILES[i.name]) for i in items[1:4])
    # Each file was fetched once: the one fetched ahead was not fetched again.
    assert [hits[f"/files/{i.name}"] for i in items[1:4]] == [1, 1, 1]
    assert _download_threads() == []


def test_one_memory_budget_for_every_batch_of_a_fetcher(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    """What one batch took of the memory budget is gone for the next; a batch with
    no folder fetches into memory only, and refuses what does not fit."""
    base, _ = server
    items = _items(base)
    with Fetcher(in_memory=150_000) as fetcher:
        (first,) = fetcher.fetch_all(items[:1], tmp_path / "one")
        assert isinstance(first, InMemoryWheel)
        (second,) = fetcher.fetch_all(items[1:2], tmp_path / "two")
        assert isinstance(second, Path)  # 100,001 more bytes would pass 150,000
        with pytest.raises(Exception, match=items[2].name):
            fetcher.batch(None, tries=1).fetch(items[2])
    assert fetcher.bytes_in_memory == len(FILES[items[0].name])


def test_downloads_are_kept_by_hash_and_then_taken_from_the_cache(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    """Downloaded into memory or to disk, each verified file is kept; the next
    download of the same items asks the server for nothing and gives the cache's
    files (hashed again), with progress as for a download."""
    base, hits = server
    store = ContentStore(tmp_path / "wheels")
    items = _items(base)
    unhashed = DownloadItem(f"{base}/files/{items[0].name}", filename="unhashed.whl")
    first = download_wheels(
        [*items, unhashed], tmp_path / "one", client=None, in_memory=250_000, cache=store
    )
    assert any(isinstance(f, InMemoryWheel) for f in first)  # both ways are kept
    assert any(isinstance(f, Path) for f in first)
    kept = {p.name for p in store.folder.rglob("*") if p.is_file()}
    assert kept == set(FILES)  # not the file without a hash
    before = dict(hits)
    sink = RecordingSink()
    checked: list[str] = []
    second = download_wheels(
        items,
        tmp_path / "two",
        progress=sink,
        cache=store,
        then=lambda w: checked.append(w.name),
    )
    assert hits == before
    assert all(isinstance(f, Path) and store.holds(f) for f in second)
    assert [f.read_bytes() for f in second if isinstance(f, Path)] == list(FILES.values())
    assert sorted(checked) == sorted(sink.finished) == sorted(FILES)
    assert sink.advanced == sum(len(d) for d in FILES.values())
    assert not (tmp_path / "two").exists() or list((tmp_path / "two").iterdir()) == []


def test_a_mismatching_download_is_not_kept(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    base, _ = server
    name = next(iter(FILES))
    bad = DownloadItem(f"{base}/files/{name}", {"sha256": sha256(b"something else")})
    store = ContentStore(tmp_path / "wheels")
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        download_wheels([bad], tmp_path / "dl", cache=store, in_memory=10**7)
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        download_wheels([bad], tmp_path / "dl", cache=store)
    assert not store.folder.exists()


# -- limits: decoded size, encodings, deadline ------------------------------------------


def test_a_compressed_body_is_bounded_by_the_size_the_index_gives(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    base, _ = server
    item = DownloadItem(f"{base}/gzip/w-1.0-py3-none-any.whl", size=100_000)
    with pytest.raises(DownloadError) as raised:
        download_all([item], tmp_path / "dl", retries=1)
    assert raised.value.url == item.url
    assert "bigger than 100000 bytes once decoded" in raised.value.reason
    assert list((tmp_path / "dl").iterdir()) == []


def test_a_compressed_wheel_of_unknown_size_cannot_expand_without_bound(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    base, _ = server
    item = DownloadItem(f"{base}/gzip/w-1.0-py3-none-any.whl")
    with pytest.raises(DownloadError) as raised:
        download_all([item], tmp_path / "dl", retries=1)
    assert "decodes to more than 16 times" in raised.value.reason
    assert list((tmp_path / "dl").iterdir()) == []


def test_an_encoding_not_asked_for_is_refused(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    base, _ = server
    item = DownloadItem(f"{base}/brotli/w-1.0-py3-none-any.whl")
    with pytest.raises(DownloadError) as raised:
        download_all([item], tmp_path / "dl", retries=1)
    assert "Content-Encoding 'br'" in raised.value.reason


def test_a_dripping_download_stops_at_its_deadline(
    server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    """Each byte comes well within the read timeout, but the whole never does."""
    base, _ = server
    item = DownloadItem(f"{base}/drip/w-1.0-py3-none-any.whl")
    started = time.monotonic()
    with pytest.raises(DownloadError) as raised:
        download_all([item], tmp_path / "dl", retries=1, timeout=5, deadline=1)
    assert time.monotonic() - started < 60  # the drip would go on for 100 s
    assert "slower than the deadline of 1 s plus 1 s per 16 KiB" in raised.value.reason
    assert "--request-deadline" in raised.value.reason


class _AtOnce:
    """A server of small files that counts the downloads under way at once (one ends
    before its body is sent); *hold* runs once each request is counted, before the
    answer."""

    def __init__(self, hold: Callable[[int], None]) -> None:
        self.now = 0
        self.most = 0
        self.lock = threading.Lock()
        counter = self

        class Counted(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with counter.lock:
                    counter.now += 1
                    counter.most = max(counter.most, counter.now)
                    now = counter.now
                hold(now)
                body = self.path.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with counter.lock:
                    counter.now -= 1
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.handler = Counted


@pytest.mark.parametrize(("machine_cores", "at_once"), [(1, 4), (8, 8), (64, 16)])
def test_downloads_at_once_follow_the_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, machine_cores: int, at_once: int
) -> None:
    """One download per core (big wheels are unpacked as they arrive), never fewer than
    4 nor more than 16: the server holds every answer until as many requests as
    expected are in, or 10 s have passed (a loaded 2-core machine has taken over 2 s to
    open the sixteenth), and counts the most it saw at once."""
    import wheelwise.fetch.download as download

    monkeypatch.setattr(download, "cores", lambda: machine_cores)
    all_in = threading.Event()

    def hold(now: int) -> None:
        if now >= at_once:
            all_in.set()
        all_in.wait(10.0)

    server = _AtOnce(hold)
    with handler_served(server.handler) as base:
        items = [DownloadItem(f"{base}/files/p{i}-1.0-py3-none-any.whl") for i in range(20)]
        with Fetcher(None, retry=_tries_policy(1, 0.01)) as fetcher:
            found = fetcher.fetch_all(items, tmp_path / "dl")
    assert len(found) == 20
    assert server.most == at_once


def test_a_bound_on_downloads_holds_across_batches(tmp_path: Path) -> None:
    """``Fetcher(downloads=1)``: two batches fetching at the same time from two threads
    still download one file at a time."""
    server = _AtOnce(lambda now: time.sleep(0.1))
    with handler_served(server.handler) as base, Fetcher(None, downloads=1) as fetcher:

        def batch(tag: str) -> list[Fetched]:
            items = [DownloadItem(f"{base}/{tag}/p{i}-1.0-py3-none-any.whl") for i in range(3)]
            return fetcher.fetch_all(items, tmp_path / tag)

        results: list[list[Fetched]] = []
        threads = [threading.Thread(target=lambda t=t: results.append(batch(t))) for t in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [len(found) for found in results] == [3, 3]
    assert server.most == 1


@pytest.mark.parametrize("command", ["install", "download", "lock"])
@pytest.mark.parametrize(
    ("given", "env"),
    [(["--concurrent-downloads", "0"], {}), ([], {"WHEELWISE_CONCURRENT_DOWNLOADS": "many"})],
)
def test_a_bad_bound_on_downloads_is_one_line(
    command: str, given: list[str], env: dict[str, str]
) -> None:
    from click.testing import CliRunner

    from wheelwise.cli.app import cli

    result = CliRunner(env=env).invoke(cli, [command, *given, "anything"])
    assert result.exit_code == 2
    assert "--concurrent-downloads" in result.output
    assert "Traceback" not in result.output


def test_a_bound_on_downloads_survives_failed_tries(tmp_path: Path) -> None:
    """``Fetcher(downloads=1)`` against a server that answers each file's first request
    with 503 and cuts the second's body short: every try gives its slot back (or the
    next download would wait for ever), the third try of each file succeeds, and no
    two tries ever ran at once."""
    tries: dict[str, int] = {}

    def hold(now: int) -> None:
        time.sleep(0.02)

    server = _AtOnce(hold)

    class Failing(server.handler):  # type: ignore[misc, name-defined]
        def do_GET(self) -> None:
            with server.lock:
                tries[self.path] = attempt = tries.get(self.path, 0) + 1
            if attempt == 3:
                super().do_GET()
                return
            with server.lock:
                server.now += 1
                server.most = max(server.most, server.now)
            hold(server.now)
            with server.lock:
                server.now -= 1
            if attempt == 1:
                self.send_error(503)
                return
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"cut")  # then the connection closes: a short body
            self.close_connection = True

    found: list[list[Fetched]] = []
    with handler_served(Failing) as base:
        items = [DownloadItem(f"{base}/files/p{i}-1.0-py3-none-any.whl") for i in range(3)]
        with Fetcher(None, downloads=1, retry=_tries_policy(3, 0.01)) as fetcher:
            run = threading.Thread(
                target=lambda: found.append(fetcher.fetch_all(items, tmp_path / "dl")),
                daemon=True,
            )
            run.start()
            run.join(30)
            assert not run.is_alive(), "a download waits for a slot that no try gave back"
    assert [len(files) for files in found] == [3]
    assert sorted(tries.values()) == [3, 3, 3]
    assert server.most == 1
