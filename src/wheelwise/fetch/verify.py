"""A wheel checked before it may be installed: :func:`verify_wheel`."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from installer.records import RecordEntry
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.cache.unpacked import UnpackedWheel
from wheelwise.models.errors import InstallError
from wheelwise.wheels.archive import InMemoryWheel, WheelArchive
from wheelwise.wheels.core_metadata import read_core_metadata
from wheelwise.wheels.errors import WheelError

if TYPE_CHECKING:
    from wheelwise.variants.metadata import VariantMetadata

__all__ = ["VerifiedWheel", "verify_wheel"]


@dataclass(frozen=True)
class VerifiedWheel:
    """A wheel checked by :func:`verify_wheel`, ready for :func:`install_wheels`."""

    path: Path
    """The file, or just the file name of a wheel held in memory."""
    source: Path | InMemoryWheel | UnpackedWheel
    name: str
    version: str
    variant: str | None
    record: dict[str, RecordEntry] = field(compare=False, repr=False)
    """Its ``RECORD``, checked to list every member; empty for a wheel unpacked in
    the cache, whose files were checked when the entry was made."""
    opened: zipfile.ZipFile | None = field(default=None, compare=False, repr=False)
    """The wheel's zip as verify_wheel opened it (in-memory wheels), for unpacking."""
    metadata: bytes = field(default=b"", compare=False, repr=False)
    """Its ``METADATA``."""
    requires_dist: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """The ``Requires-Dist`` values of its ``METADATA`` (parsed once, here)."""
    dist_info: str = field(default="", compare=False, repr=False)
    """The name of its ``.dist-info`` folder."""
    variant_metadata: VariantMetadata | None = field(default=None, compare=False, repr=False)
    """Its own ``*.dist-info/variant.json`` (None when it has none)."""
    hashes: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    """The hashes its source gave for the wheel file (that keep it in the cache)."""
    origin: str = field(default="", compare=False, repr=False)
    """Where it came from as the user knows it: the file of a ``file:`` URL, else the
    URL; empty when only its file is known. Errors name it, not a scratch copy."""
    direct_url: str | None = field(default=None, compare=False, repr=False)
    """PEP 610's ``direct_url.json`` to install with it (a direct reference)."""

    @property
    def work(self) -> int:
        """How long unpacking takes, roughly: bytes written, plus a fixed cost per
        file worth ~12 KB of decompressing, hashing and writing."""
        if isinstance(self.source, UnpackedWheel):
            return sum(file.size + 12_500 for file in self.source.files)
        return sum((entry.size or 0) + 12_500 for entry in self.record.values())

    def top_names(self) -> set[str]:
        """The top-level names of its files, its ``.dist-info`` and ``.data``
        folders left out: a cache entry's are its folder's names, one listing."""
        source = self.source
        if isinstance(source, UnpackedWheel):
            try:
                names = {entry.name for entry in source.root.iterdir()}
            except OSError:  # the entry's folder is gone: placing it will say so
                names = {file.path.partition("/")[0] for file in source.files}
        else:
            names = {path.partition("/")[0] for path in self.record}
        return {name for name in names if not name.endswith((".dist-info", ".data"))}

    def root_files(self) -> Iterator[tuple[str, str, int | None]]:
        """Its files with their digests (``sha256=...``, as RECORD writes one) and
        sizes, as its cache entry or its ``RECORD`` lists them: paths relative to
        the wheel, its ``.dist-info`` folder's included."""
        source = self.source
        if isinstance(source, UnpackedWheel):
            for file in source.files:
                yield file.path, f"sha256={file.sha256}", file.size
            return
        for path, entry in self.record.items():
            if entry.hash_ is not None:
                yield path, f"{entry.hash_.name}={entry.hash_.value}", entry.size


def verify_wheel(source: Path | InMemoryWheel | UnpackedWheel) -> VerifiedWheel:
    """Open *source* safely and check it can be installed: its structure, RECORD
    listing every member with a strong hash, and METADATA naming it. The members'
    contents are checked against RECORD while they are written. Raises InstallError.

    :func:`install_wheels` calls this for every wheel it is given as a path; a caller
    may call it earlier (as each download completes, say) and pass the result."""
    if isinstance(source, UnpackedWheel):
        return _verify_unpacked(source)
    path = source.path if isinstance(source, InMemoryWheel) else Path(source)
    try:
        with WheelArchive(source) as archive:
            record = archive.check_record_listing()
            archive.check_dist_info_files()
            metadata = archive.metadata()
            variant_metadata = archive.variant_metadata()
            # An in-memory wheel's parsed zip is kept for unpacking (no file handle).
            opened = archive.detach() if isinstance(source, InMemoryWheel) else None
            return _verified(
                path,
                source,
                archive.filename.variant_label,
                record,
                opened,
                metadata,
                archive.dist_info,
                variant_metadata,
            )
    except WheelError as exc:
        reason = str(exc).removeprefix(f"{path.name}: ")  # named once
        raise InstallError(f"refusing to install {path.name}: {reason}") from None


def _verify_unpacked(entry: UnpackedWheel) -> VerifiedWheel:
    """A wheel unpacked in the cache: checked when it was unpacked (and its files'
    sizes and times when it was found); its metadata read from its files."""
    from wheelwise.variants.errors import VariantError
    from wheelwise.variants.filenames import WheelFilename

    variant_name = f"{entry.dist_info}/variant.json"
    try:
        label = WheelFilename.parse(entry.filename).variant_label
        metadata = entry.read(f"{entry.dist_info}/METADATA")
        variant_metadata = None
        if any(f.path == variant_name for f in entry.files):
            # Loaded only for a variant wheel: most installs have none.
            from wheelwise.variants.metadata import VariantMetadata

            variant_metadata = VariantMetadata.from_json(
                entry.read(variant_name), source=f"{entry.filename}!{variant_name}"
            )
        return _verified(
            entry.path, entry, label, {}, None, metadata, entry.dist_info, variant_metadata
        )
    except (OSError, WheelError, VariantError, ValueError) as exc:
        raise InstallError(
            f"the cached copy of {entry.filename} in {entry.folder} cannot be read ({exc}); "
            f"run `wheelwise cache clean {entry.filename.split('-')[0]}` and try again"
        ) from None


def _verified(
    path: Path,
    source: Path | InMemoryWheel | UnpackedWheel,
    label: str | None,
    record: dict[str, RecordEntry],
    opened: zipfile.ZipFile | None,
    metadata: bytes,
    dist_info: str,
    variant_metadata: VariantMetadata | None,
) -> VerifiedWheel:
    """The VerifiedWheel of a wheel whose parts were read: its METADATA must name it
    (raises WheelError for METADATA that does not parse, InstallError without a name
    or version); a single variant in its ``variant.json`` gives an unlabelled wheel
    its label."""
    fields = read_core_metadata(metadata, body=False)
    name, version = fields.name, fields.version
    if not name or not version:
        raise InstallError(f"{path.name}: METADATA lacks Name or Version")
    _refuse_other_name(path.name, name, version)
    if label is None and variant_metadata is not None and len(variant_metadata.variants) == 1:
        label = next(iter(variant_metadata.variants))
    return VerifiedWheel(
        path,
        source,
        canonicalize_name(str(name)),
        str(version),
        label,
        record,
        opened,
        metadata,
        tuple(fields.requires_dist),
        dist_info,
        variant_metadata,
    )


def _refuse_other_name(filename: str, name: str, version: str) -> None:
    """The file name and METADATA name the same project and version, as pip and uv
    require (and ``wheelwise index`` before publishing): a wheel that says it is
    another would be installed under one name and listed, then uninstalled, under
    the other."""
    from wheelwise.variants.errors import InvalidWheelFilename
    from wheelwise.variants.filenames import WheelFilename

    try:
        parsed = WheelFilename.parse(filename)
        same = parsed.name == canonicalize_name(name) and parsed.version == Version(version)
    except (InvalidWheelFilename, InvalidVersion):
        same = False
    if not same:
        raise InstallError(
            f"refusing to install {filename}: its METADATA says Name: {name}, Version: "
            f"{version}, which is not the project and version its file name gives"
        )
