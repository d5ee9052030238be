"""``wheelwise index serve``: the simple API, live, from a wheel directory (ASGI).

Routes (the static site's layout, see :mod:`wheelwise.publish.pages`):

* ``GET /simple/`` and ``GET /simple/<project>/``: negotiated (PEP 691): PEP 691
  JSON, PEP 691 HTML or ``text/html``; 406 when none is acceptable; a
  non-normalized project name redirects to the normalized one. ETags, 304.
* ``GET /files/<project>/<file>``: a wheel or sdist, ``<wheel>.metadata`` or a
  release's ``*-variants.json``. Single byte ranges (206 / 416), ETags, 304. Only
  files of the catalog are served: a path is never built from the URL.
* ``POST /`` or ``/legacy/``: uploads (:mod:`wheelwise.publish.upload`).

Files are looked up in the catalog of the directory (:mod:`wheelwise.publish.live`),
rescanned when the directory changes.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import anyio.to_thread
from packaging.utils import canonicalize_name
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Message, Receive

from wheelwise.publish.distfiles import WHEEL, DistFile
from wheelwise.publish.errors import UploadRejected
from wheelwise.publish.http import UNSATISFIABLE, ByteRange, etag_for, none_match, parse_range
from wheelwise.publish.live import LiveCatalog, Page, Snapshot
from wheelwise.publish.negotiation import OFFERS, TEXT_HTML, choose, from_format
from wheelwise.publish.pages import METADATA_SUFFIX
from wheelwise.publish.upload import check_credentials, store_upload

_CHUNK = 256 * 1024
# No single file is larger (see wheels.archive.MAX_MEMBER_BYTES); uploads above are refused.
MAX_UPLOAD_BYTES = 8 << 30
_PAGE_CACHE = "no-cache"
_FILE_CACHE = "public, max-age=31536000, immutable"


class _BodyTooLarge(Exception):
    """More request body than the upload limit."""


def _limited(receive: Receive, limit: int) -> Receive:
    """*receive*, raising _BodyTooLarge once more than *limit* body bytes came: a
    chunked upload has no Content-Length to check beforehand."""
    received = 0

    async def counting() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise _BodyTooLarge
        return message

    return counting


def _text(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return PlainTextResponse(message.rstrip("\n") + "\n", status_code=status, headers=headers)


def _content_type(media_type: str) -> str:
    return "text/html; charset=utf-8" if media_type == TEXT_HTML else media_type


class IndexApp:
    """The endpoints, around one :class:`LiveCatalog`."""

    def __init__(
        self,
        directory: Path,
        *,
        upload_token: str | None,
        recheck_interval: float,
        max_upload_bytes: int = MAX_UPLOAD_BYTES,
    ) -> None:
        self.live = LiveCatalog(directory, recheck_interval=recheck_interval)
        self.upload_token = upload_token
        self.max_upload_bytes = max_upload_bytes
        self.upload_lock = threading.Lock()

    async def snapshot(self) -> Snapshot:
        snapshot = self.live.fresh()
        if snapshot is None:
            snapshot = await anyio.to_thread.run_sync(self.live.refresh)
        return snapshot

    # -- pages ---------------------------------------------------------------------

    def _negotiate(self, request: Request) -> str | Response:
        requested = request.query_params.get("format")
        media = from_format(requested) if requested is not None else None
        if requested is None:
            media = choose(request.headers.get("accept"))
        if media is None:
            return _text(406, "not acceptable; this index offers " + ", ".join(OFFERS))
        return media

    def _page(self, request: Request, page: Page, media: str) -> Response:
        headers = {"ETag": page.etag, "Vary": "Accept", "Cache-Control": _PAGE_CACHE}
        if none_match(request.headers.get("if-none-match"), page.etag):
            return Response(status_code=304, headers=headers)
        headers["Content-Type"] = _content_type(media)
        if request.method == "HEAD":
            headers["Content-Length"] = str(len(page.body))
            return Response(b"", headers=headers)
        return Response(page.body, headers=headers)

    async def root(self, request: Request) -> Response:
        if request.method == "POST":
            return await self.upload(request)
        return RedirectResponse("/simple/", status_code=301)

    async def simple(self, request: Request) -> Response:
        media = self._negotiate(request)
        if isinstance(media, Response):
            return media
        snapshot = await self.snapshot()
        return self._page(request, snapshot.page(None, media), media)

    async def project(self, request: Request) -> Response:
        name = request.path_params["project"]
        normalized = canonicalize_name(name)
        if normalized != name or not request.url.path.endswith("/"):
            query = f"?{request.url.query}" if request.url.query else ""
            return RedirectResponse(f"/simple/{normalized}/{query}", status_code=301)
        media = self._negotiate(request)
        if isinstance(media, Response):
            return media
        snapshot = await self.snapshot()
        entry = snapshot.catalog.projects.get(name)
        if entry is None:
            return _text(404, f"no project {name!r} on this index")
        if entry.problems:
            return _text(500, f"{name} cannot be served:\n" + "\n".join(entry.problems))
        return self._page(request, snapshot.page(name, media), media)

    # -- files ---------------------------------------------------------------------

    async def file(self, request: Request) -> Response:
        project, filename = request.path_params["project"], request.path_params["filename"]
        snapshot = await self.snapshot()
        found = self._lookup(snapshot, project, filename)
        if isinstance(found, DistFile) and not self._on_disk(found):
            # Changed or removed since the last scan: look again.
            snapshot = await anyio.to_thread.run_sync(self.live.refresh)
            found = self._lookup(snapshot, project, filename)
            if isinstance(found, DistFile) and not self._on_disk(found):
                found = None
        if found is None:
            return _text(404, f"no file {filename!r} for project {project!r} on this index")
        if isinstance(found, DistFile):
            path = self.live.directory / found.filename
            return await send_file(request, found.size, found.sha256, path, _dist_type(found))
        data, digest, media, cache = found
        return await send_file(request, len(data), digest, data, media, cache=cache)

    def _lookup(
        self, snapshot: Snapshot, project: str, filename: str
    ) -> DistFile | tuple[bytes, str, str, str] | None:
        catalog = snapshot.catalog
        dist = catalog.by_filename.get(filename)
        if dist is not None and dist.project == project:
            return dist
        if filename.endswith(METADATA_SUFFIX):
            wheel = catalog.by_filename.get(filename[: -len(METADATA_SUFFIX)])
            if wheel is not None and wheel.project == project and wheel.kind == WHEEL:
                data = snapshot.metadata.get(wheel.filename)
                if data is not None and wheel.metadata_sha256 is not None:
                    return data, wheel.metadata_sha256, "text/plain; charset=utf-8", _FILE_CACHE
        variants = snapshot.variants_file(project, filename)
        if variants is not None:
            return variants.data, variants.sha256, "application/json", _PAGE_CACHE
        return None

    def _on_disk(self, dist: DistFile) -> bool:
        try:
            return dist.same_stat((self.live.directory / dist.filename).stat())
        except OSError:
            return False

    # -- uploads ---------------------------------------------------------------------

    async def upload(self, request: Request) -> Response:
        try:
            check_credentials(request.headers.get("authorization"), self.upload_token)
        except UploadRejected as exc:
            headers = {"WWW-Authenticate": 'Basic realm="wheelwise"'} if exc.status == 401 else {}
            return _text(exc.status, exc.message, headers)
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            return _text(400, "expected a multipart/form-data upload (as twine sends)")
        too_large = _text(413, f"upload larger than {self.max_upload_bytes} bytes")
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_upload_bytes:
            return too_large
        request = Request(request.scope, _limited(request.receive, self.max_upload_bytes))
        try:
            async with request.form(max_files=8, max_fields=1000) as form:
                content = form.get("content")
                if not isinstance(content, UploadFile) or content.filename is None:
                    return _text(400, "no 'content' file part in the upload")
                fields = {key: value for key, value in form.multi_items() if isinstance(value, str)}
                store = functools.partial(
                    store_upload,
                    self.live,
                    filename=content.filename,
                    fields=fields,
                    content=content.file,
                    lock=self.upload_lock,
                )
                uploaded = await anyio.to_thread.run_sync(store)
        except _BodyTooLarge:
            return too_large  # the parts received so far were spooled, never published
        except MultiPartException as exc:
            return _text(400, f"malformed multipart upload: {exc.message}")
        except UploadRejected as exc:
            return _text(exc.status, exc.message)
        if not uploaded.created:
            return _text(200, f"{uploaded.filename} is already published with this content")
        return _text(200, f"published {uploaded.filename}")


async def send_file(
    request: Request,
    size: int,
    digest: str,
    body: bytes | Path,
    media: str,
    *,
    cache: str = _FILE_CACHE,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """*body* (bytes, or a file streamed from disk) with ETag, 304 and single byte
    ranges (206 / 416); *headers* are added to every answer."""
    etag = etag_for(digest)
    answer = {**(headers or {}), "ETag": etag, "Accept-Ranges": "bytes", "Cache-Control": cache}
    if none_match(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=answer)
    answer["Content-Type"] = media
    wanted = parse_range(
        request.headers.get("range"), size, if_range=request.headers.get("if-range"), etag=etag
    )
    if wanted is UNSATISFIABLE:
        answer["Content-Range"] = UNSATISFIABLE.content_range(size)
        return _text(416, f"range not satisfiable: the file has {size} bytes", answer)
    status, start, length = 200, 0, size
    if isinstance(wanted, ByteRange):
        status, start, length = 206, wanted.start, wanted.length
        answer["Content-Range"] = wanted.content_range(size)
    answer["Content-Length"] = str(length)
    if request.method == "HEAD":
        return Response(b"", status_code=status, headers=answer)
    if isinstance(body, bytes):
        return Response(body[start : start + length], status_code=status, headers=answer)
    try:
        stream = await anyio.to_thread.run_sync(body.open, "rb")
    except OSError:
        return _text(404, f"{body.name} is gone")
    return StreamingResponse(_read(stream, start, length), status_code=status, headers=answer)


def _dist_type(dist: DistFile) -> str:
    return "application/octet-stream" if dist.kind == WHEEL else "application/gzip"


def _read(stream: BinaryIO, start: int, length: int) -> Iterator[bytes]:
    try:
        stream.seek(start)
        remaining = length
        while remaining > 0:
            chunk = stream.read(min(_CHUNK, remaining))
            if not chunk:
                return
            remaining -= len(chunk)
            yield chunk
    finally:
        stream.close()


def create_app(
    directory: Path,
    *,
    upload_token: str | None = None,
    recheck_interval: float = 2.0,
    max_upload_bytes: int = MAX_UPLOAD_BYTES,
) -> Starlette:
    """The ASGI application serving *directory*; uploads (request bodies) above
    *max_upload_bytes* are refused (413)."""
    if not directory.is_dir():
        raise NotADirectoryError(f"{directory}: not a directory")
    app = IndexApp(
        directory,
        upload_token=upload_token,
        recheck_interval=recheck_interval,
        max_upload_bytes=max_upload_bytes,
    )
    read = ["GET", "HEAD"]
    routes = [
        Route("/", app.root, methods=[*read, "POST"]),
        Route("/legacy/", app.upload, methods=["POST"]),
        Route("/legacy", app.upload, methods=["POST"]),
        Route("/simple/", app.simple, methods=read),
        Route("/simple/{project}/", app.project, methods=read),
        Route("/simple/{project}", app.project, methods=read),
        Route("/files/{project}/{filename}", app.file, methods=read),
    ]
    return Starlette(routes=routes)


def serve(directory: Path, *, host: str, port: int, upload_token: str | None = None) -> None:
    """Run the server until interrupted (uvicorn logs its start-up lines to stderr;
    tests/test_index_peers.py runs it as a subprocess)."""
    import uvicorn

    uvicorn.run(
        create_app(directory, upload_token=upload_token),
        host=host,
        port=port,
        access_log=False,
        lifespan="off",
        server_header=False,
    )
