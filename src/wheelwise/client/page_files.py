"""A project page's links, grouped by version once and read in full on first use.

A popular project's page lists thousands of versions with dozens of files each,
and an install looks at a handful of them. So reading a page checks each link's
shape and takes the version from its file name, nothing more; resolving a link's
URL and checking its hashes (most of the cost of a link) wait until its version is
asked for, and are then done once. Finding a version's files is a dictionary
lookup: no work grows with (versions x files).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from wheelwise.client.index_file import IndexFile

__all__ = [
    "OTHER_LINK",
    "SDIST_LINK",
    "WHEEL_LINK",
    "PageFiles",
    "PageLink",
    "link_kind",
    "name_and_version",
]


class PageLink(NamedTuple):
    """One link of a page, checked for shape only."""

    filename: str
    position: int  # in the page
    raw: Any  # what the page gives for it, for the builder


Builder = Callable[[PageLink], "IndexFile | None"]
_SDIST_SUFFIXES = (".tar.gz", ".zip")
_VARIANTS_JSON_SUFFIX = "-variants.json"


def name_and_version(filename: str) -> tuple[str, str] | None:
    """The name and version parts of a wheel, sdist or ``*-variants.json`` file name,
    split as :class:`~wheelwise.client.index_file.IndexFile` splits them (None for
    other names). Not checked: a name that turns out invalid is left out later."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return (parts[0], parts[1]) if 5 <= len(parts) <= 7 else None
    if filename.endswith(_VARIANTS_JSON_SUFFIX):
        parts = filename[: -len(_VARIANTS_JSON_SUFFIX)].split("-")
        return (parts[0], parts[1]) if len(parts) == 2 else None
    for suffix in _SDIST_SUFFIXES:
        if filename.endswith(suffix):
            name, sep, version = filename[: -len(suffix)].rpartition("-")
            return (name, version) if sep and name else None
    return None


WHEEL_LINK = 1
SDIST_LINK = 2
OTHER_LINK = 4


def link_kind(filename: str) -> int:
    """:data:`WHEEL_LINK`, :data:`SDIST_LINK` or :data:`OTHER_LINK`, by suffix only."""
    if filename.endswith(".whl"):
        return WHEEL_LINK
    if filename.endswith(_SDIST_SUFFIXES):
        return SDIST_LINK
    return OTHER_LINK


# A group's links, or what loads them (a copy kept on disk: see grouped_cache).
Group = list[PageLink] | Callable[[], list[PageLink]]


class PageFiles:
    """The links of one page; *build* turns a link into its :class:`IndexFile` (None:
    a link that is skipped), raising what the page's parser raises."""

    def __init__(self, links: Sequence[PageLink], build: Builder) -> None:
        groups: dict[Version, list[PageLink]] = {}
        kinds: dict[Version, int] = {}
        rest: list[PageLink] = []
        parsed: dict[str, Version | None] = {}
        for link in links:
            split = name_and_version(link.filename)
            version = None
            if split is not None:
                text = split[1]
                if text in parsed:
                    version = parsed[text]
                else:
                    try:
                        version = parsed[text] = Version(text)
                    except InvalidVersion:
                        version = parsed[text] = None
            if version is None:
                rest.append(link)
            else:
                groups.setdefault(version, []).append(link)
                kinds[version] = kinds.get(version, 0) | link_kind(link.filename)
        self._setup(dict(groups), kinds, rest, len(links), build)

    @classmethod
    def grouped(
        cls,
        groups: Mapping[Version, Group],
        kinds: Mapping[Version, int],
        rest: Group,
        count: int,
        build: Builder,
    ) -> PageFiles:
        """A page grouped already: *kinds* says which kinds of link (an OR of
        ``*_LINK``) each version has, *rest* holds the links of no version."""
        page = cls.__new__(cls)
        page._setup(dict(groups), dict(kinds), rest, count, build)
        return page

    def _setup(
        self,
        groups: dict[Version, Group],
        kinds: dict[Version, int],
        rest: Group,
        count: int,
        build: Builder,
    ) -> None:
        self._groups = groups
        self._kinds = kinds
        self._rest = rest
        self._count = count
        self._build = build
        self._built: dict[int, IndexFile | None] = {}
        self._lock = threading.Lock()
        self._oldest_first: list[Version] | None = None

    @classmethod
    def of(cls, files: Iterable[IndexFile]) -> PageFiles:
        """Files read already (a directory's, a small page's)."""
        links = [PageLink(file.filename, position, file) for position, file in enumerate(files)]
        return cls(links, _as_built)

    def __len__(self) -> int:
        return self._count

    def links(self) -> list[PageLink]:
        """Every link, in page order (loading every group)."""
        with self._lock:
            found = [link for version in self._groups for link in self._group(version)]
            found += self._loaded_rest()
        return sorted(found, key=lambda link: link.position)

    def only(self, project: NormalizedName) -> PageFiles:
        """The links whose file names give *project* (a find-links page lists files of
        any project)."""
        names: dict[str, bool] = {}
        mine = []
        for link in self.links():
            split = name_and_version(link.filename)
            if split is None:
                continue
            if split[0] not in names:
                names[split[0]] = canonicalize_name(split[0]) == project
            if names[split[0]]:
                mine.append(link)
        return PageFiles(mine, self._build)

    def versions(self, kinds: int = WHEEL_LINK | SDIST_LINK | OTHER_LINK) -> list[Version]:
        """The versions the links' file names give, oldest first: those with a link of
        one of *kinds* (an OR of ``*_LINK``), by file name (nothing read in full)."""
        if self._oldest_first is None:  # sorted once: a big project has thousands
            self._oldest_first = sorted(self._kinds)
        return [v for v in self._oldest_first if self._kinds[v] & kinds]

    def kinds_of(self, version: Version) -> int:
        """The kinds of link *version* has (an OR of ``*_LINK``; 0 when none)."""
        return self._kinds.get(version, 0)

    def links_of(self, version: Version) -> list[PageLink]:
        """The links of *version*, in page order (not read in full)."""
        with self._lock:
            return list(self._group(version)) if version in self._groups else []

    def unversioned(self) -> list[PageLink]:
        """The links whose file names give no version."""
        with self._lock:
            return list(self._loaded_rest())

    def files_for(self, version: Version) -> list[IndexFile]:
        """The files of *version*, in page order, read in full (once)."""
        with self._lock:
            links = self._group(version) if version in self._groups else []
            found = self._read(links)
        return [file for file in found if file.version == version]

    def all(self) -> tuple[IndexFile, ...]:
        """Every file of the page, in page order, read in full (once)."""
        links = self.links()
        with self._lock:
            return tuple(self._read(links))

    def built(self) -> int:
        """How many links were read in full so far."""
        return len(self._built)

    def _group(self, version: Version) -> list[PageLink]:
        group = self._groups[version]
        if callable(group):
            group = self._groups[version] = group()
        return group

    def _loaded_rest(self) -> list[PageLink]:
        if callable(self._rest):
            self._rest = self._rest()
        return self._rest

    def _read(self, links: Sequence[PageLink]) -> list[IndexFile]:
        files = []
        for link in links:
            if link.position in self._built:
                file = self._built[link.position]
            else:
                file = self._built[link.position] = self._build(link)
            if file is not None:
                files.append(file)
        return files


def _as_built(link: PageLink) -> IndexFile:
    file: IndexFile = link.raw
    return file
