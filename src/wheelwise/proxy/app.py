"""``wheelwise proxy``: the Simple API of upstream indexes, one plain wheel per build.

Routes, for the default machine at ``/`` and for each profile under ``/p/<name>/``:

* ``simple/`` and ``simple/<project>/``: PEP 503 HTML or PEP 691 JSON (negotiated,
  ``?format=``), ETag and 304, ``Vary: Accept``. Each rewritten wheel's link carries
  why it was chosen (an HTML comment, ``_wheelwise`` in JSON); the page's
  ``Wheelwise-Why`` header points at the explanation.
* ``files/<project>/<key>/<filename>`` (and ``.metadata``): the file, streamed from
  the store, with ranges; immutable, as the key names its content. A rewritten wheel
  says its build in ``Wheelwise-Build`` and ``Wheelwise-Why``.
* ``why/<project>/``: every release's choice for this machine, as text.

Upstream trouble is a 502 (504 when it is slow) with a one-line message, for that
request only; nothing is cached from a failed fetch. A page read before is given
again instead, saying why in ``Wheelwise-Stale``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import BinaryIO, TypeVar

import anyio.to_thread
from packaging.utils import InvalidName, canonicalize_name
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from wheelwise.proxy.choice import Passthrough, ProjectView, Rewrite
from wheelwise.proxy.errors import NotFound, ProxyError, StreamCut
from wheelwise.proxy.machines import Machine
from wheelwise.proxy.service import METADATA_SUFFIX, Proxy
from wheelwise.proxy.stream import Growing, Progress
from wheelwise.proxy.why import explain
from wheelwise.publish.http import etag_for, none_match
from wheelwise.publish.negotiation import JSON_V1, OFFERS, TEXT_HTML, choose, from_format
from wheelwise.publish.pages import Urls, links_html, links_json, root_html, root_json
from wheelwise.publish.server import send_file

__all__ = ["create_app"]

# Pages change with the upstream: a cache keeps them but asks again (ETag) each time.
PAGE_CACHE = "public, no-cache"
FILE_CACHE = "public, max-age=31536000, immutable"
ERROR_CACHE = "no-store"
_HEADER_LIMIT = 2000
# Longer than any project's name on PyPI (and a page URL of it would be absurd).
_NAME_LIMIT = 256
T = TypeVar("T")


def _text(status: int, message: str, cache: str = ERROR_CACHE) -> Response:
    headers = {"Cache-Control": cache}
    return PlainTextResponse(message.rstrip("\n") + "\n", status_code=status, headers=headers)


def header_value(text: str) -> str:
    """*text* as a header value: one line of printable ASCII, bounded."""
    flat = " ".join(text.split())
    value = flat.encode("ascii", "backslashreplace").decode("ascii")
    return value if len(value) <= _HEADER_LIMIT else value[: _HEADER_LIMIT - 3] + "..."


class ProxyApp:
    def __init__(self, proxy: Proxy, stream_after: float) -> None:
        self.proxy = proxy
        self.stream_after = stream_after

    def _machine(self, request: Request) -> Machine:
        profile = request.path_params.get("profile")
        machine = self.proxy.machines.get(profile)
        if machine is None:
            known = ", ".join(sorted(name for name in self.proxy.machines if name)) or "none"
            raise NotFound(f"no profile {profile!r} on this proxy (profiles: {known})")
        return machine

    @staticmethod
    def _project(request: Request) -> str:
        """The path's project name, refused unless it can be one (PEP 508): nothing
        else is worth asking the upstreams about."""
        name: str = request.path_params["project"]
        valid = len(name) <= _NAME_LIMIT
        if valid:
            try:
                canonicalize_name(name, validate=True)
            except InvalidName:
                valid = False
        if not valid:
            shown = name if len(name) <= 60 else name[:60] + "..."
            raise NotFound(f"{shown!r} is not a project name (PEP 508)")
        return name

    async def _run(self, call: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(call)

    @staticmethod
    def _negotiate(request: Request) -> str | Response:
        requested = request.query_params.get("format")
        media = (
            from_format(requested)
            if requested is not None
            else choose(request.headers.get("accept"))
        )
        if media is None:
            return _text(406, "not acceptable; this index offers " + ", ".join(OFFERS))
        return media

    def _page(self, request: Request, body: bytes, media: str, headers: dict[str, str]) -> Response:
        etag = etag_for(hashlib.sha256(body).hexdigest()[:40])
        headers = {**headers, "ETag": etag, "Vary": "Accept", "Cache-Control": PAGE_CACHE}
        if none_match(request.headers.get("if-none-match"), etag):
            return Response(status_code=304, headers=headers)
        headers["Content-Type"] = "text/html; charset=utf-8" if media == TEXT_HTML else media
        if request.method == "HEAD":
            headers["Content-Length"] = str(len(body))
            return Response(b"", headers=headers)
        return Response(body, headers=headers)

    async def root(self, request: Request) -> Response:
        return RedirectResponse(f"{_prefix(request)}/simple/", status_code=301)

    async def simple(self, request: Request) -> Response:
        machine = self._machine(request)
        media = self._negotiate(request)
        if isinstance(media, Response):
            return media
        names = await self._run(self.proxy.project_names)
        body = root_json(names) if media == JSON_V1 else root_html(names, Urls())
        return self._page(request, body, media, {"Wheelwise-Machine": header_value(machine.name)})

    async def project(self, request: Request) -> Response:
        machine = self._machine(request)
        name = self._project(request)
        normalized = canonicalize_name(name)
        if normalized != name or not request.url.path.endswith("/"):
            query = f"?{request.url.query}" if request.url.query else ""
            return RedirectResponse(
                f"{_prefix(request)}/simple/{normalized}/{query}", status_code=301
            )
        media = self._negotiate(request)
        if isinstance(media, Response):
            return media
        view = await self._run(lambda: self.proxy.view(machine, name))
        links = await self._run(lambda: self.proxy.links(view))
        if media == JSON_V1:
            body = links_json(view.name, view.versions, links)
        else:
            body = links_html(view.name, links)
        headers = {
            "Wheelwise-Machine": header_value(machine.name),
            "Wheelwise-Why": f"{_prefix(request)}/why/{name}/",
            "Wheelwise-Builds": header_value(_newest_builds(view)),
        }
        if view.stale is not None:
            headers["Wheelwise-Stale"] = header_value(view.stale)
        return self._page(request, body, media, headers)

    async def file(self, request: Request) -> Response:
        machine = self._machine(request)
        project = self._project(request)
        key, filename = request.path_params["key"], request.path_params["filename"]
        metadata = filename.endswith(METADATA_SUFFIX)
        wanted = filename[: -len(METADATA_SUFFIX)] if metadata else filename
        entry = await self._run(lambda: self.proxy.entry(machine, project, key, wanted))
        headers = {}
        if isinstance(entry, Rewrite):
            headers["Wheelwise-Build"] = header_value(
                f"variant {entry.label} of {entry.source.filename}"
            )
            headers["Wheelwise-Why"] = header_value(entry.why)
        if metadata:
            data = await self._run(lambda: self.proxy.metadata(entry))
            digest = hashlib.sha256(data).hexdigest()
            media = "text/plain; charset=utf-8"
            return await send_file(
                request, len(data), digest, data, media, cache=FILE_CACHE, headers=headers
            )
        media = "application/octet-stream"
        if not filename.endswith(".whl"):
            media = "application/gzip" if filename.endswith(".gz") else media
        found = await self._run(lambda: self.proxy.file_or_growing(entry))
        if isinstance(found, Growing):
            # A HEAD, a range or a revalidation needs the finished file's size and hash.
            whole = request.method == "HEAD" or any(
                name in request.headers for name in ("range", "if-none-match")
            )
            progress = await _started(found, self.stream_after, finished=whole)
            if progress.error is not None:
                raise progress.error
            if progress.stored is None:
                headers.update({"Content-Type": media, "Cache-Control": FILE_CACHE})
                if isinstance(entry, Passthrough) and entry.file.size is not None:
                    headers["Content-Length"] = str(entry.file.size)
                return StreamingResponse(_follow(found, progress, filename), headers=headers)
            found = progress.stored
        stored = found
        return await send_file(
            request,
            stored.size,
            stored.sha256,
            stored.path,
            media,
            cache=FILE_CACHE,
            headers=headers,
        )

    async def why(self, request: Request) -> Response:
        machine = self._machine(request)
        project = canonicalize_name(self._project(request))
        view = await self._run(lambda: self.proxy.view(machine, project))
        body = explain(view, machine).encode("utf-8")
        return self._page(request, body, "text/plain; charset=utf-8", {})


# A file built within this time is sent whole, with its size and hash (and a failure
# is a clean 502); a slower one is sent as it grows, long before a client's read
# timeout (pip's is 15 s).
STREAM_AFTER_SECONDS = 2.0
# How often a request for a file being built looks at how far it is.
_POLL_SECONDS = 0.05
_READ_CHUNK = 1 << 20


async def _started(growing: Growing, stream_after: float, *, finished: bool) -> Progress:
    """*growing*'s progress once it is done or has failed or, unless *finished*, once
    it has taken *stream_after* seconds and has bytes to send."""
    stream_from = time.monotonic() + stream_after
    while True:
        progress = growing.progress()
        if progress.error is not None or progress.stored is not None:
            return progress
        if not finished and progress.available > 0 and time.monotonic() >= stream_from:
            return progress
        await anyio.sleep(_POLL_SECONDS)


async def _follow(growing: Growing, first: Progress, filename: str) -> AsyncIterator[bytes]:
    """The bytes of *growing* (the file *filename*) as they become final, to its end."""
    sent = 0
    stream: BinaryIO | None = None
    try:
        while True:
            progress = growing.progress()
            if progress.generation != first.generation and sent:
                why = progress.error.message if progress.error else "its download started again"
                raise StreamCut(f"cut the response sending {filename}: {why}")
            end = progress.stored.size if progress.stored is not None else progress.available
            if sent >= end:
                if progress.stored is not None:
                    return
                await anyio.sleep(_POLL_SECONDS)
                continue
            if stream is None:
                path = progress.stored.path if progress.stored is not None else progress.path
                assert path is not None
                try:
                    stream = await anyio.to_thread.run_sync(path.open, "rb")
                except FileNotFoundError:  # published meanwhile: the next look finds it
                    await anyio.sleep(_POLL_SECONDS)
                    continue
            chunk = await anyio.to_thread.run_sync(_read_at, stream, sent, end - sent)
            if not chunk:
                raise StreamCut(
                    f"cut the response sending {filename}: {path} is shorter than offered"
                )
            sent += len(chunk)
            yield chunk
    finally:
        if stream is not None:
            stream.close()


def _read_at(stream: BinaryIO, offset: int, most: int) -> bytes:
    stream.seek(offset)
    return stream.read(min(most, _READ_CHUNK))


def _prefix(request: Request) -> str:
    profile = request.path_params.get("profile")
    return f"/p/{profile}" if profile is not None else ""


def _newest_builds(view: ProjectView) -> str:
    """The newest release's rewritten wheels, for the page's header."""
    if not view.releases:
        return "no releases"
    newest = view.releases[-1]
    parts = [
        f"{entry.filename} = variant {entry.label} of {entry.source.filename}"
        for entry in newest.entries
        if isinstance(entry, Rewrite)
    ]
    if not parts:
        plain = any(isinstance(e, Passthrough) for e in newest.entries)
        return f"{view.name} {newest.version}: " + ("passed through" if plain else "nothing")
    return f"{view.name} {newest.version}: " + "; ".join(parts)


def _guarded(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    async def guarded(request: Request) -> Response:
        try:
            return await handler(request)
        except ProxyError as exc:
            return _text(exc.status, exc.message)

    return guarded


def create_app(proxy: Proxy, *, stream_after: float = STREAM_AFTER_SECONDS) -> Starlette:
    """The ASGI application of *proxy*; a file still being built after *stream_after*
    seconds is streamed as it grows."""
    app = ProxyApp(proxy, stream_after)
    read = ["GET", "HEAD"]
    routes: list[Route] = []
    for prefix in ("", "/p/{profile}"):
        routes += [
            Route(f"{prefix}/", _guarded(app.root), methods=read),
            Route(f"{prefix}/simple/", _guarded(app.simple), methods=read),
            Route(f"{prefix}/simple/{{project}}/", _guarded(app.project), methods=read),
            Route(f"{prefix}/simple/{{project}}", _guarded(app.project), methods=read),
            Route(
                f"{prefix}/files/{{project}}/{{key}}/{{filename}}", _guarded(app.file), methods=read
            ),
            Route(f"{prefix}/why/{{project}}/", _guarded(app.why), methods=read),
        ]
    return Starlette(routes=routes)
