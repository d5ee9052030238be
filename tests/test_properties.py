"""Variant properties and features (PEP 825 "Variant properties")."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from wheelwise.variants.errors import InvalidProperty, VariantError
from wheelwise.variants.properties import (
    VariantFeature,
    VariantProperty,
    normalize_property_text,
    validate_name,
    validate_value,
)

# The exact patterns PEP 825 gives for each component.
PEP_NAME = re.compile(r"^[a-z0-9_]+$")
PEP_VALUE = re.compile(r"^[a-z0-9_.]+$")


def pep_name_ok(text: str) -> bool:
    # ``$`` would also accept a trailing newline; the PEP means the whole string.
    return PEP_NAME.match(text) is not None and not text.endswith("\n")


def pep_value_ok(text: str) -> bool:
    return PEP_VALUE.match(text) is not None and not text.endswith("\n")


names = st.from_regex(r"[a-z0-9_]{1,12}", fullmatch=True)
values = st.from_regex(r"[a-z0-9_.]{1,12}", fullmatch=True)
# Whitespace that may surround "::" (any str.isspace() character is insignificant).
spaces = st.text(alphabet=" \t\n\r\f\v\u00a0\u2003", max_size=3)
properties = st.builds(VariantProperty, names, names, values)
features = st.builds(VariantFeature, names, names)


# -- construction and formatting ----------------------------------------------


def test_property_fields_and_str() -> None:
    prop = VariantProperty("nvidia", "cuda_version_lower_bound", "12.8")
    assert prop.namespace == "nvidia"
    assert prop.feature == "cuda_version_lower_bound"
    assert prop.value == "12.8"
    assert str(prop) == "nvidia :: cuda_version_lower_bound :: 12.8"


def test_feature_fields_and_str() -> None:
    feat = VariantFeature("x86_64", "level")
    assert feat.namespace == "x86_64"
    assert feat.feature == "level"
    assert str(feat) == "x86_64 :: level"


def test_variant_feature_of_property() -> None:
    prop = VariantProperty("x86_64", "avx512_bf16", "on")
    assert prop.variant_feature == VariantFeature("x86_64", "avx512_bf16")
    assert isinstance(prop.variant_feature, VariantFeature)


def test_property_is_frozen_and_hashable() -> None:
    prop = VariantProperty("a", "b", "c")
    with pytest.raises(dataclasses.FrozenInstanceError):
        prop.value = "d"  # type: ignore[misc]
    assert prop == VariantProperty("a", "b", "c")
    assert hash(prop) == hash(VariantProperty("a", "b", "c"))
    assert prop != VariantProperty("a", "b", "d")
    assert len({prop, VariantProperty("a", "b", "c"), VariantProperty("a", "b", "d")}) == 2


def test_feature_is_frozen_and_hashable() -> None:
    feat = VariantFeature("a", "b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        feat.feature = "c"  # type: ignore[misc]
    assert {feat, VariantFeature("a", "b")} == {VariantFeature("a", "b")}


def test_property_ordering_is_by_namespace_feature_value() -> None:
    props = [
        VariantProperty("b", "a", "a"),
        VariantProperty("a", "b", "a"),
        VariantProperty("a", "a", "b"),
        VariantProperty("a", "a", "a"),
        VariantProperty("a", "a", "a.1"),
    ]
    assert sorted(props) == [
        VariantProperty("a", "a", "a"),
        VariantProperty("a", "a", "a.1"),
        VariantProperty("a", "a", "b"),
        VariantProperty("a", "b", "a"),
        VariantProperty("b", "a", "a"),
    ]


def test_feature_ordering() -> None:
    feats = [VariantFeature("b", "a"), VariantFeature("a", "z"), VariantFeature("a", "b")]
    assert sorted(feats) == [
        VariantFeature("a", "b"),
        VariantFeature("a", "z"),
        VariantFeature("b", "a"),
    ]


# -- parsing ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a::b::c",
        "a :: b :: c",
        "  a ::  b::c ",
        "a\t::\tb\t::\tc",
        "\na::b ::c\n",
        "a   ::b::   c",
    ],
)
def test_property_parse_ignores_whitespace_around_separator(text: str) -> None:
    assert VariantProperty.parse(text) == VariantProperty("a", "b", "c")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x86_64 :: level :: v3", VariantProperty("x86_64", "level", "v3")),
        ("x86_64 :: avx512_bf16 :: on", VariantProperty("x86_64", "avx512_bf16", "on")),
        (
            "nvidia :: cuda_version_lower_bound :: 12.8",
            VariantProperty("nvidia", "cuda_version_lower_bound", "12.8"),
        ),
        (
            "blas_lapack :: library :: openblas",
            VariantProperty("blas_lapack", "library", "openblas"),
        ),
        ("0 :: 1 :: 2", VariantProperty("0", "1", "2")),
        ("_ :: _ :: .", VariantProperty("_", "_", ".")),
        ("ns :: f :: ...1..", VariantProperty("ns", "f", "...1..")),
    ],
)
def test_property_parse_pep_examples(text: str, expected: VariantProperty) -> None:
    prop = VariantProperty.parse(text)
    assert prop == expected
    assert str(prop) == text


@pytest.mark.parametrize(
    "text", ["a::b", "a :: b", "  a ::  b ", "a\t::\nb", "x86_64 :: avx512_bf16"]
)
def test_feature_parse(text: str) -> None:
    feat = VariantFeature.parse(text)
    assert feat.namespace == text.split("::")[0].strip()
    assert feat.feature == text.split("::")[1].strip()


def test_feature_parse_exact() -> None:
    assert VariantFeature.parse("  a ::  b ") == VariantFeature("a", "b")


@pytest.mark.parametrize(
    ("text", "offending"),
    [
        # wrong number of parts
        ("a", "a"),
        ("a :: b", "a :: b"),
        ("a :: b :: c :: d", "a :: b :: c :: d"),
        ("a::b::c::", "a::b::c::"),
        ("::a::b", "''"),
        ("", "''"),
        ("   ", "'   '"),
        ("a : b : c", "a : b : c"),
        ("a, b, c", "a, b, c"),
        # invalid components
        ("A :: b :: c", "A"),
        ("a :: B :: c", "B"),
        ("a :: b :: C", "C"),
        ("x86-64 :: level :: v3", "x86-64"),
        ("x86_64 :: le-vel :: v3", "le-vel"),
        ("x86_64 :: level :: v-3", "v-3"),
        ("a.b :: c :: d", "a.b"),
        ("a :: b.c :: d", "b.c"),
        ("a b :: c :: d", "a b"),
        ("a :: b c :: d", "b c"),
        ("a :: b :: c d", "c d"),
        ("a :::: c", "''"),
        ("a ::  :: c", "''"),
        ("a :: b ::", "''"),
        (":: b :: c", "''"),
        ("a:::b::c", ":b"),
        ("é :: b :: c", "é"),
        ("a :: b :: ü", "ü"),
        ("a :: b :: c/d", "c/d"),
    ],
)
def test_property_parse_rejects(text: str, offending: str) -> None:
    with pytest.raises(InvalidProperty) as info:
        VariantProperty.parse(text)
    assert offending in str(info.value)
    assert isinstance(info.value, VariantError)
    assert isinstance(info.value, ValueError)


def test_property_parse_wrong_part_count_mentions_text_and_shape() -> None:
    with pytest.raises(InvalidProperty, match=re.escape("'a :: b'")) as info:
        VariantProperty.parse("a :: b")
    assert "namespace :: feature :: value" in str(info.value)


@pytest.mark.parametrize(
    ("text", "offending"),
    [
        ("a", "a"),
        ("a :: b :: c", "a :: b :: c"),
        ("", "''"),
        ("A :: b", "A"),
        ("a :: B", "B"),
        ("a :: b.c", "b.c"),
        ("a-b :: c", "a-b"),
        ("a :: b c", "b c"),
        ("a ::", "''"),
        ("a ::b :: ", "'a ::b :: '"),
    ],
)
def test_feature_parse_rejects(text: str, offending: str) -> None:
    with pytest.raises(InvalidProperty) as info:
        VariantFeature.parse(text)
    assert offending in str(info.value)


def test_feature_parse_wrong_part_count_mentions_shape() -> None:
    with pytest.raises(InvalidProperty) as info:
        VariantFeature.parse("a :: b :: c")
    assert "namespace :: feature'" in str(info.value)
    assert "'a :: b :: c'" in str(info.value)


@pytest.mark.parametrize("bad", [None, 1, b"a :: b :: c", ["a", "b", "c"]])
def test_parse_rejects_non_strings(bad: object) -> None:
    with pytest.raises(InvalidProperty, match=re.escape(repr(bad))):
        VariantProperty.parse(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidProperty, match=re.escape(repr(bad))):
        VariantFeature.parse(bad)  # type: ignore[arg-type]


# -- direct construction validates --------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "feature", "value", "offending"),
    [
        ("", "b", "c", "''"),
        ("a", "", "c", "''"),
        ("a", "b", "", "''"),
        ("Nvidia", "b", "c", "Nvidia"),
        ("a", "Feature", "c", "Feature"),
        ("a", "b", "On", "On"),
        ("a-b", "c", "d", "a-b"),
        ("a", "b-c", "d", "b-c"),
        ("a", "b", "1-2", "1-2"),
        ("a.b", "c", "d", "a.b"),
        ("a", "b.c", "d", "b.c"),
        (" a", "b", "c", " a"),
        ("a", "b ", "c", "b "),
        ("a", "b", " c", " c"),
        ("a b", "c", "d", "a b"),
        ("a\n", "b", "c", "a\\n"),
        ("a", "b\n", "c", "b\\n"),
        ("a", "b", "c\n", "c\\n"),
        ("a", "b", "c::d", "c::d"),
    ],
)
def test_property_constructor_validates(
    namespace: str, feature: str, value: str, offending: str
) -> None:
    with pytest.raises(InvalidProperty) as info:
        VariantProperty(namespace, feature, value)
    assert offending in str(info.value)


@pytest.mark.parametrize(
    ("namespace", "feature", "offending"),
    [("", "b", "''"), ("a", "", "''"), ("A", "b", "A"), ("a", "b.c", "b.c"), ("a", "-", "-")],
)
def test_feature_constructor_validates(namespace: str, feature: str, offending: str) -> None:
    with pytest.raises(InvalidProperty) as info:
        VariantFeature(namespace, feature)
    assert offending in str(info.value)


def test_constructor_rejects_non_string_components() -> None:
    with pytest.raises(InvalidProperty, match="42"):
        VariantProperty("a", "b", 42)  # type: ignore[arg-type]
    with pytest.raises(InvalidProperty, match="None"):
        VariantFeature(None, "b")  # type: ignore[arg-type]


def test_error_says_which_component() -> None:
    with pytest.raises(InvalidProperty, match="namespace"):
        VariantProperty("A", "b", "c")
    with pytest.raises(InvalidProperty, match="feature name"):
        VariantProperty("a", "B", "c")
    with pytest.raises(InvalidProperty, match="value"):
        VariantProperty("a", "b", "C")


def test_value_allows_dot_but_names_do_not() -> None:
    assert VariantProperty("a", "b", "1.2.3").value == "1.2.3"
    assert validate_value(".") == "."
    with pytest.raises(InvalidProperty, match=re.escape("'1.2'")):
        validate_name("1.2")


@pytest.mark.parametrize("good", ["a", "0", "_", "x86_64", "abc_123", "a" * 200])
def test_validate_name_accepts(good: str) -> None:
    assert validate_name(good) == good
    assert validate_value(good) == good


@pytest.mark.parametrize(
    "bad", ["", "A", "aB", "a-b", "a b", "a.b", "a\n", "\na", "ä", "ａ", "a:b"]
)
def test_validate_name_rejects(bad: str) -> None:
    with pytest.raises(InvalidProperty) as info:
        validate_name(bad, "thing")
    assert repr(bad) in str(info.value)
    assert "thing" in str(info.value)


@pytest.mark.parametrize("bad", ["", "A", "1.0A", "a-b", "a b", "1,0", "v3\n", "ü", "*"])
def test_validate_value_rejects(bad: str) -> None:
    with pytest.raises(InvalidProperty) as info:
        validate_value(bad)
    assert repr(bad) in str(info.value)


@given(st.text(max_size=8))
def test_validate_name_agrees_with_pep_regex(text: str) -> None:
    if pep_name_ok(text):
        assert validate_name(text) == text
    else:
        with pytest.raises(InvalidProperty) as info:
            validate_name(text)
        assert repr(text) in str(info.value)


@given(st.text(alphabet="abAZ09_.- :\n\té", max_size=8))
def test_validate_value_agrees_with_pep_regex(text: str) -> None:
    if pep_value_ok(text):
        assert validate_value(text) == text
    else:
        with pytest.raises(InvalidProperty) as info:
            validate_value(text)
        assert repr(text) in str(info.value)


@given(st.text(alphabet="abAZ09_.- :\n\té", max_size=6), names, values)
def test_property_constructor_agrees_with_pep_regex(text: str, name: str, value: str) -> None:
    for args, ok in (
        ((text, name, value), pep_name_ok(text)),
        ((name, text, value), pep_name_ok(text)),
        ((name, name, text), pep_value_ok(text)),
    ):
        if ok:
            assert VariantProperty(*args).value == args[2]
        else:
            with pytest.raises(InvalidProperty):
                VariantProperty(*args)


# -- normalize_property_text --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a::b::c", "a :: b :: c"),
        ("  a ::  b::c ", "a :: b :: c"),
        ("a :: b :: c", "a :: b :: c"),
        ("a::b", "a :: b"),
        ("\ta\t::\nb\n", "a :: b"),
        ("a", "a"),
        ("  a  ", "a"),
        ("foo::bar::12.8", "foo :: bar :: 12.8"),
    ],
)
def test_normalize_property_text(text: str, expected: str) -> None:
    assert normalize_property_text(text) == expected


def test_normalize_property_text_is_idempotent_on_examples() -> None:
    once = normalize_property_text(" x86_64::level ::v3 ")
    assert once == "x86_64 :: level :: v3"
    assert normalize_property_text(once) == once


# -- hypothesis: round trips --------------------------------------------------


@given(properties)
def test_property_format_parse_round_trip(prop: VariantProperty) -> None:
    text = str(prop)
    parsed = VariantProperty.parse(text)
    assert parsed == prop
    assert str(parsed) == text
    assert text == f"{prop.namespace} :: {prop.feature} :: {prop.value}"


@given(features)
def test_feature_format_parse_round_trip(feat: VariantFeature) -> None:
    assert VariantFeature.parse(str(feat)) == feat
    assert str(VariantFeature.parse(str(feat))) == str(feat)


@given(properties, spaces, spaces, spaces, spaces, spaces, spaces)
def test_property_parse_random_whitespace(
    prop: VariantProperty, s1: str, s2: str, s3: str, s4: str, s5: str, s6: str
) -> None:
    text = f"{s1}{prop.namespace}{s2}::{s3}{prop.feature}{s4}::{s5}{prop.value}{s6}"
    parsed = VariantProperty.parse(text)
    assert parsed == prop
    assert str(parsed) == str(prop)
    assert normalize_property_text(text) == str(prop)


@given(features, spaces, spaces, spaces, spaces)
def test_feature_parse_random_whitespace(
    feat: VariantFeature, s1: str, s2: str, s3: str, s4: str
) -> None:
    text = f"{s1}{feat.namespace}{s2}::{s3}{feat.feature}{s4}"
    assert VariantFeature.parse(text) == feat
    assert normalize_property_text(text) == str(feat)


@given(properties)
def test_normalize_property_text_fixed_point(prop: VariantProperty) -> None:
    assert normalize_property_text(str(prop)) == str(prop)
    assert normalize_property_text(str(prop.variant_feature)) == str(prop.variant_feature)


@given(properties, properties)
def test_ordering_matches_tuple_ordering(a: VariantProperty, b: VariantProperty) -> None:
    ta = (a.namespace, a.feature, a.value)
    tb = (b.namespace, b.feature, b.value)
    assert (a < b) == (ta < tb)
    assert (a == b) == (ta == tb)


@given(properties, st.sampled_from(["namespace", "feature", "value"]), st.sampled_from("A-/,:"))
def test_inserting_invalid_character_is_rejected(
    prop: VariantProperty, field: str, bad: str
) -> None:
    parts = {"namespace": prop.namespace, "feature": prop.feature, "value": prop.value}
    parts[field] = parts[field][:1] + bad + parts[field][1:]
    text = f"{parts['namespace']} :: {parts['feature']} :: {parts['value']}"
    with pytest.raises(InvalidProperty) as info:
        VariantProperty.parse(text)
    assert parts[field] in str(info.value)


@given(properties, st.sampled_from(["namespace", "feature", "value"]), spaces.filter(bool))
def test_whitespace_inside_a_component_is_rejected(
    prop: VariantProperty, field: str, space: str
) -> None:
    parts = {"namespace": prop.namespace, "feature": prop.feature, "value": prop.value}
    assume(len(parts[field]) >= 2)
    parts[field] = parts[field][:1] + space + parts[field][1:]
    text = f"{parts['namespace']} :: {parts['feature']} :: {parts['value']}"
    with pytest.raises(InvalidProperty) as info:
        VariantProperty.parse(text)
    assert repr(parts[field]) in str(info.value)


# -- differential: variantlib 0.2.2 ---------------------------------------------


@given(properties, st.text(alphabet=" \t", max_size=2), st.text(alphabet=" \t", max_size=2))
def test_parse_agrees_with_variantlib(prop: VariantProperty, s1: str, s2: str) -> None:
    from variantlib.models.variant import VariantProperty as VLProperty

    text = f"{prop.namespace}{s1}::{s2}{prop.feature} :: {prop.value}"
    theirs = VLProperty.from_str(text)
    ours = VariantProperty.parse(text)
    assert (ours.namespace, ours.feature, ours.value) == (
        theirs.namespace,
        theirs.feature,
        theirs.value,
    )
    assert str(ours) == theirs.to_str()
