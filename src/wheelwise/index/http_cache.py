"""A small on-disk cache of fetched pages, revalidated with ETag / Last-Modified.

One file per (URL, ``Accept``) pair, named by their sha256: a JSON header line
(validators, final URL after redirects, ``Content-Type``) and the body. Entries are
written to a temporary file and renamed into place, so a reader never sees half an
entry; an entry that cannot be read is treated as missing. Failing to write the
cache never fails a fetch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import NamedTuple

from wheelwise.cachedir import user_cache_dir
from wheelwise.untrusted_json import loads_json

_log = logging.getLogger(__name__)
_FORMAT = 1


def default_cache_dir() -> Path:
    """``<user cache dir>/http`` (``$WHEELWISE_CACHE_DIR/http`` where that is set)."""
    return Path(user_cache_dir()) / "http"


class CachedResponse(NamedTuple):
    url: str  # the URL the body came from, after redirects
    content_type: str | None
    etag: str | None
    last_modified: str | None
    body: bytes

    def validators(self) -> dict[str, str]:
        """The conditional request headers that revalidate this entry."""
        headers: dict[str, str] = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


class HttpCache:
    """Cached responses under *directory* (created on first write)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, url: str, accept: str) -> Path:
        key = hashlib.sha256(f"{accept}\n{url}".encode()).hexdigest()
        return self.directory / key[:2] / key

    def get(self, url: str, accept: str) -> CachedResponse | None:
        try:
            raw = self._path(url, accept).read_bytes()
        except OSError:
            return None
        header, sep, body = raw.partition(b"\n")
        if not sep:
            return None
        try:
            meta = loads_json(header)
            if meta.get("format") != _FORMAT or meta.get("request") != url:
                return None
            return CachedResponse(
                url=str(meta["url"]),
                content_type=meta.get("content_type"),
                etag=meta.get("etag"),
                last_modified=meta.get("last_modified"),
                body=body,
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def put(self, url: str, accept: str, response: CachedResponse) -> None:
        if not response.etag and not response.last_modified:
            return  # nothing to revalidate with
        header = {
            "format": _FORMAT,
            "request": url,
            "url": response.url,
            "content_type": response.content_type,
            "etag": response.etag,
            "last_modified": response.last_modified,
        }
        data = json.dumps(header, separators=(",", ":")).encode() + b"\n" + response.body
        path = self._path(url, accept)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as stream:
                    stream.write(data)
                Path(temporary).replace(path)
            except BaseException:
                with contextlib.suppress(OSError):
                    Path(temporary).unlink()
                raise
        except OSError as exc:
            _log.debug("cannot write the HTTP cache entry for %s: %s", url, exc)
