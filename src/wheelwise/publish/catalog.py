"""A directory of distribution files as projects, releases and files.

:func:`scan` lists a directory (top level only; hidden files and files other than
``.whl`` / ``.tar.gz`` are not published) and reads the files it does not already
know (:mod:`wheelwise.publish.distfiles`). :func:`build_catalog` groups the files
into projects and releases and merges each release's variant metadata into its
``{name}-{version}-variants.json`` (PEP 825 "Index-level metadata"; PEP 850 v0.2.0
when the wheels carry provider information, see
:mod:`wheelwise.variants.providers_format`).

A file that cannot be read, or a release whose wheels disagree, is a *problem* of
its project: the static builder refuses to publish anything then; the server
answers that project's page with the problem.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

from wheelwise.forked_map import forked_map
from wheelwise.publish.consistency import merge_release
from wheelwise.publish.distfiles import (
    DistFile,
    NotADistribution,
    ReadDist,
    file_kind,
    read_dist,
)
from wheelwise.publish.filecheck import UnsafeFile, check_link
from wheelwise.variants.errors import VariantError
from wheelwise.variants.filenames import variants_json_filename
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.providers_format import metadata_bytes

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Problem:
    """A file that cannot be published, or a release that is inconsistent."""

    project: str | None  # None when not even the project can be told
    message: str


@dataclass(frozen=True)
class VariantsFile:
    """The merged ``{name}-{version}-variants.json`` of one release."""

    filename: str
    data: bytes
    sha256: str
    metadata: VariantMetadata

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class Release:
    version: Version
    files: tuple[DistFile, ...]  # sorted by filename
    variants: VariantsFile | None


@dataclass(frozen=True)
class Project:
    name: str  # normalized
    releases: tuple[Release, ...]  # oldest first
    problems: tuple[str, ...] = ()

    @property
    def files(self) -> Iterable[DistFile]:
        for release in self.releases:
            yield from release.files

    @property
    def versions(self) -> list[str]:
        return [str(release.version) for release in self.releases]

    def release(self, version: Version) -> Release | None:
        for release in self.releases:
            if release.version == version:
                return release
        return None


@dataclass(frozen=True)
class Catalog:
    projects: Mapping[str, Project]  # sorted by name
    # Problems no project can be blamed for (e.g. a wheel with an invalid name).
    problems: tuple[str, ...] = ()
    # Files of the directory by name, for lookups.
    by_filename: Mapping[str, DistFile] = field(default_factory=dict)

    def all_problems(self) -> list[str]:
        found = list(self.problems)
        for project in self.projects.values():
            found.extend(project.problems)
        return found

    def variants_files(self) -> Iterable[tuple[str, VariantsFile]]:
        for project in self.projects.values():
            for release in project.releases:
                if release.variants is not None:
                    yield project.name, release.variants


@dataclass
class ScanResult:
    files: list[DistFile]
    # Files read during this scan (not known before), with their core metadata.
    read: list[ReadDist]
    problems: list[Problem]
    # Files that look published but are not distributions (reasons).
    skipped: list[str]


def _guess_project(filename: str) -> str | None:
    head = filename.split("-", 1)[0]
    return canonicalize_name(head) if head else None


def scan(
    directory: Path,
    known: Mapping[str, DistFile] | None = None,
    *,
    reader: Callable[[Path], ReadDist] = read_dist,
    refuse_unsafe: bool = False,
) -> ScanResult:
    """List *directory* and read every file *known* does not hold with the same stat.

    A file the index must not publish (:mod:`wheelwise.publish.filecheck`) is a
    problem with *refuse_unsafe* (``index build``), else skipped with a logged
    warning (``index serve``: the rest of the directory is still served).
    """
    known = known or {}
    files: list[DistFile] = []
    todo: list[Path] = []
    unsafe: list[str] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if file_kind(entry.name) is None:
                continue
            if entry.is_symlink():
                try:
                    check_link(Path(entry.path), directory)
                except UnsafeFile as exc:
                    unsafe.append(str(exc))
                    continue
            if not entry.is_file(follow_symlinks=True):
                continue
            cached = known.get(entry.name)
            if cached is not None and cached.same_stat(entry.stat(follow_symlinks=True)):
                files.append(cached)
            else:
                todo.append(Path(entry.path))
    result = ScanResult(files, [], [], [])

    def attempt(path: Path) -> ReadDist | Problem | str | UnsafeFile:
        try:
            return reader(path)
        except NotADistribution as exc:
            return str(exc)
        except UnsafeFile as exc:
            return exc
        except OSError as exc:
            return Problem(_guess_project(path.name), f"{path.name}: {exc.strerror or exc}")
        except ValueError as exc:  # WheelError, VariantError, a bad sdist name
            return Problem(_guess_project(path.name), str(exc))

    # Reading a wheel is CPU-bound Python: processes, not threads, on several cores.
    for outcome in forked_map(attempt, todo):
        if isinstance(outcome, UnsafeFile):
            unsafe.append(str(outcome))
        elif isinstance(outcome, str):
            result.skipped.append(outcome)
        elif isinstance(outcome, Problem):
            result.problems.append(outcome)
        else:
            result.read.append(outcome)
            result.files.append(outcome.dist)
    for message in unsafe:
        if refuse_unsafe:
            result.problems.append(Problem(_guess_project(message), message))
        else:
            _log.warning("not serving %s", message)
    return result


def build_catalog(files: Iterable[DistFile], problems: Sequence[Problem] = ()) -> Catalog:
    """Group *files* into projects and releases; merge each release's variant metadata."""
    grouped: dict[str, dict[Version, list[DistFile]]] = {}
    by_filename: dict[str, DistFile] = {}
    for dist in files:
        grouped.setdefault(dist.project, {}).setdefault(dist.parsed_version, []).append(dist)
        by_filename[dist.filename] = dist
    project_problems: dict[str, list[str]] = {}
    orphans: list[str] = []
    for problem in problems:
        if problem.project is None:
            orphans.append(problem.message)
        else:
            project_problems.setdefault(problem.project, []).append(problem.message)
    projects: dict[str, Project] = {}
    for name in sorted(set(grouped) | set(project_problems)):
        releases: list[Release] = []
        found = project_problems.get(name, [])
        for version, dists in sorted(grouped.get(name, {}).items()):
            dists.sort(key=lambda d: d.filename)
            try:
                variants = _variants_file(name, version, dists)
            except VariantError as exc:
                found.append(str(exc))
                variants = None
            releases.append(Release(version, tuple(dists), variants))
        projects[name] = Project(name, tuple(releases), tuple(found))
    return Catalog(projects, tuple(orphans), by_filename)


def _variants_file(name: str, version: Version, dists: Sequence[DistFile]) -> VariantsFile | None:
    documents = [d.variant_metadata for d in dists if d.is_variant]
    present = [doc for doc in documents if doc is not None]
    if not present:
        return None
    merged = merge_release(name, str(version), present)
    data = metadata_bytes(merged)
    return VariantsFile(
        filename=variants_json_filename(name, version),
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        metadata=merged,
    )
