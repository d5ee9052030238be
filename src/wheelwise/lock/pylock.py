"""The ``pylock.toml`` model (PEP 751), with PEP 825's ``[packages.variants-json]``.

Values only: :mod:`wheelwise.lock.reader` validates a file into these classes and
:mod:`wheelwise.lock.writer` writes them back. A wheel, an sdist and the direct
sources are ``packaging.pylock``'s classes. The order of what has no meaning of
its own (packages, wheels, extras, groups, environments) is canonical on the model,
so that a lock read back from its written text compares equal to it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.markers import Marker
from packaging.pylock import (
    PackageArchive,
    PackageDirectory,
    PackageSdist,
    PackageVcs,
    PackageWheel,
)
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.lock.errors import LockError
from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.metadata import VariantMetadata

LOCK_VERSION = "1.0"
# PEP 751 "File Name": pylock.toml, or pylock.<name>.toml for a named lock.
_LOCK_FILE_NAME = re.compile(r"pylock\.([^.]+\.)?toml")

# TOML data kept as read (``[tool]``, ``dependencies``): tables, arrays and scalars.
TomlTable = dict[str, Any]


def is_lock_file_name(filename: str) -> bool:
    """Whether *filename* (a file name, not a path) names a lock file: ``pylock.toml``
    or ``pylock.<name>.toml`` (PEP 751 "File Name"), as pip and uv tell a lock given
    with ``-r`` from a requirements file."""
    return _LOCK_FILE_NAME.fullmatch(filename) is not None


def file_name_of(name: str | None, path: str | None, url: str | None) -> str:
    """The file name of a locked file: ``name``, else the last part of ``path``, else
    of ``url`` (percent-decoded). Empty when none gives one."""
    if name is not None:
        return name
    if path is not None:
        return path.replace("\\", "/").rsplit("/", 1)[-1]
    if url is not None:
        try:
            url_path = urlsplit(url).path
        except ValueError:  # e.g. an unclosed IPv6 bracket
            return ""
        return unquote(url_path.rsplit("/", 1)[-1])
    return ""


# The file entries and sources are packaging's (PEP 751 defines them whole);
# a package and the lock are wheelwise's own: they keep versions and markers as
# written, so that a lock reads back and writes byte for byte, and carry PEP 825's
# ``variants-json``, which packaging's model lacks.
Wheel = PackageWheel
Sdist = PackageSdist
Archive = PackageArchive
Vcs = PackageVcs
Directory = PackageDirectory


@dataclass(frozen=True)
class VariantsJson:
    """``[packages.variants-json]``: a release's ``*-variants.json`` inlined (PEP 825).

    ``document`` is the table as written, ``$schema`` included, so that a newer
    schema's keys are kept when the lock is written again; ``metadata`` is its
    validated reading."""

    document: TomlTable
    source: str = field(default="<variants-json>", compare=False)
    metadata: VariantMetadata = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "metadata", VariantMetadata.from_dict(self.document, source=self.source)
        )

    @classmethod
    def from_metadata(cls, metadata: VariantMetadata) -> VariantsJson:
        """The document of *metadata* to inline (:meth:`VariantMetadata.inline_document`:
        PEP 825, or a legacy draft as published)."""
        return cls(metadata.inline_document(), source=metadata.source)

    @property
    def labels(self) -> tuple[str, ...]:
        return self.metadata.labels


def _version_key(text: str | None) -> tuple[int, Version | str]:
    if text is None:
        return (0, "")
    try:
        return (1, Version(text))
    except (InvalidVersion, ValueError):
        return (2, text)


@dataclass(frozen=True, kw_only=True)
class Package:
    """One ``[[packages]]`` entry. Wheels are kept sorted by file name."""

    name: str
    version: str | None = None
    marker: str | None = None
    requires_python: str | None = None
    # Informational only: installers must not use it (PEP 751).
    dependencies: tuple[TomlTable, ...] = ()
    vcs: Vcs | None = None
    directory: Directory | None = None
    archive: Archive | None = None
    index: str | None = None
    sdist: Sdist | None = None
    wheels: tuple[Wheel, ...] = ()
    attestation_identities: tuple[TomlTable, ...] = ()
    variants_json: VariantsJson | None = None
    tool: TomlTable | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "wheels", tuple(sorted(self.wheels, key=lambda w: w.filename)))

    def sort_key(self) -> tuple[str, tuple[int, Version | str], str]:
        return (self.name, _version_key(self.version), self.marker or "")

    def describe(self) -> str:
        """``name version`` for messages."""
        return self.name if self.version is None else f"{self.name} {self.version}"

    @property
    def source_kind(self) -> str | None:
        """Which non-wheel source the package is locked from, if any."""
        if self.vcs is not None:
            return f"a {self.vcs.type} repository (vcs)"
        if self.directory is not None:
            return "a local directory"
        if self.archive is not None:
            return "an archive"
        if self.sdist is not None:
            return "an sdist"
        return None


@dataclass(frozen=True, kw_only=True)
class PyLock:
    """A whole ``pylock.toml``. Packages are kept sorted by name, then version."""

    lock_version: str = LOCK_VERSION
    environments: tuple[str, ...] | None = None
    requires_python: str | None = None
    extras: tuple[str, ...] = ()
    dependency_groups: tuple[str, ...] = ()
    default_groups: tuple[str, ...] = ()
    created_by: str
    packages: tuple[Package, ...] = ()
    tool: TomlTable | None = None
    # Where it was read from, for messages; not part of equality.
    source: str = field(default="pylock.toml", compare=False)
    # What a reader should tell the user (a newer minor lock-version, keys ignored).
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.environments is not None:
            object.__setattr__(self, "environments", tuple(sorted(self.environments)))
        for name in ("extras", "dependency_groups", "default_groups"):
            object.__setattr__(self, name, tuple(sorted(getattr(self, name))))
        object.__setattr__(
            self, "packages", tuple(sorted(self.packages, key=lambda p: p.sort_key()))
        )

    def packages_named(self, name: str) -> tuple[Package, ...]:
        """Every entry for *name* (any spelling of it)."""
        wanted = canonicalize_name(name)
        return tuple(p for p in self.packages if p.name == wanted)

    def package_for(
        self, name: str, environment: Mapping[str, str | frozenset[str]] | None = None
    ) -> Package | None:
        """The one entry for *name*, or None when there is none.

        With *environment* (marker values, ``extras`` and ``dependency_groups``
        included), entries whose ``marker`` it does not satisfy are left out first.
        More than one entry left is an error, as PEP 751 requires."""
        found = self.packages_named(name)
        if environment is not None:
            found = tuple(p for p in found if self._applies(p, environment))
        if len(found) > 1:
            raise LockError(
                f"{self.source}: {len(found)} entries for package {name!r} apply "
                f"({', '.join(p.describe() for p in found)}); give each a 'marker' "
                "so that one applies per environment"
            )
        return found[0] if found else None

    def _applies(self, package: Package, environment: Mapping[str, str | frozenset[str]]) -> bool:
        if package.marker is None:
            return True
        try:
            return Marker(package.marker).evaluate(environment, "lock_file")
        except (ValueError, KeyError, RecursionError) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise LockError(
                f"{self.source}: package {package.describe()}: marker {package.marker!r} "
                f"cannot be evaluated ({reason}); fix the marker or the environment given"
            ) from None

    def wheel_files(self, package: Package) -> tuple[tuple[WheelFilename, Wheel], ...]:
        """*package*'s wheels with their parsed file names (see :func:`wheel_files`)."""
        return wheel_files(package, source=self.source)


def wheel_files(
    package: Package, *, source: str = "pylock.toml"
) -> tuple[tuple[WheelFilename, Wheel], ...]:
    """*package*'s wheels as ``(WheelFilename, Wheel)`` pairs, in file name order.

    A package locked without wheels (vcs, directory, archive or sdist only) is a
    LockError: wheelwise installs wheels only."""
    if not package.wheels:
        kind = package.source_kind
        what = f"is locked from {kind} only" if kind else "lists no wheels"
        raise LockError(
            f"{source}: package {package.describe()} {what}; wheelwise installs wheels "
            "only: lock it again with wheels (or install it with another tool)"
        )
    try:
        return tuple((WheelFilename.parse(w.filename), w) for w in package.wheels)
    except ValueError as exc:  # only for a lock built in code: the reader checks names
        raise LockError(f"{source}: package {package.describe()}: {exc}") from None
