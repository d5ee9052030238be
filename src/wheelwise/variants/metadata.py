"""Variant metadata: ``*.dist-info/variant.json`` and ``{name}-{version}-variants.json``.

Reads PEP 825 0.x and the legacy drafts (PEP 817, variantlib 0.2); always writes
canonical PEP 825 0.1.1. Legacy-only data (providers, static properties, feature
and property priorities) is kept on the object so that ordering and the provider
layer can use it, but it is not part of the PEP 825 output.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from wheelwise.untrusted_json import UntrustedDocumentError, loads_json
from wheelwise.variants.errors import InvalidMetadata, VariantError
from wheelwise.variants.labels import (
    NULL_LABEL,
    PropertyMap,
    iter_properties,
    validate_label,
)
from wheelwise.variants.properties import (
    VariantProperty,
    validate_name,
    validate_value,
)
from wheelwise.variants.schema import (
    CANONICAL_SCHEMA,
    PEP825_SCHEMA_URL,
    UNVERSIONED_SCHEMA,
    SchemaVersion,
)

# {label: {namespace: {feature: (sorted values)}}}
Variants = dict[str, dict[str, dict[str, tuple[str, ...]]]]
# {namespace: {feature: (values in preference order)}}
OrderedProperties = dict[str, dict[str, tuple[str, ...]]]

_PEP825_TOP_KEYS = frozenset({"$schema", "default-priorities", "variants"})
# The null variant's label before PEP 825 reserved "null" (a hash of nothing).
LEGACY_NULL_LABEL = "00000000"


# The v0.0.2 draft's plugin-use values whose plugin is never run when installing.
_AHEAD_OF_TIME_PLUGIN_USE = ("none", "build")


@dataclass(frozen=True)
class ProviderInfo:
    """Legacy provider data for one namespace (PEP 817 drafts, variantlib 0.2)."""

    requires: tuple[str, ...] = ()
    plugin_api: str | None = None
    enable_if: str | None = None
    optional: bool = False
    install_time: bool = True
    plugin_use: str | None = None
    build_requires: tuple[str, ...] = ()
    builtin: str | None = None
    # variantlib 0.2 keeps static properties per provider: {feature: values}.
    static_properties: dict[str, tuple[str, ...]] = field(default_factory=dict)
    feature_order: tuple[str, ...] = ()
    # Keys this release does not know, kept verbatim (PEP 817: ignore, do not lose).
    unknown: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_static(self) -> bool:
        """An ahead-of-time provider: its supported properties ship in the metadata.

        Each era spells it its own way: ``install-time: false`` (PEP 817),
        ``plugin-use: none`` or ``plugin-use: build`` (the v0.0.2 draft: "plugin used
        only when building package", what PEP 817 writes ``install-time = false``) or
        static properties in the block (variantlib 0.2, PEP 850)."""
        ahead = self.plugin_use in _AHEAD_OF_TIME_PLUGIN_USE
        return not self.install_time or ahead or bool(self.static_properties)

    def to_dict(self) -> dict[str, Any]:
        """The provider block in its original (legacy) spelling."""
        out: dict[str, Any] = dict(self.unknown)
        if self.requires:
            out["requires"] = list(self.requires)
        if self.plugin_api is not None:
            out["plugin-api"] = self.plugin_api
        if self.enable_if is not None:
            out["enable-if"] = self.enable_if
        if self.optional:
            out["optional"] = True
        if not self.install_time:
            out["install-time"] = False
        if self.plugin_use is not None:
            out["plugin-use"] = self.plugin_use
        if self.build_requires:
            out["build-requires"] = list(self.build_requires)
        if self.builtin is not None:
            out["builtin"] = self.builtin
        if self.static_properties:
            out["static-properties"] = {
                feature: list(values) for feature, values in self.static_properties.items()
            }
        if self.feature_order:
            out["feature-order"] = list(self.feature_order)
        return out


@dataclass(frozen=True)
class FeatureGroups:
    """Interned view of a variants table, for ordering.

    Labels that list the same feature with the same values share one group, so a
    machine is checked once per distinct group rather than once per label.
    """

    # Distinct (namespace, feature, values) triples.
    groups: tuple[tuple[str, str, tuple[str, ...]], ...]
    # (label, indices of its groups), in the order of the variants table.
    labels: tuple[tuple[str, tuple[int, ...]], ...]
    # Per group, the indices (into ``labels``) of the labels that list it.
    members: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, variants: Mapping[str, PropertyMap]) -> FeatureGroups:
        index: dict[tuple[str, str, tuple[str, ...]], int] = {}
        members: list[list[int]] = []
        labels: list[tuple[str, tuple[int, ...]]] = []
        for label_index, (label, properties) in enumerate(variants.items()):
            ids: list[int] = []
            for ns, features in properties.items():
                for feature, values in features.items():
                    key = (ns, feature, tuple(values))
                    found = index.get(key)
                    if found is None:
                        found = index[key] = len(index)
                        members.append([])
                    members[found].append(label_index)
                    ids.append(found)
            labels.append((label, tuple(ids)))
        return cls(tuple(index), tuple(labels), tuple(tuple(m) for m in members))


@dataclass(frozen=True)
class VariantMetadata:
    """One variant.json or *-variants.json document."""

    namespaces: tuple[str, ...]
    variants: Variants
    schema: SchemaVersion = CANONICAL_SCHEMA
    providers: dict[str, ProviderInfo] = field(default_factory=dict)
    # PEP 817 top-level "static-properties" (values in preference order).
    static_properties: OrderedProperties = field(default_factory=dict)
    # PEP 817 "default-priorities.feature" / ".property".
    feature_priorities: dict[str, tuple[str, ...]] = field(default_factory=dict)
    property_priorities: OrderedProperties = field(default_factory=dict)
    # Where this document came from, for error messages; not part of equality.
    source: str = field(default="<metadata>", compare=False)
    # A legacy draft's document as read: its providers, static properties and
    # priorities have no place in PEP 825's format, so a lock inlines it as published.
    published: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    # The variants table as distinct (namespace, feature, values) groups, built once
    # with the object: ordering scores each group once, not once per label.
    feature_groups: FeatureGroups = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "feature_groups", FeatureGroups.of(self.variants))

    # -- construction ---------------------------------------------------------

    @classmethod
    def build(
        cls,
        namespaces: Iterable[str],
        variants: Mapping[str, PropertyMap],
        *,
        source: str = "<metadata>",
    ) -> VariantMetadata:
        """Canonical PEP 825 metadata from plain Python data (validated)."""
        return cls.from_dict(
            {
                "$schema": PEP825_SCHEMA_URL,
                "default-priorities": {"namespace": list(namespaces)},
                "variants": {
                    label: {
                        ns: {f: list(v) for f, v in feats.items()} for ns, feats in props.items()
                    }
                    for label, props in variants.items()
                },
            },
            source=source,
        )

    @classmethod
    def from_json(cls, data: bytes | str, *, source: str = "<metadata>") -> VariantMetadata:
        """Parse JSON text or UTF-8 bytes."""
        try:
            obj = loads_json(data)
        except UntrustedDocumentError as exc:
            reason = str(exc)
            hint = ": variant metadata must be UTF-8 encoded JSON" if "UTF-8" in reason else ""
            raise InvalidMetadata(f"{source}: {reason}{hint}") from None
        return cls.from_dict(obj, source=source)

    @classmethod
    def from_dict(cls, obj: object, *, source: str = "<metadata>") -> VariantMetadata:
        """Validate and load a decoded JSON document (any supported schema)."""
        return _Reader(source).read(obj)

    @classmethod
    def from_pyproject(
        cls, pyproject: Mapping[str, Any], *, source: str = "pyproject.toml"
    ) -> VariantMetadata:
        """Project-level variant data from a parsed pyproject.toml (PEP 817 ``[variant]``)."""
        if "variant" not in pyproject:
            raise InvalidMetadata(f"{source}: no [variant] table")
        return _Reader(source, table="variant.").read_pyproject(pyproject["variant"])

    # -- queries ---------------------------------------------------------------

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.variants)

    def properties(self, label: str) -> tuple[VariantProperty, ...]:
        """All properties of *label*, sorted (KeyError if the label is unknown)."""
        return tuple(sorted(iter_properties(self.variants[label])))

    @property
    def is_legacy(self) -> bool:
        return self.schema.legacy

    def is_null(self, label: str) -> bool:
        """The null variant: ``null``, or a legacy ``00000000`` with no properties."""
        if label == NULL_LABEL:
            return True
        return (
            label == LEGACY_NULL_LABEL
            and self.schema.legacy
            and not any(self.variants.get(label, {}).values())
        )

    def static_supported(self) -> OrderedProperties:
        """Ahead-of-time namespaces: their supported properties, in preference order.

        Values: the static properties (top level, PEP 817; per provider, variantlib
        0.2); for an ahead-of-time provider without any (the v0.0.2 draft's
        ``plugin-use: none`` or ``build``), the values ``default-priorities.property`` lists, else
        every value the variants table uses for it. Feature order:
        ``default-priorities.feature`` (PEP 817), then ``feature-order``, then
        document order.
        """
        merged: dict[str, dict[str, tuple[str, ...]]] = {
            ns: dict(features) for ns, features in self.static_properties.items()
        }
        for ns, provider in self.providers.items():
            if provider.static_properties:
                merged.setdefault(ns, {}).update(provider.static_properties)
            elif provider.is_static and ns not in merged:
                merged[ns] = dict(self.property_priorities.get(ns, {})) or self._used_values(ns)
        result: OrderedProperties = {}
        for ns, features in merged.items():
            order = list(self.feature_order(ns))
            order += [f for f in features if f not in order]
            result[ns] = {f: features[f] for f in order if f in features}
        return result

    def feature_order(self, ns: str) -> tuple[str, ...]:
        """The features of *ns* the metadata ranks first, in order:
        ``default-priorities.feature`` (PEP 817), then the provider's
        ``feature-order`` (variantlib 0.2, PEP 850)."""
        order = list(self.feature_priorities.get(ns, ()))
        if ns in self.providers:
            order += [f for f in self.providers[ns].feature_order if f not in order]
        return tuple(order)

    def _used_values(self, ns: str) -> dict[str, tuple[str, ...]]:
        used: dict[str, set[str]] = {}
        for properties in self.variants.values():
            for feature, values in properties.get(ns, {}).items():
                used.setdefault(feature, set()).update(values)
        return {feature: tuple(sorted(values)) for feature, values in used.items()}

    def with_variants(self, variants: Mapping[str, PropertyMap]) -> VariantMetadata:
        """A copy with another ``variants`` table (validated and canonicalised)."""
        raw = {
            label: {ns: {f: list(v) for f, v in feats.items()} for ns, feats in props.items()}
            for label, props in variants.items()
        }
        published = None
        listed = self.published.get("variants", {}) if self.published is not None else {}
        if self.published is not None and set(variants) <= set(listed):
            published = {**self.published, "variants": {label: listed[label] for label in variants}}
        return replace(
            self,
            variants=_Reader(self.source).variants(raw, self.namespaces),
            published=published,
        )

    # -- output ------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Canonical PEP 825 0.1.1 document (legacy-only data is not part of it)."""
        if not self.namespaces:
            raise InvalidMetadata(
                f"{self.source}: default-priorities.namespace is empty; PEP 825 needs "
                "at least one namespace"
            )
        return {
            "$schema": PEP825_SCHEMA_URL,
            "default-priorities": {"namespace": list(self.namespaces)},
            "variants": {
                label: {
                    ns: {f: sorted(set(values)) for f, values in sorted(features.items())}
                    for ns, features in sorted(props.items())
                    if features
                }
                for label, props in sorted(self.variants.items())
            },
        }

    def inline_document(self) -> dict[str, Any]:
        """The document a lock inlines (PEP 825 "Integration with pylock.toml"): a
        legacy draft as published, ``$schema`` kept, since its providers and
        priorities choose the wheel and PEP 825's format cannot hold them; else the
        canonical PEP 825 document."""
        if self.published is not None:
            return copy.deepcopy(dict(self.published))
        return self.to_dict()

    def to_json(self) -> str:
        """Canonical PEP 825 0.1.1 JSON text, with a trailing newline."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def to_bytes(self) -> bytes:
        return self.to_json().encode("utf-8")


def _canonical_variants(variants: Mapping[str, PropertyMap]) -> Variants:
    return {
        label: {
            ns: {f: tuple(sorted(set(values))) for f, values in sorted(features.items())}
            for ns, features in sorted(props.items())
            # A namespace without features adds no property: drop it, so that the
            # same set of properties always has the same spelling.
            if features
        }
        for label, props in sorted(variants.items())
    }


class _Reader:
    """Validating reader; every error message starts with the source and key path."""

    def __init__(self, source: str, *, table: str = "") -> None:
        self.source = source
        # Key paths are relative to this table ("variant." in pyproject.toml).
        self.table = table

    def fail(self, where: str, message: str) -> InvalidMetadata:
        if where == "top level" and self.table:
            where = f"[{self.table.rstrip('.')}]"
        elif self.table and not where.startswith("["):
            where = self.table + where
        return InvalidMetadata(f"{self.source}: {where}: {message}")

    def obj(self, value: object, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a JSON object, got {_kind(value)}")
        return value

    def str_list(self, value: object, where: str, *, min_items: int = 0) -> list[str]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list of strings, got {_kind(value)}")
        for item in value:
            if not isinstance(item, str):
                raise self.fail(
                    where, f"expected a list of strings, found {item!r} ({_kind(item)})"
                )
        if len(value) < min_items:
            raise self.fail(where, f"needs at least {min_items} item(s)")
        return value

    def names(self, value: object, where: str, *, min_items: int = 0) -> tuple[str, ...]:
        items = self.str_list(value, where, min_items=min_items)
        for item in items:
            self.check(validate_name, item, where)
        if len(set(items)) != len(items):
            dupes = sorted({i for i in items if items.count(i) > 1})
            raise self.fail(where, f"duplicate entries {dupes}")
        return tuple(items)

    def values(self, value: object, where: str, *, min_items: int = 1) -> tuple[str, ...]:
        items = self.str_list(value, where, min_items=min_items)
        for item in items:
            self.check(validate_value, item, where)
        return tuple(dict.fromkeys(items))  # de-duplicated, order kept

    def check(self, validator: Any, value: str, where: str) -> None:
        try:
            validator(value)
        except VariantError as exc:
            raise self.fail(where, str(exc)) from None

    def feature_values(self, value: object, where: str) -> dict[str, tuple[str, ...]]:
        result: dict[str, tuple[str, ...]] = {}
        for feature, values in self.obj(value, where).items():
            self.check(validate_name, feature, where)
            result[feature] = self.values(values, f"{where}.{feature}", min_items=0)
        return result

    def ordered_properties(self, value: object, where: str) -> OrderedProperties:
        result: OrderedProperties = {}
        for ns, features in self.obj(value, where).items():
            self.check(validate_name, ns, where)
            result[ns] = self.feature_values(features, f"{where}.{ns}")
        return result

    # -- the document ---------------------------------------------------------

    def read(self, raw: object) -> VariantMetadata:
        doc = self.obj(raw, "top level")
        try:
            # No '$schema' at all: the earliest drafts (uv's prototype) left it out.
            schema = (
                SchemaVersion.from_url(doc["$schema"]) if "$schema" in doc else UNVERSIONED_SCHEMA
            )
        except InvalidMetadata as exc:
            raise type(exc)(f"{self.source}: {exc}") from None
        if not schema.legacy and not schema.is_newer_minor:
            unknown = sorted(set(doc) - _PEP825_TOP_KEYS)
            if unknown:
                raise self.fail(
                    "top level",
                    f"unknown key(s) {unknown} for schema {schema}; PEP 825 allows "
                    "only '$schema', 'default-priorities' and 'variants'",
                )
        if "variants" not in doc and not schema.legacy:
            raise self.fail("top level", "missing required key 'variants'")
        return self.body(doc, schema, read_legacy=schema.legacy)

    def read_pyproject(self, raw: object) -> VariantMetadata:
        """The PEP 817 ``[variant]`` table: everything but ``variants``."""
        table = self.obj(raw, "top level")
        if "variants" in table:
            raise self.fail(
                "top level",
                "must not define 'variants'; labels are chosen at build time",
            )
        return self.body(table, CANONICAL_SCHEMA, read_legacy=True)

    def body(
        self, doc: dict[str, Any], schema: SchemaVersion, *, read_legacy: bool
    ) -> VariantMetadata:
        if "default-priorities" not in doc:
            raise self.fail("top level", "missing required key 'default-priorities'")
        priorities = self.obj(doc["default-priorities"], "default-priorities")
        if "namespace" not in priorities:
            raise self.fail("default-priorities", "missing required key 'namespace'")
        if not read_legacy and not schema.is_newer_minor:
            unknown = sorted(set(priorities) - {"namespace"})
            if unknown:
                raise self.fail(
                    "default-priorities",
                    f"unknown key(s) {unknown} for schema {schema}; PEP 825 has only "
                    "'namespace' here",
                )
        namespaces = self.names(
            priorities["namespace"], "default-priorities.namespace", min_items=1
        )
        feature_priorities: dict[str, tuple[str, ...]] = {}
        property_priorities: OrderedProperties = {}
        providers: dict[str, ProviderInfo] = {}
        static: OrderedProperties = {}
        if read_legacy:
            for ns, feats in self.obj(
                priorities.get("feature", {}), "default-priorities.feature"
            ).items():
                self.check(validate_name, ns, "default-priorities.feature")
                feature_priorities[ns] = self.names(feats, f"default-priorities.feature.{ns}")
            property_priorities = self.ordered_properties(
                priorities.get("property", {}), "default-priorities.property"
            )
            for ns, block in self.obj(doc.get("providers", {}), "providers").items():
                self.check(validate_name, ns, "providers")
                providers[ns] = self.provider(block, f"providers.{ns}")
            static = self.ordered_properties(doc.get("static-properties", {}), "static-properties")
            namespaces = self.unlisted_namespaces(namespaces, providers, static)

        variants = self.variants(doc.get("variants", {}), namespaces)
        return VariantMetadata(
            namespaces=namespaces,
            variants=variants,
            schema=schema,
            providers=providers,
            static_properties=static,
            feature_priorities=feature_priorities,
            property_priorities=property_priorities,
            source=self.source,
            published=doc if read_legacy and "$schema" in doc else None,
        )

    def unlisted_namespaces(
        self,
        namespaces: tuple[str, ...],
        providers: Mapping[str, ProviderInfo],
        static: OrderedProperties,
    ) -> tuple[str, ...]:
        """Drafts before PEP 825 could leave a namespace they declare a provider or
        static properties for out of ``default-priorities.namespace`` (uv's
        prototype): it ranks after the listed ones, in declaration order. A namespace
        declared nowhere is still an error (see ``variants``)."""
        extra = [ns for ns in [*providers, *static] if ns not in namespaces]
        return namespaces + tuple(dict.fromkeys(extra))

    def variants(self, raw: object, namespaces: tuple[str, ...]) -> Variants:
        table = self.obj(raw, "variants")
        known = set(namespaces)
        result: dict[str, PropertyMap] = {}
        for label, props in table.items():
            where = f"variants.{label}"
            self.check(validate_label, label, "variants")
            result[label] = self.ordered_properties(props, where)
            for ns, features in result[label].items():
                if ns not in known:
                    raise self.fail(
                        where,
                        f"namespace {ns!r} is not listed in default-priorities.namespace "
                        f"{list(namespaces)}; add it there",
                    )
                for feature, values in features.items():
                    if not values:
                        raise self.fail(
                            f"{where}.{ns}.{feature}",
                            "a feature needs at least one value",
                        )
            if label == NULL_LABEL and any(result[label].values()):
                raise self.fail(
                    where,
                    "the 'null' label is reserved for the variant with no properties",
                )
        return _canonical_variants(result)

    def provider(self, raw: object, where: str) -> ProviderInfo:
        block = dict(self.obj(raw, where))

        def take_str(key: str) -> str | None:
            value = block.pop(key, None)
            if value is not None and not isinstance(value, str):
                raise self.fail(f"{where}.{key}", f"expected a string, got {_kind(value)}")
            return value

        def take_bool(key: str, default: bool) -> bool:
            value = block.pop(key, default)
            if not isinstance(value, bool):
                raise self.fail(f"{where}.{key}", f"expected true or false, got {_kind(value)}")
            return value

        requires = tuple(self.str_list(block.pop("requires", []), f"{where}.requires"))
        build_requires = tuple(
            self.str_list(block.pop("build-requires", []), f"{where}.build-requires")
        )
        static = self.feature_values(
            block.pop("static-properties", {}), f"{where}.static-properties"
        )
        feature_order = self.names(block.pop("feature-order", []), f"{where}.feature-order")
        return ProviderInfo(
            requires=requires,
            plugin_api=take_str("plugin-api"),
            enable_if=take_str("enable-if"),
            optional=take_bool("optional", False),
            install_time=take_bool("install-time", True),
            plugin_use=take_str("plugin-use"),
            build_requires=build_requires,
            builtin=take_str("builtin"),
            static_properties=static,
            feature_order=feature_order,
            unknown=block,
        )


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    for typ, name in names.items():
        if type(value) is typ:
            return name
    return "a number" if isinstance(value, (int, float)) else type(value).__name__
