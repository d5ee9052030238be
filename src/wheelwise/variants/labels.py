"""Variant labels (PEP 825 "Variant label") and the variantlib-compatible hash label."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from wheelwise.variants.errors import InvalidLabel

if TYPE_CHECKING:  # wheel filenames need labels, not properties: installs load fewer modules
    from wheelwise.variants.properties import VariantProperty

NULL_LABEL = "null"
LABEL_RE = re.compile(r"[0-9a-z_.]+")

# {namespace: {feature: (values...)}} -- the shape of one entry of "variants".
PropertyMap = Mapping[str, Mapping[str, Sequence[str]]]


def validate_label(label: str) -> str:
    """Return *label* if it is a valid variant label."""
    if not isinstance(label, str) or not LABEL_RE.fullmatch(label):
        raise InvalidLabel(f"invalid variant label {label!r}: use only a-z, 0-9, '_' and '.'")
    return label


def iter_properties(properties: PropertyMap) -> Iterable[VariantProperty]:
    """Expand a property map into one VariantProperty per listed value."""
    from wheelwise.variants.properties import VariantProperty

    for namespace, features in properties.items():
        for feature, values in features.items():
            for value in values:
                yield VariantProperty(namespace, feature, value)


def property_map(
    properties: Iterable[VariantProperty],
) -> dict[str, dict[str, list[str]]]:
    """Group properties into the canonical map: sorted keys, sorted unique values."""
    grouped: dict[str, dict[str, set[str]]] = {}
    for prop in properties:
        grouped.setdefault(prop.namespace, {}).setdefault(prop.feature, set()).add(prop.value)
    return {
        namespace: {
            feature: sorted(grouped[namespace][feature]) for feature in sorted(grouped[namespace])
        }
        for namespace in sorted(grouped)
    }


def hash_label(properties: Iterable[VariantProperty]) -> str:
    """The 8-hex label variantlib derives from a property set ("null" if empty).

    sha256 over the sorted lines ``"{ns} :: {feature} :: {value}\\n"``.
    """
    ordered = sorted(set(properties))
    if not ordered:
        return NULL_LABEL
    digest = hashlib.sha256()
    for prop in ordered:
        digest.update(f"{prop}\n".encode())
    return digest.hexdigest()[:8]
