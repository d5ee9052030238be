"""How the index client reaches servers, as the command line sets it: the CA
certificates it trusts (pip's ``--cert``, uv's ``--native-tls``), a client
certificate (pip's ``--client-cert``, uv's ``SSL_CLIENT_CERT``), the hosts whose
certificates are not checked (pip's ``--trusted-host``, uv's
``--allow-insecure-host``) and a proxy (pip's ``--proxy``).

Without any of them, the client is httpx's: ``SSL_CERT_FILE`` or ``SSL_CERT_DIR``,
else certifi's bundle, and the proxies of the environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from wheelwise.errors import WheelwiseError

__all__ = ["Connection", "HostPattern", "InsecureHostError", "parse_host"]


class InsecureHostError(ValueError, WheelwiseError):
    """A ``--trusted-host`` entry that names no host."""


@dataclass(frozen=True)
class HostPattern:
    """One host whose certificate is not checked: on every port (*port* None), or on
    one."""

    host: str
    port: int | None = None

    def matches(self, host: str, port: int) -> bool:
        return host.lower() == self.host and (self.port is None or self.port == port)


def parse_host(entry: str) -> HostPattern:
    """*entry* as pip's ``--trusted-host`` and uv's ``--allow-insecure-host`` take it:
    ``HOST``, ``HOST:PORT``, ``[IPV6]:PORT`` or a URL (its host and port). Raises
    :class:`InsecureHostError` when it names no host or a port out of range."""
    import ipaddress  # only with --trusted-host

    text = entry.strip()
    try:
        if ipaddress.ip_address(text).version == 6:  # ::1, without brackets
            return HostPattern(text.lower())
    except ValueError:
        pass
    try:
        parts = urlsplit(text if "://" in text else f"//{text}")
        host, port = parts.hostname, parts.port
    except ValueError:  # a bracket left open, a port that is no number or out of range
        host = None
    if not host:
        raise InsecureHostError(
            f"--trusted-host {entry!r}: not a host, HOST:PORT or URL (for example "
            "pypi.internal or pypi.internal:8443)"
        )
    return HostPattern(host.lower(), port)


@dataclass(frozen=True)
class Connection:
    """The settings of the client's connections; the defaults are httpx's."""

    # A CA bundle (a PEM file, or a folder OpenSSL can read) trusted instead of the
    # default ones.
    cert: Path | None = None
    # The certificates of the operating system instead of certifi's bundle.
    native_tls: bool = False
    # One PEM file holding the client's certificate and its private key.
    client_cert: Path | None = None
    insecure_hosts: tuple[HostPattern, ...] = ()
    # The proxy of every request, instead of the environment's (NO_PROXY too);
    # "": none, the environment's left out.
    proxy: str | None = None

    def is_insecure(self, host: str, port: int) -> bool:
        """Whether the certificate of *host* on *port* goes unchecked."""
        return any(pattern.matches(host, port) for pattern in self.insecure_hosts)
