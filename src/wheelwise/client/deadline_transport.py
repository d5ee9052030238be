"""An httpx transport whose every socket operation ends by the request's deadline.

httpx bounds each socket read by ``--timeout``, and httpcore gives the same timeout
to each read of the status line and headers: a server that sends a header byte now
and then keeps a request alive forever, and so does a connection that stalls in its
TLS handshake. Here the network backend of httpcore's connection pool gives each
operation (connect, TLS handshake, send, read) at most the time left to the
:func:`~wheelwise.client.bounded.current_deadline`, and ends it with httpcore's
timeout error once that has passed, marking the deadline
(:attr:`~wheelwise.client.bounded.Deadline.passed`) so that the caller reports the
deadline, not the per-read timeout. Outside a deadline, nothing changes.

httpx's own ``HTTPTransport`` takes no network backend, so :class:`DeadlineTransport`
stands in for it (HTTP/1.1, httpx's default limits); :func:`deadline_client` keeps
the proxies of the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``,
``NO_PROXY``), whose requests go through httpx's ``HTTPTransport`` and so have only
the body deadline.
"""

from __future__ import annotations

import ipaddress
import ssl
import threading
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpcore
import httpx

from wheelwise.client.bounded import current_deadline

__all__ = ["DeadlineBackend", "DeadlineTransport", "deadline_client"]

# httpx's default limits (httpx.Client's own transport uses them).
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)
# The most a read asks the socket for. httpcore asks for 64 KiB, and each piece costs
# httpcore, h11 and httpx about 0.1 ms of interpreter work whatever its size: a 3 GB
# download read 64 KiB at a time spent seconds of CPU on it. A read asks for twice
# what the one before got, so only a fast sender's bytes come in bigger pieces; a
# slow one's are asked for as before (the interpreter makes room for all that is
# asked). A TLS socket gives one record (16 KiB at most) a read, so the records
# already there are decrypted into one buffer of the stream's and passed on as one
# piece. The transport's speed trick (docs/benchmarks-method.md).
READ_BYTES = 1 << 20
# The most TLS records gathered into a piece: bigger pieces were slower, each one
# memory the allocator maps afresh (page faults cost more than the pieces saved).
GATHER_BYTES = 128 << 10


def _limit(timeout: float | None, timed_out: type[httpcore.TimeoutException]) -> float | None:
    """*timeout*, or less when the current deadline is nearer; raises *timed_out*
    once it has passed."""
    deadline = current_deadline()
    if deadline is None:
        return timeout
    left = deadline.remaining()
    if left <= 0:
        deadline.passed = True
        raise timed_out("the request deadline has passed")
    return left if timeout is None or left < timeout else timeout


def _mark(timeout: float | None, limit: float | None) -> None:
    """After a timeout: the deadline ended it when it shortened the wait."""
    deadline = current_deadline()
    if deadline is not None and limit != timeout:
        deadline.passed = True


class _Stream(httpcore.NetworkStream):
    """*stream*, each operation capped by the current deadline. *tls_socket*: whether
    *stream*'s socket does its TLS itself (not TLS inside another TLS stream), so
    that a read may gather the records waiting on it."""

    def __init__(self, stream: httpcore.NetworkStream, tls_socket: bool = False) -> None:
        self._stream = stream
        self._got = 0  # what the last read got
        self._tls = stream.get_extra_info("ssl_object")
        sock = stream.get_extra_info("socket") if tls_socket and self._tls is not None else None
        self._socket = sock if isinstance(sock, ssl.SSLSocket) else None
        self._error: httpcore.ReadError | None = None  # met while gathering
        self._buffer = bytearray()  # where TLS records are gathered

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        limit = _limit(timeout, httpcore.ReadTimeout)
        wanted = max(max_bytes, min(2 * self._got, READ_BYTES))
        if self._tls is not None:
            wanted = min(wanted, GATHER_BYTES)
        try:
            # A TLS read gets one record, whatever it asks for.
            data = self._stream.read(wanted if self._tls is None else max_bytes, limit)
        except httpcore.ReadTimeout:
            _mark(timeout, limit)
            raise
        if self._socket is not None and 0 < len(data) < wanted:
            data = self._gather(self._socket, data, wanted)
        self._got = len(data)
        return data

    def _gather(self, sock: ssl.SSLSocket, first: bytes, wanted: int) -> bytes:
        """*first* and the TLS records that have already arrived whole, up to *wanted*
        bytes, decrypted into one buffer without waiting: the socket stays
        non-blocking until httpcore's next operation sets its timeout again, and a
        record not yet whole is read by that operation. An error is kept for the next
        read, after these bytes."""
        if len(self._buffer) < wanted:
            self._buffer = bytearray(wanted)
        with memoryview(self._buffer) as view:
            total = len(first)
            view[:total] = first
            try:
                sock.settimeout(0.0)
                while total < wanted:
                    got = sock.recv_into(view[total:wanted])
                    if not got:
                        break  # the end of the stream: the next read says so
                    total += got
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                pass  # the next record has not arrived whole
            except OSError as exc:
                self._error = httpcore.ReadError(exc)
            # A slow sender's read gathers nothing: its record goes on as it came.
            return first if total == len(first) else bytes(view[:total])

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        limit = _limit(timeout, httpcore.WriteTimeout)
        try:
            self._stream.write(buffer, limit)
        except httpcore.WriteTimeout:
            _mark(timeout, limit)
            raise

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        limit = _limit(timeout, httpcore.ConnectTimeout)
        try:
            stream = self._stream.start_tls(ssl_context, server_hostname, limit)
        except httpcore.ConnectTimeout:
            _mark(timeout, limit)
            raise
        # TLS over this stream's own TLS (an HTTPS proxy) is not read from its socket.
        return _Stream(stream, tls_socket=self._tls is None)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sync backend, each operation capped by the current deadline."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        limit = _limit(timeout, httpcore.ConnectTimeout)
        try:
            stream = self._backend.connect_tcp(host, port, limit, local_address, socket_options)
        except httpcore.ConnectTimeout:
            _mark(timeout, limit)
            raise
        return _Stream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        limit = _limit(timeout, httpcore.ConnectTimeout)
        try:
            stream = self._backend.connect_unix_socket(path, limit, socket_options)
        except httpcore.ConnectTimeout:
            _mark(timeout, limit)
            raise
        return _Stream(stream)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


# httpcore's errors as httpx raises them, the most specific first.
_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


def _httpx_error(exc: Exception) -> httpx.TransportError | None:
    for theirs, ours in _ERRORS:
        if isinstance(exc, theirs):
            return ours(str(exc))
    return None


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except Exception as exc:
            mapped = _httpx_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class DeadlineTransport(httpx.BaseTransport):
    """httpx's ``HTTPTransport`` (HTTP/1.1, no proxy) over a :class:`DeadlineBackend`;
    *verify* and *trust_env* as for ``httpx.Client``."""

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | str | bool = True,
        trust_env: bool = True,
        limits: httpx.Limits = LIMITS,
        retries: int = 0,
    ) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=trust_env),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            retries=retries,
            network_backend=DeadlineBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            response = self._pool.handle_request(core)
        except Exception as exc:
            mapped = _httpx_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        assert isinstance(response.stream, Iterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


def _no_proxy_pattern(host: str) -> str:
    """httpx's mount pattern for one ``NO_PROXY`` entry (as curl reads them)."""
    if "://" in host:
        return host
    try:
        address = ipaddress.ip_address(host.split("/")[0])
    except ValueError:
        return f"all://{host}" if host.lower() == "localhost" else f"all://*{host}"
    return f"all://[{host}]" if address.version == 6 else f"all://{host}"


def _proxy_mounts(
    verify: ssl.SSLContext | str | bool,
    proxy: str | None = None,
    insecure: _Insecure | None = None,
) -> dict[str, httpx.BaseTransport | None]:
    """The mounts httpx makes from the environment's proxies (a given transport turns
    them off): proxied schemes through httpx's transport, ``NO_PROXY`` hosts (None)
    through the client's own. *proxy* (``--proxy``) stands for all of them,
    ``NO_PROXY`` too, as pip's ``--proxy`` does; ``""`` for none."""
    if proxy is not None:  # "": none at all, the environment's left out too
        found = {"http": proxy, "https": proxy} if proxy else {}
    else:
        found = urllib.request.getproxies()
    mounts: dict[str, httpx.BaseTransport | None] = {}
    for scheme in ("http", "https", "all"):
        if found.get(scheme):
            url = found[scheme] if "://" in found[scheme] else f"http://{found[scheme]}"
            mounts[f"{scheme}://"] = _by_origin(_through(url, verify), verify, insecure)
    for host in (entry.strip() for entry in found.get("no", "").split(",")):
        if host == "*":
            return {}
        if host:
            mounts[_no_proxy_pattern(host)] = None
    return mounts


def _through(
    proxy: str, verify: ssl.SSLContext | str | bool
) -> Callable[[ssl.SSLContext | str | bool], httpx.BaseTransport]:
    """What makes httpx's transport through *proxy*, given the context of the hosts
    reached through it; an https proxy's own certificate is checked with *verify*
    (httpx would check it with its defaults, not ``--cert``'s)."""
    tls_proxy = proxy.lower().startswith("https://")
    hop = verify if tls_proxy and isinstance(verify, ssl.SSLContext) else None
    return lambda context: httpx.HTTPTransport(
        verify=context, proxy=httpx.Proxy(proxy, ssl_context=hop)
    )


# The context of the hosts whose certificates are not checked, and which they are.
_Insecure = tuple[ssl.SSLContext, Callable[[str, int], bool]]
_DEFAULT_PORTS = {"http": 80, "https": 443}


class _ByOrigin(httpx.BaseTransport):
    """Requests to the hosts whose certificates are not checked through a transport
    made with the context that does not check them; the others through *checked*.
    The choice is by host and port, which a TLS context alone does not see."""

    def __init__(
        self,
        make: Callable[[ssl.SSLContext | str | bool], httpx.BaseTransport],
        checked: httpx.BaseTransport,
        insecure: _Insecure,
    ) -> None:
        self._make, self._checked, self._insecure = make, checked, insecure
        self._unchecked: httpx.BaseTransport | None = None
        self._making = threading.Lock()  # downloads run on several threads

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        port = url.port or _DEFAULT_PORTS.get(url.scheme, 0)
        context, skips = self._insecure
        # A host given as its Unicode name or as its IDNA (xn--) one.
        ascii_host = url.raw_host.decode("ascii", "replace")
        if url.scheme != "https" or not (skips(url.host, port) or skips(ascii_host, port)):
            return self._checked.handle_request(request)
        with self._making:
            if self._unchecked is None:
                self._unchecked = self._make(context)
        return self._unchecked.handle_request(request)

    def close(self) -> None:
        self._checked.close()
        if self._unchecked is not None:
            self._unchecked.close()


def _by_origin(
    make: Callable[[ssl.SSLContext | str | bool], httpx.BaseTransport],
    verify: ssl.SSLContext | str | bool,
    insecure: _Insecure | None,
) -> httpx.BaseTransport:
    """*make*'s transport with *verify*, or, with hosts whose certificates are not
    checked, a :class:`_ByOrigin` of it."""
    checked = make(verify)
    return checked if insecure is None else _ByOrigin(make, checked, insecure)


def deadline_client(
    *,
    verify: ssl.SSLContext | str | bool = True,
    proxy: str | None = None,
    insecure: _Insecure | None = None,
    **options: Any,
) -> httpx.Client:
    """An ``httpx.Client`` (*options* as for it, ``trust_env`` on) whose direct
    requests go through a :class:`DeadlineTransport`. *proxy* stands for the
    environment's proxies; *insecure* is the context of the hosts whose
    certificates are not checked, and the test of a host and port."""
    return httpx.Client(
        transport=_by_origin(lambda context: DeadlineTransport(verify=context), verify, insecure),
        mounts=_proxy_mounts(verify, proxy, insecure),
        trust_env=True,
        **options,
    )
