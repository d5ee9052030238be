"""The PEP 825 spec core: pure functions over variant data, no I/O, no providers.

Names are imported on first use, so that ``import wheelwise.variants.supported``
(on the ``wheelwise detect`` path) does not pay for packaging's marker and tag
machinery.
"""

from __future__ import annotations

import importlib

# Not `from typing import TYPE_CHECKING`: importing typing costs the detect path.
TYPE_CHECKING = False

_EXPORTS = {
    "InvalidLabel": "errors",
    "InvalidMetadata": "errors",
    "InvalidProperty": "errors",
    "InvalidSystem": "errors",
    "InvalidWheelFilename": "errors",
    "MetadataConflict": "errors",
    "UnsupportedSchema": "errors",
    "VariantError": "errors",
    "WheelFilename": "filenames",
    "variants_json_filename": "filenames",
    "NULL_LABEL": "labels",
    "hash_label": "labels",
    "validate_label": "labels",
    "merge": "merging",
    "ProviderInfo": "metadata",
    "VariantMetadata": "metadata",
    "RankedVariant": "ordering",
    "Ranking": "ordering",
    "order_wheels": "ordering",
    "rank_variants": "ordering",
    "VariantFeature": "properties",
    "VariantProperty": "properties",
    "PEP825_SCHEMA_URL": "schema",
    "SchemaVersion": "schema",
    "SupportedProperties": "supported",
}

__all__ = [
    "NULL_LABEL",
    "PEP825_SCHEMA_URL",
    "InvalidLabel",
    "InvalidMetadata",
    "InvalidProperty",
    "InvalidSystem",
    "InvalidWheelFilename",
    "MetadataConflict",
    "ProviderInfo",
    "RankedVariant",
    "Ranking",
    "SchemaVersion",
    "SupportedProperties",
    "UnsupportedSchema",
    "VariantError",
    "VariantFeature",
    "VariantMetadata",
    "VariantProperty",
    "WheelFilename",
    "hash_label",
    "merge",
    "order_wheels",
    "rank_variants",
    "validate_label",
    "variants_json_filename",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


if TYPE_CHECKING:
    from wheelwise.variants.errors import (
        InvalidLabel,
        InvalidMetadata,
        InvalidProperty,
        InvalidSystem,
        InvalidWheelFilename,
        MetadataConflict,
        UnsupportedSchema,
        VariantError,
    )
    from wheelwise.variants.filenames import WheelFilename, variants_json_filename
    from wheelwise.variants.labels import NULL_LABEL, hash_label, validate_label
    from wheelwise.variants.merging import merge
    from wheelwise.variants.metadata import ProviderInfo, VariantMetadata
    from wheelwise.variants.ordering import RankedVariant, Ranking, order_wheels, rank_variants
    from wheelwise.variants.properties import VariantFeature, VariantProperty
    from wheelwise.variants.schema import PEP825_SCHEMA_URL, SchemaVersion
    from wheelwise.variants.supported import SupportedProperties
