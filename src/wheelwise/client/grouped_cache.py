"""Big JSON pages kept grouped by version, so that an unchanged page is not read again.

Reading a big page again costs most of what fetching it did: decoding megabytes of
JSON and checking every link. So once a big PEP 691 page has been read, its links
are written once more, grouped by version: a header line (for each version, where
its links lie in the rest of the file and which kinds of file they are) and the
groups, each a list of ``(position, entry)`` with its checksum in the header. The
groups are written with :mod:`marshal`, not JSON: they are this program's own data,
written and read back by it, and encoding them as JSON again cost more than reading
the page did. A group's checksum is checked before it is unmarshalled, and each
entry is checked again as it is read.
When the same body comes back (fresh in the HTTP cache, or after a 304), only the
header is decoded, and a version's group when that version is asked for (the copy
is mapped, so only the groups asked for are read from disk); each entry is checked
again as it is read, exactly as if it came from the page. The body itself is only
read when the HTTP cache entry does not record its stamp, or a group fails a check. A copy made
from another body, or that cannot be read, is ignored; a group that fails a check is
read from the body. Failing to write a copy never fails a fetch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import marshal
import mmap
import zlib
from collections.abc import Callable
from pathlib import Path

from packaging.version import InvalidVersion, Version

from wheelwise.atomic_file import replace_with_bytes
from wheelwise.cache.http_cache import body_stamp
from wheelwise.client.page_files import OTHER_LINK, SDIST_LINK, WHEEL_LINK, PageFiles, PageLink
from wheelwise.client.simple_parse import json_builder, json_entry, json_link
from wheelwise.untrusted_json import loads_json
from wheelwise.userfiles import map_regular

__all__ = ["MIN_BODY", "GroupedPages", "body_stamp"]

_log = logging.getLogger(__name__)
_FORMAT = 2
# Pages smaller than this are read from their body: a copy would save little.
MIN_BODY = 256 << 10
# A header holds a few dozen bytes per version.
_HEADER_CAP = 64 << 20
_ALL_KINDS = WHEEL_LINK | SDIST_LINK | OTHER_LINK
_Warn = Callable[[str], None]


class GroupedPages:
    """Grouped copies of JSON pages under *directory*, one file per page URL."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, url: str) -> Path:
        key = hashlib.sha256(url.encode()).hexdigest()
        return self.directory / key[:2] / key

    def read(
        self,
        body: bytes | Callable[[], bytes],
        url: str,
        warn: _Warn | None = None,
        *,
        stamp: str | None = None,
    ) -> PageFiles:
        """The JSON page *body* (or what reads it) fetched from *url*: from its copy
        where there is one for this very body, else read (raising what reading
        raises) and copied. *stamp*: the body's :func:`body_stamp`, where known (the
        body is then not read while the copy serves)."""
        from wheelwise.client.simple_parse import read_json_page

        read_body = body if callable(body) else functools.partial(bytes, body)
        if stamp is None:
            stamp = body_stamp(read_body())

        @functools.cache
        def from_body() -> PageFiles:
            return read_json_page(read_body(), url, warn=warn)

        found = self._load(url, stamp, warn, from_body)
        if found is None:
            found = from_body()
            self._save(url, stamp, found)
        return found

    # -- reading ---------------------------------------------------------------------

    def _load(
        self, url: str, stamp: str, warn: _Warn | None, from_body: Callable[[], PageFiles]
    ) -> PageFiles | None:
        try:
            mapped = map_regular(self._path(url))
        except (OSError, ValueError):
            return None
        end = mapped.find(b"\n", 0, _HEADER_CAP)
        if end < 0:
            return None
        start = end + 1
        size = len(mapped) - start
        try:
            meta = loads_json(mapped[:end])
            if meta.get("format") != _FORMAT or meta.get("url") != url:
                return None
            if meta.get("stamp") != stamp:
                return None
            count = _count(meta["count"])
            groups: dict[Version, Callable[[], list[PageLink]]] = {}
            kinds: dict[Version, int] = {}
            for text, (offset, length, crc, kind) in meta["groups"].items():
                version = Version(text)
                _span(offset, length, size)
                if not isinstance(kind, int) or not 0 < kind <= _ALL_KINDS:
                    return None
                groups[version] = functools.partial(
                    _group, mapped, (start + offset, length, crc), url, version, from_body
                )
                kinds[version] = kind
            offset, length, crc = meta["rest"]
            _span(offset, length, size)
        except (KeyError, TypeError, ValueError, InvalidVersion, AttributeError):
            return None
        rest = functools.partial(
            _group, mapped, (start + offset, length, crc), url, None, from_body
        )
        return PageFiles.grouped(groups, kinds, rest, count, json_builder(url, warn))

    # -- writing ---------------------------------------------------------------------

    def _save(self, url: str, stamp: str, page: PageFiles) -> None:
        pieces: list[bytes] = []
        offset = 0
        groups: dict[str, list[int]] = {}
        for version in page.versions():
            data = _group_bytes(page.links_of(version))
            groups[str(version)] = [offset, len(data), zlib.crc32(data), page.kinds_of(version)]
            pieces.append(data)
            offset += len(data)
        rest = _group_bytes(page.unversioned())
        pieces.append(rest)
        header = {
            "format": _FORMAT,
            "url": url,
            "stamp": stamp,
            "count": len(page),
            "groups": groups,
            "rest": [offset, len(rest), zlib.crc32(rest)],
        }
        try:
            replace_with_bytes(self._path(url), [_dumps(header) + b"\n", *pieces])
        except OSError as exc:
            _log.debug("cannot keep a grouped copy of %s: %s", url, exc)


def _group(
    mapped: mmap.mmap,
    span: tuple[int, int, object],
    url: str,
    version: Version | None,
    from_body: Callable[[], PageFiles],
) -> list[PageLink]:
    """The links of one group (*version*; None: the links of no version), from the
    copy, or from the body when the copy fails a check (its checksum first)."""
    offset, length, crc = span
    try:
        data = mapped[offset : offset + length]
        if len(data) != length or zlib.crc32(data) != crc:
            raise ValueError("the group's checksum does not match")
        entries = marshal.loads(data)
        if not isinstance(entries, list):
            raise ValueError("not a list")
        links = []
        for item in entries:
            position, entry = item
            if not isinstance(position, int) or isinstance(position, bool):
                raise ValueError(f"position {position!r}")
            link = json_link(entry, position, url)
            if link is None:
                raise ValueError(f"position {position}: not a link")
            links.append(link)
        return links
    except Exception as exc:  # any damage: the body has every link
        _log.debug("the grouped copy of %s cannot be used (%s): reading the page", url, exc)
        page = from_body()
        return page.links_of(version) if version is not None else page.unversioned()


def _group_bytes(links: list[PageLink]) -> bytes:
    return marshal.dumps([(link.position, json_entry(link)) for link in links])


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"count {value!r}")
    return value


def _span(offset: object, length: object, size: int) -> None:
    """Raise ValueError unless *offset* and *length* lie within *size* bytes."""
    if (
        not isinstance(offset, int)
        or not isinstance(length, int)
        or isinstance(offset, bool)
        or isinstance(length, bool)
        or offset < 0
        or length < 0
        or offset + length > size
    ):
        raise ValueError(f"span {offset!r}, {length!r}")
