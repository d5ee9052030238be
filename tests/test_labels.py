"""Variant labels and the variantlib-compatible hash label (PEP 825 "Variant label")."""

from __future__ import annotations

import hashlib
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from variantlib.models.variant import VariantDescription
from variantlib.models.variant import VariantProperty as VLProperty

from variantlibkit import variantlib_label
from wheelwise.variants.errors import InvalidLabel, InvalidProperty, VariantError
from wheelwise.variants.labels import (
    NULL_LABEL,
    hash_label,
    iter_properties,
    property_map,
    validate_label,
)
from wheelwise.variants.properties import VariantProperty

names = st.from_regex(r"[a-z0-9_]{1,10}", fullmatch=True)
values = st.from_regex(r"[a-z0-9_.]{1,10}", fullmatch=True)
properties = st.builds(VariantProperty, names, names, values)
# Small alphabets so that properties share namespaces and features often.
close_properties = st.builds(
    VariantProperty,
    st.sampled_from(["a", "b", "ns"]),
    st.sampled_from(["f", "g", "level"]),
    st.sampled_from(["1", "2", "v3", "12.8"]),
)
property_sets = st.frozensets(st.one_of(properties, close_properties), max_size=12)


FEAT1 = VariantProperty("installable_plugin", "feat1", "val1c")
FEAT2 = VariantProperty("installable_plugin", "feat2", "val2b")


# -- NULL_LABEL / validate_label ---------------------------------------------


def test_null_label() -> None:
    assert NULL_LABEL == "null"
    assert validate_label(NULL_LABEL) == "null"


@pytest.mark.parametrize(
    "label",
    ["null", "x86_64_v3", "x86_64_v3_openblas", "cu12.8", "0", "_", ".", "60567bd9", "a" * 100],
)
def test_validate_label_accepts(label: str) -> None:
    assert validate_label(label) == label


@pytest.mark.parametrize(
    "label",
    [
        "",
        "X86_64_v3",
        "Null",
        "x86-64",
        "a b",
        " a",
        "a ",
        "null\n",
        "\nnull",
        "a/b",
        "a+b",
        "ä",
        "ａ",
        "a::b",
        "cu12,8",
    ],
)
def test_validate_label_rejects(label: str) -> None:
    with pytest.raises(InvalidLabel) as info:
        validate_label(label)
    assert repr(label) in str(info.value)
    assert isinstance(info.value, VariantError)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("bad", [None, 1, b"null", ["null"]])
def test_validate_label_rejects_non_strings(bad: object) -> None:
    with pytest.raises(InvalidLabel, match=re.escape(repr(bad))):
        validate_label(bad)  # type: ignore[arg-type]


@given(st.text(max_size=10))
def test_validate_label_agrees_with_pep_regex(text: str) -> None:
    # PEP 825: ^[0-9a-z_.]+$ over the whole string.
    ok = re.fullmatch(r"[0-9a-z_.]+", text) is not None
    if ok:
        assert validate_label(text) == text
    else:
        with pytest.raises(InvalidLabel) as info:
            validate_label(text)
        assert repr(text) in str(info.value)


@given(st.text(max_size=10))
def test_validate_label_agrees_with_variantlib_regex(text: str) -> None:
    from variantlib.constants import VALIDATION_VARIANT_LABEL_REGEX

    ours = True
    try:
        validate_label(text)
    except InvalidLabel:
        ours = False
    assert ours == (VALIDATION_VARIANT_LABEL_REGEX.fullmatch(text) is not None)


# -- iter_properties / property_map -------------------------------------------


def test_iter_properties_expands_every_value_in_order() -> None:
    mapping = {
        "x86_64": {"level": ["v3"]},
        "blas_lapack": {"library": ["openblas", "mkl"], "provider": ["a"]},
    }
    assert list(iter_properties(mapping)) == [
        VariantProperty("x86_64", "level", "v3"),
        VariantProperty("blas_lapack", "library", "openblas"),
        VariantProperty("blas_lapack", "library", "mkl"),
        VariantProperty("blas_lapack", "provider", "a"),
    ]


def test_iter_properties_empty() -> None:
    assert list(iter_properties({})) == []
    assert list(iter_properties({"ns": {}})) == []
    assert list(iter_properties({"ns": {"f": []}})) == []


def test_iter_properties_accepts_tuples() -> None:
    assert list(iter_properties({"a": {"b": ("1", "2")}})) == [
        VariantProperty("a", "b", "1"),
        VariantProperty("a", "b", "2"),
    ]


@pytest.mark.parametrize(
    ("mapping", "offending"),
    [
        ({"A": {"b": ["c"]}}, "A"),
        ({"a": {"b-c": ["d"]}}, "b-c"),
        ({"a": {"b": ["ok", "Bad"]}}, "Bad"),
        ({"a": {"b": [""]}}, "''"),
    ],
)
def test_iter_properties_validates(
    mapping: dict[str, dict[str, list[str]]], offending: str
) -> None:
    with pytest.raises(InvalidProperty) as info:
        list(iter_properties(mapping))
    assert offending in str(info.value)


def test_property_map_groups_sorts_and_dedupes() -> None:
    props = [
        VariantProperty("x86_64", "level", "v4"),
        VariantProperty("blas_lapack", "library", "openblas"),
        VariantProperty("x86_64", "level", "v3"),
        VariantProperty("x86_64", "avx512_bf16", "on"),
        VariantProperty("x86_64", "level", "v3"),
    ]
    result = property_map(props)
    assert result == {
        "blas_lapack": {"library": ["openblas"]},
        "x86_64": {"avx512_bf16": ["on"], "level": ["v3", "v4"]},
    }
    # Key order is sorted too, not just equal as a dict.
    assert list(result) == ["blas_lapack", "x86_64"]
    assert list(result["x86_64"]) == ["avx512_bf16", "level"]


def test_property_map_sorts_values_lexically() -> None:
    props = [VariantProperty("nvidia", "cuda", v) for v in ["9.0", "12.8", "12.10", "10"]]
    assert property_map(props) == {"nvidia": {"cuda": ["10", "12.10", "12.8", "9.0"]}}


def test_property_map_empty_and_generator() -> None:
    assert property_map([]) == {}
    assert property_map(p for p in [FEAT2, FEAT1]) == {
        "installable_plugin": {"feat1": ["val1c"], "feat2": ["val2b"]}
    }


def test_property_map_result_is_fresh_and_mutable() -> None:
    first = property_map([FEAT1])
    first["installable_plugin"]["feat1"].append("x")
    assert property_map([FEAT1]) == {"installable_plugin": {"feat1": ["val1c"]}}


@pytest.mark.slow
@given(property_sets)
def test_property_map_iter_properties_round_trip(props: frozenset[VariantProperty]) -> None:
    mapping = property_map(props)
    assert set(iter_properties(mapping)) == set(props)
    # Canonical: sorted keys at every level, sorted unique values.
    assert list(mapping) == sorted(mapping)
    for features in mapping.values():
        assert list(features) == sorted(features)
        for vals in features.values():
            assert vals == sorted(set(vals))
            assert vals
    # Already-canonical input is a fixed point, and iteration follows sorted order.
    assert property_map(iter_properties(mapping)) == mapping
    assert list(iter_properties(mapping)) == sorted(props)


@pytest.mark.slow
@given(st.lists(st.one_of(properties, close_properties), max_size=12), st.randoms())
def test_property_map_ignores_order_and_duplicates(
    props: list[VariantProperty], rnd: random.Random
) -> None:
    shuffled = props + props[: len(props) // 2]
    rnd.shuffle(shuffled)
    assert property_map(shuffled) == property_map(props)
    assert property_map(shuffled) == property_map(set(props))


@pytest.mark.slow
@given(property_sets)
def test_property_map_matches_variantlib_to_dict(props: frozenset[VariantProperty]) -> None:
    if not props:
        return
    desc = VariantDescription(
        properties=[
            VLProperty(namespace=p.namespace, feature=p.feature, value=p.value) for p in props
        ]
    )
    theirs = {ns: {f: sorted(v) for f, v in feats.items()} for ns, feats in desc.to_dict().items()}
    assert property_map(props) == theirs


# -- hash_label -----------------------------------------------------------------


def test_hash_label_empty_is_null() -> None:
    assert hash_label([]) == NULL_LABEL
    assert hash_label(set()) == "null"
    assert hash_label(iter(())) == "null"


def test_hash_label_known_corpus_labels() -> None:
    assert hash_label([FEAT1]) == "60567bd9"
    assert hash_label([FEAT2]) == "fbe82642"
    assert hash_label([FEAT1, FEAT2]) == "5d8be4b9"
    assert hash_label([FEAT2, FEAT1]) == "5d8be4b9"
    assert hash_label({FEAT1, FEAT2}) == "5d8be4b9"


def test_hash_label_known_labels_match_variantlib() -> None:
    assert variantlib_label({FEAT1}) == "60567bd9"
    assert variantlib_label({FEAT2}) == "fbe82642"
    assert variantlib_label({FEAT1, FEAT2}) == "5d8be4b9"
    assert variantlib_label(set()) == "null"


def test_hash_label_is_the_documented_sha256() -> None:
    props = [
        VariantProperty("x86_64", "level", "v3"),
        VariantProperty("blas_lapack", "library", "openblas"),
    ]
    expected = hashlib.sha256(
        b"blas_lapack :: library :: openblas\nx86_64 :: level :: v3\n"
    ).hexdigest()[:8]
    assert hash_label(props) == expected


def test_hash_label_ignores_duplicates() -> None:
    assert hash_label([FEAT1, FEAT1]) == hash_label([FEAT1])
    assert hash_label([FEAT1, FEAT2, FEAT1]) == "5d8be4b9"


def test_hash_label_separates_adjacent_properties() -> None:
    # The trailing newline keeps "a::b::cx" + "d::e::f" apart from "a::b::c" + "xd::e::f".
    left = [VariantProperty("a", "b", "cx"), VariantProperty("d", "e", "f")]
    right = [VariantProperty("a", "b", "c"), VariantProperty("xd", "e", "f")]
    assert hash_label(left) != hash_label(right)


def test_hash_label_accepts_generator() -> None:
    assert hash_label(p for p in [FEAT2, FEAT1]) == "5d8be4b9"


@pytest.mark.slow
@given(property_sets.filter(bool))
def test_hash_label_matches_variantlib(props: frozenset[VariantProperty]) -> None:
    label = hash_label(props)
    assert label == variantlib_label(props)
    assert re.fullmatch(r"[0-9a-f]{8}", label)
    assert validate_label(label) == label
    assert label != NULL_LABEL


@pytest.mark.slow
@given(st.lists(st.one_of(properties, close_properties), min_size=1, max_size=12), st.randoms())
def test_hash_label_is_order_and_duplicate_independent(
    props: list[VariantProperty], rnd: random.Random
) -> None:
    shuffled = props + props[:1]
    rnd.shuffle(shuffled)
    assert hash_label(shuffled) == hash_label(props) == hash_label(set(props))
    assert hash_label(props) == variantlib_label(set(props))


@pytest.mark.slow
@given(property_sets.filter(bool))
def test_hash_label_through_property_map(props: frozenset[VariantProperty]) -> None:
    assert hash_label(iter_properties(property_map(props))) == hash_label(props)


@pytest.mark.slow
@given(property_sets, property_sets)
def test_hash_label_distinguishes_sets(
    a: frozenset[VariantProperty], b: frozenset[VariantProperty]
) -> None:
    # 32 bits: a collision between two small generated sets would be astonishing.
    assert (hash_label(a) == hash_label(b)) == (a == b)
