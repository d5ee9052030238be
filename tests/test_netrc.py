"""A private index behind HTTP basic authentication, on 127.0.0.1: credentials from
``$NETRC`` (as pip and uv read ``~/.netrc``), or in the URL, which win."""

from __future__ import annotations

import base64
import functools
import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexkit import demo_wheel
from installkit import make_venv, site_packages
from variantkit import wheelwise
from wheelwise.publish.static import build_site

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

TOKEN = "s3cret"


class _Private(http.server.SimpleHTTPRequestHandler):
    """Serves the folder only to ``user:s3cret``; 401 to anyone else."""

    seen: list[str | None]

    def do_GET(self) -> None:
        header = self.headers.get("Authorization")
        self.seen.append(header)
        expected = "Basic " + base64.b64encode(f"user:{TOKEN}".encode()).decode()
        if header != expected:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="private"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def private(tmp_path: Path) -> Iterator[tuple[str, list[str | None]]]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    demo_wheel(wheels, "secret_pkg-1.0-py3-none-any.whl")
    site = tmp_path / "site"
    build_site(wheels, site)
    seen: list[str | None] = []
    handler = type("Handler", (_Private,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(site))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/", seen
    finally:
        server.shutdown()
        server.server_close()


def test_credentials_from_netrc(private: tuple[str, list[str | None]], tmp_path: Path) -> None:
    index, seen = private
    python = make_venv(tmp_path / "venv")
    args = ["install", "--python", str(python), "--no-cache", "-i", index, "secret-pkg"]
    denied = wheelwise(args, tmp_path / "cache", {"NETRC": str(tmp_path / "none")})
    assert denied.returncode == 2
    assert "401" in denied.stderr
    assert denied.stderr.count("\n") == 1, denied.stderr
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login user password {TOKEN}\n")
    netrc.chmod(0o600)
    seen.clear()
    allowed = wheelwise(args, tmp_path / "cache", {"NETRC": str(netrc)})
    assert allowed.returncode == 0, allowed.stderr
    assert (site_packages(python) / "secret_pkg-1.0.dist-info").is_dir()
    assert seen
    assert all(header is not None for header in seen)  # the wheel too
    # Credentials in the URL win over the netrc file's.
    wrong = index.replace("http://", "http://user:wrong@")
    refused = wheelwise(
        [
            "install",
            "--python",
            str(python),
            "--no-cache",
            "-i",
            wrong,
            "--reinstall",
            "secret-pkg",
        ],
        tmp_path / "cache",
        {"NETRC": str(netrc)},
    )
    assert refused.returncode == 2
    assert "401" in refused.stderr
    assert "wrong" not in refused.stderr  # credentials never shown
    assert "http://****@127.0.0.1" in refused.stderr


def test_a_netrc_that_cannot_be_read(private: tuple[str, list[str | None]], tmp_path: Path) -> None:
    index, _ = private
    netrc = tmp_path / "netrc"
    netrc.write_text("machine\n")
    result = wheelwise(
        ["install", "--dry-run", "-i", index, "secret-pkg"],
        tmp_path / "cache",
        {"NETRC": str(netrc)},
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "cannot be read as a netrc file" in result.stderr
