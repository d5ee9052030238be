"""What the resolver reads from a package source, and what it works with.

The resolver never talks HTTP: it asks a :class:`Finder` for the releases of a
name (each a :class:`ReleaseFiles`: a version, its wheels, and a way to get the
release's combined variant metadata) and for the ``Requires-Dist`` lines of the
wheel it chose. Tests pass an in-memory finder; the installer adapts the index
client.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName
from packaging.version import Version

from wheelwise.variants.filenames import WheelFilename

if TYPE_CHECKING:  # variant metadata loads only for releases with variant wheels
    from wheelwise.variants.metadata import VariantMetadata

__all__ = [
    "Finder",
    "Hints",
    "Release",
    "ReleaseFiles",
    "WheelFile",
]


@dataclass(frozen=True)
class WheelFile:
    """One wheel of a release: its parsed filename and the source's own handle.

    ``link`` is opaque to the resolver (a URL, a path, an index page entry):
    the installer uses it to download the wheel the resolution chose.
    """

    filename: WheelFilename
    link: Any = field(default=None, compare=False)

    @classmethod
    def parse(cls, filename: str, link: Any = None) -> WheelFile:
        return cls(WheelFilename.parse(filename), link)

    def __str__(self) -> str:
        return str(self.filename)


class ReleaseFiles(Protocol):
    """One version of a package as the source offers it (wheels only)."""

    @property
    def version(self) -> Version: ...

    @property
    def files(self) -> Sequence[WheelFile]: ...

    def variant_metadata(self) -> VariantMetadata | None:
        """The release's combined variant metadata (``*-variants.json``), if any.

        Called only when a variant wheel of the release is compatible by its tags.
        """
        ...


class Finder(Protocol):
    """Where the resolver finds releases and dependencies."""

    def versions(self, name: NormalizedName) -> Sequence[ReleaseFiles]:
        """Every release of *name* (any order); empty when the name is unknown."""
        ...

    def dependencies(self, file: WheelFile) -> list[str]:
        """The ``Requires-Dist`` strings from the core metadata of *file*."""
        ...


class Hints(Protocol):
    """What the resolver tells of its next steps, so that answers can be fetched
    before it asks (:mod:`wheelwise.resolve.lookahead`). Hints only: nothing waits
    for them, and they need not be acted on."""

    def will_ask(self, wants: Iterable[tuple[str, SpecifierSet]]) -> None:
        """These projects will probably be asked for, at a version in these ranges."""
        ...

    def will_read(self, files: Iterable[WheelFile]) -> None:
        """The dependencies of these wheels will probably be read next."""
        ...

    def pinned(self, file: WheelFile) -> None:
        """A candidate was pinned, and *file* is the wheel it would install."""
        ...


@dataclass(frozen=True)
class Release:
    """A plain :class:`ReleaseFiles` holding its metadata (in-memory finders, tests)."""

    version: Version
    files: Sequence[WheelFile]
    metadata: VariantMetadata | None = None
    # Its yanked wheels, when it has no other (PEP 592: used only when pinned).
    yanked_files: Sequence[WheelFile] = ()

    def variant_metadata(self) -> VariantMetadata | None:
        return self.metadata


class Requirement(NamedTuple):
    """What the resolver works with: a name, extras and a version range.

    ``text`` is how the requirement was written (for messages).
    """

    name: NormalizedName
    extras: frozenset[str]
    specifier: SpecifierSet
    text: str
    # The one build allowed (its variant label, None for a non-variant wheel), where
    # a release offers several: ``name[extra]`` needs ``name`` of its own build.
    build: tuple[str | None, ...] = ()

    @property
    def identifier(self) -> str:
        return identifier(self.name, self.extras)

    def __str__(self) -> str:
        return self.text


def identifier(name: NormalizedName, extras: frozenset[str]) -> str:
    """The resolver's key: ``name`` or ``name[extra1,extra2]``."""
    return f"{name}[{','.join(sorted(extras))}]" if extras else name
