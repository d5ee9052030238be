"""nginx as a shared cache in front of ``wheelwise proxy``, with the README's snippet
(read from README.md): installers get the right build through it, files are served
from nginx's cache, pages always reach the proxy (each client in its own format, and
revalidated with ETag and 304).

The proxy is :mod:`proxykit`'s simulated fleet. nginx must be installed, as for
tests/test_index_nginx.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gpuhouse import K10, demo_house, machine
from indexkit import free_port, install, running, uvicorn_thread
from installkit import make_venv
from proxykit import JSON_PAGE, build_of, installed, page, proxy_process
from test_index_nginx import nginx_executable
from wheelwise.publish.server import create_app as index_app

# Every test here uses servers or peers that take seconds to start.
pytestmark = pytest.mark.slow

pytest_plugins = ["proxykit"]

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = "## Running a proxy for a cluster"
# What the snippet names, and what it becomes here.
SNIPPET_PROXY = "http://127.0.0.1:8080"
SNIPPET_LISTEN = "listen 80;"
SNIPPET_CACHE = "/var/cache/nginx/wheelwise"

# nginx's own temporary folders: all in tmp, as are its pid file and error log.
TEMP_PATHS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def readme_snippet() -> str:
    """The first nginx block of the README's section on running a proxy."""
    text = README.read_text(encoding="utf-8")
    assert SECTION in text, f"README.md has no section {SECTION!r}"
    found = re.search(r"```nginx\n(.*?)```", text[text.index(SECTION) :], re.DOTALL)
    assert found is not None, f"README.md: no nginx snippet under {SECTION!r}"
    return found.group(1)


def nginx_config(proxy: str, tmp: Path, port: int) -> str:
    snippet = readme_snippet()
    for placeholder in (SNIPPET_PROXY, SNIPPET_LISTEN, SNIPPET_CACHE):
        assert placeholder in snippet, f"the README's snippet no longer names {placeholder!r}"
    snippet = snippet.replace(SNIPPET_PROXY, proxy).replace(SNIPPET_CACHE, str(tmp / "cache"))
    snippet = snippet.replace(SNIPPET_LISTEN, f"listen 127.0.0.1:{port};")
    # Workers run as "nobody" unless told otherwise when nginx starts as root.
    user = "user root;" if os.geteuid() == 0 else ""
    temp = " ".join(f"{kind}_temp_path {tmp / kind};" for kind in TEMP_PATHS)
    return (
        f"daemon off; worker_processes 1; pid {tmp / 'nginx.pid'}; {user}\n"
        "events { worker_connections 64; }\n"
        f"http {{\naccess_log off; {temp}\n{snippet}}}\n"
    )


@contextlib.contextmanager
def nginx_in_front(proxy: str, tmp: Path) -> Iterator[str]:
    """nginx with the README's snippet in front of *proxy*; yields its base URL."""
    executable = nginx_executable()
    tmp.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(nginx_config(proxy, tmp, port))
    argv = [executable, "-p", str(tmp), "-c", str(conf), "-e", str(tmp / "error.log")]
    base = f"http://127.0.0.1:{port}"
    with running(argv, f"{base}/simple/"):
        yield base


@pytest.fixture(scope="module")
def nginx(proxy: str, root: Path) -> Iterator[str]:
    with nginx_in_front(proxy, root / "nginx") as base:
        yield base


def wheel_url(base: str, project: str = "gpukit") -> str:
    entry = page(base, project).json()["files"][0]
    return str(httpx.URL(f"{base}/simple/{project}/").join(entry["url"]))


def cache_status(response: httpx.Response) -> str | None:
    status: str | None = response.headers.get("x-cache-status")
    return status


@pytest.mark.parametrize(
    ("installer", "prefix", "build"), [("pip", "/p/h100", "cu128"), ("uv", "", "null")]
)
def test_installers_get_the_build_of_their_machine_through_nginx(
    nginx: str, installer: str, prefix: str, build: str, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv")
    result = install(installer, f"{nginx}{prefix}/simple/", python, tmp_path, "app")
    assert result.returncode == 0, result.stdout + result.stderr
    assert build_of(python) == build
    assert ("cudart" in installed(python)) == build.startswith("cu")


def test_a_wheel_is_built_once_then_served_from_the_cache(nginx: str) -> None:
    url = wheel_url(f"{nginx}/p/haswell")
    with ThreadPoolExecutor(4) as pool:
        first = list(pool.map(lambda _: httpx.get(url, timeout=60), range(4)))
    assert {r.status_code for r in first} == {200}
    assert len({r.content for r in first}) == 1
    again = httpx.get(url, timeout=30)
    assert cache_status(again) == "HIT"
    assert again.content == first[0].content
    assert again.headers["wheelwise-build"].startswith("variant x86_64_v3 of ")
    assert "immutable" in again.headers["cache-control"]
    part = httpx.get(url, headers={"Range": "bytes=10-99"}, timeout=30)
    assert (part.status_code, cache_status(part)) == (206, "HIT")
    assert part.content == again.content[10:100]
    etag = again.headers["etag"]
    assert httpx.get(url, headers={"If-None-Match": etag}, timeout=30).status_code == 304
    metadata = [httpx.get(f"{url}.metadata", timeout=30) for _ in range(2)]
    assert cache_status(metadata[1]) == "HIT"
    assert b"Name: gpukit" in metadata[1].content


def test_pages_reach_the_proxy_each_time(nginx: str) -> None:
    base = f"{nginx}/p/h100"
    # Each client gets its own format, asked in any order (Vary: Accept).
    for accept in (JSON_PAGE, "text/html", JSON_PAGE, "text/html"):
        response = page(base, "gpukit", Accept=accept)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith(accept)
        assert response.headers["vary"] == "Accept"
        assert response.headers["cache-control"] == "public, no-cache"
        assert cache_status(response) is None
    # A client's copy is revalidated by the proxy.
    first = page(base, "gpukit")
    again = page(base, "gpukit", **{"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.headers["etag"] == first.headers["etag"]


def test_errors_are_not_cached(nginx: str) -> None:
    for url in (f"{nginx}/simple/nothing-here/", f"{nginx}/files/gpukit/0000/gpukit.whl"):
        answers = [httpx.get(url, timeout=30) for _ in range(2)]
        assert [r.status_code for r in answers] == [404, 404]
        assert cache_status(answers[1]) != "HIT"


class Breakable:
    """An ASGI app whose wheel files answer 503 while ``broken``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.broken = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.broken and scope["type"] == "http" and scope["path"].endswith(".whl"):
            down = PlainTextResponse("down for maintenance", status_code=503)
            await down(scope, receive, send)
            return
        await self.app(scope, receive, send)


def test_an_upstream_failure_is_a_502_that_nginx_does_not_keep(tmp_path: Path) -> None:
    """Neither the failure nor the page without the wheel's hash stays in nginx."""
    house = tmp_path / "wheels"
    demo_house(house)
    upstream = Breakable(index_app(house))
    with (
        uvicorn_thread(upstream) as index,
        proxy_process([f"{index}/simple/"], tmp_path / "cache", env=machine(K10)) as proxy,
        nginx_in_front(proxy, tmp_path / "nginx") as base,
    ):
        url = wheel_url(base)
        failed = httpx.get(url, timeout=60)
        assert failed.status_code == 502, failed.text
        assert failed.text.startswith("upstream: ")
        assert failed.text.count("\n") == 1
        assert "sha256" not in page(base, "gpukit").json()["files"][0]["hashes"]
        upstream.broken = False
        answers = [httpx.get(url, timeout=60) for _ in range(2)]
        assert [r.status_code for r in answers] == [200, 200]
        assert [cache_status(r) for r in answers] == ["MISS", "HIT"]
        built = page(base, "gpukit").json()["files"][0]
        assert built["hashes"]["sha256"] == hashlib.sha256(answers[0].content).hexdigest()
