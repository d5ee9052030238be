"""Errors raised by the spec core. Every message names the offending text."""

from __future__ import annotations

from wheelwise.errors import WheelwiseError


class VariantError(ValueError, WheelwiseError):
    """Base class for invalid variant data (properties, labels, metadata)."""


class InvalidProperty(VariantError):
    """A property, feature or namespace string does not follow PEP 825."""


class InvalidLabel(VariantError):
    """A variant label does not follow PEP 825."""


class InvalidWheelFilename(VariantError):
    """A wheel filename does not follow the PEP 825 grammar."""


class InvalidMetadata(VariantError):
    """variant.json / *-variants.json content is malformed."""


class UnsupportedSchema(InvalidMetadata):
    """The metadata declares a schema version this release cannot read."""


class MetadataConflict(VariantError):
    """Two metadata documents disagree in a way PEP 825 forbids."""


class InvalidSystem(VariantError):
    """A supported-properties (system) document is malformed."""
