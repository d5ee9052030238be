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
at the end (:mod:`wheelwise.publish.swap`): a failure leaves the old site as it was.

Incremental: the state file keeps, per file, what was read from it (hashes, core
metadata hash, Requires-Python, variant.json) keyed by name, size and mtime. An
unchanged file is neither opened nor hashed again. When files were only added or
removed (every published file keeps its bytes), the site is updated in place
(:func:`_update_in_place`): the new files first, then the pages of the projects
that changed and the project list, each written to a temporary name and renamed
over the old one, then the state file, and last the removal of files no page
links any more; a reader sees old pages or new ones, each with its files present.
The result is the same tree, byte for byte, as a full build of the folder. Any
other change (a file replaced under the same name, a release's merged
``*-variants.json`` that changes) rebuilds the whole site and swaps it in: an
unchanged file and its metadata file are then hard-linked from the old site.

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
import stat
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from wheelwise import __version__
from wheelwise.forked_map import forked_map
from wheelwise.publish.catalog import Catalog, Project, ScanResult, build_catalog, scan
from wheelwise.publish.distfiles import WHEEL, DistFile, read_dist
from wheelwise.publish.errors import IndexBuildError
from wheelwise.publish.pages import (
    METADATA_SUFFIX,
    Urls,
    links_html,
    links_json,
    project_html,
    project_json,
    project_links,
    root_html,
    root_json,
)
from wheelwise.publish.swap import replace_directory
from wheelwise.untrusted_json import loads_json
from wheelwise.userfiles import write_all

STATE_FILE = ".wheelwise-index.json"
# 2: sdists carry their PKG-INFO's Requires-Python; a state of 1 is read again.
STATE_FORMAT = 2
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
    return _same_build(site, base_url) and _published(site, scanned.files)


def _same_build(site: Path, base_url: str | None) -> bool:
    """*site* was built by this wheelwise with *base_url* and still has its pages."""
    try:
        header = loads_json((site / STATE_FILE).read_bytes())
    except (OSError, ValueError):
        return False
    return (
        isinstance(header, dict)
        and header.get("generator") == f"wheelwise {__version__}"
        and header.get("base_url") == base_url
        and (site / "simple" / "index.html").is_file()
    )


def _published(site: Path, dists: Iterable[DistFile]) -> bool:
    """Every one of *dists* and its metadata file is still in *site* (a damaged site
    is rebuilt)."""
    # Plain strings and os.stat: this runs for every file of the site on every update.
    files = os.path.join(site, "files")  # noqa: PTH118
    for dist in dists:
        target = os.path.join(files, dist.project, dist.filename)  # noqa: PTH118
        expected: list[tuple[str, int | None]] = [(target, dist.size)]
        if dist.kind == WHEEL:
            expected.append((target + METADATA_SUFFIX, dist.metadata_size))
        for path, size in expected:
            try:
                if os.stat(path).st_size != size:  # noqa: PTH116
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
    new_metadata = {r.dist.filename: r.core_metadata for r in scanned.read}
    update = _plan_update(site, known, catalog, base_url) if known else None
    if update is not None:
        _update_in_place(
            site,
            update,
            wheel_dir=wheel_dir,
            new_metadata=new_metadata,
            urls=Urls(base_url),
            state=_state_bytes(catalog.by_filename, base_url),
        )
        return _report(site, catalog, scanned)
    site.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{site.name}.", suffix=".tmp", dir=site.parent))
    try:
        staging.chmod(0o755)
        writer = _SiteWriter(
            staging,
            old_site=site,
            wheel_dir=wheel_dir,
            unchanged={d.filename for d in scanned.files if known.get(d.filename) is d},
            new_metadata=new_metadata,
        )
        writer.write(catalog, Urls(base_url))
        (staging / STATE_FILE).write_bytes(_state_bytes(catalog.by_filename, base_url))
        replace_directory(staging, site)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return _report(site, catalog, scanned)


def _report(site: Path, catalog: Catalog, scanned: ScanResult) -> BuildReport:
    return BuildReport(
        site=site,
        projects=len(catalog.projects),
        files=len(catalog.by_filename),
        read=len(scanned.read),
        unchanged=len(catalog.by_filename) - len(scanned.read),
        variants_files=sum(1 for _ in catalog.variants_files()),
        skipped=tuple(scanned.skipped),
    )


# -- updating a site in place ----------------------------------------------------------


@dataclass(frozen=True)
class _Update:
    """What an in-place update changes: files added and removed, the projects whose
    pages change, the projects of the old site (and the old releases of the changed
    ones), and the new catalog."""

    current: Catalog
    added: tuple[DistFile, ...]
    removed: tuple[DistFile, ...]
    projects: frozenset[str]
    old_projects: frozenset[str]
    old: Catalog


def _content(dist: DistFile) -> dict[str, object]:
    """What the site publishes about *dist*: its state less the mtime (a file touched
    but not changed is the same file to the site)."""
    facts = dist.to_state()
    del facts["mtime_ns"]
    return facts


def _plan_update(
    site: Path, known: Mapping[str, DistFile], catalog: Catalog, base_url: str | None
) -> _Update | None:
    """The in-place update from the site *known* describes to *catalog*; None when
    the site must be rebuilt whole: it is not this build's, is damaged, or a file
    it publishes would change its bytes under the same name."""
    current = catalog.by_filename
    kept = [dist for name, dist in current.items() if name in known]
    # scan() hands back the known object itself for a file whose stat is unchanged.
    reread = [dist for dist in kept if known[dist.filename] is not dist]
    if any(_content(known[dist.filename]) != _content(dist) for dist in reread):
        return None
    if not (_same_build(site, base_url) and _published(site, kept)):
        return None
    added = tuple(dist for name, dist in current.items() if name not in known)
    removed = tuple(dist for name, dist in known.items() if name not in current)
    changed = frozenset(dist.project for dist in (*added, *removed))
    old = build_catalog(dist for dist in known.values() if dist.project in changed)
    if old.all_problems():
        return None
    for name in changed:
        before, after = old.projects.get(name), catalog.projects.get(name)
        if before is None or after is None:
            continue
        for release in after.releases:
            prior = before.release(release.version)
            if (
                prior is not None
                and prior.variants is not None
                and release.variants is not None
                and prior.variants.data != release.variants.data
            ):
                return None  # a merged file would change under its name
    old_projects = frozenset(dist.project for dist in known.values())
    return _Update(catalog, added, removed, changed, old_projects, old)


def _update_in_place(
    site: Path,
    update: _Update,
    *,
    wheel_dir: Path,
    new_metadata: Mapping[str, bytes | None],
    urls: Urls,
    state: bytes,
) -> None:
    """Apply *update* to *site*: new files, then pages, then the state file, and
    last the files no page links any more (see the module's docstring). Everything
    is rendered before the site is touched: a page that cannot be rendered leaves
    the site as it was."""
    files, simple = site / "files", site / "simple"
    catalog_projects = update.current.projects
    # Written in this order, after the new files and their metadata files.
    writes: list[tuple[Path, bytes]] = []
    for name in sorted(update.projects):
        project = catalog_projects.get(name)
        if project is None:
            continue
        for release in project.releases:
            if release.variants is not None:
                writes.append((files / name / release.variants.filename, release.variants.data))
        writes.append((simple / name / "index.html", project_html(project, urls)))
        writes.append((simple / name / "index.json", project_json(project, urls)))
    names = list(catalog_projects)
    if set(names) != update.old_projects:
        writes.append((simple / "index.html", root_html(names, urls)))
        writes.append((simple / "index.json", root_json(names)))
    writes.append((site / STATE_FILE, state))

    for dist in update.added:
        directory = files / dist.project
        directory.mkdir(exist_ok=True)
        _replace(directory / dist.filename, source=wheel_dir / dist.filename)
        metadata = new_metadata.get(dist.filename)
        if dist.kind == WHEEL and metadata is not None:
            _replace(directory / (dist.filename + METADATA_SUFFIX), data=metadata)
    for path, data in writes:
        path.parent.mkdir(exist_ok=True)
        _replace(path, data=data)
    for dist in update.removed:
        target = files / dist.project / dist.filename
        target.unlink(missing_ok=True)
        target.with_name(dist.filename + METADATA_SUFFIX).unlink(missing_ok=True)
    for name in update.projects:
        project = catalog_projects.get(name)
        before = update.old.projects.get(name)
        kept = {r.variants.filename for r in (project.releases if project else ()) if r.variants}
        for release in before.releases if before else ():
            if release.variants is not None and release.variants.filename not in kept:
                (files / name / release.variants.filename).unlink(missing_ok=True)
        if project is None:
            shutil.rmtree(simple / name, ignore_errors=True)
            shutil.rmtree(files / name, ignore_errors=True)


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

    def write(self, catalog: Catalog, urls: Urls) -> None:
        simple = self.root / "simple"
        simple.mkdir()
        (self.root / "files").mkdir()
        names = list(catalog.projects)
        _write_new(simple / "index.html", root_html(names, urls))
        _write_new(simple / "index.json", root_json(names))
        _write_new(self.root / "index.html", _ROOT_PAGE)
        # Each project in its own folders: the processes never write to the same one.
        forked_map(
            lambda project: self.write_project(project, urls), list(catalog.projects.values())
        )

    def write_project(self, project: Project, urls: Urls) -> None:
        """The project's files, metadata files, variants files and pages."""
        files = self.root / "files" / project.name
        files.mkdir()
        # The folders as strings, each file's path one concatenation: a site holds
        # thousands of files, and Path objects for each cost as much as its system calls.
        folder = f"{files}{os.sep}"
        old_folder = f"{self.old_site / 'files' / project.name}{os.sep}"
        wheel_dir = f"{self.wheel_dir}{os.sep}"
        for dist in project.files:
            self.place(dist, folder=folder, old_folder=old_folder, wheel_dir=wheel_dir)
        for release in project.releases:
            if release.variants is not None:
                _write_new(files / release.variants.filename, release.variants.data)
        page_dir = self.root / "simple" / project.name
        page_dir.mkdir()
        links = project_links(project, urls)
        _write_new(page_dir / "index.html", links_html(project.name, links))
        _write_new(page_dir / "index.json", links_json(project.name, project.versions, links))

    def place(self, dist: DistFile, *, folder: str, old_folder: str, wheel_dir: str) -> None:
        """The file and, for a wheel, its metadata file (into *folder*, the project's),
        from the old site's *old_folder* if unchanged, else from *wheel_dir*."""
        target = folder + dist.filename
        old = old_folder + dist.filename
        reuse = dist.filename in self.unchanged
        if not (reuse and _link_if_size(old, target, dist.size)):
            _link_or_copy(wheel_dir + dist.filename, target)
        if dist.kind != WHEEL:
            return
        meta_target = target + METADATA_SUFFIX
        metadata = self.new_metadata.get(dist.filename)
        if metadata is not None:
            _write_new(meta_target, metadata)
            return
        if (
            reuse
            and dist.metadata_size is not None
            and _link_if_size(old + METADATA_SUFFIX, meta_target, dist.metadata_size)
        ):
            return
        # The old site lost it: read the wheel again.
        fresh = read_dist(self.wheel_dir / dist.filename, sha256=dist.sha256)
        if fresh.dist.metadata_sha256 != dist.metadata_sha256 or fresh.core_metadata is None:
            raise IndexBuildError(f"{dist.filename}: changed while the site was built")
        _write_new(meta_target, fresh.core_metadata)


_NEW_FILE = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)


def _write_new(path: str | os.PathLike[str], data: bytes) -> None:
    """A new file at *path* holding *data* (a site being built holds thousands: the
    plain system calls, without a buffered file object's own)."""
    fd = os.open(path, _NEW_FILE, 0o644)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def _replace(target: Path, *, data: bytes | None = None, source: Path | None = None) -> None:
    """Put *data*, or the file *source* (linked, else copied), at *target* under a
    temporary name first, then rename it over: a reader sees the old file or the new
    one, never part of one."""
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        if source is not None:
            _link_or_copy(source, temporary)
        else:
            temporary.write_bytes(data or b"")
        temporary.replace(target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _link_if_size(source: str, target: str, size: int) -> bool:
    """Hard-link (else copy) *source* to *target* if it exists with *size* bytes."""
    try:
        if os.stat(source).st_size != size:  # noqa: PTH116 - per file, see write_project
            return False
    except FileNotFoundError:
        return False
    _link_or_copy(source, target)
    return True


def _link_or_copy(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    # Resolved: os.link would link a symbolic link itself, not its file (Linux). The
    # folders are resolved already, so only the file's own name can be a link: one
    # lstat here instead of one per path component.
    if stat.S_ISLNK(os.lstat(source).st_mode):
        source = os.path.realpath(source)
    try:
        os.link(source, target)
    except OSError:  # another file system, or no hard links there
        shutil.copyfile(source, target)
