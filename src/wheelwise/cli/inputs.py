"""Read the files named on the command line and hand their bytes to the library."""

from __future__ import annotations

from pathlib import Path

from wheelwise.cli.errors import InputError
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.supported import SupportedProperties


def read_bytes(path: Path, what: str) -> bytes:
    if not path.exists():
        raise InputError(f"{path}: {what} not found")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a {what}")
    return path.read_bytes()


def load_metadata(path: Path) -> VariantMetadata:
    return VariantMetadata.from_json(read_bytes(path, "variant metadata file"), source=str(path))


def load_system(path: Path | None) -> SupportedProperties:
    """The machine's supported properties; none yet without ``--system``."""
    if path is None:
        return SupportedProperties()
    return SupportedProperties.from_json(read_bytes(path, "system file"), source=str(path))
