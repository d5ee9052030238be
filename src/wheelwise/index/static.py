"""``wheelwise index build``: a static simple index that any web server can serve.

Layout of SITE::

    index.html                         a pointer to simple/
    simple/index.html, index.json      the project list (PEP 503 HTML, PEP 691 JSON)
    simple/<project>/index.html        what pip and uv fetch (as /simple/<project>/)
    simple/<project>/index.json        the same page as PEP 691 JSON
    files/<project>/<file>             wheels and sdists (hard links, else copies)
    files/<project>/<wheel>.metadata   core metadata (PEP 658)
    files/<project>/<name>-<version>-variants.json   merged variant metadata (PEP 850
                                                     where the wheels carry providers)
    .wheelwise-index.json              the builder's state (what it read, per file)

The whole site is written into a temporary directory next to SITE and swapped in
at the end (:mod:`wheelwise.index.swap`): a failure leaves the old site as it was.

Incremental: the state file keeps, per file, what was read from it (hashes, core
metadata hash, Requires-Python, variant.json) keyed by name, size and mtime. An
unchanged file is neither opened nor hashed again; it and its metadata file are
hard-linked from the old site into the new one. Pages are always rendered anew.

Files are hard-linked from WHEEL_DIR where it shares a file system with SITE
(else copied): replace a wheel by writing a new file and renaming it over the old
one, never by rewriting it in place, or the site serves new bytes under the old
hash until the next build.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from wheelwise import __version__
from wheelwise.index.catalog import Catalog, ScanResult, build_catalog, scan
from wheelwise.index.distfiles import WHEEL, DistFile, read_dist
from wheelwise.index.errors import IndexBuildError
from wheelwise.index.pages import (
    METADATA_SUFFIX,
    Urls,
    project_html,
    project_json,
    root_html,
    root_json,
)
from wheelwise.index.swap import replace_directory
from wheelwise.untrusted_json import loads_json

STATE_FILE = ".wheelwise-index.json"
STATE_FORMAT = 1
_ROOT_PAGE = (
    b"<!DOCTYPE html>\n<html>\n  <head><title>Simple index</title></head>\n  <body>\n"
    b'    <a href="simple/">simple/</a>\n  </body>\n</html>\n'
)


# Browsers drop whitespace and control characters from URLs ("java\tscript:" is
# "javascript:"); quotes, angle brackets and backslashes have no place in a base.
_UNSAFE_URL_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f\"'<>\\`]")


def check_base_url(value: str, *, what: str = "base URL") -> None:
    """Refuse a base URL other than an http(s) URL or a relative path: links built
    from it end up in ``href`` attributes (``javascript:`` would run there)."""
    parts = urlsplit(value)
    problem = None
    if not value or _UNSAFE_URL_CHARS.search(value):
        problem = "is empty or holds spaces, control characters, quotes, '<', '>' or '\\'"
    elif parts.query or parts.fragment:
        problem = "has a query or a fragment"
    elif parts.scheme and parts.scheme.lower() not in ("http", "https"):
        problem = f"uses the scheme {parts.scheme!r}"
    elif parts.scheme and not parts.netloc:
        problem = "names no host"
    elif not parts.scheme and value.startswith("//"):
        problem = "has no scheme"
    if problem is not None:
        raise IndexBuildError(
            f"{what} {value!r} {problem}: give an http:// or https:// URL "
            "(https://example.org/pypi) or a relative path (/pypi, ../mirror)"
        )


@dataclass(frozen=True)
class BuildReport:
    site: Path
    projects: int
    files: int
    # Files opened and hashed in this run, and files known from the state file.
    read: int
    unchanged: int
    variants_files: int
    skipped: tuple[str, ...]


def load_state(site: Path) -> dict[str, DistFile] | None:
    """The files the last build of *site* read; None if *site* has no state file.

    A state file that cannot be used (corrupt, another format) gives ``{}``: every
    file is read again.
    """
    path = site / STATE_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        document = loads_json(raw)
        if document.get("format") != STATE_FORMAT:
            return {}
        return {name: DistFile.from_state(name, entry) for name, entry in document["files"].items()}
    except (ValueError, TypeError, KeyError, AttributeError):
        return {}


def _state_bytes(files: Mapping[str, DistFile], base_url: str | None) -> bytes:
    document = {
        "format": STATE_FORMAT,
        "generator": f"wheelwise {__version__}",
        "base_url": base_url,
        "files": {name: files[name].to_state() for name in sorted(files)},
    }
    return (json.dumps(document, separators=(",", ":")) + "\n").encode("utf-8")


def _up_to_date(
    site: Path, known: Mapping[str, DistFile], scanned: ScanResult, base_url: str | None
) -> bool:
    """Nothing to do: the same files with the same stat, built by this wheelwise with
    the same base URL, and the site still has its pages."""
    if scanned.read or scanned.problems or not known:
        return False
    if {d.filename for d in scanned.files} != set(known):
        return False
    try:
        header = loads_json((site / STATE_FILE).read_bytes())
    except (OSError, ValueError):
        return False
    if not (
        isinstance(header, dict)
        and header.get("generator") == f"wheelwise {__version__}"
        and header.get("base_url") == base_url
        and (site / "simple" / "index.html").is_file()
    ):
        return False
    # Every published file and metadata file is still there (a damaged site is rebuilt).
    for dist in scanned.files:
        target = site / "files" / dist.project / dist.filename
        expected: list[tuple[Path, int | None]] = [(target, dist.size)]
        if dist.kind == WHEEL:
            expected.append((target.with_name(dist.filename + METADATA_SUFFIX), dist.metadata_size))
        for path, size in expected:
            try:
                if path.stat().st_size != size:
                    return False
            except OSError:
                return False
    return True


def _count_variants_files(site: Path) -> int:
    return sum(1 for _ in (site / "files").glob("*/*-variants.json"))


def _check_paths(wheel_dir: Path, site: Path) -> None:
    if not wheel_dir.is_dir():
        raise IndexBuildError(f"{wheel_dir}: not a directory")
    if site == wheel_dir or wheel_dir.is_relative_to(site):
        raise IndexBuildError(
            f"the site {site} would contain the wheel directory {wheel_dir}; "
            "choose an output directory outside it"
        )
    if site.exists() and not site.is_dir():
        raise IndexBuildError(f"{site}: exists and is not a directory")


def build_site(wheel_dir: Path, site: Path, *, base_url: str | None = None) -> BuildReport:
    """Build (or rebuild) the static index of *wheel_dir* at *site*.

    Raises IndexBuildError when a file cannot be published or a release's variant
    metadata is inconsistent (the message names the wheels and the label); the
    existing site is then left as it was.
    """
    if base_url is not None:
        check_base_url(base_url)
    wheel_dir = wheel_dir.resolve()
    site = site.resolve()
    _check_paths(wheel_dir, site)
    known = load_state(site)
    if known is None and site.exists() and any(site.iterdir()):
        raise IndexBuildError(
            f"{site}: exists, is not empty and was not built by 'wheelwise index build' "
            f"(no {STATE_FILE}); refusing to replace it"
        )
    known = known or {}
    scanned = scan(wheel_dir, known, refuse_unsafe=True)
    if _up_to_date(site, known, scanned, base_url):
        return BuildReport(
            site=site,
            projects=len({d.project for d in scanned.files}),
            files=len(scanned.files),
            read=0,
            unchanged=len(scanned.files),
            variants_files=_count_variants_files(site),
            skipped=tuple(scanned.skipped),
        )
    catalog = build_catalog(scanned.files, scanned.problems)
    problems = catalog.all_problems()
    if problems:
        raise IndexBuildError(f"cannot publish {wheel_dir}: " + "; ".join(sorted(problems)))
    site.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{site.name}.", suffix=".tmp", dir=site.parent))
    try:
        staging.chmod(0o755)
        writer = _SiteWriter(
            staging,
            old_site=site,
            wheel_dir=wheel_dir,
            unchanged={d.filename for d in scanned.files if known.get(d.filename) is d},
            new_metadata={r.dist.filename: r.core_metadata for r in scanned.read},
        )
        writer.write(catalog, Urls(base_url))
        (staging / STATE_FILE).write_bytes(_state_bytes(catalog.by_filename, base_url))
        replace_directory(staging, site)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BuildReport(
        site=site,
        projects=len(catalog.projects),
        files=len(catalog.by_filename),
        read=len(scanned.read),
        unchanged=len(catalog.by_filename) - len(scanned.read),
        variants_files=sum(1 for _ in catalog.variants_files()),
        skipped=tuple(scanned.skipped),
    )


class _SiteWriter:
    def __init__(
        self,
        root: Path,
        *,
        old_site: Path,
        wheel_dir: Path,
        unchanged: set[str],
        new_metadata: Mapping[str, bytes | None],
    ) -> None:
        self.root = root
        self.old_site = old_site
        self.wheel_dir = wheel_dir
        self.unchanged = unchanged
        self.new_metadata = new_metadata
        self.reread = 0

    def write(self, catalog: Catalog, urls: Urls) -> None:
        simple = self.root / "simple"
        simple.mkdir()
        names = list(catalog.projects)
        (simple / "index.html").write_bytes(root_html(names, urls))
        (simple / "index.json").write_bytes(root_json(names))
        (self.root / "index.html").write_bytes(_ROOT_PAGE)
        for project in catalog.projects.values():
            files = self.root / "files" / project.name
            files.mkdir(parents=True)
            for dist in project.files:
                self.place(project.name, dist)
            for release in project.releases:
                if release.variants is not None:
                    (files / release.variants.filename).write_bytes(release.variants.data)
            page_dir = simple / project.name
            page_dir.mkdir()
            (page_dir / "index.html").write_bytes(project_html(project, urls))
            (page_dir / "index.json").write_bytes(project_json(project, urls))

    def place(self, project: str, dist: DistFile) -> None:
        """The file and, for a wheel, its metadata file, from the old site if unchanged."""
        relative = Path("files", project, dist.filename)
        target = self.root / relative
        old = self.old_site / relative
        reuse = dist.filename in self.unchanged
        if not (reuse and _link_if_size(old, target, dist.size)):
            _link_or_copy(self.wheel_dir / dist.filename, target)
        if dist.kind != WHEEL:
            return
        meta_target = target.with_name(dist.filename + METADATA_SUFFIX)
        metadata = self.new_metadata.get(dist.filename)
        if metadata is not None:
            meta_target.write_bytes(metadata)
            return
        old_meta = old.with_name(dist.filename + METADATA_SUFFIX)
        if (
            reuse
            and dist.metadata_size is not None
            and _link_if_size(old_meta, meta_target, dist.metadata_size)
        ):
            return
        # The old site lost it: read the wheel again.
        self.reread += 1
        fresh = read_dist(self.wheel_dir / dist.filename, sha256=dist.sha256)
        if fresh.dist.metadata_sha256 != dist.metadata_sha256 or fresh.core_metadata is None:
            raise IndexBuildError(f"{dist.filename}: changed while the site was built")
        meta_target.write_bytes(fresh.core_metadata)


def _link_if_size(source: Path, target: Path, size: int) -> bool:
    """Hard-link (else copy) *source* to *target* if it exists with *size* bytes."""
    try:
        if source.stat().st_size != size:
            return False
    except FileNotFoundError:
        return False
    _link_or_copy(source, target)
    return True


def _link_or_copy(source: Path, target: Path) -> None:
    # Resolved: os.link would link a symbolic link itself, not its file (Linux).
    source = source.resolve()
    try:
        os.link(source, target)
    except OSError:  # another file system, or no hard links there
        shutil.copyfile(source, target)
