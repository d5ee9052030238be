"""Reading simple repository pages: PEP 691 JSON and PEP 503 HTML (with ``html.parser``).

Both give the same :class:`IndexFile` records: file name, absolute URL (relative
links resolved against the page's URL, or its ``<base href>``), hashes,
``Requires-Python``, yanked status (PEP 592), core metadata availability and hash
(PEP 658 / PEP 714: ``core-metadata`` first, ``dist-info-metadata`` as the
fallback) and size (PEP 700) where given.

A page that cannot be read as what it claims to be raises
:class:`~wheelwise.client.errors.InvalidPage`. A single link whose URL cannot be
parsed (``http://[::1/x.whl``) or joined to the page's is skipped, as pip does; the
*warn* callback, if given, hears one line for each.

``parse_*`` read every link in full; ``read_*`` check each link's shape and read
it in full when its version is asked for (:class:`~wheelwise.client.page_files.PageFiles`),
so that an error in a link's hashes or URL is raised then.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from wheelwise.client.errors import InvalidPage
from wheelwise.client.index_file import IndexFile
from wheelwise.client.page_files import PageFiles, PageLink
from wheelwise.policy.hashes import digest_hex_length

JSON_V1 = "application/vnd.pypi.simple.v1+json"
HTML_V1 = "application/vnd.pypi.simple.v1+html"
_HEX_RE = re.compile(r"^[0-9a-fA-F]+$")

Warn = Callable[[str], None]


# -- hashes --------------------------------------------------------------------


def check_hashes(hashes: Mapping[str, str], where: str, url: str) -> dict[str, str]:
    """Lower-cased hashes; a value that cannot be a digest of its algorithm raises."""
    checked: dict[str, str] = {}
    for algorithm, value in hashes.items():
        name = algorithm.lower()
        if not isinstance(value, str) or not _HEX_RE.match(value):
            raise InvalidPage(url, f"{where}: {algorithm} hash {value!r} is not hexadecimal")
        expected = digest_hex_length(name)
        if expected is not None and len(value) != expected:
            raise InvalidPage(
                url,
                f"{where}: {algorithm} hash {value!r} has {len(value)} digits, not {expected}",
            )
        checked[name] = value.lower()
    return checked


# -- PEP 691 JSON --------------------------------------------------------------


def _api_major(version: object, url: str) -> None:
    if version is None:
        return
    text = str(version)
    major = text.split(".", 1)[0]
    if not major.isdigit():
        raise InvalidPage(url, f"{url}: repository version {text!r} is not a version number")
    if int(major) != 1:
        raise InvalidPage(
            url,
            f"{url}: the index speaks version {text} of the simple repository API; "
            "this wheelwise understands version 1 only: upgrade wheelwise",
        )


def _metadata_field(value: object, where: str, url: str) -> None:
    if value is None or isinstance(value, (bool, dict)):
        return
    raise InvalidPage(url, f"{where}: core-metadata must be a boolean or a hash table")


def _metadata_hashes(value: object, where: str, url: str) -> tuple[bool, dict[str, str]]:
    if isinstance(value, dict):
        return True, check_hashes(value, where, url)
    return value is True, {}


def parse_json_page(body: bytes, url: str, *, warn: Warn | None = None) -> list[IndexFile]:
    """The files of a PEP 691 JSON project page fetched from *url*."""
    return list(read_json_page(body, url, warn=warn).all())


def read_json_page(body: bytes, url: str, *, warn: Warn | None = None) -> PageFiles:
    """A PEP 691 JSON project page fetched from *url*, each link checked for shape
    (the rest when its version is asked for: see :mod:`wheelwise.client.page_files`)."""
    bad = f"{url}: not a valid PEP 691 project page"
    try:
        document = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidPage(url, f"{bad}: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InvalidPage(
            url, f"{bad}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise InvalidPage(url, f"{bad}: its JSON is nested too deeply") from None
    except ValueError as exc:  # an integer beyond the interpreter's digit limit
        raise InvalidPage(url, f"{bad}: {exc}") from None
    if not isinstance(document, dict):
        raise InvalidPage(url, f"{bad}: the document is not a JSON object")
    meta = document.get("meta")
    if not isinstance(meta, dict):
        raise InvalidPage(url, f"{bad}: no 'meta' object")
    _api_major(meta.get("api-version"), url)
    files = document.get("files")
    if not isinstance(files, list):
        raise InvalidPage(url, f"{bad}: no 'files' list")
    links = [
        link
        for index, entry in enumerate(files)
        if (link := json_link(entry, index, url, warn)) is not None
    ]
    return PageFiles(links, json_builder(url, warn))


def json_builder(url: str, warn: Warn | None = None) -> Callable[[PageLink], IndexFile | None]:
    """What reads a link of the JSON page at *url* in full (its URL and hashes)."""

    def build(link: PageLink) -> IndexFile | None:
        return _json_file(link, url, warn)

    return build


def json_entry(link: PageLink) -> object:
    """The ``files`` entry *link* was made from (to be kept, and read back through
    :func:`json_link`)."""
    entry, _ = link.raw
    return entry


def _skipped(url: str, where: str, link: str, warn: Warn | None) -> None:
    if warn is not None:
        warn(
            f"{where}: skipped the link {link!r}: it is not a valid http(s) URL (nor a "
            "file: one on a local page)"
        )


def json_link(entry: object, index: int, url: str, warn: Warn | None = None) -> PageLink | None:
    """The ``files[index]`` *entry* of the JSON page at *url*, checked for the type of
    each field (its hashes and URL are read later); None, and a word to *warn*, for
    an entry whose ``filename`` is not a file name (skipped, as a bad URL is)."""
    # Every link of a page goes through here, so the well-formed case is one test
    # per field and the message is only made for a link that fails one.
    if type(entry) is dict:
        filename, link = entry.get("filename"), entry.get("url")
        metadata_value = entry.get("core-metadata")
        if metadata_value is None:
            metadata_value = entry.get("dist-info-metadata")
        size = entry.get("size")
        if (
            type(filename) is str
            and filename
            and "/" not in filename
            and type(link) is str
            and link
            and type(entry.get("hashes", _NO_HASHES)) is dict
            and type(entry.get("requires-python", "")) is str
            and type(entry.get("yanked", False)) in _YANKED_TYPES
            and type(metadata_value) in _METADATA_TYPES
            and (size is None or (type(size) is int and size >= 0))
        ):
            return PageLink(filename, index, (entry, metadata_value))
    return _checked_json_link(entry, index, url, warn)


_NO_HASHES: dict[str, str] = {}
_YANKED_TYPES = (bool, str)
_METADATA_TYPES = (type(None), bool, dict)


def _checked_json_link(entry: object, index: int, url: str, warn: Warn | None) -> PageLink | None:
    """:func:`json_link` field by field: raises InvalidPage for the first field of
    *entry* that has the wrong type."""
    where = f"{url}: files[{index}]"
    if not isinstance(entry, dict):
        raise InvalidPage(url, f"{where} is not an object")
    filename, link = entry.get("filename"), entry.get("url")
    if not isinstance(filename, str) or not filename or "/" in filename:
        if warn is not None:
            shown = repr(filename)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            warn(f"{where}: skipped the entry whose filename {shown} is not a file name")
        return None
    if not isinstance(link, str) or not link:
        raise InvalidPage(url, f"{where}: 'url' must be a string")
    if not isinstance(entry.get("hashes", {}), dict):
        raise InvalidPage(url, f"{where}: 'hashes' must be an object")
    requires_python = entry.get("requires-python")
    if requires_python is not None and not isinstance(requires_python, str):
        raise InvalidPage(url, f"{where}: 'requires-python' must be a string")
    if not isinstance(entry.get("yanked", False), (bool, str)):
        raise InvalidPage(url, f"{where}: 'yanked' must be a boolean or a string")
    metadata_value = entry.get("core-metadata")
    if metadata_value is None:
        metadata_value = entry.get("dist-info-metadata")
    _metadata_field(metadata_value, where, url)
    size = entry.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise InvalidPage(url, f"{where}: 'size' must be a non-negative integer")
    return PageLink(filename, index, (entry, metadata_value))


def _json_file(link: PageLink, url: str, warn: Warn | None) -> IndexFile | None:
    entry, metadata_value = link.raw
    where = f"{url}: files[{link.position}]"
    has_metadata, metadata_hashes = _metadata_hashes(metadata_value, where, url)
    resolved = _resolve(url, entry["url"], where)
    if resolved is None:
        _skipped(url, where, entry["url"], warn)
        return None
    absolute, fragment_hashes = resolved
    yanked_value = entry.get("yanked", False)
    return IndexFile(
        filename=link.filename,
        url=absolute,
        hashes=check_hashes({**fragment_hashes, **entry.get("hashes", {})}, where, url),
        requires_python=entry.get("requires-python") or None,
        yanked=yanked_value is not False,
        yanked_reason=yanked_value if isinstance(yanked_value, str) and yanked_value else None,
        core_metadata=has_metadata,
        core_metadata_hashes=metadata_hashes,
        size=entry.get("size"),
        upload_time=uploaded if isinstance(uploaded := entry.get("upload-time"), str) else None,
    )


def _resolve(base: str, link: str, where: str) -> tuple[str, dict[str, str]] | None:
    """The absolute URL of *link* without its fragment, and a ``#algo=hex`` hash from
    it; None when *link* is not a URL that can be parsed (or joined to *base*), has a
    host name that cannot be one, or is of a scheme a page may not link: http and
    https, and ``file:`` from a page that is a local file itself (a server's page
    naming a file on this machine, or ``x:name.whl``, is never read from the disk)."""
    try:
        absolute, fragment = urldefrag(urljoin(base, link))
        parts = urlsplit(absolute)
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        return None
    if parts.hostname and not _host_encodes(parts.hostname):
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") and not (scheme == "file" and _is_local(base)):
        return None
    hashes: dict[str, str] = {}
    if fragment:
        algorithm, sep, value = fragment.partition("=")
        if sep and digest_hex_length(algorithm) is not None:
            hashes = check_hashes({algorithm: value}, where, base)
    return absolute, hashes


# A page's links share a few hosts and one base: each asked once, not per link.
@functools.lru_cache(maxsize=256)
def _host_encodes(host: str) -> bool:
    """Whether a resolver could take *host* (IDNA encodes it; not "a..b")."""
    try:
        host.encode("idna")
    except UnicodeError:
        return False
    return True


@functools.lru_cache(maxsize=64)
def _is_local(base: str) -> bool:
    """Whether the page at *base* is a local file (its links may name local files)."""
    return urlsplit(base).scheme.lower() in ("file", "")


# -- PEP 503 HTML ----------------------------------------------------------------


def _charset(content_type: str | None) -> str:
    for part in (content_type or "").split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


def parse_html_page(
    body: bytes, url: str, content_type: str | None = None, *, warn: Warn | None = None
) -> list[IndexFile]:
    """The files linked from a PEP 503 HTML page fetched from *url* (also a find-links
    page): the file name is the last path segment of each link."""
    return list(read_html_page(body, url, content_type, warn=warn).all())


def read_html_page(
    body: bytes, url: str, content_type: str | None = None, *, warn: Warn | None = None
) -> PageFiles:
    """Like :func:`parse_html_page`, each link read in full when its version is asked
    for (see :mod:`wheelwise.client.page_files`)."""
    bad = f"{url}: not a valid PEP 503 HTML page"
    charset = _charset(content_type)
    try:
        text = body.decode(charset)
    except LookupError:
        raise InvalidPage(url, f"{bad}: unknown charset {charset!r}") from None
    except UnicodeDecodeError as exc:
        raise InvalidPage(url, f"{bad}: not {charset} text (byte {exc.start})") from None
    if "\x00" in text:
        raise InvalidPage(url, f"{bad}: it holds binary data")
    # Imported here: html.parser takes time to import, and JSON indexes never need it.
    from wheelwise.client.simple_html import AnchorCollector

    parser = AnchorCollector()
    try:
        parser.feed(text)
        parser.close()
    except AssertionError as exc:  # html.parser's few hard failures
        raise InvalidPage(url, f"{bad}: {exc}") from None
    if parser.tags == 0:
        raise InvalidPage(url, f"{bad}: it has no HTML markup at all")
    _api_major(parser.version, url)
    base = url
    if parser.base:
        joined = _resolve(url, parser.base, url)
        if joined is None:
            _skipped(url, f"{url}: <base>", parser.base, warn)
        else:
            base = joined[0]
    links: list[PageLink] = []
    for position, attrs in enumerate(parser.anchors):
        filename = _link_filename(attrs["href"] or "")
        if filename is None:  # read in full now: the name depends on the base
            file = _html_file(attrs, base, url, warn)
            if file is not None and file.filename:
                links.append(PageLink(file.filename, position, file))
        elif filename:  # not a link to a directory ("../", "sub/")
            links.append(PageLink(filename, position, attrs))

    def build(link: PageLink) -> IndexFile | None:
        if isinstance(link.raw, IndexFile):
            return link.raw
        return _html_file(link.raw, base, url, warn)

    return PageFiles(links, build)


def _link_filename(href: str) -> str | None:
    """The file name of the link *href* (its last path segment, which joining it to
    the page's URL leaves as it is), or None when that takes the join: no path, a
    dot segment, or a URL that cannot be split."""
    try:
        path = urlsplit(href).path
    except ValueError:
        return None
    last = path.rsplit("/", 1)[-1]
    if not path or last in (".", ".."):
        return None
    return unquote(last)


def _html_file(
    attrs: Mapping[str, str | None], base: str, url: str, warn: Warn | None
) -> IndexFile | None:
    href = attrs["href"] or ""
    where = f"{url}: link {href!r}"
    resolved = _resolve(base, href, where)
    if resolved is None:
        _skipped(url, url, href, warn)
        return None
    absolute, hashes = resolved
    filename = unquote(urlsplit(absolute).path.rsplit("/", 1)[-1])
    metadata_attr = attrs.get("data-core-metadata")
    if metadata_attr is None:
        metadata_attr = attrs.get("data-dist-info-metadata")
    has_metadata, metadata_hashes = False, {}
    if metadata_attr is not None:
        algorithm, sep, value = metadata_attr.partition("=")
        if sep:
            has_metadata, metadata_hashes = True, check_hashes({algorithm: value}, where, url)
        elif metadata_attr.strip().lower() != "false":
            has_metadata = True
    yanked = "data-yanked" in attrs
    reason = attrs.get("data-yanked") if yanked else None
    return IndexFile(
        filename=filename,
        url=absolute,
        hashes=hashes,
        requires_python=attrs.get("data-requires-python") or None,
        yanked=yanked,
        yanked_reason=reason or None,
        core_metadata=has_metadata,
        core_metadata_hashes=metadata_hashes,
        upload_time=attrs.get("data-upload-time") or None,
    )


def page_kind(content_type: str | None) -> str | None:
    """``json`` or ``html`` for a simple page's ``Content-Type``; None for anything else."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in (JSON_V1, "application/vnd.pypi.simple.latest+json", "application/json"):
        return "json"
    if media in (HTML_V1, "application/vnd.pypi.simple.latest+html", "text/html"):
        return "html"
    return None


def parse_page(
    body: bytes, url: str, content_type: str | None, *, warn: Warn | None = None
) -> list[IndexFile]:
    """A project page of either form, by its ``Content-Type``."""
    return list(read_page(body, url, content_type, warn=warn).all())


def read_page(
    body: bytes, url: str, content_type: str | None, *, warn: Warn | None = None
) -> PageFiles:
    """Like :func:`parse_page`, each link read in full when its version is asked for."""
    kind = page_kind(content_type)
    if kind == "json":
        return read_json_page(body, url, warn=warn)
    if kind == "html":
        return read_html_page(body, url, content_type, warn=warn)
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media.startswith("application/vnd.pypi.simple."):
        raise InvalidPage(
            url,
            f"{url}: the index answered {media}, a version of the simple repository API "
            "this wheelwise does not know: upgrade wheelwise",
        )
    raise InvalidPage(
        url,
        f"{url}: answered {media or 'no content type'}, not a simple repository page: "
        "check that --index-url points at the index's simple/ root",
    )
