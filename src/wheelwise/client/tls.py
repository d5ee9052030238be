"""The TLS contexts of the index client: httpx's defaults, with the CA certificates
loaded when the first TLS connection is made.

httpx trusts ``SSL_CERT_FILE``, else ``SSL_CERT_DIR``, else certifi's bundle; here
``--cert`` comes before all three, and ``--native-tls`` puts the operating system's
certificates in place of certifi's. ``--client-cert`` is loaded into every context,
the one of the hosts whose certificates are not checked (:func:`insecure_tls_context`)
too.
Parsing that bundle is CPU work that an install from an ``http://`` or
``file://`` index never needs, so :func:`client_tls_context` only checks now that
the bundle file can be read (an unreadable one is a :class:`SourceError` at once),
and loads the certificates at the first TLS handshake; a bundle that cannot be parsed is
the same :class:`SourceError`, raised by that first connection.
"""

from __future__ import annotations

import os
import ssl
import sys
import threading
from pathlib import Path
from typing import Any

from wheelwise.client.connection import Connection
from wheelwise.client.errors import SourceError

__all__ = ["client_cert_problem", "client_tls_context", "insecure_tls_context"]

DEFAULT_CONNECTION = Connection()


class _TrustOnFirstUse(ssl.SSLContext):
    """A client context (verification on, as ``ssl.create_default_context`` sets
    it) whose CA certificates load before its first socket or BIO is wrapped."""

    _cafile: str | None
    _capath: str | None
    _where: str
    _loaded: bool
    _loading: threading.Lock

    def _trust(self) -> None:
        if self._loaded:
            return
        with self._loading:
            if self._loaded:
                return
            try:
                if self._cafile is None and self._capath is None:
                    self.load_default_certs()  # --native-tls
                else:
                    self.load_verify_locations(cafile=self._cafile, capath=self._capath)
            except OSError as error:  # ssl.SSLError included
                raise _unreadable(self._where, error) from None
            self._loaded = True

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self._trust()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self._trust()
        return super().wrap_bio(*args, **kwargs)


def client_tls_context(connection: Connection = DEFAULT_CONNECTION) -> ssl.SSLContext:
    """httpx's default client context (CA certificates from ``SSL_CERT_FILE`` or
    ``SSL_CERT_DIR``, else certifi), or *connection*'s ``--cert`` or system
    certificates, loading them at the first TLS connection. Raises
    :class:`SourceError` when the chosen bundle file or the client certificate cannot
    be read."""
    cafile: str | None = None
    capath: str | None = None
    if connection.cert is not None:
        where = f"--cert {connection.cert}"
        if connection.cert.is_dir():
            capath = str(connection.cert)
        else:
            cafile = str(connection.cert)
    elif os.environ.get("SSL_CERT_FILE"):
        cafile = os.environ["SSL_CERT_FILE"]
        where = f"SSL_CERT_FILE={cafile}"
    elif os.environ.get("SSL_CERT_DIR"):
        capath = os.environ["SSL_CERT_DIR"]
        where = f"SSL_CERT_DIR={capath}"
    elif connection.native_tls:
        where = "the system's certificates (--native-tls)"
    else:
        import certifi

        cafile = certifi.where()
        where = "the certifi bundle"
    if cafile is not None:  # SSL_CERT_DIR may list several folders: OpenSSL reads it
        try:
            with Path(cafile).open("rb"):
                pass
        except OSError as error:
            raise _unreadable(where, error) from None
    context = _TrustOnFirstUse(ssl.PROTOCOL_TLS_CLIENT)
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = True
    context._cafile, context._capath, context._where = cafile, capath, where
    context._loaded = False
    context._loading = threading.Lock()
    _finish(context, connection)
    return context


def insecure_tls_context(connection: Connection) -> ssl.SSLContext:
    """The context of *connection*'s ``--trusted-host`` hosts: encrypted, but neither
    the certificate nor the host name checked."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    _finish(context, connection)
    return context


def _finish(context: ssl.SSLContext, connection: Connection) -> None:
    """The client certificate and the key log, as ``ssl.create_default_context``
    reads ``SSLKEYLOGFILE``."""
    if connection.client_cert is not None:
        why = _load_client_cert(context, connection.client_cert)
        if why is not None:
            raise SourceError(
                str(connection.client_cert),
                f"cannot load the client certificate {connection.client_cert}: {why}; "
                "--client-cert (SSL_CLIENT_CERT) takes one PEM file holding the "
                "certificate and its private key, unencrypted",
            )
    keylog = os.environ.get("SSLKEYLOGFILE")
    if keylog and not sys.flags.ignore_environment:
        context.keylog_filename = keylog


def client_cert_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the client certificate at *path* does not load, or None when it does."""
    return _load_client_cert(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), path)


def _load_client_cert(context: ssl.SSLContext, path: str | os.PathLike[str]) -> str | None:
    """Load *path* (one PEM file: certificate and key) into *context*; why not, if it
    does not load. An encrypted key is refused, never asked a passphrase for on the
    terminal."""
    try:
        context.load_cert_chain(path, password=lambda: b"")
    except OSError as error:  # ssl.SSLError included
        return str(error.strerror or getattr(error, "reason", None) or error)
    return None


def _unreadable(where: str, error: OSError) -> SourceError:
    return SourceError(
        where,
        f"cannot load the CA certificates from {where}: "
        f"{error.strerror or error}; fix or unset that setting",
    )
