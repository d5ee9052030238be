"""What publishing writes: PEP 850 v0.2.0 where provider information is needed,
else canonical PEP 825 0.1.1 (byte for byte as ``to_bytes()``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from indexkit import demo_wheels, uvicorn_thread
from paths import DATA
from wheelfactory import make_wheel
from wheelwise.publish.server import create_app
from wheelwise.publish.static import build_site
from wheelwise.variants.merging import merge
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.ordering import rank_variants
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.providers_format import (
    metadata_bytes,
    metadata_document,
    metadata_json,
    needs_providers_format,
)
from wheelwise.variants.pyproject import read_pyproject_variant
from wheelwise.variants.schema import PEP850_SCHEMA_URL
from wheelwise.variants.supported import SupportedProperties
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.make import make_variant

LEGACY_SCHEMA = "https://variants-schema.wheelnext.dev/v0.0.3.json"
REAL_WORLD = DATA / "corpus" / "real-world"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NVIDIA_PLUGIN = {
    "requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
    "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
}


def legacy(doc: dict[str, Any]) -> VariantMetadata:
    return VariantMetadata.from_dict({"$schema": LEGACY_SCHEMA, **doc}, source="legacy.json")


def reread(metadata: VariantMetadata) -> VariantMetadata:
    return VariantMetadata.from_json(metadata_bytes(metadata), source="written.json")


# -- canonical PEP 825 output stays as it was ------------------------------------------


def canonical_documents() -> list[Path]:
    return sorted(EXAMPLES.glob("*-variants.json"))


@pytest.mark.parametrize("path", canonical_documents(), ids=lambda p: p.name)
def test_without_provider_information_output_is_to_bytes(path: Path) -> None:
    metadata = VariantMetadata.from_json(path.read_bytes(), source=str(path))
    assert not needs_providers_format(metadata)
    assert metadata_bytes(metadata) == metadata.to_bytes()
    assert metadata_json(metadata) == metadata.to_json()
    assert metadata_document(metadata) == metadata.to_dict()


def test_built_metadata_is_canonical(variant_schema_validator: Any) -> None:
    metadata = VariantMetadata.build(
        ["nvidia", "x86_64"],
        {"cu128": {"nvidia": {"sm_arch": ["90_real", "80_real"]}}, "null": {}},
    )
    assert metadata_bytes(metadata) == metadata.to_bytes()
    variant_schema_validator.validate(metadata_document(metadata))


def test_demo_site_is_unchanged(tmp_path: Path) -> None:
    """A site of wheels without provider information: the variants.json is to_bytes()."""
    wheels = tmp_path / "wheels"
    demo_wheels(wheels)
    build_site(wheels, tmp_path / "site")
    for path in (tmp_path / "site" / "files").glob("*/*-variants.json"):
        data = path.read_bytes()
        assert data == VariantMetadata.from_json(data).to_bytes()
        assert b"providers" not in data


# -- the PEP 850 document ------------------------------------------------------------


def test_plugin_provider_is_kept(pep850_validator: Draft202012Validator) -> None:
    metadata = legacy(
        {
            "default-priorities": {"namespace": ["nvidia"]},
            "providers": {"nvidia": {**NVIDIA_PLUGIN, "enable-if": "platform_system == 'Linux'"}},
            "variants": {"cu128": {"nvidia": {"cuda_version_lower_bound": ["12.8"]}}},
        }
    )
    document = metadata_document(metadata)
    pep850_validator.validate(document)
    assert list(document) == ["$schema", "default-priorities", "providers", "variants"]
    assert document["$schema"] == PEP850_SCHEMA_URL
    assert document["providers"] == {
        "nvidia": {
            "enable-if": "platform_system == 'Linux'",
            "plugin-api": NVIDIA_PLUGIN["plugin-api"],
            "requires": NVIDIA_PLUGIN["requires"],
        }
    }
    # Keys of a provider are sorted, like everything else to_dict() writes.
    assert list(document["providers"]["nvidia"]) == ["enable-if", "plugin-api", "requires"]
    back = reread(metadata).providers["nvidia"]
    assert back.requires == tuple(NVIDIA_PLUGIN["requires"])
    assert back.plugin_api == NVIDIA_PLUGIN["plugin-api"]
    assert back.enable_if == "platform_system == 'Linux'"


@pytest.mark.parametrize(
    "provider",
    [
        {"install-time": False},
        {"plugin-use": "none", "requires": ["priority-plugin"]},
        # The v0.0.2 draft: "plugin used only when building package".
        {"plugin-use": "build", "requires": ["priority-plugin"]},
    ],
    ids=["install-time", "plugin-use-none", "plugin-use-build"],
)
def test_ahead_of_time_provider_gets_its_static_properties(
    provider: dict[str, Any], pep850_validator: Draft202012Validator
) -> None:
    metadata = legacy(
        {
            "default-priorities": {
                "namespace": ["prio"],
                "feature": {"prio": ["tier", "order"]},
                "property": {"prio": {"order": ["2"]}},
            },
            "providers": {"prio": provider},
            "static-properties": {"prio": {"order": ["1", "2", "3"], "tier": ["b", "a"]}},
            "variants": {"one": {"prio": {"order": ["1"]}}, "two": {"prio": {"order": ["2"]}}},
        }
    )
    document = metadata_document(metadata)
    pep850_validator.validate(document)
    assert document["default-priorities"] == {"namespace": ["prio"]}
    assert document["providers"] == {
        "prio": {
            # Feature priorities first; the property priority moves "2" to the front.
            "feature-order": ["tier", "order"],
            "static-properties": {"order": ["2", "1", "3"], "tier": ["b", "a"]},
        }
    }
    assert "static-properties" not in document
    back = reread(metadata)
    assert back.static_supported() == {"prio": {"tier": ("b", "a"), "order": ("2", "1", "3")}}
    # Selection is the same before and after: "two" first.
    before = rank_variants(metadata, SupportedProperties(metadata.static_supported()))
    after = rank_variants(back, SupportedProperties(back.static_supported()))
    assert [v.label for v in before.compatible] == [v.label for v in after.compatible]
    assert before.selected == "two"


@pytest.mark.parametrize("use", ["none", "build"])
def test_property_priorities_alone_give_ahead_of_time_values(use: str) -> None:
    """PEP 817 v0.0.2 (torch 2.9): an AoT namespace's values only as property priorities;
    ``plugin-use: build`` is a plugin "used only when building package", so it is
    answered ahead of time as ``none`` is, never run (or trusted) to install."""
    metadata = legacy(
        {
            "default-priorities": {
                "namespace": ["priority"],
                "property": {"priority": {"order": ["1", "2", "3"]}},
            },
            "providers": {"priority": {"plugin-use": use, "requires": []}},
            "variants": {"a": {"priority": {"order": ["3"]}}},
        }
    )
    assert metadata_document(metadata)["providers"] == {
        "priority": {"feature-order": ["order"], "static-properties": {"order": ["1", "2", "3"]}}
    }


def test_feature_priorities_of_a_plugin_namespace_become_feature_order(
    pep850_validator: Draft202012Validator,
) -> None:
    metadata = legacy(
        {
            "default-priorities": {
                "namespace": ["nvidia", "x86_64"],
                "feature": {"nvidia": ["sm_arch", "cuda_version_lower_bound"]},
            },
            "providers": {"nvidia": NVIDIA_PLUGIN},
            "variants": {"cu128": {"nvidia": {"sm_arch": ["90_real"]}}},
        }
    )
    document = metadata_document(metadata)
    pep850_validator.validate(document)
    assert document["providers"]["nvidia"]["feature-order"] == [
        "sm_arch",
        "cuda_version_lower_bound",
    ]
    # x86_64 carries no information: no entry for it.
    assert set(document["providers"]) == {"nvidia"}
    assert reread(metadata).providers["nvidia"].feature_order == (
        "sm_arch",
        "cuda_version_lower_bound",
    )


def test_pep850_fields_round_trip(pep850_validator: Draft202012Validator) -> None:
    written = {
        "$schema": PEP850_SCHEMA_URL,
        "default-priorities": {"namespace": ["blas", "cpu", "nvidia"]},
        "providers": {
            "blas": {
                "feature-order": ["kind", "threads"],
                "optional": True,
                "static-properties": {"kind": ["mkl", "openblas"], "threads": ["on"]},
            },
            "cpu": {"builtin": "x86_64"},
            "nvidia": {**NVIDIA_PLUGIN, "feature-order": ["sm_arch"], "optional": True},
        },
        "variants": {
            "mkl": {"blas": {"kind": ["mkl"]}},
            "sm90": {"nvidia": {"sm_arch": ["90_real"]}},
        },
    }
    pep850_validator.validate(written)
    metadata = VariantMetadata.from_dict(written, source="pep850.json")
    assert metadata_document(metadata) == written
    assert (
        metadata_bytes(metadata) == (json.dumps(written, indent=2, sort_keys=True) + "\n").encode()
    )


def test_what_selection_does_not_need_is_not_written(
    pep850_validator: Draft202012Validator,
) -> None:
    metadata = legacy(
        {
            "default-priorities": {"namespace": ["nvidia"]},
            "providers": {
                "nvidia": {**NVIDIA_PLUGIN, "build-requires": ["x"], "plugin-use": "all", "z": 1}
            },
            "variants": {"a": {"nvidia": {"sm_arch": ["90_real"]}}},
        }
    )
    document = metadata_document(metadata)
    pep850_validator.validate(document)
    assert document["providers"] == {
        "nvidia": {"plugin-api": NVIDIA_PLUGIN["plugin-api"], "requires": NVIDIA_PLUGIN["requires"]}
    }


def test_ahead_of_time_namespace_without_values_keeps_the_used_ones() -> None:
    """An AoT provider with no static values supports what the variants use (the
    reader's rule); the written document lists those values."""
    metadata = legacy(
        {
            "default-priorities": {"namespace": ["prio"]},
            "providers": {"prio": {"install-time": False}},
            "variants": {"b": {"prio": {"order": ["2"]}}, "a": {"prio": {"order": ["1"]}}},
        }
    )
    entry = metadata_document(metadata)["providers"]["prio"]
    assert entry == {"feature-order": ["order"], "static-properties": {"order": ["1", "2"]}}
    assert reread(metadata).static_supported() == metadata.static_supported()


@pytest.mark.parametrize(
    "path", sorted(REAL_WORLD.glob("*-variants.json")), ids=lambda p: p.name.split("_")[0]
)
def test_real_world_documents_are_valid_pep850(
    path: Path, pep850_validator: Draft202012Validator
) -> None:
    metadata = VariantMetadata.from_json(path.read_bytes(), source=str(path))
    assert needs_providers_format(metadata)
    document = metadata_document(metadata)
    pep850_validator.validate(document)
    assert document["variants"] == metadata.to_dict()["variants"]
    back = reread(metadata)
    assert back.static_supported() == _folded_static(metadata)
    for ns, info in metadata.providers.items():
        if ns in metadata.namespaces and not back.providers[ns].is_static:
            assert back.providers[ns].requires == info.requires
            assert back.providers[ns].plugin_api == info.plugin_api
            assert back.providers[ns].enable_if == info.enable_if
    # Writing what was read gives the same bytes (stable).
    assert metadata_bytes(back) == metadata_bytes(metadata)


def _folded_static(metadata: VariantMetadata) -> dict[str, dict[str, tuple[str, ...]]]:
    """static_supported() with the property priorities applied to its values."""
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for ns, features in metadata.static_supported().items():
        priorities = metadata.property_priorities.get(ns, {})
        out[ns] = {}
        for feature, values in features.items():
            head = tuple(v for v in priorities.get(feature, ()) if v in values)
            out[ns][feature] = head + tuple(v for v in values if v not in head)
    return out


# -- bounded fuzz: any legacy provider information gives a valid, stable document -----

_NAMES = st.sampled_from(["a", "b", "c"])
_VALUES = st.lists(st.sampled_from(["1", "2", "3", "x"]), min_size=1, max_size=3, unique=True)


@st.composite
def legacy_documents(draw: st.DrawFn) -> dict[str, Any]:
    namespaces = draw(
        st.lists(st.sampled_from(["nvidia", "prio", "blas"]), min_size=1, unique=True)
    )
    providers: dict[str, Any] = {}
    static: dict[str, Any] = {}
    feature: dict[str, Any] = {}
    prop: dict[str, Any] = {}
    variants: dict[str, Any] = {"null": {}}
    for ns in namespaces:
        kind = draw(st.sampled_from(["none", "plugin", "aot"]))
        features = draw(st.dictionaries(_NAMES, _VALUES, min_size=1, max_size=3))
        if kind == "plugin":
            providers[ns] = {"requires": [f"{ns}-provider"], "plugin-api": f"{ns}_provider"}
            if draw(st.booleans()):
                providers[ns]["optional"] = True
        elif kind == "aot":
            providers[ns] = {"install-time": False}
            static[ns] = features
            if draw(st.booleans()):
                feature[ns] = draw(st.permutations(sorted(features)))
            if draw(st.booleans()):
                name = sorted(features)[0]
                prop[ns] = {name: draw(st.permutations(features[name]))}
        for index, (name, values) in enumerate(sorted(features.items())):
            variants[f"{ns}{index}"] = {ns: {name: [values[0]]}}
    priorities: dict[str, Any] = {"namespace": namespaces}
    if feature:
        priorities["feature"] = feature
    if prop:
        priorities["property"] = prop
    return {
        "default-priorities": priorities,
        "providers": providers,
        "static-properties": static,
        "variants": variants,
    }


@given(legacy_documents())
def test_fuzz_legacy_metadata_writes_valid_stable_pep850(doc: dict[str, Any]) -> None:
    schema = json.loads((DATA / "pep-0850-variant-schema.json").read_text(encoding="utf-8"))
    metadata = legacy(doc)
    document = metadata_document(metadata)
    Draft202012Validator(schema).validate(document)
    back = reread(metadata)
    assert metadata_bytes(back) == metadata_bytes(metadata)
    # Static namespaces select alike before and after.
    before = rank_variants(metadata, SupportedProperties(metadata.static_supported()))
    after = rank_variants(back, SupportedProperties(back.static_supported()))
    assert [v.label for v in before.compatible] == [v.label for v in after.compatible]


# -- merging and publishing keep it ---------------------------------------------------


def test_merge_keeps_pep850_provider_fields() -> None:
    base = {
        "$schema": PEP850_SCHEMA_URL,
        "default-priorities": {"namespace": ["blas", "nvidia"]},
        "providers": {
            "blas": {"feature-order": ["kind"], "static-properties": {"kind": ["mkl", "openblas"]}},
            "nvidia": {**NVIDIA_PLUGIN, "optional": True, "feature-order": ["sm_arch"]},
        },
    }
    one = VariantMetadata.from_dict({**base, "variants": {"mkl": {"blas": {"kind": ["mkl"]}}}})
    two = VariantMetadata.from_dict(
        {**base, "variants": {"sm90": {"nvidia": {"sm_arch": ["90_real"]}}}}
    )
    merged = merge([one, two])
    assert merged.providers == one.providers
    assert metadata_document(merged)["providers"] == base["providers"]
    assert set(merged.variants) == {"mkl", "sm90"}


PROJECT = """\
[variant.default-priorities]
namespace = ["nvidia", "prio"]
feature = {prio = ["order"]}

[variant.providers.nvidia]
requires = ["nvidia-variant-provider>=0.0.1,<1.0.0"]
plugin-api = "nvidia_variant_provider.plugin:NvidiaVariantPlugin"

[variant.providers.prio]
install-time = false

[variant.static-properties.prio]
order = ["1", "2"]
"""


def provider_wheels(directory: Path, validator: Draft202012Validator) -> Path:
    """Two variant wheels of pkg 1.0 made with PROJECT: each carries its providers."""
    project = read_pyproject_variant(PROJECT)
    plain = directory / "plain"
    plain.mkdir()
    base = make_wheel(plain, "pkg-1.0-py3-none-any.whl", record=True)
    wheels = directory / "wheels"
    for label, props in {
        "cu128": ["nvidia :: cuda_version_lower_bound :: 12.8", "prio :: order :: 2"],
        "cu130": ["nvidia :: cuda_version_lower_bound :: 13.0", "prio :: order :: 1"],
    }.items():
        made = make_variant(
            base,
            wheels,
            properties=[VariantProperty.parse(p) for p in props],
            label=label,
            project=project,
        )
        with WheelArchive(made) as archive:
            own = json.loads(archive.read(archive.dist_info_path("variant.json")))
        validator.validate(own)
        assert set(own["providers"]) == {"nvidia", "prio"}
    return wheels


def test_index_build_publishes_provider_information(
    tmp_path: Path, pep850_validator: Draft202012Validator
) -> None:
    wheels = provider_wheels(tmp_path, pep850_validator)
    build_site(wheels, tmp_path / "site")
    published = json.loads((tmp_path / "site/files/pkg/pkg-1.0-variants.json").read_text())
    pep850_validator.validate(published)
    assert published["$schema"] == PEP850_SCHEMA_URL
    assert published["providers"] == {
        "nvidia": NVIDIA_PLUGIN,
        "prio": {"feature-order": ["order"], "static-properties": {"order": ["1", "2"]}},
    }
    assert set(published["variants"]) == {"cu128", "cu130"}


def test_index_serve_publishes_the_same_document(
    tmp_path: Path, pep850_validator: Draft202012Validator
) -> None:
    wheels = provider_wheels(tmp_path, pep850_validator)
    build_site(wheels, tmp_path / "site")
    built = (tmp_path / "site/files/pkg/pkg-1.0-variants.json").read_bytes()
    with uvicorn_thread(create_app(wheels)) as base:
        served = httpx.get(f"{base}/files/pkg/pkg-1.0-variants.json")
    assert served.status_code == 200
    assert served.content == built
