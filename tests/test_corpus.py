"""Conformance: wheelwise reads every metadata file variantlib produced, and agrees with it."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from wheelwise.variants import (
    PEP825_SCHEMA_URL,
    InvalidMetadata,
    SchemaVersion,
    VariantMetadata,
    VariantProperty,
    hash_label,
    merge,
)

# What tests/data/README.md says the test-package wheels contain.
FEAT1 = "installable_plugin :: feat1 :: val1c"
FEAT2 = "installable_plugin :: feat2 :: val2b"
EXPECTED_LABELS: dict[str, set[str]] = {
    "null": set(),
    "60567bd9": {FEAT1},
    "foo": {FEAT1},
    "fbe82642": {FEAT2},
    "bar": {FEAT2},
    "5d8be4b9": {FEAT1, FEAT2},
}
TEST_PACKAGE_NAMESPACES = ("installable_plugin", "non_existing_plugin")

# The corpus, listed here so that a file silently going missing fails the tests.
CORPUS_JSON = [
    "test-package/dist/test_package-0-variants.json",
    "variant_json_files/dummy_project-1.0.0-variants.json",
    "variant_json_files/sandbox_project-1.0.0-variants.json",
]
CORPUS_WHEELS = [
    *(f"test-package/dist/test_package-0-py3-none-any-{label}.whl" for label in EXPECTED_LABELS),
    "test-package/dist/test_package-0-py3-none-any.whl",
    "test-plugin-package/dist/test_plugin_package-0-py3-none-any.whl",
]


def wheel_label(path: Path) -> str | None:
    """The variant label of a wheel filename (the 6th dash-separated part), if any."""
    parts = path.name.removesuffix(".whl").split("-")
    assert len(parts) in (5, 6), path.name
    return parts[5] if len(parts) == 6 else None


def read_variant_json(path: Path) -> bytes | None:
    """The raw *.dist-info/variant.json of a wheel (None if it has none)."""
    with zipfile.ZipFile(path) as archive:
        names = [
            n
            for n in archive.namelist()
            if n.endswith("/variant.json") and n.count("/") == 1 and ".dist-info/" in n
        ]
        assert len(names) <= 1, names
        return archive.read(names[0]) if names else None


def variant_wheels(corpus_dir: Path) -> list[Path]:
    return sorted(p for p in (corpus_dir / "test-package" / "dist").glob("*.whl") if wheel_label(p))


def props(md: VariantMetadata, label: str) -> set[str]:
    return {str(p) for p in md.properties(label)}


def test_corpus_is_complete(corpus_dir: Path) -> None:
    found_json = {p.relative_to(corpus_dir).as_posix() for p in corpus_dir.rglob("*.json")}
    found_wheels = {p.relative_to(corpus_dir).as_posix() for p in corpus_dir.rglob("*.whl")}
    assert found_json == set(CORPUS_JSON)
    assert found_wheels == set(CORPUS_WHEELS)


# --------------------------------------------------------------------------------------
# Every *.json file
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("relpath", CORPUS_JSON)
def test_json_file_loads(corpus_dir: Path, relpath: str, variant_schema_validator: Any) -> None:
    path = corpus_dir / relpath
    data = path.read_bytes()
    md = VariantMetadata.from_json(data, source=str(path))
    raw = json.loads(data)
    assert md.source == str(path)
    assert md.is_legacy
    assert md.schema == SchemaVersion(0, 0, 3, legacy=True)
    assert md.namespaces == tuple(raw["default-priorities"]["namespace"])
    assert set(md.labels) == set(raw["variants"])
    for label, ns_map in raw["variants"].items():
        expected = {
            f"{ns} :: {feature} :: {value}"
            for ns, features in ns_map.items()
            for feature, values in features.items()
            for value in values
        }
        assert props(md, label) == expected
    assert set(md.providers) == set(raw["providers"])
    for ns, block in raw["providers"].items():
        assert md.providers[ns].to_dict() == block
    # The canonical PEP 825 output is schema-valid and reads back to the same data.
    written = md.to_json()
    out = json.loads(written)
    variant_schema_validator.validate(out)
    assert out["$schema"] == PEP825_SCHEMA_URL
    again = VariantMetadata.from_json(written)
    assert (again.namespaces, again.variants) == (md.namespaces, md.variants)
    assert again.to_json() == written


def test_dummy_project_priorities(corpus_dir: Path) -> None:
    path = corpus_dir / "variant_json_files" / "dummy_project-1.0.0-variants.json"
    md = VariantMetadata.from_json(path.read_bytes())
    assert md.namespaces == ("fictional_hw", "fictional_tech")
    assert md.feature_priorities == {
        "fictional_hw": ("humor", "compute_accuracy"),
        "fictional_tech": ("quantum",),
    }
    assert md.property_priorities == {"fictional_tech": {"technology": ("auto_chef",)}}
    assert md.providers["fictional_hw"].enable_if == "python_version >= '3.12'"
    assert md.providers["fictional_hw"].plugin_api == (
        "provider_fictional_hw.plugin:FictionalHWPlugin"
    )
    assert md.providers["fictional_tech"].enable_if is None
    assert md.providers["fictional_tech"].requires == ("provider-fictional-tech == 1.0.0",)
    assert props(md, "181830db") == {
        f"fictional_hw :: compute_capability :: {v}" for v in ("4", "5", "6", "7")
    }
    assert props(md, "null") == set()


def test_sandbox_project_empty_priorities(corpus_dir: Path) -> None:
    path = corpus_dir / "variant_json_files" / "sandbox_project-1.0.0-variants.json"
    md = VariantMetadata.from_json(path.read_bytes())
    assert md.namespaces == ("fictional_tech", "fictional_hw")
    assert md.feature_priorities == {}
    assert md.property_priorities == {}
    assert len(md.labels) == 4


def test_shared_labels_agree_across_projects(corpus_dir: Path) -> None:
    # The two variant_json_files projects share some hash labels: same properties.
    dummy, sandbox = (
        VariantMetadata.from_json((corpus_dir / "variant_json_files" / name).read_bytes())
        for name in (
            "dummy_project-1.0.0-variants.json",
            "sandbox_project-1.0.0-variants.json",
        )
    )
    shared = set(dummy.labels) & set(sandbox.labels)
    assert shared == {"null", "3f7188c1", "03e04d5e"}
    for label in shared:
        assert dummy.variants[label] == sandbox.variants[label]


@pytest.mark.parametrize("relpath", CORPUS_JSON)
def test_hash_labels_are_variantlib_hashes(corpus_dir: Path, relpath: str) -> None:
    md = VariantMetadata.from_json((corpus_dir / relpath).read_bytes())
    hashed = [label for label in md.labels if len(label) == 8 and label.isalnum()]
    assert hashed
    for label in hashed:
        assert hash_label(md.properties(label)) == label


# --------------------------------------------------------------------------------------
# Every wheel
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("relpath", CORPUS_WHEELS)
def test_wheel_variant_json(corpus_dir: Path, relpath: str, variant_schema_validator: Any) -> None:
    path = corpus_dir / relpath
    label = wheel_label(path)
    data = read_variant_json(path)
    if label is None:
        assert data is None, "a non-variant wheel has no variant.json"
        return
    assert data is not None
    md = VariantMetadata.from_json(data, source=f"{path.name}!variant.json")
    # PEP 825: exactly one entry, keyed by the filename's label.
    assert md.labels == (label,)
    assert props(md, label) == EXPECTED_LABELS[label]
    assert md.namespaces == TEST_PACKAGE_NAMESPACES
    assert md.providers["non_existing_plugin"].optional is True
    assert md.providers["installable_plugin"].optional is False
    assert md.providers["installable_plugin"].requires == ("test-plugin-package",)
    assert md.providers["non_existing_plugin"].requires == ("do-not-install-me",)
    variant_schema_validator.validate(json.loads(md.to_json()))


def test_all_labels_from_readme_present(corpus_dir: Path) -> None:
    assert {wheel_label(p) for p in variant_wheels(corpus_dir)} == set(EXPECTED_LABELS)


def test_readme_hash_labels(corpus_dir: Path) -> None:
    for label, properties in EXPECTED_LABELS.items():
        expected = hash_label(VariantProperty.parse(p) for p in properties)
        if label in ("foo", "bar"):
            assert expected != label
        else:
            assert expected == label
    # foo/60567bd9 and bar/fbe82642 are the same property sets under two labels.
    assert EXPECTED_LABELS["foo"] == EXPECTED_LABELS["60567bd9"]
    assert EXPECTED_LABELS["bar"] == EXPECTED_LABELS["fbe82642"]


# --------------------------------------------------------------------------------------
# Merging the wheels gives the published index metadata
# --------------------------------------------------------------------------------------


def test_merged_wheels_equal_index_file(corpus_dir: Path, variant_schema_validator: Any) -> None:
    docs = []
    for path in variant_wheels(corpus_dir):
        data = read_variant_json(path)
        assert data is not None
        docs.append(VariantMetadata.from_json(data, source=path.name))
    assert len(docs) == len(EXPECTED_LABELS)
    merged = merge(docs)
    index_path = corpus_dir / "test-package" / "dist" / "test_package-0-variants.json"
    index = VariantMetadata.from_json(index_path.read_bytes(), source=index_path.name)
    assert merged.namespaces == index.namespaces == TEST_PACKAGE_NAMESPACES
    assert merged.variants == index.variants
    assert merged.providers == index.providers
    assert merged == index
    assert merged.to_json() == index.to_json()
    assert set(merged.labels) == set(EXPECTED_LABELS)
    for label, expected in EXPECTED_LABELS.items():
        assert props(merged, label) == expected
    # Any order gives the same result; the result names every source.
    assert merge(reversed(docs)) == merged
    for path in variant_wheels(corpus_dir):
        assert path.name in merged.source
    variant_schema_validator.validate(json.loads(merged.to_json()))
    # Merging the index file in again changes nothing (the index is a superset).
    assert merge([index, *docs]) == index


def test_optional_provider_in_index(corpus_dir: Path) -> None:
    index_path = corpus_dir / "test-package" / "dist" / "test_package-0-variants.json"
    md = VariantMetadata.from_json(index_path.read_bytes())
    assert [ns for ns, p in md.providers.items() if p.optional] == ["non_existing_plugin"]
    assert not any(p.is_static for p in md.providers.values())
    assert md.static_supported() == {}


def test_truncated_variant_json_is_invalid(corpus_dir: Path) -> None:
    path = variant_wheels(corpus_dir)[0]
    data = read_variant_json(path)
    assert data is not None
    with pytest.raises(InvalidMetadata, match=r"^broken!variant\.json: invalid JSON"):
        VariantMetadata.from_json(data[: len(data) // 2], source="broken!variant.json")


# --------------------------------------------------------------------------------------
# variantlib (the reference implementation) as an oracle
# --------------------------------------------------------------------------------------


def _variantlib_view(doc: Any) -> tuple[tuple[str, ...], dict[str, set[str]]]:
    return (
        tuple(doc.namespace_priorities),
        {label: {p.to_str() for p in desc.properties} for label, desc in doc.variants.items()},
    )


@pytest.mark.parametrize("relpath", CORPUS_JSON)
def test_agrees_with_variantlib(corpus_dir: Path, relpath: str) -> None:
    variants_json = pytest.importorskip("variantlib.variants_json")
    raw = json.loads((corpus_dir / relpath).read_bytes())
    # variantlib 0.2 no longer knows PEP 817's feature/property priorities and enable-if.
    trimmed = {
        **raw,
        "default-priorities": {"namespace": raw["default-priorities"]["namespace"]},
        "providers": {
            ns: {k: v for k, v in block.items() if k != "enable-if"}
            for ns, block in raw["providers"].items()
        },
    }
    theirs = _variantlib_view(variants_json.VariantsJson(trimmed))
    ours = VariantMetadata.from_dict(raw)
    assert ours.namespaces == theirs[0]
    assert {label: props(ours, label) for label in ours.labels} == theirs[1]


def test_merge_agrees_with_variantlib(corpus_dir: Path) -> None:
    variants_json = pytest.importorskip("variantlib.variants_json")
    raws = [json.loads(read_variant_json(p) or b"") for p in variant_wheels(corpus_dir)]
    theirs = variants_json.VariantsJson(raws[0])
    for raw in raws[1:]:
        theirs.merge(variants_json.VariantsJson(raw))
    ours = merge(VariantMetadata.from_dict(raw) for raw in raws)
    namespaces, variants = _variantlib_view(theirs)
    assert ours.namespaces == namespaces
    assert {label: props(ours, label) for label in ours.labels} == variants
    # variantlib's own (v0.2.0) output of the merge reads back to the same data.
    again = VariantMetadata.from_json(theirs.to_str())
    assert again.schema == SchemaVersion(0, 2, 0, legacy=True)
    assert (again.namespaces, again.variants, again.providers) == (
        ours.namespaces,
        ours.variants,
        ours.providers,
    )


def test_bundled_corpus_matches_the_published_one() -> None:
    """tests/data carries a copy of the conformance corpus; where the published
    corpus sits beside the repository (../shared), the copy must equal it byte for byte."""
    published = Path(__file__).resolve().parents[2] / "shared" / "corpus"
    if not published.is_dir():
        pytest.skip("no published corpus beside the repository to compare with")
    bundled = Path(__file__).resolve().parent / "data" / "corpus"
    published_files = {p.relative_to(published): p for p in published.rglob("*") if p.is_file()}
    bundled_files = {p.relative_to(bundled): p for p in bundled.rglob("*") if p.is_file()}
    assert sorted(bundled_files) == sorted(published_files)
    for relative, path in published_files.items():
        assert bundled_files[relative].read_bytes() == path.read_bytes(), relative
