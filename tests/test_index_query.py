"""An index URL with a query (a token some private indexes take there): every project
page is asked for with it, as uv 0.13.9 asks (``/simple/beta/?token=t``); pip 26.3
joins the name after the query (``/simple/?token=t/beta/``) and finds nothing."""

from __future__ import annotations

import hashlib
import http.server
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from hypothesis import given
from hypothesis import strategies as st
from packaging.utils import canonicalize_name

from fuzzkit import bounded
from indexkit import handler_served, installer_env, uv_executable
from installkit import make_venv, pip, simple_wheel
from variantkit import wheelwise
from wheelwise.client.index_client import IndexSource

TOKEN = "token=s3cr3t"


def test_the_query_goes_with_every_project_page(tmp_path: Path) -> None:
    wheel = simple_wheel(tmp_path / "wheels", "beta", "1.0")
    python = make_venv(tmp_path / "venv")  # for the peers
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    asked: list[str] = []

    class Index(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_HEAD(self) -> None:
            self.answer(body=False)

        def do_GET(self) -> None:
            self.answer(body=True)

        def answer(self, *, body: bool) -> None:
            if body:
                asked.append(self.path)
            if self.path == f"/simple/beta/?{TOKEN}":
                href = f"/files/{wheel.name}#sha256={digest}"
                data = f'<html><body><a href="{href}">{wheel.name}</a></body></html>'.encode()
                kind = "text/html"
            elif self.path == f"/files/{wheel.name}":
                data, kind = wheel.read_bytes(), "application/octet-stream"
            else:
                self.send_error(403 if self.path.startswith("/simple/") else 404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

    with handler_served(Index) as base:
        for index in (f"{base}/simple/?{TOKEN}", f"{base}/simple?{TOKEN}"):
            out = tmp_path / f"out-{len(asked)}"
            argv = ["download", "--no-deps", "-d", str(out), "--index-url", index, "beta"]
            done = wheelwise(argv, tmp_path / f"cache-{len(asked)}")
            assert done.returncode == 0, done.stderr
            assert (out / wheel.name).read_bytes() == wheel.read_bytes()
        ours = list(asked)
        asked.clear()
        uv = [uv_executable(), "pip", "install", "--no-config", "--no-cache", "--dry-run"]
        ran = subprocess.run(
            [*uv, "--python", str(python), "--index-url", f"{base}/simple/?{TOKEN}", "beta"],
            env=installer_env(tmp_path), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        uv_pages = [path for path in asked if path.startswith("/simple/")]
        asked.clear()
        theirs = pip(python, "download", "--no-deps", "-d", str(tmp_path / "pip"),
                     "--index-url", f"{base}/simple/?{TOKEN}", "beta")  # fmt: skip
    assert f"/simple/beta/?{TOKEN}" in uv_pages
    assert theirs.returncode != 0
    assert f"/simple/?{TOKEN}/beta/" in asked
    assert ours == [f"/simple/beta/?{TOKEN}", f"/files/{wheel.name}"] * 2


_SEGMENT = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)


@bounded(200)
@given(
    path=st.lists(_SEGMENT, max_size=3),
    slash=st.booleans(),
    query=st.none()
    | st.from_regex(
        r"[a-z]{1,5}=[A-Za-z0-9%._-]{0,12}(&[a-z]{1,4}=[a-z0-9]{0,5})?", fullmatch=True
    ),
    name=st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,10}[A-Za-z0-9])?", fullmatch=True),
)
def test_a_project_page_keeps_the_index_query(
    path: list[str], slash: bool, query: str | None, name: str
) -> None:
    url = "https://index.example/" + "/".join(path) + ("/" if slash and path else "")
    url += f"?{query}" if query else ""
    page = urlsplit(IndexSource.index(url).project_url(name))
    assert page.query == (query or "")
    assert page.path == "/" + "".join(f"{part}/" for part in path) + canonicalize_name(name) + "/"
