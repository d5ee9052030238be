"""Wheels unpacked into the cache as they download (wheelwise.cache.stream_entry),
alone and through the Fetcher against a server on 127.0.0.1: what is published is
what zipfile reads from the whole file, checked as a wheel read whole is; anything
else publishes nothing and leaves no scratch behind."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import io
import os
import random
import stat
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded, damaged
from indexkit import handler_served
from wheelwise.cache import stream_entry
from wheelwise.cache.stream_entry import NotStreamable, StreamUnpacker
from wheelwise.cache.unpacked import EntryFile, UnpackedStore, UnpackedWheel
from wheelwise.cache.wheel_cache import ContentStore
from wheelwise.fetch import download, handover
from wheelwise.fetch.download import DownloadItem, Fetcher
from wheelwise.models.errors import DownloadError, InstallError
from wheelwise.policy.retry import RetryPolicy
from wheelwise.userfiles import write_all
from wheelwise.wheels.errors import WheelError

NAME = "pkg-1.0-py3-none-any.whl"
MEMBERS = {
    "pkg/__init__.py": b"VALUE = 1\n",
    "pkg/data/big.bin": bytes(range(256)) * 2000,
    # Inflates to more than one piece of output from a few KiB of input.
    "pkg/data/zeros.bin": bytes(3 << 20),
    "pkg/empty.txt": b"",
    "pkg/tool.sh": b"#!/bin/sh\necho hi\n",
}
EXECUTABLE = {"pkg/tool.sh"}


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


class _Unseekable(io.RawIOBase):
    """Where zipfile writes data descriptors: it cannot seek back to the header."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.data += data
        return len(data)


def make_wheel(
    members: Mapping[str, bytes] = MEMBERS,
    *,
    method: int = zipfile.ZIP_DEFLATED,
    record: Callable[[dict[str, str]], dict[str, str]] = lambda rows: rows,
    descriptors: bool = False,
    folders: bool = False,
    symlink: str | None = None,
    project: str = "pkg",
) -> bytes:
    """A wheel of *members* with its METADATA, WHEEL and RECORD (*record* may change
    its rows: path -> row)."""
    dist_info = f"{project}-1.0.dist-info"
    files = dict(members)
    metadata = f"Metadata-Version: 2.1\nName: {project}\nVersion: 1.0\n"
    files[f"{dist_info}/METADATA"] = metadata.encode()
    files[f"{dist_info}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    rows = {path: f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()}
    rows[f"{dist_info}/RECORD"] = f"{dist_info}/RECORD,,"
    rows = record(rows)
    files[f"{dist_info}/RECORD"] = ("\n".join(rows.values()) + "\n").encode()
    out: io.BytesIO | _Unseekable = _Unseekable() if descriptors else io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        if folders:
            archive.writestr(zipfile.ZipInfo("pkg/"), b"")
        for path, data in files.items():
            info = zipfile.ZipInfo(path, (2024, 1, 1, 0, 0, 0))
            info.compress_type = method
            mode = 0o755 if path in EXECUTABLE else 0o644
            if path == symlink:
                mode = stat.S_IFLNK | 0o777
            else:
                mode |= stat.S_IFREG
            info.external_attr = mode << 16
            archive.writestr(info, data)
    return bytes(out.data) if isinstance(out, _Unseekable) else out.getvalue()


def _pieces(data: bytes, cuts: list[int]) -> Iterator[bytes]:
    start = 0
    for cut in sorted({c % (len(data) + 1) for c in cuts}):
        yield data[start:cut]
        start = cut
    yield data[start:]


def unpack(data: bytes, folder: Path, cuts: list[int] = ()) -> tuple[list, str]:  # type: ignore[type-arg,assignment]
    unpacker = StreamUnpacker(folder, NAME)
    try:
        for piece in _pieces(data, list(cuts)):
            unpacker.write(piece)
        return unpacker.finish()
    finally:
        unpacker.close()


# -- the unpacker alone -------------------------------------------------------------


@bounded(40, function_fixtures=True)
@given(
    cuts=st.lists(st.integers(0, 1 << 20), max_size=8),
    method=st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]),
    folders=st.booleans(),
)
def test_a_wheel_in_any_pieces_unpacks_as_zipfile_reads_it(
    tmp_path: Path, cuts: list[int], method: int, folders: bool
) -> None:
    data = make_wheel(method=method, folders=folders)
    folder = tmp_path / f"entry-{len(list(tmp_path.iterdir()))}"
    files, dist_info = unpack(data, folder, cuts)
    assert dist_info == "pkg-1.0.dist-info"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        expected = {i.filename: archive.read(i) for i in archive.infolist() if not i.is_dir()}
    assert {f.path for f in files} == set(expected)
    for item in files:
        path = folder.joinpath(*item.path.split("/"))
        assert path.read_bytes() == expected[item.path]
        assert item.sha256 == _digest(expected[item.path])
        assert item.size == len(expected[item.path])
        assert item.executable == (item.path in EXECUTABLE)
        assert bool(path.stat().st_mode & 0o100) == (item.path in EXECUTABLE)
        assert item.mtime_ns == path.stat().st_mtime_ns


@bounded(150, function_fixtures=True)
@given(data=damaged(make_wheel()), cuts=st.lists(st.integers(0, 1 << 20), max_size=4))
def test_damaged_wheels_give_a_wheel_error_or_are_fetched_whole(
    tmp_path: Path, data: bytes, cuts: list[int]
) -> None:
    """Whatever the damage: a WheelError, NotStreamable, or (damage where nothing
    reads it, a time stamp say) the members RECORD describes, never anything else."""
    folder = tmp_path / f"entry-{len(list(tmp_path.iterdir()))}"
    try:
        files, _ = unpack(data, folder, cuts)
    except (WheelError, NotStreamable):
        return
    for item in files:
        assert _digest(folder.joinpath(*item.path.split("/")).read_bytes()) == item.sha256


def test_a_directory_that_disagrees_with_the_local_headers_is_refused(tmp_path: Path) -> None:
    data = make_wheel()
    directory = data.index(b"PK\x01\x02")
    head, tail = data[:directory], data[directory:]
    swapped = tail.replace(b"pkg/__init__.py", b"pkg/__evil__.py", 1)
    with pytest.raises(WheelError, match="does not match the member's local header"):
        unpack(head + swapped, tmp_path / "entry")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda rows: {k: v for k, v in rows.items() if k != "pkg/__init__.py"}, "not listed"),
        (
            lambda rows: {**rows, "pkg/__init__.py": f"pkg/__init__.py,sha256={_digest(b'x')},10"},
            "does not match its RECORD",
        ),
        (lambda rows: {**rows, "pkg/gone.py": "pkg/gone.py,sha256=abc,1"}, "missing members"),
        (lambda rows: {**rows, "pkg/__init__.py": "pkg/__init__.py,,"}, "no hash"),
    ],
    ids=["unlisted", "mismatch", "missing", "no-hash"],
)
def test_record_is_checked_as_for_a_whole_wheel(
    tmp_path: Path, change: Callable[[dict[str, str]], dict[str, str]], message: str
) -> None:
    with pytest.raises(WheelError, match=message):
        unpack(make_wheel(record=change), tmp_path / "entry")


def test_a_wheel_with_data_descriptors_is_not_streamable(tmp_path: Path) -> None:
    data = make_wheel(descriptors=True)
    with pytest.raises(NotStreamable, match="sizes follow its data"):
        unpack(data, tmp_path / "entry")
    zipfile.ZipFile(io.BytesIO(data)).testzip()  # a good wheel all the same


@pytest.mark.parametrize(
    ("members", "symlink", "message"),
    [
        ({"pkg/a": b"x", "pkg/a/b": b"y"}, None, "clashes"),
        ({"pkg/a/b": b"y", "pkg/a": b"x"}, None, "clashes"),
        ({"../evil.py": b"x"}, None, "unsafe member name"),
        (MEMBERS, "pkg/tool.sh", "symbolic link"),
    ],
    ids=["file-then-folder", "folder-then-file", "escape", "symlink"],
)
def test_unsafe_members_are_refused(
    tmp_path: Path, members: Mapping[str, bytes], symlink: str | None, message: str
) -> None:
    with pytest.raises(WheelError, match=message):
        unpack(make_wheel(members, symlink=symlink), tmp_path / "entry")


def test_a_truncated_wheel_is_refused(tmp_path: Path) -> None:
    data = make_wheel()
    with pytest.raises(WheelError, match=r"truncated|not a valid wheel"):
        unpack(data[: len(data) // 2], tmp_path / "entry")


# -- small members, written by threads of their own ----------------------------------


def _writer_threads() -> list[threading.Thread]:
    """The small members' writers and the large members' thread still running."""
    names = ("stream-writer", "stream-large")
    return [t for t in threading.enumerate() if t.name.startswith(names)]


def _open_files() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _closed_cleanly(unpacker: StreamUnpacker, before: set[str]) -> None:
    """close(): no writer thread left running, no file left open since *before*."""
    unpacker.close()
    assert not _writer_threads()
    assert _open_files() <= before


def _many_small_members() -> dict[str, bytes]:
    """Many small files in many folders, as torch has, and two large ones."""
    noise = random.Random(3)
    members = {
        f"pkg/sub{i % 17}/deeper{i % 5}/m{i}.py": noise.randbytes(noise.randrange(0, 9000))
        for i in range(400)
    }
    members["pkg/large.bin"] = noise.randbytes(stream_entry.SMALL_MEMBER + 4096)
    members["pkg/sub3/large-zeros.bin"] = bytes(3 * stream_entry.SMALL_MEMBER)
    return members


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_many_small_members_are_written_whole_and_no_writer_is_left(
    tmp_path: Path, method: int
) -> None:
    members = _many_small_members()
    data = make_wheel(members, method=method)
    folder = tmp_path / "entry"
    files, _ = unpack(data, folder, [len(data) // 3, len(data) // 2])
    assert not _writer_threads()  # the installer forks next: no thread may be left
    by_path = {item.path: item for item in files}
    for path, content in members.items():
        written = folder.joinpath(*path.split("/"))
        assert written.read_bytes() == content
        assert by_path[path].sha256 == _digest(content)
        assert by_path[path].mtime_ns == written.stat().st_mtime_ns


def test_a_download_stopped_midway_waits_for_its_writers(tmp_path: Path) -> None:
    """close() returns once nothing writes into the folder any more: the store
    deletes it next, and a late file would be left behind."""
    data = make_wheel(_many_small_members())
    folder = tmp_path / "entry"
    unpacker = StreamUnpacker(folder, NAME)
    unpacker.write(data[: len(data) // 2])
    unpacker.close()
    assert not _writer_threads()
    written = sorted(str(path) for path in folder.rglob("*"))
    assert written  # some were written before the stop
    time.sleep(0.1)
    assert sorted(str(path) for path in folder.rglob("*")) == written


def test_the_writers_hold_a_bounded_amount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the writers are stalled (a slow disk), the stream waits instead of
    holding every member in memory; once they go on, the wheel is whole."""
    monkeypatch.setattr(stream_entry, "_WRITER_BYTES", 64 << 10)
    go = threading.Event()
    written = write_all

    def stalled(descriptor: int, data: bytes | memoryview) -> None:
        go.wait(10)
        written(descriptor, data)

    monkeypatch.setattr(stream_entry, "write_all", stalled)
    members = {f"pkg/m{i}.bin": bytes([i]) * 8000 for i in range(200)}  # 1.6 MB, 7 batches
    data = make_wheel(members, method=zipfile.ZIP_STORED)
    unpacker = StreamUnpacker(tmp_path / "entry", NAME)
    fed = threading.Thread(target=unpacker.write, args=(data,))
    fed.start()
    fed.join(0.5)
    assert fed.is_alive()  # waiting for room, not holding the whole wheel
    writers = unpacker._writers
    assert writers is not None
    assert writers._held <= (64 << 10) + stream_entry._BATCH_BYTES
    go.set()
    fed.join(10)
    files, _ = unpacker.finish()
    unpacker.close()
    assert {item.path for item in files} >= set(members)


# -- large members, hashed and written by a thread of their own ------------------------


def _large_members() -> dict[str, bytes]:
    noise = random.Random(5)
    return {
        "pkg/a.bin": noise.randbytes(3 * stream_entry.SMALL_MEMBER),
        "pkg/small.py": b"X = 1\n",
        "pkg/b/zeros.bin": bytes(5 * stream_entry.SMALL_MEMBER),
        "pkg/c.bin": noise.randbytes(stream_entry.SMALL_MEMBER + 1),
    }


def test_large_members_wait_for_their_writer_instead_of_piling_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the large members' writes are stalled (a slow disk), the stream waits
    with at most _LARGE_PIECES pieces handed over; once they go on, every member is
    whole, its hash and time those of the file written."""
    monkeypatch.setattr(stream_entry, "cores", lambda: 4)  # a core to spare
    go = threading.Event()
    written = write_all

    def stalled(descriptor: int, data: bytes | memoryview) -> None:
        go.wait(10)
        written(descriptor, data)

    monkeypatch.setattr(stream_entry, "write_all", stalled)
    members = _large_members()
    data = make_wheel(members)
    folder = tmp_path / "entry"
    unpacker = StreamUnpacker(folder, NAME)
    fed = threading.Thread(target=unpacker.write, args=(data,))
    fed.start()
    fed.join(0.5)
    assert fed.is_alive()  # waiting for room, not holding the member's pieces
    large = unpacker._large
    assert large is not None
    assert large._pieces.qsize() <= stream_entry._LARGE_PIECES
    go.set()
    fed.join(10)
    files, _ = unpacker.finish()
    unpacker.close()
    assert not _writer_threads()
    by_path = {item.path: item for item in files}
    for path, content in members.items():
        on_disk = folder.joinpath(*path.split("/"))
        assert on_disk.read_bytes() == content
        assert by_path[path].sha256 == _digest(content)
        assert by_path[path].mtime_ns == on_disk.stat().st_mtime_ns


def _failing_writes(
    monkeypatch: pytest.MonkeyPatch, at: int, first: threading.Event | None = None
) -> None:
    """The large members' writes fail with ENOSPC from the *at*-th on (after *first*
    is set, if given)."""
    written = write_all
    calls = [0]

    def full(descriptor: int, data: bytes | memoryview) -> None:
        calls[0] += 1
        if calls[0] >= at:
            if first is not None:
                first.wait(10)
            raise OSError(28, "No space left on device")
        written(descriptor, data)

    monkeypatch.setattr(stream_entry, "write_all", full)


def test_a_full_disk_while_writing_a_large_member_stops_the_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The large members' thread fails (ENOSPC) while the stream goes on: a later
    write() raises that OSError; once closed, no file is left open, no thread runs."""
    monkeypatch.setattr(stream_entry, "cores", lambda: 4)  # a core to spare
    _failing_writes(monkeypatch, at=3)
    data = make_wheel(_large_members(), method=zipfile.ZIP_STORED)
    before = _open_files()
    unpacker = StreamUnpacker(tmp_path / "entry", NAME)

    def feed() -> None:
        for piece in _pieces(data, list(range(0, len(data), 64 << 10))):
            unpacker.write(piece)

    with pytest.raises(OSError, match="No space left") as raised:
        feed()
    assert raised.value.errno == 28
    _closed_cleanly(unpacker, before)


def test_a_full_disk_on_the_last_large_member_is_raised_by_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every byte fed, the large members' thread still writing when it fails: finish()
    raises the OSError (not a wheel error), and every file is closed."""
    monkeypatch.setattr(stream_entry, "cores", lambda: 4)  # a core to spare
    fed = threading.Event()
    _failing_writes(monkeypatch, at=2, first=fed)
    data = make_wheel(_large_members(), method=zipfile.ZIP_STORED)
    before = _open_files()
    unpacker = StreamUnpacker(tmp_path / "entry", NAME)
    unpacker.write(data)  # three large members: fewer pieces than the thread may hold
    fed.set()
    with pytest.raises(OSError, match="No space left") as raised:
        unpacker.finish()
    assert raised.value.errno == 28
    _closed_cleanly(unpacker, before)


def test_a_large_member_longer_than_its_header_closes_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member whose data runs past its header's size is refused while the large
    members' thread may still be writing it: its file is closed once that thread
    stops, never under it."""
    monkeypatch.setattr(stream_entry, "cores", lambda: 4)  # a core to spare
    members = _large_members()
    data = bytearray(make_wheel(members, method=zipfile.ZIP_STORED))
    # The local header's uncompressed size of pkg/a.bin, one MiB smaller: the stored
    # data (as long as the compressed size says) then holds more than it.
    offset = data.index(b"pkg/a.bin") - 30
    size = int.from_bytes(data[offset + 22 : offset + 26], "little")
    data[offset + 22 : offset + 26] = (size - (1 << 20)).to_bytes(4, "little")
    before = _open_files()
    unpacker = StreamUnpacker(tmp_path / "entry", NAME)
    for piece in _pieces(bytes(data), list(range(0, len(data), 256 << 10))):
        unpacker.write(piece)
    with pytest.raises(WheelError, match="holds more than"):
        unpacker.finish()
    _closed_cleanly(unpacker, before)


def test_large_members_are_handed_over_only_while_a_core_is_spare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On two cores, two streams at once write their large members themselves (each
    keeps a core busy already); a stream alone hands them to a thread. Either way
    the entry is the same."""
    monkeypatch.setattr(stream_entry, "cores", lambda: 2)
    monkeypatch.setattr(stream_entry, "_streams_now", 0)  # none left by another test
    members = _large_members()
    data = make_wheel(members)
    alone = StreamUnpacker(tmp_path / "alone", NAME)
    busy = StreamUnpacker(tmp_path / "busy", NAME)
    busy.write(data)  # two streams take bytes: no core to spare
    assert busy._large is None
    busy_files, _ = busy.finish()  # its members ended: it no longer counts
    busy.close()
    alone.write(data)
    assert alone._large is not None
    alone_files, _ = alone.finish()
    alone.close()
    assert not _writer_threads()

    def kept(files: list[EntryFile]) -> list[tuple[str, str, int, bool]]:
        return [(f.path, f.sha256, f.size, f.executable) for f in files]

    assert kept(busy_files) == kept(alone_files)
    for folder in ("alone", "busy"):
        for path, content in members.items():
            assert tmp_path.joinpath(folder, *path.split("/")).read_bytes() == content


# -- through the Fetcher, from a server -----------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    files: dict[str, bytes]
    hits: dict[str, int]
    cut_first: frozenset[str]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        name = self.path.rsplit("/", 1)[-1]
        self.hits[name] = self.hits.get(name, 0) + 1
        body = self.files.get(name)
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if name in self.cut_first and self.hits[name] == 1:
                self.close_connection = True
                self.wfile.write(body[: len(body) // 2])
                return
            self.wfile.write(body)
        except OSError:
            self.close_connection = True


@pytest.fixture
def serve() -> Iterator[Callable[..., tuple[str, dict[str, int]]]]:
    with contextlib.ExitStack() as stack:

        def start(
            files: dict[str, bytes], cut_first: frozenset[str] = frozenset()
        ) -> tuple[str, dict[str, int]]:
            hits: dict[str, int] = {}
            handler = type(
                "Handler", (_Handler,), {"files": files, "hits": hits, "cut_first": cut_first}
            )
            return f"{stack.enter_context(handler_served(handler))}/files", hits

        yield start


@pytest.fixture(autouse=True)
def _stream_every_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test wheels are small: unpack each as it downloads, as a big one is."""
    monkeypatch.setattr(download, "STREAM_UNPACK_FROM", 0)


def _fetch(
    tmp_path: Path, url: str, data: bytes, *, sha256: str | None = None
) -> tuple[object, UnpackedStore, ContentStore]:
    cache = tmp_path / "cache"
    store = UnpackedStore(cache / "unpacked", cache / "scratch")
    wheels = ContentStore(cache / "wheels")
    item = DownloadItem(
        f"{url}/{NAME}", {"sha256": sha256 or hashlib.sha256(data).hexdigest()}, size=len(data)
    )
    fetcher = Fetcher(
        retry=RetryPolicy(retries=2, backoff=0.01), cache=wheels, unpacked=store, in_memory=1 << 30
    )
    with fetcher:
        (found,) = fetcher.fetch_all([item], tmp_path / "downloads")
    return found, store, wheels


def _no_scratch(store: UnpackedStore) -> bool:
    return not store.scratch.exists() or not any(store.scratch.iterdir())


def test_a_wheel_is_unpacked_as_it_downloads_and_never_written_whole(
    tmp_path: Path, serve: Callable[..., tuple[str, dict[str, int]]]
) -> None:
    data = make_wheel()
    url, hits = serve({NAME: data})
    found, store, wheels = _fetch(tmp_path, url, data)
    assert isinstance(found, UnpackedWheel)
    kept = {"sha256": hashlib.sha256(data).hexdigest()}
    assert store.lookup(kept, NAME) == found
    assert found.read("pkg/__init__.py") == MEMBERS["pkg/__init__.py"]
    assert not list((tmp_path / "downloads").iterdir())  # no wheel file anywhere
    assert not wheels.folder.exists() or not any(p.is_file() for p in wheels.folder.rglob("*"))
    assert hits == {NAME: 1}
    assert _no_scratch(store)


class _SlowHandler(_Handler):
    """Sends each file in two halves, a moment apart, and notes how many files it
    was sending at once."""

    lock = threading.Lock()
    sending = 0
    most = 0

    def do_GET(self) -> None:
        cls = type(self)
        body = self.files[self.path.rsplit("/", 1)[-1]]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with cls.lock:
            cls.sending += 1
            cls.most = max(cls.most, cls.sending)
        try:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            time.sleep(0.3)
            self.wfile.write(body[len(body) // 2 :])
        finally:
            with cls.lock:
                cls.sending -= 1


def test_wheels_unpacked_as_they_download_are_bounded_by_the_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each keeps a core busy: more at once than cores only share them.
    monkeypatch.setattr(download, "unpacking_downloads", lambda: 2)
    wheels = {f"p{i}-1.0-py3-none-any.whl": make_wheel(project=f"p{i}") for i in range(5)}
    handler: type[_SlowHandler] = type(
        "Handler", (_SlowHandler,), {"files": wheels, "lock": threading.Lock()}
    )
    cache = tmp_path / "cache"
    store = UnpackedStore(cache / "unpacked", cache / "scratch")
    with handler_served(handler) as url:
        items = [
            DownloadItem(f"{url}/files/{name}", {"sha256": hashlib.sha256(data).hexdigest()})
            for name, data in wheels.items()
        ]
        with Fetcher(unpacked=store, cache=ContentStore(cache / "wheels"), downloads=5) as fetcher:
            found = fetcher.fetch_all(items, tmp_path / "downloads")
    assert all(isinstance(entry, UnpackedWheel) for entry in found)
    assert handler.most == 2


def test_the_switch_interval_is_short_while_wheels_unpack_as_they_download(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    serve: Callable[..., tuple[str, dict[str, int]]],
) -> None:
    """With the program's interval set, the interpreter hands its lock over every
    HANDOVER_INTERVAL while a wheel streams into the store, and its own interval comes
    back after, a failed download included. Unset (a program using the library),
    the process's interval is left alone."""
    seen: list[float] = []
    write = StreamUnpacker.write

    def noting(self: StreamUnpacker, data: bytes) -> None:
        seen.append(sys.getswitchinterval())
        write(self, data)

    monkeypatch.setattr(StreamUnpacker, "write", noting)
    before = sys.getswitchinterval()
    assert before > handover.HANDOVER_INTERVAL
    data = make_wheel()
    url, _ = serve({NAME: data})
    found, _, _ = _fetch(tmp_path / "lib", url, data)
    assert isinstance(found, UnpackedWheel)
    assert seen
    assert set(seen) == {before}

    seen.clear()
    monkeypatch.setattr(handover.prompt_handover, "interval", handover.HANDOVER_INTERVAL)
    found, _, _ = _fetch(tmp_path / "a", url, data)
    assert isinstance(found, UnpackedWheel)
    assert seen
    assert set(seen) == {handover.HANDOVER_INTERVAL}
    assert sys.getswitchinterval() == before
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        _fetch(tmp_path / "b", url, data, sha256=hashlib.sha256(b"other").hexdigest())
    assert sys.getswitchinterval() == before


def test_a_download_cut_midway_is_tried_again_from_a_new_folder(
    tmp_path: Path, serve: Callable[..., tuple[str, dict[str, int]]]
) -> None:
    data = make_wheel()
    url, hits = serve({NAME: data}, cut_first=frozenset({NAME}))
    found, store, _ = _fetch(tmp_path, url, data)
    assert isinstance(found, UnpackedWheel)
    assert hits == {NAME: 2}
    assert _no_scratch(store)


def test_a_wrong_hash_publishes_nothing(
    tmp_path: Path, serve: Callable[..., tuple[str, dict[str, int]]]
) -> None:
    data = make_wheel()
    url, _ = serve({NAME: data})
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        _fetch(tmp_path, url, data, sha256=hashlib.sha256(b"other").hexdigest())
    store = UnpackedStore(tmp_path / "cache" / "unpacked", tmp_path / "cache" / "scratch")
    assert not list(store.entries())
    assert _no_scratch(store)


def test_a_bad_wheel_with_its_true_hash_is_refused_and_publishes_nothing(
    tmp_path: Path, serve: Callable[..., tuple[str, dict[str, int]]]
) -> None:
    data = make_wheel(record=lambda rows: {k: v for k, v in rows.items() if "init" not in k})
    url, hits = serve({NAME: data})
    with pytest.raises(InstallError, match=rf"refusing to install {NAME}: .*not listed in RECORD"):
        _fetch(tmp_path, url, data)
    store = UnpackedStore(tmp_path / "cache" / "unpacked", tmp_path / "cache" / "scratch")
    assert not list(store.entries())
    assert _no_scratch(store)
    assert hits == {NAME: 1}  # refused, not tried again


def test_a_wheel_that_cannot_stream_is_downloaded_whole(
    tmp_path: Path, serve: Callable[..., tuple[str, dict[str, int]]]
) -> None:
    data = make_wheel(descriptors=True)
    url, hits = serve({NAME: data})
    found, store, _ = _fetch(tmp_path, url, data)
    assert not isinstance(found, UnpackedWheel)  # the wheel, for the installer to unpack
    assert hits == {NAME: 2}
    assert _no_scratch(store)


def test_a_store_that_cannot_hold_it_gets_the_wheel_downloaded_whole(
    tmp_path: Path, serve: Callable[..., tuple[str, dict[str, int]]]
) -> None:
    data = make_wheel()
    url, _ = serve({NAME: data})
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "scratch").write_text("a file where the scratch folder goes")
    found, _, _ = _fetch(tmp_path, url, data)
    assert not isinstance(found, UnpackedWheel)
    assert os.path.isfile(tmp_path / "cache" / "scratch")


def test_a_download_of_several_pieces_unpacks_whole(
    tmp_path: Path, serve: Callable[..., tuple[str, dict[str, int]]]
) -> None:
    # Bytes that do not compress: the download arrives in many pieces, and the first
    # answer is cut midway.
    noise = random.Random(7).randbytes(3 << 20)
    data = make_wheel({**MEMBERS, "pkg/data/noise.bin": noise})
    assert len(data) > 3 << 20
    url, _ = serve({NAME: data}, cut_first=frozenset({NAME}))
    found, _, _ = _fetch(tmp_path, url, data)
    assert isinstance(found, UnpackedWheel)
    assert found.read("pkg/data/noise.bin", limit=4 << 20) == noise
    assert found.read("pkg/data/zeros.bin", limit=4 << 20) == MEMBERS["pkg/data/zeros.bin"]
