"""A simple index that misbehaves on purpose, for the fault tests of whatever reads one.

:class:`FaultServer` (a threaded HTTP server on 127.0.0.1) serves a PEP 691 site
written by :func:`write_site` and breaks one kind of file (its *target*: ``page``,
``metadata``, ``variants`` or ``wheel``, see :func:`target_of`) in one way (its
*fault*, a ``fault_*`` method of :class:`FaultHandler`): a wrong hash, a truncated
body, persistent 5xx answers, no answer, response headers or a body that drip, a
reset connection, a gzip bomb, a body over its size or over a cap. Both can be
changed while it runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import struct
import sys
import threading
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from variantkit import level, variants_document, vpkg_wheel

JSON_PAGE = "application/vnd.pypi.simple.v1+json"
# The longest a fault keeps a connection busy (a hang, a drip): a client that waits
# for it to end has failed already.
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

    def __init__(self, site: Path, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), FaultHandler)
        self.site = site
        self.fault: str | None = None
        self.target: str | None = None
        self.stop = threading.Event()
        self.page_kind = JSON_PAGE
        # Requests received, by path (a deadline must not be paid twice).
        self.requests: Counter[str] = Counter()

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
        self.server.requests[path] += 1
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
    variants = variants_document({"v3": level("v3"), "v4": level("v4")})
    write_project(site, "vpkg", wheels, {"1.0": variants}, lying_metadata=lying_metadata)


def write_project(
    site: Path,
    project: str,
    wheels: Sequence[Path],
    variants_json: Mapping[str, bytes],
    *,
    lying_metadata: bool = False,
) -> None:
    """*project*'s JSON page listing *wheels* (each with its PEP 658 metadata) and,
    per version, the ``*-variants.json`` given; the root page lists it too."""
    files_dir = site / "files"
    files_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for wheel in wheels:
        data = wheel.read_bytes()
        (files_dir / wheel.name).write_bytes(data)
        with zipfile.ZipFile(wheel) as archive:
            name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            metadata = archive.read(name)
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
    for version, variants in variants_json.items():
        filename = f"{project}-{version}-variants.json"
        (files_dir / filename).write_bytes(variants)
        entries.append(
            {
                "filename": filename,
                "url": f"../../files/{filename}",
                "hashes": {"sha256": hashlib.sha256(variants).hexdigest()},
            }
        )
    page = site / "simple" / project
    page.mkdir(parents=True, exist_ok=True)
    document = {"meta": {"api-version": "1.1"}, "name": project, "files": entries}
    (page / "index.json").write_text(json.dumps(document))
    projects = sorted(p.name for p in (site / "simple").iterdir() if p.is_dir())
    root = {"meta": {"api-version": "1.1"}, "projects": [{"name": p} for p in projects]}
    (site / "simple" / "index.json").write_text(json.dumps(root))


def replace_file(site: Path, project: str, filename: str, data: bytes) -> None:
    """Serve *data* as *filename*, its page giving the new bytes' hash and size: an
    upstream that publishes a bad file consistently."""
    (site / "files" / filename).write_bytes(data)
    page = site / "simple" / project / "index.json"
    document = json.loads(page.read_text())
    for entry in document["files"]:
        if entry["filename"] == filename:
            entry["hashes"] = {"sha256": hashlib.sha256(data).hexdigest()}
            if "size" in entry:
                entry["size"] = len(data)
    page.write_text(json.dumps(document))


def serving(site: Path, fault: str | None, target: str | None, port: int = 0) -> FaultServer:
    server = FaultServer(site, port)
    server.fault, server.target = fault, target
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@contextlib.contextmanager
def fault_server(
    site: Path, fault: str | None = None, target: str | None = None, port: int = 0
) -> Iterator[FaultServer]:
    """:func:`serving` (on *port*, else a free one) until the block ends; then every
    fault in progress stops."""
    server = serving(site, fault, target, port)
    try:
        yield server
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()
