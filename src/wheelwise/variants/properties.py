"""Variant properties: ``namespace :: feature :: value`` (PEP 825 "Variant properties")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from wheelwise.variants.errors import InvalidProperty
from wheelwise.variants.grammar import NAME_RE, VALUE_RE, validate_name, validate_value

__all__ = [
    "NAME_RE",
    "VALUE_RE",
    "VariantFeature",
    "VariantProperty",
    "normalize_property_text",
    "validate_name",
    "validate_value",
]

# Whitespace around "::" is insignificant (PEP 825, "Environment markers").
_SEPARATOR_RE = re.compile(r"\s*::\s*")


def _split(text: str, parts: int, what: str) -> list[str]:
    if not isinstance(text, str):
        raise InvalidProperty(f"invalid variant {what} {text!r}: expected a string")
    pieces = _SEPARATOR_RE.split(text.strip())
    if len(pieces) != parts:
        shape = " :: ".join(["namespace", "feature", "value"][:parts])
        raise InvalidProperty(f"invalid variant {what} {text!r}: expected '{shape}'")
    return pieces


@dataclass(frozen=True, order=True)
class VariantFeature:
    """A ``namespace :: feature`` pair."""

    namespace: str
    feature: str

    def __post_init__(self) -> None:
        validate_name(self.namespace, "namespace")
        validate_name(self.feature, "feature name")

    @classmethod
    def parse(cls, text: str) -> VariantFeature:
        namespace, feature = _split(text, 2, "feature")
        try:
            return cls(namespace, feature)
        except InvalidProperty as exc:
            raise InvalidProperty(f"in {text!r}: {exc}") from None

    def __str__(self) -> str:
        return f"{self.namespace} :: {self.feature}"


@dataclass(frozen=True, order=True)
class VariantProperty:
    """A ``namespace :: feature :: value`` triple."""

    namespace: str
    feature: str
    value: str

    def __post_init__(self) -> None:
        validate_name(self.namespace, "namespace")
        validate_name(self.feature, "feature name")
        validate_value(self.value)

    @classmethod
    def parse(cls, text: str) -> VariantProperty:
        namespace, feature, value = _split(text, 3, "property")
        try:
            return cls(namespace, feature, value)
        except InvalidProperty as exc:
            raise InvalidProperty(f"in {text!r}: {exc}") from None

    @property
    def variant_feature(self) -> VariantFeature:
        return VariantFeature(self.namespace, self.feature)

    def __str__(self) -> str:
        return f"{self.namespace} :: {self.feature} :: {self.value}"


def normalize_property_text(text: str) -> str:
    """Canonical spelling of a property or feature string (marker matching)."""
    return " :: ".join(_SEPARATOR_RE.split(text.strip()))
