"""Real-world conformance: every variant document that exists today, in the format of
its era, selects what its producer intended; synthetic documents of each era (built
here) check that no rule is special-cased to one file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from paths import DATA
from wheelwise.cli.app import cli as main
from wheelwise.providers.machine import MachineOptions, machine_for
from wheelwise.variants import InvalidMetadata, UnsupportedSchema, VariantMetadata
from wheelwise.variants.ordering import rank_variants
from wheelwise.variants.supported import SupportedProperties

REAL_WORLD = DATA / "corpus" / "real-world"
TORCH_28 = REAL_WORLD / "wheelnext-variant-repack_torch-2.8.0-variants.json"
TORCH_29 = REAL_WORLD / "wheelnext-variant-repack_torch-2.9.0-variants.json"
TORCH_210 = REAL_WORLD / "wheelnext-variant-repack_torch-2.10.0-variants.json"
UV_FIXTURE = REAL_WORLD / "astral-uv-wheel-variant-branch_built_by_uv-0.1.0-variants.json"
VARIANTLIB_FIXTURE = REAL_WORLD / "wheelnext-variantlib-tests_test_package-0-variants.json"
REAL_DOCUMENTS = {
    TORCH_28: "pre-PEP (no schema version)",
    TORCH_29: "PEP 817 draft",
    TORCH_210: "PEP 817 draft",
    UV_FIXTURE: "pre-PEP (no schema version)",
    VARIANTLIB_FIXTURE: "PEP 817 draft",
}
SCHEMA_BASE = "https://variants-schema.wheelnext.dev"
LINUX = {"platform_system": "Linux", "platform_machine": "x86_64", "sys_platform": "linux"}
NO_GPU = ("none", "")


pytestmark = pytest.mark.usefixtures("simulated_machine")


def select(path: Path, *args: str, driver: str, gpus: str) -> Result:
    """``wheelwise select --json`` on a simulated NVIDIA machine (real detection code)."""
    env = {"WHEELWISE_NVIDIA_DRIVER": driver, "WHEELWISE_NVIDIA_GPUS": gpus or None}
    return CliRunner(env=env).invoke(main, ["select", str(path), "--json", *args])


def selected(path: Path, *args: str, driver: str, gpus: str) -> Any:
    result = select(path, *args, driver=driver, gpus=gpus)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["selected"]


# -- the published documents ---------------------------------------------------------


@pytest.mark.parametrize("path", list(REAL_DOCUMENTS), ids=lambda p: p.name)
def test_every_real_document_reads_and_writes_back_canonically(
    path: Path, variant_schema_validator: Any
) -> None:
    md = VariantMetadata.from_json(path.read_bytes(), source=path.name)
    assert md.is_legacy
    assert md.schema.era == REAL_DOCUMENTS[path]
    raw = json.loads(path.read_bytes())
    assert set(md.labels) == set(raw["variants"])
    written = json.loads(md.to_json())
    variant_schema_validator.validate(written)
    again = VariantMetadata.from_dict(written)
    assert (again.namespaces, again.variants) == (md.namespaces, md.variants)


@pytest.mark.parametrize(
    ("path", "driver", "gpus", "expected"),
    [
        (TORCH_28, "12.8", "8.6", "cu128"),
        (TORCH_28, "12.9", "12.0", "cu129"),
        (TORCH_28, "12.6", "6.0", "cu126"),  # only cu126 has code for sm 6.0
        (TORCH_28, *NO_GPU, "00000000"),
        (TORCH_29, "13.0", "9.0", "cuda13.0"),
        (TORCH_29, "12.8", "6.1", "cuda12.6"),
        # cuda12.6 and cuda12.8 tie on nvidia: the ahead-of-time `priority` decides.
        (TORCH_29, "12.8", "9.0", "cuda12.8"),
        (TORCH_29, *NO_GPU, "null"),
        (TORCH_210, "12.9", "9.0", "cuda12.8"),
        (TORCH_210, "13.0", "12.0", "cuda13.0"),
        (TORCH_210, "12.8", "5.0", "cuda12.6"),
        (TORCH_210, *NO_GPU, "null"),
    ],
)
def test_torch_documents_select_what_pytorch_intended(
    path: Path, driver: str, gpus: str, expected: str
) -> None:
    assert selected(path, driver=driver, gpus=gpus) == expected


def test_torch_28_legacy_null_label_is_the_null_variant() -> None:
    md = VariantMetadata.from_json(TORCH_28.read_bytes())
    assert md.is_null("00000000")
    assert not md.is_null("cu128")
    result = CliRunner(env={"WHEELWISE_NVIDIA_DRIVER": "none"}).invoke(
        main, ["select", str(TORCH_28)]
    )
    assert result.exit_code == 0, result.output
    assert "null variant (always compatible)" in result.output
    # A label "00000000" with properties is an ordinary label.
    doc = json.loads(TORCH_28.read_bytes())
    doc["variants"]["00000000"] = {"nvidia": {"sm_arch": ["90_real"]}}
    assert not VariantMetadata.from_dict(doc).is_null("00000000")


def test_torch_29_priority_namespace_is_ahead_of_time() -> None:
    md = VariantMetadata.from_json(TORCH_29.read_bytes())
    assert md.providers["priority"].is_static
    assert md.static_supported()["priority"] == {"order": ("1", "2", "3")}


def test_torch_on_a_target_where_enable_if_is_false_gets_the_cpu_build() -> None:
    """The nvidia provider is `enable-if` Linux or Windows: a macOS target with the
    same (simulated) GPU must not get a CUDA build."""
    md = VariantMetadata.from_json(TORCH_29.read_bytes())
    gpu = SupportedProperties.from_dict(
        {
            "nvidia": {
                "cuda_version_lower_bound": ["13.0", "12.9", "12.8", "12.0"],
                "sm_arch": ["90_real"],
            }
        }
    )
    for markers, expected in (({**LINUX}, "cuda13.0"), ({"platform_system": "Darwin"}, "null")):
        view = machine_for(md, MachineOptions(markers=markers), system=gpu)
        assert rank_variants(md, view.supported).selected == expected
    off = machine_for(md, MachineOptions(markers={"platform_system": "Darwin"}), system=gpu)
    assert off.reports["nvidia"].status == "unavailable"
    assert "enable-if" in off.reports["nvidia"].detail


# -- Intel GPUs: the built-in intel provider answers `intel :: device_ip` ---------------


def select_intel(path: Path, variable: str, value: str, *args: str) -> Result:
    """``wheelwise select`` on a simulated machine whose Intel GPU is named by *variable*
    (no NVIDIA or AMD GPU, no plugin trusted)."""
    env: dict[str, str | None] = {"WHEELWISE_INTEL_DEVICE_IP": None, variable: value}
    return CliRunner(env=env).invoke(main, ["select", str(path), *args])


@pytest.mark.parametrize("path", [TORCH_29, TORCH_210], ids=["2.9", "2.10"])
@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP", "12.55.8", "xpu"),  # Arc A770
        ("INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP", "12.60.7", "xpu"),  # Data Center GPU Max
        ("WHEELWISE_INTEL_DEVICE_IP", "12.56.5", "xpu"),  # Arc A380, through its base IP
        ("WHEELWISE_INTEL_DEVICE_IP", "20.1.0", "xpu"),  # Arc B580
        ("WHEELWISE_INTEL_DEVICE_IP", "12.71.4", "xpu"),  # Meteor Lake-H
        ("WHEELWISE_INTEL_DEVICE_IP", "12.70.4", "null"),  # Meteor Lake-U: no xpu code
        ("WHEELWISE_INTEL_DEVICE_IP", "12.3.0", "null"),  # Alder Lake-P integrated
        ("WHEELWISE_INTEL_DEVICE_IP", "none", "null"),
    ],
)
def test_torch_xpu_build_for_an_intel_gpu(
    path: Path, variable: str, value: str, expected: str
) -> None:
    result = select_intel(path, variable, value, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["selected"] == expected


def test_torch_210_xpu_build_for_panther_lake() -> None:
    # PyTorch's own release validation forces 30.0.4; 2.9 had no Xe3 code yet.
    variable = "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP"
    for path, expected in ((TORCH_210, "xpu"), (TORCH_29, "null")):
        result = select_intel(path, variable, "30.0.4", "--json")
        assert json.loads(result.stdout)["selected"] == expected, path.name


def test_torch_without_an_intel_gpu_says_why() -> None:
    result = select_intel(TORCH_210, "WHEELWISE_INTEL_DEVICE_IP", "none")
    assert result.exit_code == 0, result.output
    assert "selected: null" in result.output
    assert "intel: unavailable: no Intel GPU (WHEELWISE_INTEL_DEVICE_IP=none)" in result.output
    document = json.loads(
        select_intel(TORCH_210, "WHEELWISE_INTEL_DEVICE_IP", "none", "--json").stdout
    )
    assert document["rejected"]["xpu"].endswith("machine has no intel support")
    assert "12.55.8, 12.60.7" in document["rejected"]["xpu"]


# What the published intel-variant-provider answers for a GPU of each IP: the IP, then
# its base IP (devices.py's table; tests/test_devices.py, test_GMDID_in_table), and a
# forced 12.60.7 alone (tests/test_plugin.py, test_force_existing_ip).
PUBLISHED_INTEL_ANSWERS = {
    "12.3.0": ["12.3.0"],
    "12.55.8": ["12.55.8"],
    "12.56.5": ["12.56.5", "12.55.8"],
    "12.57.0": ["12.57.0", "12.55.8"],
    "12.60.7": ["12.60.7"],
    "12.70.4": ["12.70.4"],
    "12.71.4": ["12.71.4", "12.70.4"],
    "12.74.4": ["12.74.4"],
    "20.1.0": ["20.1.0"],
    "20.2.0": ["20.2.0", "20.1.0"],
    "20.4.4": ["20.4.4", "20.1.0"],
    "30.0.4": ["30.0.4"],
    "30.1.0": ["30.1.0", "30.0.4"],
    "30.3.1": ["30.3.1", "30.0.4"],
    "35.11.0": ["35.11.0"],
}


@pytest.mark.parametrize("path", [TORCH_29, TORCH_210], ids=["2.9", "2.10"])
@pytest.mark.parametrize("ip", list(PUBLISHED_INTEL_ANSWERS))
def test_intel_ranking_matches_the_published_provider(
    path: Path, ip: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    md = VariantMetadata.from_json(path.read_bytes())
    answer = {"device_ip": PUBLISHED_INTEL_ANSWERS[ip]}
    monkeypatch.setenv("WHEELWISE_INTEL_DEVICE_IP", ip)
    view = machine_for(md, MachineOptions(markers=LINUX))
    assert view.reports["intel"].status == "ok", view.reports["intel"].detail
    assert view.supported.to_dict()["intel"] == answer
    # The same machine with the published provider's answer (other namespaces alike).
    published = SupportedProperties.from_dict({**view.supported.to_dict(), "intel": answer})
    ours, theirs = rank_variants(md, view.supported), rank_variants(md, published)
    assert (ours.selected, ours.order) == (theirs.selected, theirs.order)


def test_uv_prototype_fixture(tmp_path: Path) -> None:
    """No '$schema'; `mathlib` is ahead-of-time with top-level static properties;
    `cpu_level` is a third-party plugin, answered here by a system file."""
    system = tmp_path / "cpu.json"
    system.write_text(json.dumps({"cpu_level": {"x86_64_level": ["v3", "v2", "v1"]}}))
    assert selected(UV_FIXTURE, "--system", str(system), driver="none", gpus="") == "cpu3"
    # Without an answer for cpu_level (its plugin is not trusted), nothing fits.
    result = select(UV_FIXTURE, driver="none", gpus="")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["selected"] is None
    md = VariantMetadata.from_json(UV_FIXTURE.read_bytes())
    arm = machine_for(
        md, MachineOptions(markers={"platform_machine": "aarch64"}), system=system_of(system)
    )
    assert "enable-if" in arm.reports["cpu_level"].detail
    assert "mathlib" in arm.supported.namespaces


def test_variantlib_fixture_optional_provider_stays_off(tmp_path: Path) -> None:
    system = tmp_path / "plugin.json"
    system.write_text(json.dumps({"installable_plugin": {"feat1": ["val1c", "val1b"]}}))
    result = select(VARIANTLIB_FIXTURE, "--system", str(system), driver="none", gpus="")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["order"] == ["60567bd9", "foo", "null"]
    md = VariantMetadata.from_json(VARIANTLIB_FIXTURE.read_bytes())
    view = machine_for(md, system=system_of(system))
    assert view.reports["non_existing_plugin"].status == "unavailable"
    assert "--enable-provider non_existing_plugin" in view.reports["non_existing_plugin"].detail


def system_of(path: Path) -> SupportedProperties:
    return SupportedProperties.from_json(path.read_bytes())


# -- synthetic documents of every era ----------------------------------------------------

ERAS = {
    "no $schema": None,
    "pre-PEP": f"{SCHEMA_BASE}/",
    "v0.0.1": f"{SCHEMA_BASE}/v0.0.1.json",
    "v0.0.2": f"{SCHEMA_BASE}/v0.0.2.json",
    "v0.0.3": f"{SCHEMA_BASE}/v0.0.3.json",
    "variantlib 0.2": f"{SCHEMA_BASE}/v0.2.0.json",
    "PEP 850": f"{SCHEMA_BASE}/peps/850/v0.2.0.json",
}
NVIDIA_PLUGIN = {"requires": ["nvidia-variant-provider"], "plugin-api": "nvidia_provider:Plugin"}


def era_document(era: str, *, optional_tiebreak: bool = False) -> dict[str, Any]:
    """Three CUDA builds and a null variant; `gpu_a` and `gpu_b` tie on nvidia and an
    ahead-of-time `tiebreak` namespace, spelt the way *era* spells it, prefers `gpu_b`."""
    url = ERAS[era]
    null = "00000000" if era in ("no $schema", "pre-PEP") else "null"
    doc: dict[str, Any] = {
        "default-priorities": {"namespace": ["nvidia", "tiebreak"]},
        "providers": {"nvidia": dict(NVIDIA_PLUGIN)},
        "variants": {
            null: {},
            "gpu_a": {
                "nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["86_real"]},
                "tiebreak": {"rank": ["second"]},
            },
            "gpu_b": {
                "nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["86_real"]},
                "tiebreak": {"rank": ["first"]},
            },
            "gpu_new": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["86_real"]}},
        },
    }
    if url is not None:
        doc["$schema"] = url
    order = ["first", "second"]
    tiebreak: dict[str, Any]
    if era in ("v0.0.1", "v0.0.2"):
        tiebreak = {"plugin-use": "none", "requires": []}
        doc["default-priorities"]["property"] = {"tiebreak": {"rank": order}}
    elif era in ("variantlib 0.2", "PEP 850"):
        tiebreak = {"install-time": False, "static-properties": {"rank": order}}
    else:
        tiebreak = {"install-time": False}
        doc["static-properties"] = {"tiebreak": {"rank": order}}
    if optional_tiebreak:
        tiebreak["optional"] = True
    doc["providers"]["tiebreak"] = tiebreak
    return doc


def write(tmp_path: Path, doc: Mapping[str, Any], name: str = "pkg-1.0-variants.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize(
    ("driver", "gpus", "expected"),
    [("12.8", "8.6", "gpu_b"), ("13.0", "8.6", "gpu_new"), ("12.8", "7.5", "null")],
)
def test_each_era_selects_by_its_own_semantics(
    tmp_path: Path, era: str, driver: str, gpus: str, expected: str
) -> None:
    path = write(tmp_path, era_document(era))
    got = selected(path, driver=driver, gpus=gpus)
    null = "00000000" if era in ("no $schema", "pre-PEP") else "null"
    assert got == (null if expected == "null" else expected)


@pytest.mark.parametrize("era", list(ERAS))
def test_an_optional_ahead_of_time_namespace_is_off_unless_enabled(
    tmp_path: Path, era: str
) -> None:
    path = write(tmp_path, era_document(era, optional_tiebreak=True))
    result = select(path, driver="12.8", gpus="8.6")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert "gpu_a" in document["rejected"]
    assert "gpu_b" in document["rejected"]
    assert selected(path, "--enable-provider", "tiebreak", driver="12.8", gpus="8.6") == "gpu_b"


@pytest.mark.parametrize("era", list(ERAS))
def test_enable_if_is_evaluated_against_the_target_environment(era: str) -> None:
    doc = era_document(era)
    doc["providers"]["tiebreak"]["enable-if"] = "platform_machine == 'riscv64'"
    md = VariantMetadata.from_dict(doc)
    gpu = SupportedProperties.from_dict(
        {"nvidia": {"cuda_version_lower_bound": ["12.8", "12.0"], "sm_arch": ["86_real"]}}
    )
    on_x86 = machine_for(md, MachineOptions(markers=LINUX), system=gpu)
    assert set(rank_variants(md, on_x86.supported).rejected) == {"gpu_a", "gpu_b", "gpu_new"}
    riscv = {**LINUX, "platform_machine": "riscv64"}
    on_riscv = machine_for(md, MachineOptions(markers=riscv), system=gpu)
    assert rank_variants(md, on_riscv.supported).selected == "gpu_b"


def test_an_unevaluable_enable_if_switches_the_namespace_off_with_the_reason() -> None:
    doc = era_document("v0.0.3")
    doc["providers"]["tiebreak"]["enable-if"] = "platform_machine ==="
    md = VariantMetadata.from_dict(doc)
    view = machine_for(md, MachineOptions(markers=LINUX), system=SupportedProperties())
    assert view.reports["tiebreak"].status == "error"
    assert "providers.tiebreak.enable-if" in view.reports["tiebreak"].detail
    assert "tiebreak" not in view.supported.namespaces


@pytest.mark.parametrize("era", ["v0.0.3", "variantlib 0.2"])
def test_a_static_claim_on_a_built_in_namespace_is_ignored_with_a_note(
    tmp_path: Path, era: str
) -> None:
    """Metadata that declares `nvidia` ahead-of-time cannot claim a GPU the machine
    lacks: the built-in provider answers for its own namespace."""
    doc = era_document(era)
    claim = {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["86_real"]}
    if era == "v0.0.3":
        doc["providers"]["nvidia"] = {"install-time": False}
        doc["static-properties"]["nvidia"] = claim
    else:
        doc["providers"]["nvidia"] = {"install-time": False, "static-properties": claim}
    path = write(tmp_path, doc)
    assert selected(path, driver="none", gpus="") == "null"
    assert selected(path, driver="13.0", gpus="8.6") == "gpu_new"
    table = CliRunner(env={"WHEELWISE_NVIDIA_DRIVER": "none"}).invoke(main, ["select", str(path)])
    assert table.exit_code == 0, table.output
    assert "static properties for the built-in namespace 'nvidia' ignored" in table.output


def test_precedence_system_file_beats_static_properties(tmp_path: Path) -> None:
    doc = era_document("v0.0.3")
    system = write(
        tmp_path,
        {
            "nvidia": {"cuda_version_lower_bound": ["12.8", "12.0"], "sm_arch": ["86_real"]},
            "tiebreak": {"rank": ["second", "first"]},
        },
        "system.json",
    )
    path = write(tmp_path, doc)
    assert selected(path, "--system", str(system), driver="none", gpus="") == "gpu_a"
    # Without the namespace in the system file, the metadata's own order applies.
    system.write_text(json.dumps({"nvidia": json.loads(system.read_text())["nvidia"]}))
    assert selected(path, "--system", str(system), driver="none", gpus="") == "gpu_b"


@pytest.mark.parametrize(
    "url",
    [
        f"{SCHEMA_BASE}/v1.0.0.json",
        f"{SCHEMA_BASE}/peps/850/v1.0.0.json",
        f"{SCHEMA_BASE}/peps/825/v3.0.0.json",
    ],
)
def test_an_unknown_major_is_refused_naming_the_file_and_version(tmp_path: Path, url: str) -> None:
    doc = era_document("v0.0.3")
    doc["$schema"] = url
    with pytest.raises(UnsupportedSchema) as info:
        VariantMetadata.from_dict(doc, source="future-1.0-variants.json")
    assert str(info.value).startswith("future-1.0-variants.json: ")
    assert url in str(info.value)
    path = write(tmp_path, doc)
    result = select(path, driver="none", gpus="")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "major version" in result.output


def test_a_broken_real_document_is_one_line() -> None:
    with pytest.raises(InvalidMetadata, match=r"^torch\.json: invalid JSON"):
        VariantMetadata.from_json(TORCH_29.read_bytes()[:-20], source="torch.json")


def test_install_evaluates_enable_if_with_the_target_interpreters_markers() -> None:
    """``install`` hands the target environment's markers (from the ``--python``
    interpreter's query) to the providers: the same GPU, two targets."""
    from wheelwise.install.plan import InstallOptions, supported_for

    md = VariantMetadata.from_json(TORCH_29.read_bytes())
    gpu = SupportedProperties.from_dict(
        {"nvidia": {"cuda_version_lower_bound": ["13.0", "12.0"], "sm_arch": ["90_real"]}}
    )
    options = InstallOptions(system=gpu)
    linux = supported_for(options, {**LINUX})(md)
    assert rank_variants(md, linux).selected == "cuda13.0"
    macos = supported_for(options, {"platform_system": "Darwin"})(md)
    assert "nvidia" not in macos.namespaces
    assert rank_variants(md, macos).selected == "null"


def test_install_warns_once_about_an_ignored_static_claim_on_a_built_in_namespace() -> None:
    from wheelwise.install.plan import InstallOptions, supported_for

    doc = era_document("v0.0.3")
    doc["providers"]["nvidia"] = {"install-time": False}
    doc["static-properties"]["nvidia"] = {"cuda_version_lower_bound": ["13.0"]}
    md = VariantMetadata.from_dict(doc, source="pkg-1.0-variants.json")
    warnings: list[str] = []
    supported = supported_for(
        InstallOptions(system=SupportedProperties(), warn=warnings.append), LINUX
    )
    for _ in range(2):
        assert "nvidia" not in supported(md).namespaces
    assert warnings == [
        "pkg-1.0-variants.json: static properties for the built-in namespace 'nvidia' "
        "ignored: the machine's own answer is used"
    ]
