"""The ``[variant]`` table of ``pyproject.toml`` (PEP 817), read for later builds."""

from __future__ import annotations

import sys

from wheelwise.variants.errors import InvalidMetadata
from wheelwise.variants.metadata import VariantMetadata

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def read_pyproject_variant(text: str, *, source: str = "pyproject.toml") -> VariantMetadata:
    """Parse pyproject.toml text and return its ``[variant]`` data (no variants yet)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidMetadata(f"{source}: invalid TOML: {exc}") from None
    return VariantMetadata.from_pyproject(data, source=source)
