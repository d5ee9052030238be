"""The simple repository client against real servers on 127.0.0.1: ``wheelwise index
serve``, the static site (file:// and ``python -m http.server``), and small starlette
apps that answer HTML only, count requests, fail, lie or hang."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from indexkit import (
    demo_folder,
    demo_wheel,
    free_port,
    http_server,
    uvicorn_thread,
)
from wheelfactory import variant_doc
from wheelwise.client.index_client import (
    PAGE_ACCEPT,
    HashMismatch,
    IndexClient,
    IndexFile,
    IndexSource,
    InvalidPage,
    ProjectListing,
    SourceError,
    find_candidates,
    first_viable_source,
)
from wheelwise.client.simple_parse import parse_html_page, parse_json_page
from wheelwise.client.tls import client_tls_context
from wheelwise.policy.retry import RetryPolicy
from wheelwise.publish.server import create_app
from wheelwise.publish.static import build_site
from wheelwise.variants.metadata import VariantMetadata

Scope = dict[str, Any]

DEMO_FILES = {
    "demo_pkg-1.0-py3-none-any.whl",
    "demo_pkg-1.0-py3-none-any-x86_64_v1.whl",
    "demo_pkg-1.0-py3-none-any-null.whl",
    "demo_pkg-1.0.tar.gz",
    "demo_pkg-1.0-variants.json",
    "demo_pkg-2.0-py3-none-any-x86_64_v1.whl",
    "demo_pkg-2.0-py3-none-any-null.whl",
    "demo_pkg-2.0-variants.json",
}
FAST = RetryPolicy(retries=2, backoff=0.01, max_delay=0.02)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def by_name(listing: ProjectListing) -> dict[str, IndexFile]:
    return {file.filename: file for file in listing.files}


pytestmark = pytest.mark.usefixtures("no_proxies")


# -- servers ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_folder(tmp_path_factory.mktemp("wheels"))


@pytest.fixture(scope="module")
def site(wheel_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site") / "site"
    build_site(wheel_dir, site)
    return site


class Recorder:
    """An ASGI wrapper that records each request's path, headers and status."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, dict[str, str], int]] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}

        async def record(message: Scope) -> None:
            # Recorded before the answer leaves: the client may look as soon as it has it.
            if message["type"] == "http.response.start":
                self.seen.append((scope["path"], headers, message["status"]))
            await send(message)

        await self.app(scope, receive, record)

    def requests(self, path: str) -> list[tuple[dict[str, str], int]]:
        return [(headers, status) for p, headers, status in self.seen if p == path]


@pytest.fixture(scope="module")
def live(wheel_dir: Path) -> Iterator[tuple[str, Recorder]]:
    recorder = Recorder(create_app(wheel_dir))
    with uvicorn_thread(recorder) as base:
        yield base, recorder


@pytest.fixture
def client(tmp_path: Path) -> Iterator[IndexClient]:
    with IndexClient(timeout=5, retry=FAST, cache_dir=tmp_path / "http-cache") as client:
        yield client


# A starlette app with pages no real index of ours serves.

WHEEL_BYTES = b"not really a wheel"
METADATA = b"Metadata-Version: 2.1\nName: html-only\nVersion: 1.0\n"
VARIANTS = json.dumps(variant_doc("x86_64_v1", {"x86_64": {"level": ["v1"]}})).encode()
PEP691 = "application/vnd.pypi.simple.v1+json"


class Hostile:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.headers: dict[str, list[dict[str, str]]] = {}
        self.files = {
            "html_only-1.0-py3-none-any.whl": WHEEL_BYTES,
            "html_only-1.0-py3-none-any.whl.metadata": METADATA,
            "html_only-1.0-variants.json": VARIANTS,
            "html_only-0.9-py3-none-any.whl": WHEEL_BYTES,
            "html_only-1.0.tar.gz": b"sdist",
        }

    def _count(self, request: Request) -> int:
        path = request.url.path
        self.counts[path] = self.counts.get(path, 0) + 1
        self.headers.setdefault(path, []).append(dict(request.headers))
        return self.counts[path]

    async def page(self, request: Request) -> Response:
        self._count(request)
        name = request.path_params["name"]
        handler = getattr(self, "page_" + name.replace("-", "_"), None)
        if handler is None:
            return Response("no such project", status_code=404)
        response: Response = handler(request)
        return response

    async def file(self, request: Request) -> Response:
        self._count(request)
        data = self.files.get(request.path_params["filename"])
        if data is None:
            return Response("missing", status_code=404)
        # Cacheable for ten minutes, as a CDN might serve it.
        headers = {"Cache-Control": "max-age=600", "ETag": f'"{sha256(data)[:16]}"'}
        return Response(data, media_type="application/octet-stream", headers=headers)

    def page_html_only(self, request: Request) -> Response:
        base = str(request.base_url).rstrip("/")
        wheel = "html_only-1.0-py3-none-any.whl"
        body = f"""<!DOCTYPE html><html><head>
<meta name="pypi:repository-version" content="1.0"><title>Links</title></head><body>
<a href="../../files/{wheel}#sha256={sha256(WHEEL_BYTES)}" data-requires-python="&gt;=3.9"
   data-dist-info-metadata="sha256={sha256(METADATA)}">{wheel}</a><br>
<a href="/files/html_only-0.9-py3-none-any.whl" data-yanked="broken build">old</a>
<a href="{base}/files/html_only-1.0.tar.gz#sha256={sha256(b"sdist")}" data-yanked>sdist</a>
<a href="../../files/html_only-1.0-variants.json#sha256={sha256(VARIANTS)}">vj</a>
</body></html>"""
        # Served as HTML whatever the client asks for: no PEP 691 JSON here.
        return Response(body, media_type="text/html")

    def page_counted(self, request: Request) -> Response:
        etag = '"v1"'
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag})
        document = {
            "meta": {"api-version": "1.1"},
            "name": "counted",
            "files": [
                {
                    "filename": "counted-1.0-py3-none-any.whl",
                    "url": "/files/counted-1.0-py3-none-any.whl",
                    "hashes": {"sha256": "ab" * 32},
                }
            ],
        }
        return Response(json.dumps(document), media_type=PEP691, headers={"ETag": etag})

    def page_dated(self, request: Request) -> Response:
        stamp = "Sat, 21 Nov 2026 10:00:00 GMT"
        if request.headers.get("if-modified-since") == stamp:
            return Response(status_code=304)
        body = '<html><body><a href="dated-1.0.tar.gz">dated-1.0.tar.gz</a></body></html>'
        return Response(body, media_type="text/html", headers={"Last-Modified": stamp})

    def page_moved(self, request: Request) -> Response:
        return RedirectResponse("/elsewhere/simple/html-only/", status_code=301)

    def page_broken(self, request: Request) -> Response:
        return Response("boom", status_code=500)

    def page_forbidden(self, request: Request) -> Response:
        return Response("go away", status_code=403)

    def page_garbage_json(self, request: Request) -> Response:
        return Response(b'{"meta": {"api-version": "1.1"}, "files": [', media_type=PEP691)

    def page_wrong_json(self, request: Request) -> Response:
        return Response(
            b'{"meta": {"api-version": "1.1"}, "files": [{"filename": "a-1.0.tar.gz", "url": 3}]}',
            media_type=PEP691,
        )

    def page_bad_names(self, request: Request) -> Response:
        files = [
            {"url": "x.whl"},
            {"filename": "a/b-1.0-py3-none-any.whl", "url": "x.whl"},
            {"filename": 7, "url": "x.whl"},
            {"filename": "bad_names-1.0.tar.gz", "url": "bad_names-1.0.tar.gz"},
        ]
        body = json.dumps({"meta": {"api-version": "1.1"}, "files": files}).encode()
        return Response(body, media_type=PEP691)

    def page_garbage_html(self, request: Request) -> Response:
        return Response(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", media_type="text/html")

    def page_no_markup(self, request: Request) -> Response:
        return Response(b"this is not a page", media_type="text/html")

    def page_plain(self, request: Request) -> Response:
        return Response(b"hello", media_type="text/plain")

    def page_future(self, request: Request) -> Response:
        return Response(b'{"meta": {"api-version": "2.0"}, "files": []}', media_type=PEP691)

    def page_liar(self, request: Request) -> Response:
        document = {
            "meta": {"api-version": "1.1"},
            "name": "liar",
            "files": [
                {
                    "filename": "liar-1.0-py3-none-any-x86_64_v1.whl",
                    "url": "/files/html_only-1.0-py3-none-any.whl",
                    "hashes": {"sha256": sha256(WHEEL_BYTES)},
                    "core-metadata": {"sha256": "00" * 32},
                },
                {
                    "filename": "liar-1.0-variants.json",
                    "url": "/files/html_only-1.0-variants.json",
                    "hashes": {"sha256": sha256(VARIANTS + b" ")},
                },
            ],
        }
        return Response(json.dumps(document), media_type=PEP691)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/simple/{name}/", self.page),
                Route("/elsewhere/simple/{name}/", self.page),
                Route("/files/{filename}", self.file),
            ]
        )


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[str, Hostile]]:
    state = Hostile()
    with uvicorn_thread(state.app()) as base:
        yield base, state


# -- wheelwise index serve (PEP 691 JSON) ------------------------------------------------


def test_live_server_listing(
    live: tuple[str, Recorder], wheel_dir: Path, client: IndexClient
) -> None:
    base, recorder = live
    listing = client.fetch_project(IndexSource.index(f"{base}/simple"), "Demo.Pkg")
    assert listing.found
    assert listing.name == "demo-pkg"
    assert listing.page_url == f"{base}/simple/demo-pkg/"
    files = by_name(listing)
    assert set(files) == DEMO_FILES
    for filename, file in files.items():
        assert file.url == f"{base}/files/demo-pkg/{filename}"
        if not filename.endswith("-variants.json"):
            data = (wheel_dir / filename).read_bytes()
            assert file.hashes == {"sha256": sha256(data)}
            assert file.size == len(data)  # PEP 700: only the JSON form has sizes
    plain = files["demo_pkg-1.0-py3-none-any.whl"]
    assert plain.requires_python == ">=3.8"
    assert plain.core_metadata
    assert set(plain.core_metadata_hashes) == {"sha256"}
    assert not files["demo_pkg-1.0.tar.gz"].core_metadata
    assert not any(file.yanked for file in listing.files)
    assert [str(v) for v in listing.versions()] == ["1.0", "2.0"]
    assert listing.has_variant_wheels("2.0")
    assert len(listing.files_for("1.0")) == 4
    headers, status = recorder.requests("/simple/demo-pkg/")[-1]
    assert headers["accept"] == PAGE_ACCEPT
    assert status == 200


def test_live_server_variants_json_and_metadata(
    live: tuple[str, Recorder], client: IndexClient
) -> None:
    listing = client.fetch_project(IndexSource.index(f"{live[0]}/simple/"), "demo_pkg")
    for version in ("1.0", "2.0"):
        link = listing.variants_json(version)
        assert link is not None
        assert link.filename == f"demo_pkg-{version}-variants.json"
        metadata = client.fetch_variants_json(link)
        assert isinstance(metadata, VariantMetadata)
        assert set(metadata.labels) == {"x86_64_v1", "null"}
    assert listing.variants_json("3.0") is None
    wheel = by_name(listing)["demo_pkg-1.0-py3-none-any-x86_64_v1.whl"]
    metadata_bytes = client.fetch_metadata(wheel)
    assert b"Name: demo_pkg" in metadata_bytes
    assert sha256(metadata_bytes) == wheel.core_metadata_hashes["sha256"]
    lying = dataclasses.replace(wheel, core_metadata_hashes={"sha256": "0" * 64})
    with pytest.raises(HashMismatch, match=r"sha256 is [0-9a-f]{64}, but the index page says 0+"):
        client.fetch_metadata(lying)
    with pytest.raises(SourceError, match="does not serve this file's core metadata"):
        client.fetch_metadata(by_name(listing)["demo_pkg-1.0.tar.gz"])


def test_live_server_missing_project(live: tuple[str, Recorder], client: IndexClient) -> None:
    source = IndexSource.index(f"{live[0]}/simple/")
    listing = client.fetch_project(source, "no-such-project")
    assert not listing.found
    assert listing.files == ()
    assert listing.source == source


def test_live_server_revalidates_from_cache(live: tuple[str, Recorder], tmp_path: Path) -> None:
    base, recorder = live
    source = IndexSource.index(f"{base}/simple/")
    path = "/simple/other-project/"
    before = len(recorder.requests(path))
    with IndexClient(cache_dir=tmp_path, retry=FAST) as first:
        listing = first.fetch_project(source, "other_project")
    with IndexClient(cache_dir=tmp_path, retry=FAST) as second:
        again = second.fetch_project(source, "Other-Project")
    assert again == listing
    assert [f.requires_python for f in again.files] == ["<4,>=3.9"]
    (first_headers, first_status), (headers, status) = recorder.requests(path)[before:]
    assert first_status == 200
    assert "if-none-match" not in first_headers
    assert status == 304
    assert headers["if-none-match"].startswith('"')


# -- the static site -----------------------------------------------------------------------


def test_static_site_via_file_url_reads_json(
    site: Path, wheel_dir: Path, client: IndexClient
) -> None:
    source = IndexSource.index(site / "simple")
    assert source.url.startswith("file://")
    listing = client.fetch_project(source, "demo-pkg")
    files = by_name(listing)
    assert set(files) == DEMO_FILES
    wheel = files["demo_pkg-1.0-py3-none-any.whl"]
    assert wheel.url == (site / "files" / "demo-pkg" / wheel.filename).as_uri()
    assert wheel.size is not None  # index.json
    assert wheel.hashes["sha256"] == sha256((wheel_dir / wheel.filename).read_bytes())
    link = listing.variants_json("1.0")
    assert link is not None
    assert set(client.fetch_variants_json(link).labels) == {"x86_64_v1", "null"}
    assert b"Version: 1.0" in client.fetch_metadata(wheel)
    assert not client.fetch_project(source, "absent").found


def test_static_site_via_file_url_html_only(
    site: Path, tmp_path: Path, client: IndexClient
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(site, copy)
    for page in copy.rglob("index.json"):
        page.unlink()
    json_listing = client.fetch_project(IndexSource.index(site / "simple"), "demo-pkg")
    html_listing = client.fetch_project(IndexSource.index(copy / "simple"), "demo-pkg")
    assert html_listing.page_url is not None
    assert html_listing.page_url.endswith("index.html")
    # The same files from index.html as from index.json, less the sizes (PEP 700).
    assert len(html_listing.files) == len(json_listing.files)
    for html_file, json_file in zip(html_listing.files, json_listing.files, strict=True):
        assert html_file.url.replace(str(copy), str(site)) == json_file.url
        assert dataclasses.replace(html_file, url=json_file.url, size=json_file.size) == json_file


def test_static_site_via_http_server(site: Path, client: IndexClient, tmp_path: Path) -> None:
    with http_server(site) as base:
        listing = client.fetch_project(IndexSource.index(f"{base}/simple/"), "DEMO_pkg")
        files = by_name(listing)
        assert set(files) == DEMO_FILES
        wheel = files["demo_pkg-2.0-py3-none-any-null.whl"]
        # http.server answers text/html: relative links resolved against the page.
        assert wheel.url == f"{base}/files/demo-pkg/demo_pkg-2.0-py3-none-any-null.whl"
        assert wheel.size is None
        assert wheel.core_metadata
        assert b"Name: demo_pkg" in client.fetch_metadata(wheel)
        client.fetch_file_to(wheel, tmp_path / wheel.filename)
        assert (tmp_path / wheel.filename).read_bytes().startswith(b"PK")
        link = listing.variants_json("2.0")
        assert link is not None
        assert link.hashes
        assert "x86_64_v1" in client.fetch_variants_json(link).labels
        assert not client.fetch_project(IndexSource.index(f"{base}/simple/"), "absent").found


# -- HTML only, hostile and odd servers ------------------------------------------------------


def test_html_fallback(hostile: tuple[str, Hostile], client: IndexClient) -> None:
    base, state = hostile
    listing = client.fetch_project(IndexSource.index(f"{base}/simple/"), "HTML.Only")
    assert state.headers["/simple/html-only/"][-1]["accept"] == PAGE_ACCEPT
    files = by_name(listing)
    wheel = files["html_only-1.0-py3-none-any.whl"]
    assert wheel.url == f"{base}/files/html_only-1.0-py3-none-any.whl"
    assert wheel.hashes == {"sha256": sha256(WHEEL_BYTES)}
    assert wheel.requires_python == ">=3.9"
    assert wheel.allows_python("3.11")
    assert not wheel.allows_python("3.8")
    # PEP 714: data-dist-info-metadata is read where data-core-metadata is absent.
    assert wheel.core_metadata_hashes == {"sha256": sha256(METADATA)}
    assert client.fetch_metadata(wheel) == METADATA
    old = files["html_only-0.9-py3-none-any.whl"]
    assert old.yanked
    assert old.yanked_reason == "broken build"
    assert old.url == f"{base}/files/html_only-0.9-py3-none-any.whl"
    assert old.hashes == {}
    sdist = files["html_only-1.0.tar.gz"]
    assert sdist.yanked
    assert sdist.yanked_reason is None
    link = listing.variants_json("1.0")
    assert link is not None
    assert client.fetch_variants_json(link).labels == ("x86_64_v1",)


def test_redirect_followed(hostile: tuple[str, Hostile], client: IndexClient) -> None:
    base, _ = hostile
    listing = client.fetch_project(IndexSource.index(f"{base}/simple/"), "moved")
    # Relative links resolve against the page the redirect led to.
    assert listing.page_url == f"{base}/elsewhere/simple/html-only/"
    wheel = by_name(listing)["html_only-1.0-py3-none-any.whl"]
    assert wheel.url == f"{base}/elsewhere/files/html_only-1.0-py3-none-any.whl"


def test_etag_cache(hostile: tuple[str, Hostile], tmp_path: Path) -> None:
    base, state = hostile
    source = IndexSource.index(f"{base}/simple/")
    with IndexClient(cache_dir=tmp_path, retry=FAST) as client:
        first = client.fetch_project(source, "counted")
        second = client.fetch_project(source, "counted")
    assert first == second
    assert by_name(second)["counted-1.0-py3-none-any.whl"].url == (
        f"{base}/files/counted-1.0-py3-none-any.whl"
    )
    seen = state.headers["/simple/counted/"]
    assert len(seen) == 2
    assert "if-none-match" not in seen[0]
    assert seen[1]["if-none-match"] == '"v1"'
    # Without the cache: no conditional request.
    with IndexClient(cache=False, retry=FAST) as client:
        assert client.fetch_project(source, "counted") == first
    assert "if-none-match" not in state.headers["/simple/counted/"][2]


def test_last_modified_cache_in_default_dir(
    hostile: tuple[str, Hostile], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, state = hostile
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(tmp_path / "cache"))
    source = IndexSource.index(f"{base}/simple/")
    # A Last-Modified date and no max-age: fresh for the heuristic lifetime (as uv
    # takes it), so the second run asks nothing; --refresh (revalidate) asks with it.
    for revalidate in (False, False, True):
        with IndexClient(retry=FAST, revalidate=revalidate) as client:
            listing = client.fetch_project(source, "dated")
        assert [f.url for f in listing.files] == [f"{base}/simple/dated/dated-1.0.tar.gz"]
    seen = state.headers["/simple/dated/"]
    assert len(seen) == 2
    assert "if-modified-since" not in seen[0]
    assert seen[1]["if-modified-since"] == "Sat, 21 Nov 2026 10:00:00 GMT"
    entries = [p for p in (tmp_path / "cache" / "http").rglob("*") if p.is_file()]
    assert len(entries) == 1
    assert not any(p.name.startswith(".tmp") for p in entries)


def test_corrupt_cache_entry_is_ignored(hostile: tuple[str, Hostile], tmp_path: Path) -> None:
    base, _ = hostile
    source = IndexSource.index(f"{base}/simple/")
    with IndexClient(cache_dir=tmp_path, retry=FAST) as client:
        expected = client.fetch_project(source, "counted")
        for entry in (p for p in tmp_path.rglob("*") if p.is_file()):
            entry.write_bytes(b"\x00garbage")
        assert client.fetch_project(source, "counted") == expected


def test_server_error_is_retried_then_reported(hostile: tuple[str, Hostile]) -> None:
    base, state = hostile
    delays: list[float] = []
    with (
        IndexClient(cache=False, sleep=delays.append) as client,
        pytest.raises(SourceError) as caught,
    ):
        client.fetch_project(IndexSource.index(f"{base}/simple/"), "broken")
    assert state.counts["/simple/broken/"] == 4
    assert delays == [0.25, 0.5, 1.0]
    message = str(caught.value)
    assert f"{base}/simple/broken/" in message
    assert "500" in message
    assert "4 tries" in message
    assert "--index-url" in message
    assert caught.value.url == f"{base}/simple/broken/"


def test_client_error_is_not_retried(hostile: tuple[str, Hostile], client: IndexClient) -> None:
    base, state = hostile
    with pytest.raises(SourceError, match=r"answered 403 Forbidden; check --index-url"):
        client.fetch_project(IndexSource.index(f"{base}/simple/"), "forbidden")
    assert state.counts["/simple/forbidden/"] == 1


@pytest.mark.parametrize(
    ("project", "pattern"),
    [
        ("garbage-json", r"not a valid PEP 691 project page: invalid JSON at line 1"),
        ("wrong-json", r"files\[0\]: 'url' must be a string"),
        ("garbage-html", r"not a valid PEP 503 HTML page: not utf-8 text \(byte 0\)"),
        ("no-markup", r"no HTML markup at all"),
        ("plain", r"answered text/plain, not a simple repository page"),
        ("future", r"version 2.0 of the simple repository API"),
    ],
)
def test_garbage_pages(
    hostile: tuple[str, Hostile], client: IndexClient, project: str, pattern: str
) -> None:
    base, state = hostile
    with pytest.raises(InvalidPage, match=pattern) as caught:
        client.fetch_project(IndexSource.index(f"{base}/simple/"), project)
    assert f"{base}/simple/{project}/" in str(caught.value)
    assert state.counts[f"/simple/{project}/"] == 1


def test_an_entry_whose_filename_is_not_a_file_name_is_skipped_with_a_warning(
    hostile: tuple[str, Hostile], tmp_path: Path
) -> None:
    base, _ = hostile
    heard: list[str] = []
    with IndexClient(cache_dir=tmp_path / "cache", warn=heard.append) as client:
        listing = client.fetch_project(IndexSource.index(f"{base}/simple/"), "bad-names")
    assert [f.filename for f in listing.files] == ["bad_names-1.0.tar.gz"]
    assert [line.split(": ", 1)[1] for line in heard] == [
        "files[0]: skipped the entry whose filename None is not a file name",
        "files[1]: skipped the entry whose filename 'a/b-1.0-py3-none-any.whl' is not a file name",
        "files[2]: skipped the entry whose filename 7 is not a file name",
    ]


def test_lying_hashes(hostile: tuple[str, Hostile], client: IndexClient) -> None:
    base, _ = hostile
    listing = client.fetch_project(IndexSource.index(f"{base}/simple/"), "liar")
    link = listing.variants_json("1.0")
    assert link is not None
    with pytest.raises(HashMismatch, match=r"html_only-1\.0-variants\.json: sha256 is"):
        client.fetch_variants_json(link)
    assert listing.has_variant_wheels("1.0")
    with pytest.raises(HashMismatch, match=r"\.whl\.metadata: sha256 is"):
        client.fetch_metadata(listing.wheels_for("1.0")[0])


def test_a_file_with_a_wrong_hash_is_not_kept_in_the_cache(
    hostile: tuple[str, Hostile], tmp_path: Path
) -> None:
    base, state = hostile
    name = "kept-1.0-variants.json"
    good = IndexFile(name, f"{base}/files/{name}", hashes={"sha256": sha256(VARIANTS)})
    state.files[name] = b"{}"  # the index serves a wrong file for a while, cacheable
    with IndexClient(cache_dir=tmp_path, retry=FAST) as client:
        with pytest.raises(HashMismatch):
            client.fetch_variants_json(good)
        state.files[name] = VARIANTS  # fixed
        assert client.fetch_variants_json(good).variants


@pytest.fixture
def hanging_port() -> Iterator[int]:
    """A server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.05)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        listener.close()


def test_hanging_server_times_out(hanging_port: int) -> None:
    url = f"http://127.0.0.1:{hanging_port}/simple/"
    retry = RetryPolicy(retries=1, backoff=0.01)
    with IndexClient(timeout=0.3, retry=retry, cache=False) as client:
        started = time.monotonic()
        with pytest.raises(SourceError, match=r"no answer within 0\.3 s \(2 tries\)") as caught:
            client.fetch_project(IndexSource.index(url), "demo")
        elapsed = time.monotonic() - started
    assert elapsed < 2.0
    assert "HTTP_PROXY" in str(caught.value)


def test_connection_refused(client: IndexClient) -> None:
    url = f"http://127.0.0.1:{free_port()}/simple/"
    with pytest.raises(SourceError, match=r"cannot connect \(.*3 tries\)") as caught:
        client.fetch_project(IndexSource.index(url), "demo")
    message = str(caught.value)
    assert url in message
    assert "--index-url" in message
    assert "proxy" in message


def test_bad_source_urls(tmp_path: Path, client: IndexClient) -> None:
    with pytest.raises(SourceError, match="not an http://, https:// or file:// URL"):
        IndexSource("ftp://example.invalid/simple/")
    with pytest.raises(SourceError, match="no such directory; check --index-url"):
        client.fetch_project(IndexSource.index(tmp_path / "nowhere"), "demo")


# -- find-links and several sources ------------------------------------------------------------


@pytest.fixture
def links_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "links"
    directory.mkdir()
    demo_wheel(directory, "demo_pkg-3.0-py3-none-any.whl")
    demo_wheel(
        directory,
        "demo_pkg-3.0-py3-none-any-x86_64_v1.whl",
        "x86_64_v1",
        {"x86_64": {"level": ["v1"]}},
    )
    (directory / "demo_pkg-3.0-variants.json").write_bytes(VARIANTS)
    (directory / "demo_pkg-3.0.tar.gz").write_bytes(b"sdist")
    demo_wheel(directory, "other_project-0.1-py3-none-any.whl")
    (directory / "README.txt").write_text("not a distribution")
    (directory / ".demo_pkg-4.0-py3-none-any.whl").write_bytes(b"hidden")
    return directory


def test_find_links_directory(links_dir: Path, client: IndexClient) -> None:
    source = IndexSource.find_links(links_dir)
    listing = client.fetch_project(source, "Demo-Pkg")
    assert set(by_name(listing)) == {
        "demo_pkg-3.0-py3-none-any.whl",
        "demo_pkg-3.0-py3-none-any-x86_64_v1.whl",
        "demo_pkg-3.0-variants.json",
        "demo_pkg-3.0.tar.gz",
    }
    link = listing.variants_json("3.0")
    assert link is not None
    assert link.url == (links_dir / link.filename).as_uri()
    assert client.fetch_variants_json(link).labels == ("x86_64_v1",)
    assert not client.fetch_project(source, "absent").found


def test_find_links_page(wheel_dir: Path, client: IndexClient) -> None:
    # http.server's directory listing is a page of links, as find-links pages are.
    with http_server(wheel_dir) as base:
        listing = client.fetch_project(IndexSource.find_links(f"{base}/"), "demo_pkg")
    files = by_name(listing)
    assert set(files) == {name for name in DEMO_FILES if not name.endswith("variants.json")}
    assert files["demo_pkg-1.0.tar.gz"].url == f"{base}/demo_pkg-1.0.tar.gz"


def test_several_sources_kept_apart(
    live: tuple[str, Recorder],
    hostile: tuple[str, Hostile],
    links_dir: Path,
    client: IndexClient,
) -> None:
    index = IndexSource.index(f"{live[0]}/simple/")
    links = IndexSource.find_links(links_dir)
    listings = find_candidates("demo-pkg", [index, links], client)
    assert [(entry.position, entry.source) for entry in listings] == [(0, index), (1, links)]
    first, second = (entry.listing for entry in listings)
    assert {str(v) for v in first.versions()} == {"1.0", "2.0"}
    assert {str(v) for v in second.versions()} == {"3.0"}
    # Each source's variants.json is its own: nothing merged across sources.
    one, three = first.variants_json("1.0"), second.variants_json("3.0")
    assert one is not None
    assert three is not None
    assert first.variants_json("3.0") is None
    assert second.variants_json("1.0") is None
    assert set(client.fetch_variants_json(one).labels) == {"x86_64_v1", "null"}
    assert client.fetch_variants_json(three).labels == ("x86_64_v1",)

    found = first_viable_source("2.0", listings)
    assert found is not None
    assert found.source == index
    found = first_viable_source("3", listings)
    assert found is not None
    assert found.source == links
    assert first_viable_source("9.9", listings) is None
    # The installer's own test of viability: wheels only.
    found = first_viable_source("1.0", listings, lambda f: f.kind == "sdist")
    assert found is not None
    assert found.position == 0

    # A source whose only file of a version is yanked is passed over.
    hostile_index = IndexSource.index(f"{hostile[0]}/simple/")
    local = tmp_links = links_dir / "html"
    tmp_links.mkdir()
    demo_wheel(tmp_links, "html_only-0.9-py3-none-any.whl")
    ordered = find_candidates("html-only", [hostile_index, IndexSource.find_links(local)], client)
    found = first_viable_source("0.9", ordered)
    assert found is not None
    assert found.position == 1
    found = first_viable_source("1.0", ordered)
    assert found is not None
    assert found.position == 0


def test_proxy_settings_are_honoured(
    live: tuple[str, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = IndexSource.index(f"{live[0]}/simple/")
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    with (
        IndexClient(cache=False, retry=RetryPolicy(retries=0)) as client,
        pytest.raises(SourceError, match=r"cannot connect .*1 try.*HTTP_PROXY"),
    ):
        client.fetch_project(source, "demo-pkg")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with IndexClient(cache=False, retry=RetryPolicy(retries=0)) as client:
        assert client.fetch_project(source, "demo-pkg").found


def test_unreadable_ca_bundle_is_a_clear_error(
    live: tuple[str, Recorder], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bundle that cannot be read fails the first request (the client is made
    then), plain http:// too; one that cannot be parsed fails at the first TLS
    connection (certificates load then), with the same message, and plain http://
    never loads it."""
    missing = tmp_path / "no-such-bundle.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    with (
        IndexClient(cache=False) as client,
        pytest.raises(SourceError, match=r"SSL_CERT_FILE=.*no-such-bundle\.pem.*fix or unset"),
    ):
        client.fetch_project(IndexSource.index(f"{live[0]}/simple/"), "demo-pkg")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(garbage))
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
    thread.start()
    try:
        with IndexClient(cache=False, retry=RetryPolicy(retries=0)) as client:
            plain = IndexSource.index(f"{live[0]}/simple/")
            assert client.fetch_project(plain, "demo-pkg").found  # no TLS: never loaded
            tls = IndexSource.index(f"https://127.0.0.1:{port}/simple/")
            with pytest.raises(
                SourceError, match=r"cannot load the CA certificates from SSL_CERT_FILE=.*garbage"
            ):
                client.fetch_project(tls, "demo-pkg")
    finally:
        thread.join(5)
        for connection in accepted:
            connection.close()
        listener.close()


def test_ca_certificates_load_at_the_first_tls_connection() -> None:
    context = client_tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0
    context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="example.invalid")
    assert context.cert_store_stats()["x509_ca"] > 0


# -- links that cannot be read, JSON that cannot be held -----------------------------

PAGE_URL = "https://example.test/simple/demo/"
GOOD_LINK = "demo_pkg-1.0-py3-none-any.whl"
BAD_LINKS = [
    "http://[::1/demo_pkg-0.9-py3-none-any.whl",  # an IPv6 host never closed
    "//[::1/demo_pkg-0.8-py3-none-any.whl",  # relative, but cannot be joined
    "http://host:port/demo_pkg-0.7-py3-none-any.whl",  # a port that is no number
]


def test_html_link_that_is_no_url_is_skipped_with_a_warning() -> None:
    anchors = "".join(f'<a href="{link}">x</a>' for link in [*BAD_LINKS, GOOD_LINK])
    warnings: list[str] = []
    body = f"<html><body>{anchors}</body></html>".encode()
    files = parse_html_page(body, PAGE_URL, warn=warnings.append)
    assert [f.filename for f in files] == [GOOD_LINK]
    assert len(warnings) == len(BAD_LINKS)
    for link, warning in zip(BAD_LINKS, warnings, strict=True):
        assert warning.startswith(PAGE_URL)
        assert repr(link) in warning


def test_html_base_that_is_no_url_is_ignored_with_a_warning() -> None:
    body = f'<html><head><base href="http://[::1/"></head><a href="{GOOD_LINK}">x</a></html>'
    warnings: list[str] = []
    [file] = parse_html_page(body.encode(), PAGE_URL, warn=warnings.append)
    assert file.url == PAGE_URL + GOOD_LINK
    [warning] = warnings
    assert "'http://[::1/'" in warning


def test_json_link_that_is_no_url_is_skipped_with_a_warning() -> None:
    entries = [{"filename": link.rsplit("/", 1)[1], "url": link} for link in BAD_LINKS]
    entries.append({"filename": GOOD_LINK, "url": GOOD_LINK})
    document = {"meta": {"api-version": "1.0"}, "name": "demo", "files": entries}
    warnings: list[str] = []
    files = parse_json_page(json.dumps(document).encode(), PAGE_URL, warn=warnings.append)
    assert [f.filename for f in files] == [GOOD_LINK]
    assert [w.split(": skipped")[0] for w in warnings] == [
        f"{PAGE_URL}: files[{i}]" for i in range(len(BAD_LINKS))
    ]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"meta": {"api-version": "1.0"}, "files": ' + b"[" * 100_000, "nested too deeply"),
        (b'{"meta": {"api-version": "1.0"}, "files": [], "x": ' + b"9" * 5000 + b"}", "digits"),
    ],
    ids=["deep-nesting", "huge-integer"],
)
def test_json_page_that_cannot_be_held_is_an_invalid_page(body: bytes, says: str) -> None:
    with pytest.raises(InvalidPage) as raised:
        parse_json_page(body, PAGE_URL)
    assert raised.value.message.startswith(f"{PAGE_URL}: not a valid PEP 691 project page: ")
    assert says in raised.value.message


@pytest.mark.parametrize(
    ("body", "says"),
    [(b"[" * 100_000, "nested too deeply"), (b'{"x": ' + b"9" * 5000 + b"}", "digits")],
    ids=["deep-nesting", "huge-integer"],
)
def test_variants_json_that_cannot_be_held_is_invalid(
    body: bytes, says: str, tmp_path: Path, client: IndexClient
) -> None:
    """Like any invalid variant metadata (the installer then reads the wheels'
    own variant.json), not a traceback."""
    path = tmp_path / "demo_pkg-1.0-variants.json"
    path.write_bytes(body)
    with pytest.raises(InvalidPage) as raised:
        client.fetch_variants_json(IndexFile(path.name, path.as_uri()))
    assert raised.value.message.startswith(f"{path.as_uri()}: ")
    assert says in raised.value.message


def test_a_wheel_is_streamed_to_disk_and_verified(
    live: tuple[str, Recorder], client: IndexClient, tmp_path: Path
) -> None:
    base, _ = live
    listing = client.fetch_project(IndexSource.index(f"{base}/simple/"), "demo-pkg")
    wheel = next(f for f in listing.files if f.kind == "wheel")
    dest = tmp_path / wheel.filename
    client.fetch_file_to(wheel, dest)
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == wheel.hashes["sha256"]
    # A wrong hash, or a size smaller than the body: nothing is left behind.
    lying = dataclasses.replace(wheel, hashes={"sha256": "0" * 64})
    other = tmp_path / "other" / wheel.filename
    other.parent.mkdir()
    with pytest.raises(HashMismatch):
        client.fetch_file_to(lying, other)
    too_small = dataclasses.replace(wheel, size=10)
    with pytest.raises(SourceError) as raised:
        client.fetch_file_to(too_small, other)
    assert "bigger than 10 bytes once decoded" in raised.value.message
    assert list(other.parent.iterdir()) == []


@pytest.mark.parametrize(
    "url", ["http://[::1", "http://[::1/simple/", "http://host:99999/simple/", "http://h:port/"]
)
@pytest.mark.parametrize("make", [IndexSource.index, IndexSource.find_links])
def test_a_location_that_is_no_valid_url_is_a_source_error(url: str, make: Any) -> None:
    with pytest.raises(SourceError, match=r"not a valid URL \(.+\); "):
        make(url)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.one_of(
        st.text(max_size=40),
        st.builds(
            "{}://{}".format, st.sampled_from(["http", "https", "file", "ftp", ""]), st.text()
        ),
    ),
    st.sampled_from([IndexSource.index, IndexSource.find_links]),
)
def test_any_location_gives_a_source_or_a_source_error(text: str, make: Any) -> None:
    try:
        source = make(text)
    except SourceError:
        return
    assert source.url.startswith(("http://", "https://", "file://"))
