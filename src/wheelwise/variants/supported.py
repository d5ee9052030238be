"""What a machine supports: per namespace, ordered features with ordered values.

This is the value providers produce and ordering consumes, and the ``system``
object of ``wheelwise detect --json`` / ``--system FILE``::

    {"system": {"nvidia": {"sm_arch": ["90_real", "80_real"]}}}

Dict order carries preference: features and values are listed best first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from wheelwise.record import Record
from wheelwise.untrusted_json import UntrustedDocumentError, loads_json
from wheelwise.variants.errors import InvalidSystem, VariantError
from wheelwise.variants.grammar import validate_name, validate_value

# Not `from typing import TYPE_CHECKING`: importing typing costs the detect path.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from wheelwise.variants.properties import VariantProperty


class SupportedProperties(Record):
    """Supported properties in preference order: ``{ns: {feature: (values...)}}``.

    A Record rather than a dataclass: it is on the ``wheelwise detect`` path.
    """

    __slots__ = ("namespaces",)
    namespaces: Mapping[str, Mapping[str, tuple[str, ...]]]

    def __init__(
        self, namespaces: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None
    ) -> None:
        self._set(namespaces=namespaces if namespaces is not None else {})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SupportedProperties):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(repr(self.to_dict()))

    @classmethod
    def from_dict(cls, raw: object, *, source: str = "<system>") -> SupportedProperties:
        """Load ``{"system": {...}}`` (a detect document) or the bare inner object."""
        if isinstance(raw, dict) and "system" in raw:
            raw = raw["system"]
        if not isinstance(raw, dict):
            raise InvalidSystem(
                f"{source}: expected an object {{NAMESPACE: {{FEATURE: [VALUES]}}}}, "
                f"got {type(raw).__name__}"
            )
        result: dict[str, dict[str, tuple[str, ...]]] = {}
        for ns, features in raw.items():
            where = f"{source}: system.{ns}"
            try:
                validate_name(ns, "namespace")
                if not isinstance(features, dict):
                    raise InvalidSystem(
                        f"expected an object of features, got {type(features).__name__}"
                    )
                result[ns] = {}
                for feature, values in features.items():
                    validate_name(feature, "feature name")
                    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                        raise InvalidSystem(f"{feature}: expected a list of value strings")
                    for value in values:
                        validate_value(value)
                    result[ns][feature] = tuple(dict.fromkeys(values))
            except VariantError as exc:
                raise InvalidSystem(f"{where}: {exc}") from None
        return cls(result)

    @classmethod
    def from_json(cls, text: bytes | str, *, source: str = "<system>") -> SupportedProperties:
        try:
            raw = loads_json(text)
        except UntrustedDocumentError as exc:
            raise InvalidSystem(f"{source}: invalid JSON: {exc}") from None
        return cls.from_dict(raw, source=source)

    def to_dict(self) -> dict[str, dict[str, list[str]]]:
        return {ns: {f: list(v) for f, v in feats.items()} for ns, feats in self.namespaces.items()}

    def values(self, namespace: str, feature: str) -> tuple[str, ...]:
        return tuple(self.namespaces.get(namespace, {}).get(feature, ()))

    def __contains__(self, prop: object) -> bool:
        from wheelwise.variants.properties import VariantProperty

        return isinstance(prop, VariantProperty) and prop.value in self.values(
            prop.namespace, prop.feature
        )

    def __iter__(self) -> Iterator[VariantProperty]:
        """Every supported property, namespace by namespace, best first."""
        from wheelwise.variants.properties import VariantProperty

        for ns, features in self.namespaces.items():
            for feature, values in features.items():
                for value in values:
                    yield VariantProperty(ns, feature, value)

    def replacing(
        self, overrides: Mapping[str, Mapping[str, tuple[str, ...]]]
    ) -> SupportedProperties:
        """A copy where the given namespaces are replaced wholesale."""
        merged: dict[str, Mapping[str, tuple[str, ...]]] = dict(self.namespaces)
        merged.update(overrides)
        return SupportedProperties(merged)
