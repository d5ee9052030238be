"""Reading an HTTP response body within limits: a decoded-size cap and a deadline.

httpx bounds each socket read (``--timeout``), not a request: a server that sends a
byte now and then keeps a request alive forever, and a small gzip body can decode
to gigabytes in one step. Here the body is read raw and decoded in steps of at most
:data:`STEP` bytes, so that no more than the cap (plus one step) is ever held, and
the deadline is checked as each piece arrives (between pieces, the per-read
timeout applies, shortened to the time left by the deadline transport).

* Pages, PEP 658 metadata and ``*-variants.json``: the whole request (connecting
  included) must end within the deadline (``--request-deadline``,
  ``WHEELWISE_REQUEST_DEADLINE``; :data:`DEFAULT_DEADLINE` seconds by default).
  Decoded size caps: :data:`PAGE_CAP` for a page, :data:`FILE_CAP` for the others.
* Wheels: the deadline plus one second for every :data:`WHEEL_RATE` bytes received,
  so that a big wheel on a slow but steady link finishes while a drip does not.

A :class:`Deadline` used as a context manager is also the deadline of the requests
made in that block: :mod:`wheelwise.client.deadline_transport` caps each socket
operation (connecting, TLS, sending, reading the status line and headers) by the time
it has left.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator
from contextvars import ContextVar, Token
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI reads the defaults here without loading httpx
    import httpx

__all__ = [
    "ACCEPT_ENCODING",
    "DEFAULT_DEADLINE",
    "FILE_CAP",
    "PAGE_CAP",
    "STEP",
    "WHEEL_RATE",
    "BodyLimit",
    "Deadline",
    "current_deadline",
    "read_body",
]

DEFAULT_DEADLINE = 300.0
PAGE_CAP = 64 << 20
FILE_CAP = 16 << 20
WHEEL_RATE = 16 << 10
STEP = 1 << 20
# The encodings decoded here, in bounded steps (the only ones asked for).
ACCEPT_ENCODING = "gzip, deflate"
_DEADLINE_HINT = (
    "(--request-deadline, or WHEELWISE_REQUEST_DEADLINE): the server is too slow or "
    "stalls; raise the deadline if the link is only slow"
)


class BodyLimit(Exception):
    """A body over its cap or its deadline, or undecodable; ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB" if size >= 1 << 20 else f"{size} bytes"


class Deadline:
    """*seconds* from now, plus one second per *rate* bytes received if given.

    Within ``with deadline:``, it is the :func:`current_deadline` of this thread (of
    this context): the transport then ends any socket operation once it passes, and
    sets :attr:`passed`."""

    def __init__(self, seconds: float, rate: int | None = None) -> None:
        self.seconds = seconds
        self.rate = rate
        self.start = time.monotonic()
        self.received = 0
        self.passed = False
        self._token: Token[Deadline | None] | None = None

    def remaining(self) -> float:
        """Seconds left, for the bytes received so far."""
        allowed = self.seconds + (self.received / self.rate if self.rate else 0.0)
        return self.start + allowed - time.monotonic()

    def check(self, received: int) -> None:
        self.received = received
        if self.remaining() < 0:
            self.passed = True
            raise BodyLimit(self.reason())

    def reason(self) -> str:
        """What the error says once the deadline has passed."""
        if self.rate is None:
            return (
                f"not complete within {self.seconds:g} s, the deadline for one request "
                + _DEADLINE_HINT
            )
        elapsed = time.monotonic() - self.start
        return (
            f"only {self.received} bytes in {elapsed:.0f} s, slower than the deadline of "
            f"{self.seconds:g} s plus 1 s per {self.rate >> 10} KiB received " + _DEADLINE_HINT
        )

    def __enter__(self) -> Deadline:
        self._token = _current.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None


# httpx's sync client makes a request in the calling thread: a context variable
# carries its deadline down to the socket operations.
_current: ContextVar[Deadline | None] = ContextVar("wheelwise_deadline", default=None)


def current_deadline() -> Deadline | None:
    """The deadline of the request being made, if any (see :class:`Deadline`)."""
    return _current.get()


class _Identity:
    def feed(self, data: bytes) -> Iterator[bytes]:
        yield data

    def flush(self) -> Iterator[bytes]:
        return iter(())


class _Zlib:
    """gzip or deflate (zlib-wrapped, or raw as some servers send it), decoded in
    steps of at most STEP bytes."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.gzip = encoding in ("gzip", "x-gzip")
        self.started = False
        self.decoder = zlib.decompressobj(zlib.MAX_WBITS | 16 if self.gzip else zlib.MAX_WBITS)

    def _step(self, data: bytes) -> bytes:
        try:
            return self.decoder.decompress(data, STEP)
        except zlib.error:
            if self.gzip or self.started:
                raise BodyLimit(f"the body is not valid {self.encoding} data") from None
            self.decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate
            self.started = True
            return self._step(data)

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.decoder.eof:
            return  # data after the end of the stream: ignored, as httpx does
        piece = self._step(data)
        self.started = True
        yield piece
        while self.decoder.unconsumed_tail and not self.decoder.eof:
            yield self._step(self.decoder.unconsumed_tail)

    def flush(self) -> Iterator[bytes]:
        if not self.decoder.eof and self.started:
            try:
                yield self.decoder.flush()
            except zlib.error:
                raise BodyLimit(f"the body is not valid {self.encoding} data") from None


def _decoder(response: httpx.Response) -> _Identity | _Zlib:
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return _Identity()
    if encoding in ("gzip", "x-gzip", "deflate"):
        return _Zlib(encoding)
    raise BodyLimit(
        f"the body comes with Content-Encoding {encoding!r}, which was not asked for "
        f"(only {ACCEPT_ENCODING})"
    )


def read_body(
    response: httpx.Response,
    *,
    cap: int,
    what: str,
    deadline: Deadline,
    expansion: int | None = None,
) -> Iterator[bytes]:
    """The decoded body of a streamed *response*, piece by piece; raises
    :class:`BodyLimit` once it decodes to more than *cap* bytes (*what* names the
    cap), once *deadline* passes, or when it cannot be decoded. With *expansion*, a
    content-encoded body may also decode to at most *expansion* times the bytes
    transferred (plus one step)."""
    decoder = _decoder(response)
    total = transferred = 0

    def counted(pieces: Iterator[bytes]) -> Iterator[bytes]:
        nonlocal total
        for piece in pieces:
            total += len(piece)
            if total > cap:
                raise BodyLimit(f"bigger than {_mib(cap)} once decoded, the limit for {what}")
            if expansion is not None and total > expansion * transferred + STEP:
                raise BodyLimit(
                    f"decodes to more than {expansion} times the {transferred} bytes "
                    "transferred: not a plausible compressed wheel"
                )
            if piece:
                yield piece

    for raw in response.iter_raw():
        transferred += len(raw)
        deadline.check(total)
        yield from counted(decoder.feed(raw))
    yield from counted(decoder.flush())
    deadline.check(total)
