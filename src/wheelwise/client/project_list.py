"""Reading an index's project list (``/simple/``): PEP 691 JSON or PEP 503 HTML."""

from __future__ import annotations

import json
from urllib.parse import unquote, urlsplit

from packaging.utils import NormalizedName, canonicalize_name

from wheelwise.client.errors import InvalidPage
from wheelwise.client.simple_parse import _api_major, page_kind

__all__ = ["read_project_names"]


def read_project_names(body: bytes, url: str, content_type: str | None) -> list[NormalizedName]:
    """The normalized project names of the root page at *url*, sorted, each once."""
    kind = page_kind(content_type)
    if kind == "json":
        names = _json_names(body, url)
    elif kind == "html":
        names = _html_names(body, url)
    else:
        raise InvalidPage(
            url, f"{url}: not a simple index root page (Content-Type {content_type!r})"
        )
    return sorted({canonicalize_name(name) for name in names if name})


def _json_names(body: bytes, url: str) -> list[str]:
    bad = f"{url}: not a valid PEP 691 project list"
    try:
        document = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise InvalidPage(url, f"{bad}: {type(exc).__name__}: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("meta"), dict):
        raise InvalidPage(url, f"{bad}: no 'meta' object")
    _api_major(document["meta"].get("api-version"), url)
    projects = document.get("projects")
    if not isinstance(projects, list):
        raise InvalidPage(url, f"{bad}: no 'projects' list")
    names: list[str] = []
    for index, entry in enumerate(projects):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise InvalidPage(url, f"{bad}: projects[{index}] has no 'name' string")
        names.append(name)
    return names


def _html_names(body: bytes, url: str) -> list[str]:
    # Imported here: html.parser is needed only by HTML indexes.
    from wheelwise.client.simple_html import AnchorCollector

    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidPage(url, f"{url}: not UTF-8 text (byte {exc.start})") from None
    parser = AnchorCollector()
    try:
        parser.feed(text)
        parser.close()
    except AssertionError as exc:
        raise InvalidPage(url, f"{url}: not a valid PEP 503 project list: {exc}") from None
    _api_major(parser.version, url)
    # PEP 503: each anchor links a project page; its last path segment is the name.
    names: list[str] = []
    for attrs in parser.anchors:
        path = urlsplit(attrs.get("href") or "").path.rstrip("/")
        names.append(unquote(path.rsplit("/", 1)[-1]))
    return names
