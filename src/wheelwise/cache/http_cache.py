"""A small on-disk cache of fetched pages, fresh for their ``max-age`` and then
revalidated with ETag / Last-Modified.

One file per (URL, ``Accept``) pair, named by their sha256: a JSON header line
(validators, final URL after redirects, ``Content-Type``, when it was stored, for
how long it is fresh, and the body's size and checksum) and the body. An entry is
opened without reading its body (:meth:`HttpCache.open`): a page whose grouped copy
is kept (:mod:`wheelwise.client.grouped_cache`) is read from that, by the checksum.
Entries are written to a temporary file and renamed into place, so a reader never
sees half an entry; an entry that cannot be read, or was written in another format,
is treated as missing. Failing to write the cache never fails a fetch.

Freshness follows ``Cache-Control`` as a private cache reads it (RFC 9111):
``max-age=N`` makes the entry fresh for N seconds from when it was stored, less the
``Age`` the response already had; ``no-cache`` (and ``must-revalidate`` once
stale) means revalidate before every use; ``no-store`` means the response is not
kept. A response with no ``max-age`` but a ``Last-Modified`` date (and no ``Expires``
or ``must-revalidate``) is fresh for :data:`HEURISTIC_LIFETIME`, as uv takes it
(RFC 9111 4.2.2). ``s-maxage`` and ``Expires`` are not read otherwise. A response
with neither validators nor a lifetime is not kept: nothing could be saved by it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from wheelwise.atomic_file import replace_with_bytes
from wheelwise.cachedir import user_cache_dir
from wheelwise.untrusted_json import loads_json
from wheelwise.userfiles import map_regular

_log = logging.getLogger(__name__)
_FORMAT = 2
# Longer lifetimes are clamped: a year, as far as anyone caches a page.
_MAX_LIFETIME = 365 * 24 * 3600
# The lifetime of a page that gives no explicit one but a Last-Modified date (RFC 9111
# 4.2.2 lets a cache choose it): PyPI's max-age, which uv assumes too. A static index
# (nginx, S3) sends no Cache-Control at all.
HEURISTIC_LIFETIME = 600.0


def body_stamp(body: bytes) -> str:
    """What tells one body from another, cheaply (only ever compared with a body
    fetched from the same URL)."""
    return f"{len(body)}:{zlib.crc32(body):08x}"


def default_cache_dir() -> Path:
    """``<user cache dir>/http`` (``$WHEELWISE_CACHE_DIR/http`` where that is set)."""
    return Path(user_cache_dir()) / "http"


class Freshness(NamedTuple):
    """What ``Cache-Control`` (and ``Age``) allow: *store* the response at all, and
    for how many seconds after it is stored it may be used without asking."""

    store: bool
    lifetime: float


def freshness(headers: Mapping[str, str]) -> Freshness:
    """The :class:`Freshness` of a response with *headers* (lower-case names, as
    httpx gives them; a malformed directive is ignored, as if absent)."""
    directives: dict[str, str | None] = {}
    for part in headers.get("cache-control", "").split(","):
        name, sep, value = part.strip().partition("=")
        name = name.strip().lower()
        if name and name not in directives:  # the first of a repeated directive counts
            directives[name] = value.strip().strip('"') if sep else None
    if "no-store" in directives:
        return Freshness(False, 0.0)
    max_age = _seconds(directives.get("max-age"))
    if "no-cache" in directives:
        return Freshness(True, 0.0)
    if max_age is None:
        heuristic = "last-modified" in headers and not (
            "expires" in headers or "must-revalidate" in directives
        )
        return Freshness(True, HEURISTIC_LIFETIME if heuristic else 0.0)
    age = _seconds(headers.get("age")) or 0
    return Freshness(True, float(max(0, max_age - age)))


def _seconds(value: str | None) -> int | None:
    """A delta-seconds value (RFC 9111 1.2.2: digits only), else None."""
    if value is None or not value.isascii() or not value.isdigit():
        return None
    digits = value.lstrip("0")
    return _MAX_LIFETIME if len(digits) > 9 else min(int(digits or "0"), _MAX_LIFETIME)


def _number(value: object) -> float:
    """A JSON number as a float (TypeError for anything else, OverflowError when
    too large)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


class CachedResponse(NamedTuple):
    url: str  # the URL the body came from, after redirects
    content_type: str | None
    etag: str | None
    last_modified: str | None
    body: bytes
    # When it was stored (seconds since the epoch), and for how long it is fresh.
    stored_at: float = 0.0
    lifetime: float = 0.0

    def is_fresh(self, now: float | None = None) -> bool:
        """Usable without asking the server: within its lifetime (a clock that went
        back before the entry was stored makes it stale)."""
        age = (time.time() if now is None else now) - self.stored_at
        return 0 <= age < self.lifetime

    def validators(self) -> dict[str, str]:
        """The conditional request headers that revalidate this entry."""
        headers: dict[str, str] = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


class StoredEntry(NamedTuple):
    """An entry opened without reading its body: *response* has an empty body,
    *read_body* reads it (as stored when the entry was opened), *stamp* is its
    :func:`body_stamp` when the entry records it."""

    response: CachedResponse
    size: int
    stamp: str | None
    read_body: Callable[[], bytes]


class HttpCache:
    """Cached responses under *directory* (created on first write)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, url: str, accept: str) -> Path:
        key = hashlib.sha256(f"{accept}\n{url}".encode()).hexdigest()
        return self.directory / key[:2] / key

    def get(self, url: str, accept: str) -> CachedResponse | None:
        stored = self.open(url, accept)
        if stored is None:
            return None
        return stored.response._replace(body=stored.read_body())

    def open(self, url: str, accept: str) -> StoredEntry | None:
        """The entry for *url* and *accept*, its body not read yet; None when there
        is none that can be read."""
        try:
            mapped = map_regular(self._path(url, accept))
        except (OSError, ValueError):
            return None
        end = mapped.find(b"\n")
        if end < 0:
            return None
        start = end + 1
        try:
            meta = loads_json(mapped[:end])
            if meta.get("format") != _FORMAT or meta.get("request") != url:
                return None
            entry = CachedResponse(
                url=meta["url"],
                content_type=meta.get("content_type"),
                etag=meta.get("etag"),
                last_modified=meta.get("last_modified"),
                body=b"",
                stored_at=meta["stored_at"],
                lifetime=meta["lifetime"],
            )
            stamp = meta.get("stamp")
            # The header is untrusted: each field must have its type.
            texts = (entry.content_type, entry.etag, entry.last_modified, stamp)
            if not isinstance(entry.url, str) or any(
                t is not None and not isinstance(t, str) for t in texts
            ):
                return None
            entry = entry._replace(
                stored_at=_number(entry.stored_at), lifetime=_number(entry.lifetime)
            )
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
            return None
        size = len(mapped) - start
        if stamp is not None and not stamp.startswith(f"{size}:"):
            return None  # not the body the header was written with

        def read_body() -> bytes:
            return mapped[start:]

        return StoredEntry(entry, size, stamp, read_body)

    def forget(self, url: str, accept: str) -> None:
        """Drop the entry of *url* (its body turned out to be wrong)."""
        with contextlib.suppress(OSError):
            self._path(url, accept).unlink()

    def put(self, url: str, accept: str, response: CachedResponse) -> None:
        if not response.etag and not response.last_modified and response.lifetime <= 0:
            return  # nothing to revalidate with, and never fresh
        header = {
            "format": _FORMAT,
            "request": url,
            "url": response.url,
            "content_type": response.content_type,
            "etag": response.etag,
            "last_modified": response.last_modified,
            "stored_at": response.stored_at,
            "lifetime": response.lifetime,
            "stamp": body_stamp(response.body),
        }
        head = json.dumps(header, separators=(",", ":")).encode() + b"\n"
        path = self._path(url, accept)
        try:
            replace_with_bytes(path, [head, response.body])  # a big page is not copied
        except OSError as exc:
            _log.debug("cannot write the HTTP cache entry for %s: %s", url, exc)
