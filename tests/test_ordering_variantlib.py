"""Differential tests: wheelwise ordering against variantlib 0.2.2, the reference resolver.

Inputs are generated where the two agree by design:

* variantlib injects an ``abi_dependency`` namespace from the installed packages and
  appends a null variant, so the generated namespaces never use that name and the
  comparison accounts for the extra null variant;
* variantlib cannot express a non-null label with zero properties, so every
  generated non-null label has at least one property;
* variantlib only accepts supported properties of namespaces it was given a
  priority for, so the machine only uses the metadata's namespaces.

Labels are unique and both implementations break exact ties by plain string
comparison of the label, so the label tiebreak agrees too.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Iterator, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from variantlib.models.variant import VariantDescription
from variantlib.models.variant import VariantProperty as VlProperty
from variantlib.resolver.lib import sort_and_filter_supported_variants

from wheelwise.variants.labels import NULL_LABEL
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.ordering import rank_variants
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.supported import SupportedProperties

LEGACY_SCHEMA = "https://variants-schema.wheelnext.dev/v0.0.3.json"
NAMESPACES = ["ns_a", "ns_b", "ns_c"]
FEATURES = ["f0", "f1", "f2", "f3"]
VALUES = ["v0", "v1", "v2", "v3", "v4", "v5"]
LABELS = st.from_regex(r"[0-9a-z_.]{1,6}", fullmatch=True).filter(lambda s: s != NULL_LABEL)

PropDict = dict[str, dict[str, list[str]]]


@pytest.fixture(autouse=True, scope="module")
def installed_once() -> Iterator[None]:
    """variantlib reads every installed distribution's METADATA on each call (its
    ``abi_dependency`` namespace): read them once, the same names and versions."""
    found = [
        SimpleNamespace(name=dist.name, version=dist.version)
        for dist in importlib.metadata.distributions()
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(importlib.metadata, "distributions", lambda: iter(found))
        yield


# Strategies are built once: hypothesis works out each new strategy object's
# properties on first use, which costs more than drawing from it.
FEATURE_LISTS = st.lists(st.sampled_from(FEATURES), unique=True, min_size=1, max_size=3)
VALUE_LISTS = st.lists(st.sampled_from(VALUES), unique=True, min_size=1, max_size=3)
SOME_FEATURES = st.lists(st.sampled_from(FEATURES), unique=True, max_size=3)
ANY_FEATURES = st.lists(st.sampled_from(FEATURES), unique=True)
ANY_VALUES = st.lists(st.sampled_from(VALUES), unique=True)
LABEL_LISTS = st.lists(LABELS, unique=True, max_size=10)


@functools.cache
def namespace_lists(namespaces: tuple[str, ...], min_size: int, max_size: int | None) -> Any:
    return st.lists(st.sampled_from(namespaces), unique=True, min_size=min_size, max_size=max_size)


@functools.cache
def property_maps(namespaces: tuple[str, ...]) -> st.SearchStrategy[PropDict]:
    """A non-empty property map (variantlib has no zero-property non-null variant)."""
    chosen = namespace_lists(namespaces, 1, 2)

    @st.composite
    def maps(draw: st.DrawFn) -> PropDict:
        result: PropDict = {}
        for ns in draw(chosen):
            result[ns] = {f: draw(VALUE_LISTS) for f in draw(FEATURE_LISTS)}
        return result

    return maps()


@functools.cache
def machines(namespaces: tuple[str, ...]) -> st.SearchStrategy[PropDict]:
    chosen = namespace_lists(namespaces, 0, None)

    @st.composite
    def machine(draw: st.DrawFn) -> PropDict:
        result: PropDict = {}
        for ns in draw(chosen):
            result[ns] = {f: draw(ANY_VALUES) for f in draw(ANY_FEATURES)}
        return result

    return machine()


Scenario = tuple[list[str], dict[str, PropDict], PropDict]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    namespaces = list(draw(st.permutations(NAMESPACES)))
    labels = draw(LABEL_LISTS)
    maps = property_maps(tuple(namespaces))
    variants = {label: draw(maps) for label in labels}
    if draw(st.booleans()):
        variants[NULL_LABEL] = {}
    return namespaces, variants, draw(machines(tuple(namespaces)))


@st.composite
def priorities(
    draw: st.DrawFn, namespaces: Sequence[str]
) -> tuple[dict[str, list[str]], dict[str, dict[str, list[str]]]]:
    """Legacy default-priorities.feature / .property, possibly naming unsupported items."""
    some = namespace_lists(tuple(namespaces), 0, None)
    features = {ns: draw(FEATURE_LISTS) for ns in draw(some)}
    properties = {ns: {f: draw(VALUE_LISTS) for f in draw(SOME_FEATURES)} for ns in draw(some)}
    return features, properties


def to_variantlib(variants: Mapping[str, PropDict]) -> list[VariantDescription]:
    return [
        VariantDescription(
            properties=[
                VlProperty(ns, f, v) for ns, fs in props.items() for f, vs in fs.items() for v in vs
            ],
            label=label,
        )
        for label, props in variants.items()
    ]


def supported_list(system: PropDict) -> list[VlProperty]:
    """The machine as variantlib's flat list: grouped by feature, best first."""
    return [VlProperty(ns, f, v) for ns, fs in system.items() for f, vs in fs.items() for v in vs]


def variantlib_rank(
    namespaces: list[str],
    variants: Mapping[str, PropDict],
    system: PropDict,
    **kwargs: Any,
) -> tuple[list[str], dict[str, set[tuple[str, str, str]]]]:
    """(order, {label: narrowed properties}) as variantlib 0.2.2 computes them."""
    result = sort_and_filter_supported_variants(
        to_variantlib(variants),
        supported_list(system),
        namespace_priorities=list(namespaces),
        filter_values=True,
        **kwargs,
    )
    order = [vdesc.label for vdesc in result]
    narrowed = {
        vdesc.label: {(p.namespace, p.feature, p.value) for p in vdesc.properties}
        for vdesc in result
    }
    if NULL_LABEL not in variants:
        # variantlib always appends a null variant of its own.
        assert order[-1] == NULL_LABEL
        order.pop()
        del narrowed[NULL_LABEL]
    return order, narrowed


def as_tuples(props: Sequence[VariantProperty]) -> set[tuple[str, str, str]]:
    return {(p.namespace, p.feature, p.value) for p in props}


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_same_order_and_narrowing_as_variantlib(scenario: Scenario) -> None:
    namespaces, variants, system = scenario
    ranking = rank_variants(
        VariantMetadata.build(namespaces, variants), SupportedProperties.from_dict(system)
    )
    expected_order, expected_narrowed = variantlib_rank(namespaces, variants, system)
    assert list(ranking.order) == expected_order
    assert set(ranking.rejected) == set(variants) - set(expected_order)
    for ranked in ranking.compatible:
        assert as_tuples(ranked.supported) == expected_narrowed[ranked.label]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.data())
def test_same_order_as_variantlib_with_legacy_priorities(data: st.DataObject) -> None:
    namespaces, variants, system = data.draw(scenarios())
    feature_priorities, property_priorities = data.draw(priorities(namespaces))
    metadata = VariantMetadata.from_dict(
        {
            "$schema": LEGACY_SCHEMA,
            "default-priorities": {
                "namespace": namespaces,
                "feature": feature_priorities,
                "property": property_priorities,
            },
            "variants": variants,
        }
    )
    ranking = rank_variants(metadata, SupportedProperties.from_dict(system))
    expected_order, expected_narrowed = variantlib_rank(
        namespaces,
        variants,
        system,
        feature_priorities=feature_priorities,
        property_priorities=property_priorities,
    )
    assert list(ranking.order) == expected_order
    assert set(ranking.rejected) == set(variants) - set(expected_order)
    for ranked in ranking.compatible:
        assert as_tuples(ranked.supported) == expected_narrowed[ranked.label]


def test_variantlib_agrees_on_the_corpus_test_package_example() -> None:
    # Hand-checked anchor for the generated comparisons above.
    variants: dict[str, PropDict] = {
        "5d8be4b9": {"installable_plugin": {"feat1": ["val1c"], "feat2": ["val2b"]}},
        "60567bd9": {"installable_plugin": {"feat1": ["val1c"]}},
        "bar": {"installable_plugin": {"feat2": ["val2b"]}},
        "fbe82642": {"installable_plugin": {"feat2": ["val2b"]}},
        "foo": {"installable_plugin": {"feat1": ["val1c"]}},
        "null": {},
    }
    system: PropDict = {"installable_plugin": {"feat1": ["val1c", "val1b"]}}
    namespaces = ["installable_plugin", "non_existing_plugin"]
    expected_order, _ = variantlib_rank(namespaces, variants, system)
    assert expected_order == ["60567bd9", "foo", "null"]
    ranking = rank_variants(
        VariantMetadata.build(namespaces, variants), SupportedProperties.from_dict(system)
    )
    assert list(ranking.order) == expected_order
