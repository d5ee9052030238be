"""A synthetic package index with PyPI's shape, and a server for it (bench/pypi_scale.py).

``plan(scale, seed)`` lays out the projects: releases, their dependencies and the
names of their files. It is deterministic (the seed picks the ordinary projects'
sizes, pre-releases and yanked releases) and cheap, so the benchmark computes what
each requirement set must resolve to without building anything. ``Site`` builds the
bytes: a real wheel (stored, not deflated, in memory) and its PEP 658 metadata file
for every file the running interpreter can install, and the simple pages in PEP 691
JSON and PEP 503 HTML, each also gzipped. The other files (wheels for other
platforms and Pythons, sdists) appear on the pages with made-up hashes and sizes and
do not exist: the server answers 404 for them and counts it, since an installer that
asks for one fetched a file it cannot use.

Run as a script, it serves the index on 127.0.0.1 the way PyPI does: the page format
by ``Accept``, gzip by ``Accept-Encoding``, ``ETag`` and ``Cache-Control: max-age=600,
public`` on pages (304 on ``If-None-Match``), ``Cache-Control: max-age=365000000,
immutable, public`` on files, HTTP/1.1 keep-alive, one thread per connection.
``GET /-/stats`` answers the request counters as JSON.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import gzip
import hashlib
import html
import io
import json
import random
import socket
import sys
import threading
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from packaging.requirements import Requirement
from packaging.tags import Tag, parse_tag, sys_tags
from packaging.utils import canonicalize_name
from packaging.version import Version

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"
PAGE_CACHE = "max-age=600, public"
FILE_CACHE = "max-age=365000000, immutable, public"
EPOCH = datetime.datetime(2015, 1, 1, tzinfo=datetime.timezone.utc)

# Whole minor series of scale-botocore at every scale, so that a bound such as
# ``<1.30`` cuts off the same share of releases whatever the size.
BOTOCORE_MINORS = 45
BACKTRACK_BOUND = "<1.30"

# Tags of the files nobody here can install; the ones the running interpreter
# accepts are dropped when the plan is made (they would have to be real).
_OTHER_TAGS = [
    "py2-none-any",
    "cp27-cp27m-win32",
    "cp27-cp27mu-manylinux1_x86_64",
    "cp36-cp36m-win_amd64",
    "cp37-cp37m-macosx_10_9_x86_64",
    "cp38-cp38-win_amd64",
    "cp39-cp39-macosx_11_0_arm64",
    "cp310-cp310-musllinux_1_1_x86_64",
    "cp311-cp311-musllinux_1_2_aarch64",
    "cp311-cp311-win_amd64",
    "cp311-cp311-macosx_11_0_arm64",
    "cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64",
    "cp312-cp312-win_arm64",
    "cp313-cp313-macosx_10_13_universal2",
    "cp313-cp313t-manylinux_2_28_x86_64",
    "pp310-pypy310_pp73-win_amd64",
    "pp39-pypy39_pp73-manylinux_2_17_i686.manylinux2014_i686",
    "graalpy311-graalpy242_311_native-macosx_11_0_arm64",
]
_CORE_PYTHONS = ["cp38", "cp39", "cp310", "cp311", "cp312", "cp313"]
_CORE_PLATFORMS = [
    "manylinux_2_17_x86_64.manylinux2014_x86_64",
    "manylinux_2_17_aarch64.manylinux2014_aarch64",
    "manylinux_2_17_i686.manylinux2014_i686",
    "musllinux_1_1_x86_64",
    "musllinux_1_1_aarch64",
    "macosx_10_12_x86_64",
    "macosx_11_0_arm64",
    "win32",
    "win_amd64",
    "win_arm64",
]


@dataclass
class Release:
    version: str
    requires: list[str]
    files: list[str]  # file names
    yanked: bool = False


@dataclass
class Project:
    name: str
    releases: list[Release] = field(default_factory=list)
    requires_python: str = ">=3.8"


def _sized(count: float, scale: float, least: int = 1) -> int:
    return max(least, round(count * scale))


def _stem(name: str, version: str) -> str:
    return f"{canonicalize_name(name).replace('-', '_')}-{version}"


def usable(filename: str, tags: frozenset[Tag]) -> bool:
    """Whether the running interpreter can install this wheel."""
    if not filename.endswith(".whl"):
        return False
    tag = filename[: -len(".whl")].split("-", 2)[2]
    return not parse_tag(tag).isdisjoint(tags)


def _other_tags(tags: frozenset[Tag]) -> list[str]:
    return [tag for tag in _OTHER_TAGS if parse_tag(tag).isdisjoint(tags)]


def _core_tags(tags: frozenset[Tag]) -> list[str]:
    grid = [f"{py}-{py}-{platform}" for py in _CORE_PYTHONS for platform in _CORE_PLATFORMS]
    if all(parse_tag(tag).isdisjoint(tags) for tag in grid):
        grid.append(str(next(iter(sys_tags()))))  # an interpreter the grid misses
    return grid


def _ordinary(rng: random.Random, name: str, requires: list[str]) -> Project:
    """10 to 50 releases of 1 to 3 files; maybe a newer pre-release and a yanked newest."""
    project = Project(name)
    count = rng.randint(10, 50)
    for index in range(count):
        version = f"1.{index // 10}.{index % 10}"
        files = [f"{_stem(name, version)}-py3-none-any.whl"]
        extra = rng.randint(0, 2)
        if extra >= 1:
            files.append(f"{_stem(name, version)}.tar.gz")
        if extra == 2:
            files.append(f"{_stem(name, version)}-py2-none-any.whl")
        project.releases.append(Release(version, list(requires), files))
    if rng.random() < 0.5:
        project.releases[-1].yanked = True
    if rng.random() < 0.5:
        version = f"1.{count // 10 + 1}.0rc1"
        files = [f"{_stem(name, version)}-py3-none-any.whl"]
        project.releases.append(Release(version, list(requires), files))
    return project


def plan(scale: float = 1.0, seed: int = 0) -> dict[str, Project]:
    """The projects of the index, by name; see the module docstring."""
    rng = random.Random(seed)
    tags = frozenset(sys_tags())
    projects: dict[str, Project] = {}

    def add(project: Project) -> Project:
        projects[project.name] = project
        return project

    add(_ordinary(rng, "scale-six", []))
    add(_ordinary(rng, "scale-dateutil", ["scale-six>=1.1"]))
    add(_ordinary(rng, "scale-jmespath", []))
    add(_ordinary(rng, "scale-urllib", []))
    add(_ordinary(rng, "scale-s3transfer", []))
    add(_ordinary(rng, "scale-annotated", []))
    add(_ordinary(rng, "scale-typing-ext", []))
    add(_ordinary(rng, "scale-idna", []))

    # botocore: many releases, a pure wheel, an sdist and many files for elsewhere.
    others = _other_tags(tags)
    patches = _sized(100, scale, least=2)
    botocore = add(Project("scale-botocore"))
    botocore_requires = [
        "scale-jmespath>=1.0,<2.0",
        "scale-dateutil>=1.0,<2.0",
        "scale-urllib>=1.0,<3",
    ]
    for minor in range(BOTOCORE_MINORS):
        for patch in range(patches):
            version = f"1.{minor}.{patch}"
            stem = _stem(botocore.name, version)
            files = [f"{stem}-py3-none-any.whl", f"{stem}.tar.gz"]
            files += [f"{stem}-{tag}.whl" for tag in others]
            botocore.releases.append(Release(version, botocore_requires, files))

    # boto3: fewer releases, each pinning one botocore release in a narrow range; the
    # last boto3 of each minor series pins the last botocore of that series.
    per_minor = min(patches, _sized(2000 / BOTOCORE_MINORS, scale))
    boto3 = add(Project("scale-boto3"))
    for minor in range(BOTOCORE_MINORS):
        for index in range(per_minor):
            patch = (index + 1) * patches // per_minor - 1
            version = f"1.{minor}.{index}"
            stem = _stem(boto3.name, version)
            requires = [
                f"scale-botocore>=1.{minor}.{patch},<1.{minor}.{patch + 1}",
                "scale-jmespath>=1.0,<2.0",
                "scale-s3transfer>=1.0,<2.0",
            ]
            boto3.releases.append(
                Release(version, requires, [f"{stem}-py3-none-any.whl", f"{stem}.tar.gz"])
            )

    # pydantic-core: a wheel for every platform and Python, one of them for this one.
    core_tags = _core_tags(tags)
    cores = _sized(150, scale, least=3)
    core = add(Project("scale-core"))
    for index in range(cores):
        version = f"2.{index}.0"
        stem = _stem(core.name, version)
        files = [f"{stem}.tar.gz"] + [f"{stem}-{tag}.whl" for tag in core_tags]
        core.releases.append(Release(version, ["scale-typing-ext>=1.0"], files))

    # pydantic: pins one core release exactly; its newest does not pin the newest core.
    pydantics = max(2, cores * 2 // 3)
    pydantic = add(Project("scale-pydantic"))
    for index in range(pydantics):
        version = f"2.{index // 10}.{index % 10}"
        stem = _stem(pydantic.name, version)
        requires = [
            f"scale-core=={core.releases[index * cores // pydantics].version}",
            "scale-annotated>=1.0",
            "scale-typing-ext>=1.0",
        ]
        pydantic.releases.append(
            Release(version, requires, [f"{stem}-py3-none-any.whl", f"{stem}.tar.gz"])
        )
    return projects


SETS: dict[str, list[str]] = {
    "boto3": ["scale-boto3"],
    "boto3-backtrack": [f"scale-botocore{BACKTRACK_BOUND}", "scale-boto3"],
    "pydantic": ["scale-pydantic"],
    "ordinary": ["scale-dateutil", "scale-idna", "scale-urllib", "scale-jmespath"],
}


class Unresolvable(Exception):
    pass


def resolve(projects: dict[str, Project], requirements: Sequence[str]) -> dict[str, str]:
    """What a resolver preferring the newest must pick: {name: version}.

    A plain depth-first search, newest first, over final, not yanked releases. The
    plan makes the answer unique (every pin is to one release, and pins rise with
    the releases that make them), so any such resolver finds the same.
    """

    steps = iter(range(100_000))  # the plan keeps the search short; a bad plan stops

    def search(pending: list[Requirement], chosen: dict[str, Release]) -> dict[str, str]:
        if next(steps, None) is None:
            raise RuntimeError(f"resolving {' '.join(requirements)} takes too many steps")
        if not pending:
            return {name: release.version for name, release in chosen.items()}
        first, rest = pending[0], pending[1:]
        name = canonicalize_name(first.name)
        if name in chosen:
            if not first.specifier.contains(chosen[name].version):
                raise Unresolvable(str(first))
            return search(rest, chosen)
        wanted = [r.specifier for r in pending if canonicalize_name(r.name) == name]
        for release in sorted(
            projects[name].releases, key=lambda r: Version(r.version), reverse=True
        ):
            if release.yanked or Version(release.version).is_prerelease:
                continue
            if not all(spec.contains(release.version) for spec in wanted):
                continue
            deps = [Requirement(text) for text in release.requires]
            if any(  # checked now, so that a conflict undoes this choice, not later ones
                canonicalize_name(dep.name) in chosen
                and not dep.specifier.contains(chosen[canonicalize_name(dep.name)].version)
                for dep in deps
            ):
                continue
            try:
                return search(rest + deps, {**chosen, name: release})
            except Unresolvable:
                continue
        raise Unresolvable(str(first))

    return search([Requirement(text) for text in requirements], {})


# -- bytes -------------------------------------------------------------------------


def _zip_entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    return info


def _record_line(name: str, data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    return f"{name},sha256={encoded},{len(data)}"


def metadata_text(project: Project, release: Release) -> bytes:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project.name}",
        f"Version: {release.version}",
        f"Requires-Python: {project.requires_python}",
        *(f"Requires-Dist: {text}" for text in release.requires),
    ]
    return ("\n".join(lines) + "\n").encode()


def make_wheel(filename: str, metadata: bytes) -> bytes:
    """A real, minimal wheel: one module, METADATA, WHEEL and RECORD (stored)."""
    stem = filename[: -len(".whl")]
    distribution, version, tag = stem.split("-", 2)
    dist_info = f"{distribution}-{version}.dist-info"
    pure = tag.endswith("-none-any")
    wheel = (
        "Wheel-Version: 1.0\nGenerator: bench-scale-index\n"
        f"Root-Is-Purelib: {'true' if pure else 'false'}\n"
        + "".join(f"Tag: {t}\n" for t in sorted(str(t) for t in parse_tag(tag)))
    ).encode()
    members = {
        f"{distribution}/__init__.py": f'__version__ = "{version}"\n'.encode(),
        f"{dist_info}/METADATA": metadata,
        f"{dist_info}/WHEEL": wheel,
    }
    record = "".join(_record_line(n, d) + "\n" for n, d in members.items())
    members[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(_zip_entry(name), data)
    return buffer.getvalue()


@dataclass
class Page:
    body: bytes
    gzipped: bytes
    etag: str
    gzip_etag: str


def _page(body: bytes) -> Page:
    digest = hashlib.sha256(body).hexdigest()[:32]
    return Page(body, gzip.compress(body, 1, mtime=0), f'"{digest}"', f'"{digest}-gz"')


class Site:
    """Every page and file of the index, in memory, keyed by URL path."""

    def __init__(self, projects: dict[str, Project]) -> None:
        tags = frozenset(sys_tags())
        self.files: dict[str, tuple[bytes, str]] = {}  # path: (body, etag)
        self.pages: dict[tuple[str, str], Page] = {}  # (path, JSON_TYPE | HTML_TYPE)
        hour = datetime.timedelta(hours=1)
        for project in projects.values():
            entries: list[dict[str, Any]] = []
            for number, release in enumerate(project.releases):
                uploaded = (EPOCH + number * hour).strftime("%Y-%m-%dT%H:%M:%S.000000Z")
                metadata = metadata_text(project, release)
                for filename in release.files:
                    entry: dict[str, Any] = {
                        "filename": filename,
                        "url": f"../../files/{filename}",
                        "requires-python": project.requires_python,
                        "upload-time": uploaded,
                        "yanked": "broken" if release.yanked else False,
                    }
                    if usable(filename, tags):
                        body = make_wheel(filename, metadata)
                        digest = hashlib.sha256(body).hexdigest()
                        meta_digest = hashlib.sha256(metadata).hexdigest()
                        self.files[f"/files/{filename}"] = (body, f'"{digest}"')
                        self.files[f"/files/{filename}.metadata"] = (metadata, f'"{meta_digest}"')
                        entry["size"] = len(body)
                    else:
                        digest = hashlib.sha256(filename.encode()).hexdigest()
                        meta_digest = hashlib.sha256(digest.encode()).hexdigest()
                        entry["size"] = 40_000 + int(digest[:4], 16)
                    entry["hashes"] = {"sha256": digest}
                    if filename.endswith(".whl"):
                        entry["core-metadata"] = {"sha256": meta_digest}
                        entry["data-dist-info-metadata"] = {"sha256": meta_digest}
                    entries.append(entry)
            path = f"/simple/{canonicalize_name(project.name)}/"
            versions = sorted({r.version for r in project.releases}, key=Version)
            self.pages[(path, JSON_TYPE)] = _page(
                json.dumps(
                    {
                        "meta": {"api-version": "1.1"},
                        "name": project.name,
                        "versions": versions,
                        "files": entries,
                    }
                ).encode()
            )
            self.pages[(path, HTML_TYPE)] = _page(_html_page(project.name, entries).encode())
        names = sorted(canonicalize_name(name) for name in projects)
        root = {"meta": {"api-version": "1.1"}, "projects": [{"name": n} for n in names]}
        self.pages[("/simple/", JSON_TYPE)] = _page(json.dumps(root).encode())
        links = "".join(f'<a href="{n}/">{n}</a>\n' for n in names)
        self.pages[("/simple/", HTML_TYPE)] = _page(_html_document("Simple index", links).encode())


def _html_document(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html>\n<head>\n<meta name="pypi:repository-version" '
        f'content="1.1">\n<title>{title}</title>\n</head>\n<body>\n{body}</body>\n</html>\n'
    )


def _html_page(name: str, entries: Iterable[dict[str, Any]]) -> str:
    anchors = []
    for entry in entries:
        attrs = [f'href="{entry["url"]}#sha256={entry["hashes"]["sha256"]}"']
        attrs.append(f'data-requires-python="{html.escape(entry["requires-python"])}"')
        if "core-metadata" in entry:
            value = f"sha256={entry['core-metadata']['sha256']}"
            attrs.append(f'data-dist-info-metadata="{value}" data-core-metadata="{value}"')
        if entry["yanked"]:
            attrs.append(f'data-yanked="{html.escape(entry["yanked"])}"')
        anchors.append(f"<a {' '.join(attrs)}>{entry['filename']}</a><br />\n")
    return _html_document(f"Links for {name}", f"<h1>Links for {name}</h1>\n" + "".join(anchors))


# -- serving -----------------------------------------------------------------------


def page_type(accept: str | None) -> str | None:
    """The media type ``Accept`` prefers among the pages' (text/html without one).

    None when it takes none of them. Ties go to ``text/html`` as on PyPI, so that
    ``*/*`` gets the HTML page.
    """
    if not accept:
        return "text/html"
    best: tuple[float, int, str | None] = (0.0, 0, None)
    ranks = {"text/html": 3, HTML_TYPE: 2, JSON_TYPE: 1, "*/*": 0}
    for part in accept.split(","):
        media, *params = (piece.strip() for piece in part.split(";"))
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if media not in ranks or quality <= 0:
            continue
        if (quality, ranks[media]) > best[:2]:
            best = (quality, ranks[media], "text/html" if media == "*/*" else media)
    return best[2]


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {"requests": 0, "pages": 0, "not_modified": 0}
        self.counts.update(files=0, metadata=0, bytes=0)
        self.not_found: list[str] = []

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {**self.counts, "not_found": list(self.not_found)}


def handler_for(site: Site, stats: Stats) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self.answer(send_body=False)

        def do_GET(self) -> None:
            self.answer(send_body=True)

        def answer(self, *, send_body: bool) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/-/stats":  # not counted
                self.reply(200, json.dumps(stats.snapshot()).encode(), {}, send_body, None)
                return
            kind = "pages"
            headers: dict[str, str]
            if path in site.files:
                body, etag = site.files[path]
                kind = "metadata" if path.endswith(".metadata") else "files"
                headers = {"Content-Type": "application/octet-stream"}
                headers.update({"ETag": etag, "Cache-Control": FILE_CACHE})
            elif path.startswith("/simple/"):
                if not path.endswith("/"):
                    self.reply(301, b"", {"Location": path + "/"}, send_body, "")
                    return
                wanted = page_type(self.headers.get("Accept"))
                if wanted is None:
                    self.reply(406, b"no page format this Accept takes\n", {}, send_body, "")
                    return
                page = site.pages.get((path, JSON_TYPE if wanted == JSON_TYPE else HTML_TYPE))
                if page is None:
                    self.missing(path, send_body)
                    return
                gzipped = "gzip" in (self.headers.get("Accept-Encoding") or "")
                body, etag = (page.gzipped, page.gzip_etag) if gzipped else (page.body, page.etag)
                headers = {"Content-Type": wanted, "Vary": "Accept, Accept-Encoding"}
                headers.update({"ETag": etag, "Cache-Control": PAGE_CACHE})
                if gzipped:
                    headers["Content-Encoding"] = "gzip"
            else:
                self.missing(path, send_body)
                return
            tags = {
                t.strip().removeprefix("W/")
                for t in self.headers.get("If-None-Match", "").split(",")
            }
            if etag in tags or "*" in tags:
                headers.pop("Content-Type")
                headers.pop("Content-Encoding", None)
                self.reply(304, b"", headers, send_body, "not_modified")
                return
            self.reply(200, body, headers, send_body, kind)

        def missing(self, path: str, send_body: bool) -> None:
            with stats.lock:
                stats.not_found.append(path)
            self.reply(404, b"not found\n", {"Content-Type": "text/plain"}, send_body, "")

        def reply(
            self,
            status: int,
            body: bytes,
            headers: dict[str, str],
            send_body: bool,
            kind: str | None,
        ) -> None:
            lines = [f"HTTP/1.1 {status} {self.responses[status][0]}"]
            # HTTP caches date what they store (pip's keeps nothing undated).
            lines.append(f"Date: {self.date_time_string()}")
            length = 0 if status == 304 else len(body)
            lines += [f"{key}: {value}" for key, value in headers.items()]
            if status != 304:  # a 304's length would be that of the body it stands for
                lines.append(f"Content-Length: {length}")
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            self.wfile.write(head + body if send_body and status != 304 else head)
            if kind is None:
                return
            with stats.lock:
                stats.counts["requests"] += 1
                if kind:
                    stats.counts[kind] += 1
                stats.counts["bytes"] += length if send_body else 0

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hung up
            super().handle_error(request, client_address)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="serve the synthetic PyPI-shaped index")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    site = Site(plan(args.scale, args.seed))
    server = Server(("127.0.0.1", args.port), handler_for(site, Stats()))
    print("ready", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
