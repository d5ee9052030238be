"""The reference implementation, variantlib 0.2.2, as the differential tests ask it."""

from __future__ import annotations

from collections.abc import Iterable

from variantlib.models.variant import VariantDescription
from variantlib.models.variant import VariantProperty as VLProperty

from wheelwise.variants.properties import VariantProperty


def variantlib_label(properties: Iterable[VariantProperty]) -> str:
    """variantlib's label for a variant with *properties* (its hash label)."""
    description = VariantDescription(
        properties=[
            VLProperty(namespace=p.namespace, feature=p.feature, value=p.value) for p in properties
        ]
    )
    label = description.label
    assert isinstance(label, str)
    return label
