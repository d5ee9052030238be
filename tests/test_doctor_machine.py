"""``wheelwise doctor``'s machine section: the NVIDIA kernel module against the
user-mode driver the loader would open, what kept detection from seeing a GPU (no
kernel module, no libcuda or NVML, WSL, a container without device nodes), ROCm and
AMD GPUs. Scenario tests run the real command on fake machine trees
(``WHEELWISE_DOCTOR_ROOT``) holding hand-written ELF libraries and loader caches;
unit and fuzz tests cover each parser."""

from __future__ import annotations

import contextlib
import io
import json
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from doctorkit import (
    H100_INFORMATION,
    LIBDIR,
    MACHINE,
    OPEN,
    OTHER_MACHINE,
    PROPRIETARY,
    FakeMachine,
    build_elf,
    build_ld_so_cache,
    finding_codes,
    run_doctor,
)
from fuzzkit import bounded
from installkit import make_venv
from wheelwise.doctor.amd_machine import gfx_name, parse_kfd_properties
from wheelwise.doctor.context import MachineRoots
from wheelwise.doctor.elf import (
    ELF_MACHINES,
    ElfError,
    ElfReader,
    parse_elf,
    read_dynamic,
    read_elf,
    read_header,
    read_soname,
    read_strings,
    section_contains,
)
from wheelwise.doctor.ldcache import CacheEntry, parse_ld_so_cache
from wheelwise.doctor.loader import Loader, machine_path, parse_ld_so_conf
from wheelwise.doctor.nvidia_machine import (
    library_version,
    parse_gpu_information,
    parse_kernel_version,
    parse_module_version,
)
from wheelwise.doctor.pci import parse_hex
from wheelwise.doctor.virtualization import cgroup_container, is_wsl_kernel
from wheelwise.providers.nvidia import describe, parse_description

FUZZ = bounded(150)


def machine_findings(document: Any) -> dict[str, dict[str, Any]]:
    """The machine section's findings by code; no other section has any (the target
    is an empty environment)."""
    assert set(finding_codes(document)) <= {"machine"}, finding_codes(document)
    findings = document["sections"]["machine"]["findings"]
    by_code = {finding["code"]: finding for finding in findings}
    assert len(by_code) == len(findings), findings
    return by_code


def expect(
    result: tuple[int, Any], code: str, status: int, severity: str
) -> tuple[dict[str, Any], Any]:
    """The finding *code* of a run, checked to have *severity* and to give *status*;
    and the run's document."""
    returned, document = result
    finding = machine_findings(document)[code]
    assert (returned, finding["severity"]) == (status, severity)
    return finding, document


@pytest.fixture(scope="module")
def empty_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An environment with nothing installed: the machine alone decides the report."""
    return make_venv(tmp_path_factory.mktemp("target") / "venv")


@pytest.fixture
def fake(tmp_path: Path, empty_target: Path) -> FakeMachine:
    return FakeMachine(tmp_path / "root", target=empty_target)


NVIDIA_OK = {"WHEELWISE_NVIDIA_DRIVER": "13.0", "WHEELWISE_NVIDIA_GPUS": "9.0"}


# ---------------------------------------------------------------------------------
# Scenarios through the command


@pytest.mark.slow
def test_a_healthy_nvidia_machine_reports_its_driver_and_gpus(fake: FakeMachine) -> None:
    fake.healthy_nvidia()
    fake.finish()
    status, document = run_doctor(fake, NVIDIA_OK)
    assert status == 0, machine_findings(document)
    assert machine_findings(document) == {}
    nvidia = document["sections"]["machine"]["facts"]["nvidia"]
    assert nvidia["kernel_module"] == {
        "version": "580.95.05",
        "source": "/proc/driver/nvidia/version",
        "flavor": "proprietary",
    }
    libcuda = nvidia["user_mode_driver"]["libcuda.so.1"]
    assert libcuda["version"] == "580.95.05"
    assert libcuda["path"] == f"{LIBDIR}/libcuda.so.1"
    assert libcuda["file"] == f"{LIBDIR}/libcuda.so.580.95.05"
    assert (libcuda["via"], libcuda["soname"], libcuda["version_in_library"]) == (
        "ld.so.cache",
        "libcuda.so.1",
        True,
    )
    assert nvidia["user_mode_driver"]["libnvidia-ml.so.1"]["version"] == "580.95.05"
    assert nvidia["gpus"] == [
        {
            "address": "0000:01:00.0",
            "model": "NVIDIA H100 80GB HBM3",
            "device_minor": 0,
            "compute_capability": "9.0",
        }
    ]
    assert nvidia["detection"]["cuda_driver"] == "13.0"

    status, text = run_doctor(fake, NVIDIA_OK, as_json=False)
    assert status == 0
    assert "NVIDIA kernel module 580.95.05 (proprietary), from /proc/driver/nvidia/version" in text
    assert f"libcuda.so.1: 580.95.05 at {LIBDIR}/libcuda.so.580.95.05 (via ld.so.cache)" in text
    assert "GPU 0000:01:00.0: NVIDIA H100 80GB HBM3, compute capability 9.0" in text
    assert "provider nvidia: ok (CUDA driver 13.0; GPUs: 9.0)" in text


@pytest.mark.parametrize(
    ("user", "container", "fix"),
    [
        ("575.57.08", False, "sudo apt install --reinstall libnvidia-compute-580"),
        ("580.105.08", False, "reboot: the driver was upgraded to 580.105.08"),
        ("580.105.08", True, "remove the NVIDIA driver libraries (580.105.08) from the"),
    ],
)
def test_a_user_mode_driver_of_another_version_is_a_mismatch(
    fake: FakeMachine, user: str, container: bool, fix: str
) -> None:
    if container:
        fake.write("/.dockerenv", "")
    fake.nvidia_kernel("580.95.05", OPEN)
    fake.nvidia_gpu()
    fake.nodes("nvidiactl", "nvidia0")
    fake.nvidia_user_driver(user)
    fake.finish()
    finding, document = expect(run_doctor(fake, NVIDIA_OK), "driver-mismatch", 2, "error")
    assert "NVIDIA kernel module 580.95.05" in finding["what"]
    assert f"libcuda.so.1 {user} at {LIBDIR}/libcuda.so.{user}" in finding["what"]
    assert f"libnvidia-ml.so.1 {user}" in finding["what"]
    assert "Driver/library version mismatch" in finding["why"]
    assert fix in finding["fix"]
    facts = document["sections"]["machine"]["facts"]["nvidia"]
    assert facts["kernel_module"]["flavor"] == "open"


def test_the_sysfs_version_stands_in_for_a_damaged_proc_file(fake: FakeMachine) -> None:
    fake.healthy_nvidia("580.95.05")
    fake.write("/proc/driver/nvidia/version", "NVRM version: (damaged)\n")
    fake.finish()
    status, document = run_doctor(fake, NVIDIA_OK)
    assert (status, machine_findings(document)) == (0, {})
    kernel = document["sections"]["machine"]["facts"]["nvidia"]["kernel_module"]
    assert kernel == {"version": "580.95.05", "source": "/sys/module/nvidia/version"}


@pytest.mark.parametrize(
    ("gpus", "paired"),
    [("8.6,8.6", ["8.6", "8.6"]), ("8.6,9.0", [None, None])],
)
def test_compute_capabilities_go_to_gpus_only_when_the_order_is_known(
    fake: FakeMachine, gpus: str, paired: list[str | None]
) -> None:
    """Detection lists GPUs in its own order (CUDA's is fastest first): the GPUs of
    /proc are paired with it only when that cannot matter, or NVML (bus order) spoke."""
    fake.healthy_nvidia()
    fake.nvidia_gpu("0000:02:00.0", H100_INFORMATION.replace("0000:01:00.0", "0000:02:00.0"))
    fake.finish()
    env = {"WHEELWISE_NVIDIA_DRIVER": "12.8", "WHEELWISE_NVIDIA_GPUS": gpus}
    status, document = run_doctor(fake, env)
    nvidia = document["sections"]["machine"]["facts"]["nvidia"]
    assert status == 0
    assert [gpu.get("compute_capability") for gpu in nvidia["gpus"]] == paired
    assert [gpu["address"] for gpu in nvidia["gpus"]] == ["0000:01:00.0", "0000:02:00.0"]
    assert nvidia["detection"]["compute_capabilities"] == gpus.split(",")


@pytest.mark.slow
def test_a_described_machine_shows_its_sm_arch(fake: FakeMachine) -> None:
    system = fake.root.parent / "system.json"
    system.write_text(json.dumps({"system": {"nvidia": {"sm_arch": ["90_real", "90_virtual"]}}}))
    status, text = run_doctor(fake, as_json=False, args=["--system", str(system)])
    assert status == 0
    assert "described by --system (not detected)" in text
    assert "--system nvidia sm_arch: 90_real, 90_virtual" in text


def run_with_libcuda_on_ld_library_path(
    fake: FakeMachine, kernel: str, folder: str, version: str
) -> tuple[int, Any]:
    """A healthy machine of driver *kernel*, with another libcuda in *folder*, named
    by LD_LIBRARY_PATH."""
    fake.healthy_nvidia(kernel)
    fake.driver_library(folder, "libcuda.so.1", version, cached=False)
    fake.finish()
    return run_doctor(fake, {**NVIDIA_OK, "LD_LIBRARY_PATH": folder})


@pytest.mark.slow
def test_a_stale_driver_on_ld_library_path_is_named_in_the_fix(fake: FakeMachine) -> None:
    status, document = run_with_libcuda_on_ld_library_path(
        fake, "580.95.05", "/opt/stale-driver/lib", "570.172.08"
    )
    finding = machine_findings(document)["driver-mismatch"]
    assert status == 2
    assert (
        "libcuda.so.1 570.172.08 at /opt/stale-driver/lib/libcuda.so.570.172.08" in finding["what"]
    )
    assert "libnvidia-ml" not in finding["what"]
    assert finding["fix"].startswith("remove /opt/stale-driver/lib from LD_LIBRARY_PATH")
    via = document["sections"]["machine"]["facts"]["nvidia"]["user_mode_driver"]["libcuda.so.1"][
        "via"
    ]
    assert via == "LD_LIBRARY_PATH"


@pytest.mark.slow
def test_a_newer_forward_compatible_libcuda_is_reported_not_failed(fake: FakeMachine) -> None:
    status, document = run_with_libcuda_on_ld_library_path(
        fake, "535.247.01", "/usr/local/cuda-12.8/compat", "570.124.06"
    )
    finding = machine_findings(document)["cuda-forward-compat"]
    assert (status, finding["severity"]) == (0, "ok")
    assert "libcuda.so.1 570.124.06" in finding["what"]
    assert "newer than the kernel module 535.247.01" in finding["what"]


@pytest.mark.slow
def test_a_kernel_module_without_libcuda_is_an_error(fake: FakeMachine) -> None:
    fake.nvidia_kernel("580.95.05")
    fake.nvidia_gpu()
    fake.nodes("nvidiactl", "nvidia0")
    status, document = run_doctor(fake)
    findings = machine_findings(document)
    libcuda, nvml = findings["libcuda-missing"], findings["nvml-missing"]
    assert (status, libcuda["severity"], nvml["severity"]) == (2, "error", "warning")
    assert "libcuda.so.1" in libcuda["what"]
    assert "kernel module 580.95.05" in libcuda["what"]
    assert "CUDA programs cannot start" in libcuda["why"]
    assert "sudo apt install libnvidia-compute-580" in libcuda["fix"]
    assert "nvidia-smi" in nvml["why"]
    assert "nvidia-not-detected" not in findings  # the missing libcuda explains it


def test_libcuda_outside_the_loader_path_is_found_and_named(fake: FakeMachine) -> None:
    fake.nvidia_kernel("580.95.05")
    fake.nodes("nvidiactl", "nvidia0")
    fake.nvidia_user_driver("580.95.05", "/usr/local/nvidia/lib64", cached=False)
    status, document = run_doctor(fake)
    libcuda = machine_findings(document)["libcuda-missing"]
    assert status == 2
    assert libcuda["fix"].startswith("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:")
    assert libcuda["facts"]["elsewhere"] == ["/usr/local/nvidia/lib64/libcuda.so.1"]


def test_libcuda_in_a_configured_folder_missing_from_the_cache_needs_ldconfig(
    fake: FakeMachine,
) -> None:
    fake.nvidia_kernel("580.95.05")
    fake.nodes("nvidiactl", "nvidia0")
    fake.write("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
    fake.write("/etc/ld.so.conf.d/nvidia.conf", "# the driver\n/usr/lib/nvidia-580\n")
    fake.nvidia_user_driver("580.95.05", "/usr/lib/nvidia-580", cached=False)
    fake.cache.append(("libz.so.1", f"{LIBDIR}/libz.so.1"))
    fake.finish()
    status, document = run_doctor(fake)
    assert machine_findings(document)["libcuda-missing"]["fix"].startswith("sudo ldconfig")
    assert status == 2


@pytest.mark.parametrize(
    ("driver", "fix"),
    [
        (None, "sudo modprobe nvidia"),
        ("nouveau", "sudo ubuntu-drivers install"),
    ],
)
def test_an_nvidia_gpu_without_its_kernel_module_is_a_warning(
    fake: FakeMachine, driver: str | None, fix: str
) -> None:
    fake.pci("0000:01:00.0", 0x10DE, 0x030000, driver, device=0x2684)
    fake.pci("0000:01:00.1", 0x10DE, 0x040300, "snd_hda_intel")  # its audio function
    finding, _ = expect(run_doctor(fake), "nvidia-kernel-module-missing", 1, "warning")
    assert "NVIDIA GPU on the PCI bus (0000:01:00.0 (0x2684" in finding["what"]
    assert "no NVIDIA kernel module loaded" in finding["what"]
    assert "installs choose builds without CUDA" in finding["why"]
    assert fix in finding["fix"]
    assert finding["facts"]["devices"] == ["0000:01:00.0"]


def test_a_gpu_handed_to_a_virtual_machine_is_not_this_machines_problem(fake: FakeMachine) -> None:
    fake.pci("0000:41:00.0", 0x10DE, 0x030200, "vfio-pci")
    status, document = run_doctor(fake)
    assert (status, machine_findings(document)) == (0, {})


def test_wsl_libraries_off_the_loader_path_are_an_error(fake: FakeMachine) -> None:
    fake.wsl()
    finding, document = expect(run_doctor(fake), "wsl-libraries-not-on-loader-path", 2, "error")
    assert "libcuda.so.1, libnvidia-ml.so.1" in finding["what"]
    assert "/usr/lib/wsl/lib" in finding["what"]
    assert "echo /usr/lib/wsl/lib | sudo tee /etc/ld.so.conf.d/ld.wsl.conf" in finding["fix"]
    platform_facts = document["sections"]["machine"]["facts"]["platform"]
    assert platform_facts == {"wsl": True, "wsl_gpu_device": True, "container": None}


@pytest.mark.slow
def test_wsl_with_its_libraries_in_the_loader_cache_is_healthy(fake: FakeMachine) -> None:
    fake.wsl()
    fake.write("/etc/ld.so.conf.d/ld.wsl.conf", "/usr/lib/wsl/lib\n")
    fake.cache += [
        (name, f"/usr/lib/wsl/lib/{name}") for name in ("libcuda.so.1", "libnvidia-ml.so.1")
    ]
    fake.finish()
    status, document = run_doctor(fake, NVIDIA_OK)
    assert (status, machine_findings(document)) == (0, {})
    libcuda = document["sections"]["machine"]["facts"]["nvidia"]["user_mode_driver"]["libcuda.so.1"]
    assert (libcuda["file"], libcuda["version"]) == ("/usr/lib/wsl/lib/libcuda.so.1", None)
    status, text = run_doctor(fake, NVIDIA_OK, as_json=False)
    assert "NVIDIA kernel driver: the Windows host's (WSL)" in text
    assert "platform: WSL (with the GPU device /dev/dxg)" in text


def test_a_linux_driver_inside_wsl_shadowing_the_windows_one_is_an_error(fake: FakeMachine) -> None:
    fake.wsl()
    fake.nvidia_user_driver("550.54.14")
    fake.finish()
    finding, _ = expect(run_doctor(fake), "wsl-libcuda-shadowed", 2, "error")
    assert f"resolves to {LIBDIR}/libcuda.so.550.54.14" in finding["what"]
    assert "sudo apt remove --purge 'libnvidia-compute-*'" in finding["fix"]


def test_a_container_without_device_nodes_is_told_how_to_get_the_gpus(fake: FakeMachine) -> None:
    fake.write("/.dockerenv", "")
    fake.nvidia_kernel("580.95.05")
    fake.nvidia_gpu()
    fake.pci("0000:01:00.0", 0x10DE, 0x030200, "nvidia")
    status, document = run_doctor(fake)
    findings = machine_findings(document)
    finding = findings["container-without-gpu-devices"]
    assert (status, finding["severity"]) == (1, "warning")
    assert "docker container has no NVIDIA device nodes" in finding["what"]
    assert "kernel module 580.95.05" in finding["what"]
    assert finding["fix"].startswith("docker run --gpus all")
    assert set(findings) == {"container-without-gpu-devices"}  # not libcuda-missing too


def test_a_kubernetes_pod_without_gpus_is_told_to_request_them(fake: FakeMachine) -> None:
    fake.nvidia_kernel("580.95.05")
    status, document = run_doctor(fake, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    finding = machine_findings(document)["container-without-gpu-devices"]
    assert "nvidia.com/gpu" in finding["fix"]
    assert status == 1


def test_an_nvidia_driver_the_provider_did_not_see_is_a_warning(fake: FakeMachine) -> None:
    fake.healthy_nvidia()
    fake.finish()
    status, document = run_doctor(fake)  # WHEELWISE_NVIDIA_DRIVER=none
    finding = machine_findings(document)["nvidia-not-detected"]
    assert (status, finding["severity"]) == (1, "warning")
    assert "WHEELWISE_NVIDIA_DRIVER=none" in finding["what"]
    assert finding["fix"] == "unset WHEELWISE_NVIDIA_DRIVER"


@pytest.mark.slow
def test_an_amd_gpu_with_rocm_reports_version_and_targets(fake: FakeMachine) -> None:
    fake.write("/opt/rocm/.info/version", "6.4.1-120\n")
    fake.kfd_node(0, 0)
    fake.kfd_node(1, 110000)
    fake.nodes("kfd")
    fake.pci("0000:03:00.0", 0x1002, 0x030000, "amdgpu", device=0x744C)
    status, document = run_doctor(
        fake, {"WHEELWISE_AMD_ROCM": "6.4", "WHEELWISE_AMD_GFX": "gfx1100"}
    )
    assert (status, machine_findings(document)) == (0, {})
    amd = document["sections"]["machine"]["facts"]["amd"]
    assert amd["rocm"] == {
        "path": "/opt/rocm",
        "version": "6.4.1",
        "source": "/opt/rocm/.info/version",
    }
    assert amd["gpus"] == [{"node": "1", "gfx": "gfx1100", "gfx_target_version": 110000}]
    assert amd["detection"]["gfx_arch"] == ["gfx1100"]
    status, text = run_doctor(
        fake, {"WHEELWISE_AMD_ROCM": "6.4", "WHEELWISE_AMD_GFX": "gfx1100"}, as_json=False
    )
    assert "ROCm 6.4.1 at /opt/rocm" in text
    assert "AMD GPU (node 1): gfx1100" in text


def test_an_amd_gpu_without_rocm_is_a_warning_naming_its_target(fake: FakeMachine) -> None:
    fake.kfd_node(0, 0)
    fake.kfd_node(1, 90010)
    fake.nodes("kfd")
    finding, _ = expect(run_doctor(fake), "rocm-missing", 1, "warning")
    assert finding["what"].startswith("gfx90a present but no ROCm installed")
    assert "install ROCm" in finding["fix"]
    assert "export WHEELWISE_AMD_GFX=gfx90a" in finding["fix"]


def test_an_amd_gpu_without_its_compute_driver_is_a_warning(fake: FakeMachine) -> None:
    fake.write("/opt/rocm/.info/version", "6.4.1\n")
    fake.pci("0000:03:00.0", 0x1002, 0x038000, None, device=0x74A1)
    finding, _ = expect(run_doctor(fake), "amd-compute-driver-missing", 1, "warning")
    assert "AMD GPU 0000:03:00.0" in finding["what"]
    assert finding["fix"].startswith("sudo modprobe amdgpu")


def test_an_amd_gpu_in_a_container_without_dev_kfd_is_a_warning(fake: FakeMachine) -> None:
    fake.write("/run/.containerenv", "")
    fake.write("/opt/rocm/.info/version", "6.4.1\n")
    fake.kfd_node(1, 90402)
    status, document = run_doctor(fake)
    finding = machine_findings(document)["container-without-gpu-devices"]
    assert "podman container has no /dev/kfd" in finding["what"]
    assert "--device=/dev/kfd" in finding["fix"]
    assert status == 1


@pytest.mark.slow
def test_a_machine_without_any_gpu_is_healthy(fake: FakeMachine) -> None:
    fake.write("/proc/version", "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)\n")
    fake.pci("0000:00:02.0", 0x8086, 0x030000, "i915")
    status, document = run_doctor(fake)
    assert (status, machine_findings(document)) == (0, {})
    facts = document["sections"]["machine"]["facts"]
    assert facts["nvidia"]["present"] is False
    assert facts["amd"]["rocm"] is None
    status, text = run_doctor(fake, as_json=False)
    assert status == 0
    assert "NVIDIA: none" in text
    assert "AMD: none" in text


@pytest.mark.parametrize(
    "content",
    [
        b"\x00\xff\xfe garbage \x80\n" * 40,
        b"NVRM version: NVIDIA UNIX x86_64 Kernel Module  \n",
        b"",
    ],
)
def test_garbage_driver_files_are_a_warning_not_a_crash(fake: FakeMachine, content: bytes) -> None:
    fake.write("/proc/driver/nvidia/version", content)
    fake.write("/sys/module/nvidia/version", content[:20])
    fake.write("/proc/driver/nvidia/gpus/0000:01:00.0/information", content)
    fake.write("/etc/ld.so.cache", content)
    fake.write("/etc/ld.so.conf", content)
    fake.write(f"{LIBDIR}/libcuda.so.1", content)
    fake.write("/opt/rocm/.info/version", content)
    fake.write("/sys/class/kfd/kfd/topology/nodes/1/properties", content)
    fake.write("/sys/bus/pci/devices/0000:01:00.0/vendor", content)
    fake.nodes("nvidiactl", "nvidia0")
    status, document = run_doctor(fake)
    findings = machine_findings(document)  # asserts no probe failed
    finding = findings["nvidia-driver-version-unreadable"]
    assert finding["severity"] == "warning"
    assert finding["what"].startswith("/proc/driver/nvidia/version names no driver version")
    assert "libcuda-missing" in findings  # garbage is no library
    assert status == 2


# ---------------------------------------------------------------------------------
# The parsers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PROPRIETARY.format(v="580.95.05"), ("580.95.05", "proprietary")),
        (OPEN.format(v="565.57.01"), ("565.57.01", "open")),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  35.3.1  Release Build\n",
            ("35.3.1", "open"),
        ),
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98  Thu Oct 26 2017\n",
            ("384.98", "proprietary"),
        ),
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  \n", None),
        ("GCC version: gcc version 12\n", None),
        ("", None),
    ],
)
def test_the_kernel_module_version_is_read_from_either_format(
    text: str, expected: tuple[str, str] | None
) -> None:
    assert parse_kernel_version(text) == expected


def test_the_sysfs_version_and_gpu_information_are_read() -> None:
    assert parse_module_version("580.95.05\n") == "580.95.05"
    assert parse_module_version("loaded\n") is None
    information = parse_gpu_information(H100_INFORMATION)
    assert information["Model"] == "NVIDIA H100 80GB HBM3"
    assert information["Bus Location"] == "0000:01:00.0"
    assert information["Device Minor"] == "0"


@pytest.mark.parametrize(
    ("file_name", "library", "expected"),
    [
        ("libcuda.so.580.95.05", "libcuda.so.1", "580.95.05"),
        ("libnvidia-ml.so.555.58", "libnvidia-ml.so.1", "555.58"),
        ("libcuda.so.1.1", "libcuda.so.1", None),
        ("libcuda.so.1", "libcuda.so.1", None),
        ("libnvidia-ml.so.580.95.05", "libcuda.so.1", None),
        ("libcuda.so.580.95.05.bak", "libcuda.so.1", None),
    ],
)
def test_the_driver_version_comes_from_the_real_file_name(
    file_name: str, library: str, expected: str | None
) -> None:
    assert library_version(file_name, library) == expected


def test_gfx_targets_are_decoded_from_the_topology() -> None:
    assert [gfx_name(v) for v in (90402, 90010, 110000, 100300, 90012, 120001)] == [
        "gfx942",
        "gfx90a",
        "gfx1100",
        "gfx1030",
        "gfx90c",
        "gfx1201",
    ]
    assert gfx_name(0) is None
    assert gfx_name(91600) is None
    properties = parse_kfd_properties(
        "gfx_target_version 90010\nname broken line here\nsimd_count x\n"
    )
    assert properties == {"gfx_target_version": 90010}


def test_platform_hints_are_read() -> None:
    assert is_wsl_kernel("Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com)")
    assert not is_wsl_kernel("Linux version 6.8.0-45-generic (buildd@newslab)")
    assert cgroup_container("12:pids:/kubepods/besteffort/pod1/abc\n") == "kubernetes"
    assert cgroup_container("0::/system.slice/docker-3f2a.scope\n") == "docker"
    assert cgroup_container("0::/init.scope\n") is None
    assert parse_hex("0x10de\n") == 0x10DE
    assert parse_hex("10de") is None


def test_the_nvidia_description_round_trips() -> None:
    assert parse_description(describe((12, 8), [(8, 6), (9, 0)]) + "; skipped GPU 2") == (
        (12, 8),
        [(8, 6), (9, 0)],
    )
    assert parse_description("no NVIDIA driver (WHEELWISE_NVIDIA_DRIVER=none)") is None


@pytest.mark.parametrize("big_endian", [False, True])
def test_the_loader_cache_is_read_in_either_byte_order(big_endian: bool) -> None:
    entries = [
        ("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
        ("libz.so.1", "/lib/libz.so.1"),
    ]
    data = build_ld_so_cache(entries, big_endian=big_endian)
    assert parse_ld_so_cache(data) == [CacheEntry(n, p, 0x0303) for n, p in entries]
    # After the old libc5 table, as glibc before 2.32 wrote it.
    old = b"ld.so-1.7.0\0" + struct.pack("<I", 0) + bytes(8)
    assert parse_ld_so_cache(old + data) == parse_ld_so_cache(data)
    assert parse_ld_so_cache(data[:40]) is None
    assert parse_ld_so_cache(b"not a cache") is None
    # Entries that point past the data are left out.
    assert parse_ld_so_cache(data[: len(data) - 20]) == [CacheEntry(*entries[0], 0x0303)]


def test_ld_so_conf_lists_folders_and_includes() -> None:
    entries = parse_ld_so_conf(
        "# comment\ninclude /etc/ld.so.conf.d/*.conf\n/usr/local/lib\n"
        "/opt/a:/opt/b, /opt/c=libc6\nhwcap 1 nosegneg\n/opt/d # trailing\n"
    )
    assert entries == [
        ("include", "/etc/ld.so.conf.d/*.conf"),
        *(("folder", f) for f in ("/usr/local/lib", "/opt/a", "/opt/b", "/opt/c", "/opt/d")),
    ]


def test_the_loader_takes_ld_library_path_then_the_cache_then_default_folders(
    tmp_path: Path,
) -> None:
    fake = FakeMachine(tmp_path)
    fake.driver_library(LIBDIR, "libcuda.so.1", "580.95.05", cached=False)
    roots = MachineRoots(tmp_path)
    assert (found := Loader(roots, {}, MACHINE).find("libcuda.so.1")) is not None
    assert (found.via, found.real_path) == ("default folder", f"{LIBDIR}/libcuda.so.580.95.05")

    fake.driver_library("/opt/cached", "libcuda.so.1", "575.57.08")
    fake.finish()
    assert (found := Loader(roots, {}, MACHINE).find("libcuda.so.1")) is not None
    assert (found.via, found.path) == ("ld.so.cache", "/opt/cached/libcuda.so.1")

    # A copy for another machine is passed over, as the loader passes it over.
    fake.driver_library(
        "/opt/other", "libcuda.so.1", "570.1.1", cached=False, machine=OTHER_MACHINE
    )
    fake.driver_library("/opt/env", "libcuda.so.1", "570.2.2", cached=False)
    environ = {"LD_LIBRARY_PATH": "/opt/other::$ORIGIN/lib:/opt/env"}
    assert (found := Loader(roots, environ, MACHINE).find("libcuda.so.1")) is not None
    assert (found.via, found.file_name) == ("LD_LIBRARY_PATH", "libcuda.so.570.2.2")
    assert Loader(roots, environ, MACHINE).find("libmissing.so.1") is None


def test_ld_so_conf_includes_are_followed_relative_to_their_file(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path)
    fake.write(
        "/etc/ld.so.conf",
        "include ld.so.conf.d/*.conf\ninclude /etc/ld.so.conf\n/opt/first # note\n",
    )
    fake.write("/etc/ld.so.conf.d/a.conf", "/opt/a\n\n# comment\n")
    # An include cycle, and folders listed twice.
    fake.write("/etc/ld.so.conf.d/b.conf", "include /etc/ld.so.conf\n/opt/b\n/opt/a\n/opt/first/\n")
    # In ldconfig's order: an included file's folders where its include line stands.
    assert Loader(MachineRoots(tmp_path), {}).conf_folders() == [
        "/opt/a",
        "/opt/b",
        "/opt/first",
    ]
    assert Loader(MachineRoots(tmp_path / "nowhere"), {}).conf_folders() == []
    assert machine_path(MachineRoots(tmp_path), tmp_path / "opt/a") == "/opt/a"
    assert machine_path(MachineRoots(tmp_path), "/elsewhere") == "/elsewhere"


def test_ld_library_path_entries_with_loader_variables_are_left_out() -> None:
    environ = {"LD_LIBRARY_PATH": "/a:$ORIGIN/lib;;/b"}
    assert Loader(MachineRoots(), environ).environment_folders() == ["/a", "/b"]


# ---------------------------------------------------------------------------------
# The ELF reader

_RODATA = b"\x00hello world\x00580.95.05\x00"
_FATBIN_START = b"\x50\xed\x55\xba" + b"\0" * 12


@pytest.mark.parametrize("machine", ["x86_64", "aarch64", "s390x", "i686", "ppc"])
@pytest.mark.parametrize("with_sections", [True, False])
def test_the_elf_reader_reads_header_dynamic_segment_and_sections(
    tmp_path: Path, machine: str, with_sections: bool
) -> None:
    """64- and 32-bit, little- and big-endian; with a section table or stripped of it."""
    data = build_elf(
        "libcublas.so.12",
        ["libcublasLt.so.12", "libc.so.6"],
        runpath="$ORIGIN:$ORIGIN/../../nvidia/cublas/lib",
        rpath="/opt/lib",
        sections={".rodata": _RODATA, ".nv_fatbin": _FATBIN_START} if with_sections else None,
        machine=machine,
    )
    info = parse_elf(data, sections=True)
    bits, little, _ = ELF_MACHINES[machine]
    assert (info.header.bits, info.header.little_endian, info.header.kind) == (bits, little, 3)
    assert info.header.suits(machine)
    assert not info.header.suits(OTHER_MACHINE if machine != OTHER_MACHINE else "x86_64")
    assert info.dynamic.soname == "libcublas.so.12"
    assert info.dynamic.needed == ("libcublasLt.so.12", "libc.so.6")
    assert info.dynamic.runpath == ("$ORIGIN", "$ORIGIN/../../nvidia/cublas/lib")
    assert info.dynamic.rpath == ("/opt/lib",)
    assert parse_elf(data).sections == ()

    path = tmp_path / "libcublas.so.12"
    path.write_bytes(data)
    assert read_header(path) == info.header
    assert read_dynamic(path) == info.dynamic
    assert read_soname(path) == "libcublas.so.12"
    assert read_elf(path, sections=True) == info
    if with_sections:
        fatbin = info.section(".nv_fatbin")
        assert fatbin is not None
        assert fatbin.size == 16
        assert data[fatbin.offset : fatbin.offset + 4] == _FATBIN_START[:4]
        assert [s.name for s in info.sections] == [
            "",
            ".dynstr",
            ".dynamic",
            ".rodata",
            ".nv_fatbin",
            ".shstrtab",
        ]
        assert section_contains(path, b"580.95.05") is True
        assert section_contains(path, b"580.95.06") is False
        assert read_strings(path) == ["hello world", "580.95.05"]
    else:
        assert info.sections == ()
        assert section_contains(path, b"580.95.05") is None
        assert read_strings(path) == []


def test_a_string_across_a_read_boundary_is_found(tmp_path: Path) -> None:
    path = tmp_path / "libbig.so"
    needle = b"580.95.05"
    rodata = bytes((1 << 20) - 4) + needle + bytes(100)
    path.write_bytes(build_elf("libbig.so", sections={".rodata": rodata}))
    assert section_contains(path, needle) is True
    assert read_strings(path, min_length=9) == ["580.95.05"]


def test_missing_and_non_elf_files_raise_or_give_nothing(tmp_path: Path) -> None:
    text = tmp_path / "libcudart.so"
    text.write_text("INPUT(libcudart.so.12)\n")
    missing = tmp_path / "missing.so"
    with pytest.raises(ElfError, match="bad magic"):
        read_elf(text)
    with pytest.raises(FileNotFoundError):
        read_elf(missing)
    for path in (text, missing):
        assert read_header(path) is None
        assert read_dynamic(path) is None
        assert read_soname(path) is None
        assert section_contains(path, b"x") is None
        assert read_strings(path) == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "truncated"),
        (b"\x7fELF", "truncated"),
        (b"MZ" + b"\0" * 100, "bad magic"),
        (b"\x7fELF\x03\x01" + b"\0" * 100, "class"),
        (b"\x7fELF\x02\x03" + b"\0" * 100, "encoding"),
    ],
)
def test_the_elf_reader_refuses_what_is_not_elf(data: bytes, message: str) -> None:
    with pytest.raises(ElfError, match=message):
        parse_elf(data)


def test_a_truncated_elf_file_is_an_elf_error() -> None:
    data = build_elf("libcudart.so.12", ["libdl.so.2"])
    for size in range(0, len(data), 7):
        try:
            info = parse_elf(data[:size])
        except ElfError:
            continue
        assert info.dynamic.needed in ((), ("libdl.so.2",))


# Fuzz: no text or bytes makes a parser raise.


@FUZZ
@given(st.text(max_size=400))
def test_fuzz_text_parsers_never_raise(text: str) -> None:
    parse_kernel_version(text)
    parse_kernel_version("NVRM version: NVIDIA UNIX Open Kernel Module for " + text)
    parse_module_version(text)
    parse_gpu_information(text)
    parse_kfd_properties(text)
    parse_ld_so_conf(text)
    library_version(text, "libcuda.so.1")
    library_version("libcuda.so." + text, "libcuda.so.1")
    parse_hex(text)
    cgroup_container(text)
    is_wsl_kernel(text)
    parse_description("CUDA driver " + text)


@FUZZ
@given(st.integers(min_value=0, max_value=2**64))
def test_fuzz_gfx_names_are_targets_or_none(value: int) -> None:
    name = gfx_name(value)
    assert name is None or (name.startswith("gfx") and name.isalnum())


@FUZZ
@given(st.binary(max_size=600), st.integers(min_value=0, max_value=2**32 - 1))
def test_fuzz_loader_caches_never_raise(data: bytes, count: int) -> None:
    parse_ld_so_cache(data)
    forged = b"glibc-ld.so.cache1.1" + struct.pack("<II", count, 0) + data
    for entry in parse_ld_so_cache(forged) or []:
        assert isinstance(entry.name, str)
        assert isinstance(entry.path, str)


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("/ab*.\n# include\t,=:")), max_size=120))
def test_fuzz_ld_so_conf_files_never_raise(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        fake = FakeMachine(Path(folder))
        fake.write("/etc/ld.so.conf", text)
        fake.write("/etc/a.conf", text)
        for found in Loader(MachineRoots(fake.root), {}).conf_folders():
            assert isinstance(found, str)


_VALID_ELF = build_elf(
    "libx.so.1",
    ["libc.so.6"],
    runpath="$ORIGIN",
    sections={".rodata": b"\x00580.95.05\x00", ".nv_fatbin": b"x" * 8},
)


def _read_everything(data: bytes) -> None:
    """Every part of *data* the reader can give: an answer or ElfError, nothing else."""
    try:
        info = parse_elf(data, sections=True)
    except ElfError:
        return
    assert len(info.dynamic.needed) <= 4096
    assert len(info.sections) <= 65536
    reader = ElfReader(io.BytesIO(data), len(data))
    for section in info.sections:
        with contextlib.suppress(ElfError):
            for _ in reader.section_chunks(section.name, overlap=3):
                pass


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=600))
def test_fuzz_any_bytes_give_an_elf_answer_or_an_elf_error(data: bytes) -> None:
    _read_everything(data)
    _read_everything(b"\x7fELF\x02\x01\x01" + data)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.integers(0, len(_VALID_ELF) - 1), st.integers(0, 255)), max_size=12),
    st.booleans(),
)
def test_fuzz_damaged_libraries_give_an_elf_answer_or_an_elf_error(
    changes: list[tuple[int, int]], big: bool
) -> None:
    data = bytearray(_VALID_ELF)
    for position, value in changes:
        data[position] = 0xFF if big else value
    _read_everything(bytes(data))
    # The helpers never raise at all.
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "libx.so.1")
        path.write_bytes(data)
        read_header(path)
        read_dynamic(path)
        section_contains(path, b"580.95.05", (".rodata", ".nv_fatbin"))
        read_strings(path)
