"""Check variant properties against the built-in providers' vocabulary.

A property of a namespace that a built-in provider serves (``nvidia``, ``amd``,
``intel``, ``x86_64``, ``aarch64``) must name a feature and value that provider knows, and a
feature that is not multi-value may carry only one value. Namespaces without a
built-in provider (third-party plugins) are accepted as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache

from wheelwise.providers.base import FeatureConfig
from wheelwise.providers.detect import BUILTIN_PROVIDERS, builtin_provider
from wheelwise.variants.errors import InvalidProperty
from wheelwise.variants.properties import VariantProperty

# How many known names or values an error message lists before "...".
_SHOWN = 12
_HINT = "(skip this check with validate=False / --no-validate)"


@cache
def builtin_features(namespace: str) -> Mapping[str, FeatureConfig] | None:
    """The features the built-in provider of *namespace* knows, or None if none serves it."""
    if namespace not in BUILTIN_PROVIDERS:
        return None
    return {config.name: config for config in builtin_provider(namespace).get_all_configs()}


def _listing(items: Iterable[str]) -> str:
    items = list(items)
    shown = ", ".join(items[:_SHOWN])
    return f"{shown}, ... ({len(items)} in all)" if len(items) > _SHOWN else shown


def validate_properties(properties: Iterable[VariantProperty]) -> None:
    """Raise InvalidProperty for the first property the built-in providers reject."""
    values: dict[tuple[str, str], list[str]] = {}
    for prop in sorted(set(properties)):
        features = builtin_features(prop.namespace)
        if features is None:
            continue
        config = features.get(prop.feature)
        if config is None:
            raise InvalidProperty(
                f"unknown feature in {str(prop)!r}: the built-in {prop.namespace!r} provider "
                f"has no feature {prop.feature!r}; known features: "
                f"{_listing(features)} {_HINT}"
            )
        if prop.value not in config.values:
            raise InvalidProperty(
                f"unknown value in {str(prop)!r}: the built-in {prop.namespace!r} provider "
                f"does not know {prop.value!r} for {prop.variant_feature}; known values: "
                f"{_listing(config.values)} {_HINT}"
            )
        values.setdefault((prop.namespace, prop.feature), []).append(prop.value)
    for (namespace, feature), listed in values.items():
        features = builtin_features(namespace)
        assert features is not None
        if len(listed) > 1 and not features[feature].multi_value:
            raise InvalidProperty(
                f"{namespace} :: {feature} takes a single value, got {len(listed)}: "
                f"{', '.join(listed)} (the built-in {namespace!r} provider's feature is "
                f"not multi-value) {_HINT}"
            )
