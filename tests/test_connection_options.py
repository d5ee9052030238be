"""``--cert``, ``--client-cert``, ``--native-tls``, ``--trusted-host`` (and uv's
``--allow-insecure-host``) and ``--proxy``: real downloads from an HTTPS index on
127.0.0.1 whose certificate comes from an authority of the test's own (trustme),
through real proxies, with pip as a peer."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import select
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import click
import httpx
import pytest
import trustme
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from clikit import run_wheelwise
from fuzzkit import bounded
from indexkit import demo_wheel, handler_served, installer_env
from wheelwise.cli.options import _check_proxy, connection_options
from wheelwise.client.connection import Connection, HostPattern, InsecureHostError, parse_host
from wheelwise.client.deadline_transport import _ByOrigin
from wheelwise.client.tls import client_tls_context

WHEEL = "demo_pkg-1.0-py3-none-any.whl"
# What pip's requests reads in place of --cert.
PIPS_BUNDLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A static index of one wheel, made by ``wheelwise index build``."""
    root = tmp_path_factory.mktemp("site")
    wheels = root / "wheels"
    wheels.mkdir()
    demo_wheel(wheels, WHEEL)
    done = run_wheelwise(["index", "build", wheels, "-o", root / "site"])
    assert done.returncode == 0, done.stderr
    return root / "site"


@dataclass
class Served:
    """An index being served: its URL, its port, and the paths asked of it."""

    index: str
    port: int
    paths: list[str]


@contextlib.contextmanager
def serving(site: Path, tls: ssl.SSLContext | None = None) -> Iterator[Served]:
    """*site* on 127.0.0.1 (over TLS with *tls*)."""
    paths: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            paths.append(self.path)
            super().do_GET()

    with handler_served(partial(Handler, directory=str(site)), tls) as base:
        yield Served(f"{base}/simple/", int(base.rsplit(":", 1)[1]), paths)


def server_tls(authority: trustme.CA, client_authority: trustme.CA | None = None) -> ssl.SSLContext:
    """A server context with a certificate for 127.0.0.1 from *authority*; with
    *client_authority*, clients must show a certificate it issued."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    if client_authority is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        client_authority.configure_trust(context)
    return context


@pytest.fixture
def https_index(site: Path, authority: trustme.CA) -> Iterator[Served]:
    with serving(site, server_tls(authority)) as served:
        yield served


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No user configuration, no proxies, no certificate variables, no cache."""
    environ = installer_env(tmp_path / "home")
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "SSL_CLIENT_CERT", "NO_PROXY", *PIPS_BUNDLES):
        environ.pop(name, None)
    environ["WHEELWISE_CACHE_DIR"] = str(tmp_path / "cache")
    return environ


def download(
    index: str, dest: Path, env: dict[str, str], *options: str | Path
) -> subprocess.CompletedProcess[str]:
    args: list[str | Path] = ["download", "demo_pkg", "-d", dest, "--index-url", index]
    args += ["--no-cache", "--retries", "0", "--timeout", "10", *options]
    return run_wheelwise(args, env, timeout=120)


def authority_pem(authority: trustme.CA, folder: Path) -> Path:
    path = folder / "authority.pem"
    authority.cert_pem.write_to_path(str(path))
    return path


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


# -- the server's certificate ----------------------------------------------------


def test_an_untrusted_certificate_is_one_line_that_names_the_ways_out(
    https_index: Served, tmp_path: Path, env: dict[str, str]
) -> None:
    index, server = https_index.index, https_index
    line = one_error_line(download(index, tmp_path / "out", env, "--retries", "3"))
    assert "certificate is not trusted" in line
    assert "--cert PATH" in line
    assert "--native-tls" in line
    assert "--trusted-host 127.0.0.1" in line
    assert "tries" not in line  # a certificate is not retried
    assert server.paths == []  # no request got through the handshake
    assert not (tmp_path / "out" / WHEEL).exists()


def test_a_wheel_on_an_untrusted_host_is_one_line(
    https_index: Served, site: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    """An index page on http whose wheel is on an https host that fails the check
    (and no PEP 658 file: the wheel itself is downloaded to read its metadata): the
    download's line, as the page's, and no retry."""
    wheel = f"{https_index.index.replace('/simple/', '/files/demo-pkg/')}{WHEEL}"
    digest = hashlib.sha256(next(site.rglob(WHEEL)).read_bytes()).hexdigest()
    page = f'<html><body><a href="{wheel}#sha256={digest}">{WHEEL}</a></body></html>'

    class Page(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = page.encode() if self.path.rstrip("/").endswith("demo-pkg") else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with handler_served(Page) as base:
        args: list[str | Path] = ["download", "demo_pkg", "-d", tmp_path / "out"]
        args += ["-i", f"{base}/simple/", "--no-cache", "--retries", "3"]
        line = one_error_line(run_wheelwise(args, env, timeout=120))
    assert line.startswith(f"wheelwise: error: {wheel}: the server's certificate is not trusted")
    assert "--trusted-host 127.0.0.1" in line
    assert "tries" not in line
    assert https_index.paths == []


def test_cert_trusts_the_given_authority(
    https_index: Served, tmp_path: Path, env: dict[str, str], authority: trustme.CA
) -> None:
    index, server = https_index.index, https_index
    cert = authority_pem(authority, tmp_path)
    done = download(index, tmp_path / "out", env, "--cert", cert)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / WHEEL).is_file()
    assert any(path.endswith(WHEEL) for path in server.paths)


def test_cert_comes_before_ssl_cert_file(
    https_index: Served, tmp_path: Path, env: dict[str, str], authority: trustme.CA
) -> None:
    """SSL_CERT_FILE names the right authority, --cert another one: --cert wins, and
    the check fails; each alone does what it says."""
    index = https_index.index
    env["SSL_CERT_FILE"] = str(authority_pem(authority, tmp_path))
    assert download(index, tmp_path / "a", env).returncode == 0
    other = tmp_path / "other"
    other.mkdir()
    wrong = authority_pem(trustme.CA(), other)
    line = one_error_line(download(index, tmp_path / "b", env, "--cert", wrong))
    assert "certificate is not trusted" in line


def test_cert_may_be_a_folder_of_hashed_certificates(
    https_index: Served, tmp_path: Path, env: dict[str, str], authority: trustme.CA
) -> None:
    """As OpenSSL reads SSL_CERT_DIR: each certificate under its subject hash."""
    folder = tmp_path / "certs"
    folder.mkdir()
    pem = authority_pem(authority, folder)
    subject_hash = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(pem)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    pem.rename(folder / f"{subject_hash}.0")
    done = download(https_index.index, tmp_path / "out", env, "--cert", folder)
    assert done.returncode == 0, done.stderr


def test_a_cert_file_that_holds_no_certificate_is_one_line(
    https_index: Served, tmp_path: Path, env: dict[str, str]
) -> None:
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    line = one_error_line(download(https_index.index, tmp_path / "out", env, "--cert", garbage))
    assert f"--cert {garbage}" in line


def test_native_tls_reads_the_systems_certificates(
    https_index: Served,
    tmp_path: Path,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The operating system's store (OpenSSL's default paths here) is loaded, and it
    does not hold the test's authority: the check is on, and fails."""
    if not any(ssl.get_default_verify_paths()[:2]) and not Path("/etc/ssl/certs").is_dir():
        pytest.skip("this machine has no system certificate store")
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    context = client_tls_context(Connection(native_tls=True))
    context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="example.invalid")
    assert context.cert_store_stats()["x509_ca"] > 0
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    line = one_error_line(download(https_index.index, tmp_path / "out", env, "--native-tls"))
    assert "certificate is not trusted" in line


def test_native_tls_from_the_environment(
    https_index: Served, tmp_path: Path, env: dict[str, str], authority: trustme.CA
) -> None:
    """WHEELWISE_NATIVE_TLS turns it on (what the command gets); SSL_CERT_FILE still
    comes first."""
    got: list[Connection] = []

    @click.command()
    @connection_options
    def probe(connection: Connection) -> None:
        got.append(connection)

    for value, expected in (("1", True), ("", False)):
        result = CliRunner().invoke(probe, [], env={"WHEELWISE_NATIVE_TLS": value})
        assert result.exit_code == 0, result.output
        assert got[-1].native_tls is expected
    env["WHEELWISE_NATIVE_TLS"] = "1"
    env["SSL_CERT_FILE"] = str(authority_pem(authority, tmp_path))
    done = download(https_index.index, tmp_path / "out", env)
    assert done.returncode == 0, done.stderr


def test_a_trusted_host_matches_its_idna_name_and_its_unicode_one() -> None:
    """A host written either way is the same host (httpx gives both)."""
    seen: list[str] = []

    def answer(name: str) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            seen.append(name)
            return httpx.Response(200)

        return httpx.MockTransport(handle)

    context = ssl.create_default_context()
    for entry in ("bücher.example", "xn--bcher-kva.example"):
        connection = Connection(insecure_hosts=(parse_host(entry),))
        routes = _ByOrigin(
            lambda _: answer("unchecked"), answer("checked"), (context, connection.is_insecure)
        )
        with httpx.Client(transport=routes) as client:
            client.get("https://xn--bcher-kva.example/simple/")
            client.get("https://bücher.example/simple/")
            client.get("https://other.example/simple/")
    assert seen == ["unchecked", "unchecked", "checked"] * 2


# -- hosts whose certificate is not checked -----------------------------------------


@pytest.mark.parametrize("option", ["--trusted-host", "--allow-insecure-host"])
def test_a_trusted_host_is_not_checked(
    https_index: Served, tmp_path: Path, env: dict[str, str], option: str
) -> None:
    index = https_index.index
    done = download(index, tmp_path / "out", env, option, "127.0.0.1")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / WHEEL).is_file()


def test_a_trusted_host_with_a_port_is_that_port_only(
    https_index: Served, tmp_path: Path, env: dict[str, str]
) -> None:
    index, server = https_index.index, https_index
    port = server.port
    other = port + 1 if port < 65535 else port - 1
    assert (
        download(index, tmp_path / "a", env, "--trusted-host", f"127.0.0.1:{port}").returncode == 0
    )
    line = one_error_line(
        download(index, tmp_path / "b", env, "--trusted-host", f"127.0.0.1:{other}")
    )
    assert "certificate is not trusted" in line


def test_trusted_hosts_from_the_environment(
    https_index: Served, tmp_path: Path, env: dict[str, str]
) -> None:
    env["WHEELWISE_TRUSTED_HOST"] = "pypi.internal 127.0.0.1"
    done = download(https_index.index, tmp_path / "out", env)
    assert done.returncode == 0, done.stderr


def test_a_trusted_host_that_is_no_host_is_a_usage_error(
    tmp_path: Path, env: dict[str, str]
) -> None:
    done = download("https://127.0.0.1:9/simple/", tmp_path / "out", env, "--trusted-host", "h:x")
    assert done.returncode == 2
    assert "Invalid value for '--trusted-host'" in done.stderr
    assert "HOST:PORT" in done.stderr


def test_pip_takes_the_same_options_to_the_same_file(
    https_index: Served, tmp_path: Path, env: dict[str, str], authority: trustme.CA
) -> None:
    """pip's --cert and --trusted-host, on the same index: the same wheel."""
    index = https_index.index
    cert = authority_pem(authority, tmp_path)
    for options in (["--cert", str(cert)], ["--trusted-host", "127.0.0.1"]):
        ours, pips = tmp_path / f"ours{options[0]}", tmp_path / f"pip{options[0]}"
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir"]
        argv += ["-d", str(pips), "--index-url", index, *options, "demo_pkg"]
        pip = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert pip.returncode == 0, (options, pip.stderr[-300:])
        done = download(index, ours, env, *options)
        assert done.returncode == 0, done.stderr
        assert sorted(p.name for p in ours.iterdir()) == sorted(p.name for p in pips.iterdir())


# -- client certificates ---------------------------------------------------------


@pytest.fixture
def mutual_index(site: Path, authority: trustme.CA) -> Iterator[tuple[Served, trustme.CA]]:
    """An index that asks every client for a certificate of its own authority."""
    clients = trustme.CA()
    with serving(site, server_tls(authority, clients)) as served:
        yield served, clients


def test_client_cert_is_shown_to_a_server_that_asks_for_one(
    mutual_index: tuple[Served, trustme.CA],
    tmp_path: Path,
    env: dict[str, str],
    authority: trustme.CA,
) -> None:
    served, clients = mutual_index
    index = served.index
    cert = authority_pem(authority, tmp_path)
    mine = tmp_path / "client.pem"
    clients.issue_cert(
        "wheelwise-client@example.invalid"
    ).private_key_and_cert_chain_pem.write_to_path(str(mine))
    line = one_error_line(download(index, tmp_path / "a", env, "--cert", cert, "--retries", "3"))
    assert "the server asks for a client certificate" in line
    assert "--client-cert PATH" in line
    assert "tries" not in line
    done = download(index, tmp_path / "b", env, "--cert", cert, "--client-cert", mine)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "b" / WHEEL).is_file()
    env["SSL_CLIENT_CERT"] = str(mine)  # uv's variable
    assert download(index, tmp_path / "c", env, "--cert", cert).returncode == 0
    stranger = tmp_path / "stranger.pem"
    trustme.CA().issue_cert("x@example.invalid").private_key_and_cert_chain_pem.write_to_path(
        str(stranger)
    )
    line = one_error_line(
        download(index, tmp_path / "d", env, "--cert", cert, "--client-cert", stranger)
    )
    assert "the server does not trust the client certificate" in line


def test_a_client_cert_without_its_key_is_one_line(
    https_index: Served, tmp_path: Path, env: dict[str, str], authority: trustme.CA
) -> None:
    only_cert = tmp_path / "only-cert.pem"
    authority.issue_cert("client.example.invalid").cert_chain_pems[0].write_to_path(str(only_cert))
    line = one_error_line(
        download(https_index.index, tmp_path / "out", env, "--client-cert", only_cert)
    )
    assert f"cannot load the client certificate {only_cert}" in line
    assert "private key" in line


# -- proxies ----------------------------------------------------------------------


class _ForwardProxy(http.server.BaseHTTPRequestHandler):
    """An HTTP proxy: absolute-URL GETs answered from the site (whatever the host),
    CONNECT tunnelled to the host asked for."""

    site: Path
    seen: list[str]

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(f"GET {self.path}")
        path = self.path.split("://", 1)[-1].split("/", 1)[-1]
        target = self.site / path
        if target.is_dir():
            target /= "index.html"
        if not target.is_file():
            self.send_error(404)
            return
        body = target.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header(
            "Content-Type", "text/html" if target.suffix == ".html" else "application/octet-stream"
        )
        self.end_headers()
        self.wfile.write(body)

    def do_CONNECT(self) -> None:
        self.seen.append(f"CONNECT {self.path}")
        host, port = self.path.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)), timeout=10)
        self.send_response(200, "Connection established")
        self.end_headers()
        sockets = [self.connection, upstream]
        with upstream:
            while True:
                ready, _, _ = select.select(sockets, [], [], 10)
                if not ready:
                    return
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is self.connection else self.connection).sendall(data)


@contextlib.contextmanager
def forward_proxy(site: Path, tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Proxy", (_ForwardProxy,), {"site": site, "seen": seen})
    with handler_served(handler, tls) as base:
        yield base, seen


def test_proxy_carries_the_requests(site: Path, tmp_path: Path, env: dict[str, str]) -> None:
    """The index's host does not exist: only the proxy can answer for it."""
    with forward_proxy(site) as (proxy, seen):
        index = "http://pypi.invalid/simple/"
        done = download(index, tmp_path / "out", env, "--proxy", proxy)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "out" / WHEEL).is_file()
        assert "GET http://pypi.invalid/simple/demo-pkg/" in seen
        env["NO_PROXY"] = "pypi.invalid"  # --proxy takes every request, as pip's
        again = download(index, tmp_path / "again", env, "--proxy", proxy)
        assert again.returncode == 0, again.stderr
        assert seen.count("GET http://pypi.invalid/simple/demo-pkg/") == 2


def test_an_https_proxys_certificate_is_checked_with_cert(
    site: Path, tmp_path: Path, env: dict[str, str], authority: trustme.CA
) -> None:
    """The proxy's own certificate is checked against --cert, as the index's is."""
    with forward_proxy(site, server_tls(authority)) as (proxy, seen):
        index = "http://pypi.invalid/simple/"
        line = one_error_line(download(index, tmp_path / "a", env, "--proxy", proxy))
        assert "the https proxy's certificate is not trusted" in line
        assert "--trusted-host" not in line  # the index is on http: no use here
        assert seen == []
        cert = authority_pem(authority, tmp_path)
        done = download(index, tmp_path / "b", env, "--proxy", proxy, "--cert", cert)
        assert done.returncode == 0, done.stderr
        assert "GET http://pypi.invalid/simple/demo-pkg/" in seen


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("socks5://h:1080", "only http:// and https:// proxies are supported"),
        ("http://user:secret@h:port", "Port could not be cast"),
        ("http://", "no host"),
    ],
)
def test_a_proxy_that_is_none_wheelwise_takes_is_a_usage_error(
    tmp_path: Path, env: dict[str, str], value: str, message: str
) -> None:
    done = download("http://pypi.invalid/simple/", tmp_path / "out", env, "--proxy", value)
    assert done.returncode == 2
    assert "Invalid value for '--proxy'" in done.stderr
    assert message in done.stderr
    assert "secret" not in done.stderr
    assert "Traceback" not in done.stderr


def test_proxy_comes_before_the_environments(
    site: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    env["HTTP_PROXY"] = "http://127.0.0.1:9"  # nothing listens there
    with forward_proxy(site) as (proxy, seen):
        done = download("http://pypi.invalid/simple/", tmp_path / "out", env, "--proxy", proxy)
    assert done.returncode == 0, done.stderr
    assert seen


def test_a_trusted_host_through_a_proxys_tunnel(
    https_index: Served, site: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    """An https index reached by CONNECT: the host's certificate is left unchecked
    there too, and checked without --trusted-host."""
    index, server = https_index.index, https_index
    with forward_proxy(site) as (proxy, seen):
        line = one_error_line(download(index, tmp_path / "a", env, "--proxy", proxy))
        assert "certificate is not trusted" in line
        done = download(index, tmp_path / "b", env, "--proxy", proxy, "--trusted-host", "127.0.0.1")
        assert done.returncode == 0, done.stderr
    port = server.port
    assert f"CONNECT 127.0.0.1:{port}" in seen
    assert not any(entry.startswith("GET") for entry in seen)
    assert any(path.endswith(WHEEL) for path in server.paths)


# -- the host entries' parser -------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "pattern"),
    [
        ("pypi.internal", HostPattern("pypi.internal")),
        ("PyPI.Internal:8443", HostPattern("pypi.internal", 8443)),
        ("https://pypi.internal:8443/simple/", HostPattern("pypi.internal", 8443)),
        ("https://pypi.internal/", HostPattern("pypi.internal")),
        ("::1", HostPattern("::1")),
        ("[::1]:8443", HostPattern("::1", 8443)),
        ("10.0.0.1:80", HostPattern("10.0.0.1", 80)),
    ],
)
def test_host_entries(entry: str, pattern: HostPattern) -> None:
    assert parse_host(entry) == pattern
    port = pattern.port or 443
    assert Connection(insecure_hosts=(pattern,)).is_insecure(pattern.host.upper(), port)


@pytest.mark.parametrize("entry", ["", ":8443", "host:port", "host:99999", "https://", "[::1"])
def test_entries_that_name_no_host(entry: str) -> None:
    with pytest.raises(InsecureHostError, match="not a host, HOST:PORT or URL"):
        parse_host(entry)


@bounded(300)
@given(st.text(max_size=40))
def test_any_entry_is_a_pattern_or_one_error(entry: str) -> None:
    try:
        pattern = parse_host(entry)
    except InsecureHostError:
        return
    assert pattern.host
    assert pattern.host == pattern.host.lower()
    assert pattern.port is None or 0 <= pattern.port <= 65535


def test_a_requirements_files_trusted_host_holds(
    https_index: Served, tmp_path: Path, env: dict[str, str]
) -> None:
    """As pip reads ``--trusted-host`` in a requirements file."""
    index = https_index.index
    listing = tmp_path / "requirements.txt"
    listing.write_text(f"--index-url {index}\n--trusted-host 127.0.0.1\ndemo_pkg\n")
    args: list[str | Path] = ["download", "-r", listing, "-d", tmp_path / "out", "--no-cache"]
    done = run_wheelwise([*args, "--retries", "0"], env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / WHEEL).is_file()
    listing.write_text(f"--index-url {index}\n--trusted-host h:x\ndemo_pkg\n")
    line = one_error_line(run_wheelwise([*args, "--retries", "0"], env, timeout=120))
    assert f"{listing}:2" in line
    assert "HOST:PORT" in line


def test_the_proxy_command_reaches_an_upstream_with_cert(
    https_index: Served, tmp_path: Path, authority: trustme.CA
) -> None:
    """``wheelwise proxy --cert``: the upstream's page comes through, its wheel link
    served by the proxy."""
    from proxykit import page, proxy_process

    index, server = https_index.index, https_index
    cert = authority_pem(authority, tmp_path)
    with proxy_process([index], tmp_path / "cache", "--cert", str(cert)) as base:
        answer = page(base, "demo-pkg", Accept="text/html")
    assert answer.status_code == 200, answer.text
    assert WHEEL in answer.text
    assert "/simple/demo-pkg/" in server.paths


@pytest.mark.parametrize("content", [None, "not a certificate\n"], ids=["missing", "junk"])
def test_a_client_cert_from_the_environment_that_does_not_load_is_a_warning(
    site: Path, tmp_path: Path, env: dict[str, str], content: str | None
) -> None:
    """As uv reads SSL_CLIENT_CERT: left out with a warning; the install goes on."""
    path = tmp_path / "client.pem"
    if content is not None:
        path.write_text(content)
    env["SSL_CLIENT_CERT"] = str(path)
    args: list[str | Path] = ["download", "demo_pkg", "-d", tmp_path / "out", "--no-index"]
    done = run_wheelwise([*args, "-f", site.parent / "wheels"], env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"wheelwise: warning: SSL_CLIENT_CERT={path}: left out" in done.stderr
    assert (tmp_path / "out" / WHEEL).is_file()


def test_an_empty_proxy_sends_directly(
    https_index: Served, tmp_path: Path, env: dict[str, str], authority: trustme.CA
) -> None:
    """As pip reads --proxy '': the environment's proxy (nothing listens there) is
    left out."""
    env["HTTPS_PROXY"] = "http://127.0.0.1:9"
    cert = authority_pem(authority, tmp_path)
    line = one_error_line(download(https_index.index, tmp_path / "a", env, "--cert", cert))
    assert "cannot connect" in line
    done = download(https_index.index, tmp_path / "b", env, "--cert", cert, "--proxy", "")
    assert done.returncode == 0, done.stderr


def test_an_encrypted_key_is_refused_not_asked_for(
    https_index: Served, site: Path, tmp_path: Path, env: dict[str, str], authority: trustme.CA
) -> None:
    """No passphrase prompt (standard input closed, a terminal or not): from
    SSL_CLIENT_CERT a warning, from --client-cert one line."""
    issued = trustme.CA().issue_cert("client@example.invalid")
    plain = tmp_path / "key.pem"
    issued.private_key_pem.write_to_path(str(plain))
    encrypted = subprocess.run(
        ["openssl", "pkey", "-in", str(plain), "-aes256", "-passout", "pass:secret"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    mine = tmp_path / "client.pem"
    mine.write_bytes(encrypted + issued.cert_chain_pems[0].bytes())
    env["SSL_CLIENT_CERT"] = str(mine)
    args: list[str | Path] = ["download", "demo_pkg", "-d", tmp_path / "out", "--no-index"]
    warned = subprocess.run(
        [sys.executable, "-m", "wheelwise", *map(str, args), "-f", str(site.parent / "wheels")],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert warned.returncode == 0, warned.stderr
    assert f"SSL_CLIENT_CERT={mine}: left out" in warned.stderr
    assert "pass phrase" not in warned.stderr
    del env["SSL_CLIENT_CERT"]
    line = one_error_line(download(https_index.index, tmp_path / "b", env, "--client-cert", mine))
    assert f"cannot load the client certificate {mine}" in line


@bounded(300)
@given(
    st.text(max_size=40) | st.from_regex(r"(https?|socks5)://[a-z0-9:@.\[\]]{0,20}", fullmatch=True)
)
def test_any_proxy_value_is_a_url_or_one_usage_error(value: str) -> None:
    """``--proxy``'s check: an http(s) URL with a host, or click's usage error."""
    command = click.Command("probe", params=[click.Option(["--proxy"], callback=_check_proxy)])
    context = click.Context(command)
    parameter = command.params[0]
    try:
        url = _check_proxy(context, parameter, value)
    except click.BadParameter as exc:
        assert "\n" not in exc.format_message()  # noqa: PT017 - one line, whatever the text
        return
    assert url == "" if value == "" else url is not None
    if url:
        assert url.split("://", 1)[0].lower() in ("http", "https")
