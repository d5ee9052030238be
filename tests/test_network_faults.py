"""``wheelwise install`` against an index that misbehaves on purpose.

One threaded HTTP server on 127.0.0.1 serves a PEP 691 site (a plain ``vpkg`` wheel,
two variant wheels, PEP 658 metadata, a ``*-variants.json``) and breaks one kind
of file in one way: a wrong hash, a truncated body, persistent 5xx answers, no
answer, response headers or a body that drip, a reset connection, a gzip bomb, a
body over its size or over a cap, metadata that lies about the wheel. Every case
must end with exit status 2, one ``wheelwise: error:`` line naming the broken URL,
within a bounded time, and the target environment exactly as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple

import pytest

from installkit import make_venv, tree_hash
from variantkit import level, system_file, variants_document, vpkg_wheel

JSON_PAGE = "application/vnd.pypi.simple.v1+json"
PAGE = "/simple/vpkg/"
# Fast failures: small per-read timeout and request deadline.
TIMEOUT = "1"
DEADLINE = "2"
# A run that fails must fail well within this (a hang is the failure mode).
BOUND = 60


def gzip_bomb(mib: int) -> bytes:
    """A valid gzip stream of *mib* MiB of zeros (about 1 KiB per MiB), made fast:
    one 16 MiB deflate segment, byte-aligned by a full flush, repeated."""
    segment = bytes(16 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = compressor.compress(segment) + compressor.flush(zlib.Z_FULL_FLUSH)
    count = mib // 16
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(segment, crc)
    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc, (count * len(segment)) & 0xFFFFFFFF)
    return header + block * count + end + trailer


@cache
def bomb() -> bytes:
    return gzip_bomb(1024 + 64)  # > 1 GiB decoded, about 1 MiB sent


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, site: Path) -> None:
        super().__init__(("127.0.0.1", 0), FaultHandler)
        self.site = site
        self.fault: str | None = None
        self.target: str | None = None
        self.stop = threading.Event()
        self.page_kind = JSON_PAGE

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that gives up on a fault resets the connection: expected here.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def target_of(path: str) -> str:
    if path.endswith("/"):
        return "page"
    if path.endswith(".metadata"):
        return "metadata"
    if path.endswith("-variants.json"):
        return "variants"
    return "wheel"


class FaultHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FaultServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        local = self.server.site / path.lstrip("/")
        if path.endswith("/"):
            local = local / "index.json"
        if not local.is_file():
            self._send(404, b"not found", "text/plain")
            return
        body = local.read_bytes()
        kind = self.server.page_kind if path.endswith("/") else "application/octet-stream"
        if target_of(path) != self.server.target or self.server.fault is None:
            self._send(200, body, kind)
            return
        getattr(self, "fault_" + self.server.fault.replace("-", "_"))(body, kind)

    def _send(
        self,
        status: int,
        body: bytes,
        kind: str,
        *,
        length: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        if length is not None or status != 200 or headers is None:
            self.send_header("Content-Length", str(len(body) if length is None else length))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    # -- faults ------------------------------------------------------------------------

    def fault_hash(self, body: bytes, kind: str) -> None:
        self._send(200, body[:-1] + bytes([body[-1] ^ 1]), kind)

    def fault_truncated(self, body: bytes, kind: str) -> None:
        self.close_connection = True
        self._send(200, body[: len(body) // 2], kind, length=len(body))

    def fault_5xx(self, body: bytes, kind: str) -> None:
        self._send(503, b"down for maintenance", "text/plain")

    def fault_hang(self, body: bytes, kind: str) -> None:
        self.close_connection = True
        self.server.stop.wait(BOUND)

    def fault_drip(self, body: bytes, kind: str) -> None:
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        for byte in body[: BOUND * 2]:
            if self.server.stop.wait(0.5):
                return
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:
                return

    def fault_header_drip(self, body: bytes, kind: str) -> None:
        # The status line, then one header byte every 0.5 s: each read gets a byte well
        # within --timeout, so only the request deadline can end it.
        self.close_connection = True
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            self.wfile.flush()
            for byte in b"X-Drip: " + b"a" * (BOUND * 2):
                if self.server.stop.wait(0.5):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        except OSError:
            return

    def fault_reset(self, body: bytes, kind: str) -> None:
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    def fault_gzip_bomb(self, body: bytes, kind: str) -> None:
        self._send(200, bomb(), kind, length=len(bomb()), headers={"Content-Encoding": "gzip"})

    def fault_oversize(self, body: bytes, kind: str) -> None:
        # Over a cap (pages, metadata), or over the size the page gives (wheels), with
        # no Content-Length: the body ends when the connection does.
        self.close_connection = True
        extra = {"page": 65 << 20, "metadata": 17 << 20}.get(target_of(self.path), 1 << 20)
        filler = b" " if target_of(self.path) == "page" else b"\0"
        self._send(200, b"", kind, headers={"Connection": "close"})
        self.wfile.write(body)
        chunk = filler * (1 << 20)
        for _ in range(extra >> 20):
            try:
                self.wfile.write(chunk)
            except OSError:
                return


def write_site(site: Path, *, lying_metadata: bool = False, lying_variants: bool = False) -> None:
    """The PEP 691 site: a plain wheel and the variants v3 and v4 (the machine of the
    tests is x86-64-v3: the v3 wheel is the one installed)."""
    wheels_dir = site.parent / "wheels"
    v3 = (
        vpkg_wheel(wheels_dir, label="v3", properties=level("v4"))
        if lying_variants
        else vpkg_wheel(wheels_dir, label="v3")
    )
    wheels = [vpkg_wheel(wheels_dir), v3, vpkg_wheel(wheels_dir, label="v4")]
    files_dir = site / "files"
    files_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for wheel in wheels:
        data = wheel.read_bytes()
        (files_dir / wheel.name).write_bytes(data)
        with zipfile.ZipFile(wheel) as archive:
            metadata = archive.read("vpkg-1.0.dist-info/METADATA")
        if lying_metadata:
            metadata = metadata.replace(
                b"Version: 1.0", b'Version: 1.0\nRequires-Dist: absent; python_version < "3"'
            )
        (files_dir / f"{wheel.name}.metadata").write_bytes(metadata)
        entries.append(
            {
                "filename": wheel.name,
                "url": f"../../files/{wheel.name}",
                "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                "size": len(data),
                "core-metadata": {"sha256": hashlib.sha256(metadata).hexdigest()},
            }
        )
    variants = variants_document({"v3": level("v3"), "v4": level("v4")})
    (files_dir / "vpkg-1.0-variants.json").write_bytes(variants)
    entries.append(
        {
            "filename": "vpkg-1.0-variants.json",
            "url": "../../files/vpkg-1.0-variants.json",
            "hashes": {"sha256": hashlib.sha256(variants).hexdigest()},
        }
    )
    page = site / "simple" / "vpkg"
    page.mkdir(parents=True, exist_ok=True)
    document = {"meta": {"api-version": "1.1"}, "name": "vpkg", "files": entries}
    (page / "index.json").write_text(json.dumps(document))


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("faults") / "venv")


def serving(site: Path, fault: str | None, target: str | None) -> FaultServer:
    server = FaultServer(site)
    server.fault, server.target = fault, target
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Run:
    def __init__(self, result: subprocess.CompletedProcess[str], peak_rss_kib: int) -> None:
        self.code = result.returncode
        self.out = result.stdout
        self.err = result.stderr
        self.peak_rss_kib = peak_rss_kib


def install(
    tmp_path: Path, python: Path, base: str, *args: str, env: Mapping[str, str] | None = None
) -> Run:
    """``wheelwise install vpkg`` from *base* (its own cache, no proxy), with its peak
    memory (max RSS of the child, in KiB)."""
    full = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WHEELWISE_") and k.lower() not in ("http_proxy", "https_proxy")
    }
    full.update(WHEELWISE_CACHE_DIR=str(tmp_path / "cache"), NO_PROXY="*", COLUMNS="300")
    full.update(env or {})
    argv = [sys.executable, "-m", "wheelwise", "install", "--python", str(python)]
    argv += ["--index-url", f"{base}/simple/", "--system", str(system_file(tmp_path, ["v3"]))]
    argv += ["--timeout", TIMEOUT, "--retries", "1", *args, "vpkg"]
    # Measured in a child of its own: RUSAGE_CHILDREN is the peak of any child so far.
    probe = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr)\n"
        "sys.stderr.write('\\nRSS %d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(r.returncode)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        text=True,
        env=full,
        timeout=BOUND,
        check=False,
    )
    err, _, rss = result.stderr.rpartition("\nRSS ")
    result.stderr = err
    return Run(result, int(rss))


def site_packages(python: Path) -> Path:
    return next(python.parent.parent.glob("lib/python3*/site-packages"))


CASES = [
    ("hash", "metadata"),
    ("hash", "variants"),
    ("hash", "wheel"),
    ("truncated", "page"),
    ("truncated", "metadata"),
    ("truncated", "wheel"),
    ("5xx", "page"),
    ("5xx", "variants"),
    ("5xx", "wheel"),
    ("hang", "page"),
    ("hang", "wheel"),
    ("drip", "page"),
    ("drip", "metadata"),
    ("drip", "variants"),
    ("drip", "wheel"),
    ("header-drip", "page"),
    ("header-drip", "wheel"),
    ("reset", "page"),
    ("reset", "wheel"),
    ("gzip-bomb", "page"),
    ("gzip-bomb", "metadata"),
    ("gzip-bomb", "variants"),
    ("gzip-bomb", "wheel"),
    ("oversize", "page"),
    ("oversize", "metadata"),
    ("oversize", "wheel"),
    ("lying", "metadata"),
    ("lying", "variants"),
]
# What the one error line says besides the URL (the limit, where there is one).
SAYS = {
    "drip": f"{DEADLINE} s",
    "header-drip": f"{DEADLINE} s",
    "gzip-bomb": "once decoded",
    "oversize": "",
    "hang": f"{TIMEOUT} s",
    "truncated": "complete message body",
}


def urls_of(base: str, target: str) -> list[str]:
    if target == "page":
        return [f"{base}{PAGE}"]
    if target == "variants":
        return [f"{base}/files/vpkg-1.0-variants.json"]
    names = [f"vpkg-1.0-py3-none-any{s}.whl" for s in ("", "-v3", "-v4")]
    suffix = ".metadata" if target == "metadata" else ""
    return [f"{base}/files/{name}{suffix}" for name in names]


class Outcome(NamedTuple):
    run: Run
    base: str
    before: str
    after: str
    seconds: float


def run_case(fault: str, target: str, root: Path) -> Outcome:
    root.mkdir()
    site = root / "site"
    write_site(
        site,
        lying_metadata=(fault, target) == ("lying", "metadata"),
        lying_variants=(fault, target) == ("lying", "variants"),
    )
    python = make_venv(root / "venv")
    before = tree_hash(python.parent.parent)
    server = serving(site, None if fault == "lying" else fault, target)
    started = time.monotonic()
    try:
        run = install(root, python, server.base, "--request-deadline", DEADLINE)
    finally:
        seconds = time.monotonic() - started
        server.stop.set()
        server.shutdown()
        server.server_close()
    return Outcome(run, server.base, before, tree_hash(python.parent.parent), seconds)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Outcome]:
    """Every case, run at once: most of their time is spent waiting for timeouts."""
    root = tmp_path_factory.mktemp("matrix")
    bomb()  # made before any server needs it
    with ThreadPoolExecutor(8) as pool:
        futures = {case: pool.submit(run_case, *case, root / "-".join(case)) for case in CASES}
        results = {case: future.result() for case, future in futures.items()}
    report = os.environ.get("FAULT_MATRIX_REPORT")  # docs/reliability.md's table
    if report:
        rows = [
            {
                "fault": fault,
                "target": target,
                "exit": outcome.run.code,
                "stderr": outcome.run.err.strip(),
                "seconds": round(outcome.seconds, 1),
                "peak_rss_mib": outcome.run.peak_rss_kib // 1024,
                "tree_unchanged": outcome.before == outcome.after,
            }
            for (fault, target), outcome in results.items()
        ]
        Path(report).write_text(json.dumps(rows, indent=1))
    return results


@pytest.mark.parametrize(("fault", "target"), CASES, ids=[f"{f}-{t}" for f, t in CASES])
def test_a_misbehaving_index_fails_cleanly(
    fault: str, target: str, outcomes: dict[tuple[str, str], Outcome]
) -> None:
    run, base, before, after, _ = outcomes[fault, target]
    assert run.code == 2, run.err
    lines = run.err.strip().splitlines()
    errors = [line for line in lines if line.startswith("wheelwise: error: ")]
    assert len(errors) == 1, run.err
    [line] = errors
    assert "Traceback" not in run.err
    assert any(url in line for url in urls_of(base, target)), line
    assert SAYS.get(fault, "") in line
    if "drip" in fault:
        assert "--request-deadline" in line
    if fault == "truncated":
        assert "cannot connect" not in line  # it connected: the body was cut short
    assert after == before


def test_the_undisturbed_site_installs(tmp_path: Path) -> None:
    """The control case: the same site and options, no fault, installs the v3 wheel."""
    python = make_venv(tmp_path / "venv")
    site = tmp_path / "site"
    write_site(site)
    server = serving(site, None, None)
    try:
        run = install(tmp_path, python, server.base, "--request-deadline", DEADLINE)
    finally:
        server.shutdown()
        server.server_close()
    assert run.code == 0, run.err
    assert "VARIANT = 'v3'" in (site_packages(python) / "vpkg" / "__init__.py").read_text()


@pytest.mark.parametrize("fault", ["drip", "header-drip"])
def test_a_dripping_page_stops_at_the_deadline(fault: str, venv: Path, tmp_path: Path) -> None:
    """1 byte every 0.5 s (of the body, or of the response headers), never ending: the
    deadline (here from the environment) ends it with one line naming the URL, the
    limit and how to raise it."""
    site = tmp_path / "site"
    write_site(site)
    before = tree_hash(venv.parent.parent)
    server = serving(site, fault, "page")
    started = time.monotonic()
    try:
        run = install(tmp_path, venv, server.base, env={"WHEELWISE_REQUEST_DEADLINE": "1.5"})
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()
    assert time.monotonic() - started < BOUND
    assert run.code == 2, run.err
    [line] = run.err.strip().splitlines()
    assert line.startswith(f"wheelwise: error: {server.base}{PAGE}: ")
    assert "1.5 s" in line
    assert "--request-deadline" in line
    assert tree_hash(venv.parent.parent) == before


def test_a_gzip_bomb_page_is_refused_in_little_memory(venv: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_site(site)
    server = serving(site, "gzip-bomb", "page")
    try:
        run = install(tmp_path, venv, server.base)
    finally:
        server.shutdown()
        server.server_close()
    assert run.code == 2, run.err
    [line] = run.err.strip().splitlines()
    assert line.startswith(f"wheelwise: error: {server.base}{PAGE}: ")
    assert "64 MiB" in line
    assert 0 < run.peak_rss_kib < 400 << 10  # the probe saw the child, which stayed small


@pytest.fixture
def served_page(tmp_path: Path) -> Iterator[tuple[FaultServer, Path]]:
    site = tmp_path / "site"
    write_site(site)
    server = serving(site, None, None)
    try:
        yield server, site
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("form", ["json", "html"])
def test_an_unparseable_link_is_skipped_with_a_warning(
    form: str, served_page: tuple[FaultServer, Path], tmp_path: Path
) -> None:
    """``http://[::1/x.whl`` (and a link that cannot be joined to the page) is left
    out with a warning, as pip does, when its version is looked at; the other files
    install."""
    server, site = served_page
    page = site / "simple" / "vpkg" / "index.json"
    document = json.loads(page.read_text())
    bad = ["http://[::1/vpkg-1.0-py2-none-any.whl", "//[::1/vpkg-1.0-py2.py3-none-any.whl"]
    if form == "json":
        bad_files = [{"filename": link.rsplit("/", 1)[1], "url": link} for link in bad]
        document["files"][:0] = bad_files
        page.write_text(json.dumps(document))
    else:
        page.unlink()
        anchors = [f'<a href="{link}">x</a>' for link in bad]
        for entry in document["files"]:
            digest = entry["hashes"]["sha256"]
            meta = entry.get("core-metadata")
            extra = f' data-core-metadata="sha256={meta["sha256"]}"' if meta else ""
            anchors.append(f'<a href="{entry["url"]}#sha256={digest}"{extra}>x</a>')
        (page.parent / "index.json").write_text("<html><body>" + "".join(anchors) + "</body>")
        server.page_kind = "text/html"
    python = make_venv(tmp_path / "venv")
    run = install(tmp_path, python, server.base)
    assert run.code == 0, run.err
    warnings = [line for line in run.err.splitlines() if line.startswith("wheelwise: warning: ")]
    assert len(warnings) == 2, run.err
    for link, warning in zip(bad, warnings, strict=True):
        assert f"{server.base}{PAGE}" in warning
        assert repr(link) in warning
    assert "VARIANT = 'v3'" in (site_packages(python) / "vpkg" / "__init__.py").read_text()
