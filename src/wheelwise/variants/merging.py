"""Combining variant metadata (PEP 825 "Metadata consistency").

* ``default-priorities.namespace``: identical, or the longer list starts with the
  shorter one; the result is the longer list.
* ``variants``: the same label always maps to the same properties; the result is
  the union.

Legacy data (providers, static properties, feature/property priorities) must be
identical per key where both sides have it. Every rule is symmetric, so the result
does not depend on input order; a conflict names the key and both sources.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from wheelwise.variants.errors import MetadataConflict
from wheelwise.variants.labels import iter_properties
from wheelwise.variants.metadata import VariantMetadata

_V = TypeVar("_V")


def merge(documents: Iterable[VariantMetadata]) -> VariantMetadata:
    """Merge metadata documents; raises MetadataConflict on inconsistency."""
    docs = list(documents)
    if not docs:
        raise ValueError("merge() needs at least one metadata document")
    result = docs[0]
    for doc in docs[1:]:
        result = merge_two(result, doc)
    return result


def merge_two(left: VariantMetadata, right: VariantMetadata) -> VariantMetadata:
    namespaces = _merge_namespaces(left, right)
    variants = _union(left.variants, right.variants, left, right, _describe_variant, "label")
    return VariantMetadata(
        namespaces=namespaces,
        variants=variants,
        # Deterministic whatever the order: the newest schema of the inputs.
        schema=max(left.schema, right.schema),
        providers=_union(
            left.providers, right.providers, left, right, repr, "provider for namespace"
        ),
        static_properties=_union(
            left.static_properties,
            right.static_properties,
            left,
            right,
            repr,
            "static-properties for namespace",
        ),
        feature_priorities=_union(
            left.feature_priorities,
            right.feature_priorities,
            left,
            right,
            repr,
            "default-priorities.feature for namespace",
        ),
        property_priorities=_union(
            left.property_priorities,
            right.property_priorities,
            left,
            right,
            repr,
            "default-priorities.property for namespace",
        ),
        source=_join_sources(left.source, right.source),
        published=_merge_published(left, right),
    )


def _merge_published(left: VariantMetadata, right: VariantMetadata) -> dict[str, Any] | None:
    """The legacy documents of both joined, when they differ in labels only (a
    release's wheels each carry the release's document narrowed to their label)."""
    if left.published is None or right.published is None:
        return None
    rest = {k: v for k, v in left.published.items() if k != "variants"}
    if rest != {k: v for k, v in right.published.items() if k != "variants"}:
        return None
    variants = dict(left.published.get("variants", {}))
    for label, properties in right.published.get("variants", {}).items():
        if variants.setdefault(label, properties) != properties:
            return None
    return {**rest, "variants": variants}


def _merge_namespaces(left: VariantMetadata, right: VariantMetadata) -> tuple[str, ...]:
    short, long = sorted((left, right), key=lambda doc: len(doc.namespaces))
    if long.namespaces[: len(short.namespaces)] != short.namespaces:
        raise MetadataConflict(
            "inconsistent default-priorities.namespace: "
            f"{list(left.namespaces)} in {left.source} vs "
            f"{list(right.namespaces)} in {right.source}; one list must start with the "
            "other"
        )
    return long.namespaces


def _union(
    left_map: Mapping[str, _V],
    right_map: Mapping[str, _V],
    left: VariantMetadata,
    right: VariantMetadata,
    describe: Callable[[Any], str],
    what: str,
) -> dict[str, _V]:
    merged = dict(left_map)
    for key, value in right_map.items():
        if key in merged and merged[key] != value:
            raise MetadataConflict(
                f"{what} {key!r} differs: {describe(merged[key])} in {left.source} vs "
                f"{describe(value)} in {right.source}"
            )
        merged[key] = value
    return dict(sorted(merged.items()))


def _describe_variant(properties: Mapping[str, Mapping[str, tuple[str, ...]]]) -> str:
    props = sorted(str(p) for p in iter_properties(properties))
    return "{" + ", ".join(props) + "}" if props else "{} (no properties)"


def _join_sources(left: str, right: str) -> str:
    parts = sorted(set(left.split(" + ")) | set(right.split(" + ")))
    return " + ".join(parts)
