"""Credentials for private indexes from the user's ``.netrc``, as pip and uv read it.

A URL that carries its own credentials (``https://user:token@host/simple/``) is
sent with those; otherwise a request to a host the netrc file names
(``machine HOST login USER password TOKEN``, or its ``default`` entry) gets them as
HTTP basic authentication. httpx drops the header when a redirect leaves the host.
The file is ``$NETRC``, else ``~/.netrc``; without one, nothing is added.
"""

from __future__ import annotations

import netrc
import os
from collections.abc import Generator
from pathlib import Path

import httpx

from wheelwise.client.errors import SourceError

__all__ = ["netrc_auth"]


class _NetrcAuth(httpx.Auth):
    """Basic authentication: the URL's credentials, else the netrc file's."""

    def __init__(self, entries: netrc.netrc) -> None:
        self._entries = entries

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        url = request.url
        if url.username or url.password:  # httpx's own rule, which a client auth turns off
            yield from httpx.BasicAuth(url.username, url.password).auth_flow(request)
            return
        found = self._entries.authenticators(url.host)
        if found is not None and found[2]:
            login, _, password = found
            yield from httpx.BasicAuth(login, password or "").auth_flow(request)
            return
        yield request


def netrc_auth() -> httpx.Auth | None:
    """The authentication of the user's netrc file, or None without one. Raises
    SourceError for a file that cannot be read as one."""
    given = os.environ.get("NETRC", "").strip()
    path = Path(given).expanduser() if given else Path.home() / ".netrc"
    if not path.is_file():
        return None
    try:
        entries = netrc.netrc(str(path))
    except (OSError, netrc.NetrcParseError) as exc:
        reason = getattr(exc, "msg", None) or getattr(exc, "strerror", None) or str(exc)
        raise SourceError(
            str(path),
            f"{path}: cannot be read as a netrc file ({reason}); fix it, or set NETRC to "
            "another file",
        ) from None
    return _NetrcAuth(entries)
