"""The ``[variant]`` table of ``pyproject.toml`` (PEP 817), read for later builds."""

from __future__ import annotations

from wheelwise.untrusted_json import UntrustedDocumentError, loads_toml
from wheelwise.variants.errors import InvalidMetadata
from wheelwise.variants.metadata import VariantMetadata


def read_pyproject_variant(text: str, *, source: str = "pyproject.toml") -> VariantMetadata:
    """Parse pyproject.toml text and return its ``[variant]`` data (no variants yet)."""
    try:
        data = loads_toml(text)
    except UntrustedDocumentError as exc:
        raise InvalidMetadata(f"{source}: {exc}") from None
    return VariantMetadata.from_pyproject(data, source=source)
