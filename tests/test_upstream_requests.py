"""What a warm page costs the upstream: the index client revalidates a cached page on
the connection it already has.

The upstream is ``wheelwise index serve``'s app (pages and files ``no-cache``, so
every page is revalidated) under uvicorn on 127.0.0.1, behind a recorder that notes
each request's path, status and client port (one port: one connection).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuhouse import demo_house
from indexkit import uvicorn_thread
from wheelwise.index.client import IndexClient, IndexSource, RetryPolicy
from wheelwise.index.server import create_app

Scope = dict[str, Any]


class Seen:
    """An ASGI wrapper that notes each request's path, status and client port."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests: list[tuple[str, int, int]] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def note(message: Scope) -> None:
            if message["type"] == "http.response.start":
                self.requests.append((scope["path"], message["status"], scope["client"][1]))
            await send(message)

        await self.app(scope, receive, note)

    def of(self, path: str) -> list[tuple[int, int]]:
        return [(status, port) for p, status, port in self.requests if p == path]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Seen]]:
    house = tmp_path_factory.mktemp("upstream") / "wheels"
    demo_house(house)
    seen = Seen(create_app(house))
    with uvicorn_thread(seen) as base:
        yield f"{base}/simple/", seen


def test_revalidations_keep_the_connection(upstream: tuple[str, Seen], tmp_path: Path) -> None:
    url, seen = upstream
    source = IndexSource.index(url)
    with IndexClient(cache_dir=tmp_path, retry=RetryPolicy(retries=0)) as client:
        listings = [client.fetch_project(source, "gpukit") for _ in range(3)]
    assert listings[1] == listings[2] == listings[0]
    answers = seen.of("/simple/gpukit/")[-3:]
    assert [status for status, _port in answers] == [200, 304, 304]
    # A 304 left unread would close the connection: each revalidation a new one.
    assert len({port for _status, port in answers}) == 1
