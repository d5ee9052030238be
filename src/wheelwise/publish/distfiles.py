"""One distribution file as an index sees it.

A wheel is read through :class:`~wheelwise.wheels.archive.WheelArchive`: the zip
central directory, ``*.dist-info/METADATA`` and, for a variant wheel,
``*.dist-info/variant.json``; never the payload. The file itself is hashed
(sha256) for the links. An sdist (``.tar.gz``) is listed from its name, once its
member list shows it is one (:mod:`wheelwise.publish.filecheck`), with the
``Requires-Python`` of its ``PKG-INFO``.

What is read is kept in a :class:`DistFile`, a small value that the static builder
stores in its state file, so that an unchanged file (same name, size and mtime)
is never opened again.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    canonicalize_name,
    parse_sdist_filename,
)
from packaging.version import InvalidVersion, Version

from wheelwise.errors import WheelwiseError
from wheelwise.publish.filecheck import check_sdist
from wheelwise.userfiles import read_regular_exactly
from wheelwise.variants.errors import VariantError
from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.wheels.archive import MAX_METADATA_BYTES, InMemoryWheel, WheelArchive
from wheelwise.wheels.core_metadata import header_fields
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.quick_read import read_small_members

WHEEL = "wheel"
SDIST = "sdist"
SDIST_SUFFIX = ".tar.gz"
# Real variant.json files are a few KiB.
MAX_VARIANT_JSON_BYTES = 1 << 20
_CHUNK = 1 << 20
# Wheels up to this size are read whole, once; bigger ones are streamed twice.
_IN_MEMORY_BYTES = 16 << 20


class NotADistribution(ValueError, WheelwiseError):
    """A ``.tar.gz`` whose name is not an sdist's: skipped, not an error."""


def file_kind(filename: str) -> str | None:
    """``"wheel"``, ``"sdist"`` or None (not published: hidden or another kind)."""
    if filename.startswith("."):
        return None
    if filename.endswith(".whl"):
        return WHEEL
    if filename.endswith(SDIST_SUFFIX):
        return SDIST
    return None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class DistFile:
    """What the index publishes about one file."""

    filename: str
    kind: str
    project: str  # normalized (PEP 503)
    version: str  # as spelled in the filename
    size: int
    mtime_ns: int
    sha256: str
    requires_python: str | None = None
    # The wheel's core metadata file (PEP 658), served as ``<file>.metadata``.
    metadata_sha256: str | None = None
    metadata_size: int | None = None
    variant_label: str | None = None
    # The wheel's ``*.dist-info/variant.json``, as text (variant wheels only).
    variant_json: str | None = None
    # variant_json parsed, when the reader has it at hand (not stored in the state).
    parsed_variant: VariantMetadata | None = field(default=None, compare=False, repr=False)

    @cached_property
    def parsed_version(self) -> Version:
        return Version(self.version)

    @property
    def is_variant(self) -> bool:
        return self.variant_label is not None

    @cached_property
    def variant_metadata(self) -> VariantMetadata | None:
        if self.variant_json is None:
            return None
        if self.parsed_variant is not None:
            return self.parsed_variant
        return VariantMetadata.from_json(self.variant_json, source=self.filename)

    def same_stat(self, st: os.stat_result) -> bool:
        """Whether *st* is the file this was read from (size and mtime)."""
        return st.st_size == self.size and st.st_mtime_ns == self.mtime_ns

    # -- the static builder's state file -----------------------------------------

    def to_state(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "project": self.project,
            "version": self.version,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "sha256": self.sha256,
            "requires_python": self.requires_python,
            "metadata_sha256": self.metadata_sha256,
            "metadata_size": self.metadata_size,
            "variant_label": self.variant_label,
            "variant_json": self.variant_json,
        }

    @classmethod
    def from_state(cls, filename: str, entry: object) -> DistFile:
        """The inverse of :meth:`to_state`; ValueError for anything unexpected."""
        if not isinstance(entry, dict):
            raise ValueError(f"state entry for {filename!r} is not an object")

        def text(key: str, *, optional: bool = False) -> Any:
            value = entry.get(key)
            if value is None and optional:
                return None
            if not isinstance(value, str):
                raise ValueError(f"state entry for {filename!r}: bad {key!r}")
            return value

        def number(key: str, *, optional: bool = False) -> Any:
            value = entry.get(key)
            if value is None and optional:
                return None
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"state entry for {filename!r}: bad {key!r}")
            return value

        dist = cls(
            filename=filename,
            kind=text("kind"),
            project=text("project"),
            version=text("version"),
            size=number("size"),
            mtime_ns=number("mtime_ns"),
            sha256=text("sha256"),
            requires_python=text("requires_python", optional=True),
            metadata_sha256=text("metadata_sha256", optional=True),
            metadata_size=number("metadata_size", optional=True),
            variant_label=text("variant_label", optional=True),
            variant_json=text("variant_json", optional=True),
        )
        if dist.kind != file_kind(filename):
            raise ValueError(f"state entry for {filename!r}: bad 'kind'")
        if dist.kind == WHEEL and (dist.metadata_sha256 is None or dist.metadata_size is None):
            raise ValueError(f"state entry for {filename!r}: no core metadata")
        return dist


@dataclass(frozen=True)
class ReadDist:
    """A freshly read file: its facts and, for a wheel, its core metadata bytes."""

    dist: DistFile
    core_metadata: bytes | None


def read_dist(path: Path, *, sha256: str | None = None) -> ReadDist:
    """Read what the index needs from *path* (a wheel or an sdist).

    Raises WheelError for a broken wheel, one whose METADATA disagrees with its
    filename, or a variant wheel whose ``variant.json`` is missing or does not
    describe its label; NotADistribution for a ``.tar.gz`` not named as an sdist;
    UnsafeFile for one that is not an sdist inside.
    """
    st = path.stat()
    kind = file_kind(path.name)
    if kind == SDIST:
        try:
            name, version = parse_sdist_filename(path.name)
        except (InvalidSdistFilename, InvalidVersion) as exc:
            raise NotADistribution(f"{path.name}: not an sdist filename ({exc})") from None
        pkg_info = check_sdist(path)
        dist = DistFile(
            filename=path.name,
            kind=SDIST,
            project=name,
            version=str(version),
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            sha256=sha256 or sha256_file(path),
            requires_python=sdist_requires_python(pkg_info),
        )
        return ReadDist(dist, None)
    if kind != WHEEL:
        raise ValueError(f"{path.name}: neither a wheel nor an sdist")
    try:
        filename = WheelFilename.parse(path.name)
    except VariantError as exc:
        raise WheelError(str(exc)) from None
    data, metadata, variant_data = wheel_members(path, st.st_size, filename)
    if data is not None:  # one read serves the hash and the members
        sha256 = sha256 or hashlib.sha256(data).hexdigest()
    requires_python = check_core_metadata(path.name, filename, metadata)
    variant_json, variant = None, None
    if filename.is_variant:
        variant_json, variant = check_variant_json(path.name, filename, variant_data)
    dist = DistFile(
        filename=path.name,
        kind=WHEEL,
        project=filename.name,
        version=filename.version_text,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        sha256=sha256 or sha256_file(path),
        requires_python=requires_python,
        metadata_sha256=hashlib.sha256(metadata).hexdigest(),
        metadata_size=len(metadata),
        variant_label=filename.variant_label,
        variant_json=variant_json,
        parsed_variant=variant,
    )
    return ReadDist(dist, metadata)


def wheel_members(
    path: Path, size: int, filename: WheelFilename
) -> tuple[bytes | None, bytes, bytes | None]:
    """The wheel's bytes where it is small enough to read whole, its METADATA and,
    for a variant wheel, its variant.json (None when it has none)."""
    wanted = _VARIANT_MEMBERS if filename.is_variant else _PLAIN_MEMBERS
    data = None
    source: Path | InMemoryWheel = path
    if size <= _IN_MEMORY_BYTES:
        data = _read_whole(path, size)
        quick = read_small_members(data, wanted)
        if quick is not None and "METADATA" in quick.files:
            return data, quick.files["METADATA"], quick.files.get("variant.json")
        source = InMemoryWheel(path.name, data)
    # A large or unusual wheel, or a broken one: WheelArchive says what is wrong.
    with WheelArchive(source, filename=filename) as archive:
        variant_member = archive.dist_info_path("variant.json")
        return (
            data,
            archive.metadata(),
            archive.read(variant_member, limit=MAX_VARIANT_JSON_BYTES)
            if filename.is_variant and variant_member in archive
            else None,
        )


# The members read_dist reads, with the most bytes each may hold.
_PLAIN_MEMBERS = {"METADATA": MAX_METADATA_BYTES}
_VARIANT_MEMBERS = {**_PLAIN_MEMBERS, "variant.json": MAX_VARIANT_JSON_BYTES}


def _read_whole(path: Path, size: int) -> bytes:
    """The *size* bytes of the wheel at *path*."""
    data = read_regular_exactly(path, size)
    if data is None:
        raise WheelError(f"{path.name}: changed while it was read; run the build again")
    return data


_FIELDS = frozenset({"name", "version", "requires-python"})


def core_fields(metadata: bytes) -> dict[str, str]:
    """Name, Version and Requires-Python from the header block of a METADATA file."""
    return header_fields(metadata, _FIELDS)


def sdist_requires_python(pkg_info: bytes | None) -> str | None:
    """The Requires-Python of an sdist's PKG-INFO, as PyPI lists it on the sdist's
    link; None without one, or with one that is no version specifier (an installer
    would refuse it: better none than a wrong one)."""
    if not pkg_info:
        return None
    text = core_fields(pkg_info).get("requires-python", "").strip()
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return None
    return text or None


def check_core_metadata(where: str, filename: WheelFilename, metadata: bytes) -> str | None:
    """Check that METADATA names the wheel's project and version; its Requires-Python."""
    fields = core_fields(metadata)
    name, version = fields.get("name"), fields.get("version")
    if not name or not version:
        raise WheelError(f"{where}: METADATA has no Name or no Version field")
    try:
        same_version = Version(version) == filename.version
    except InvalidVersion:
        raise WheelError(f"{where}: METADATA has an invalid Version {version!r}") from None
    if canonicalize_name(name) != filename.name or not same_version:
        raise WheelError(
            f"{where}: METADATA says Name: {name}, Version: {version}, but the filename "
            f"says {filename.distribution} {filename.version_text}"
        )
    return fields.get("requires-python") or None


def check_variant_json(
    where: str, filename: WheelFilename, data: bytes | None
) -> tuple[str, VariantMetadata]:
    """A variant wheel's variant.json (text, parsed), checked against its label."""
    label = filename.variant_label
    if data is None:
        raise WheelError(
            f"{where}: variant wheel (label {label!r}) has no *.dist-info/variant.json"
        )
    try:
        text = data.decode("utf-8")
        metadata = VariantMetadata.from_json(text, source=where)
    except UnicodeDecodeError:
        raise WheelError(f"{where}: variant.json is not valid UTF-8") from None
    except VariantError as exc:
        raise WheelError(str(exc)) from None
    if list(metadata.variants) != [label]:
        raise WheelError(
            f"{where}: variant.json 'variants' must hold exactly the filename's label "
            f"{label!r}, found {sorted(metadata.variants)}"
        )
    return text, metadata
