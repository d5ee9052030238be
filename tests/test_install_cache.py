"""A warm ``wheelwise install`` reuses what it fetched: wheels and PEP 658 metadata
kept by hash (wheelwise.cache.wheel_cache), pages kept by URL and fresh for their
``max-age`` (wheelwise.cache.http_cache).

One threaded ``http.server`` on 127.0.0.1 serves a PEP 691 site and logs every
request (path, status, whether it was conditional); it can lie about a file (serve
other bytes than the page's hash), leave a wheel's hash off the page, and give the
pages any ``Cache-Control``. Installs go into fresh venvs, through the library
(``run_install``) or the command line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from installkit import WHEEL, make_venv
from variantkit import system_file, vpkg_wheel, wheelwise
from wheelfactory import make_wheel
from wheelwise.cache.http_cache import (
    HEURISTIC_LIFETIME,
    CachedResponse,
    HttpCache,
    body_stamp,
    freshness,
)
from wheelwise.cache.wheel_cache import ContentStore, content_key
from wheelwise.cli.inputs import load_system
from wheelwise.client.errors import HashMismatch
from wheelwise.client.index_client import PAGE_ACCEPT, IndexClient, IndexSource
from wheelwise.install.plan import InstallOptions, run_install
from wheelwise.models.errors import DownloadError
from wheelwise.policy.retry import RetryPolicy

JSON_PAGE = "application/vnd.pypi.simple.v1+json"

# app needs left, right and vpkg; left needs leaf; right has two releases. vpkg has
# variant wheels (v3, v4) and no *-variants.json: their variant.json is read from
# the wheels while resolving. The machine is x86-64-v3: vpkg's v3 wheel wins.
PROJECTS: dict[str, list[tuple[str, list[str]]]] = {
    "app": [("1.0", ["left", "right>=1", "vpkg"])],
    "left": [("1.0", ["leaf"])],
    "right": [("1.0", []), ("2.0", [])],
    "leaf": [("1.0", [])],
}
INSTALLED = ["app-1.0", "leaf-1.0", "left-1.0", "right-2.0", "vpkg-1.0"]


def _wheel(folder: Path, name: str, version: str, requires: Sequence[str]) -> Path:
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    members = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n".encode(),
        f"{name}-{version}.dist-info/METADATA": metadata.encode(),
        f"{name}-{version}.dist-info/WHEEL": WHEEL,
    }
    return make_wheel(
        folder, f"{name}-{version}-py3-none-any.whl", extra_members=members, record=True
    )


def build_files(folder: Path, *, unhashed: Sequence[str] = ()) -> dict[str, bytes]:
    """Every URL path of the site and its bytes: a JSON page per project, each file
    and its PEP 658 metadata. Wheels named in *unhashed* are listed without hashes."""
    folder.mkdir(parents=True, exist_ok=True)
    wheels: dict[str, list[Path]] = {}
    for name, releases in PROJECTS.items():
        wheels[name] = [_wheel(folder, name, v, requires) for v, requires in releases]
    wheels["vpkg"] = [vpkg_wheel(folder), vpkg_wheel(folder, label="v3")]
    wheels["vpkg"].append(vpkg_wheel(folder, label="v4"))
    files: dict[str, bytes] = {}
    for project, paths in wheels.items():
        entries = []
        for path in paths:
            data = path.read_bytes()
            with zipfile.ZipFile(path) as archive:
                [member] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
                metadata = archive.read(member)
            files[f"/files/{path.name}"] = data
            files[f"/files/{path.name}.metadata"] = metadata
            entries.append(
                {
                    "filename": path.name,
                    "url": f"../../files/{path.name}",
                    "hashes": {} if path.name in unhashed else {"sha256": _sha256(data)},
                    "size": len(data),
                    "core-metadata": {"sha256": _sha256(metadata)},
                }
            )
        document = {"meta": {"api-version": "1.1"}, "name": project, "files": entries}
        files[f"/simple/{project}/"] = json.dumps(document).encode()
    return files


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Request:
    path: str
    status: int
    conditional: bool


@dataclass
class Site:
    """What the server serves, and what it was asked."""

    files: dict[str, bytes]
    page_headers: dict[str, str] = field(default_factory=lambda: {"Cache-Control": "no-cache"})
    etags: bool = True
    lies: set[str] = field(default_factory=set)
    log: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def since(self, start: int) -> list[Request]:
        with self.lock:
            return self.log[start:]

    def mark(self) -> int:
        with self.lock:
            return len(self.log)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: Site


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        site = self.server.site
        path = self.path.split("?", 1)[0]
        body = site.files.get(path)
        conditional = "If-None-Match" in self.headers or "If-Modified-Since" in self.headers
        headers: dict[str, str] = {}
        if body is None:
            status, body, kind = 404, b"not found", "text/plain"
        elif path.endswith("/"):
            status, kind = 200, JSON_PAGE
            headers.update(site.page_headers)
            if site.etags:
                headers["ETag"] = f'"{_sha256(body)[:16]}"'
                if self.headers.get("If-None-Match") == headers["ETag"]:
                    status, body = 304, b""
        else:
            status, kind = 200, "application/octet-stream"
            if path in site.lies:  # other bytes than the page's hash
                body = body[:-1] + bytes([body[-1] ^ 1])
        with site.lock:
            site.log.append(Request(path, status, conditional))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        for name, value in headers.items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Site, str]]:
    """The site and its index URL."""
    served = Site(build_files(tmp_path / "wheels"))
    server = _Server(("127.0.0.1", 0), _Handler)
    server.site = served
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No proxy; the cache in this test's folder."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(tmp_path / "cache"))


def install(tmp_path: Path, index: str, venv: str, **options: object) -> Path:
    """``app`` into a new venv ``tmp_path / venv`` through the library; its Python."""
    python = make_venv(tmp_path / venv)
    run_install(
        InstallOptions(
            requirements=["app"],
            index_url=index,
            python=python,
            system=load_system(system_file(tmp_path, ["v3"])),
            **options,  # type: ignore[arg-type]
        )
    )
    return python


def installed(python: Path) -> list[str]:
    site = next(python.parent.parent.glob("lib/python3*/site-packages"))
    return sorted(p.name.removesuffix(".dist-info") for p in site.glob("*.dist-info"))


def variant_of(python: Path) -> str:
    site = next(python.parent.parent.glob("lib/python3*/site-packages"))
    return (site / "vpkg" / "__init__.py").read_text().splitlines()[0]


def wheel_gets(requests: Sequence[Request]) -> list[str]:
    return [r.path.rsplit("/", 1)[-1] for r in requests if r.path.endswith(".whl")]


def metadata_gets(requests: Sequence[Request]) -> list[str]:
    return [r.path.rsplit("/", 1)[-1] for r in requests if r.path.endswith(".metadata")]


def page_gets(requests: Sequence[Request]) -> list[Request]:
    return [r for r in requests if r.path.endswith("/")]


def entries(cache: Path, kind: str = "wheels") -> dict[str, Path]:
    """The cache's entries of *kind* by file name (no temporary files left)."""
    found = [p for p in (cache / kind).rglob("*") if p.is_file()]
    assert not [p for p in found if p.name.startswith(".tmp")]
    return {p.name: p for p in found}


def assert_entries_match_their_hash(cache: Path) -> None:
    for kind in ("wheels", "metadata"):
        for path in entries(cache, kind).values():
            algorithm, digest = path.parent.parent.parent.name, path.parent.name
            assert hashlib.new(algorithm, path.read_bytes()).hexdigest() == digest, path


# -- (a) a warm install downloads nothing ------------------------------------------------


def test_a_warm_install_downloads_no_wheel_and_no_metadata(
    site: tuple[Site, str], tmp_path: Path
) -> None:
    served, index = site
    first = install(tmp_path, index, "one")
    cold = served.since(0)
    assert installed(first) == INSTALLED
    assert "vpkg-1.0-py3-none-any-v4.whl" in wheel_gets(cold)  # read for its variant.json

    mark = served.mark()
    second = install(tmp_path, index, "two")
    warm = served.since(mark)
    assert wheel_gets(warm) == []
    assert metadata_gets(warm) == []
    cache = tmp_path / "cache"
    assert set(wheel_gets(cold)) <= set(entries(cache))
    assert_entries_match_their_hash(cache)
    assert installed(second) == INSTALLED
    assert variant_of(second) == "VARIANT = 'v3'"
    # The pages say no-cache (as `wheelwise index serve` does): each is revalidated.
    assert warm
    assert all(r.status == 304 and r.conditional for r in warm)


@pytest.mark.slow
def test_the_cli_reuses_the_cache_too(site: tuple[Site, str], tmp_path: Path) -> None:
    """``wheelwise install`` twice with one WHEELWISE_CACHE_DIR: the second run gets
    no wheel and no metadata file; ``--no-cache`` (uv's name) downloads them again."""
    served, index = site
    cache = tmp_path / "cache"
    system = str(system_file(tmp_path, ["v3"]))
    for venv in ("one", "two"):
        python = make_venv(tmp_path / venv)
        mark = served.mark()
        args = ["install", "--python", str(python), "-i", index, "--system", system, "app"]
        result = wheelwise(args, cache)
        assert result.returncode == 0, result.stderr
        assert installed(python) == INSTALLED
    warm = served.since(mark)
    assert wheel_gets(warm) == metadata_gets(warm) == []
    python = make_venv(tmp_path / "three")
    mark = served.mark()
    result = wheelwise(["install", "--no-cache", *args[1:2], str(python), *args[3:]], cache)
    assert result.returncode == 0, result.stderr
    assert "app-1.0-py3-none-any.whl" in wheel_gets(served.since(mark))
    assert all(not r.conditional for r in served.since(mark))  # no cached page either


# -- (b) pages: fresh for max-age, else revalidated ------------------------------------


@pytest.mark.slow
def test_pages_fresh_for_their_max_age_are_not_asked_for(
    site: tuple[Site, str], tmp_path: Path
) -> None:
    served, index = site
    served.page_headers = {"Cache-Control": "max-age=600, public"}
    install(tmp_path, index, "one")
    mark = served.mark()
    second = install(tmp_path, index, "two")
    assert served.since(mark) == []  # nothing at all: pages, metadata and wheels
    assert installed(second) == INSTALLED
    # --refresh revalidates every page, however fresh.
    mark = served.mark()
    install(tmp_path, index, "three", refresh=True)
    pages = page_gets(served.since(mark))
    assert {r.path for r in pages} == {f"/simple/{p}/" for p in [*PROJECTS, "vpkg"]}
    assert all(r.conditional and r.status == 304 for r in pages)


# The command line, then whether it loaded httpx (no request can be sent without it).
_LOADS_HTTPX = """
import sys
from wheelwise.cli import _run
sys.argv = ["wheelwise", *sys.argv[1:]]
try:
    _run()
except SystemExit as exc:
    assert not exc.code, exc.code
print("httpx" in sys.modules)
"""


@pytest.mark.slow
@pytest.mark.parametrize("refresh", [False, True])
def test_a_run_served_from_the_cache_never_loads_the_http_client(
    site: tuple[Site, str], tmp_path: Path, refresh: bool
) -> None:
    """Every page fresh and every wheel cached: no request, so the HTTP client (and
    httpx with it) is never made (wheelwise.client.lazy_http); ``--refresh`` asks."""
    served, index = site
    served.page_headers = {"Cache-Control": "max-age=600, public"}
    install(tmp_path, index, "one")
    python = make_venv(tmp_path / "two")
    system = str(system_file(tmp_path, ["v3"]))
    argv = ["install", "-q", "--python", str(python), "-i", index, "--system", system, "app"]
    mark = served.mark()
    result = subprocess.run(
        [sys.executable, "-c", _LOADS_HTTPX, *argv, *(["--refresh"] if refresh else [])],
        capture_output=True,
        text=True,
        env={**os.environ, "WHEELWISE_CACHE_DIR": str(tmp_path / "cache")},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == str(refresh)
    assert bool(served.since(mark)) == refresh
    assert installed(python) == INSTALLED


def test_pages_with_max_age_and_no_validators_are_kept(
    site: tuple[Site, str], tmp_path: Path
) -> None:
    served, index = site
    served.page_headers = {"Cache-Control": "max-age=600"}
    served.etags = False
    install(tmp_path, index, "one")
    mark = served.mark()
    install(tmp_path, index, "two")
    assert served.since(mark) == []


@pytest.mark.parametrize(
    "cache_control", ["no-cache", "max-age=0", "max-age=600, no-cache", "max-age=600 garbage"]
)
def test_pages_that_must_be_revalidated_are_asked_for_with_their_etag(
    cache_control: str, site: tuple[Site, str], tmp_path: Path
) -> None:
    served, index = site
    served.page_headers = {"Cache-Control": cache_control}
    install(tmp_path, index, "one")
    mark = served.mark()
    install(tmp_path, index, "two")
    pages = page_gets(served.since(mark))
    assert {r.path for r in pages} == {f"/simple/{p}/" for p in [*PROJECTS, "vpkg"]}
    assert all(r.conditional and r.status == 304 for r in pages)


def test_no_store_pages_are_not_kept(site: tuple[Site, str], tmp_path: Path) -> None:
    served, index = site
    served.page_headers = {"Cache-Control": "no-store, max-age=600"}
    install(tmp_path, index, "one")
    assert not (tmp_path / "cache" / "http").exists()
    mark = served.mark()
    install(tmp_path, index, "two")
    pages = page_gets(served.since(mark))
    assert pages
    assert all(not r.conditional and r.status == 200 for r in pages)


# -- (c) a corrupt entry is removed and fetched again ------------------------------------


def test_a_corrupt_entry_is_replaced_by_a_fresh_download(
    site: tuple[Site, str], tmp_path: Path
) -> None:
    served, index = site
    install(tmp_path, index, "one")
    cache = tmp_path / "cache"
    wheel = entries(cache)["leaf-1.0-py3-none-any.whl"]
    variant = entries(cache)["vpkg-1.0-py3-none-any-v4.whl"]  # read while resolving
    metadata = entries(cache, "metadata")["right-2.0-py3-none-any.whl.metadata"]
    for path in (wheel, variant, metadata):
        data = path.read_bytes()
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    shutil.rmtree(cache / "unpacked")  # the archives are what is read again
    mark = served.mark()
    python = install(tmp_path, index, "two")
    warm = served.since(mark)
    assert sorted(wheel_gets(warm)) == ["leaf-1.0-py3-none-any.whl", variant.name]
    assert metadata_gets(warm) == [metadata.name]
    assert installed(python) == INSTALLED
    assert_entries_match_their_hash(cache)  # each bad entry was replaced
    assert {wheel.name, variant.name} <= set(entries(cache))


# -- (d) --no-cache-dir ------------------------------------------------------------------


@pytest.mark.slow
def test_no_cache_dir_neither_reads_nor_writes_the_cache(
    site: tuple[Site, str], tmp_path: Path
) -> None:
    served, index = site
    cache = tmp_path / "cache"
    python = make_venv(tmp_path / "one")
    system = str(system_file(tmp_path, ["v3"]))
    args = ["install", "--no-cache-dir", "--python", str(python), "-i", index, "--system", system]
    result = wheelwise([*args, "app"], cache)
    assert result.returncode == 0, result.stderr
    assert installed(python) == INSTALLED
    for kind in ("wheels", "metadata", "http"):
        assert not (cache / kind).exists()
    # A warm cache is not read either.
    install(tmp_path, index, "two")
    mark = served.mark()
    install(tmp_path, index, "three", no_cache=True)
    again = served.since(mark)
    assert "app-1.0-py3-none-any.whl" in wheel_gets(again)
    assert metadata_gets(again)
    assert all(not r.conditional for r in again)


# -- (e) a cache that cannot be written --------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("blocked", ["root", "wheels", "unpacked"])
def test_an_unwritable_cache_does_not_fail_the_install(
    blocked: str, site: tuple[Site, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file where the cache dir (or its wheels or unpacked folder) should be:
    installs work, and download again when neither kind can be kept."""
    served, index = site
    cache = tmp_path / "cache"
    if blocked == "root":
        cache.write_text("not a folder")
    else:
        cache.mkdir()
        (cache / blocked).write_text("not a folder")
    for venv in ("one", "two"):
        mark = served.mark()
        python = install(tmp_path, index, venv)
        assert installed(python) == INSTALLED
        fetched = "app-1.0-py3-none-any.whl" in wheel_gets(served.since(mark))
        # The other kind still serves the second install.
        assert fetched == (venv == "one" or blocked == "root")
    assert (cache if blocked == "root" else cache / blocked).is_file()  # left as it was


def test_a_cache_that_is_no_folder_is_said_once(site: tuple[Site, str], tmp_path: Path) -> None:
    _, index = site
    cache = tmp_path / "cache"
    cache.write_text("not a folder")
    python = make_venv(tmp_path / "venv")
    system = str(system_file(tmp_path, ["v3"]))
    result = wheelwise(
        ["install", "--python", str(python), "-i", index, "--system", system, "app"], cache
    )
    assert result.returncode == 0, result.stderr
    assert installed(python) == INSTALLED
    said = [line for line in result.stderr.splitlines() if "cannot be the cache" in line]
    assert said == [
        f"wheelwise: warning: {cache}: cannot be the cache (not a folder); going on without "
        "one: set WHEELWISE_CACHE_DIR to a folder you can write, or give --no-cache"
    ]


# -- (f) no hash, no entry ---------------------------------------------------------------


def test_a_wheel_without_a_sha256_is_not_kept(tmp_path: Path) -> None:
    served = Site(build_files(tmp_path / "wheels", unhashed=["leaf-1.0-py3-none-any.whl"]))
    server = _Server(("127.0.0.1", 0), _Handler)
    server.site = served
    threading.Thread(target=server.serve_forever, daemon=True).start()
    index = f"http://127.0.0.1:{server.server_address[1]}/simple/"
    try:
        install(tmp_path, index, "one")
        assert "leaf-1.0-py3-none-any.whl" not in entries(tmp_path / "cache")
        assert "left-1.0-py3-none-any.whl" in entries(tmp_path / "cache")
        mark = served.mark()
        python = install(tmp_path, index, "two")
    finally:
        server.shutdown()
        server.server_close()
    assert wheel_gets(served.since(mark)) == ["leaf-1.0-py3-none-any.whl"]
    assert installed(python) == INSTALLED


# -- (g) a server that lies: the install fails, and nothing bad is kept ----------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "lie",
    [
        "/files/leaf-1.0-py3-none-any.whl",  # downloaded early, and for the install
        "/files/vpkg-1.0-py3-none-any-v4.whl",  # read for its variant.json while resolving
        "/files/right-2.0-py3-none-any.whl.metadata",
    ],
)
def test_bytes_that_do_not_match_the_page_fail_the_install_and_are_not_kept(
    lie: str, site: tuple[Site, str], tmp_path: Path
) -> None:
    served, index = site
    served.lies = {lie}
    cache = tmp_path / "cache"
    with pytest.raises((DownloadError, HashMismatch)) as caught:
        install(tmp_path, index, "one")
    message = str(caught.value)
    assert lie in message
    assert "sha256" in message
    kind = "metadata" if lie.endswith(".metadata") else "wheels"
    assert lie.rsplit("/", 1)[-1] not in entries(cache, kind)
    assert_entries_match_their_hash(cache)
    assert installed(make_venv(tmp_path / "untouched")) == []
    # The server mends its ways: the file is fetched (nothing bad was kept), and installs.
    served.lies = set()
    mark = served.mark()
    python = install(tmp_path, index, "two")
    assert installed(python) == INSTALLED
    fetched = wheel_gets(served.since(mark)) + metadata_gets(served.since(mark))
    assert lie.rsplit("/", 1)[-1] in fetched


@pytest.mark.slow
def test_the_cli_reports_a_lying_server_on_one_line(site: tuple[Site, str], tmp_path: Path) -> None:
    served, index = site
    served.lies = {"/files/leaf-1.0-py3-none-any.whl"}
    python = make_venv(tmp_path / "venv")
    system = str(system_file(tmp_path, ["v3"]))
    args = ["install", "--python", str(python), "-i", index, "--system", system, "app"]
    result = wheelwise(args, tmp_path / "cache")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("wheelwise: error: ")
    assert "leaf-1.0-py3-none-any.whl: sha256 mismatch" in line
    assert "leaf-1.0-py3-none-any.whl" not in entries(tmp_path / "cache")
    assert installed(python) == []


# -- the store itself ------------------------------------------------------------------


def test_the_store_keeps_files_by_hash_and_checks_them_on_reuse(tmp_path: Path) -> None:
    store = ContentStore(tmp_path / "wheels")
    data = b"wheel bytes"
    digest = _sha256(data)
    hashes = {"sha256": digest.upper()}  # pages may give upper-case hex
    assert store.lookup(hashes, "x-1.0-py3-none-any.whl") is None
    kept = store.store_bytes(hashes, "x-1.0-py3-none-any.whl", data)
    assert kept == tmp_path / "wheels" / "sha256" / digest[:2] / digest / "x-1.0-py3-none-any.whl"
    assert store.lookup(hashes, "x-1.0-py3-none-any.whl") == kept
    assert store.lookup(hashes, "x-1.0-py3-none-any.whl", size=len(data) + 1) is None
    assert not kept.exists()  # a wrong size is a bad entry: removed
    source = tmp_path / "download.whl"
    source.write_bytes(data)
    assert store.store_file(hashes, "x-1.0-py3-none-any.whl", source) == kept
    source.unlink()  # the entry does not depend on the downloaded file
    assert store.read(hashes, "x-1.0-py3-none-any.whl") == data
    kept.write_bytes(b"other bytes")
    assert store.read(hashes, "x-1.0-py3-none-any.whl") is None
    assert not kept.exists()


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_an_entry_that_is_no_regular_file_is_missing(kind: str, tmp_path: Path) -> None:
    """Not opened for reading (a FIFO would block the install): missing, until a
    download replaces it (a folder cannot be replaced: nothing is kept then)."""
    store = ContentStore(tmp_path / "wheels")
    hashes = {"sha256": _sha256(b"x")}
    path = store.path_for(hashes, "x.whl")
    assert path is not None
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    assert store.size(hashes, "x.whl") is None
    assert store.lookup(hashes, "x.whl") is None
    assert store.read(hashes, "x.whl") is None
    if kind == "fifo":
        assert store.store_bytes(hashes, "x.whl", b"x") == path
        assert store.lookup(hashes, "x.whl") == path
    else:
        assert store.store_bytes(hashes, "x.whl", b"x") is None
        assert path.is_dir()


@pytest.mark.parametrize(
    "hashes",
    [
        {},
        {"md5": "d41d8cd98f00b204e9800998ecf8427e"},
        {"sha1": "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {"sha256": "abc"},
        {"sha256": "zz" * 32},
    ],
)
def test_files_without_a_usable_strong_hash_are_not_kept(
    hashes: Mapping[str, str], tmp_path: Path
) -> None:
    store = ContentStore(tmp_path)
    assert store.store_bytes(hashes, "x.whl", b"data") is None
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["", ".", "..", "a/b.whl", "a\\b.whl", "../x.whl", "a\0.whl"])
def test_names_that_are_not_plain_file_names_are_not_kept(name: str, tmp_path: Path) -> None:
    store = ContentStore(tmp_path / "store")
    assert store.store_bytes({"sha256": _sha256(b"x")}, name, b"x") is None
    assert not (tmp_path / "store").exists()


@pytest.mark.slow
@settings(max_examples=200)
@given(
    st.dictionaries(
        st.sampled_from(["sha256", "SHA256", "sha512", "md5", "blake2b", "sha3_256", "x"]),
        st.text(alphabet="0123456789abcdefABCDEFxyz", max_size=130),
        max_size=3,
    )
)
def test_content_key_takes_only_well_formed_strong_digests(hashes: dict[str, str]) -> None:
    key = content_key(hashes)
    if key is not None:
        algorithm, digest = key
        assert len(digest) == hashlib.new(algorithm).digest_size * 2
        assert set(digest) <= set("0123456789abcdef")
        assert algorithm != "md5"


# -- Cache-Control ---------------------------------------------------------------------

LAST_MODIFIED = "Sat, 21 Nov 2026 10:00:00 GMT"


@pytest.mark.parametrize(
    ("headers", "store", "lifetime"),
    [
        ({}, True, 0),
        ({"cache-control": "max-age=600, public"}, True, 600),
        ({"cache-control": "public, MAX-AGE=600"}, True, 600),
        ({"cache-control": "max-age=600", "age": "100"}, True, 500),
        ({"cache-control": "max-age=600", "age": "9000"}, True, 0),
        ({"cache-control": 'max-age="60"'}, True, 60),
        ({"cache-control": "max-age=600, no-cache"}, True, 0),
        ({"cache-control": "max-age=600, must-revalidate"}, True, 600),
        ({"cache-control": "s-maxage=600"}, True, 0),
        ({"cache-control": "max-age=-1"}, True, 0),
        ({"cache-control": "max-age=1e3"}, True, 0),
        ({"cache-control": "max-age=600, max-age=5"}, True, 600),
        ({"cache-control": "max-age=99999999999999999999"}, True, 365 * 24 * 3600),
        ({"cache-control": "no-store"}, False, 0),
        ({"cache-control": "max-age=600, No-Store"}, False, 0),
        # No max-age but a Last-Modified date: the heuristic lifetime, as uv's.
        ({"last-modified": LAST_MODIFIED}, True, HEURISTIC_LIFETIME),
        ({"last-modified": LAST_MODIFIED, "cache-control": "public"}, True, HEURISTIC_LIFETIME),
        ({"last-modified": LAST_MODIFIED, "cache-control": "no-cache"}, True, 0),
        ({"last-modified": LAST_MODIFIED, "cache-control": "must-revalidate"}, True, 0),
        ({"last-modified": LAST_MODIFIED, "expires": LAST_MODIFIED}, True, 0),
        ({"last-modified": LAST_MODIFIED, "cache-control": "max-age=5"}, True, 5),
        ({"last-modified": LAST_MODIFIED, "cache-control": "no-store"}, False, 0),
        ({"etag": '"x"'}, True, 0),
    ],
)
def test_freshness_reads_cache_control(
    headers: dict[str, str], store: bool, lifetime: float
) -> None:
    assert freshness(headers) == (store, lifetime)


@pytest.mark.slow
@settings(max_examples=300)
@given(
    st.text(max_size=200)
    | st.lists(
        st.sampled_from(
            ["max-age=600", "max-age=", "no-cache", "no-store", "public", "=", ",", " ", "1", '"']
        ),
        max_size=8,
    ).map(", ".join),
    st.text(max_size=20),
    st.sampled_from([{}, {"last-modified": LAST_MODIFIED}, {"last-modified": "", "expires": "0"}]),
)
def test_freshness_never_raises_and_stays_in_bounds(
    cache_control: str, age: str, dates: dict[str, str]
) -> None:
    found = freshness({"cache-control": cache_control, "age": age, **dates})
    assert 0 <= found.lifetime <= 365 * 24 * 3600
    if not found.store:
        assert found.lifetime == 0


def test_entries_of_the_old_format_are_ignored(tmp_path: Path) -> None:
    cache = HttpCache(tmp_path)
    url = "https://example.invalid/simple/x/"
    entry = CachedResponse(url, JSON_PAGE, '"e"', None, b"{}", stored_at=1.0, lifetime=5.0)
    cache.put(url, PAGE_ACCEPT, entry)
    assert cache.get(url, PAGE_ACCEPT) == entry
    [path] = [p for p in tmp_path.rglob("*") if p.is_file()]
    header, _, body = path.read_bytes().partition(b"\n")
    old = json.loads(header)
    old["format"] = 1
    path.write_bytes(json.dumps(old).encode() + b"\n" + body)
    assert cache.get(url, PAGE_ACCEPT) is None


def test_an_entry_is_opened_without_its_body_and_checked_by_its_size(tmp_path: Path) -> None:
    cache = HttpCache(tmp_path)
    url = "https://example.invalid/simple/x/"
    entry = CachedResponse(url, JSON_PAGE, '"e"', None, b'{"a": 1}', stored_at=1.0, lifetime=5.0)
    cache.put(url, PAGE_ACCEPT, entry)
    stored = cache.open(url, PAGE_ACCEPT)
    assert stored is not None
    assert stored.response == entry._replace(body=b"")
    assert (stored.size, stored.stamp) == (8, body_stamp(entry.body))
    [path] = [p for p in tmp_path.rglob("*") if p.is_file()]
    # Another writer replaces the entry (by rename, as every writer of the cache does)
    # with one whose body is not the one its header describes.
    damaged = tmp_path / "damaged"
    damaged.write_bytes(path.read_bytes() + b"more")
    damaged.replace(path)
    assert stored.read_body() == entry.body  # what was opened stays readable
    assert cache.open(url, PAGE_ACCEPT) is None
    assert cache.get(url, PAGE_ACCEPT) is None


def test_a_revalidated_page_is_fresh_again(site: tuple[Site, str], tmp_path: Path) -> None:
    """A 304 renews the entry's lifetime: the page is not asked for again."""
    served, index = site
    served.page_headers = {"Cache-Control": "max-age=600"}
    source = IndexSource.index(index)
    fast = RetryPolicy(retries=0)
    with IndexClient(cache_dir=tmp_path / "http", retry=fast) as client:
        first = client.fetch_project(source, "leaf")
    with IndexClient(cache_dir=tmp_path / "http", retry=fast, revalidate=True) as client:
        assert client.fetch_project(source, "leaf") == first
    with IndexClient(cache_dir=tmp_path / "http", retry=fast) as client:
        assert client.fetch_project(source, "leaf") == first
    assert [(r.status, r.conditional) for r in served.log] == [(200, False), (304, True)]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


@pytest.mark.slow
@settings(max_examples=300)
@given(
    st.fixed_dictionaries(
        {"format": st.just(2), "request": st.just("https://example.invalid/simple/x/")},
        optional={
            key: _JSON | st.integers(min_value=10**300, max_value=10**330)
            for key in ("url", "content_type", "etag", "last_modified", "stored_at", "lifetime")
        },
    ),
    st.binary(max_size=50),
)
def test_any_entry_header_gives_an_entry_or_none(header: dict[str, object], body: bytes) -> None:
    """An entry's header line is untrusted: whatever it holds, reading it gives an
    entry or nothing, never an error."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        cache = HttpCache(Path(folder))
        url = "https://example.invalid/simple/x/"
        cache.put(url, PAGE_ACCEPT, CachedResponse(url, None, '"e"', None, b""))
        [path] = [p for p in Path(folder).rglob("*") if p.is_file()]
        path.write_bytes(json.dumps(header).encode() + b"\n" + body)
        found = cache.get(url, PAGE_ACCEPT)
        if found is not None:
            assert found.body == body
            assert isinstance(found.is_fresh(), bool)
            assert all(isinstance(v, str) for v in found.validators().values())


def test_a_changed_unpacked_entry_is_removed_and_made_again(
    site: tuple[Site, str], tmp_path: Path
) -> None:
    served, index = site
    first = install(tmp_path, index, "one")
    cache = tmp_path / "cache"
    module = next((cache / "unpacked").rglob("leaf/__init__.py"))
    # Edited in place through the first environment (a hard link: the same file).
    installed_copy = next((tmp_path / "one").rglob("site-packages/leaf/__init__.py"))
    assert os.path.samefile(module, installed_copy)
    with installed_copy.open("a") as stream:
        stream.write("# edited\n")
    mark = served.mark()
    python = install(tmp_path, index, "two")
    # The entry was dropped; the wheel kept in the cache is unpacked again.
    assert wheel_gets(served.since(mark)) == []
    assert installed(python) == INSTALLED
    fresh = next((tmp_path / "two").rglob("site-packages/leaf/__init__.py"))
    assert b"# edited" not in fresh.read_bytes()
    assert b"# edited" in installed_copy.read_bytes()  # the first one keeps its edit
    assert not os.path.samefile(fresh, installed_copy)
    assert os.path.samefile(fresh, next((cache / "unpacked").rglob("leaf/__init__.py")))
    assert installed(first) == INSTALLED
