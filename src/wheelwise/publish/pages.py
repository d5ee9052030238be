"""Simple repository pages: PEP 503 HTML and PEP 691 JSON (API version 1.1, PEP 700).

Every file link carries its sha256 (``#sha256=`` in HTML, ``hashes`` in JSON).
A wheel links its core metadata file, served at the wheel's URL plus
``.metadata`` (PEP 658), under PEP 714's names: ``data-core-metadata`` and, for
older clients, ``data-dist-info-metadata`` in HTML; only ``core-metadata`` in
JSON, as PEP 714 requires (pip 22.3 to 23.1 fail on ``dist-info-metadata``
there). A release with variant wheels lists its ``{name}-{version}-variants.json``
as one more file (PEP 825 "Index-level metadata"; PEP 850 when it carries providers).

The site layout, the same for the static site and the server::

    /simple/                      the project list
    /simple/<project>/            a project's files
    /files/<project>/<filename>   a file; <filename>.metadata for a wheel's METADATA

Links are relative unless a base URL is given.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from wheelwise.publish.catalog import Project

API_VERSION = "1.1"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"
METADATA_SUFFIX = ".metadata"


@dataclass(frozen=True)
class Urls:
    """Where pages and files are; relative to each page unless *base_url* is set."""

    base_url: str | None = None

    def __post_init__(self) -> None:
        if self.base_url is not None:
            object.__setattr__(self, "base_url", self.base_url.rstrip("/"))

    def project_page(self, project: str) -> str:
        """The project page's URL, as linked from ``/simple/``."""
        if self.base_url is None:
            return f"{quote(project)}/"
        return f"{self.base_url}/simple/{quote(project)}/"

    def file(self, project: str, filename: str) -> str:
        """A file's URL, as linked from ``/simple/<project>/``."""
        path = f"files/{quote(project)}/{quote(filename)}"
        return f"../../{path}" if self.base_url is None else f"{self.base_url}/{path}"


@dataclass(frozen=True)
class FileLink:
    """One file of a project page."""

    filename: str
    url: str
    # None (proxy): not known until the file is built; then the page says API 1.0,
    # where PEP 700's size is not required.
    sha256: str | None
    size: int | None
    requires_python: str | None = None
    metadata_sha256: str | None = None
    # PEP 658 metadata served but its hash not known yet (PEP 714 allows "true").
    metadata_unhashed: bool = False
    # PEP 592: True, or the reason.
    yanked: bool | str = False
    # Why this file is listed: an HTML comment, and ``_wheelwise`` in JSON (PEP 691
    # reserves keys with a leading underscore for the index).
    note: Mapping[str, str] | None = None


def project_links(project: Project, urls: Urls) -> list[FileLink]:
    """The files of a project page, release by release, oldest first."""
    links: list[FileLink] = []
    for release in project.releases:
        for dist in release.files:
            links.append(
                FileLink(
                    filename=dist.filename,
                    url=urls.file(project.name, dist.filename),
                    sha256=dist.sha256,
                    size=dist.size,
                    requires_python=dist.requires_python,
                    metadata_sha256=dist.metadata_sha256,
                )
            )
        if release.variants is not None:
            variants = release.variants
            links.append(
                FileLink(
                    filename=variants.filename,
                    url=urls.file(project.name, variants.filename),
                    sha256=variants.sha256,
                    size=variants.size,
                )
            )
    return links


_HTML_HEAD = (
    "<!DOCTYPE html>\n<html>\n  <head>\n"
    f'    <meta name="pypi:repository-version" content="{API_VERSION}">\n'
    "    <title>{title}</title>\n  </head>\n  <body>\n    <h1>{title}</h1>\n"
)
_HTML_TAIL = "  </body>\n</html>\n"


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def root_html(projects: Iterable[str], urls: Urls) -> bytes:
    """``/simple/`` as PEP 503 HTML: one anchor per (normalized) project name."""
    parts = [_HTML_HEAD.format(title="Simple index")]
    for name in projects:
        href = _attr(urls.project_page(name))
        parts.append(f'    <a href="{href}">{html.escape(name)}</a><br>\n')
    parts.append(_HTML_TAIL)
    return "".join(parts).encode("utf-8")


def root_json(projects: Iterable[str]) -> bytes:
    """``/simple/`` as PEP 691 JSON."""
    document = {
        "meta": {"api-version": API_VERSION},
        "projects": [{"name": name} for name in projects],
    }
    return _json(document)


def project_html(project: Project, urls: Urls) -> bytes:
    """``/simple/<project>/`` as PEP 503 HTML."""
    return links_html(project.name, project_links(project, urls))


def project_json(project: Project, urls: Urls) -> bytes:
    """``/simple/<project>/`` as PEP 691 JSON (with PEP 700's ``versions`` and ``size``)."""
    return links_json(project.name, project.versions, project_links(project, urls))


def _comment(note: Mapping[str, str]) -> str:
    # "--" cannot occur inside an HTML comment.
    text = "; ".join(f"{key}: {value}" for key, value in note.items())
    return "    <!-- " + html.escape(text.replace("--", "- -"), quote=False) + " -->\n"


def links_html(name: str, links: Iterable[FileLink]) -> bytes:
    """A project page of *links* as PEP 503 HTML."""
    title = html.escape(f"Links for {name}")
    parts = [_HTML_HEAD.format(title=title)]
    for link in links:
        fragment = f"#sha256={link.sha256}" if link.sha256 else ""
        attrs = [f'href="{_attr(link.url)}{fragment}"']
        if link.requires_python:
            attrs.append(f'data-requires-python="{_attr(link.requires_python)}"')
        if link.metadata_sha256:
            attrs.append(f'data-dist-info-metadata="sha256={link.metadata_sha256}"')
            attrs.append(f'data-core-metadata="sha256={link.metadata_sha256}"')
        elif link.metadata_unhashed:
            attrs.append('data-dist-info-metadata="true"')
            attrs.append('data-core-metadata="true"')
        if link.yanked:
            reason = link.yanked if isinstance(link.yanked, str) else ""
            attrs.append(f'data-yanked="{_attr(reason)}"')
        if link.note:
            parts.append(_comment(link.note))
        parts.append(f"    <a {' '.join(attrs)}>{html.escape(link.filename)}</a><br>\n")
    parts.append(_HTML_TAIL)
    return "".join(parts).encode("utf-8")


def links_json(name: str, versions: Sequence[str], links: Iterable[FileLink]) -> bytes:
    """A project page of *links* as PEP 691 JSON (with PEP 700's ``versions`` and ``size``)."""
    files: list[dict[str, Any]] = []
    api_version = API_VERSION
    for link in links:
        entry: dict[str, Any] = {
            "filename": link.filename,
            "url": link.url,
            "hashes": {"sha256": link.sha256} if link.sha256 else {},
        }
        if link.size is not None:
            entry["size"] = link.size
        else:
            api_version = "1.0"
        if link.requires_python:
            entry["requires-python"] = link.requires_python
        if link.metadata_sha256:
            # PEP 714: only the new key in JSON (pip 22.3 to 23.1 fail on the old one).
            entry["core-metadata"] = {"sha256": link.metadata_sha256}
        elif link.metadata_unhashed:
            entry["core-metadata"] = True
        if link.yanked:
            entry["yanked"] = link.yanked
        if link.note:
            entry["_wheelwise"] = dict(link.note)
        files.append(entry)
    document = {
        "meta": {"api-version": api_version},
        "name": name,
        "versions": list(versions),
        "files": files,
    }
    return _json(document)


def _json(document: object) -> bytes:
    return (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
