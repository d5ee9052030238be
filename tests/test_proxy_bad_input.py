"""The proxy and what its clients or its upstream send that is not what it should be.

A path whose project part cannot be a project name (a NUL, 5,000 characters, a
space) is answered 404 at once, with a short message, and the upstream is never
asked. An upstream page with one entry whose ``filename`` is not a file name still
gives the rest of the page, and ``why/`` says which entry was skipped.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gpuhouse import K10, machine
from indexkit import uvicorn_thread
from proxykit import JSON_PAGE, proxy_process
from wheelfactory import make_wheel

NUL = "a%00b"
# The upstream answers 503 to every page while this holds True.
FAILING = [False]
NAMES = [NUL, "a" * 5000, "a%20b", "-pkg-"]


def upstream_app(wheel: Path, asked: Counter[str], failing: list[bool]) -> Starlette:
    data = wheel.read_bytes()
    files = [
        {
            "filename": wheel.name,
            "url": f"../../files/{wheel.name}",
            "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
        },
        {"filename": "../evil/pkg-1.0-py3-none-any.whl", "url": "../../files/evil"},
    ]

    async def page(request: Request) -> Response:
        asked[request.url.path] += 1
        if failing[0]:
            return Response("down for maintenance", status_code=503)
        project = request.path_params["project"]
        if project != "pkg":
            return Response("not found", status_code=404)
        body = {"meta": {"api-version": "1.1"}, "name": "pkg", "files": files}
        return Response(json.dumps(body), media_type=JSON_PAGE)

    async def root(request: Request) -> Response:
        asked[request.url.path] += 1
        body = {"meta": {"api-version": "1.1"}, "projects": [{"name": "pkg"}]}
        return Response(json.dumps(body), media_type=JSON_PAGE)

    async def file(request: Request) -> Response:
        asked[request.url.path] += 1
        return Response(data, media_type="application/octet-stream")

    return Starlette(
        routes=[
            Route("/simple/", root),
            Route("/simple/{project}/", page),
            Route("/files/{name}", file),
        ]
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Counter[str]]]:
    root = tmp_path_factory.mktemp("bad-input")
    wheel = make_wheel(root, "pkg-1.0-py3-none-any.whl", record=True)
    asked: Counter[str] = Counter()
    with (
        uvicorn_thread(upstream_app(wheel, asked, FAILING)) as upstream,
        proxy_process([f"{upstream}/simple/"], root / "cache", env=machine(K10)) as base,
    ):
        yield base, asked


@pytest.mark.parametrize("name", NAMES, ids=["nul", "5000", "space", "dashes"])
@pytest.mark.parametrize(
    "route", ["simple/{}/", "why/{}/", "files/{}/key/pkg-1.0-py3-none-any.whl"]
)
def test_what_cannot_be_a_project_name_is_not_asked_upstream(
    served: tuple[str, Counter[str]], name: str, route: str
) -> None:
    base, asked = served
    before = sum(asked.values())
    response = httpx.get(f"{base}/{route.format(name)}", timeout=30)
    assert response.status_code == 404, response.text
    assert "is not a project name (PEP 508)" in response.text
    assert len(response.text) < 200
    assert sum(asked.values()) == before


def test_an_entry_with_a_bad_filename_is_skipped_and_explained(
    served: tuple[str, Counter[str]],
) -> None:
    base, _ = served
    page = httpx.get(f"{base}/simple/pkg/", headers={"Accept": JSON_PAGE}, timeout=30)
    assert page.status_code == 200, page.text
    assert [f["filename"] for f in page.json()["files"]] == ["pkg-1.0-py3-none-any.whl"]
    why = httpx.get(f"{base}/why/pkg/", timeout=30).text
    assert "Skipped upstream entries" in why
    assert "'../evil/pkg-1.0-py3-none-any.whl' is not a file name" in why


def test_while_the_upstream_fails_the_last_page_read_is_given(
    served: tuple[str, Counter[str]],
) -> None:
    base, _ = served
    json_page = {"Accept": JSON_PAGE}
    good = httpx.get(f"{base}/simple/pkg/", headers=json_page, timeout=30)
    assert good.status_code == 200
    assert "wheelwise-stale" not in good.headers
    FAILING[0] = True
    try:
        stale = httpx.get(f"{base}/simple/pkg/", headers=json_page, timeout=60)
        never_read = httpx.get(f"{base}/simple/other/", headers=json_page, timeout=60)
        why = httpx.get(f"{base}/why/pkg/", timeout=60).text
    finally:
        FAILING[0] = False
    assert stale.status_code == 200
    assert stale.content == good.content
    assert stale.headers["etag"] == good.headers["etag"]
    assert "503" in stale.headers["wheelwise-stale"]
    assert never_read.status_code == 502
    assert "the upstreams fail now" in why
    again = httpx.get(f"{base}/simple/pkg/", headers=json_page, timeout=30)
    assert "wheelwise-stale" not in again.headers
