"""Read a wheel's variant label and ``*.dist-info/variant.json``.

Only the zip central directory and the one ``variant.json`` member are read,
never the rest of the archive.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wheelwise.variants.errors import VariantError
from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.errors import WheelError

VARIANT_JSON = "variant.json"
# Real variant.json files are a few KiB; anything this large is hostile or broken.
MAX_VARIANT_JSON_BYTES = 1 << 20


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
    """Parse the filename and, for a variant wheel, its variant.json (any other is
    opened too: a file that is no wheel is a WheelError)."""
    path = Path(path)
    try:
        filename = WheelFilename.parse(path.name)
    except VariantError as exc:
        raise WheelError(str(exc)) from None
    if not path.is_file():
        what = "not a regular file (expected a file)" if path.exists() else "no such file"
        raise WheelError(f"{path}: {what}")
    if filename.variant_label is None:
        with WheelArchive(path):  # a wheel at all: no zip, or no .dist-info, says so
            pass
        return WheelVariant(filename, None)
    with WheelArchive(path) as archive:
        name = archive.dist_info_path(VARIANT_JSON)
        if name not in archive:
            raise WheelError(
                f"{path}: variant wheel (label {filename.variant_label!r}) has no "
                "*.dist-info/variant.json; rebuild it with a variant-aware tool"
            )
        data = archive.read(name, limit=MAX_VARIANT_JSON_BYTES)
    source = f"{path.name}!{name}"
    try:
        metadata = VariantMetadata.from_json(data, source=source)
    except VariantError as exc:
        raise WheelError(str(exc)) from None
    if list(metadata.variants) != [filename.variant_label]:
        raise WheelError(
            f"{source}: 'variants' must hold exactly the filename's label "
            f"{filename.variant_label!r}, found {sorted(metadata.variants)}"
        )
    return WheelVariant(filename, metadata)
