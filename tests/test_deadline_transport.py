"""The deadline transport: ordinary requests as httpx makes them, and a request
deadline that ends a status line, headers or TLS handshake that never completes.

The servers are raw sockets on 127.0.0.1, so that a test controls every byte."""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpcore
import httpx
import pytest
import trustme
from httpx._utils import get_environment_proxies  # what httpx itself does, to compare
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelwise.client import deadline_transport
from wheelwise.client.bounded import Deadline, current_deadline
from wheelwise.client.deadline_transport import _proxy_mounts, deadline_client

# Bounds a server's loop: a client that never gives up still ends the test.
DRIP_BYTES = 40
DRIP_EVERY = 0.2


class RawServer:
    """Accepts connections on 127.0.0.1 and runs *serve* on each, in a thread."""

    def __init__(self, serve: Callable[[socket.socket, RawServer], None]) -> None:
        self.serve = serve
        self.stop = threading.Event()
        self.connections = 0
        self.requests: list[bytes] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self.serve(conn, self)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def read_request(conn: socket.socket) -> bytes:
    """One request's head (GETs only: no body), or b"" at the end of the connection."""
    head = b""
    while b"\r\n\r\n" not in head:
        data = conn.recv(4096)
        if not data:
            return b""
        head += data
    return head


def keep_alive(conn: socket.socket, server: RawServer) -> None:
    """Answers every request on the connection, keeping it open."""
    while head := read_request(conn):
        server.requests.append(head)
        body = b"hello " + head.split(b" ", 2)[1]
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nX-Test: yes\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )


def status_drip(conn: socket.socket, server: RawServer) -> None:
    """The status line, one byte at a time, each well within the read timeout."""
    read_request(conn)
    for byte in (b"HTTP/1.1 200 OK\r\nX-Drip: " + b"a" * DRIP_BYTES)[:DRIP_BYTES]:
        if server.stop.wait(DRIP_EVERY):
            return
        conn.sendall(bytes([byte]))


def silent(conn: socket.socket, server: RawServer) -> None:
    """Reads what the client sends (a TLS ClientHello) and never answers."""
    conn.settimeout(0.1)
    for _ in range(int(DRIP_BYTES * DRIP_EVERY / 0.1)):
        if server.stop.is_set():
            return
        try:
            if conn.recv(4096) == b"":
                return
        except TimeoutError:
            continue


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[socket.socket, RawServer], None]], RawServer]]:
    servers: list[RawServer] = []

    def start(handler: Callable[[socket.socket, RawServer], None]) -> RawServer:
        servers.append(RawServer(handler))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    monkeypatch.setenv("NO_PROXY", "*")


def test_requests_work_and_reuse_the_connection(serve: Callable[..., RawServer]) -> None:
    server = serve(keep_alive)
    with deadline_client(timeout=5) as client:
        with Deadline(30):
            first = client.get(f"{server.url}/one")
        second = client.get(f"{server.url}/two")  # no deadline: as httpx does
        with Deadline(30), client.stream("GET", f"{server.url}/three") as third:
            body = b"".join(third.iter_raw())
    assert (first.status_code, first.headers["x-test"]) == (200, "yes")
    assert first.content == b"hello /one"
    assert second.content == b"hello /two"
    assert body == b"hello /three"
    assert server.connections == 1
    assert len(server.requests) == 3
    assert current_deadline() is None


def test_a_deadline_ends_a_dripping_status_line(serve: Callable[..., RawServer]) -> None:
    """Each byte comes well within the 2 s read timeout; the 0.5 s deadline ends it."""
    server = serve(status_drip)
    deadline = Deadline(0.5)
    with deadline, deadline_client(timeout=2) as client, pytest.raises(httpx.ReadTimeout):
        client.get(server.url)
    assert deadline.passed
    assert "--request-deadline" in deadline.reason()


def test_a_deadline_ends_a_stalled_tls_handshake(serve: Callable[..., RawServer]) -> None:
    server = serve(silent)
    url = server.url.replace("http://", "https://")
    deadline = Deadline(0.3)
    context = ssl.create_default_context()
    client = deadline_client(verify=context, timeout=5)
    with deadline, client, pytest.raises(httpx.ConnectTimeout):
        client.get(url)
    assert deadline.passed


def test_a_passed_deadline_does_not_connect(serve: Callable[..., RawServer]) -> None:
    server = serve(keep_alive)
    deadline = Deadline(-1)
    with deadline, deadline_client(timeout=5) as client, pytest.raises(httpx.ConnectTimeout):
        client.get(server.url)
    assert deadline.passed
    assert server.requests == []


def test_a_read_timeout_outside_the_deadline_is_not_the_deadline(
    serve: Callable[..., RawServer],
) -> None:
    """The per-read timeout (shorter than the deadline) ends it: not marked."""
    server = serve(silent)
    deadline = Deadline(30)
    with deadline, deadline_client(timeout=0.3) as client, pytest.raises(httpx.ReadTimeout):
        client.get(server.url)
    assert not deadline.passed


def test_proxies_from_the_environment_are_kept(
    serve: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HTTP_PROXY`` is used (the proxy sees the absolute URL), except for the hosts
    of ``NO_PROXY``, reached directly."""
    proxy, direct = serve(keep_alive), serve(keep_alive)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "localhost")
    with deadline_client(timeout=5) as client:
        proxied = client.get("http://pypi.invalid/simple/")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert proxied.content == b"hello http://pypi.invalid/simple/"
    with deadline_client(timeout=5) as client:
        assert client.get(f"{direct.url}/x").content == b"hello /x"
    assert len(proxy.requests) == 1
    assert len(direct.requests) == 1


ENTRY = st.one_of(
    st.sampled_from(["*", "localhost", "127.0.0.1", "::1", "10.0.0.0/8", "http://a.example"]),
    st.text(alphabet="abc.-:/[]*0123456789 ", max_size=12),
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True)
@given(proxy=st.sampled_from(["", "127.0.0.1:3128", "http://127.0.0.1:3128"]), no=st.lists(ENTRY))
def test_proxy_mounts_are_those_httpx_makes(proxy: str, no: list[str]) -> None:
    """The same patterns as httpx's own reading of the environment (which a client
    with a transport of its own does not do), proxied or not alike."""
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(HTTP_PROXY=proxy, NO_PROXY=",".join(no))
    try:
        ours = {key: value is None for key, value in _proxy_mounts(False).items()}
        theirs = {key: value is None for key, value in get_environment_proxies().items()}
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value
    assert ours == theirs


BIG_BODY = os.urandom(16 << 20)
HTTPCORE_READ = 64 << 10  # what httpcore asks a network stream for


def big_then_small(conn: socket.socket, server: RawServer) -> None:
    """A 16 MiB body sent as fast as the client reads it, then a small answer on the
    same connection."""
    while head := read_request(conn):
        server.requests.append(head)
        body = BIG_BODY if b" /big " in head else b"small"
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)


def test_a_fast_body_comes_in_bigger_pieces_and_whole(serve: Callable[..., RawServer]) -> None:
    """Reads ask for twice what the last one got: a body the sender outruns the reader
    with comes in pieces past httpcore's 64 KiB (fewer pieces, less interpreter work
    per byte), every byte in order, and the connection serves the next request."""
    server = serve(big_then_small)
    with deadline_client(timeout=10) as client:
        with client.stream("GET", f"{server.url}/big") as response:
            pieces = []
            for piece in response.iter_raw():
                pieces.append(piece)
                if len(pieces) == 1:
                    server.stop.wait(0.2)  # the socket's buffer fills meanwhile
        after = client.get(f"{server.url}/next")
    assert b"".join(pieces) == BIG_BODY
    assert max(map(len, pieces)) > HTTPCORE_READ
    assert after.content == b"small"
    assert server.connections == 1


def body_drip(conn: socket.socket, server: RawServer) -> None:
    """A body of 20 small pieces, each sent a moment after the last."""
    read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (20 * 1000))
    for _ in range(20):
        if server.stop.wait(0.02):
            return
        conn.sendall(b"x" * 1000)


def test_a_slow_body_is_asked_for_as_httpcore_asks(
    serve: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sender slower than the reader: each read gets a little, so the next asks for
    no more than httpcore does (the interpreter makes room for all that is asked)."""
    asked: list[int] = []
    real = socket.socket.recv

    def recorded(self: socket.socket, size: int, *flags: int) -> bytes:
        asked.append(size)
        return real(self, size, *flags)

    server = serve(body_drip)
    with deadline_client(timeout=10) as client:
        monkeypatch.setattr(socket.socket, "recv", recorded)
        body = client.get(f"{server.url}/slow").content
    assert body == b"x" * 20000
    assert len(asked) >= 10
    assert max(asked) == HTTPCORE_READ


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


def over_tls(
    authority: trustme.CA, handler: Callable[[socket.socket, RawServer], None]
) -> Callable[[socket.socket, RawServer], None]:
    """*handler*, on the connection wrapped in TLS with a certificate for 127.0.0.1."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)

    def serve(conn: socket.socket, server: RawServer) -> None:
        with context.wrap_socket(conn, server_side=True) as tls:
            handler(tls, server)

    return serve


def trusting(authority: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    authority.configure_trust(context)
    return context


def https(server: RawServer) -> str:
    return server.url.replace("http://", "https://")


def test_tls_records_already_there_are_gathered_into_one_piece(
    serve: Callable[..., RawServer], authority: trustme.CA
) -> None:
    """A TLS read gives one record (16 KiB at most): the records that have arrived
    are passed on as one piece, every byte in order, and the connection serves the
    next request."""
    server = serve(over_tls(authority, big_then_small))
    with deadline_client(verify=trusting(authority), timeout=10) as client:
        with client.stream("GET", f"{https(server)}/big") as response:
            pieces = []
            for piece in response.iter_raw():
                pieces.append(piece)
                if len(pieces) == 1:
                    server.stop.wait(0.2)  # records pile up meanwhile
        after = client.get(f"{https(server)}/next")
    assert b"".join(pieces) == BIG_BODY
    assert max(map(len, pieces)) > 16 << 10
    assert after.content == b"small"
    assert server.connections == 1


def pieces_once_told(authority: trustme.CA, url: str, got_first: threading.Event) -> list[bytes]:
    """The pieces of *url*'s body over TLS, *got_first* set once the first is in."""
    pieces = []
    with (
        deadline_client(verify=trusting(authority), timeout=10) as client,
        client.stream("GET", url) as response,
    ):
        for piece in response.iter_raw():
            pieces.append(piece)
            got_first.set()
    return pieces


def test_gathering_never_waits_for_a_record_not_yet_sent(
    serve: Callable[..., RawServer], authority: trustme.CA
) -> None:
    """The server sends the rest of the body only once the client has the first part
    (or after 5 s): the first piece is that part alone."""
    got_first = threading.Event()

    def halves(conn: socket.socket, server: RawServer) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n" + b"a" * 1000)
        server.requests.append(b"waited" if got_first.wait(5) else b"gave up")
        conn.sendall(b"b" * 1000)

    server = serve(over_tls(authority, halves))
    pieces = pieces_once_told(authority, f"{https(server)}/halves", got_first)
    assert pieces[0] == b"a" * 1000
    assert b"".join(pieces) == b"a" * 1000 + b"b" * 1000
    assert server.requests == [b"waited"]


@pytest.mark.parametrize(
    ("reset", "error", "message"),
    [
        (False, httpx.RemoteProtocolError, "without sending complete"),
        # A reset may reach the TLS layer as the end of the stream.
        (True, httpx.TransportError, "reset|without sending complete"),
    ],
)
def test_a_tls_body_cut_short_is_an_error_not_a_shorter_body(
    serve: Callable[..., RawServer],
    authority: trustme.CA,
    reset: bool,
    error: type[httpx.TransportError],
    message: str,
) -> None:
    """The server promises 1 MiB and closes (or resets) the connection after part of
    it: the records gathered before the end are passed on, and the end is httpx's
    error."""

    def cut(conn: socket.socket, server: RawServer) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (1 << 20))
        conn.sendall(BIG_BODY[: 300 << 10])
        if reset:  # closing with a zero linger time sends a reset
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    server = serve(over_tls(authority, cut))
    received = bytearray()

    def download(client: httpx.Client) -> None:
        with client.stream("GET", f"{https(server)}/cut") as response:
            for piece in response.iter_raw():
                received.extend(piece)

    with (
        deadline_client(verify=trusting(authority), timeout=10) as client,
        pytest.raises(error, match=message),
    ):
        download(client)
    assert bytes(received) == BIG_BODY[: len(received)]
    assert len(received) <= 300 << 10


def test_a_record_not_yet_whole_is_left_to_the_next_read(
    serve: Callable[..., RawServer], authority: trustme.CA
) -> None:
    """The server sends whole records, then half of the next one, and the other half
    only once the client has the first piece (or after 5 s): the first piece is the
    whole records alone, and the next read completes the record begun."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    got_first = threading.Event()
    body = os.urandom(3 * 16384)

    def split_record(conn: socket.socket, server: RawServer) -> None:
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = context.wrap_bio(incoming, outgoing, server_side=True)

        def flush() -> bytes:
            data = outgoing.read()
            conn.sendall(data)
            return data

        def until(step: Callable[[], Any]) -> Any:
            while True:
                try:
                    return step()
                except ssl.SSLWantReadError:
                    flush()
                    incoming.write(conn.recv(65536))

        until(tls.do_handshake)
        flush()
        request = b""
        while b"\r\n\r\n" not in request:
            request += until(lambda: tls.read(65536))
        tls.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        tls.write(body[:32768])  # two whole records
        flush()
        tls.write(body[32768:])  # the third, sent in two halves
        last = outgoing.read()
        conn.sendall(last[: len(last) // 2])
        server.requests.append(b"waited" if got_first.wait(5) else b"gave up")
        conn.sendall(last[len(last) // 2 :])

    server = serve(split_record)
    pieces = pieces_once_told(authority, f"{https(server)}/split", got_first)
    assert b"".join(pieces) == body
    assert pieces[0] == body[:32768]
    assert server.requests == [b"waited"]


class _ArrivedRecords(ssl.SSLSocket):
    """A TLS socket as the transport's gathering reads it: records that have arrived
    whole, then an error (a connection reset)."""

    def __init__(self, records: list[bytes]) -> None:  # never a real socket
        self.records = records
        self.timeouts: list[float | None] = []

    def settimeout(self, value: float | None) -> None:
        self.timeouts.append(value)

    def recv_into(self, buffer: Any, nbytes: int | None = None, flags: int = 0) -> int:
        if not self.records:
            raise ConnectionResetError(104, "Connection reset by peer")
        record = self.records.pop(0)
        buffer[: len(record)] = record
        return len(record)


class _FirstRecord(httpcore.NetworkStream):
    """httpcore's TLS stream: the first record through its read, then *socket*."""

    def __init__(self, first: bytes, socket: _ArrivedRecords) -> None:
        self.first: list[bytes] = [first]
        self.socket = socket

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if not self.first:
            raise AssertionError("the error met while gathering comes first")
        return self.first.pop()

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        raise AssertionError("nothing is written")

    def close(self) -> None:
        pass

    def get_extra_info(self, info: str) -> object:
        return {"ssl_object": self, "socket": self.socket}.get(info)


def test_an_error_met_while_gathering_comes_after_the_records_before_it() -> None:
    """The records read before a reset are passed on; the reset is the next read's."""
    arrived = _ArrivedRecords([b"b" * 16384])
    stream = deadline_transport._Stream(_FirstRecord(b"a" * 16384, arrived), tls_socket=True)
    assert stream.read(HTTPCORE_READ, 5) == b"a" * 16384 + b"b" * 16384
    assert arrived.timeouts == [0.0]  # never waits
    with pytest.raises(httpcore.ReadError, match="reset"):
        stream.read(HTTPCORE_READ, 5)
