"""Read a wheel's variant label and ``*.dist-info/variant.json``.

Only the zip central directory and the one ``variant.json`` member are read,
never the rest of the archive.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from wheelwise.variants.errors import VariantError
from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.errors import WheelError

VARIANT_JSON = "variant.json"
# Real variant.json files are a few KiB; anything this large is hostile or broken.
MAX_VARIANT_JSON_BYTES = 1 << 20
_DIST_INFO_MEMBER_RE = re.compile(r"[^/]+\.dist-info/variant\.json")


@dataclass(frozen=True)
class WheelVariant:
    """What a wheel says about its variant."""

    filename: WheelFilename
    # None for a non-variant wheel.
    metadata: VariantMetadata | None

    @property
    def label(self) -> str | None:
        return self.filename.variant_label

    @property
    def properties(self) -> tuple[VariantProperty, ...]:
        if self.metadata is None or self.label is None:
            return ()
        return self.metadata.properties(self.label)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return self.metadata.namespaces if self.metadata is not None else ()


def read_wheel_variant(path: str | Path) -> WheelVariant:
    """Parse the filename and, for a variant wheel, its variant.json."""
    path = Path(path)
    try:
        filename = WheelFilename.parse(path.name)
    except VariantError as exc:
        raise WheelError(str(exc)) from None
    if not path.is_file():
        raise WheelError(f"{path}: no such file")
    if filename.variant_label is None:
        return WheelVariant(filename, None)
    return WheelVariant(filename, _read_variant_json(path, filename))


def _read_variant_json(path: Path, filename: WheelFilename) -> VariantMetadata:
    try:
        with zipfile.ZipFile(path) as archive:
            members = [
                info for info in archive.infolist() if _DIST_INFO_MEMBER_RE.fullmatch(info.filename)
            ]
            if not members:
                raise WheelError(
                    f"{path}: variant wheel (label {filename.variant_label!r}) has no "
                    "*.dist-info/variant.json; rebuild it with a variant-aware tool"
                )
            if len(members) > 1:
                names = ", ".join(info.filename for info in members)
                raise WheelError(f"{path}: more than one variant.json ({names})")
            info = members[0]
            if info.file_size > MAX_VARIANT_JSON_BYTES:
                raise WheelError(
                    f"{path}: {info.filename} declares {info.file_size} bytes "
                    f"(limit {MAX_VARIANT_JSON_BYTES}); refusing to read it"
                )
            with archive.open(info) as member:
                data = member.read(MAX_VARIANT_JSON_BYTES + 1)
    except zipfile.BadZipFile as exc:
        raise WheelError(f"{path}: not a valid wheel (zip) archive: {exc}") from None
    except (OSError, EOFError, zipfile.LargeZipFile) as exc:
        raise WheelError(f"{path}: cannot read archive: {exc}") from None
    if len(data) > MAX_VARIANT_JSON_BYTES:
        raise WheelError(f"{path}: {info.filename} is larger than declared; refusing it")
    source = f"{path.name}!{info.filename}"
    try:
        metadata = VariantMetadata.from_json(data, source=source)
    except VariantError as exc:
        raise WheelError(str(exc)) from None
    if list(metadata.variants) != [filename.variant_label]:
        raise WheelError(
            f"{source}: 'variants' must hold exactly the filename's label "
            f"{filename.variant_label!r}, found {sorted(metadata.variants)}"
        )
    return metadata
