"""PEP 825 "Metadata consistency": merging variant.json / *-variants.json documents."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelwise.variants import (
    PEP825_SCHEMA_URL,
    MetadataConflict,
    ProviderInfo,
    SchemaVersion,
    VariantMetadata,
    merge,
)
from wheelwise.variants.merging import merge_two

LEGACY_URL = "https://variants-schema.wheelnext.dev/v0.0.3.json"

PropertyMap = dict[str, dict[str, list[str]]]

OPENBLAS: PropertyMap = {"blas_lapack": {"library": ["openblas"]}, "x86_64": {"level": ["v3"]}}
MKL: PropertyMap = {"blas_lapack": {"library": ["mkl"]}, "x86_64": {"level": ["v4"]}}


def doc(namespaces: list[str], variants: dict[str, PropertyMap], source: str) -> VariantMetadata:
    return VariantMetadata.build(namespaces, variants, source=source)


def legacy(
    namespaces: list[str],
    variants: dict[str, PropertyMap],
    source: str,
    **extra: Any,
) -> VariantMetadata:
    body: dict[str, Any] = {
        "$schema": LEGACY_URL,
        "default-priorities": {"namespace": namespaces},
        "variants": variants,
    }
    for key, value in extra.items():
        if key in ("feature", "property"):
            body["default-priorities"][key] = value
        else:
            body[key.replace("_", "-")] = value
    return VariantMetadata.from_dict(body, source=source)


def both_orders(a: VariantMetadata, b: VariantMetadata) -> list[VariantMetadata]:
    return [merge([a, b]), merge([b, a])]


# --------------------------------------------------------------------------------------
# default-priorities.namespace
# --------------------------------------------------------------------------------------


class TestNamespaces:
    def test_identical(self) -> None:
        a = doc(["x86_64", "blas_lapack"], {"o": OPENBLAS}, "a.whl")
        b = doc(["x86_64", "blas_lapack"], {"m": MKL}, "b.whl")
        for merged in both_orders(a, b):
            assert merged.namespaces == ("x86_64", "blas_lapack")

    @pytest.mark.parametrize(
        ("short", "long"),
        [
            (["x86_64"], ["x86_64", "blas_lapack"]),
            (["x86_64"], ["x86_64", "aarch64", "blas_lapack"]),
            (["x86_64", "aarch64"], ["x86_64", "aarch64", "blas_lapack"]),
        ],
    )
    def test_longer_wins_in_either_order(self, short: list[str], long: list[str]) -> None:
        a = doc(short, {"v3": {"x86_64": {"level": ["v3"]}}}, "short.whl")
        b = doc(long, {"null": {}}, "long.whl")
        for merged in both_orders(a, b):
            assert merged.namespaces == tuple(long)
            assert set(merged.labels) == {"v3", "null"}

    def test_chain_of_extensions(self) -> None:
        docs = [
            doc(["a"], {"l1": {}}, "1"),
            doc(["a", "b", "c"], {"l3": {}}, "3"),
            doc(["a", "b"], {"l2": {}}, "2"),
        ]
        for perm in itertools.permutations(docs):
            assert merge(perm).namespaces == ("a", "b", "c")

    @pytest.mark.parametrize(
        ("left", "right"),
        [
            (["x86_64", "blas_lapack"], ["blas_lapack", "x86_64"]),
            (["x86_64", "aarch64"], ["x86_64", "blas_lapack"]),
            (["x86_64"], ["aarch64", "x86_64"]),
            (["x86_64", "aarch64", "blas_lapack"], ["x86_64", "blas_lapack"]),
        ],
    )
    def test_conflict_names_both_sources(self, left: list[str], right: list[str]) -> None:
        a = doc(left, {"null": {}}, "dist/left-variant.json")
        b = doc(right, {"null": {}}, "dist/right-variant.json")
        for first, second in ((a, b), (b, a)):
            with pytest.raises(MetadataConflict) as info:
                merge([first, second])
            message = str(info.value)
            assert "default-priorities.namespace" in message
            assert "dist/left-variant.json" in message
            assert "dist/right-variant.json" in message
            assert str(left) in message
            assert str(right) in message

    def test_conflict_with_third_document(self) -> None:
        # a+b and a+c are each fine, b and c are not.
        a = doc(["x"], {}, "a")
        b = doc(["x", "y"], {}, "b")
        c = doc(["x", "z"], {}, "c")
        assert merge([a, b]).namespaces == ("x", "y")
        assert merge([a, c]).namespaces == ("x", "z")
        for perm in itertools.permutations([a, b, c]):
            with pytest.raises(MetadataConflict):
                merge(perm)


# --------------------------------------------------------------------------------------
# variants
# --------------------------------------------------------------------------------------


class TestVariants:
    def test_union(self, variant_schema_validator: Any) -> None:
        ns = ["x86_64", "aarch64", "blas_lapack"]
        wheels = [
            doc(ns, {"x86_64_v3_openblas": OPENBLAS}, "foo-1.2.3-...-x86_64_v3_openblas.whl"),
            doc(ns, {"x86_64_v4_mkl": MKL}, "foo-1.2.3-...-x86_64_v4_mkl.whl"),
            doc(ns, {"null": {}}, "foo-1.2.3-...-null.whl"),
        ]
        merged = merge(wheels)
        expected = VariantMetadata.build(
            ns, {"x86_64_v3_openblas": OPENBLAS, "x86_64_v4_mkl": MKL, "null": {}}
        )
        assert merged == expected
        assert merged.to_json() == expected.to_json()
        variant_schema_validator.validate(json.loads(merged.to_json()))

    def test_same_label_same_properties_is_fine(self) -> None:
        a = doc(["x86_64", "blas_lapack"], {"o": OPENBLAS}, "a")
        b = doc(["x86_64", "blas_lapack"], {"o": OPENBLAS, "m": MKL}, "b")
        for merged in both_orders(a, b):
            assert merged.variants == b.variants

    def test_same_properties_spelled_differently_is_fine(self) -> None:
        ns = ["x86_64", "blas_lapack"]
        a = doc(ns, {"o": {"x86_64": {"level": ["v3", "v2"]}}}, "a")
        b = doc(ns, {"o": {"x86_64": {"level": ["v2", "v3", "v2"]}}}, "b")
        c = doc(ns, {"o": {"x86_64": {"level": ["v2", "v3"]}, "blas_lapack": {}}}, "c")
        assert merge([a, b, c]).variants == a.variants

    @pytest.mark.parametrize(
        ("left", "right"),
        [
            (OPENBLAS, MKL),
            (OPENBLAS, {"x86_64": {"level": ["v3"]}}),
            (OPENBLAS, {}),
            ({"x86_64": {"level": ["v3"]}}, {"x86_64": {"level": ["v3", "v4"]}}),
            ({"x86_64": {"level": ["v3"]}}, {"blas_lapack": {"level": ["v3"]}}),
        ],
    )
    def test_same_label_different_properties(self, left: PropertyMap, right: PropertyMap) -> None:
        ns = ["x86_64", "blas_lapack"]
        a = doc(ns, {"shared_label": left, "only_a": {}}, "wheels/a.whl")
        b = doc(ns, {"shared_label": right, "only_b": {}}, "wheels/b.whl")
        for first, second in ((a, b), (b, a)):
            with pytest.raises(MetadataConflict) as info:
                merge([first, second])
            message = str(info.value)
            assert "'shared_label'" in message
            assert "wheels/a.whl" in message
            assert "wheels/b.whl" in message
            # Both property sets are spelled out.
            for props in (left, right):
                for namespace, features in props.items():
                    for feature, values in features.items():
                        for value in values:
                            assert f"{namespace} :: {feature} :: {value}" in message
            if not left or not right:
                assert "no properties" in message

    def test_conflict_against_accumulated_sources(self) -> None:
        ns = ["x86_64", "blas_lapack"]
        a = doc(ns, {"o": OPENBLAS}, "a.whl")
        b = doc(ns, {"m": MKL}, "b.whl")
        c = doc(ns, {"o": MKL}, "c.whl")
        with pytest.raises(MetadataConflict) as info:
            merge([a, b, c])
        assert "a.whl" in str(info.value)
        assert "c.whl" in str(info.value)

    def test_index_and_wheels_consistent(self) -> None:
        ns = ["x86_64", "aarch64", "blas_lapack"]
        index = doc(ns, {"x86_64_v3_openblas": OPENBLAS, "x86_64_v4_mkl": MKL, "null": {}}, "idx")
        wheel = doc(ns, {"x86_64_v3_openblas": OPENBLAS}, "whl")
        assert merge([index, wheel]) == index
        assert merge([wheel, index]) == index


# --------------------------------------------------------------------------------------
# Legacy data
# --------------------------------------------------------------------------------------


PROVIDERS = {
    "x86_64": {"requires": ["provider-variant-x86-64 >=0.0.1"]},
    "blas_lapack": {"install-time": False, "requires": ["blas-lapack-variant-provider"]},
}


class TestLegacy:
    def test_providers_union(self) -> None:
        a = legacy(["x86_64"], {"a": {}}, "a", providers={"x86_64": PROVIDERS["x86_64"]})
        b = legacy(["x86_64", "blas_lapack"], {"b": {}}, "b", providers=PROVIDERS)
        for merged in both_orders(a, b):
            assert set(merged.providers) == {"x86_64", "blas_lapack"}
            assert merged.providers["blas_lapack"].install_time is False
            assert merged.is_legacy

    def test_providers_conflict(self) -> None:
        other = {**PROVIDERS, "x86_64": {"requires": ["other-provider"]}}
        a = legacy(["x86_64", "blas_lapack"], {}, "a/variant.json", providers=PROVIDERS)
        b = legacy(["x86_64", "blas_lapack"], {}, "b/variant.json", providers=other)
        for first, second in ((a, b), (b, a)):
            with pytest.raises(MetadataConflict) as info:
                merge([first, second])
            message = str(info.value)
            assert "provider" in message
            assert "'x86_64'" in message
            assert "a/variant.json" in message
            assert "b/variant.json" in message
            assert "other-provider" in message

    def test_optional_flag_conflict(self) -> None:
        a = legacy(["x"], {}, "a", providers={"x": {"requires": ["p"]}})
        b = legacy(["x"], {}, "b", providers={"x": {"requires": ["p"], "optional": True}})
        with pytest.raises(MetadataConflict, match="'x'"):
            merge([a, b])

    @pytest.mark.parametrize(
        ("key", "left", "right", "what"),
        [
            (
                "static_properties",
                {"x": {"f": ["1", "2"]}},
                {"x": {"f": ["2", "1"]}},
                "static-properties",
            ),
            ("feature", {"x": ["f", "g"]}, {"x": ["g", "f"]}, "default-priorities.feature"),
            ("property", {"x": {"f": ["1"]}}, {"x": {"f": ["2"]}}, "default-priorities.property"),
        ],
    )
    def test_other_legacy_conflicts(self, key: str, left: Any, right: Any, what: str) -> None:
        a = legacy(["x"], {}, "left.json", **{key: left})
        b = legacy(["x"], {}, "right.json", **{key: right})
        with pytest.raises(MetadataConflict) as info:
            merge([a, b])
        message = str(info.value)
        assert what in message
        assert "'x'" in message
        assert "left.json" in message
        assert "right.json" in message
        # The same data merges fine and is kept.
        merged = merge([a, legacy(["x", "y"], {}, "same.json", **{key: left})])
        assert merged == merge([legacy(["x", "y"], {}, "same.json", **{key: left}), a])
        assert merged.namespaces == ("x", "y")

    def test_legacy_and_pep825_mix(self) -> None:
        old = legacy(["x86_64", "blas_lapack"], {"o": OPENBLAS}, "old", providers=PROVIDERS)
        new = doc(["x86_64", "blas_lapack"], {"m": MKL}, "new")
        for merged in both_orders(old, new):
            assert set(merged.labels) == {"o", "m"}
            assert merged.providers == old.providers
            # The newest schema of the inputs, whatever the order.
            assert merged.schema == SchemaVersion(0, 1, 1, legacy=False)
            assert json.loads(merged.to_json())["$schema"] == PEP825_SCHEMA_URL

    def test_provider_info_kept_verbatim(self) -> None:
        block = {"requires": ["p"], "future": {"x": 1}}
        a = legacy(["x"], {}, "a", providers={"x": block})
        b = legacy(["x"], {}, "b", providers={"x": block})
        assert merge([a, b]).providers == {
            "x": ProviderInfo(requires=("p",), unknown={"future": {"x": 1}})
        }


# --------------------------------------------------------------------------------------
# merge() itself
# --------------------------------------------------------------------------------------


class TestMergeApi:
    def test_single_document_is_identity(self) -> None:
        a = legacy(["x86_64", "blas_lapack"], {"o": OPENBLAS}, "only.json", providers=PROVIDERS)
        merged = merge([a])
        assert merged == a
        assert merged.source == "only.json"
        assert merged.to_json() == a.to_json()

    def test_merge_with_itself_is_identity(self) -> None:
        a = doc(["x86_64", "blas_lapack"], {"o": OPENBLAS, "null": {}}, "self.json")
        assert merge([a, a, a]) == a
        assert merge([a, a]).source == "self.json"

    def test_empty_input_raises(self) -> None:
        with pytest.raises(ValueError, match="at least one"):
            merge([])
        with pytest.raises(ValueError, match="at least one"):
            merge(iter(()))

    def test_accepts_any_iterable(self) -> None:
        docs = (doc(["x"], {f"l{i}": {}}, f"s{i}") for i in range(3))
        assert set(merge(docs).labels) == {"l0", "l1", "l2"}

    def test_inputs_not_modified(self) -> None:
        a = doc(["x86_64", "blas_lapack"], {"o": OPENBLAS}, "a")
        b = doc(["x86_64", "blas_lapack", "aarch64"], {"m": MKL}, "b")
        a_before, b_before = a.to_json(), b.to_json()
        merge([a, b])
        assert (a.to_json(), b.to_json()) == (a_before, b_before)
        assert a.labels == ("o",)

    def test_sources_are_joined_and_sorted(self) -> None:
        a = doc(["x"], {}, "b.whl")
        b = doc(["x"], {}, "a.whl")
        c = doc(["x"], {}, "c.whl")
        assert merge([a, b, c]).source == "a.whl + b.whl + c.whl"
        assert merge([c, merge([b, a])]).source == "a.whl + b.whl + c.whl"

    def test_merge_two_matches_merge(self) -> None:
        a = doc(["x86_64"], {"v3": {"x86_64": {"level": ["v3"]}}}, "a")
        b = doc(["x86_64", "blas_lapack"], {"o": OPENBLAS}, "b")
        assert merge_two(a, b) == merge([a, b])


# --------------------------------------------------------------------------------------
# Hypothesis: consistent documents merge commutatively and associatively
# --------------------------------------------------------------------------------------

NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"
NAMES = st.text(NAME_CHARS, min_size=1, max_size=6)
VALUES = st.text(NAME_CHARS + ".", min_size=1, max_size=6)
LABELS = st.text(NAME_CHARS + ".", min_size=1, max_size=8).filter(lambda s: s != "null")

Universe = tuple[list[str], dict[str, PropertyMap]]


@st.composite
def universes(draw: st.DrawFn) -> Universe:
    """A release: its full namespace list and every label with its properties."""
    namespaces = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
    property_maps = st.dictionaries(
        st.sampled_from(namespaces),
        st.dictionaries(NAMES, st.lists(VALUES, min_size=1, max_size=3), min_size=1, max_size=2),
        max_size=3,
    )
    labels = draw(st.dictionaries(LABELS, property_maps, min_size=1, max_size=8))
    if draw(st.booleans()):
        labels["null"] = {}
    return namespaces, labels


@st.composite
def sub_documents(draw: st.DrawFn, universe: Universe, source: str) -> VariantMetadata:
    """One consistent document: a prefix of the namespace list and a subset of the labels."""
    namespaces, labels = universe
    chosen = draw(st.lists(st.sampled_from(sorted(labels)), unique=True, max_size=len(labels)))
    used = {ns for label in chosen for ns in labels[label]}
    needed = max((namespaces.index(ns) + 1 for ns in used), default=1)
    length = draw(st.integers(min_value=needed, max_value=len(namespaces)))
    return VariantMetadata.build(
        namespaces[:length], {label: labels[label] for label in chosen}, source=source
    )


@st.composite
def consistent_documents(
    draw: st.DrawFn, min_count: int = 1
) -> tuple[Universe, list[VariantMetadata]]:
    universe = draw(universes())
    count = draw(st.integers(min_value=min_count, max_value=4))
    docs = [draw(sub_documents(universe, f"doc{i}.json")) for i in range(count)]
    return universe, docs


@pytest.mark.slow
@settings(max_examples=150)
@given(consistent_documents(), st.data())
def test_merge_is_commutative(
    variant_schema_validator: Any,
    case: tuple[Universe, list[VariantMetadata]],
    data: st.DataObject,
) -> None:
    (namespaces, labels), docs = case
    merged = merge(docs)
    expected_dict = merged.to_dict()
    for perm in itertools.permutations(docs):
        result = merge(perm)
        assert result.to_dict() == expected_dict
        assert result == merged
        assert result.to_json() == merged.to_json()
    # The result is exactly what the consistency rules say.
    longest = max(len(d.namespaces) for d in docs)
    assert merged.namespaces == tuple(namespaces[:longest])
    assert set(merged.labels) == {label for d in docs for label in d.labels}
    for label in merged.labels:
        assert (
            merged.variants[label]
            == VariantMetadata.build(namespaces, {label: labels[label]}).variants[label]
        )
    variant_schema_validator.validate(expected_dict)
    # And it is consistent with every input.
    for d in docs:
        assert merge([merged, d]) == merged
    shuffled = data.draw(st.permutations(docs))
    assert merge(shuffled).to_dict() == expected_dict


@pytest.mark.slow
@settings(max_examples=150)
@given(consistent_documents(min_count=3))
def test_merge_is_associative(case: tuple[Universe, list[VariantMetadata]]) -> None:
    _, docs = case
    a, b, c = docs[:3]
    left = merge([merge([a, b]), c])
    right = merge([a, merge([b, c])])
    assert left == right
    assert left.to_dict() == right.to_dict()
    assert left == merge([a, b, c])
    assert merge([merge([a, c]), b]) == left


@pytest.mark.slow
@settings(max_examples=100)
@given(universes(), st.data())
def test_relabelled_properties_conflict(universe: Universe, data: st.DataObject) -> None:
    namespaces, labels = universe
    label = data.draw(st.sampled_from(sorted(set(labels) - {"null"})))
    other = {namespaces[0]: {"conflict_feature": ["x"]}}  # features have <= 6 characters
    a = VariantMetadata.build(namespaces, {label: labels[label]}, source="a.json")
    b = VariantMetadata.build(namespaces, {label: other}, source="b.json")
    for first, second in ((a, b), (b, a)):
        with pytest.raises(MetadataConflict) as info:
            merge([first, second])
        assert repr(label) in str(info.value)
        assert "a.json" in str(info.value)
        assert "b.json" in str(info.value)


@settings(max_examples=100)
@given(
    st.lists(NAMES, min_size=2, max_size=5, unique=True),
    st.data(),
)
def test_non_prefix_namespace_lists_conflict(namespaces: list[str], data: st.DataObject) -> None:
    other = data.draw(st.permutations(namespaces).filter(lambda p: list(p) != namespaces))
    cut = data.draw(st.integers(min_value=1, max_value=len(namespaces)))
    a = VariantMetadata.build(namespaces, {}, source="a.json")
    b = VariantMetadata.build(list(other)[:cut], {}, source="b.json")
    consistent = list(other)[:cut] == namespaces[:cut]
    for first, second in ((a, b), (b, a)):
        if consistent:
            assert merge([first, second]).namespaces == tuple(namespaces)
        else:
            with pytest.raises(MetadataConflict, match=r"default-priorities\.namespace"):
                merge([first, second])
