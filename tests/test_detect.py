"""``wheelwise detect`` and machine-aware ``wheelwise select``, as real processes.

Machines are simulated with the documented environment overrides; every run uses
its own cache folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from clikit import run_wheelwise
from paths import CORPUS, DATA
from wheelwise.providers.base import (
    BuiltinProvider,
    Environment,
    FeatureConfig,
    Probe,
    ProviderUnavailable,
)
from wheelwise.providers.detect import Detection, detect
from wheelwise.providers.fingerprint import OVERRIDE_VARIABLES
from wheelwise.providers.machine import MachineOptions, machine_for
from wheelwise.variants.metadata import VariantMetadata

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo_gpu-1.0-variants.json"
HASWELL = DATA / "cpuinfo" / "linux-rhel7-haswell"
K10 = DATA / "cpuinfo" / "linux-scientific7-k10"
NEOVERSE = DATA / "cpuinfo" / "linux-amazon-neoverse_n1"
TEST_PACKAGE = CORPUS / "test-package" / "dist" / "test_package-0-variants.json"


@pytest.fixture
def machine_env(tmp_path: Path) -> dict[str, str]:
    """This process's environment without provider overrides, with a private cache."""
    env = {k: v for k, v in os.environ.items() if k not in OVERRIDE_VARIABLES}
    env["WHEELWISE_CACHE_DIR"] = str(tmp_path / "cache")
    env["WHEELWISE_CONFIG"] = str(tmp_path / "config.toml")
    # No AMD tools on a simulated machine unless a test says so.
    env["WHEELWISE_AMD_ROCM"] = "none"
    env["WHEELWISE_AMD_GFX"] = "none"
    env["WHEELWISE_INTEL_DEVICE_IP"] = "none"
    env["WHEELWISE_ASCEND_NPU_TYPE"] = "none"
    env["WHEELWISE_TPU_PRESENT"] = "none"
    return env


def detect_json(env: dict[str, str], *extra: str) -> dict[str, object]:
    proc = run_wheelwise(["detect", "--json", *extra], env)
    assert proc.returncode == 0, proc.stderr
    document: dict[str, object] = json.loads(proc.stdout)
    return document


def test_detect_document_shape(machine_env: dict[str, str]) -> None:
    env = {
        **machine_env,
        "WHEELWISE_NVIDIA_DRIVER": "12.8",
        "WHEELWISE_NVIDIA_GPUS": "8.6,6.1",
        "WHEELWISE_CPUINFO": str(HASWELL),
    }
    document = detect_json(env)
    assert list(document) == ["system", "providers"]
    providers = document["providers"]
    assert isinstance(providers, dict)
    assert list(providers) == ["nvidia", "amd", "intel", "ascend", "tpu", "x86_64", "aarch64"]
    for report in providers.values():
        assert set(report) == {"status", "source", "detail"}
        assert report["status"] in ("ok", "unavailable", "error")
    assert providers["nvidia"]["status"] == "ok"
    assert providers["x86_64"]["status"] == "ok"
    assert providers["amd"]["status"] == "unavailable"
    assert providers["aarch64"]["status"] == "unavailable"
    assert providers["intel"] == {
        "status": "unavailable",
        "source": "WHEELWISE_INTEL_DEVICE_IP",
        "detail": "no Intel GPU (WHEELWISE_INTEL_DEVICE_IP=none)",
    }
    system = document["system"]
    assert isinstance(system, dict)
    assert set(system) == {"nvidia", "tpu", "x86_64"}  # only namespaces that are "ok"
    # Without a TPU, uv's tpu provider answers `tpu :: present :: false`; so does wheelwise.
    assert system["tpu"] == {"present": ["false"]}
    assert providers["ascend"] == {
        "status": "unavailable",
        "source": "WHEELWISE_ASCEND_NPU_TYPE",
        "detail": "no Ascend NPU (WHEELWISE_ASCEND_NPU_TYPE=none)",
    }
    nvidia = system["nvidia"]
    assert list(nvidia) == ["cuda_version_lower_bound", "cuda_version_upper_bound", "sm_arch"]
    assert nvidia["cuda_version_lower_bound"][0] == "12.8"
    assert nvidia["sm_arch"][:9] == [
        "86_real", "85_real", "84_real", "83_real", "82_real", "81_real", "80_real",
        "61_real", "60_real",
    ]  # fmt: skip
    assert "70_real" not in nvidia["sm_arch"]
    assert system["x86_64"]["level"] == ["v3", "v2", "v1"]


def test_warm_cache_gives_the_same_answer(machine_env: dict[str, str]) -> None:
    env = {**machine_env, "WHEELWISE_CPUINFO": str(HASWELL), "WHEELWISE_NVIDIA_DRIVER": "none"}
    cold = run_wheelwise(["detect", "--json"], env)
    assert not (Path(env["WHEELWISE_CACHE_DIR"]) / "missing").exists()
    assert (Path(env["WHEELWISE_CACHE_DIR"]) / "detect.cache").is_file()
    warm = run_wheelwise(["detect", "--json"], env)
    assert cold.returncode == warm.returncode == 0
    assert warm.stdout == cold.stdout
    refreshed = run_wheelwise(["detect", "--json", "--refresh"], env)
    assert refreshed.stdout == cold.stdout


def test_cache_follows_a_changed_machine(machine_env: dict[str, str]) -> None:
    env = {**machine_env, "WHEELWISE_CPUINFO": str(HASWELL), "WHEELWISE_NVIDIA_DRIVER": "none"}
    first = detect_json(env)
    assert first["system"]["x86_64"]["level"] == ["v3", "v2", "v1"]  # type: ignore[index]
    # Same cache folder, another CPU: the fingerprint changes, so does the answer.
    second = detect_json({**env, "WHEELWISE_CPUINFO": str(K10)})
    assert second["system"]["x86_64"]["level"] == ["v1"]  # type: ignore[index]
    third = detect_json({**env, "WHEELWISE_NVIDIA_DRIVER": "13.0", "WHEELWISE_NVIDIA_GPUS": "9.0"})
    assert third["providers"]["nvidia"]["status"] == "ok"  # type: ignore[index]


def test_simulated_aarch64_machine(machine_env: dict[str, str]) -> None:
    env = {**machine_env, "WHEELWISE_CPUINFO": str(NEOVERSE), "WHEELWISE_NVIDIA_DRIVER": "none"}
    document = detect_json(env)
    system = document["system"]
    assert isinstance(system, dict)
    assert system["aarch64"]["version"] == ["8.2a", "8.1a", "8a"]
    assert "x86_64" not in system


def test_human_table(machine_env: dict[str, str]) -> None:
    env = {**machine_env, "WHEELWISE_CPUINFO": str(HASWELL), "WHEELWISE_NVIDIA_DRIVER": "none"}
    proc = run_wheelwise(["detect"], env)
    assert proc.returncode == 0, proc.stderr
    for needle in ("nvidia", "unavailable", "x86_64", "ok", "level: v3, v2, v1", "WHEELWISE"):
        assert needle in proc.stdout


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"WHEELWISE_NVIDIA_DRIVER": "none", "WHEELWISE_CPUINFO": str(K10)}, "null"),
        ({"WHEELWISE_NVIDIA_DRIVER": "none", "WHEELWISE_CPUINFO": str(HASWELL)}, "x86_64_v3"),
        ({"WHEELWISE_NVIDIA_DRIVER": "12.8", "WHEELWISE_NVIDIA_GPUS": "8.6"}, "cu128"),
        ({"WHEELWISE_NVIDIA_DRIVER": "13.0", "WHEELWISE_NVIDIA_GPUS": "9.0"}, "cu130"),
        ({"WHEELWISE_NVIDIA_DRIVER": "12.8", "WHEELWISE_NVIDIA_GPUS": "6.1"}, "cu126"),
        (
            {
                "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "12.8",
                "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "8.6",
            },
            "cu128",
        ),
    ],
)
def test_select_detects_this_machine(
    machine_env: dict[str, str], overrides: dict[str, str], expected: str
) -> None:
    env = {"WHEELWISE_CPUINFO": str(HASWELL), **machine_env, **overrides}
    proc = run_wheelwise(["select", str(DEMO), "--json"], env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["selected"] == expected


def test_detect_document_is_a_system_file(machine_env: dict[str, str], tmp_path: Path) -> None:
    """Detect on the target, select elsewhere: the same answer."""
    target = {
        **machine_env,
        "WHEELWISE_NVIDIA_DRIVER": "12.8",
        "WHEELWISE_NVIDIA_GPUS": "6.1",
        "WHEELWISE_CPUINFO": str(HASWELL),
    }
    recorded = tmp_path / "target.json"
    recorded.write_text(run_wheelwise(["detect", "--json"], target).stdout)
    here = run_wheelwise(["select", str(DEMO), "--json"], target)
    elsewhere_env = {
        **machine_env,
        "WHEELWISE_NVIDIA_DRIVER": "none",
        "WHEELWISE_CPUINFO": str(K10),
    }
    elsewhere = run_wheelwise(
        ["select", str(DEMO), "--system", str(recorded), "--json"], elsewhere_env
    )
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert json.loads(elsewhere.stdout) == json.loads(here.stdout)
    assert json.loads(here.stdout)["selected"] == "cu126"


def test_select_explains_untrusted_and_optional_providers(machine_env: dict[str, str]) -> None:
    proc = run_wheelwise(["select", str(TEST_PACKAGE)], machine_env)
    assert proc.returncode == 0, proc.stderr
    assert "selected: null" in proc.stdout
    assert "--allow-provider installable_plugin" in proc.stdout
    assert "--enable-provider non_existing_plugin" in proc.stdout


@pytest.mark.slow
def test_select_with_a_trusted_plugin(machine_env: dict[str, str]) -> None:
    env = {
        **machine_env,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(CORPUS / "test-plugin-package" / "dist"),
        "PIP_CONFIG_FILE": os.devnull,
    }
    args = [
        "select",
        str(TEST_PACKAGE),
        "--json",
        "--allow-provider",
        "installable_plugin=test-plugin-package",
    ]
    proc = run_wheelwise(args, env)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["order"] == ["60567bd9", "foo", "null"]
    assert sorted(document["rejected"]) == ["5d8be4b9", "bar", "fbe82642"]
    # The optional provider's requirement was never installed anywhere.
    cache = Path(env["WHEELWISE_CACHE_DIR"])
    assert not any("do_not_install_me" in str(p) for p in cache.rglob("*"))


# -- in-process: a provider never breaks detection -----------------------------------


class _Crashing(BuiltinProvider):
    namespace = "nvidia"

    def get_all_configs(self) -> Sequence[FeatureConfig]:
        return [FeatureConfig("sm_arch", ("90_real",), True)]

    def probe(self) -> Probe:
        raise RuntimeError("segfault-ish")


class _Lying(BuiltinProvider):
    namespace = "x86_64"

    def get_all_configs(self) -> Sequence[FeatureConfig]:
        return [FeatureConfig("level", ("v1",))]

    def probe(self) -> Probe:
        return Probe((FeatureConfig("level", ("v9",)),), "test")


class _Absent(BuiltinProvider):
    namespace = "amd"

    def get_all_configs(self) -> Sequence[FeatureConfig]:
        return [FeatureConfig("gfx_arch", ("gfx90a",), True)]

    def probe(self) -> Probe:
        raise ProviderUnavailable("no AMD GPU here", "test")


def test_bad_providers_are_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    providers: dict[str, type[_Crashing | _Lying | _Absent]] = {
        "nvidia": _Crashing,
        "x86_64": _Lying,
        "amd": _Absent,
    }

    def fake(namespace: str, env: Environment | None = None) -> BuiltinProvider:
        if namespace == "aarch64":
            raise ImportError("broken install")
        return providers[namespace](env)

    monkeypatch.setattr("wheelwise.providers.detect.builtin_provider", fake)
    detection = detect()
    reports = detection.reports
    assert reports["nvidia"].status == "error"
    assert "RuntimeError: segfault-ish" in reports["nvidia"].detail
    assert reports["x86_64"].status == "error"
    assert "v9" in reports["x86_64"].detail
    assert reports["amd"].status == "unavailable"
    assert reports["amd"].detail == "no AMD GPU here"
    assert reports["aarch64"].status == "error"
    assert "broken install" in reports["aarch64"].detail
    assert detection.system.namespaces == {}


def test_machine_for_uses_static_properties_without_providers() -> None:
    metadata = VariantMetadata.from_dict(
        {
            "$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
            "default-priorities": {"namespace": ["blas_lapack"]},
            "providers": {"blas_lapack": {"requires": ["x"], "install-time": False}},
            "static-properties": {"blas_lapack": {"provider": ["openblas", "mkl"]}},
            "variants": {"ob": {"blas_lapack": {"provider": ["openblas"]}}},
        }
    )
    empty = Detection({})
    view = machine_for(metadata, MachineOptions(), detection=empty)
    assert view.reports["blas_lapack"].status == "ok"
    assert view.reports["blas_lapack"].source == "static-properties"
    assert view.supported.values("blas_lapack", "provider") == ("openblas", "mkl")


def test_machine_for_unknown_namespace_without_plugin() -> None:
    metadata = VariantMetadata.build(["mystery"], {"m": {"mystery": {"f": ["v"]}}})
    view = machine_for(metadata, MachineOptions(), detection=Detection({}))
    assert view.reports["mystery"].status == "unavailable"
    assert "no built-in provider for namespace 'mystery'" in view.reports["mystery"].detail
