"""The reserved ``abi_dependency`` namespace (PEP 817, optional extension).

A property ``abi_dependency :: torch :: 2.9`` says the wheel was built against
``torch==2.9.*``. The feature is the dependency's normalized name with ``_`` for
``-`` (the feature-name grammar has no ``-``); the value is a release segment of
one to three numbers, matched like the ``=={value}.*`` specifier, so ``2``,
``2.0`` and ``2.0.0`` are three different ranges and ``2.0`` matches ``2``. A
value outside that form matches nothing: its variant is never compatible.

Several values of one feature are alternatives (the wheel works with any of
them). The PEP does not order matching values; here the most specific value goes
first, since a build against 2.9.1 fits a 2.9.1 environment more closely than one
for any 2.x.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from packaging.specifiers import Specifier
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty

__all__ = [
    "NAMESPACE",
    "feature_name",
    "is_valid_value",
    "matches",
    "package_name",
    "preferred_values",
    "requirement",
    "specifier",
    "supported_features",
    "used_features",
]

NAMESPACE = "abi_dependency"

# "a valid release segment of a public version identifier ... up to three components"
_RELEASE = re.compile(r"[0-9]+(?:\.[0-9]+){0,2}")


def feature_name(package: str) -> str:
    """The feature name of *package*: its normalized name with ``_`` for ``-``."""
    return canonicalize_name(package).replace("-", "_")


def package_name(feature: str) -> NormalizedName:
    """The normalized package name a feature stands for (``_`` and ``-`` are alike)."""
    return canonicalize_name(feature)


def is_valid_value(value: str) -> bool:
    """Whether *value* is a release segment of one to three numbers."""
    return _RELEASE.fullmatch(value) is not None


def specifier(value: str) -> Specifier:
    """The specifier a valid *value* stands for: ``2.9`` -> ``==2.9.*``."""
    if not is_valid_value(value):
        raise ValueError(
            f"invalid {NAMESPACE} value {value!r}: use a release segment of one to three "
            "numbers, such as 2, 2.9 or 2.9.1"
        )
    return Specifier(f"=={value}.*")


def matches(value: str, version: Version) -> bool:
    """Whether *version* (an installed or pinned one) falls in *value*'s range.

    Pre-releases count (an installed 2.9.0rc1 is what it is); a non-zero epoch
    never matches, as the ``==`` specifier already has it.
    """
    return is_valid_value(value) and specifier(value).contains(version, prereleases=True)


def requirement(prop: VariantProperty) -> str:
    """The dependency a property implies: ``abi_dependency :: torch :: 2.9`` ->
    ``torch==2.9.*``."""
    return f"{package_name(prop.feature)}{specifier(prop.value)}"


def _specificity(value: str) -> tuple[int, Version]:
    return (value.count("."), Version(value))


def preferred_values(values: Iterable[str], preferred: Version | None = None) -> tuple[str, ...]:
    """The valid *values* in preference order, for a resolver that may still pick
    the dependency's version.

    Values that match *preferred* (an installed or pinned version) come first, most
    specific first; then the others, newest range first (a build for 2.9 before one
    for 2.8), the more specific first among equal versions. Invalid values are left
    out.
    """
    valid = sorted(
        {v for v in values if is_valid_value(v)},
        key=lambda v: (Version(v), v.count("."), v),
        reverse=True,
    )
    if preferred is None:
        return tuple(valid)
    first = sorted((v for v in valid if matches(v, preferred)), key=_specificity, reverse=True)
    return tuple(first + [v for v in valid if v not in first])


def used_features(metadata: VariantMetadata) -> dict[str, tuple[str, ...]]:
    """Every ``abi_dependency`` feature the labels of *metadata* use, with its values."""
    found: dict[str, set[str]] = {}
    for properties in metadata.variants.values():
        for feature, values in properties.get(NAMESPACE, {}).items():
            found.setdefault(feature, set()).update(values)
    return {feature: tuple(sorted(values)) for feature, values in sorted(found.items())}


def supported_features(
    metadata: VariantMetadata, versions: Mapping[str, Version]
) -> dict[str, tuple[str, ...]]:
    """The supported ``abi_dependency`` properties of *metadata* for fixed *versions*
    (``{package name: version}``): per feature, the listed values the version
    matches, most specific first. A dependency missing from *versions* supports
    nothing."""
    known = {canonicalize_name(name): version for name, version in versions.items()}
    result: dict[str, tuple[str, ...]] = {}
    for feature, values in used_features(metadata).items():
        version = known.get(package_name(feature))
        if version is None:
            continue
        found = sorted((v for v in values if matches(v, version)), key=_specificity, reverse=True)
        if found:
            result[feature] = tuple(found)
    return result
