"""Errors of the proxy: each carries the HTTP status a client gets with its message."""

from __future__ import annotations

from wheelwise.errors import WheelwiseError


class ProxyError(WheelwiseError):
    """A request the proxy cannot answer with content; ``status`` says how it fails."""

    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(ProxyError):
    """No such project or file (for this machine)."""

    status = 404


class UpstreamFailed(ProxyError):
    """An upstream is down, answered wrongly, or served a file that cannot be trusted."""

    status = 502


class UpstreamTimeout(UpstreamFailed):
    """An upstream did not answer in time."""

    status = 504


class StreamCut(WheelwiseError):
    """A response sent while its file was built cannot be completed: the file failed
    its checks, or its download started again. The client sees a cut response."""
