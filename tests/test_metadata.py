"""variant.json / *-variants.json: reading (PEP 825 and legacy drafts), validation, writing."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wheelwise.variants import (
    PEP825_SCHEMA_URL,
    InvalidMetadata,
    ProviderInfo,
    SchemaVersion,
    UnsupportedSchema,
    VariantMetadata,
    VariantProperty,
)
from wheelwise.variants.pyproject import read_pyproject_variant

SCHEMA_BASE = "https://variants-schema.wheelnext.dev"
LEGACY_817_URL = f"{SCHEMA_BASE}/v0.0.3.json"
VARIANTLIB_URL = f"{SCHEMA_BASE}/v0.2.0.json"

# --------------------------------------------------------------------------------------
# The PEP texts' own examples (comments and trailing commas removed).
# --------------------------------------------------------------------------------------

# PEP 825 "Variant metadata" -> "Example": variant.json of the x86_64_v3_openblas wheel.
PEP825_VARIANT_JSON = """
{
  "$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
  "default-priorities": {
    "namespace": ["x86_64", "aarch64", "blas_lapack"]
  },
  "variants": {
    "x86_64_v3_openblas": {
      "blas_lapack": {
        "library": ["openblas"]
      },
      "x86_64": {
        "level": ["v3"]
      }
    }
  }
}
"""

# PEP 825 "Index-level metadata": foo-1.2.3-variants.json ("identical to above" filled in).
PEP825_INDEX_JSON = """
{
  "$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
  "default-priorities": {
    "namespace": ["x86_64", "aarch64", "blas_lapack"]
  },
  "variants": {
    "null": {},
    "x86_64_v3_openblas": {
      "blas_lapack": {
        "library": ["openblas"]
      },
      "x86_64": {
        "level": ["v3"]
      }
    },
    "x86_64_v4_mkl": {
      "blas_lapack": {
        "library": ["mkl"]
      },
      "x86_64": {
        "level": ["v4"]
      }
    }
  }
}
"""

# PEP 817 "Variant metadata" -> "*.dist-info/variant.json" example (legacy v0.0.3).
PEP817_VARIANT_JSON = """
{
  "$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
  "default-priorities": {
     "feature": {
        "aarch64": ["version"],
        "x86_64": ["level"]
     },
     "namespace": ["x86_64", "aarch64", "blas_lapack"],
     "property": {
        "x86_64": {
           "level": ["v3", "v2", "v1"]
        }
     }
  },
  "providers": {
     "aarch64": {
        "enable-if": "platform_machine == 'aarch64' or 'arm' in platform_machine",
        "plugin-api": "provider_variant_aarch64.plugin:AArch64Plugin",
        "requires": [
           "provider-variant-aarch64 >=0.0.1; python_version >= '3.12'",
           "legacy-provider-variant-aarch64 >=0.0.1; python_version < '3.12'"
        ]
     },
     "blas_lapack": {
        "install-time": false,
        "requires": ["blas-lapack-variant-provider"]
     },
     "x86_64": {
        "enable-if": "platform_machine == 'x86_64' or platform_machine == 'AMD64'",
        "plugin-api": "provider_variant_x86_64.plugin:X8664Plugin",
        "requires": ["provider-variant-x86-64 >=0.0.1"]
     }
  },
  "static-properties": {
     "blas_lapack": {
        "provider": ["accelerate", "openblas", "mkl"]
     }
  },
  "variants": {
     "x8664v3_openblas": {
        "blas_lapack": {
           "provider": ["openblas"]
        },
        "x86_64": {
           "level": ["v3"]
        }
     }
  }
}
"""

# PEP 817 "pyproject.toml: variant project-level data table" example.
PEP817_PYPROJECT_TOML = """
[project]
name = "foo"
version = "1.2.3"

[variant.default-priorities]
# prefer CPU features over BLAS/LAPACK variants
namespace = ["x86_64", "aarch64", "blas_lapack"]

# prefer aarch64 version and x86_64 level features over other features
# (specific CPU extensions like "sse4.1")
feature.aarch64 = ["version"]
feature.x86_64 = ["level"]

# prefer x86-64-v3 and then older (even if CPU is newer)
property.x86_64.level = ["v3", "v2", "v1"]

[variant.providers.aarch64]
# example using different package based on Python version
requires = [
   "provider-variant-aarch64 >=0.0.1; python_version >= '3.12'",
   "legacy-provider-variant-aarch64 >=0.0.1; python_version < '3.12'",
]
# use only on aarch64/arm machines
enable-if = "platform_machine == 'aarch64' or 'arm' in platform_machine"
plugin-api = "provider_variant_aarch64.plugin:AArch64Plugin"

[variant.providers.x86_64]
requires = ["provider-variant-x86-64 >=0.0.1"]
# use only on x86_64 machines
enable-if = "platform_machine == 'x86_64' or platform_machine == 'AMD64'"
plugin-api = "provider_variant_x86_64.plugin:X8664Plugin"

[variant.providers.blas_lapack]
# plugin-api inferred from requires
requires = ["blas-lapack-variant-provider"]
# plugin used only when building package, properties will be inlined
# into variant.json
install-time = false
"""

# variantlib 0.2 style: static properties live on the provider, with a feature order.
VARIANTLIB_DOC: dict[str, Any] = {
    "$schema": VARIANTLIB_URL,
    "default-priorities": {"namespace": ["x86_64", "nvidia"]},
    "providers": {
        "nvidia": {
            "requires": ["nvidia-variant-provider>=0.0.1"],
            "plugin-api": "nvidia_variant_provider.plugin:NvidiaPlugin",
            "optional": True,
        },
        "x86_64": {
            "static-properties": {
                "level": ["v4", "v3", "v2", "v1"],
                "avx512_bf16": ["on"],
                "sse3": ["on"],
            },
            "feature-order": ["avx512_bf16", "level"],
            "builtin": "x86_64",
            "some-future-key": {"nested": [1, 2]},
        },
    },
    "variants": {
        "cu128": {"nvidia": {"cuda_version_lower_bound": ["12.8"]}},
        "x86_64_v3": {"x86_64": {"level": ["v3"]}},
    },
}


def pep825_doc() -> dict[str, Any]:
    return json.loads(PEP825_INDEX_JSON)  # type: ignore[no-any-return]


def pep817_doc() -> dict[str, Any]:
    return json.loads(PEP817_VARIANT_JSON)  # type: ignore[no-any-return]


def props(md: VariantMetadata, label: str) -> set[str]:
    return {str(p) for p in md.properties(label)}


def assert_invalid(
    doc: object, *fragments: str, source: str = "dist/foo-1.0-variants.json"
) -> InvalidMetadata:
    """from_dict(doc) must fail with a message naming the source and every fragment."""
    with pytest.raises(InvalidMetadata) as info:
        VariantMetadata.from_dict(doc, source=source)
    message = str(info.value)
    assert message.startswith(f"{source}: "), message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return info.value


# ======================================================================================
# Reading PEP 825 documents
# ======================================================================================


class TestReadPep825:
    def test_variant_json_example(self) -> None:
        md = VariantMetadata.from_json(PEP825_VARIANT_JSON, source="x/variant.json")
        assert md.namespaces == ("x86_64", "aarch64", "blas_lapack")
        assert md.labels == ("x86_64_v3_openblas",)
        assert md.variants == {
            "x86_64_v3_openblas": {
                "blas_lapack": {"library": ("openblas",)},
                "x86_64": {"level": ("v3",)},
            }
        }
        assert md.properties("x86_64_v3_openblas") == (
            VariantProperty("blas_lapack", "library", "openblas"),
            VariantProperty("x86_64", "level", "v3"),
        )
        assert md.schema == SchemaVersion(0, 1, 1, legacy=False)
        assert not md.is_legacy
        assert md.providers == {}
        assert md.static_properties == {}
        assert md.feature_priorities == {}
        assert md.property_priorities == {}
        assert md.static_supported() == {}
        assert md.source == "x/variant.json"

    def test_index_json_example(self) -> None:
        md = VariantMetadata.from_json(PEP825_INDEX_JSON.encode("utf-8"))
        assert set(md.labels) == {"null", "x86_64_v3_openblas", "x86_64_v4_mkl"}
        assert md.properties("null") == ()
        assert props(md, "x86_64_v4_mkl") == {
            "blas_lapack :: library :: mkl",
            "x86_64 :: level :: v4",
        }
        with pytest.raises(KeyError):
            md.properties("x86_64_v5")

    def test_bytes_and_text_give_equal_objects(self) -> None:
        assert VariantMetadata.from_json(PEP825_INDEX_JSON) == VariantMetadata.from_json(
            PEP825_INDEX_JSON.encode("utf-8")
        )

    def test_source_is_not_part_of_equality(self) -> None:
        a = VariantMetadata.from_json(PEP825_INDEX_JSON, source="a")
        b = VariantMetadata.from_json(PEP825_INDEX_JSON, source="b")
        assert a == b
        assert a.source != b.source

    def test_values_are_sorted_and_deduplicated_on_read(self) -> None:
        doc = pep825_doc()
        doc["variants"]["x86_64_v3_openblas"]["x86_64"]["level"] = ["v3", "v2", "v3", "v10"]
        md = VariantMetadata.from_dict(doc)
        assert md.variants["x86_64_v3_openblas"]["x86_64"]["level"] == ("v10", "v2", "v3")

    def test_namespace_order_is_kept(self) -> None:
        doc = pep825_doc()
        doc["default-priorities"]["namespace"] = ["blas_lapack", "x86_64", "aarch64"]
        assert VariantMetadata.from_dict(doc).namespaces == ("blas_lapack", "x86_64", "aarch64")

    def test_older_minor_accepted(self) -> None:
        doc = pep825_doc()
        doc["$schema"] = f"{SCHEMA_BASE}/peps/825/v0.1.0.json"
        md = VariantMetadata.from_dict(doc)
        assert md.schema == SchemaVersion(0, 1, 0, legacy=False)
        assert md.variants == VariantMetadata.from_dict(pep825_doc()).variants

    def test_newer_minor_accepted_and_unknown_keys_ignored(self) -> None:
        doc = pep825_doc()
        doc["$schema"] = f"{SCHEMA_BASE}/peps/825/v0.2.0.json"
        doc["new-top-level-key"] = {"anything": [1, 2, 3]}
        doc["default-priorities"]["feature"] = {"x86_64": ["level"]}
        md = VariantMetadata.from_dict(doc)
        assert md.schema == SchemaVersion(0, 2, 0, legacy=False)
        assert md.schema.is_newer_minor
        reference = VariantMetadata.from_dict(pep825_doc())
        assert md.namespaces == reference.namespaces
        assert md.variants == reference.variants
        # Legacy-only data is not picked up from a PEP 825 document.
        assert md.feature_priorities == {}
        # What we write is the version we support, without the unknown keys.
        out = json.loads(md.to_json())
        assert out["$schema"] == PEP825_SCHEMA_URL
        assert set(out) == {"$schema", "default-priorities", "variants"}
        assert out["default-priorities"] == {"namespace": list(reference.namespaces)}

    def test_newer_minor_still_validates_known_keys(self) -> None:
        doc = pep825_doc()
        doc["$schema"] = f"{SCHEMA_BASE}/peps/825/v0.9.0.json"
        doc["variants"]["BAD"] = {}
        assert_invalid(doc, "variants", "'BAD'")

    @pytest.mark.parametrize("key", ["providers", "static-properties", "x-extension"])
    def test_unknown_top_level_key_rejected_in_known_version(self, key: str) -> None:
        doc = pep825_doc()
        doc[key] = {}
        assert_invalid(doc, "top level", repr(key), "0.1.1")

    def test_unknown_top_level_key_rejected_in_older_minor(self) -> None:
        doc = pep825_doc()
        doc["$schema"] = f"{SCHEMA_BASE}/peps/825/v0.1.0.json"
        doc["extra"] = 1
        assert_invalid(doc, "top level", "'extra'")

    def test_null_with_empty_namespace_object_is_the_null_variant(self) -> None:
        doc = pep825_doc()
        doc["variants"]["null"] = {"x86_64": {}}
        md = VariantMetadata.from_dict(doc)
        assert md.properties("null") == ()
        assert md == VariantMetadata.from_dict(pep825_doc())

    def test_empty_variants_object_is_allowed(self) -> None:
        doc = pep825_doc()
        doc["variants"] = {}
        md = VariantMetadata.from_dict(doc)
        assert md.labels == ()
        assert json.loads(md.to_json())["variants"] == {}

    def test_labels_with_dots_and_digits(self) -> None:
        doc = pep825_doc()
        doc["variants"] = {"1.2_x": {"x86_64": {"level": ["v1.0"]}}}
        md = VariantMetadata.from_dict(doc)
        assert md.labels == ("1.2_x",)
        assert props(md, "1.2_x") == {"x86_64 :: level :: v1.0"}


# ======================================================================================
# Reading legacy documents
# ======================================================================================


class TestReadLegacyPep817:
    def test_pep817_variant_json_example(self) -> None:
        md = VariantMetadata.from_json(PEP817_VARIANT_JSON, source="legacy/variant.json")
        assert md.is_legacy
        assert md.schema == SchemaVersion(0, 0, 3, legacy=True)
        assert md.namespaces == ("x86_64", "aarch64", "blas_lapack")
        assert md.labels == ("x8664v3_openblas",)
        assert props(md, "x8664v3_openblas") == {
            "blas_lapack :: provider :: openblas",
            "x86_64 :: level :: v3",
        }
        assert md.feature_priorities == {"aarch64": ("version",), "x86_64": ("level",)}
        # Value order in priorities is preference order: kept as written, not sorted.
        assert md.property_priorities == {"x86_64": {"level": ("v3", "v2", "v1")}}
        assert md.static_properties == {
            "blas_lapack": {"provider": ("accelerate", "openblas", "mkl")}
        }

    def test_pep817_providers(self) -> None:
        md = VariantMetadata.from_json(PEP817_VARIANT_JSON)
        assert set(md.providers) == {"aarch64", "blas_lapack", "x86_64"}
        aarch64 = md.providers["aarch64"]
        assert aarch64 == ProviderInfo(
            requires=(
                "provider-variant-aarch64 >=0.0.1; python_version >= '3.12'",
                "legacy-provider-variant-aarch64 >=0.0.1; python_version < '3.12'",
            ),
            plugin_api="provider_variant_aarch64.plugin:AArch64Plugin",
            enable_if="platform_machine == 'aarch64' or 'arm' in platform_machine",
        )
        assert aarch64.optional is False
        assert aarch64.install_time is True
        assert not aarch64.is_static
        blas = md.providers["blas_lapack"]
        assert blas.install_time is False
        assert blas.is_static
        assert blas.requires == ("blas-lapack-variant-provider",)
        assert blas.plugin_api is None
        assert blas.enable_if is None
        x86 = md.providers["x86_64"]
        assert x86.plugin_api == "provider_variant_x86_64.plugin:X8664Plugin"
        assert x86.enable_if == "platform_machine == 'x86_64' or platform_machine == 'AMD64'"

    def test_provider_to_dict_gives_back_the_original_block(self) -> None:
        md = VariantMetadata.from_json(PEP817_VARIANT_JSON)
        original = json.loads(PEP817_VARIANT_JSON)["providers"]
        assert {ns: p.to_dict() for ns, p in md.providers.items()} == original

    def test_static_supported_keeps_preference_order(self) -> None:
        md = VariantMetadata.from_json(PEP817_VARIANT_JSON)
        assert md.static_supported() == {
            "blas_lapack": {"provider": ("accelerate", "openblas", "mkl")}
        }
        assert list(md.static_supported()["blas_lapack"]["provider"]) == [
            "accelerate",
            "openblas",
            "mkl",
        ]

    def test_static_supported_feature_order_from_default_priorities(self) -> None:
        doc = pep817_doc()
        doc["static-properties"] = {
            "blas_lapack": {"zeta": ["1"], "provider": ["mkl", "openblas"], "alpha": ["2"]}
        }
        doc["default-priorities"]["feature"]["blas_lapack"] = ["provider"]
        supported = VariantMetadata.from_dict(doc).static_supported()
        # Prioritised features first, then the rest in document order.
        assert list(supported["blas_lapack"]) == ["provider", "zeta", "alpha"]
        assert supported["blas_lapack"]["provider"] == ("mkl", "openblas")

    def test_ordered_values_are_deduplicated_keeping_first_position(self) -> None:
        doc = pep817_doc()
        doc["static-properties"]["blas_lapack"]["provider"] = ["mkl", "openblas", "mkl", "a"]
        doc["default-priorities"]["property"]["x86_64"]["level"] = ["v3", "v1", "v3"]
        md = VariantMetadata.from_dict(doc)
        assert md.static_properties["blas_lapack"]["provider"] == ("mkl", "openblas", "a")
        assert md.property_priorities["x86_64"]["level"] == ("v3", "v1")

    def test_static_supported_priority_for_missing_feature_is_skipped(self) -> None:
        doc = pep817_doc()
        doc["default-priorities"]["feature"]["blas_lapack"] = ["nonexistent", "provider"]
        supported = VariantMetadata.from_dict(doc).static_supported()
        assert list(supported["blas_lapack"]) == ["provider"]

    def test_legacy_output_is_pep825_only(self, variant_schema_validator: Any) -> None:
        md = VariantMetadata.from_json(PEP817_VARIANT_JSON)
        out = json.loads(md.to_json())
        assert out == {
            "$schema": PEP825_SCHEMA_URL,
            "default-priorities": {"namespace": ["x86_64", "aarch64", "blas_lapack"]},
            "variants": {
                "x8664v3_openblas": {
                    "blas_lapack": {"provider": ["openblas"]},
                    "x86_64": {"level": ["v3"]},
                }
            },
        }
        variant_schema_validator.validate(out)

    def test_legacy_without_variants_loads(self) -> None:
        doc = pep817_doc()
        del doc["variants"]
        md = VariantMetadata.from_dict(doc)
        assert md.variants == {}
        assert set(md.providers) == {"aarch64", "blas_lapack", "x86_64"}

    def test_legacy_unknown_keys_are_ignored(self) -> None:
        doc = pep817_doc()
        doc["future-top-level"] = {"x": 1}
        doc["providers"]["x86_64"]["future-provider-key"] = ["kept"]
        md = VariantMetadata.from_dict(doc)
        assert md.providers["x86_64"].unknown == {"future-provider-key": ["kept"]}
        assert md.providers["x86_64"].to_dict()["future-provider-key"] == ["kept"]
        assert md.providers["aarch64"].unknown == {}

    def test_legacy_default_priorities_only_namespace(self) -> None:
        doc = pep817_doc()
        doc["default-priorities"] = {"namespace": ["x86_64", "blas_lapack"]}
        del doc["providers"]["aarch64"]
        md = VariantMetadata.from_dict(doc)
        assert md.feature_priorities == {}
        assert md.property_priorities == {}
        assert md.namespaces == ("x86_64", "blas_lapack")


class TestReadVariantlib02:
    def test_schema_and_variants(self) -> None:
        md = VariantMetadata.from_dict(VARIANTLIB_DOC, source="vl.json")
        assert md.schema == SchemaVersion(0, 2, 0, legacy=True)
        assert md.is_legacy
        assert md.namespaces == ("x86_64", "nvidia")
        assert props(md, "cu128") == {"nvidia :: cuda_version_lower_bound :: 12.8"}
        assert props(md, "x86_64_v3") == {"x86_64 :: level :: v3"}

    def test_provider_static_properties_and_feature_order(self) -> None:
        md = VariantMetadata.from_dict(VARIANTLIB_DOC)
        x86 = md.providers["x86_64"]
        assert x86.static_properties == {
            "level": ("v4", "v3", "v2", "v1"),
            "avx512_bf16": ("on",),
            "sse3": ("on",),
        }
        assert x86.feature_order == ("avx512_bf16", "level")
        assert x86.builtin == "x86_64"
        assert x86.is_static
        assert x86.install_time is True  # not given: the default
        assert x86.unknown == {"some-future-key": {"nested": [1, 2]}}
        nvidia = md.providers["nvidia"]
        assert nvidia.optional is True
        assert nvidia.requires == ("nvidia-variant-provider>=0.0.1",)
        assert nvidia.plugin_api == "nvidia_variant_provider.plugin:NvidiaPlugin"
        assert not nvidia.is_static
        assert nvidia.static_properties == {}

    def test_static_supported_uses_feature_order_then_document_order(self) -> None:
        supported = VariantMetadata.from_dict(VARIANTLIB_DOC).static_supported()
        assert list(supported) == ["x86_64"]
        assert list(supported["x86_64"]) == ["avx512_bf16", "level", "sse3"]
        assert supported["x86_64"]["level"] == ("v4", "v3", "v2", "v1")

    def test_default_priorities_feature_beats_feature_order(self) -> None:
        doc = copy.deepcopy(VARIANTLIB_DOC)
        doc["default-priorities"]["feature"] = {"x86_64": ["sse3"]}
        supported = VariantMetadata.from_dict(doc).static_supported()
        assert list(supported["x86_64"]) == ["sse3", "avx512_bf16", "level"]

    def test_provider_round_trip(self) -> None:
        md = VariantMetadata.from_dict(VARIANTLIB_DOC)
        assert {ns: p.to_dict() for ns, p in md.providers.items()} == VARIANTLIB_DOC["providers"]

    def test_build_requires_and_plugin_use(self) -> None:
        doc = copy.deepcopy(VARIANTLIB_DOC)
        doc["providers"]["nvidia"]["build-requires"] = ["a", "b"]
        doc["providers"]["nvidia"]["plugin-use"] = "build"
        nvidia = VariantMetadata.from_dict(doc).providers["nvidia"]
        assert nvidia.build_requires == ("a", "b")
        assert nvidia.plugin_use == "build"
        assert nvidia.unknown == {}

    def test_null_plugin_api_is_none(self) -> None:
        doc = copy.deepcopy(VARIANTLIB_DOC)
        doc["providers"]["nvidia"]["plugin-api"] = None
        assert VariantMetadata.from_dict(doc).providers["nvidia"].plugin_api is None

    def test_variantlib_output_is_read_back(self) -> None:
        variants_json = pytest.importorskip("variantlib.variants_json")
        doc = copy.deepcopy(VARIANTLIB_DOC)
        del doc["providers"]["x86_64"]["some-future-key"]
        del doc["providers"]["x86_64"]["builtin"]  # variantlib: exactly one kind of provider
        doc["providers"]["x86_64"]["feature-order"] = ["avx512_bf16", "level", "sse3"]
        text = variants_json.VariantsJson(doc).to_str()
        ours = VariantMetadata.from_json(text)
        assert ours.schema.legacy
        assert ours.namespaces == ("x86_64", "nvidia")
        assert ours.variants == VariantMetadata.from_dict(doc).variants
        assert ours.providers == VariantMetadata.from_dict(doc).providers


# ======================================================================================
# Errors
# ======================================================================================


class TestJsonErrors:
    def test_not_json(self) -> None:
        with pytest.raises(InvalidMetadata) as info:
            VariantMetadata.from_json('{"$schema": ', source="broken.json")
        message = str(info.value)
        assert message.startswith("broken.json: ")
        assert "invalid JSON" in message
        assert "line 1" in message

    def test_not_json_bytes(self) -> None:
        with pytest.raises(InvalidMetadata, match=r"^w\.whl!variant\.json: invalid JSON"):
            VariantMetadata.from_json(b"not json at all", source="w.whl!variant.json")

    def test_invalid_utf8(self) -> None:
        data = PEP825_VARIANT_JSON.encode("utf-8").replace(b"openblas", b"open\xffblas")
        with pytest.raises(InvalidMetadata) as info:
            VariantMetadata.from_json(data, source="bad-bytes.json")
        message = str(info.value)
        assert message.startswith("bad-bytes.json: ")
        assert "UTF-8" in message
        position = data.index(b"\xff")
        assert f"byte {position}" in message

    def test_utf16_is_rejected(self) -> None:
        data = PEP825_VARIANT_JSON.encode("utf-16")
        with pytest.raises(InvalidMetadata, match=r"^u16\.json: "):
            VariantMetadata.from_json(data, source="u16.json")

    @pytest.mark.parametrize(
        ("doc", "kind"),
        [
            ("[]", "a list"),
            ('"x"', "a string"),
            ("1", "a number"),
            ("null", "null"),
            ("true", "a boolean"),
        ],
    )
    def test_top_level_not_an_object(self, doc: str, kind: str) -> None:
        with pytest.raises(InvalidMetadata) as info:
            VariantMetadata.from_json(doc, source="top.json")
        message = str(info.value)
        assert message.startswith("top.json: top level: ")
        assert "expected a JSON object" in message
        assert kind in message

    def test_default_source_is_named(self) -> None:
        with pytest.raises(InvalidMetadata, match=r"^<metadata>: "):
            VariantMetadata.from_json("[]")


class TestSchemaErrors:
    def test_missing_schema_reads_as_the_earliest_draft(self) -> None:
        # uv's prototype fixtures have no '$schema': legacy keys keep their meaning.
        doc = pep817_doc()
        del doc["$schema"]
        md = VariantMetadata.from_dict(doc)
        assert md.is_legacy
        assert md.schema == SchemaVersion(0, 0, 0, legacy=True)
        assert md.providers == VariantMetadata.from_dict(pep817_doc()).providers

    @pytest.mark.parametrize(
        "url",
        [
            "",
            "not a url",
            f"{SCHEMA_BASE}/peps/825/latest.json",
            f"{SCHEMA_BASE}/peps/825/v0.1.json",
            f"{SCHEMA_BASE}/peps/825/v0.1.1",
            "ftp://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
            "v0.1.1.json",
        ],
    )
    def test_unrecognised_schema_url(self, url: str) -> None:
        doc = pep825_doc()
        doc["$schema"] = url
        error = assert_invalid(doc, "unrecognised", "$schema", repr(url))
        assert not isinstance(error, UnsupportedSchema)

    @pytest.mark.parametrize("value", [None, 1, ["https://x/v0.1.1.json"], {}])
    def test_schema_not_a_string(self, value: object) -> None:
        doc = pep825_doc()
        doc["$schema"] = value
        assert_invalid(doc, "$schema", "URL string")

    @pytest.mark.parametrize(
        "url",
        [
            f"{SCHEMA_BASE}/peps/825/v1.0.0.json",
            f"{SCHEMA_BASE}/peps/825/v2.3.4.json",
            f"{SCHEMA_BASE}/v1.0.0.json",
            f"{SCHEMA_BASE}/v10.0.0.json",
        ],
    )
    def test_unknown_major_is_unsupported(self, url: str) -> None:
        doc = pep825_doc()
        doc["$schema"] = url
        with pytest.raises(UnsupportedSchema) as info:
            VariantMetadata.from_dict(doc, source="future.json")
        message = str(info.value)
        assert message.startswith("future.json: ")
        assert url in message
        assert "major" in message
        assert isinstance(info.value, InvalidMetadata)

    def test_unknown_major_rejected_even_if_body_is_fine(self) -> None:
        doc = pep817_doc()
        doc["$schema"] = f"{SCHEMA_BASE}/v1.0.0.json"
        with pytest.raises(UnsupportedSchema):
            VariantMetadata.from_dict(doc)

    def test_schema_version_from_url(self) -> None:
        assert SchemaVersion.from_url(PEP825_SCHEMA_URL) == SchemaVersion(0, 1, 1, False)
        assert SchemaVersion.from_url(LEGACY_817_URL) == SchemaVersion(0, 0, 3, True)
        assert SchemaVersion.from_url(VARIANTLIB_URL) == SchemaVersion(0, 2, 0, True)
        assert str(SchemaVersion.from_url(PEP825_SCHEMA_URL)) == "0.1.1"
        assert not SchemaVersion.from_url(VARIANTLIB_URL).is_newer_minor
        assert SchemaVersion.from_url(f"{SCHEMA_BASE}/peps/825/v0.2.0.json").is_newer_minor


DELETE = object()
MKL = "variants.x86_64_v4_mkl"
LEVEL = f"{MKL}.x86_64.level"
NS = "default-priorities.namespace"


def mutated(base: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    """A deep copy of *base* with the dotted *path* set to *value* (or deleted)."""
    doc = copy.deepcopy(base)
    *parents, last = path.split(".")
    target = doc
    for key in parents:
        target = target[key]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return doc


# id: (path to change, new value, fragments the message must contain)
ErrorCases = dict[str, tuple[str, object, tuple[str, ...]]]

PEP825_ERRORS: ErrorCases = {
    "default-priorities missing": ("default-priorities", DELETE, ("'default-priorities'",)),
    "variants missing": ("variants", DELETE, ("top level", "'variants'")),
    "default-priorities list": (
        "default-priorities",
        ["x86_64"],
        ("default-priorities:", "a list"),
    ),
    "default-priorities string": ("default-priorities", "x86_64", ("default-priorities:",)),
    "namespace missing": ("default-priorities", {}, ("default-priorities", "'namespace'")),
    "namespace string": (NS, "x86_64", (f"{NS}:", "a string")),
    "namespace object": (NS, {"x86_64": 1}, (f"{NS}:", "an object")),
    "namespace null": (NS, None, (f"{NS}:", "null")),
    "namespace item number": (NS, ["x86_64", 1], (f"{NS}:",)),
    "empty namespace list": (NS, [], (f"{NS}:", "at least 1")),
    "duplicate namespaces": (NS, ["x86_64", "blas_lapack", "x86_64"], (NS, "duplicate", "x86_64")),
    "bad namespace name": (NS, ["x86-64", "blas_lapack"], (NS, "'x86-64'")),
    "namespace with dot": (NS, ["x86.64"], (NS, "'x86.64'")),
    "upper-case namespace": (NS, ["X86_64"], (NS, "'X86_64'")),
    "empty namespace name": (NS, [""], (NS, "''")),
    "variants list": ("variants", [], ("variants:", "a list")),
    "variants null": ("variants", None, ("variants:", "null")),
    "variant list": (MKL, [], (f"{MKL}:", "a list")),
    "variant string": (MKL, "mkl", (f"{MKL}:", "a string")),
    "namespace block list": (f"{MKL}.x86_64", ["level"], (f"{MKL}.x86_64:", "a list")),
    "values string": (LEVEL, "v4", (f"{LEVEL}:", "a string")),
    "values object": (LEVEL, {"v4": True}, (f"{LEVEL}:", "an object")),
    "value number": (LEVEL, [4], (f"{LEVEL}:",)),
    "value null": (LEVEL, [None], (f"{LEVEL}:",)),
    "empty value list": (LEVEL, [], (LEVEL, "at least one value")),
    "bad value": (LEVEL, ["V4"], (LEVEL, "'V4'")),
    "value with dash": (LEVEL, ["v-4"], (LEVEL, "'v-4'")),
    "empty value": (LEVEL, [""], (LEVEL, "''")),
    "value with space": (LEVEL, ["v 4"], (LEVEL, "'v 4'")),
    "bad feature": (f"{MKL}.x86_64.Level", ["v4"], (f"{MKL}.x86_64:", "'Level'")),
    "feature with dot": (f"{MKL}.x86_64.le-vel", ["v4"], (f"{MKL}.x86_64:", "'le-vel'")),
    "bad namespace key": (f"{MKL}.x-86", {"a": ["b"]}, (f"{MKL}:", "'x-86'")),
    "namespace not listed": (f"{MKL}.nvidia", {"f": ["1"]}, (f"{MKL}:", "'nvidia'", NS)),
    "bad label upper": ("variants.X86", {}, ("variants:", "'X86'")),
    "bad label dash": ("variants.x86-64", {}, ("variants:", "'x86-64'")),
    "bad label space": ("variants.a b", {}, ("variants:", "'a b'")),
    "null with properties": ("variants.null", {"x86_64": {"level": ["v1"]}}, ("variants.null:",)),
}


@pytest.mark.parametrize(("path", "value", "fragments"), PEP825_ERRORS.values(), ids=PEP825_ERRORS)
def test_pep825_errors_name_source_and_key_path(
    path: str, value: object, fragments: tuple[str, ...]
) -> None:
    doc = mutated(pep825_doc(), path, value)
    assert_invalid(doc, *fragments)
    # The same error through the JSON text entry point.
    with pytest.raises(InvalidMetadata, match=r"^text\.json: "):
        VariantMetadata.from_json(json.dumps(doc), source="text.json")


def test_empty_label_rejected() -> None:
    doc = pep825_doc()
    doc["variants"][""] = {}
    assert_invalid(doc, "variants:", "''")


def test_feature_name_with_dot_rejected() -> None:
    doc = pep825_doc()
    doc["variants"]["x86_64_v4_mkl"]["x86_64"]["le.vel"] = ["v4"]
    assert_invalid(doc, "variants.x86_64_v4_mkl.x86_64:", "'le.vel'")


def test_unlisted_namespace_in_a_wheel_example() -> None:
    doc = json.loads(PEP825_VARIANT_JSON)
    doc["default-priorities"]["namespace"] = ["x86_64", "aarch64"]
    assert_invalid(doc, "variants.x86_64_v3_openblas", "'blas_lapack'", "not listed")


FEAT = "default-priorities.feature"
PROP = "default-priorities.property"
X86 = "providers.x86_64"
STATIC = "static-properties.blas_lapack"

LEGACY_ERRORS: ErrorCases = {
    "default-priorities missing": ("default-priorities", DELETE, ("'default-priorities'",)),
    "feature priorities list": (FEAT, ["level"], (f"{FEAT}:", "a list")),
    "feature priority string": (f"{FEAT}.x86_64", "level", (f"{FEAT}.x86_64:", "a string")),
    "feature priority bad name": (f"{FEAT}.x86_64", ["Level"], (f"{FEAT}.x86_64:", "'Level'")),
    "feature priority duplicate": (f"{FEAT}.x86_64", ["a", "a"], (f"{FEAT}.x86_64:", "duplicate")),
    "feature priority bad namespace": (f"{FEAT}.x-86", ["level"], (f"{FEAT}:", "'x-86'")),
    "property priorities list": (PROP, [], (f"{PROP}:", "a list")),
    "property priorities ns list": (f"{PROP}.x86_64", ["level"], (f"{PROP}.x86_64:",)),
    "property values string": (f"{PROP}.x86_64.level", "v3", (f"{PROP}.x86_64.level:",)),
    "property bad value": (f"{PROP}.x86_64.level", ["V3"], (f"{PROP}.x86_64.level:", "'V3'")),
    "providers list": ("providers", [], ("providers:", "a list")),
    "provider bad namespace": ("providers.X86", {}, ("providers:", "'X86'")),
    "provider block list": (X86, ["req"], (f"{X86}:", "a list")),
    "provider block null": (X86, None, (f"{X86}:", "null")),
    "requires string": (f"{X86}.requires", "pkg", (f"{X86}.requires:", "a string")),
    "requires numbers": (f"{X86}.requires", [1], (f"{X86}.requires:",)),
    "plugin-api number": (f"{X86}.plugin-api", 3, (f"{X86}.plugin-api:", "a number")),
    "plugin-api list": (f"{X86}.plugin-api", ["a:b"], (f"{X86}.plugin-api:", "a list")),
    "enable-if bool": (f"{X86}.enable-if", True, (f"{X86}.enable-if:", "a boolean")),
    "optional string": (f"{X86}.optional", "yes", (f"{X86}.optional:", "a string")),
    "optional number": (f"{X86}.optional", 1, (f"{X86}.optional:", "a number")),
    "optional null": (f"{X86}.optional", None, (f"{X86}.optional:", "null")),
    "install-time string": ("providers.blas_lapack.install-time", "false", ("install-time:",)),
    "plugin-use number": (f"{X86}.plugin-use", 1, (f"{X86}.plugin-use:",)),
    "builtin list": (f"{X86}.builtin", [], (f"{X86}.builtin:",)),
    "build-requires string": (f"{X86}.build-requires", "x", (f"{X86}.build-requires:",)),
    "provider static list": (f"{X86}.static-properties", ["level"], (f"{X86}.static-properties:",)),
    "provider static values": (
        f"{X86}.static-properties",
        {"level": "v3"},
        (f"{X86}.static-properties.level:",),
    ),
    "provider static bad value": (
        f"{X86}.static-properties",
        {"level": ["V3"]},
        (f"{X86}.static-properties.level:", "'V3'"),
    ),
    "provider static bad feature": (
        f"{X86}.static-properties",
        {"Level": ["v3"]},
        (f"{X86}.static-properties:", "'Level'"),
    ),
    "feature-order string": (f"{X86}.feature-order", "level", (f"{X86}.feature-order:",)),
    "feature-order duplicate": (
        f"{X86}.feature-order",
        ["a", "a"],
        ("feature-order:", "duplicate"),
    ),
    "static-properties list": ("static-properties", [], ("static-properties:", "a list")),
    "static-properties bad namespace": ("static-properties.Blas", {}, ("static-properties:",)),
    "static-properties ns list": (STATIC, ["x"], (f"{STATIC}:",)),
    "static-properties values string": (f"{STATIC}.provider", "mkl", (f"{STATIC}.provider:",)),
    "static-properties bad value": (
        f"{STATIC}.provider",
        ["MKL"],
        (f"{STATIC}.provider:", "'MKL'"),
    ),
    "legacy namespace not listed": (
        "variants.x8664v3_openblas.nvidia",
        {"a": ["b"]},
        ("variants.x8664v3_openblas:", "'nvidia'"),
    ),
    "legacy empty value list": (
        "variants.x8664v3_openblas.x86_64.level",
        [],
        ("variants.x8664v3_openblas.x86_64.level:",),
    ),
    "legacy bad label": ("variants.X", {}, ("variants:", "'X'")),
    "legacy empty namespace list": (NS, [], (f"{NS}:",)),
}


@pytest.mark.parametrize(("path", "value", "fragments"), LEGACY_ERRORS.values(), ids=LEGACY_ERRORS)
def test_legacy_errors_name_source_and_key_path(
    path: str, value: object, fragments: tuple[str, ...]
) -> None:
    assert_invalid(mutated(pep817_doc(), path, value), *fragments, source="legacy/variant.json")


JSON_LEAVES = st.none() | st.booleans() | st.integers() | st.text(max_size=6)
NAMEISH = st.sampled_from(["a", "b", "x86_64", "null", "A", "a-b", "", "1.0", "a.b"])
JSON_VALUES = st.recursive(
    JSON_LEAVES | NAMEISH,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(NAMEISH | st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    schema=st.sampled_from(
        [
            PEP825_SCHEMA_URL,
            LEGACY_817_URL,
            VARIANTLIB_URL,
            f"{SCHEMA_BASE}/peps/825/v0.3.0.json",
            f"{SCHEMA_BASE}/peps/850/v0.2.0.json",
            f"{SCHEMA_BASE}/v0.0.2.json",
            f"{SCHEMA_BASE}/",
            None,  # no '$schema' at all
        ]
    ),
    namespace=st.one_of(JSON_VALUES, st.lists(NAMEISH, min_size=1, max_size=3)),
    variants=JSON_VALUES,
    providers=JSON_VALUES,
    static=JSON_VALUES,
)
def test_fuzzed_documents_load_or_raise_invalid_metadata(
    variant_schema_validator: Any,
    schema: str | None,
    namespace: object,
    variants: object,
    providers: object,
    static: object,
) -> None:
    doc = {
        "$schema": schema,
        "default-priorities": {"namespace": namespace},
        "variants": variants,
        "providers": providers,
        "static-properties": static,
    }
    if schema is None:
        del doc["$schema"]
    elif "/peps/825/" in schema:
        del doc["providers"], doc["static-properties"]
    outcome: VariantMetadata | InvalidMetadata
    try:
        outcome = VariantMetadata.from_dict(doc, source="fuzz.json")
    except InvalidMetadata as exc:  # the only exception allowed
        outcome = exc
    if isinstance(outcome, InvalidMetadata):
        assert str(outcome).startswith("fuzz.json: ")
        return
    md = outcome
    # Whatever loads writes a valid document that reads back the same.
    variant_schema_validator.validate(json.loads(md.to_json()))
    again = VariantMetadata.from_json(md.to_json())
    assert again.namespaces == md.namespaces
    assert again.variants == md.variants


# ======================================================================================
# Writing
# ======================================================================================

GOLDEN_INDEX_JSON = """\
{
  "$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
  "default-priorities": {
    "namespace": [
      "x86_64",
      "aarch64",
      "blas_lapack"
    ]
  },
  "variants": {
    "null": {},
    "x86_64_v3_openblas": {
      "blas_lapack": {
        "library": [
          "openblas"
        ]
      },
      "x86_64": {
        "level": [
          "v3"
        ]
      }
    },
    "x86_64_v4_mkl": {
      "blas_lapack": {
        "library": [
          "mkl"
        ]
      },
      "x86_64": {
        "level": [
          "v4"
        ]
      }
    }
  }
}
"""


class TestWrite:
    def test_golden_output(self) -> None:
        md = VariantMetadata.from_json(PEP825_INDEX_JSON)
        assert md.to_json() == GOLDEN_INDEX_JSON
        assert md.to_bytes() == GOLDEN_INDEX_JSON.encode("utf-8")

    def test_canonical_order_from_scrambled_input(self) -> None:
        scrambled = {
            "variants": {
                "zz": {
                    "x86_64": {"level": ["v4"]},
                    "blas_lapack": {"library": ["mkl", "accelerate"]},
                },
                "aa": {"x86_64": {"z_feature": ["on"], "a_feature": ["b", "a", "c"]}},
                "mm": {},
            },
            "default-priorities": {"namespace": ["x86_64", "blas_lapack"]},
            "$schema": f"{SCHEMA_BASE}/peps/825/v0.1.0.json",
        }
        text = VariantMetadata.from_dict(scrambled).to_json()
        out = json.loads(text)
        assert list(out) == ["$schema", "default-priorities", "variants"]
        assert out["$schema"] == PEP825_SCHEMA_URL
        assert out["default-priorities"]["namespace"] == ["x86_64", "blas_lapack"]
        assert list(out["variants"]) == ["aa", "mm", "zz"]
        assert list(out["variants"]["zz"]) == ["blas_lapack", "x86_64"]
        assert list(out["variants"]["aa"]["x86_64"]) == ["a_feature", "z_feature"]
        assert out["variants"]["aa"]["x86_64"]["a_feature"] == ["a", "b", "c"]
        assert out["variants"]["zz"]["blas_lapack"]["library"] == ["accelerate", "mkl"]

    def test_namespace_order_not_sorted(self) -> None:
        md = VariantMetadata.build(["zeta", "alpha", "mid"], {"l": {"alpha": {"f": ["v"]}}})
        assert json.loads(md.to_json())["default-priorities"]["namespace"] == [
            "zeta",
            "alpha",
            "mid",
        ]

    def test_exactly_one_trailing_newline(self) -> None:
        text = VariantMetadata.from_json(PEP825_VARIANT_JSON).to_json()
        assert text.endswith("}\n")
        assert not text.endswith("\n\n")
        assert "\r" not in text
        assert text.count("\n") == len(text.splitlines())

    def test_utf8_bytes(self) -> None:
        md = VariantMetadata.from_json(PEP825_INDEX_JSON)
        data = md.to_bytes()
        assert data.decode("utf-8") == md.to_json()
        assert not data.startswith(b"\xef\xbb\xbf")  # no BOM
        assert data.isascii()  # every name/value/label is ASCII by definition

    def test_deterministic(self) -> None:
        first = VariantMetadata.from_json(PEP825_INDEX_JSON)
        doc = pep825_doc()
        reordered = {
            "variants": dict(reversed(list(doc["variants"].items()))),
            "default-priorities": doc["default-priorities"],
            "$schema": doc["$schema"],
        }
        second = VariantMetadata.from_dict(reordered)
        assert first.to_json() == second.to_json() == first.to_json()

    def test_directly_constructed_object_is_written_canonically(self) -> None:
        md = VariantMetadata(
            namespaces=("b_ns", "a_ns"),
            variants={"zz": {"b_ns": {"f": ("2", "1", "2")}, "a_ns": {}}, "aa": {}},
        )
        out = json.loads(md.to_json())
        assert list(out["variants"]) == ["aa", "zz"]
        assert out["variants"]["zz"] == {"b_ns": {"f": ["1", "2"]}}

    def test_empty_namespaces_cannot_be_written(self) -> None:
        md = VariantMetadata(namespaces=(), variants={}, source="empty.json")
        with pytest.raises(InvalidMetadata, match=r"^empty\.json: default-priorities\.namespace"):
            md.to_json()

    @pytest.mark.parametrize("text", [PEP825_VARIANT_JSON, PEP825_INDEX_JSON])
    def test_round_trip(self, text: str, variant_schema_validator: Any) -> None:
        md = VariantMetadata.from_json(text)
        written = md.to_json()
        variant_schema_validator.validate(json.loads(written))
        again = VariantMetadata.from_json(written)
        assert again == md
        assert again.to_json() == written
        # Written output equals the input document, modulo whitespace.
        assert json.loads(written) == json.loads(text)

    @pytest.mark.parametrize("text", [PEP817_VARIANT_JSON, json.dumps(VARIANTLIB_DOC)])
    def test_legacy_input_writes_valid_pep825(
        self, text: str, variant_schema_validator: Any
    ) -> None:
        md = VariantMetadata.from_json(text)
        written = json.loads(md.to_json())
        variant_schema_validator.validate(written)
        assert written["$schema"] == PEP825_SCHEMA_URL
        again = VariantMetadata.from_json(md.to_json())
        assert not again.is_legacy
        assert again.providers == {}
        assert (again.namespaces, again.variants) == (md.namespaces, md.variants)

    def test_with_variants(self, variant_schema_validator: Any) -> None:
        md = VariantMetadata.from_json(PEP817_VARIANT_JSON)
        new = md.with_variants({"b": {"x86_64": {"level": ["v2", "v1"]}}, "a": {}})
        assert new.labels == ("a", "b")
        assert new.variants["b"] == {"x86_64": {"level": ("v1", "v2")}}
        assert new.providers == md.providers  # legacy data kept
        assert md.labels == ("x8664v3_openblas",)  # original untouched
        variant_schema_validator.validate(json.loads(new.to_json()))

    @pytest.mark.parametrize(
        ("variants", "fragment"),
        [
            ({"BAD": {}}, "'BAD'"),
            ({"ok": {"nvidia": {"f": ["1"]}}}, "'nvidia'"),
            ({"ok": {"x86_64": {"level": ["V3"]}}}, "'V3'"),
            ({"ok": {"x86_64": {"level": []}}}, "at least one value"),
            ({"null": {"x86_64": {"level": ["v3"]}}}, "null"),
        ],
    )
    def test_with_variants_validates(self, variants: dict[str, Any], fragment: str) -> None:
        md = VariantMetadata.from_json(PEP817_VARIANT_JSON, source="src.json")
        with pytest.raises(InvalidMetadata, match=r"^src\.json: ") as info:
            md.with_variants(variants)
        assert fragment in str(info.value)


class TestBuild:
    def test_build(self, variant_schema_validator: Any) -> None:
        md = VariantMetadata.build(
            ["x86_64", "aarch64", "blas_lapack"],
            {
                "x86_64_v4_mkl": {
                    "x86_64": {"level": ("v4",)},
                    "blas_lapack": {"library": ["mkl"]},
                },
                "x86_64_v3_openblas": {
                    "blas_lapack": {"library": ["openblas"]},
                    "x86_64": {"level": ["v3"]},
                },
                "null": {},
            },
            source="built",
        )
        assert md == VariantMetadata.from_json(PEP825_INDEX_JSON)
        assert md.source == "built"
        assert md.schema == SchemaVersion(0, 1, 1, legacy=False)
        assert md.to_json() == GOLDEN_INDEX_JSON
        variant_schema_validator.validate(json.loads(md.to_json()))

    def test_build_accepts_iterables(self) -> None:
        md = VariantMetadata.build(iter(["a", "b"]), {"x": {"b": {"f": ("2", "1")}}})
        assert md.namespaces == ("a", "b")
        assert md.variants == {"x": {"b": {"f": ("1", "2")}}}

    @pytest.mark.parametrize(
        ("namespaces", "variants", "fragment"),
        [
            ([], {}, "default-priorities.namespace"),
            (["a", "a"], {}, "duplicate"),
            (["A"], {}, "'A'"),
            (["a"], {"l": {"b": {"f": ["1"]}}}, "'b'"),
            (["a"], {"L": {}}, "'L'"),
            (["a"], {"l": {"a": {"f": []}}}, "variants.l.a.f"),
            (["a"], {"null": {"a": {"f": ["1"]}}}, "variants.null"),
        ],
    )
    def test_build_validates(
        self, namespaces: list[str], variants: dict[str, Any], fragment: str
    ) -> None:
        with pytest.raises(InvalidMetadata, match=r"^my-build: ") as info:
            VariantMetadata.build(namespaces, variants, source="my-build")
        assert fragment in str(info.value)


# --------------------------------------------------------------------------------------
# Hypothesis: generated metadata is written canonically and validly, and reads back.
# --------------------------------------------------------------------------------------

NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"
NAMES = st.text(NAME_CHARS, min_size=1, max_size=8)
VALUES = st.text(NAME_CHARS + ".", min_size=1, max_size=8)
LABELS = st.text(NAME_CHARS + ".", min_size=1, max_size=10).filter(lambda s: s != "null")


@st.composite
def metadata_inputs(
    draw: st.DrawFn,
) -> tuple[list[str], dict[str, dict[str, dict[str, list[str]]]]]:
    namespaces = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
    property_maps = st.dictionaries(
        st.sampled_from(namespaces),
        st.dictionaries(NAMES, st.lists(VALUES, min_size=1, max_size=4), min_size=1, max_size=3),
        min_size=1,
        max_size=len(namespaces),
    )
    variants = draw(st.dictionaries(LABELS, property_maps, max_size=6))
    if draw(st.booleans()):
        variants["null"] = {}
    return namespaces, variants


@pytest.mark.slow
@settings(max_examples=200)
@given(metadata_inputs())
def test_generated_metadata_round_trips_and_validates(
    variant_schema_validator: Any,
    inputs: tuple[list[str], dict[str, dict[str, dict[str, list[str]]]]],
) -> None:
    namespaces, variants = inputs
    md = VariantMetadata.build(namespaces, variants)
    text = md.to_json()
    out = json.loads(text)
    variant_schema_validator.validate(out)
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    assert out["$schema"] == PEP825_SCHEMA_URL
    assert out["default-priorities"]["namespace"] == namespaces
    assert list(out["variants"]) == sorted(variants)
    for label, ns_map in out["variants"].items():
        assert list(ns_map) == sorted(ns_map)
        for ns, features in ns_map.items():
            assert list(features) == sorted(features)
            for feature, values in features.items():
                assert values == sorted(set(variants[label][ns][feature]))
    # The property sets are exactly the input ones.
    for label, ns_map in variants.items():
        expected = {
            f"{ns} :: {f} :: {v}" for ns, fs in ns_map.items() for f, vs in fs.items() for v in vs
        }
        assert props(md, label) == expected
    again = VariantMetadata.from_json(text)
    assert again == md
    assert again.to_json() == text
    assert VariantMetadata.from_json(text.encode("utf-8")) == md


@pytest.mark.slow
@settings(max_examples=100)
@given(inputs=metadata_inputs(), data=st.data())
def test_written_output_is_independent_of_input_order(
    inputs: tuple[list[str], dict[str, dict[str, dict[str, list[str]]]]], data: st.DataObject
) -> None:
    namespaces, variants = inputs

    def shuffled(mapping: dict[str, Any]) -> dict[str, Any]:
        keys = data.draw(st.permutations(list(mapping)))
        return {k: mapping[k] for k in keys}

    scrambled = {
        label: {
            ns: shuffled({f: list(data.draw(st.permutations(vs))) for f, vs in feats.items()})
            for ns, feats in shuffled(props_).items()
        }
        for label, props_ in shuffled(variants).items()
    }
    assert (
        VariantMetadata.build(namespaces, scrambled).to_bytes()
        == VariantMetadata.build(namespaces, variants).to_bytes()
    )


@settings(max_examples=100)
@given(
    bad=st.text(min_size=1, max_size=6).filter(
        lambda s: not s.isascii() or s != s.lower() or any(c in s for c in "-: /")
    ),
    where=st.sampled_from(["namespace", "label", "feature", "value"]),
)
def test_generated_bad_names_are_rejected(bad: str, where: str) -> None:
    namespaces, label, feature, value = ["ns"], "lbl", "feat", "val"
    if where == "namespace":
        namespaces = [bad]
    elif where == "label":
        label = bad
    elif where == "feature":
        feature = bad
    else:
        value = bad
    doc = {
        "$schema": PEP825_SCHEMA_URL,
        "default-priorities": {"namespace": namespaces},
        "variants": {label: {namespaces[0]: {feature: [value]}}},
    }
    with pytest.raises(InvalidMetadata) as info:
        VariantMetadata.from_dict(doc, source="gen.json")
    assert str(info.value).startswith("gen.json: ")
    assert repr(bad) in str(info.value)


# ======================================================================================
# pyproject.toml [variant]
# ======================================================================================


class TestPyproject:
    def test_pep817_example(self) -> None:
        md = read_pyproject_variant(PEP817_PYPROJECT_TOML, source="proj/pyproject.toml")
        assert md.source == "proj/pyproject.toml"
        assert md.namespaces == ("x86_64", "aarch64", "blas_lapack")
        assert md.variants == {}
        assert md.feature_priorities == {"aarch64": ("version",), "x86_64": ("level",)}
        assert md.property_priorities == {"x86_64": {"level": ("v3", "v2", "v1")}}
        assert set(md.providers) == {"aarch64", "x86_64", "blas_lapack"}
        assert md.providers["aarch64"].requires == (
            "provider-variant-aarch64 >=0.0.1; python_version >= '3.12'",
            "legacy-provider-variant-aarch64 >=0.0.1; python_version < '3.12'",
        )
        assert md.providers["aarch64"].enable_if == (
            "platform_machine == 'aarch64' or 'arm' in platform_machine"
        )
        assert md.providers["x86_64"].plugin_api == "provider_variant_x86_64.plugin:X8664Plugin"
        assert md.providers["blas_lapack"].install_time is False
        assert md.providers["blas_lapack"].plugin_api is None

    def test_pyproject_matches_the_built_variant_json(self) -> None:
        # PEP 817: variant.json copies the pyproject.toml data as-is.
        project = read_pyproject_variant(PEP817_PYPROJECT_TOML)
        wheel = VariantMetadata.from_json(PEP817_VARIANT_JSON)
        assert project.providers == wheel.providers
        assert project.namespaces == wheel.namespaces
        assert project.feature_priorities == wheel.feature_priorities
        assert project.property_priorities == wheel.property_priorities

    def test_from_pyproject_with_parsed_data(self) -> None:
        data = {
            "project": {"name": "x"},
            "variant": {
                "default-priorities": {"namespace": ["blas_lapack"]},
                "providers": {"blas_lapack": {"install-time": False}},
                "static-properties": {"blas_lapack": {"provider": ["mkl", "openblas"]}},
            },
        }
        md = VariantMetadata.from_pyproject(data)
        assert md.source == "pyproject.toml"
        assert md.static_supported() == {"blas_lapack": {"provider": ("mkl", "openblas")}}
        assert md.providers["blas_lapack"].is_static

    def test_static_properties_in_toml(self) -> None:
        text = PEP817_PYPROJECT_TOML + (
            "\n[variant.static-properties.blas_lapack]\n"
            "provider = ['accelerate', 'openblas', 'mkl']\n"
        )
        md = read_pyproject_variant(text)
        assert md.static_properties == {
            "blas_lapack": {"provider": ("accelerate", "openblas", "mkl")}
        }
        assert (
            md.static_supported()
            == VariantMetadata.from_json(PEP817_VARIANT_JSON).static_supported()
        )

    def test_variants_in_variant_table_rejected(self) -> None:
        text = (
            PEP817_PYPROJECT_TOML + "\n[variant.variants.x86_64_v3]\nx86_64 = { level = ['v3'] }\n"
        )
        with pytest.raises(InvalidMetadata) as info:
            read_pyproject_variant(text, source="p/pyproject.toml")
        message = str(info.value)
        assert message.startswith("p/pyproject.toml: ")
        assert "[variant]" in message
        assert "'variants'" in message

    def test_invalid_toml(self) -> None:
        with pytest.raises(InvalidMetadata) as info:
            read_pyproject_variant("[variant\nnamespace = 1\n", source="broken/pyproject.toml")
        message = str(info.value)
        assert message.startswith("broken/pyproject.toml: ")
        assert "invalid TOML" in message

    def test_no_variant_table(self) -> None:
        with pytest.raises(InvalidMetadata, match=r"^pyproject\.toml: .*\[variant\]"):
            read_pyproject_variant("[project]\nname = 'foo'\n")

    def test_variant_not_a_table(self) -> None:
        with pytest.raises(InvalidMetadata, match=r"^pyproject\.toml: \[variant\]"):
            read_pyproject_variant("variant = 1\n")

    @pytest.mark.parametrize(
        ("toml", "fragment"),
        [
            ("[variant]\n", "default-priorities"),
            ("[variant.default-priorities]\nnamespace = []\n", "default-priorities.namespace"),
            ("[variant.default-priorities]\nnamespace = ['A']\n", "'A'"),
            (
                "[variant.default-priorities]\nnamespace = ['a']\n"
                "[variant.providers.a]\noptional = 'no'\n",
                "providers.a.optional",
            ),
            (
                "[variant.default-priorities]\nnamespace = ['a']\nfeature.a = 'x'\n",
                "default-priorities.feature.a",
            ),
        ],
    )
    def test_invalid_variant_table(self, toml: str, fragment: str) -> None:
        with pytest.raises(InvalidMetadata, match=r"^pyproject\.toml: ") as info:
            read_pyproject_variant(toml)
        assert fragment in str(info.value)

    def test_pyproject_metadata_is_writable(self, variant_schema_validator: Any) -> None:
        md = read_pyproject_variant(PEP817_PYPROJECT_TOML)
        out = json.loads(md.to_json())
        variant_schema_validator.validate(out)
        assert out["variants"] == {}
        assert out["default-priorities"]["namespace"] == ["x86_64", "aarch64", "blas_lapack"]
