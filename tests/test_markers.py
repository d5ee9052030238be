"""Variant environment markers (PEP 825 "Environment markers" and its examples)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.markers import InvalidMarker, UndefinedComparison
from packaging.markers import Marker as PackagingMarker
from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as PackagingRequirement

from wheelwise.variants.labels import NULL_LABEL
from wheelwise.variants.markers import (
    evaluate_marker,
    parse_marker,
    parse_requirement,
    settle_variant_markers,
    uses_variant_markers,
    variant_environment,
)
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.ordering import rank_variants
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.supported import SupportedProperties

FOOBAR = variant_environment("foobar", [VariantProperty("foo", "bar", "baz")])
NULL = variant_environment(NULL_LABEL, [])
NON_VARIANT = variant_environment(None)
OTHER = variant_environment("other", [VariantProperty("qux", "quux", "x")])

# The PEP 825 example, each with the wheels that satisfy it.
PEP_EXAMPLES = [
    ('dep1; variant_label == "foobar"', {"foobar"}),
    ('dep2; variant_label != "null"', {"foobar", "non-variant", "other"}),
    ('dep3; variant_label == ""', {"non-variant"}),
    ('dep4; "foo" in variant_namespaces', {"foobar"}),
    ('dep5; "foo :: bar" in variant_features', {"foobar"}),
    ('dep6; "foo :: bar :: baz" in variant_properties', {"foobar"}),
    ('dep7; "foo::bar::baz" in variant_properties', {"foobar"}),
]
ENVIRONMENTS = {"foobar": FOOBAR, "null": NULL, "non-variant": NON_VARIANT, "other": OTHER}


@pytest.mark.parametrize(("text", "satisfied_by"), PEP_EXAMPLES)
def test_pep_825_examples(text: str, satisfied_by: set[str]) -> None:
    requirement = parse_requirement(text)
    assert requirement.marker is not None
    satisfied = {
        name for name, env in ENVIRONMENTS.items() if evaluate_marker(requirement.marker, env)
    }
    assert satisfied == satisfied_by


def test_environment_values() -> None:
    assert {
        "variant_label": "foobar",
        "variant_properties": frozenset({"foo :: bar :: baz"}),
        "variant_features": frozenset({"foo :: bar"}),
        "variant_namespaces": frozenset({"foo"}),
    } == FOOBAR
    # A non-variant wheel: empty label and empty sets, whatever is passed.
    assert variant_environment(None, [VariantProperty("a", "b", "c")]) == {
        "variant_label": "",
        "variant_properties": frozenset(),
        "variant_features": frozenset(),
        "variant_namespaces": frozenset(),
    }
    # The null variant differs from a non-variant wheel only in its label.
    assert NULL["variant_label"] == "null"
    assert NULL["variant_properties"] == frozenset()


@pytest.mark.parametrize(
    "spelling",
    [
        '"foo :: bar :: baz" in variant_properties',
        '"foo::bar::baz" in variant_properties',
        '"  foo ::bar::   baz " in variant_properties',
        '"foo\t::\tbar :: baz" in variant_properties',
    ],
)
def test_whitespace_around_separators_is_ignored(spelling: str) -> None:
    assert evaluate_marker(spelling, FOOBAR)
    assert not evaluate_marker(spelling.replace(" in ", " not in "), FOOBAR)


def test_feature_spelling_is_normalized_too() -> None:
    assert evaluate_marker('"foo::bar" in variant_features', FOOBAR)
    assert not evaluate_marker('"foo::baz" in variant_features', FOOBAR)


def test_combined_with_standard_markers() -> None:
    env = {"python_version": "3.12", "sys_platform": "linux", "platform_machine": "x86_64"}
    marker = parse_marker(
        '(python_version >= "3.11" and "foo" in variant_namespaces) or sys_platform == "win32"'
    )
    assert evaluate_marker(marker, FOOBAR, env)
    assert not evaluate_marker(marker, OTHER, env)
    assert evaluate_marker(marker, OTHER, {**env, "sys_platform": "win32"})
    assert not evaluate_marker(marker, FOOBAR, {**env, "python_version": "3.10"})


def test_extra_marker_still_works() -> None:
    requirement = parse_requirement('cupy; extra == "gpu" and variant_label != "null"')
    assert requirement.marker is not None
    assert evaluate_marker(requirement.marker, FOOBAR, {"extra": "gpu"})
    assert not evaluate_marker(requirement.marker, FOOBAR, {"extra": "cpu"})
    assert not evaluate_marker(requirement.marker, NULL, {"extra": "gpu"})


def test_requirement_parts_are_preserved() -> None:
    requirement = parse_requirement('Fast_Gemm[cuda,extra2] >=1.2,<2; variant_label == "cu12"')
    assert requirement.name == "Fast_Gemm"
    assert requirement.extras == {"cuda", "extra2"}
    assert str(requirement.specifier) == "<2,>=1.2"
    assert str(requirement.marker) == 'variant_label == "cu12"'
    url_requirement = parse_requirement(
        'pkg @ https://example.invalid/pkg-1-py3-none-any.whl ; "a" in variant_namespaces'
    )
    assert url_requirement.url == "https://example.invalid/pkg-1-py3-none-any.whl"
    assert url_requirement.marker is not None
    plain = parse_requirement("numpy>=2")
    assert plain.marker is None
    assert str(plain) == "numpy>=2"


def test_round_trip_through_str() -> None:
    text = 'dep; "foo :: bar :: baz" in variant_properties and variant_label != "null"'
    requirement = parse_requirement(text)
    again = parse_requirement(str(requirement))
    assert str(again) == str(requirement)
    assert again.marker is not None
    assert evaluate_marker(again.marker, FOOBAR)


def test_uses_variant_markers() -> None:
    assert uses_variant_markers(parse_marker('variant_label == "x"'))
    assert uses_variant_markers(parse_marker('"a" in variant_namespaces or os_name == "nt"'))
    assert not uses_variant_markers(parse_marker('os_name == "variant_label"'))
    assert not uses_variant_markers(parse_marker('python_version >= "3"'))


@pytest.mark.parametrize(
    "bad",
    [
        'variant_labels == "x"',  # not a marker name
        'variant_label = "x"',
        '"a" in variant_properties and',
        "variant_label ==",
    ],
)
def test_invalid_markers_are_rejected(bad: str) -> None:
    with pytest.raises(InvalidMarker):
        parse_marker(bad)
    with pytest.raises(InvalidRequirement):
        parse_requirement(f"dep; {bad}")


def test_set_marker_on_the_left_is_an_error() -> None:
    with pytest.raises(UndefinedComparison):
        evaluate_marker('variant_properties == "foo :: bar :: baz"', FOOBAR)


def test_filtering_narrows_to_supported_values() -> None:
    """PEP 825: with only 120_real supported, a 110_real dependency is not selected."""
    metadata = VariantMetadata.build(
        ["nvidia"],
        {"cu": {"nvidia": {"sm_arch": ["110_real", "120_real"]}}},
    )
    marker = parse_marker('"nvidia :: sm_arch :: 110_real" in variant_properties')
    both = SupportedProperties({"nvidia": {"sm_arch": ("120_real", "110_real")}})
    only_new = SupportedProperties({"nvidia": {"sm_arch": ("120_real",)}})
    for machine, expected in ((both, True), (only_new, False)):
        ranked = rank_variants(metadata, machine).get("cu")
        assert ranked is not None
        env = variant_environment("cu", ranked.supported)
        assert evaluate_marker(marker, env) is expected
        # Filtering never removes a whole feature or namespace.
        assert evaluate_marker('"nvidia :: sm_arch" in variant_features', env)
        assert evaluate_marker('"nvidia" in variant_namespaces', env)


_names = st.from_regex(r"[a-z0-9_]{1,8}", fullmatch=True)
_values = st.from_regex(r"[a-z0-9_.]{1,8}", fullmatch=True)


@given(
    ns=_names,
    feature=_names,
    value=_values,
    pads=st.lists(st.sampled_from(["", " ", "  ", "\t"]), min_size=4, max_size=4),
)
def test_any_whitespace_matches(ns: str, feature: str, value: str, pads: list[str]) -> None:
    env = variant_environment("x", [VariantProperty(ns, feature, value)])
    a, b, c, d = pads
    text = f'"{ns}{a}::{b}{feature}{c}::{d}{value}" in variant_properties'
    assert evaluate_marker(text, env)
    assert evaluate_marker(f'"{ns}{a}::{b}{feature}" in variant_features', env)


_STANDARD_REQUIREMENTS = [
    "numpy",
    "numpy>=2",
    "Fast_Gemm[cuda,Extra2] >=1.2,<2",
    "requests[socks] (>=2.0, !=2.1.*) ; python_version >= '3.8' and extra == 'Dev'",
    "pkg @ https://example.invalid/pkg-1-py3-none-any.whl ; os_name == 'nt'",
    'typing-extensions>=4.6; python_version < "3.13" or platform_system != "Windows"',
    "zope.interface==6.*",
    "x===1.0.local",
]


@pytest.mark.parametrize("text", _STANDARD_REQUIREMENTS)
def test_standard_requirements_parse_as_packaging_parses_them(text: str) -> None:
    """Without variant markers, parse_requirement's result is packaging's own, field
    for field (it builds the Requirement from its single parse)."""
    ours, theirs = parse_requirement(text), PackagingRequirement(text)
    assert ours == theirs
    assert str(ours) == str(theirs)
    assert (ours.name, ours.url, ours.extras) == (theirs.name, theirs.url, theirs.extras)
    assert str(ours.specifier) == str(theirs.specifier)
    assert str(ours.marker) == str(theirs.marker)
    for extra in ("", "dev"):
        environment = {"extra": extra}
        if theirs.marker is not None:
            assert ours.marker is not None
            assert ours.marker.evaluate(environment) == theirs.marker.evaluate(environment)


@pytest.mark.parametrize("bad", ["pkg >= ", "pkg[", "pkg ==1.0 ==2.0x", "pkg>=1.0,<"])
def test_invalid_requirements_are_rejected_like_packaging(bad: str) -> None:
    with pytest.raises(InvalidRequirement):
        PackagingRequirement(bad)
    with pytest.raises(InvalidRequirement):
        parse_requirement(bad)


V3 = variant_environment("x86_64_v3", [VariantProperty("x86_64", "level", "v3")])
SETTLED = [
    ('variant_label == "x86_64_v3"', True),
    ('variant_label == "null"', False),
    ('"x86_64 :: level :: v3" in variant_properties and "nvidia" not in variant_namespaces', True),
    ('python_version >= "3.9" and variant_label == "x86_64_v3"', 'python_version >= "3.9"'),
    ('python_version >= "3.9" and variant_label == "null"', False),
    ('python_version >= "3.9" or variant_label == "x86_64_v3"', True),
    ('python_version >= "3.9" or variant_label == "null"', 'python_version >= "3.9"'),
    (
        'os_name == "nt" and "x86_64::level" in variant_features or extra == "GPU"',
        'os_name == "nt" or extra == "gpu"',
    ),
    (
        '(os_name == "nt" or variant_label == "null") and sys_platform == "linux"',
        'os_name == "nt" and sys_platform == "linux"',
    ),
    (
        'sys_platform == "linux" and (os_name == "nt" or (variant_label == "x" or extra == "a"))',
        'sys_platform == "linux" and (os_name == "nt" or extra == "a")',
    ),
    (
        '(sys_platform == "linux" and "x86_64" in variant_namespaces) and os_name == "posix"',
        'sys_platform == "linux" and os_name == "posix"',
    ),
    ('((variant_label == "null" or os_name == "nt"))', 'os_name == "nt"'),
    ('python_version < "3.8"', 'python_version < "3.8"'),
    # packaging compares the variable on the right as its own name: so does the result.
    ("os_name == variant_label", 'os_name == "variant_label"'),
    ('"v3" in variant_label', True),
]


@pytest.mark.parametrize(("text", "expected"), SETTLED)
def test_settle_variant_markers(text: str, expected: str | bool) -> None:
    settled = settle_variant_markers(parse_marker(text), V3)
    if isinstance(expected, bool):
        assert settled is expected
    else:
        assert isinstance(settled, PackagingMarker)
        assert str(settled) == expected
        assert PackagingMarker(str(settled)) == settled


def test_settle_raises_what_evaluation_raises() -> None:
    marker = parse_marker('os_name == "nt" or variant_properties == "a :: b :: c"')
    with pytest.raises(UndefinedComparison):
        evaluate_marker(marker, V3)
    with pytest.raises(UndefinedComparison):
        settle_variant_markers(marker, V3)


_STANDARD_ATOMS = [
    'python_version >= "3.10"',
    'python_version < "3.12"',
    'os_name == "posix"',
    'sys_platform != "win32"',
    'extra == "gpu"',
    'platform_machine in "x86_64 aarch64"',
    '"linux" in sys_platform',
]
_VARIANT_ATOMS = [
    'variant_label == "x86_64_v3"',
    'variant_label != "null"',
    'variant_label == ""',
    '"null" in variant_label',
    '"x86_64 :: level :: v3" in variant_properties',
    '"x86_64::level::v4" not in variant_properties',
    '"x86_64 :: level" in variant_features',
    '"nvidia" in variant_namespaces',
    '"nvidia" not in variant_namespaces',
    "os_name == variant_label",
]
_PROPERTIES = [
    VariantProperty("x86_64", "level", "v3"),
    VariantProperty("x86_64", "level", "v4"),
    VariantProperty("nvidia", "cuda_version_lower_bound", "12.8"),
]


def _joined(parts: list[str], operators: list[str]) -> str:
    text = parts[0]
    for operator, part in zip(operators, parts[1:], strict=True):
        text += f" {operator} {part}"
    return f"({text})"


def _combined(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(inner, min_size=2, max_size=4).flatmap(
        lambda parts: st.lists(
            st.sampled_from(["and", "or"]), min_size=len(parts) - 1, max_size=len(parts) - 1
        ).map(lambda operators: _joined(parts, operators))
    )


_MARKERS = st.recursive(st.sampled_from(_STANDARD_ATOMS + _VARIANT_ATOMS), _combined, max_leaves=12)
_VARIANT_ENVS = st.builds(
    variant_environment,
    st.sampled_from([None, "null", "x86_64_v3", "cu128"]),
    st.lists(st.sampled_from(_PROPERTIES), unique=True),
)
_ENVIRONMENTS = st.fixed_dictionaries(
    {
        "python_version": st.sampled_from(["3.8", "3.10", "3.12"]),
        "os_name": st.sampled_from(["posix", "nt", "variant_label"]),
        "sys_platform": st.sampled_from(["linux", "win32"]),
        "platform_machine": st.sampled_from(["x86_64", "arm64"]),
        "extra": st.sampled_from(["", "gpu"]),
    }
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(text=_MARKERS, variant_env=_VARIANT_ENVS, environment=_ENVIRONMENTS)
def test_settled_marker_evaluates_as_the_original(
    text: str, variant_env: dict[str, str | frozenset[str]], environment: dict[str, str]
) -> None:
    expected = evaluate_marker(text, variant_env, environment)
    settled = settle_variant_markers(parse_marker(text), variant_env)
    if isinstance(settled, bool):
        assert settled is expected
        return
    assert not uses_variant_markers(settled)
    assert settled.evaluate(environment) is expected
    assert PackagingMarker(str(settled)).evaluate(environment) is expected
