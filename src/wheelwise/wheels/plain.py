"""A chosen variant wheel as a plain wheel that installers without variant support take.

Installers that know no variant markers cannot read a ``Requires-Dist`` that uses
them, and do not accept a label in the file name. ``make_plain_wheel`` writes the
wheel under its non-variant name with every variant marker in ``METADATA`` settled
for the variant it is (``plain_metadata``): a dependency whose marker is false for
it is dropped, the others keep only their standard markers. Every other member,
``variant.json`` included, is copied as it is.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.variants.markers import (
    VARIANT_LABEL,
    parse_requirement,
    settle_variant_markers,
    uses_variant_markers,
)
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.core_metadata import read_core_metadata
from wheelwise.wheels.errors import WheelError, describe
from wheelwise.wheels.output import check_not_input
from wheelwise.wheels.rewrite import rewrite_wheel

__all__ = ["PlainWheel", "make_plain_wheel", "plain_metadata"]

VariantEnvironment = Mapping[str, str | frozenset[str]]

_REQUIRES_DIST = b"requires-dist"
# plain_metadata rewrites Requires-Dist lines in place and keeps every other byte as
# it is (the wheel's RECORD hash of METADATA changes for those lines only), so it scans
# the raw lines itself: a parser (core_metadata) gives values, not where they are.
# What the email parser takes for a header line (a field, a folded continuation,
# a Unix "From " line); the first other line ends the headers, as it does there.
_HEADER_LINE = re.compile(rb"From |[\x21-\x39\x3b-\x7e]*:|[\t ]")
_LINE_ENDING = re.compile(rb"\r\n|\r|\n")
_BROKEN = "the wheel's metadata is broken: rebuild the wheel"
_CHUNK = 1 << 20


def _settled_field(
    field: list[bytes], line_number: int, variant_env: VariantEnvironment
) -> bytes | None:
    """The header *field* (its first line and continuation lines) with its variant
    markers settled: None when it stays as it is, b"" when it is dropped."""
    name, _, _ = field[0].partition(b":")
    if name.lower() != _REQUIRES_DIST:
        return None
    raw = b"".join(field)
    ending = _LINE_ENDING.search(field[-1])
    try:
        # Unfolded as RFC 5322 says: the line breaks go, the whitespace after them stays.
        text = _LINE_ENDING.sub(b"", raw).partition(b":")[2].decode("utf-8").strip()
    except UnicodeDecodeError:
        raise WheelError(
            f"METADATA line {line_number}: Requires-Dist {raw!r} is not UTF-8; {_BROKEN}"
        ) from None
    try:
        requirement = parse_requirement(text)
        if requirement.marker is None or not uses_variant_markers(requirement.marker):
            return None
        settled = settle_variant_markers(requirement.marker, variant_env)
    except (ValueError, KeyError) as exc:
        raise WheelError(
            f"METADATA line {line_number}: cannot read Requires-Dist {text!r} "
            f"({describe(exc)}); {_BROKEN}"
        ) from None
    if settled is False:
        return b""
    requirement.marker = None if settled is True else settled
    try:
        written = str(requirement)
        Requirement(written)  # as an installer reads it: with plain packaging
    except ValueError as exc:
        reason = describe(exc)
    else:
        if "\n" not in written and "\r" not in written:
            return name + b": " + written.encode() + (ending.group() if ending else b"")
        reason = "a quoted value holds a line break"
    raise WheelError(
        f"METADATA line {line_number}: Requires-Dist {text!r} cannot be written "
        f"without variant markers ({reason}); {_BROKEN}"
    )


def plain_metadata(metadata: bytes, variant_env: VariantEnvironment) -> bytes:
    """*metadata* (a ``METADATA`` file) with the variant markers of its ``Requires-Dist``
    fields settled for the wheel whose marker values are *variant_env*.

    A field whose marker is false there is dropped; one that holds loses its marker,
    or keeps the standard part of it. Every other byte is kept, and metadata without
    variant markers comes back as it is. Raises WheelError for a ``Requires-Dist``
    that cannot be read.
    """
    lines = metadata.splitlines(keepends=True)
    kept: list[bytes] = []
    changed = False
    index = 0
    while index < len(lines) and _HEADER_LINE.match(lines[index]):
        end = index + 1
        while end < len(lines) and lines[end][:1] in (b" ", b"\t"):
            end += 1
        field = lines[index:end]
        settled = _settled_field(field, index + 1, variant_env)
        if settled is None:
            kept.extend(field)
        else:
            kept.append(settled)
            changed = True
        index = end
    if not changed:
        return metadata
    return b"".join(kept + lines[index:])


@dataclass(frozen=True)
class PlainWheel:
    """A written plain wheel: where it is, its digest and size, and its METADATA."""

    path: Path
    sha256: str
    size: int
    metadata: bytes
    metadata_sha256: str


def _check_name_and_version(archive: WheelArchive, metadata: bytes) -> None:
    """Installers trust the file name: METADATA must say the same."""
    fields = read_core_metadata(metadata, body=False)
    name = fields.first("Name") or ""
    version = fields.first("Version") or ""
    filename = archive.filename
    try:
        agrees = canonicalize_name(name) == filename.name and Version(version) == filename.version
    except InvalidVersion:
        agrees = False
    if not agrees:
        raise WheelError(
            f"{archive.path.name}: METADATA names {name or '(no Name)'} "
            f"{version or '(no Version)'}, the file name {filename.distribution} "
            f"{filename.version_text}; rebuild the wheel or name it after its METADATA"
        )


def _file_digest(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _check_out_dir(source: Path, out_dir: Path) -> None:
    """Beside its variant wheels the output would take the name of the release's own
    non-variant wheel (and replace it, if there is one)."""
    same = out_dir.resolve() == source.resolve().parent
    if not same and out_dir.is_dir():
        same = out_dir.samefile(source.parent)
    if same:
        raise WheelError(
            f"{out_dir}: is the folder of the input wheel {source.name}, where the plain "
            "wheel would take the name of the release's non-variant wheel; choose another "
            "output directory"
        )


def make_plain_wheel(source: Path, out_dir: Path, variant_env: VariantEnvironment) -> PlainWheel:
    """Write the variant wheel *source* into *out_dir* under its non-variant name, with
    its variant markers settled for *variant_env* (its marker values, as
    ``variant_environment`` gives them for the machine).

    Raises WheelError for a broken wheel, one that is not a variant wheel, or one
    whose METADATA disagrees with its file name; then nothing is written.
    """
    source, out_dir = Path(source), Path(out_dir)
    with WheelArchive(source) as archive:
        archive.verify_record()
        label = archive.filename.variant_label
        if label is None:
            raise WheelError(
                f"{source.name} is not a variant wheel (no variant label in its name): "
                "it installs as it is"
            )
        if variant_env.get(VARIANT_LABEL) != label:
            raise ValueError(
                f"{source.name}: the variant markers given are those of label "
                f"{variant_env.get(VARIANT_LABEL)!r}, not {label!r}"
            )
        member = archive.dist_info_path("METADATA")
        original = archive.metadata()
        _check_name_and_version(archive, original)
        try:
            metadata = plain_metadata(original, variant_env)
        except WheelError as exc:
            raise WheelError(f"{source.name}: {exc}") from None
        _check_out_dir(source, out_dir)
        target = out_dir / str(archive.filename.without_variant())
        check_not_input(source, target)
        rewrite_wheel(archive, target, replace={member: metadata}, verified=True)
    sha256, size = _file_digest(target)
    return PlainWheel(
        path=target,
        sha256=sha256,
        size=size,
        metadata=metadata,
        metadata_sha256=hashlib.sha256(metadata).hexdigest(),
    )
