"""Helpers for the index tests: demo wheels, servers on free ports, clean installers."""

from __future__ import annotations

import contextlib
import http.server
import itertools
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from wheelfactory import make_wheel, variant_doc

BIN = Path(sys.executable).parent
DEMO_NAMESPACES = {"x86_64": {"level": ["v1"]}}


# Ports handed out for servers started later (a proxy's upstream, a server stopped and
# started again). Below Linux's ephemeral range (32768 and up), so that no socket bound
# to port 0 takes one meanwhile; each pytest-xdist worker has a block of its own.
_PORTS_PER_WORKER = 1000
_FIRST_PORT = 20000
_next_port = itertools.count()
PORT_BLOCK_VARIABLE = "WHEELWISE_TEST_PORT_BLOCK"


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on, and that no other test process
    running at the same time is handed."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    # tests/other_pythons.py runs several test processes side by side, a block each.
    worker = os.environ.get(PORT_BLOCK_VARIABLE, worker)
    block = _FIRST_PORT + (int(worker) if worker.isdigit() else 0) % 12 * _PORTS_PER_WORKER
    for _ in range(_PORTS_PER_WORKER):
        port = block + next(_next_port) % _PORTS_PER_WORKER
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {block}..{block + _PORTS_PER_WORKER - 1}")


def wait_until_up(
    url: str, process: subprocess.Popen[Any] | None = None, timeout: float = 30
) -> None:
    """Poll *url* until it answers (any HTTP status); fail if *process* exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


@contextlib.contextmanager
def running(
    argv: Sequence[str], url: str, output: list[bytes] | None = None, **kwargs: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """Run a server process until the block ends; wait until *url* answers.

    Its stdout and stderr are appended to *output* when it has ended. They go to
    files, never to pipes: a server that logs every request would fill a pipe no one
    reads until the end, then stop answering.
    """
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        process = subprocess.Popen(list(argv), stdout=out_file, stderr=err_file, **kwargs)
        try:
            wait_until_up(url, process)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if output is not None:
                out_file.seek(0)
                err_file.seek(0)
                output += [out_file.read(), err_file.read()]


@contextlib.contextmanager
def wheelwise_serve(
    directory: Path, *, token: str | None = None, output: list[bytes] | None = None
) -> Iterator[str]:
    """``wheelwise index serve DIRECTORY`` as a subprocess; yields its base URL."""
    port = free_port()
    argv = [sys.executable, "-m", "wheelwise", "index", "serve", str(directory)]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    if token is not None:
        argv += ["--upload-token", token]
    base = f"http://127.0.0.1:{port}"
    with running(argv, f"{base}/simple/", output):
        yield base


class QuietHTTPServer(http.server.ThreadingHTTPServer):
    """A threaded server on which a client that stops reading (a cancelled or refused
    download resets the connection) is expected, not worth a traceback."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@contextlib.contextmanager
def handler_served(
    handler: Callable[..., http.server.BaseHTTPRequestHandler],
    tls: ssl.SSLContext | None = None,
) -> Iterator[str]:
    """*handler* answering on 127.0.0.1 in a thread of this process (over TLS with a
    server context *tls*); yields the base URL, and stops the server once done."""
    httpd = QuietHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@contextlib.contextmanager
def http_server(site: Path) -> Iterator[str]:
    """``python -m http.server`` serving *site* on 127.0.0.1; yields its base URL."""
    port = free_port()
    argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    argv += ["--directory", str(site)]
    base = f"http://127.0.0.1:{port}"
    with running(argv, f"{base}/simple/"):
        yield base


@contextlib.contextmanager
def uvicorn_thread(app: Any) -> Iterator[str]:
    """Serve an ASGI *app* with uvicorn in a background thread; yields its base URL."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


# -- demo wheels --------------------------------------------------------------


def demo_wheel(
    directory: Path,
    filename: str,
    label: str | None = None,
    properties: dict[str, dict[str, list[str]]] | None = None,
    *,
    namespaces: list[str] | None = None,
    **kwargs: Any,
) -> Path:
    """A wheel whose module says which build it is (``VARIANT``), with a full RECORD."""
    name = filename.split("-")[0]
    members = {f"{name}/__init__.py": f"VARIANT = {label!r}\n".encode()}
    members.update(kwargs.pop("extra_members", {}))
    document = None
    if label is not None:
        document = variant_doc(label, properties if properties is not None else {})
        if namespaces is not None:
            document["default-priorities"]["namespace"] = namespaces
    return make_wheel(directory, filename, document, extra_members=members, record=True, **kwargs)


def demo_wheels(directory: Path) -> list[Path]:
    """demo_pkg 1.0 (a non-variant wheel, variants x86_64_v1 and null) and 2.0 (variants
    only): an installer that knows nothing of variants must install 1.0, non-variant."""
    directory.mkdir(parents=True, exist_ok=True)
    return [
        demo_wheel(directory, "demo_pkg-1.0-py3-none-any.whl", requires_python=">=3.8"),
        demo_wheel(
            directory, "demo_pkg-1.0-py3-none-any-x86_64_v1.whl", "x86_64_v1", DEMO_NAMESPACES
        ),
        demo_wheel(directory, "demo_pkg-1.0-py3-none-any-null.whl", "null", {}),
        demo_wheel(
            directory, "demo_pkg-2.0-py3-none-any-x86_64_v1.whl", "x86_64_v1", DEMO_NAMESPACES
        ),
        demo_wheel(directory, "demo_pkg-2.0-py3-none-any-null.whl", "null", {}),
    ]


def demo_folder(directory: Path) -> Path:
    """*directory* holding the demo wheels, a second project (``Other_Project``, which
    names itself unnormalized and limits its Python) and an sdist of demo_pkg."""
    demo_wheels(directory)
    demo_wheel(directory, "Other_Project-0.1-py3-none-any.whl", requires_python="<4,>=3.9")
    demo_sdist(directory, "demo_pkg-1.0.tar.gz")
    return directory


# -- pages ---------------------------------------------------------------------


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[tuple[str, dict[str, str | None]]] = []
        self._current: dict[str, str | None] | None = None
        self._text: list[str] = []
        self.meta: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._current, self._text = dict(attrs), []
        elif tag == "meta":
            values = dict(attrs)
            self.meta[values.get("name") or ""] = values.get("content")

    def handle_data(self, data: str) -> None:
        if self._current is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._current is not None:
            self.anchors.append(("".join(self._text), self._current))
            self._current = None


def parse_anchors(html: str | bytes) -> dict[str, dict[str, str | None]]:
    """Anchor text -> attributes (HTML entities decoded, as a client sees them)."""
    parser = _Anchors()
    parser.feed(html.decode() if isinstance(html, bytes) else html)
    return dict(parser.anchors)


def repository_version(html: str | bytes) -> str | None:
    parser = _Anchors()
    parser.feed(html.decode() if isinstance(html, bytes) else html)
    return parser.meta.get("pypi:repository-version")


# -- installers ----------------------------------------------------------------


def installer_env(home: Path) -> dict[str, str]:
    """An environment in which pip, uv and twine see no user or site configuration
    and reach nothing but the index they are given."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PIP_", "UV_", "TWINE_", "PYTHON"))
        and key.lower() not in {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
        UV_NO_CONFIG="1",
        UV_PYTHON_DOWNLOADS="never",
        NO_PROXY="*",
        NO_COLOR="1",
        COLUMNS="400",
        PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
    )
    return env


def uv_executable() -> str:
    found = shutil.which("uv", path=str(BIN))
    if found is None:
        raise RuntimeError(f"uv is not installed in {BIN}")
    return found


def install(
    installer: str, index_url: str, python: Path, home: Path, *requirements: str
) -> subprocess.CompletedProcess[str]:
    """Install *requirements* into *python*'s environment with pip or uv from *index_url* only."""
    if installer == "pip":
        argv = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-cache-dir"]
    else:
        argv = [uv_executable(), "pip", "install", "--no-config", "--python", str(python)]
        argv += ["--no-cache"]
    argv += ["--index-url", index_url, *requirements]
    return subprocess.run(
        argv, env=installer_env(home), capture_output=True, text=True, timeout=300, check=False
    )


def demo_sdist(directory: Path, filename: str, members: dict[str, bytes] | None = None) -> Path:
    """A real sdist *filename* (``{name}-{version}.tar.gz``): a gzip'd tar of
    ``{name}-{version}/`` holding PKG-INFO, or exactly *members* (path -> bytes)."""
    import io
    import tarfile

    top = filename.removesuffix(".tar.gz")
    name, version = top.rsplit("-", 1)
    if members is None:
        pkg_info = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        members = {
            f"{top}/PKG-INFO": pkg_info.encode(),
            f"{top}/pyproject.toml": b"[project]\n",
        }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / filename
    with tarfile.open(path, "w:gz") as archive:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path
