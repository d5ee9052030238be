"""Filtering and ordering of variants (PEP 825 "Variant ordering", PEP 817 legacy priorities)."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paths import CORPUS
from wheelwise.providers.machine import machine_for
from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.labels import NULL_LABEL
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.ordering import Ranking, order_wheels, rank_variants
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.supported import SupportedProperties

TEST_PACKAGE_DIST = CORPUS / "test-package" / "dist"
LEGACY_SCHEMA = "https://variants-schema.wheelnext.dev/v0.0.3.json"

Props = Mapping[str, Mapping[str, Sequence[str]]]
Machine = Mapping[str, Mapping[str, Sequence[str]]]


def meta(namespaces: Sequence[str], variants: Mapping[str, Props]) -> VariantMetadata:
    return VariantMetadata.build(namespaces, variants)


def machine(raw: Machine) -> SupportedProperties:
    return SupportedProperties.from_dict(
        {ns: {f: list(v) for f, v in fs.items()} for ns, fs in raw.items()}
    )


def with_static(metadata: VariantMetadata, system: Machine) -> SupportedProperties:
    """A system file's properties completed with the metadata's ahead-of-time ones."""
    return machine_for(metadata, system=machine(system)).supported


def rank(namespaces: Sequence[str], variants: Mapping[str, Props], system: Machine) -> Ranking:
    return rank_variants(meta(namespaces, variants), machine(system))


def prop(text: str) -> VariantProperty:
    return VariantProperty.parse(text)


# -- filtering -------------------------------------------------------------------------


def test_one_supported_value_per_feature_is_enough() -> None:
    ranking = rank(
        ["nvidia"],
        {"multi": {"nvidia": {"sm_arch": ["70_real", "80_real", "90_real"]}}},
        {"nvidia": {"sm_arch": ["80_real"]}},
    )
    assert ranking.order == ("multi",)
    assert ranking.rejected == {}


def test_every_feature_must_have_a_supported_value() -> None:
    ranking = rank(
        ["nvidia"],
        {
            "both": {"nvidia": {"cuda": ["12.8"], "sm_arch": ["80_real"]}},
            "one_unmet": {"nvidia": {"cuda": ["12.8"], "sm_arch": ["90_real"]}},
        },
        {"nvidia": {"cuda": ["12.8"], "sm_arch": ["80_real"]}},
    )
    assert ranking.order == ("both",)
    assert set(ranking.rejected) == {"one_unmet"}


def test_feature_or_namespace_missing_on_machine_rejects() -> None:
    ranking = rank(
        ["x86_64", "nvidia"],
        {
            "no_feature": {"x86_64": {"avx512_bf16": ["on"]}},
            "no_namespace": {"nvidia": {"sm_arch": ["80_real"]}},
            "fine": {"x86_64": {"level": ["v2"]}},
        },
        {"x86_64": {"level": ["v3", "v2"]}},
    )
    assert ranking.order == ("fine",)
    assert set(ranking.rejected) == {"no_feature", "no_namespace"}


def test_null_is_always_compatible_even_on_an_empty_machine() -> None:
    ranking = rank(["nvidia"], {"gpu": {"nvidia": {"sm_arch": ["80_real"]}}, "null": {}}, {})
    assert ranking.order == (NULL_LABEL,)
    assert ranking.selected == NULL_LABEL
    assert set(ranking.rejected) == {"gpu"}


def test_nothing_compatible_selects_nothing() -> None:
    ranking = rank(["nvidia"], {"gpu": {"nvidia": {"sm_arch": ["80_real"]}}}, {})
    assert ranking.order == ()
    assert ranking.selected is None
    assert ranking.get("gpu") is None


def test_empty_value_list_on_machine_supports_nothing() -> None:
    ranking = rank(["ns"], {"a": {"ns": {"f": ["x"]}}}, {"ns": {"f": []}})
    assert ranking.order == ()
    assert "machine has no ns :: f values" in ranking.rejected["a"]


# -- rejection reasons -------------------------------------------------------------


def test_reason_names_feature_and_machine_values() -> None:
    ranking = rank(
        ["nvidia"],
        {
            "new": {"nvidia": {"cuda_version_lower_bound": ["13.2"]}},
            "archs": {"nvidia": {"sm_arch": ["100_real", "120_real"]}},
        },
        {"nvidia": {"cuda_version_lower_bound": ["13.0", "12.9"], "sm_arch": ["86_real"]}},
    )
    new = ranking.rejected["new"]
    assert "nvidia :: cuda_version_lower_bound" in new
    assert "13.2" in new
    assert "machine has 13.0, 12.9" in new
    archs = ranking.rejected["archs"]
    assert "nvidia :: sm_arch" in archs
    assert "100_real" in archs
    assert "120_real" in archs
    assert "machine has 86_real" in archs


def test_reason_for_missing_namespace_and_feature() -> None:
    ranking = rank(
        ["amd", "nvidia"],
        {
            "rocm": {"amd": {"gfx_arch": ["gfx942"]}},
            "nofeat": {"nvidia": {"cuda_version_lower_bound": ["12.6"]}},
        },
        {"nvidia": {"sm_arch": ["86_real"]}},
    )
    assert "amd :: gfx_arch" in ranking.rejected["rocm"]
    assert "machine has no amd support" in ranking.rejected["rocm"]
    assert "nvidia :: cuda_version_lower_bound" in ranking.rejected["nofeat"]
    assert (
        "machine has no nvidia :: cuda_version_lower_bound values" in (ranking.rejected["nofeat"])
    )


def test_reason_lists_only_the_unmet_features() -> None:
    ranking = rank(
        ["ns"],
        {"two": {"ns": {"met": ["a"], "unmet": ["b"]}}},
        {"ns": {"met": ["a"], "unmet": ["c"]}},
    )
    reason = ranking.rejected["two"]
    assert "ns :: unmet" in reason
    assert "ns :: met" not in reason


def test_reason_truncates_long_machine_value_lists() -> None:
    values = [f"v{i}" for i in range(15)]
    ranking = rank(["ns"], {"x": {"ns": {"f": ["nope"]}}}, {"ns": {"f": values}})
    reason = ranking.rejected["x"]
    assert "v0, v1" in reason
    assert "v9" in reason
    assert "v10" not in reason
    assert "5 more" in reason


# -- ordering -----------------------------------------------------------------------


def test_value_order_comes_from_the_machine() -> None:
    ranking = rank(
        ["x86_64"],
        {f"lvl_{v}": {"x86_64": {"level": [v]}} for v in ["v1", "v2", "v3", "v4"]},
        {"x86_64": {"level": ["v3", "v1", "v4", "v2"]}},
    )
    assert ranking.order == ("lvl_v3", "lvl_v1", "lvl_v4", "lvl_v2")


def test_feature_order_comes_from_the_machine() -> None:
    variants = {"by_f1": {"ns": {"f1": ["x"]}}, "by_f2": {"ns": {"f2": ["x"]}}}
    assert rank(["ns"], variants, {"ns": {"f2": ["x"], "f1": ["x"]}}).order == ("by_f2", "by_f1")
    assert rank(["ns"], variants, {"ns": {"f1": ["x"], "f2": ["x"]}}).order == ("by_f1", "by_f2")


def test_namespace_order_comes_from_metadata_not_machine() -> None:
    variants = {"in_a": {"aaa": {"f": ["x"]}}, "in_b": {"bbb": {"f": ["x"]}}}
    system = {"aaa": {"f": ["x"]}, "bbb": {"f": ["x"]}}
    assert rank(["bbb", "aaa"], variants, system).order == ("in_b", "in_a")
    assert rank(["aaa", "bbb"], variants, system).order == ("in_a", "in_b")


def test_namespace_beats_feature_and_value() -> None:
    # The worst value of the first namespace beats the best of the second.
    ranking = rank(
        ["first", "second"],
        {
            "worst_first": {"first": {"late": ["z"]}},
            "best_second": {"second": {"early": ["a"]}},
        },
        {"first": {"early": ["a"], "late": ["a", "z"]}, "second": {"early": ["a"]}},
    )
    assert ranking.order == ("worst_first", "best_second")


def test_feature_beats_value() -> None:
    ranking = rank(
        ["ns"],
        {"worst_f1": {"ns": {"f1": ["c"]}}, "best_f2": {"ns": {"f2": ["a"]}}},
        {"ns": {"f1": ["a", "b", "c"], "f2": ["a"]}},
    )
    assert ranking.order == ("worst_f1", "best_f2")


def test_multi_value_feature_ranks_by_its_best_supported_value() -> None:
    ranking = rank(
        ["ns"],
        {
            "mid": {"ns": {"f": ["b"]}},
            "wide": {"ns": {"f": ["c", "a", "zz"]}},  # zz unsupported, a is best
            "worst": {"ns": {"f": ["c"]}},
        },
        {"ns": {"f": ["a", "b", "c"]}},
    )
    assert ranking.order == ("wide", "mid", "worst")
    wide = ranking.get("wide")
    assert wide is not None
    assert wide.best == (prop("ns :: f :: a"),)
    # Narrowed to what the machine supports, in machine preference order.
    assert wide.supported == (prop("ns :: f :: a"), prop("ns :: f :: c"))


def test_properties_are_compared_in_sorted_key_order_not_document_order() -> None:
    # "mixed" lists namespace aaa first in the document (sorted), but bbb is more
    # important; its bbb value is the worst, so "pure" (best bbb value) wins.
    ranking = rank(
        ["bbb", "aaa"],
        {
            "mixed": {"aaa": {"f": ["x"]}, "bbb": {"g": ["late"]}},
            "pure": {"bbb": {"g": ["early"]}},
        },
        {"aaa": {"f": ["x"]}, "bbb": {"g": ["early", "late"]}},
    )
    assert ranking.order == ("pure", "mixed")
    mixed = ranking.get("mixed")
    assert mixed is not None
    assert mixed.best == (prop("bbb :: g :: late"), prop("aaa :: f :: x"))


def test_more_properties_win_a_prefix_tie() -> None:
    ranking = rank(
        ["ns"],
        {
            "short": {"ns": {"f1": ["a"]}},
            "long": {"ns": {"f1": ["a"], "f3": ["worst"]}},
            "longer": {"ns": {"f1": ["a"], "f2": ["b"], "f3": ["worst"]}},
        },
        {"ns": {"f1": ["a"], "f2": ["b"], "f3": ["best", "worst"]}},
    )
    assert ranking.order == ("longer", "long", "short")


def test_better_first_key_beats_more_properties() -> None:
    ranking = rank(
        ["ns"],
        {
            "many": {"ns": {"f1": ["b"], "f2": ["x"], "f3": ["y"]}},
            "few": {"ns": {"f1": ["a"]}},
        },
        {"ns": {"f1": ["a", "b"], "f2": ["x"], "f3": ["y"]}},
    )
    assert ranking.order == ("few", "many")


def test_label_breaks_exact_ties() -> None:
    same = {"ns": {"f": ["x"]}}
    ranking = rank(["ns"], {"zeta": same, "alpha": same, "mid.1": same}, {"ns": {"f": ["x"]}})
    assert ranking.order == ("alpha", "mid.1", "zeta")


def test_label_breaks_ties_on_best_values_not_on_listed_values() -> None:
    # Both rank by "a"; the extra unsupported/worse values do not matter.
    ranking = rank(
        ["ns"],
        {"b_label": {"ns": {"f": ["a"]}}, "a_label": {"ns": {"f": ["a", "c", "nope"]}}},
        {"ns": {"f": ["a", "b", "c"]}},
    )
    assert ranking.order == ("a_label", "b_label")


def test_null_variant_sorts_last_even_after_later_labels_with_no_properties() -> None:
    # The pseudocode alone would put "null" before "zzz" (both have no keys and
    # "null" < "zzz"); the null variant must nevertheless come last.
    ranking = rank(
        ["ns"],
        {"null": {}, "zzz": {}, "aaa": {}, "withprops": {"ns": {"f": ["worst"]}}},
        {"ns": {"f": ["best", "worst"]}},
    )
    assert ranking.order == ("withprops", "aaa", "zzz", "null")


# -- PEP 825 installation example --------------------------------------------------

SM_CUDA126 = ["50_real", "60_real", "70_real", "75_real", "80_real", "86_real", "90_real"]
SM_CUDA130 = ["75_real", "80_real", "86_real", "90_real", "100_real", "120_real"]
SM_CUDA132 = ["75_real", "80_real", "86_real", "90_real", "100_real", "110_real", "120_real"]
TORCH_VARIANTS: dict[str, Props] = {
    "cuda12.6": {"nvidia": {"cuda_version_lower_bound": ["12.6"], "sm_arch": SM_CUDA126}},
    "cuda13.0": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": SM_CUDA130}},
    "cuda13.2": {"nvidia": {"cuda_version_lower_bound": ["13.2"], "sm_arch": SM_CUDA132}},
    "rocm7.2": {"amd": {"rocm_version_lower_bound": ["7.2"], "gfx_arch": ["gfx90a", "gfx942"]}},
    "null": {},
}
TORCH = meta(["nvidia", "amd"], TORCH_VARIANTS)
CUDA_DRIVER_132 = ["13.2", "13.1", "13.0", "12.9", "12.8", "12.7", "12.6"]
RTX_3090 = ["86_real", "80_real", "75_real", "70_real", "60_real", "50_real"]
TORCH_WHEELS = [
    "torch-2.13.0-cp313-cp313-manylinux_2_28_x86_64.whl",
    "torch-2.13.0-cp313-cp313-manylinux_2_28_x86_64-null.whl",
    "torch-2.13.0-cp313-cp313-manylinux_2_28_x86_64-rocm7.2.whl",
    "torch-2.13.0-cp313-cp313-manylinux_2_28_x86_64-cuda12.6.whl",
    "torch-2.13.0-cp313-cp313-manylinux_2_28_x86_64-cuda13.2.whl",
    "torch-2.13.0-cp313-cp313-manylinux_2_28_x86_64-cuda13.0.whl",
]


def torch_order(system: Machine) -> list[str]:
    wheels = [WheelFilename.parse(name) for name in TORCH_WHEELS]
    ordered = order_wheels(wheels, rank_variants(TORCH, machine(system)))
    return [w.variant_label or "<non-variant>" for w in ordered]


def test_pep_example_newest_cuda_first_and_null_before_non_variant() -> None:
    system = {"nvidia": {"cuda_version_lower_bound": CUDA_DRIVER_132, "sm_arch": RTX_3090}}
    assert torch_order(system) == ["cuda13.2", "cuda13.0", "cuda12.6", "null", "<non-variant>"]
    ranking = rank_variants(TORCH, machine(system))
    assert "amd :: rocm_version_lower_bound" in ranking.rejected["rocm7.2"]
    assert "machine has no amd support" in ranking.rejected["rocm7.2"]


def test_pep_example_narrowing_drops_unsupported_sm_arch() -> None:
    system = {"nvidia": {"cuda_version_lower_bound": CUDA_DRIVER_132, "sm_arch": RTX_3090}}
    selected = rank_variants(TORCH, machine(system)).compatible[0]
    assert selected.label == "cuda13.2"
    assert selected.best == (
        prop("nvidia :: cuda_version_lower_bound :: 13.2"),
        prop("nvidia :: sm_arch :: 86_real"),
    )
    assert selected.supported == (
        prop("nvidia :: cuda_version_lower_bound :: 13.2"),
        prop("nvidia :: sm_arch :: 86_real"),
        prop("nvidia :: sm_arch :: 80_real"),
        prop("nvidia :: sm_arch :: 75_real"),
    )
    assert prop("nvidia :: sm_arch :: 120_real") not in selected.supported


def test_pep_example_older_driver_rejects_newer_cuda() -> None:
    system = {
        "nvidia": {"cuda_version_lower_bound": CUDA_DRIVER_132[2:], "sm_arch": RTX_3090},
    }
    assert torch_order(system) == ["cuda13.0", "cuda12.6", "null", "<non-variant>"]
    reason = rank_variants(TORCH, machine(system)).rejected["cuda13.2"]
    assert "nvidia :: cuda_version_lower_bound :: 13.2" in reason
    assert "machine has 13.0, 12.9" in reason


def test_pep_example_older_gpu_only_gets_cuda12() -> None:
    system = {
        "nvidia": {"cuda_version_lower_bound": CUDA_DRIVER_132, "sm_arch": ["61_real", "60_real"]},
    }
    assert torch_order(system) == ["cuda12.6", "null", "<non-variant>"]
    ranking = rank_variants(TORCH, machine(system))
    for label in ("cuda13.0", "cuda13.2"):
        assert "nvidia :: sm_arch" in ranking.rejected[label]
        assert "machine has 61_real, 60_real" in ranking.rejected[label]


def test_pep_example_cpu_only_machine_gets_null() -> None:
    assert torch_order({}) == ["null", "<non-variant>"]
    assert set(rank_variants(TORCH, machine({})).rejected) == {
        "cuda12.6",
        "cuda13.0",
        "cuda13.2",
        "rocm7.2",
    }


def test_pep_example_amd_machine_gets_rocm() -> None:
    system = {"amd": {"rocm_version_lower_bound": ["7.2", "7.1"], "gfx_arch": ["gfx942"]}}
    assert torch_order(system) == ["rocm7.2", "null", "<non-variant>"]


def test_pep_example_namespace_order_prefers_nvidia_on_a_machine_with_both() -> None:
    system = {
        "amd": {"rocm_version_lower_bound": ["7.2"], "gfx_arch": ["gfx942"]},
        "nvidia": {"cuda_version_lower_bound": ["12.6"], "sm_arch": RTX_3090},
    }
    assert torch_order(system) == ["cuda12.6", "rocm7.2", "null", "<non-variant>"]


# -- sm_arch multi-value example -------------------------------------------------------

GTX_1080_TI = ["61_real", "60_real", "61_virtual", "60_virtual", "52_real", "50_real"]


def test_gtx_1080_ti_prefers_build_listing_60_real() -> None:
    ranking = rank(
        ["nvidia"],
        {
            "from70": {"nvidia": {"sm_arch": ["70_real", "75_real", "80_real", "90_real"]}},
            "from60": {"nvidia": {"sm_arch": ["60_real", "70_real", "75_real", "80_real"]}},
            "virtual": {"nvidia": {"sm_arch": ["50_real", "60_virtual"]}},
            "null": {},
        },
        {"nvidia": {"sm_arch": GTX_1080_TI}},
    )
    assert ranking.order == ("from60", "virtual", "null")
    assert "from70" in ranking.rejected
    assert "nvidia :: sm_arch" in ranking.rejected["from70"]
    assert "61_real" in ranking.rejected["from70"]
    from60 = ranking.get("from60")
    virtual = ranking.get("virtual")
    assert from60 is not None
    assert virtual is not None
    assert from60.best == (prop("nvidia :: sm_arch :: 60_real"),)
    assert from60.supported == (prop("nvidia :: sm_arch :: 60_real"),)
    assert virtual.best == (prop("nvidia :: sm_arch :: 60_virtual"),)
    assert virtual.supported == (
        prop("nvidia :: sm_arch :: 60_virtual"),
        prop("nvidia :: sm_arch :: 50_real"),
    )


# -- order_wheels --------------------------------------------------------------------


def wheels(*names: str) -> list[WheelFilename]:
    return [WheelFilename.parse(n) for n in names]


def test_order_wheels_keeps_input_order_inside_a_group() -> None:
    ranking = rank(
        ["ns"],
        {"good": {"ns": {"f": ["a"]}}, "ok": {"ns": {"f": ["b"]}}, "null": {}},
        {"ns": {"f": ["a", "b"]}},
    )
    given_order = wheels(
        "pkg-1.0-cp313-abi3-linux_x86_64.whl",
        "pkg-1.0-cp313-cp313-linux_x86_64-ok.whl",
        "pkg-1.0-cp313-abi3-linux_x86_64-good.whl",
        "pkg-1.0-py3-none-any.whl",
        "pkg-1.0-cp313-cp313-linux_x86_64-good.whl",
        "pkg-1.0-cp313-abi3-linux_x86_64-ok.whl",
        "pkg-1.0-cp313-cp313-linux_x86_64-null.whl",
    )
    result = [str(w) for w in order_wheels(given_order, ranking)]
    assert result == [
        "pkg-1.0-cp313-abi3-linux_x86_64-good.whl",
        "pkg-1.0-cp313-cp313-linux_x86_64-good.whl",
        "pkg-1.0-cp313-cp313-linux_x86_64-ok.whl",
        "pkg-1.0-cp313-abi3-linux_x86_64-ok.whl",
        "pkg-1.0-cp313-cp313-linux_x86_64-null.whl",
        "pkg-1.0-cp313-abi3-linux_x86_64.whl",
        "pkg-1.0-py3-none-any.whl",
    ]
    # Reversing the input reverses the order inside each group, and only there.
    reversed_result = [str(w) for w in order_wheels(list(reversed(given_order)), ranking)]
    assert reversed_result == [
        "pkg-1.0-cp313-cp313-linux_x86_64-good.whl",
        "pkg-1.0-cp313-abi3-linux_x86_64-good.whl",
        "pkg-1.0-cp313-abi3-linux_x86_64-ok.whl",
        "pkg-1.0-cp313-cp313-linux_x86_64-ok.whl",
        "pkg-1.0-cp313-cp313-linux_x86_64-null.whl",
        "pkg-1.0-py3-none-any.whl",
        "pkg-1.0-cp313-abi3-linux_x86_64.whl",
    ]


def test_order_wheels_drops_incompatible_and_unknown_labels() -> None:
    ranking = rank(
        ["ns"],
        {"good": {"ns": {"f": ["a"]}}, "bad": {"ns": {"f": ["z"]}}},
        {"ns": {"f": ["a"]}},
    )
    result = order_wheels(
        wheels(
            "pkg-1.0-py3-none-any-bad.whl",
            "pkg-1.0-py3-none-any-unknown.whl",
            "pkg-1.0-py3-none-any-null.whl",  # not in the metadata: unknown too
            "pkg-1.0-py3-none-any.whl",
            "pkg-1.0-py3-none-any-good.whl",
        ),
        ranking,
    )
    assert [w.variant_label for w in result] == ["good", None]


def test_order_wheels_with_only_non_variant_wheels() -> None:
    ranking = rank(["ns"], {"good": {"ns": {"f": ["a"]}}}, {})
    names = ["pkg-1.0-cp313-cp313-linux_x86_64.whl", "pkg-1.0-py3-none-any.whl"]
    assert [str(w) for w in order_wheels(wheels(*names), ranking)] == names


# -- corpus: variantlib test package ----------------------------------------------

TEST_PLUGIN_MACHINE: Machine = {"installable_plugin": {"feat1": ["val1c", "val1b"]}}


def corpus_metadata(path: Path) -> VariantMetadata:
    return VariantMetadata.from_json(path.read_bytes(), source=str(path))


def test_corpus_test_package_order() -> None:
    metadata = corpus_metadata(TEST_PACKAGE_DIST / "test_package-0-variants.json")
    ranking = rank_variants(metadata, machine(TEST_PLUGIN_MACHINE))
    assert ranking.order == ("60567bd9", "foo", "null")
    assert set(ranking.rejected) == {"fbe82642", "bar", "5d8be4b9"}
    for label, reason in ranking.rejected.items():
        assert "installable_plugin :: feat2" in reason, label
        assert "val2b" in reason, label
        assert "machine has no installable_plugin :: feat2 values" in reason, label
        assert "feat1" not in reason, label
    for label in ("60567bd9", "foo"):
        ranked = ranking.get(label)
        assert ranked is not None
        assert ranked.best == (prop("installable_plugin :: feat1 :: val1c"),)
        assert ranked.supported == (prop("installable_plugin :: feat1 :: val1c"),)
    null = ranking.get("null")
    assert null is not None
    assert null.best == ()
    assert null.supported == ()


def test_corpus_test_package_wheels_order() -> None:
    metadata = corpus_metadata(TEST_PACKAGE_DIST / "test_package-0-variants.json")
    ranking = rank_variants(metadata, machine(TEST_PLUGIN_MACHINE))
    dist = sorted(p.name for p in TEST_PACKAGE_DIST.glob("*.whl"))
    assert len(dist) == 7
    ordered = order_wheels([WheelFilename.parse(n) for n in dist], ranking)
    assert [w.variant_label for w in ordered] == ["60567bd9", "foo", "null", None]


def test_corpus_test_package_without_the_plugin() -> None:
    metadata = corpus_metadata(TEST_PACKAGE_DIST / "test_package-0-variants.json")
    ranking = rank_variants(metadata, SupportedProperties())
    assert ranking.order == ("null",)
    assert len(ranking.rejected) == 5
    for reason in ranking.rejected.values():
        assert "machine has no installable_plugin support" in reason


# -- legacy: static properties and default priorities ---------------------------------


def legacy(doc: dict[str, Any]) -> VariantMetadata:
    return VariantMetadata.from_dict({"$schema": LEGACY_SCHEMA, **doc})


BLAS_VARIANTS = {
    "openblas": {"blas_lapack": {"provider": ["openblas"]}},
    "mkl": {"blas_lapack": {"provider": ["mkl"]}},
    "accelerate": {"blas_lapack": {"provider": ["accelerate"]}},
    "atlas": {"blas_lapack": {"provider": ["atlas"]}},
    "null": {},
}


def test_pep817_static_properties_are_supported_in_listed_order() -> None:
    metadata = legacy(
        {
            "default-priorities": {"namespace": ["blas_lapack"]},
            "providers": {"blas_lapack": {"install-time": False, "requires": ["blas-provider"]}},
            "static-properties": {"blas_lapack": {"provider": ["mkl", "accelerate", "openblas"]}},
            "variants": BLAS_VARIANTS,
        }
    )
    ranking = rank_variants(metadata, with_static(metadata, {}))
    assert ranking.order == ("mkl", "accelerate", "openblas", "null")
    assert set(ranking.rejected) == {"atlas"}
    assert "blas_lapack :: provider" in ranking.rejected["atlas"]
    assert "machine has mkl, accelerate, openblas" in ranking.rejected["atlas"]
    # A system file that describes the namespace is the user's word: it wins.
    described = with_static(metadata, {"blas_lapack": {"provider": ["openblas", "atlas"]}})
    assert rank_variants(metadata, described).order == ("openblas", "atlas", "null")


def test_pep817_static_properties_use_feature_priorities_for_feature_order() -> None:
    variants = {"by_a": {"aot": {"a_feat": ["x"]}}, "by_b": {"aot": {"b_feat": ["x"]}}}
    doc: dict[str, Any] = {
        "default-priorities": {"namespace": ["aot"]},
        "providers": {"aot": {"install-time": False}},
        "static-properties": {"aot": {"a_feat": ["x"], "b_feat": ["x"]}},
        "variants": variants,
    }
    first = legacy(doc)
    assert rank_variants(first, with_static(first, {})).order == ("by_a", "by_b")
    doc["default-priorities"]["feature"] = {"aot": ["b_feat"]}
    second = legacy(doc)
    assert rank_variants(second, with_static(second, {})).order == ("by_b", "by_a")


def test_variantlib_provider_static_properties_with_feature_order() -> None:
    metadata = legacy(
        {
            "default-priorities": {"namespace": ["x86_64", "aot"]},
            "providers": {
                "x86_64": {"requires": ["provider-x86-64"]},
                "aot": {
                    "install-time": False,
                    "static-properties": {"a_feat": ["a1", "a2"], "b_feat": ["b2", "b1"]},
                    "feature-order": ["b_feat", "a_feat"],
                },
            },
            "variants": {
                "a1": {"aot": {"a_feat": ["a1"]}},
                "a2": {"aot": {"a_feat": ["a2"]}},
                "b1": {"aot": {"b_feat": ["b1"]}},
                "b2": {"aot": {"b_feat": ["b2"]}},
                "b3": {"aot": {"b_feat": ["b3"]}},
                "v3": {"x86_64": {"level": ["v3"]}},
            },
        }
    )
    ranking = rank_variants(metadata, with_static(metadata, {}))
    assert ranking.order == ("b2", "b1", "a1", "a2")
    assert set(ranking.rejected) == {"b3", "v3"}
    with_cpu = rank_variants(metadata, with_static(metadata, {"x86_64": {"level": ["v3"]}}))
    assert with_cpu.order == ("v3", "b2", "b1", "a1", "a2")


def test_default_priorities_feature_goes_before_machine_order() -> None:
    variants = {"by_f1": {"ns": {"f1": ["x"]}}, "by_f2": {"ns": {"f2": ["x"]}}}
    system = {"ns": {"f1": ["x"], "f2": ["x"]}}
    plain = legacy({"default-priorities": {"namespace": ["ns"]}, "variants": variants})
    assert rank_variants(plain, machine(system)).order == ("by_f1", "by_f2")
    prioritised = legacy(
        {
            "default-priorities": {"namespace": ["ns"], "feature": {"ns": ["f2"]}},
            "variants": variants,
        }
    )
    assert rank_variants(prioritised, machine(system)).order == ("by_f2", "by_f1")


def test_default_priorities_property_goes_before_machine_order() -> None:
    variants = {v: {"ns": {"f": [v]}} for v in ("a", "b", "c")}
    system = {"ns": {"f": ["a", "b", "c"]}}
    metadata = legacy(
        {
            "default-priorities": {"namespace": ["ns"], "property": {"ns": {"f": ["c", "b"]}}},
            "variants": variants,
        }
    )
    ranking = rank_variants(metadata, machine(system))
    assert ranking.order == ("c", "b", "a")
    # The narrowed properties follow the effective (prioritised) order too.
    multi = legacy(
        {
            "default-priorities": {"namespace": ["ns"], "property": {"ns": {"f": ["c"]}}},
            "variants": {"all": {"ns": {"f": ["a", "b", "c"]}}},
        }
    )
    ranked = rank_variants(multi, machine(system)).get("all")
    assert ranked is not None
    assert ranked.best == (prop("ns :: f :: c"),)
    assert [p.value for p in ranked.supported] == ["c", "a", "b"]


def test_default_priorities_never_make_unsupported_values_supported() -> None:
    metadata = legacy(
        {
            "default-priorities": {
                "namespace": ["ns", "other"],
                "feature": {"ns": ["missing", "f"], "other": ["g"]},
                "property": {"ns": {"f": ["unsupported", "b"], "missing": ["m"]}},
            },
            "variants": {
                "unsupported": {"ns": {"f": ["unsupported"]}},
                "missing": {"ns": {"missing": ["m"]}},
                "other": {"other": {"g": ["x"]}},
                "b": {"ns": {"f": ["b"]}},
                "a": {"ns": {"f": ["a"]}},
                "null": {},
            },
        }
    )
    ranking = rank_variants(metadata, machine({"ns": {"f": ["a", "b"]}}))
    assert ranking.order == ("b", "a", "null")
    assert set(ranking.rejected) == {"unsupported", "missing", "other"}
    assert "ns :: f" in ranking.rejected["unsupported"]
    assert "machine has b, a" in ranking.rejected["unsupported"]
    assert "ns :: missing" in ranking.rejected["missing"]
    assert "machine has no other support" in ranking.rejected["other"]


DUMMY_MACHINE: Machine = {
    "fictional_hw": {
        "compute_capability": ["10", "8", "7", "6", "5", "4"],
        "architecture": ["deepthought", "tars", "hal9000", "mother"],
        "compute_accuracy": ["10", "8", "0"],
        "humor": ["10", "2", "0"],
    },
    "fictional_tech": {
        "technology": ["improb_drive", "auto_chef"],
        "quantum": ["superposition", "foam"],
        "risk_exposure": ["1000000000", "25"],
    },
}


def test_corpus_dummy_project_with_priorities() -> None:
    metadata = corpus_metadata(CORPUS / "variant_json_files" / "dummy_project-1.0.0-variants.json")
    ranking = rank_variants(metadata, machine(DUMMY_MACHINE))
    # Feature priorities put humor and compute_accuracy ahead of the machine's
    # compute_capability; property priorities put auto_chef ahead of improb_drive.
    assert ranking.order == (
        "80fa16ff",
        "3f7188c1",
        "36028aca",
        "72c47fce",
        "181830db",
        "3351fc6a",
        "03e04d5e",
        "7db6d39f",
        "808c7f9d",
        "null",
    )
    assert ranking.rejected == {}
    first = ranking.compatible[0]
    assert first.best == (
        prop("fictional_hw :: humor :: 10"),
        prop("fictional_hw :: compute_accuracy :: 8"),
        prop("fictional_hw :: compute_capability :: 8"),
        prop("fictional_hw :: architecture :: tars"),
    )
    tech = ranking.get("808c7f9d")
    assert tech is not None
    assert tech.best == (
        prop("fictional_tech :: quantum :: foam"),
        prop("fictional_tech :: technology :: improb_drive"),
        prop("fictional_tech :: risk_exposure :: 1000000000"),
    )


def test_corpus_dummy_project_without_priorities_follows_the_machine() -> None:
    path = CORPUS / "variant_json_files" / "dummy_project-1.0.0-variants.json"
    raw = json.loads(path.read_text())
    raw["default-priorities"] = {"namespace": raw["default-priorities"]["namespace"]}
    ranking = rank_variants(VariantMetadata.from_dict(raw), machine(DUMMY_MACHINE))
    # compute_capability is now the first fictional_hw feature: 10 beats 8.
    assert ranking.order[:3] == ("36028aca", "80fa16ff", "72c47fce")


def test_corpus_dummy_project_rejections_on_a_smaller_machine() -> None:
    metadata = corpus_metadata(CORPUS / "variant_json_files" / "dummy_project-1.0.0-variants.json")
    small = {"fictional_hw": {"compute_capability": ["6", "5"], "humor": ["2"]}}
    ranking = rank_variants(metadata, machine(small))
    assert ranking.order == ("181830db", "3351fc6a", "null")
    assert "fictional_hw :: compute_capability" in ranking.rejected["72c47fce"]
    assert "machine has 6, 5" in ranking.rejected["72c47fce"]
    assert "fictional_hw :: architecture" in ranking.rejected["3f7188c1"]
    assert "machine has no fictional_hw :: architecture values" in ranking.rejected["3f7188c1"]
    assert "machine has no fictional_tech support" in ranking.rejected["7db6d39f"]
    assert set(ranking.order) | set(ranking.rejected) == set(metadata.variants)


# -- hypothesis: totality, determinism and the PEP 825 pseudocode -------------------

NAMESPACES = ["ns_a", "ns_b", "ns_c"]
FEATURES = ["f0", "f1", "f2", "f3"]
VALUES = ["v0", "v1", "v2", "v3", "v4"]
LABELS = st.from_regex(r"[0-9a-z_.]{1,5}", fullmatch=True).filter(lambda s: s != NULL_LABEL)

PropDict = dict[str, dict[str, list[str]]]


# Strategies are built once: hypothesis works out each new strategy object's
# properties on first use, which costs more than drawing from it.
FEATURE_LISTS = st.lists(st.sampled_from(FEATURES), unique=True, min_size=1, max_size=3)
VALUE_LISTS = st.lists(st.sampled_from(VALUES), unique=True, min_size=1, max_size=3)
MACHINE_NAMESPACES = st.lists(st.sampled_from([*NAMESPACES, "ns_x"]), unique=True)
MACHINE_FEATURES = st.lists(st.sampled_from(FEATURES), unique=True)
MACHINE_VALUES = st.lists(st.sampled_from(VALUES), unique=True)


@functools.cache
def property_maps(namespaces: tuple[str, ...]) -> st.SearchStrategy[PropDict]:
    chosen = st.lists(st.sampled_from(namespaces), unique=True, max_size=2)

    @st.composite
    def maps(draw: st.DrawFn) -> PropDict:
        result: PropDict = {}
        for ns in draw(chosen):
            result[ns] = {f: draw(VALUE_LISTS) for f in draw(FEATURE_LISTS)}
        return result

    return maps()


@st.composite
def machines(draw: st.DrawFn) -> PropDict:
    result: PropDict = {}
    for ns in draw(MACHINE_NAMESPACES):
        result[ns] = {f: draw(MACHINE_VALUES) for f in draw(MACHINE_FEATURES)}
    return result


LABEL_LISTS = st.lists(LABELS, unique=True, max_size=8)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[str], dict[str, PropDict], PropDict]:
    namespaces = draw(st.permutations(NAMESPACES))
    labels = draw(LABEL_LISTS)
    maps = property_maps(tuple(namespaces))
    variants = {label: draw(maps) for label in labels}
    if draw(st.booleans()):
        variants[NULL_LABEL] = {}
    return list(namespaces), variants, draw(machines())


def pep825_reference(
    namespace_order: list[str], variants: Mapping[str, PropDict], system: PropDict
) -> tuple[list[str], set[str]]:
    """A direct transcription of the PEP 825 pseudocode, plus filtering and null-last."""
    feature_order = {ns: list(system.get(ns, {})) for ns in namespace_order}
    value_order = {
        ns: {f: list(system[ns][f]) for f in feature_order[ns]} for ns in namespace_order
    }

    def best_value_property(namespace: str, feature_name: str, feature_values: list[str]) -> str:
        for best_value in value_order[namespace][feature_name]:
            if best_value in feature_values:
                return best_value
        raise AssertionError("No feature value supported, wheel should have been filtered out")

    def property_key(p: tuple[str, str, str]) -> tuple[int, int, int]:
        namespace, feature_name, feature_value = p
        return (
            namespace_order.index(namespace),
            feature_order[namespace].index(feature_name),
            value_order[namespace][feature_name].index(feature_value),
        )

    class VariantWheel:
        def __init__(self, label: str, properties: PropDict) -> None:
            self.label = label
            self.properties = properties

        def best_value_properties(self) -> list[tuple[str, str, str]]:
            return [
                (namespace, feature_name, best_value_property(namespace, feature_name, values))
                for namespace, features in self.properties.items()
                for feature_name, values in features.items()
            ]

        def sorted_properties(self) -> list[tuple[str, str, str]]:
            return sorted(self.best_value_properties(), key=property_key)

        def __lt__(self, other: VariantWheel) -> bool:
            self_properties = self.sorted_properties()
            other_properties = other.sorted_properties()
            for self_prop, other_prop in zip(self_properties, other_properties, strict=False):
                if self_prop != other_prop:
                    return property_key(self_prop) < property_key(other_prop)
            if len(self_properties) != len(other_properties):
                return len(self_properties) > len(other_properties)
            return self.label < other.label

    def compatible(properties: PropDict) -> bool:
        return all(
            any(v in value_order.get(ns, {}).get(f, []) for v in values)
            for ns, features in properties.items()
            for f, values in features.items()
        )

    def cmp(a: VariantWheel, b: VariantWheel) -> int:
        if a < b:
            assert not b < a
            return -1
        if b < a:
            return 1
        assert a.label == b.label
        return 0

    wheels = [
        VariantWheel(label, props)
        for label, props in variants.items()
        if label != NULL_LABEL and compatible(props)
    ]
    order = [w.label for w in sorted(wheels, key=functools.cmp_to_key(cmp))]
    if NULL_LABEL in variants:
        order.append(NULL_LABEL)
    return order, set(variants) - set(order)


def shuffled_metadata(
    namespaces: list[str], variants: Mapping[str, PropDict], rnd: random.Random
) -> VariantMetadata:
    """Metadata built without canonicalisation, with every level of dict order shuffled."""

    def shuffled(items: list[Any]) -> list[Any]:
        items = list(items)
        rnd.shuffle(items)
        return items

    table = {
        label: {
            ns: {f: tuple(shuffled(values)) for f, values in shuffled(list(features.items()))}
            for ns, features in shuffled(list(props.items()))
        }
        for label, props in shuffled(list(variants.items()))
    }
    return VariantMetadata(namespaces=tuple(namespaces), variants=table)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_matches_pep825_pseudocode(
    scenario: tuple[list[str], dict[str, PropDict], PropDict],
) -> None:
    namespaces, variants, system = scenario
    ranking = rank_variants(meta(namespaces, variants), machine(system))
    expected_order, expected_rejected = pep825_reference(namespaces, variants, system)
    assert list(ranking.order) == expected_order
    assert set(ranking.rejected) == expected_rejected


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(scenarios(), st.randoms(use_true_random=False))
def test_ordering_is_total_and_deterministic(
    scenario: tuple[list[str], dict[str, PropDict], PropDict], rnd: random.Random
) -> None:
    namespaces, variants, system = scenario
    supported = machine(system)
    ranking = rank_variants(meta(namespaces, variants), supported)

    # Every label is placed exactly once: ordered or rejected, never both.
    assert len(set(ranking.order)) == len(ranking.order)
    assert not set(ranking.order) & set(ranking.rejected)
    assert set(ranking.order) | set(ranking.rejected) == set(variants)
    assert all(reason for reason in ranking.rejected.values())
    if NULL_LABEL in variants:
        assert ranking.order[-1] == NULL_LABEL

    # Same answer for repeated calls and for any dict order of the input.
    assert rank_variants(meta(namespaces, variants), supported) == ranking
    for _ in range(3):
        again = rank_variants(shuffled_metadata(namespaces, variants, rnd), supported)
        assert again.order == ranking.order
        # (Reason texts follow the document's value order, so only labels compare.)
        assert set(again.rejected) == set(ranking.rejected)
        for a, b in zip(again.compatible, ranking.compatible, strict=True):
            assert a.best == b.best
            assert set(a.supported) == set(b.supported)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_best_and_supported_properties(
    scenario: tuple[list[str], dict[str, PropDict], PropDict],
) -> None:
    namespaces, variants, system = scenario
    ranking = rank_variants(meta(namespaces, variants), machine(system))
    for ranked in ranking.compatible:
        listed = variants[ranked.label]
        features = [(ns, f) for ns, fs in listed.items() for f in fs]
        # One best property per listed feature, each the machine's first listed match.
        assert sorted((p.namespace, p.feature) for p in ranked.best) == sorted(features)
        for p in ranked.best:
            machine_values = system[p.namespace][p.feature]
            assert p.value == next(v for v in machine_values if v in listed[p.namespace][p.feature])
        # Best properties are ordered by (namespace, feature) importance.
        keys = [
            (namespaces.index(p.namespace), list(system[p.namespace]).index(p.feature))
            for p in ranked.best
        ]
        assert keys == sorted(keys)
        # Narrowed properties: exactly the listed values the machine supports.
        assert set(ranked.supported) == {
            VariantProperty(ns, f, v)
            for ns, fs in listed.items()
            for f, values in fs.items()
            for v in values
            if v in system.get(ns, {}).get(f, [])
        }
        assert len(ranked.supported) == len(set(ranked.supported))


def test_reasons_share_a_clause_and_show_values_naturally_ordered() -> None:
    metadata = VariantMetadata.build(
        ["nvidia", "x86_64"],
        {
            "cu": {
                "nvidia": {
                    "cuda_version_lower_bound": ["12.8"],
                    "sm_arch": ["100_real", "70_real", "90_real"],
                }
            },
            "v4": {"x86_64": {"level": ["v4"]}},
        },
    )
    machine = SupportedProperties({"x86_64": {"level": ("v3", "v2", "v1")}})
    ranking = rank_variants(metadata, machine)
    assert ranking.rejected["cu"] == (
        "needs nvidia :: cuda_version_lower_bound :: 12.8 and "
        "nvidia :: sm_arch one of 70_real, 90_real, 100_real; machine has no nvidia support"
    )
    assert ranking.rejected["v4"] == "needs x86_64 :: level :: v4; machine has v3, v2, v1"


def test_provider_feature_order_ranks_a_plugin_namespace() -> None:
    """PEP 850 has no ``default-priorities.feature``: a provider's ``feature-order``
    orders the features of its namespace, whoever answers it."""
    variants = {"by_f1": {"ns": {"f1": ["x"]}}, "by_f2": {"ns": {"f2": ["x"]}}}
    system = {"ns": {"f1": ["x"], "f2": ["x"]}}
    provider: dict[str, Any] = {"requires": ["ns-provider"], "feature-order": ["f2", "f1"]}
    doc = {
        "$schema": "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json",
        "default-priorities": {"namespace": ["ns"]},
        "providers": {"ns": provider},
        "variants": variants,
    }
    assert rank_variants(VariantMetadata.from_dict(doc), machine(system)).order == (
        "by_f2",
        "by_f1",
    )
    del provider["feature-order"]
    assert rank_variants(VariantMetadata.from_dict(doc), machine(system)).order == (
        "by_f1",
        "by_f2",
    )
