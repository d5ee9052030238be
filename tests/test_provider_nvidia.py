"""The built-in ``nvidia`` provider: vocabulary, detection through fake backends,
environment overrides, and the real ctypes backends against compiled fake libraries."""

from __future__ import annotations

import ctypes
import ctypes.util
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from wheelwise.providers.base import (
    Environment,
    FeatureConfig,
    ProviderReport,
    ProviderUnavailable,
)
from wheelwise.providers.nvidia import (
    CUDA_VALUES,
    LibcudaBackend,
    NoNvidiaGpu,
    NvidiaProvider,
    NvmlBackend,
    decode_driver_version,
    lower_bounds,
    parse_driver,
    parse_gpus,
    sm_arch_values,
    upper_bounds,
)
from wheelwise.providers.runner import run_builtin

if TYPE_CHECKING:
    from wheelwise.providers.nvidia import NvidiaBackend

LOWER, UPPER, SM = "cuda_version_lower_bound", "cuda_version_upper_bound", "sm_arch"


class FakeBackend:
    """A scripted backend: values to return, or exceptions to raise."""

    def __init__(
        self,
        name: str = "NVML",
        driver: tuple[int, int] | Exception = (12, 8),
        gpus: list[tuple[int, int]] | Exception | None = None,
        skipped: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.driver = driver
        self.gpus: list[tuple[int, int]] | Exception = [(8, 6)] if gpus is None else gpus
        self.skipped_gpus = list(skipped)
        self.calls: list[str] = []

    def driver_version(self) -> tuple[int, int]:
        self.calls.append("driver_version")
        if isinstance(self.driver, Exception):
            raise self.driver
        return self.driver

    def compute_capabilities(self) -> list[tuple[int, int]]:
        self.calls.append("compute_capabilities")
        if isinstance(self.gpus, Exception):
            raise self.gpus
        return list(self.gpus)


class ExplodingBackend:
    """Fails the test if asked anything: overrides must keep libraries unloaded."""

    name = "exploding"

    def driver_version(self) -> tuple[int, int]:
        raise AssertionError("driver_version() called")

    def compute_capabilities(self) -> list[tuple[int, int]]:
        raise AssertionError("compute_capabilities() called")


def missing(library: str) -> ProviderUnavailable:
    return ProviderUnavailable(
        f"cannot load {library}: cannot open shared object file: No such file or directory"
    )


def provider(env: Mapping[str, str] | None = None, *backends: NvidiaBackend) -> NvidiaProvider:
    return NvidiaProvider(Environment(dict(env or {})), backends=backends or (ExplodingBackend(),))


def report(env: Mapping[str, str] | None = None, *backends: NvidiaBackend) -> ProviderReport:
    return run_builtin(provider(env, *backends))


def machine(driver: str, gpus: str) -> ProviderReport:
    return report({"WHEELWISE_NVIDIA_DRIVER": driver, "WHEELWISE_NVIDIA_GPUS": gpus})


def reference_bounds(major: int, minor: int) -> tuple[list[str], list[str]]:
    """The reference provider's algorithm, written out independently of ours."""
    lower = [f"{major}.{m}" for m in range(minor, -1, -1)] + [str(major)]
    for older in range(major - 1, 10, -1):
        lower += [f"{older}.{m}" for m in range(20, -1, -1)] + [str(older)]
    upper = []
    for newer in range(15, major, -1):
        upper += [f"{newer}.{m}" for m in range(20, -1, -1)] + [str(newer)]
    upper += [f"{major}.{m}" for m in range(20, minor, -1)]
    return lower, upper


# --- vocabulary ------------------------------------------------------------------


def test_all_configs_match_the_reference() -> None:
    configs = NvidiaProvider(Environment({})).get_all_configs()
    assert [(c.name, c.multi_value) for c in configs] == [
        (LOWER, False),
        (UPPER, False),
        (SM, True),
    ]
    lower, upper, sm = (c.values for c in configs)
    assert lower == upper == CUDA_VALUES
    assert len(lower) == 110
    assert lower[:3] == ("15.20", "15.19", "15.18")
    assert lower[20:23] == ("15.0", "15", "14.20")
    assert lower[-2:] == ("11.0", "11")
    assert len(sm) == 160 == len(set(sm))
    assert sm[0] == "129_real"
    assert sm[79] == "50_real"
    assert sm[80] == "129_virtual"
    assert sm[-1] == "50_virtual"
    assert "120_real" in sm
    assert "90_virtual" in sm


@pytest.mark.parametrize(
    ("driver", "version"),
    [("12.7", (12, 7)), ("13.0", (13, 0)), ("12", (12, 0)), ("11.0", (11, 0))],
)
def test_bounds_match_the_reference_lists(driver: str, version: tuple[int, int]) -> None:
    expected_lower, expected_upper = reference_bounds(*version)
    result = machine(driver, "8.6")
    assert result.status == "ok"
    assert list(result.features[LOWER]) == expected_lower
    assert list(result.features[UPPER]) == expected_upper
    assert list(lower_bounds(version)) == expected_lower


def test_bounds_for_12_7_spelled_out() -> None:
    # nvidia-variant-provider2 json/tests/cases/override_12_7.json
    lower = lower_bounds((12, 7))
    assert len(lower) == 31
    assert lower[:10] == (
        "12.7",
        "12.6",
        "12.5",
        "12.4",
        "12.3",
        "12.2",
        "12.1",
        "12.0",
        "12",
        "11.20",
    )
    assert lower[-1] == "11"
    upper = upper_bounds((12, 7))
    assert upper[:2] == ("15.20", "15.19")
    assert upper[-3:] == ("12.10", "12.9", "12.8")
    assert "12" not in upper
    assert "12.7" not in upper
    assert upper_bounds((13, 0))[-2:] == ("13.2", "13.1")
    assert "13" not in upper_bounds((13, 0))


def test_feature_order_is_the_reference_order() -> None:
    assert list(machine("12.8", "9.0").features) == [LOWER, UPPER, SM]


# --- sm_arch -----------------------------------------------------------------------


def test_mixed_gpus_8_6_and_6_1() -> None:
    result = machine("12.8", "8.6,6.1")
    assert result.status == "ok"
    assert result.detail == "CUDA driver 12.8; GPUs: 8.6, 6.1"
    real = ["86_real", "85_real", "84_real", "83_real", "82_real", "81_real", "80_real"]
    real += ["61_real", "60_real"]
    virtual = [f"{M}{m}_virtual" for M in range(8, 4, -1) for m in range(9, -1, -1)]
    virtual = virtual[virtual.index("86_virtual") :]
    assert list(result.features[SM]) == real + virtual
    assert virtual[-1] == "50_virtual"


def test_heterogeneous_7_5_8_9_8_9_9_0() -> None:
    result = machine("12.8", "7.5,8.9,8.9,9.0")
    assert result.status == "ok"
    assert result.detail == "CUDA driver 12.8; GPUs: 7.5, 8.9, 8.9, 9.0"
    sm = list(result.features[SM])
    real = [v for v in sm if v.endswith("_real")]
    assert real == ["90_real", *(f"8{m}_real" for m in range(9, -1, -1)), "75_real", "74_real",
                    "73_real", "72_real", "71_real", "70_real"]  # fmt: skip
    virtual = [v for v in sm if v.endswith("_virtual")]
    assert virtual[0] == "90_virtual"
    assert virtual[-1] == "50_virtual"
    assert len(virtual) == 41  # 9.0, then 8.9 … 5.0
    assert sm == real + virtual  # every _real before any _virtual


def test_gtx_1080_ti_runs_pascal_sass_but_not_volta() -> None:
    result = machine("12.8", "6.1")
    sm = result.features[SM]
    assert "61_real" in sm
    assert "60_real" in sm
    assert "70_real" not in sm
    assert "62_real" not in sm
    assert "70_virtual" not in sm
    assert "61_virtual" in sm
    assert "50_virtual" in sm
    assert sm[:2] == ("61_real", "60_real")


def test_sm_arch_differs_from_the_reference_highest_gpu_rule() -> None:
    # The reference reports only the highest GPU (9.0 -> 90_real, 90_virtual); the
    # union also lets a wheel built for the 7.5 card match.
    values = sm_arch_values([(7, 5), (9, 0)])
    assert "75_real" in values
    assert "90_real" in values
    assert "89_real" not in values  # 8.9 SASS does not run on 9.0


def test_gpu_newer_than_any_known_architecture() -> None:
    result = machine("13.0", "13.0")
    assert result.status == "ok"
    sm = result.features[SM]
    assert sm[0] == "129_virtual"
    assert all(v.endswith("_virtual") for v in sm)
    assert "only PTX" in result.detail


def test_old_gpus_are_ignored() -> None:
    result = machine("12.8", "3.5,8.6")
    assert result.status == "ok"
    assert "35" not in " ".join(result.features[SM])
    assert "ignored GPU(s) 3.5" in result.detail


def test_only_old_gpus_is_unavailable() -> None:
    result = machine("11.4", "3.7")
    assert result.status == "unavailable"
    assert result.detail.startswith("NVIDIA driver 11.4 found but no usable GPU")
    assert "3.7" in result.detail


# --- driver versions outside the vocabulary --------------------------------------------


@pytest.mark.parametrize("driver", ["16.0", "15.25", "99.99"])
def test_driver_newer_than_any_known_version(driver: str) -> None:
    result = machine(driver, "10.0")
    assert result.status == "ok"
    assert result.features[LOWER] == CUDA_VALUES  # 15.20 … 11
    assert UPPER not in result.features
    assert "newer than any known CUDA version (15.20)" in result.detail
    assert result.detail.startswith(f"CUDA driver {driver}; GPUs: 10.0")


def test_driver_15_20_is_the_newest_known() -> None:
    result = machine("15.20", "10.0")
    assert result.features[LOWER] == CUDA_VALUES
    assert UPPER not in result.features
    assert "newer" not in result.detail


def test_driver_older_than_11_is_unavailable() -> None:
    result = machine("10.2", "7.0")
    assert result.status == "unavailable"
    assert "10.2 is older than 11.0" in result.detail


# --- fake backends -------------------------------------------------------------------


def test_backend_answer() -> None:
    nvml = FakeBackend(gpus=[(8, 6), (6, 1)])
    result = report({}, nvml, ExplodingBackend())
    assert (result.status, result.source) == ("ok", "NVML")
    assert result.detail == "CUDA driver 12.8; GPUs: 8.6, 6.1"
    assert result.features == machine("12.8", "8.6,6.1").features


def test_no_library_at_all() -> None:
    nvml = FakeBackend("NVML", driver=missing("libnvidia-ml.so.1"))
    cuda = FakeBackend("libcuda", driver=missing("libcuda.so.1"))
    result = report({}, nvml, cuda)
    assert result.status == "unavailable"
    assert result.source == "NVML, libcuda"
    assert result.detail.startswith("no usable NVIDIA driver: NVML: cannot load libnvidia-ml.so.1")
    assert "libcuda: cannot load libcuda.so.1" in result.detail


def test_libcuda_answers_when_nvml_is_missing() -> None:
    nvml = FakeBackend("NVML", driver=missing("libnvidia-ml.so.1"))
    cuda = FakeBackend("libcuda", driver=(13, 0), gpus=[(12, 0)])
    result = report({}, nvml, cuda)
    assert (result.status, result.source) == ("ok", "libcuda")
    assert result.detail == "CUDA driver 13.0; GPUs: 12.0"
    assert result.features[SM][0] == "120_real"


def test_init_failure_is_reported_with_the_error_code() -> None:
    failure = ProviderUnavailable("nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (9)")
    cuda_failure = ProviderUnavailable("cuInit failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)")
    result = report({}, FakeBackend(driver=failure), FakeBackend("libcuda", driver=cuda_failure))
    assert result.status == "unavailable"
    assert "NVML: nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (9)" in result.detail
    assert "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)" in result.detail


def test_zero_gpus() -> None:
    nvml = FakeBackend(gpus=NoNvidiaGpu("NVML reports 0 GPUs"))
    cuda = FakeBackend("libcuda", gpus=[])
    result = report({}, nvml, cuda)
    assert result.status == "unavailable"
    assert result.detail.startswith("NVIDIA driver 12.8 found but no GPU")


def test_capability_error_on_one_gpu_skips_it() -> None:
    nvml = FakeBackend(
        gpus=[(9, 0)],
        skipped=["GPU 1: nvmlDeviceGetCudaComputeCapability failed: NVML_ERROR_GPU_IS_LOST (15)"],
    )
    result = report({}, nvml)
    assert result.status == "ok"
    assert result.features[SM][:2] == ("90_real", "90_virtual")
    assert result.detail == (
        "CUDA driver 12.8; GPUs: 9.0; skipped GPU 1: "
        "nvmlDeviceGetCudaComputeCapability failed: NVML_ERROR_GPU_IS_LOST (15)"
    )


def test_gpu_failure_falls_back_to_the_next_backend() -> None:
    nvml = FakeBackend(
        gpus=ProviderUnavailable("nvmlDeviceGetCount_v2 failed: NVML_ERROR_UNKNOWN (999)")
    )
    cuda = FakeBackend("libcuda", driver=(12, 4), gpus=[(8, 0)])
    result = report({}, nvml, cuda)
    assert (result.status, result.source) == ("ok", "libcuda")
    assert result.detail == "CUDA driver 12.4; GPUs: 8.0"


# --- environment overrides ---------------------------------------------------------------


def test_full_override_loads_no_library() -> None:
    result = report(
        {"WHEELWISE_NVIDIA_DRIVER": "12.8", "WHEELWISE_NVIDIA_GPUS": "8.6"}, ExplodingBackend()
    )
    assert (result.status, result.source) == (
        "ok",
        "WHEELWISE_NVIDIA_DRIVER + WHEELWISE_NVIDIA_GPUS",
    )


def test_reference_variables() -> None:
    result = report(
        {
            "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "12.7",
            "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "12.5",
        }
    )
    assert result.status == "ok"
    assert result.source == (
        "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION + NV_VARIANT_PROVIDER_FORCE_SM_ARCH"
    )
    assert result.features[LOWER][0] == "12.7"
    # The reference gives 125…120_real, 120_virtual; we add every PTX target below.
    assert result.features[SM][:7] == (
        *tuple(f"12{m}_real" for m in range(5, -1, -1)),
        "125_virtual",
    )


def test_reference_sm_variable_accepts_a_list() -> None:
    result = report(
        {"NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "12.8",
         "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "8.6, 6.1"}
    )  # fmt: skip
    assert result.features == machine("12.8", "8.6,6.1").features


def test_wheelwise_variables_win() -> None:
    result = report(
        {
            "WHEELWISE_NVIDIA_DRIVER": "13.0",
            "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "not a version",
            "WHEELWISE_NVIDIA_GPUS": "9.0",
            "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "7.0",
        }
    )
    assert result.status == "ok"
    assert result.features[LOWER][0] == "13.0"
    assert result.features[SM][0] == "90_real"


def test_driver_override_keeps_gpus_from_the_backend() -> None:
    nvml = FakeBackend(driver=AssertionError("driver_version() must not be called"), gpus=[(8, 9)])
    result = report({"WHEELWISE_NVIDIA_DRIVER": "12"}, nvml)
    assert (result.status, result.source) == ("ok", "WHEELWISE_NVIDIA_DRIVER + NVML")
    assert result.detail == "CUDA driver 12.0; GPUs: 8.9"
    assert nvml.calls == ["compute_capabilities"]


def test_gpu_override_keeps_the_driver_from_the_backend() -> None:
    nvml = FakeBackend(driver=(12, 6), gpus=AssertionError("must not be called"))
    result = report({"WHEELWISE_NVIDIA_GPUS": "8.0"}, nvml)
    assert (result.status, result.source) == ("ok", "WHEELWISE_NVIDIA_GPUS + NVML")
    assert result.detail == "CUDA driver 12.6; GPUs: 8.0"
    assert nvml.calls == ["driver_version"]


def test_driver_override_none() -> None:
    result = report({"WHEELWISE_NVIDIA_DRIVER": "none", "WHEELWISE_NVIDIA_GPUS": "8.6"})
    assert result.status == "unavailable"
    assert result.detail == "no NVIDIA driver (WHEELWISE_NVIDIA_DRIVER=none)"
    assert result.source == "WHEELWISE_NVIDIA_DRIVER"


@pytest.mark.parametrize("gpus", ["none", "NONE", " , "])
def test_gpu_override_none(gpus: str) -> None:
    result = report({"WHEELWISE_NVIDIA_DRIVER": "12.8", "WHEELWISE_NVIDIA_GPUS": gpus})
    assert result.status == "unavailable"
    assert result.detail.startswith("NVIDIA driver 12.8 found but no GPU (WHEELWISE_NVIDIA_GPUS=")
    only = report({"WHEELWISE_NVIDIA_GPUS": gpus})
    assert only.detail.startswith("no NVIDIA GPU (WHEELWISE_NVIDIA_GPUS=")


def test_empty_override_counts_as_unset() -> None:
    result = report({"WHEELWISE_NVIDIA_DRIVER": "", "WHEELWISE_NVIDIA_GPUS": "8.6"},
                    FakeBackend(driver=(12, 2)))  # fmt: skip
    assert result.detail == "CUDA driver 12.2; GPUs: 8.6"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("WHEELWISE_NVIDIA_DRIVER", "twelve"),
        ("WHEELWISE_NVIDIA_DRIVER", "12.8a"),
        ("NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION", "v12"),
        ("WHEELWISE_NVIDIA_GPUS", "86"),
        ("WHEELWISE_NVIDIA_GPUS", "8.6,sm_90"),
        ("NV_VARIANT_PROVIDER_FORCE_SM_ARCH", "9"),
    ],
)
def test_invalid_override(variable: str, value: str) -> None:
    result = report({variable: value})
    assert result.status == "unavailable"
    assert result.source == variable
    assert f"invalid {variable}={value!r}" in result.detail
    assert "expected" in result.detail
    assert "e.g." in result.detail


def test_parsers() -> None:
    assert parse_driver("X", "12") == (12, 0)
    assert parse_driver("X", " 12.8 ") == (12, 8)
    assert parse_driver("X", "12.8.1") == (12, 8)
    assert parse_driver("X", "None") is None
    assert parse_gpus("X", "8.6, 9.0,") == [(8, 6), (9, 0)]
    assert parse_gpus("X", "12.0") == [(12, 0)]
    assert decode_driver_version(12080) == (12, 8)
    assert decode_driver_version(13000) == (13, 0)
    assert decode_driver_version(11040) == (11, 4)


# --- supported ⊆ all, through the runner ----------------------------------------------------


@pytest.mark.parametrize(
    ("driver", "gpus"),
    [
        ("11.0", "5.0"),
        ("12.8", "8.6,6.1"),
        ("13.0", "12.0,12.1"),
        ("15.20", "9.0"),
        ("16.0", "13.5"),
    ],
)
def test_supported_is_a_subset_of_all(driver: str, gpus: str) -> None:
    nvidia = provider({"WHEELWISE_NVIDIA_DRIVER": driver, "WHEELWISE_NVIDIA_GPUS": gpus})
    result = run_builtin(nvidia)
    assert result.status == "ok", result.detail
    everything = {c.name: set(c.values) for c in nvidia.get_all_configs()}
    for feature, values in result.features.items():
        assert set(values) <= everything[feature]
        assert len(values) == len(set(values))


def test_configs_are_feature_configs() -> None:
    configs = (
        provider({"WHEELWISE_NVIDIA_DRIVER": "12.8", "WHEELWISE_NVIDIA_GPUS": "8.6"})
        .probe()
        .configs
    )
    assert all(isinstance(c, FeatureConfig) for c in configs)
    assert [c.multi_value for c in configs] == [False, False, True]


# --- the real ctypes backends ----------------------------------------------------------------


def library_present(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


@pytest.mark.skipif(
    library_present("libnvidia-ml.so.1") or library_present("libcuda.so.1"),
    reason="this machine has an NVIDIA driver",
)
def test_no_kernel_driver_is_reported_before_loading_libraries(tmp_path: Path) -> None:
    provider = NvidiaProvider(
        Environment({}), proc_dir=str(tmp_path / "proc"), device_nodes=[str(tmp_path / "ctl")]
    )
    result = run_builtin(provider)
    assert result.status == "unavailable"
    assert result.source == "kernel driver"
    assert "no NVIDIA kernel driver" in result.detail
    assert str(tmp_path / "ctl") in result.detail


def test_real_backends_fail_cleanly_without_a_driver(tmp_path: Path) -> None:
    # A kernel driver seems present (a device node exists), the libraries do not.
    node = tmp_path / "nvidiactl"
    node.write_text("")
    result = run_builtin(NvidiaProvider(Environment({}), device_nodes=[str(node)]))
    assert result.status == "unavailable"
    assert result.source == "NVML, libcuda"
    assert "libnvidia-ml.so.1" in result.detail
    assert "libcuda.so.1" in result.detail
    with pytest.raises(ProviderUnavailable, match=r"cannot load libnvidia-ml\.so\.1"):
        NvmlBackend().driver_version()
    with pytest.raises(ProviderUnavailable, match=r"cannot load libcuda\.so\.1"):
        LibcudaBackend().compute_capabilities()


FAKE_NVML = r"""
#include <stdint.h>
typedef struct { int major, minor; } gpu_t;
static gpu_t gpus[2] = {{8, 6}, {6, 1}};
static int initialised, shutdowns;
int fake_shutdowns(void) { return shutdowns; }
int nvmlInit_v2(void) { initialised = 1; return INIT_RESULT; }
int nvmlShutdown(void) { initialised = 0; shutdowns++; return 0; }
#ifndef NO_V2
int nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = DRIVER; return 0; }
#endif
int nvmlSystemGetCudaDriverVersion(int *v) { *v = DRIVER_V1; return 0; }
int nvmlDeviceGetCount_v2(unsigned int *n) {
    if (!initialised) return 1;
    *n = GPU_COUNT;
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **handle) {
    if (i >= GPU_COUNT) return 2;
    *handle = &gpus[i];
    return 0;
}
int nvmlDeviceGetCudaComputeCapability(void *handle, int *major, int *minor) {
    gpu_t *gpu = (gpu_t *)handle;
    if (gpu == &gpus[FAILING_GPU]) return 15;
    *major = gpu->major;
    *minor = gpu->minor;
    return 0;
}
"""

FAKE_LIBCUDA = r"""
static int caps[2][2] = {{9, 0}, {7, 5}};
static int initialised;
int cuInit(unsigned int flags) {
    if (flags != 0) return 1;
    initialised = INIT_RESULT == 0;
    return INIT_RESULT;
}
int cuDriverGetVersion(int *v) { *v = DRIVER; return 0; }
int cuDeviceGetCount(int *n) { if (!initialised) return 3; *n = 2; return 0; }
int cuDeviceGet(int *device, int ordinal) { *device = 100 + ordinal; return 0; }
int cuDeviceGetAttribute(int *value, int attribute, int device) {
    int i = device - 100;
    if (i == FAILING_GPU) return 101;
    if (attribute == 75) { *value = caps[i][0]; return 0; }
    if (attribute == 76) { *value = caps[i][1]; return 0; }
    return 1;
}
"""

NVML_DEFAULTS = {"INIT_RESULT": "0", "DRIVER": "12080", "DRIVER_V1": "12070", "GPU_COUNT": "2",
                 "FAILING_GPU": "-1"}  # fmt: skip
CUDA_DEFAULTS = {"INIT_RESULT": "0", "DRIVER": "13000", "FAILING_GPU": "-1"}


@pytest.fixture(scope="module")
def compile_library(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str, Mapping[str, str]], str]:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler (cc, gcc or clang) to build the fake NVIDIA libraries")
    folder = tmp_path_factory.mktemp("fake-nvidia")
    built: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}

    def build(source: str, macros: Mapping[str, str]) -> str:
        key = (source, tuple(sorted(macros.items())))
        if key not in built:
            name = f"lib{len(built)}"
            c_file = folder / f"{name}.c"
            c_file.write_text(source)
            output = folder / f"{name}.so"
            defines = [f"-D{k}={v}" if v else f"-D{k}" for k, v in macros.items()]
            subprocess.run(
                [compiler, "-shared", "-fPIC", "-O1", *defines, "-o", str(output), str(c_file)],
                check=True,
                capture_output=True,
            )
            built[key] = str(output)
        return built[key]

    return build


def fake_nvml(build: Callable[[str, Mapping[str, str]], str], **changes: str) -> str:
    return build(FAKE_NVML, {**NVML_DEFAULTS, **changes})


def fake_cuda(build: Callable[[str, Mapping[str, str]], str], **changes: str) -> str:
    return build(FAKE_LIBCUDA, {**CUDA_DEFAULTS, **changes})


def test_nvml_backend_against_a_fake_library(
    compile_library: Callable[[str, Mapping[str, str]], str],
) -> None:
    path = fake_nvml(compile_library)
    backend = NvmlBackend(path)
    assert backend.driver_version() == (12, 8)
    assert backend.compute_capabilities() == [(8, 6), (6, 1)]
    assert backend.skipped_gpus == []
    assert ctypes.CDLL(path).fake_shutdowns() == 1  # one query, shut down in `finally`
    result = run_builtin(NvidiaProvider(Environment({}), backends=(backend,)))
    assert (result.status, result.source) == ("ok", "NVML")
    assert result.detail == "CUDA driver 12.8; GPUs: 8.6, 6.1"


def test_nvml_backend_falls_back_to_the_v1_version_call(
    compile_library: Callable[[str, Mapping[str, str]], str],
) -> None:
    backend = NvmlBackend(fake_nvml(compile_library, NO_V2=""))
    assert backend.driver_version() == (12, 7)


def test_nvml_backend_init_failure(
    compile_library: Callable[[str, Mapping[str, str]], str],
) -> None:
    backend = NvmlBackend(fake_nvml(compile_library, INIT_RESULT="9"))
    with pytest.raises(
        ProviderUnavailable, match=r"nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED \(9\)"
    ):
        backend.driver_version()
    with pytest.raises(ProviderUnavailable, match="NVML_ERROR_DRIVER_NOT_LOADED"):
        backend.compute_capabilities()


def test_nvml_backend_zero_gpus(compile_library: Callable[[str, Mapping[str, str]], str]) -> None:
    backend = NvmlBackend(fake_nvml(compile_library, GPU_COUNT="0"))
    assert backend.driver_version() == (12, 8)
    with pytest.raises(NoNvidiaGpu, match="0 GPUs"):
        backend.compute_capabilities()
    result = run_builtin(NvidiaProvider(Environment({}), backends=(backend,)))
    assert result.status == "unavailable"
    assert result.detail.startswith("NVIDIA driver 12.8 found but no GPU")


def test_nvml_backend_capability_error_skips_one_gpu(
    compile_library: Callable[[str, Mapping[str, str]], str],
) -> None:
    backend = NvmlBackend(fake_nvml(compile_library, FAILING_GPU="0"))
    assert backend.compute_capabilities() == [(6, 1)]
    assert backend.skipped_gpus == [
        "GPU 0: nvmlDeviceGetCudaComputeCapability failed: NVML_ERROR_GPU_IS_LOST (15)"
    ]
    result = run_builtin(NvidiaProvider(Environment({}), backends=(backend,)))
    assert result.status == "ok"
    assert result.detail == (
        "CUDA driver 12.8; GPUs: 6.1; skipped GPU 0: "
        "nvmlDeviceGetCudaComputeCapability failed: NVML_ERROR_GPU_IS_LOST (15)"
    )


def test_nvml_backend_missing_symbol(
    compile_library: Callable[[str, Mapping[str, str]], str],
) -> None:
    backend = NvmlBackend(fake_cuda(compile_library))  # a library without NVML symbols
    with pytest.raises(ProviderUnavailable, match=r"has no nvmlInit_v2\(\)"):
        backend.driver_version()


def test_libcuda_backend_against_a_fake_library(
    compile_library: Callable[[str, Mapping[str, str]], str],
) -> None:
    backend = LibcudaBackend(fake_cuda(compile_library))
    assert backend.driver_version() == (13, 0)
    assert backend.compute_capabilities() == [(9, 0), (7, 5)]
    missing_nvml = FakeBackend("NVML", driver=missing("libnvidia-ml.so.1"))
    result = run_builtin(NvidiaProvider(Environment({}), backends=(missing_nvml, backend)))
    assert (result.status, result.source) == ("ok", "libcuda")
    assert result.detail == "CUDA driver 13.0; GPUs: 9.0, 7.5"
    assert result.features[SM][:2] == ("90_real", "75_real")


def test_libcuda_backend_no_device(
    compile_library: Callable[[str, Mapping[str, str]], str],
) -> None:
    backend = LibcudaBackend(fake_cuda(compile_library, INIT_RESULT="100"))
    assert backend.driver_version() == (13, 0)
    with pytest.raises(NoNvidiaGpu, match=r"cuInit failed: CUDA_ERROR_NO_DEVICE \(100\)"):
        backend.compute_capabilities()


def test_libcuda_backend_init_failure(
    compile_library: Callable[[str, Mapping[str, str]], str],
) -> None:
    backend = LibcudaBackend(fake_cuda(compile_library, INIT_RESULT="999"))
    with pytest.raises(ProviderUnavailable, match=r"cuInit failed: CUDA_ERROR_UNKNOWN \(999\)"):
        backend.driver_version()


def test_libcuda_backend_attribute_error_skips_one_gpu(
    compile_library: Callable[[str, Mapping[str, str]], str],
) -> None:
    backend = LibcudaBackend(fake_cuda(compile_library, FAILING_GPU="1"))
    assert backend.compute_capabilities() == [(9, 0)]
    assert backend.skipped_gpus == [
        "GPU 1: cuDeviceGetAttribute failed: CUDA_ERROR_INVALID_DEVICE (101)"
    ]


def test_backend_with_an_unloadable_library(tmp_path: Path) -> None:
    bogus = tmp_path / "libnvidia-ml.so.1"
    bogus.write_text("not an ELF file")
    with pytest.raises(ProviderUnavailable, match=r"cannot load .*libnvidia-ml\.so\.1"):
        NvmlBackend(str(bogus)).driver_version()
