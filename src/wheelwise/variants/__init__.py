"""The PEP 825 spec core: pure functions over variant data, no I/O, no providers."""

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
from wheelwise.variants.merge import merge
from wheelwise.variants.metadata import ProviderInfo, VariantMetadata
from wheelwise.variants.ordering import (
    RankedVariant,
    Ranking,
    order_wheels,
    rank_variants,
)
from wheelwise.variants.properties import VariantFeature, VariantProperty
from wheelwise.variants.schema import PEP825_SCHEMA_URL, SchemaVersion
from wheelwise.variants.supported import SupportedProperties

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
