"""Big JSON pages kept grouped by version (wheelwise.client.grouped_cache): an
unchanged page is not read again, and a damaged copy never changes what is read."""

from __future__ import annotations

import hashlib
import http.server
import json
import marshal
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from wheelwise.cache.http_cache import body_stamp
from wheelwise.client import simple_parse
from wheelwise.client.errors import InvalidPage
from wheelwise.client.grouped_cache import MIN_BODY, GroupedPages
from wheelwise.client.index_client import IndexClient, IndexSource
from wheelwise.client.simple_parse import parse_json_page
from wheelwise.policy.retry import RetryPolicy

URL = "https://example.test/simple/big/"
VERSIONS = 1500


def _page(versions: int = VERSIONS, marker: str = "") -> bytes:
    files = []
    for n in range(versions):
        version = f"1.{n // 100}.{n % 100}"
        for name in (f"big-{version}-py3-none-any.whl", f"big-{version}.tar.gz"):
            digest = hashlib.sha256((name + marker).encode()).hexdigest()
            files.append(
                {
                    "filename": name,
                    "url": f"../../files/{name}",
                    "hashes": {"sha256": digest},
                    "requires-python": ">=3.8",
                    "core-metadata": {"sha256": digest},
                    "size": 1000 + n,
                }
            )
    files.append({"filename": "README.txt", "url": "../../files/README.txt", "hashes": {}})
    document = {"meta": {"api-version": "1.1"}, "name": "big", "files": files}
    return json.dumps(document, indent=1).encode()


BODY = _page()
# For fuzzing: a copy is made from any page the client finds big enough.
SMALL = _page(120)


def test_the_page_is_big_enough_to_be_kept() -> None:
    assert len(BODY) >= MIN_BODY


@pytest.mark.slow
def test_a_kept_page_reads_as_the_page_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = GroupedPages(tmp_path)
    first = store.read(BODY, URL)
    reads: list[str] = []
    original = simple_parse.read_json_page

    def counted(body: bytes, url: str, **kwargs: Any) -> Any:
        reads.append(url)
        return original(body, url, **kwargs)

    monkeypatch.setattr(simple_parse, "read_json_page", counted)
    again = store.read(BODY, URL)
    assert reads == []  # from the copy: the page was not read again
    assert len(again) == len(first) == 2 * VERSIONS + 1
    assert again.versions() == first.versions()
    wanted = Version("1.14.99")
    assert again.files_for(wanted) == first.files_for(wanted)
    assert again.built() == 2  # one version's links read in full
    assert again.all() == tuple(parse_json_page(BODY, URL))


@pytest.mark.slow
def test_with_its_stamp_the_body_is_not_read_while_the_copy_serves(tmp_path: Path) -> None:
    """The HTTP cache records each body's stamp: a warm run reads neither the page
    nor its body, only the groups of the versions it asks for."""
    store = GroupedPages(tmp_path)
    store.read(BODY, URL)
    reads: list[int] = []

    def body() -> bytes:
        reads.append(1)
        return BODY

    page = store.read(body, URL, stamp=body_stamp(BODY))
    wanted = Version("1.3.7")
    assert [f.filename for f in page.files_for(wanted)] == [
        "big-1.3.7-py3-none-any.whl",
        "big-1.3.7.tar.gz",
    ]
    assert reads == []
    # Another stamp is another body: read, and copied again.
    changed = _page(marker="x")
    assert store.read(lambda: changed, URL, stamp=body_stamp(changed)).all() == tuple(
        parse_json_page(changed, URL)
    )


def test_a_damaged_group_is_read_from_the_body_when_only_its_stamp_was_known(
    tmp_path: Path,
) -> None:
    store = GroupedPages(tmp_path)
    store.read(BODY, URL)
    copy = _copy(tmp_path)
    data = bytearray(copy.read_bytes())
    data[-50] ^= 0x20  # inside the last group: its checksum fails
    copy.write_bytes(bytes(data))
    page = store.read(lambda: BODY, URL, stamp=body_stamp(BODY))
    assert page.all() == tuple(parse_json_page(BODY, URL))


@pytest.mark.slow
def test_a_changed_page_is_read_again(tmp_path: Path) -> None:
    store = GroupedPages(tmp_path)
    store.read(BODY, URL)
    changed = _page(marker="x")
    page = store.read(changed, URL)
    assert page.all() == tuple(parse_json_page(changed, URL))
    # and the copy now follows the new body
    assert store.read(changed, URL).all() == tuple(parse_json_page(changed, URL))


def _copy(tmp_path: Path) -> Path:
    (found,) = [p for p in tmp_path.rglob("*") if p.is_file()]
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage",
    ["truncate", "garbage-group", "bad-header", "wrong-entry", "empty"],
)
def test_a_damaged_copy_never_changes_what_is_read(tmp_path: Path, damage: str) -> None:
    store = GroupedPages(tmp_path)
    store.read(BODY, URL)
    path = _copy(tmp_path)
    data = path.read_bytes()
    header, _, rest = data.partition(b"\n")
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage-group":
        path.write_bytes(header + b"\n" + b"!" * len(rest))
    elif damage == "bad-header":
        path.write_bytes(b'{"format": 1, "groups": 7}\n' + rest)
    elif damage == "wrong-entry":
        path.write_bytes(header + b"\n" + rest.replace(b"filename", b"Filename", 3))
    else:
        path.write_bytes(b"")
    page = store.read(BODY, URL)
    assert page.all() == tuple(parse_json_page(BODY, URL))


@pytest.mark.slow
@pytest.mark.parametrize(
    "forged",
    [
        marshal.dumps(7),
        marshal.dumps([(0, {"filename": 7})]),
        marshal.dumps([("0", {})]),
        marshal.dumps([(0,)]),
        b"\xff not marshal at all",
    ],
)
def test_a_forged_group_with_its_checksum_is_checked_like_the_page(
    tmp_path: Path, forged: bytes
) -> None:
    """A group replaced by other bytes whose checksum and length the header records:
    what it holds is still checked, and the page's own links are read."""
    store = GroupedPages(tmp_path)
    store.read(BODY, URL)
    path = _copy(tmp_path)
    header_line, _, rest = path.read_bytes().partition(b"\n")
    header = json.loads(header_line)
    wanted = "1.14.99"
    offset, length, _, kind = header["groups"][wanted]
    rest = rest[:offset] + forged + rest[offset + length :]
    shift = len(forged) - length
    for group in header["groups"].values():
        if group[0] > offset:
            group[0] += shift
    header["groups"][wanted] = [offset, len(forged), zlib.crc32(forged), kind]
    header["rest"][0] += shift
    path.write_bytes(json.dumps(header).encode() + b"\n" + rest)
    expected = [f for f in parse_json_page(BODY, URL) if f.version == Version(wanted)]
    assert store.read(BODY, URL).files_for(Version(wanted)) == expected


@pytest.mark.slow
def test_a_copy_changed_into_other_valid_links_is_not_believed(tmp_path: Path) -> None:
    """A hash changed on disk in a copy (still valid JSON): the group's checksum
    catches it, and the page's own hash is read."""
    store = GroupedPages(tmp_path)
    store.read(BODY, URL)
    path = _copy(tmp_path)
    wanted = Version("1.14.99")
    (wheel,) = [f for f in parse_json_page(BODY, URL) if f.version == wanted and f.kind == "wheel"]
    true_hash = wheel.hashes["sha256"]
    data = path.read_bytes()
    assert data.count(true_hash.encode()) == 2  # its hash and its metadata's
    path.write_bytes(data.replace(true_hash.encode(), b"0" * 64))
    files = store.read(BODY, URL).files_for(wanted)
    assert [f.hashes["sha256"] for f in files if f.kind == "wheel"] == [true_hash]


def test_an_invalid_page_is_invalid_as_before(tmp_path: Path) -> None:
    body = b'{"meta": {"api-version": "1.0"}, "files": [{"filename": "a.whl", "url": 7}]}'
    body += b" " * MIN_BODY
    with pytest.raises(InvalidPage, match=r"files\[0\]: 'url' must be a string"):
        GroupedPages(tmp_path).read(body, URL)


PARSED_SMALL = parse_json_page(SMALL, URL)


@pytest.mark.slow
@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.integers(min_value=0), st.binary(min_size=1, max_size=64))
def test_any_damage_to_a_copy_reads_as_the_page(position: int, junk: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        store = GroupedPages(Path(folder))
        store.read(SMALL, URL)
        path = _copy(Path(folder))
        data = bytearray(path.read_bytes())
        groups = data.index(b"\n") + 1  # damage to the groups matters most
        at = groups + position % (len(data) - groups) if position % 4 else position % len(data)
        data[at : at + len(junk)] = junk
        path.write_bytes(bytes(data))
        page = store.read(SMALL, URL)
        for version in (Version("1.0.0"), Version("1.0.31"), Version("1.1.19")):
            assert page.files_for(version) == [f for f in PARSED_SMALL if f.version == version]


# -- through the index client ------------------------------------------------------


class _Pages(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = BODY
    cache_control = "no-cache"
    answers: ClassVar[list[int]] = []

    def do_GET(self) -> None:
        etag = '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'
        if self.headers.get("If-None-Match") == etag:
            self._answer(304, etag, b"")
        else:
            self._answer(200, etag, self.body)

    def _answer(self, status: int, etag: str, body: bytes) -> None:
        type(self).answers.append(status)
        self.send_response(status)
        self.send_header("ETag", etag)
        self.send_header("Cache-Control", self.cache_control)
        self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Pages.answers = []
    _Pages.cache_control = "no-cache"
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/simple/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _listing(base: str, cache: Path) -> Any:
    with IndexClient(cache_dir=cache, retry=RetryPolicy(retries=0)) as client:
        return client.fetch_project(IndexSource.index(base), "big")


def test_a_revalidated_page_comes_from_its_copy(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _listing(server, tmp_path)
    reads: list[str] = []
    original = simple_parse.read_json_page

    def counted(body: bytes, url: str, **kwargs: Any) -> Any:
        reads.append(url)
        return original(body, url, **kwargs)

    monkeypatch.setattr(simple_parse, "read_json_page", counted)
    again = _listing(server, tmp_path)
    assert _Pages.answers == [200, 304]
    assert reads == []
    assert again.files_for("1.3.3") == first.files_for("1.3.3")
    assert again.versions() == first.versions()


@pytest.mark.slow
def test_a_no_store_page_keeps_no_copy(server: str, tmp_path: Path) -> None:
    _Pages.cache_control = "no-store"
    _listing(server, tmp_path)
    assert not (tmp_path / "grouped").exists()
