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
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from wheelwise.index.simple_parse import IndexFile

__all__ = ["PageFiles", "PageLink", "name_and_version"]


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
    split as :class:`~wheelwise.index.simple_parse.IndexFile` splits them (None for
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


class PageFiles:
    """The links of one page; *build* turns a link into its :class:`IndexFile` (None:
    a link that is skipped), raising what the page's parser raises."""

    def __init__(self, links: Sequence[PageLink], build: Builder) -> None:
        self._links = links
        self._build = build
        self._built: dict[int, IndexFile | None] = {}
        self._lock = threading.Lock()
        self._groups: dict[Version, list[PageLink]] = {}
        parsed: dict[str, Version | None] = {}
        for link in links:
            split = name_and_version(link.filename)
            if split is None:
                continue
            text = split[1]
            if text in parsed:
                version = parsed[text]
            else:
                try:
                    version = parsed[text] = Version(text)
                except InvalidVersion:
                    version = parsed[text] = None
            if version is not None:
                self._groups.setdefault(version, []).append(link)

    @classmethod
    def of(cls, files: Iterable[IndexFile]) -> PageFiles:
        """Files read already (a directory's, a small page's)."""
        links = [PageLink(file.filename, position, file) for position, file in enumerate(files)]
        return cls(links, _as_built)

    def __len__(self) -> int:
        return len(self._links)

    def only(self, project: NormalizedName) -> PageFiles:
        """The links whose file names give *project* (a find-links page lists files of
        any project)."""
        names: dict[str, bool] = {}
        mine = []
        for link in self._links:
            split = name_and_version(link.filename)
            if split is None:
                continue
            if split[0] not in names:
                names[split[0]] = canonicalize_name(split[0]) == project
            if names[split[0]]:
                mine.append(link)
        return PageFiles(mine, self._build)

    def versions(self) -> list[Version]:
        """The versions the links' file names give, oldest first."""
        return sorted(self._groups)

    def filenames(self, version: Version) -> list[str]:
        """The file names of *version*'s links (nothing read in full)."""
        return [link.filename for link in self._groups.get(version, ())]

    def files_for(self, version: Version) -> list[IndexFile]:
        """The files of *version*, in page order, read in full (once)."""
        found = self._read(self._groups.get(version, ()))
        return [file for file in found if file.version == version]

    def all(self) -> tuple[IndexFile, ...]:
        """Every file of the page, in page order, read in full (once)."""
        return tuple(self._read(self._links))

    def built(self) -> int:
        """How many links were read in full so far."""
        return len(self._built)

    def _read(self, links: Sequence[PageLink]) -> list[IndexFile]:
        with self._lock:
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
