"""Wheel filenames with an optional variant label (PEP 825 "Variant label")."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename as PackagingInvalidWheelFilename
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from wheelwise.variants.errors import InvalidWheelFilename, VariantError
from wheelwise.variants.filenames import WheelFilename, variants_json_filename
from wheelwise.variants.labels import NULL_LABEL

PEP_NON_VARIANT = "numpy-2.3.2-cp313-cp313t-musllinux_1_2_x86_64.whl"
PEP_VARIANT = "numpy-2.3.2-cp313-cp313t-musllinux_1_2_x86_64-x86_64_v3.whl"
PEP_NULL = "numpy-2.3.2-cp313-cp313t-musllinux_1_2_x86_64-null.whl"
BUILD_AND_LABEL = "numpy-2.3.2-1-cp313-cp313t-musllinux_1_2_x86_64-x86_64_v3.whl"


# -- PEP 825 examples -----------------------------------------------------------


def test_pep_non_variant() -> None:
    wheel = WheelFilename.parse(PEP_NON_VARIANT)
    assert wheel == WheelFilename(
        "numpy", "2.3.2", None, "cp313", "cp313t", "musllinux_1_2_x86_64", None
    )
    assert wheel.variant_label is None
    assert not wheel.is_variant
    assert not wheel.is_null_variant
    assert str(wheel) == PEP_NON_VARIANT


def test_pep_variant() -> None:
    wheel = WheelFilename.parse(PEP_VARIANT)
    assert wheel == WheelFilename(
        "numpy", "2.3.2", None, "cp313", "cp313t", "musllinux_1_2_x86_64", "x86_64_v3"
    )
    assert wheel.is_variant
    assert not wheel.is_null_variant
    assert wheel.build_tag is None
    assert wheel.build == ()
    assert str(wheel) == PEP_VARIANT


def test_pep_null_variant() -> None:
    wheel = WheelFilename.parse(PEP_NULL)
    assert wheel.variant_label == NULL_LABEL == "null"
    assert wheel.is_variant
    assert wheel.is_null_variant
    assert wheel.platform_tag == "musllinux_1_2_x86_64"
    assert str(wheel) == PEP_NULL


def test_build_tag_and_label() -> None:
    wheel = WheelFilename.parse(BUILD_AND_LABEL)
    assert wheel == WheelFilename(
        "numpy", "2.3.2", "1", "cp313", "cp313t", "musllinux_1_2_x86_64", "x86_64_v3"
    )
    assert wheel.build == (1, "")
    assert wheel.is_variant
    assert str(wheel) == BUILD_AND_LABEL


def test_build_tag_without_label() -> None:
    text = "numpy-2.3.2-1-cp313-cp313t-musllinux_1_2_x86_64.whl"
    wheel = WheelFilename.parse(text)
    assert wheel.build_tag == "1"
    assert wheel.python_tag == "cp313"
    assert wheel.abi_tag == "cp313t"
    assert wheel.platform_tag == "musllinux_1_2_x86_64"
    assert wheel.variant_label is None
    assert not wheel.is_variant
    assert str(wheel) == text


def test_six_parts_with_digit_third_part_is_a_build_tag() -> None:
    # A Python tag never starts with a digit, so the third part is a build tag.
    wheel = WheelFilename.parse("foo-1.0-2-py3-none-any.whl")
    assert (wheel.build_tag, wheel.python_tag, wheel.variant_label) == ("2", "py3", None)
    # ...even if what follows would also read as tags plus a label.
    wheel = WheelFilename.parse("foo-1.0-3-none-any-lbl.whl")
    assert (wheel.build_tag, wheel.python_tag, wheel.abi_tag) == ("3", "none", "any")
    assert wheel.platform_tag == "lbl"
    assert wheel.variant_label is None


def test_six_parts_with_non_digit_third_part_has_a_label() -> None:
    wheel = WheelFilename.parse("foo-1.0-py3-none-any-1.whl")
    assert (wheel.build_tag, wheel.python_tag, wheel.variant_label) == (None, "py3", "1")


# -- exact round trips --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        PEP_NON_VARIANT,
        PEP_VARIANT,
        PEP_NULL,
        BUILD_AND_LABEL,
        "foo-1.0-py3-none-any.whl",
        "foo-1.0-py2.py3-none-any.whl",
        "foo-1.0-py2.py3-none-any-null.whl",
        "foo-1.0-123abc-py2.py3-none-any-x86_64_v3.whl",
        "numpy-2.3.2-cp313-cp313-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "numpy-2.3.2-cp313-cp313-manylinux_2_17_x86_64.manylinux2014_x86_64-cu12.8.whl",
        "torch-2.8.0-7-cp313-cp313-manylinux_2_28_x86_64-cu12.8.whl",
        "torch-2.8.0-cp313-cp313-win_amd64-cu12.8.whl",
        "Foo_Bar-1.0-py3-none-any.whl",
        "Foo.Bar-01.00-py3-none-any-a.b.c.whl",
        "foo-1.0.post1.dev2+local.1-py3-none-any.whl",
        "foo-1!2.0rc1-py3-none-any-5d8be4b9.whl",
        "foo-1.0-py3-none-any-...whl",
        "foo-1.0-1x-py3-none-any.whl",
        "foo-1.0-1_x.y-py3-none-any-lbl.whl",
        "foo-1.0-cp38.cp39-abi3.none-macosx_10_9_x86_64.macosx_11_0_arm64-0.whl",
    ],
)
def test_round_trip_exact(text: str) -> None:
    wheel = WheelFilename.parse(text)
    assert str(wheel) == text
    assert WheelFilename.parse(str(wheel)) == wheel


def test_compressed_tags() -> None:
    wheel = WheelFilename.parse("foo-1.0-py2.py3-none-any-lbl.whl")
    assert wheel.python_tag == "py2.py3"
    assert wheel.tags == frozenset({Tag("py2", "none", "any"), Tag("py3", "none", "any")})
    assert isinstance(wheel.tags, frozenset)

    wheel = WheelFilename.parse(
        "numpy-2.3.2-cp313-cp313-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    )
    assert wheel.platform_tag == "manylinux_2_17_x86_64.manylinux2014_x86_64"
    assert wheel.tags == frozenset(
        {
            Tag("cp313", "cp313", "manylinux_2_17_x86_64"),
            Tag("cp313", "cp313", "manylinux2014_x86_64"),
        }
    )
    assert wheel.variant_label is None


def test_label_with_dots() -> None:
    wheel = WheelFilename.parse("torch-2.8.0-cp313-cp313-manylinux_2_28_x86_64-cu12.8.whl")
    assert wheel.variant_label == "cu12.8"
    assert wheel.platform_tag == "manylinux_2_28_x86_64"
    assert wheel.tags == frozenset({Tag("cp313", "cp313", "manylinux_2_28_x86_64")})


def test_tags_ignore_the_label() -> None:
    plain = WheelFilename.parse(PEP_NON_VARIANT)
    variant = WheelFilename.parse(PEP_VARIANT)
    assert plain.tags == variant.tags == frozenset({Tag("cp313", "cp313t", "musllinux_1_2_x86_64")})


# -- derived properties ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("distribution", "name"),
    [
        ("Foo_Bar", "foo-bar"),
        ("foo_bar", "foo-bar"),
        ("Foo.Bar", "foo-bar"),
        ("FOO", "foo"),
        ("numpy", "numpy"),
        ("a_b.c", "a-b-c"),
    ],
)
def test_name_is_normalized(distribution: str, name: str) -> None:
    wheel = WheelFilename.parse(f"{distribution}-1.0-py3-none-any-lbl.whl")
    assert wheel.distribution == distribution
    assert wheel.name == name


def test_version() -> None:
    wheel = WheelFilename.parse("foo-01.0.0rc1-py3-none-any.whl")
    assert wheel.version_text == "01.0.0rc1"
    assert wheel.version == Version("1.0.0rc1")
    assert isinstance(wheel.version, Version)
    assert str(wheel) == "foo-01.0.0rc1-py3-none-any.whl"


@pytest.mark.parametrize(
    ("build_tag", "build"),
    [("1", (1, "")), ("123abc", (123, "abc")), ("007", (7, "")), ("2_x", (2, "_x"))],
)
def test_build(build_tag: str, build: tuple[int, str]) -> None:
    with_label = WheelFilename.parse(f"foo-1.0-{build_tag}-py3-none-any-lbl.whl")
    without = WheelFilename.parse(f"foo-1.0-{build_tag}-py3-none-any.whl")
    assert with_label.build_tag == without.build_tag == build_tag
    assert with_label.build == without.build == build


def test_no_build() -> None:
    assert WheelFilename.parse(PEP_NULL).build == ()
    assert WheelFilename.parse(PEP_NULL).build_tag is None


def test_is_frozen_and_hashable() -> None:
    wheel = WheelFilename.parse(PEP_VARIANT)
    with pytest.raises(dataclasses.FrozenInstanceError):
        wheel.variant_label = "other"  # type: ignore[misc]
    assert wheel == WheelFilename.parse(PEP_VARIANT)
    assert hash(wheel) == hash(WheelFilename.parse(PEP_VARIANT))
    assert len({wheel, WheelFilename.parse(PEP_VARIANT), WheelFilename.parse(PEP_NULL)}) == 2


def test_with_variant_and_without_variant() -> None:
    plain = WheelFilename.parse(PEP_NON_VARIANT)
    variant = plain.with_variant("x86_64_v3")
    assert str(variant) == PEP_VARIANT
    assert variant == WheelFilename.parse(PEP_VARIANT)
    assert variant.is_variant
    assert str(variant.without_variant()) == PEP_NON_VARIANT
    assert variant.without_variant() == plain
    assert str(plain.with_variant(NULL_LABEL)) == PEP_NULL
    assert plain.with_variant(NULL_LABEL).is_null_variant
    assert plain.with_variant(None) == plain
    assert plain.without_variant() == plain
    # The original is untouched.
    assert plain.variant_label is None
    assert str(plain) == PEP_NON_VARIANT


def test_with_variant_keeps_build_tag() -> None:
    wheel = WheelFilename.parse(BUILD_AND_LABEL)
    assert str(wheel.with_variant("cu12.8")) == (
        "numpy-2.3.2-1-cp313-cp313t-musllinux_1_2_x86_64-cu12.8.whl"
    )
    assert str(wheel.without_variant()) == "numpy-2.3.2-1-cp313-cp313t-musllinux_1_2_x86_64.whl"
    assert wheel.without_variant().build == (1, "")


@pytest.mark.parametrize("label", ["", "X86_64_v3", "a-b", "a b", "null\n", "ä"])
def test_with_variant_rejects_invalid_labels(label: str) -> None:
    wheel = WheelFilename.parse(PEP_NON_VARIANT)
    with pytest.raises(VariantError) as info:
        wheel.with_variant(label)
    assert repr(label) in str(info.value)


# -- rejected filenames ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # Python tag starting with a digit
        "foo-1.0-3-none-any.whl",
        "foo-1.0-3py-none-any.whl",
        "foo-1.0-1-3py-none-any.whl",
        "foo-1.0-1-3py-none-any-lbl.whl",
        "foo-1.0-1-313-cp313-any-x86_64_v3.whl",
        # invalid labels
        "foo-1.0-py3-none-any-X86_64_v3.whl",
        "foo-1.0-py3-none-any-Null.whl",
        "foo-1.0-py3-none-any-.whl",
        "foo-1.0-1-py3-none-any-.whl",
        "foo-1.0-1-py3-none-any-LBL.whl",
        "foo-1.0-py3-none-any-a+b.whl",
        "foo-1.0-py3-none-any-ä.whl",
        "foo-1.0-py3-none-any-a b.whl",
        # a '-' inside the label makes too many components
        "foo-1.0-1-py3-none-any-x86-64.whl",
        # wrong number of components
        "foo-py3-none-any.whl",
        "foo-1.0-none-any.whl",
        "foo-1.0-1-2-py3-none-any-lbl.whl",
        "a-b-c-d-e-f-g-h.whl",
        "foo.whl",
        ".whl",
        # missing / wrong extension
        "foo-1.0-py3-none-any",
        "foo-1.0-py3-none-any.zip",
        "foo-1.0-py3-none-any.WHL",
        "foo-1.0-py3-none-any-null",
        "foo-1.0-py3-none-any.whl.tmp",
        # other invalid parts (packaging's rules)
        "foo-1.0-x1-py3-none-any-lbl.whl",
        "foo-not@version-py3-none-any.whl",
        "foo__bar-1.0-py3-none-any.whl",
        "-1.0-py3-none-any.whl",
        "foo--py3-none-any.whl",
        "foo-1.0--none-any.whl",
        "foo-1.0-py3--any-lbl.whl",
        "foo-1.0-py3-none--lbl.whl",
        "foo-1.0-py3..py2-none-any.whl",
    ],
)
def test_rejects(text: str) -> None:
    with pytest.raises(InvalidWheelFilename) as info:
        WheelFilename.parse(text)
    assert repr(text) in str(info.value)
    assert isinstance(info.value, VariantError)
    assert isinstance(info.value, ValueError)


def test_rejects_digit_python_tag_with_reason() -> None:
    with pytest.raises(InvalidWheelFilename, match="must not start with a digit") as info:
        WheelFilename.parse("foo-1.0-3-none-any.whl")
    assert "'3'" in str(info.value)


def test_rejects_invalid_label_with_reason() -> None:
    with pytest.raises(InvalidWheelFilename) as info:
        WheelFilename.parse("foo-1.0-py3-none-any-X86.whl")
    assert "'X86'" in str(info.value)
    assert "foo-1.0-py3-none-any-X86.whl" in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "foo-1.0-py3.whl",  # 3 components
        "foo-1.0-py3-none.whl",  # 4 components
        "foo-1.0-1-py3-none-any-lbl-x.whl",  # 8 components
        "foo-1.0-1-py3-none-any-lbl-x-y.whl",  # 9 components
    ],
)
def test_rejects_wrong_component_count(text: str) -> None:
    with pytest.raises(InvalidWheelFilename, match="expected") as info:
        WheelFilename.parse(text)
    assert repr(text) in str(info.value)


def test_missing_whl_is_rejected_with_reason() -> None:
    with pytest.raises(InvalidWheelFilename, match=r"\.whl") as info:
        WheelFilename.parse("numpy-2.3.2-cp313-cp313t-musllinux_1_2_x86_64-x86_64_v3")
    assert "numpy-2.3.2-cp313-cp313t-musllinux_1_2_x86_64-x86_64_v3" in str(info.value)


# -- variants_json_filename -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "version", "expected"),
    [
        ("Foo.Bar", "1.0", "foo_bar-1.0-variants.json"),
        ("foo-bar", "1.0", "foo_bar-1.0-variants.json"),
        ("Foo__Bar", "1.0", "foo_bar-1.0-variants.json"),
        ("foo._-bar", "1.0", "foo_bar-1.0-variants.json"),
        ("numpy", "2.3.2", "numpy-2.3.2-variants.json"),
        ("numpy", "1.0.0-rc1", "numpy-1.0.0rc1-variants.json"),
        ("numpy", "1.0.0-RC.1", "numpy-1.0.0rc1-variants.json"),
        ("numpy", "01.00", "numpy-1.0-variants.json"),
        ("numpy", "v1.0", "numpy-1.0-variants.json"),
        ("numpy", "1.0-post2", "numpy-1.0.post2-variants.json"),
        ("numpy", "1.0+Local-1", "numpy-1.0+local.1-variants.json"),
        ("numpy", "1.0-dev", "numpy-1.0.dev0-variants.json"),
    ],
)
def test_variants_json_filename(name: str, version: str, expected: str) -> None:
    assert variants_json_filename(name, version) == expected


def test_variants_json_filename_accepts_version_objects() -> None:
    assert variants_json_filename("Foo.Bar", Version("1.0.0-rc1")) == (
        "foo_bar-1.0.0rc1-variants.json"
    )


def test_variants_json_filename_matches_wheel() -> None:
    wheel = WheelFilename.parse("Foo.Bar-01.0-py3-none-any-lbl.whl")
    assert variants_json_filename(wheel.name, wheel.version) == "foo_bar-1.0-variants.json"


def test_variants_json_filename_rejects_bad_version() -> None:
    with pytest.raises(ValueError, match="not a version"):
        variants_json_filename("foo", "not a version")


# -- hypothesis -----------------------------------------------------------------------

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
distributions = st.from_regex(
    r"[A-Za-z0-9]([A-Za-z0-9._]{0,10}[A-Za-z0-9])?", fullmatch=True
).filter(lambda s: "__" not in s)
versions = st.builds(
    lambda release, pre, post, dev, local: ".".join(map(str, release)) + pre + post + dev + local,
    st.lists(st.integers(0, 2000), min_size=1, max_size=4),
    st.sampled_from(["", "a1", "b2", "rc0", "rc10"]),
    st.sampled_from(["", ".post1", ".post23"]),
    st.sampled_from(["", ".dev0", ".dev4"]),
    st.sampled_from(["", "+local", "+ubuntu.1", "+cu128"]),
)
builds = st.none() | st.from_regex(r"[0-9]{1,3}[a-z0-9_.]{0,4}", fullmatch=True)
python_component = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
tag_component = st.from_regex(r"[a-z0-9_]{1,12}", fullmatch=True)


def compressed(component: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(component, min_size=1, max_size=3).map(".".join)


python_tags = compressed(python_component) | st.sampled_from(["py3", "cp313", "py2.py3"])
abi_tags = compressed(tag_component) | st.sampled_from(["none", "abi3", "cp313t"])
platform_tags = compressed(tag_component) | st.sampled_from(
    ["any", "manylinux_2_17_x86_64.manylinux2014_x86_64", "win_amd64"]
)
labels = st.none() | st.from_regex(r"[a-z0-9_.]{1,12}", fullmatch=True) | st.just("null")


@st.composite
def wheel_parts(
    draw: st.DrawFn,
) -> tuple[str, str, str | None, str, str, str, str | None]:
    return (
        draw(distributions),
        draw(versions),
        draw(builds),
        draw(python_tags),
        draw(abi_tags),
        draw(platform_tags),
        draw(labels),
    )


def join(parts: tuple[str, str, str | None, str, str, str, str | None]) -> str:
    return "-".join(p for p in parts if p is not None) + ".whl"


@pytest.mark.slow
@given(wheel_parts())
def test_hypothesis_round_trip(
    parts: tuple[str, str, str | None, str, str, str, str | None],
) -> None:
    text = join(parts)
    wheel = WheelFilename.parse(text)
    assert str(wheel) == text
    assert dataclasses.astuple(wheel) == parts
    assert wheel.is_variant == (parts[6] is not None)
    assert wheel.is_null_variant == (parts[6] == "null")
    assert WheelFilename(*parts) == wheel


@pytest.mark.slow
@given(wheel_parts())
def test_hypothesis_agrees_with_packaging(
    parts: tuple[str, str, str | None, str, str, str, str | None],
) -> None:
    wheel = WheelFilename.parse(join(parts))
    name, version, build, tags = parse_wheel_filename(str(wheel.without_variant()))
    assert wheel.name == name
    assert wheel.version == version
    assert wheel.build == build
    assert wheel.tags == tags


@pytest.mark.slow
@given(wheel_parts(), labels)
def test_hypothesis_with_variant(
    parts: tuple[str, str, str | None, str, str, str, str | None], label: str | None
) -> None:
    wheel = WheelFilename.parse(join(parts))
    relabelled = wheel.with_variant(label)
    assert relabelled.variant_label == label
    assert str(relabelled) == join((*parts[:6], label))
    assert WheelFilename.parse(str(relabelled)) == relabelled
    assert relabelled.without_variant() == wheel.without_variant()
    assert relabelled.tags == wheel.tags
    assert relabelled.build == wheel.build


@pytest.mark.slow
@given(
    wheel_parts(),
    st.text(alphabet="ABZ-+ /@ä", min_size=1, max_size=3),
    st.integers(0, 3),
)
def test_hypothesis_invalid_label_rejected(
    parts: tuple[str, str, str | None, str, str, str, str | None], junk: str, where: int
) -> None:
    label = parts[6] or "lbl"
    bad = label[:where] + junk + label[where:]
    text = join((*parts[:6], bad))
    with pytest.raises(InvalidWheelFilename) as info:
        WheelFilename.parse(text)
    assert repr(text) in str(info.value)


@pytest.mark.slow
@given(wheel_parts(), st.sampled_from("0123456789"))
def test_hypothesis_digit_python_tag_rejected(
    parts: tuple[str, str, str | None, str, str, str, str | None], digit: str
) -> None:
    text = join((*parts[:3], digit + parts[3], *parts[4:]))
    if parts[2] is None and parts[6] is not None:
        # name-version-Dpy-abi-plat-label: six parts with a digit third part read
        # as a build tag; whatever the outcome, no Python tag starts with a digit.
        try:
            parse_wheel_filename(text)
        except PackagingInvalidWheelFilename:
            valid = False
        else:
            valid = not parts[4][:1].isdigit()  # the abi tag now sits in the Python slot
        if valid:
            wheel = WheelFilename.parse(text)
            assert wheel.build_tag == digit + parts[3]
            assert wheel.python_tag == parts[4]
            assert wheel.variant_label is None
            assert str(wheel) == text
        else:
            with pytest.raises(InvalidWheelFilename) as info:
                WheelFilename.parse(text)
            assert repr(text) in str(info.value)
        return
    with pytest.raises(InvalidWheelFilename) as info:
        WheelFilename.parse(text)
    assert repr(text) in str(info.value)
