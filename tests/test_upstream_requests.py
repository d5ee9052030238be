"""What a warm page costs the upstream: the index client revalidates a cached page on
the connection it already has, and ``wheelwise proxy`` reads a release's
``*-variants.json`` once, not for every page it serves.

The upstream is ``wheelwise index serve``'s app (pages and files ``no-cache``, so
every page is revalidated) under uvicorn on 127.0.0.1, behind a recorder that notes
each request's path, status and client port (one port: one connection).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import wheelwise
from gpuhouse import demo_house
from indexkit import uvicorn_thread
from proxykit import JSON_PAGE, proxy_process
from variantkit import system_file
from wheelwise.client.index_client import IndexClient, IndexSource
from wheelwise.policy.retry import RetryPolicy
from wheelwise.publish.server import create_app

Scope = dict[str, Any]
# The proxy process runs the source under test, not whatever is installed.
SOURCE = str(Path(wheelwise.__file__).resolve().parents[1])


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


@pytest.mark.slow
def test_the_proxy_reads_a_variants_json_once(upstream: tuple[str, Seen], tmp_path: Path) -> None:
    url, seen = upstream
    variants_json = "/files/gpukit/gpukit-1.0-variants.json"
    before = len(seen.of(variants_json))
    system = system_file(tmp_path, ["v3", "v2", "v1"])
    options = ["--system", str(system)]
    with proxy_process([url], tmp_path / "cache", *options, env={"PYTHONPATH": SOURCE}) as base:
        pages = [
            httpx.get(f"{base}/simple/gpukit/", headers={"Accept": JSON_PAGE}, timeout=30)
            for _ in range(3)
        ]
    assert [page.status_code for page in pages] == [200, 200, 200]
    built = "variant x86_64_v3 of gpukit-1.0-py3-none-any-x86_64_v3.whl"
    assert all(built in page.headers["wheelwise-builds"] for page in pages)
    # Every page asked the upstream for gpukit's page again (it is no-cache), but the
    # release's *-variants.json, named by its sha256 there, only once.
    assert [status for status, _port in seen.of("/simple/gpukit/")[-3:]] == [200, 304, 304]
    assert [status for status, _port in seen.of(variants_json)[before:]] == [200]


@pytest.mark.slow
def test_the_proxy_reads_a_core_metadata_file_once(
    upstream: tuple[str, Seen], tmp_path: Path
) -> None:
    url, seen = upstream
    metadata = "/files/cudart/cudart-1.0-py3-none-any.whl.metadata"
    before = len(seen.of(metadata))
    with proxy_process([url], tmp_path / "cache", env={"PYTHONPATH": SOURCE}) as base:
        page = httpx.get(f"{base}/simple/cudart/", headers={"Accept": JSON_PAGE}, timeout=30)
        link = httpx.URL(f"{base}/simple/cudart/").join(page.json()["files"][0]["url"])
        answers = [httpx.get(f"{link}.metadata", timeout=30) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert answers[0].content.startswith(b"Metadata-Version:")
    # Passed through, and named by its sha256 on the page: asked for once.
    assert [status for status, _port in seen.of(metadata)[before:]] == [200]
