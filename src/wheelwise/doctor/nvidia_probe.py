"""The NVIDIA driver, checked: the kernel module against the user-mode driver the
loader would open, and what kept the nvidia provider from seeing a GPU (no kernel
module for a GPU on the bus, no libcuda or NVML, WSL libraries off the loader path,
a container without the device nodes). Facts: the module, the libraries, every GPU
with its compute capability (which only NVML knows: taken from detection)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from wheelwise.doctor.context import DoctorContext
from wheelwise.doctor.findings import ERROR, OK, WARNING, Finding, Severity
from wheelwise.doctor.loader import VIA_ENVIRONMENT, Loader
from wheelwise.doctor.nvidia_machine import (
    LIBCUDA,
    LIBNVML,
    NvidiaMachine,
    UserLibrary,
    look_at_nvidia,
    version_key,
)
from wheelwise.doctor.runner import ProbeOutcome
from wheelwise.doctor.virtualization import WSL_LIBRARIES, Platform, look_at_platform
from wheelwise.providers.nvidia import DRIVER_VARIABLES, GPU_VARIABLES, SM_ARCH, parse_description

__all__ = ["nvidia_probe"]

_SECTION = "machine"
_DRIVER_DOCS = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/"


@dataclass(frozen=True)
class _Detected:
    """The nvidia provider's answer: its status and detail, the CUDA driver version
    and each GPU's compute capability (device order) when it lists them."""

    status: str
    source: str
    detail: str
    cuda_driver: str | None = None
    capabilities: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "source": self.source,
            "cuda_driver": self.cuda_driver,
            "compute_capabilities": list(self.capabilities),
        }


def _detected(context: DoctorContext) -> _Detected:
    if context.system is not None:
        described = bool(context.system.values("nvidia", SM_ARCH))
        return _Detected("described" if described else "absent", "--system", "")
    detection = context.detection
    report = detection.reports.get("nvidia") if detection is not None else None
    if report is None:
        return _Detected("absent", "", "")
    parsed = parse_description(report.detail) if report.status == "ok" else None
    if parsed is None:
        return _Detected(report.status, report.source, report.detail)
    driver, gpus = parsed
    return _Detected(
        report.status,
        report.source,
        report.detail,
        f"{driver[0]}.{driver[1]}",
        tuple(f"{major}.{minor}" for major, minor in gpus),
    )


def _finding(
    code: str, severity: Severity, what: str, why: str, fix: str, **facts: object
) -> Finding:
    return Finding(
        section=_SECTION,
        code=code,
        severity=severity,
        what=what,
        why=why,
        fix=fix,
        facts=facts,
    )


def _gpu_facts(machine: NvidiaMachine, detected: _Detected) -> list[dict[str, object]]:
    """The kernel module's GPUs, each with its compute capability where detection's
    order is known to be the bus order (NVML's) or all GPUs are alike."""
    gpus: list[dict[str, object]] = [dict(gpu.to_dict()) for gpu in machine.gpus]
    capabilities = detected.capabilities
    sources = detected.source.split(" + ")
    from_nvml = sources[-1] == "NVML" and not set(sources) & set(GPU_VARIABLES)
    if len(capabilities) == len(gpus) and (from_nvml or len(set(capabilities)) == 1):
        for gpu, capability in zip(gpus, capabilities, strict=True):
            gpu["compute_capability"] = capability
    return gpus


def _folder(path: str) -> str:
    return str(PurePosixPath(path).parent)


def _install_fix(
    library: UserLibrary, kernel: str | None, platform: Platform, loader: Loader
) -> str:
    """How to give the loader *library*: the command that fits where it is."""
    conf = set(loader.conf_folders())
    for path in library.elsewhere:
        if _folder(path) in conf:
            return (
                f"sudo ldconfig ({path} is in a folder /etc/ld.so.conf lists, but the "
                "loader cache predates it)"
            )
    if library.elsewhere:
        folder = _folder(library.elsewhere[0])
        return (
            f"export LD_LIBRARY_PATH={folder}:$LD_LIBRARY_PATH (or add {folder} to a file "
            "in /etc/ld.so.conf.d/ and run sudo ldconfig)"
        )
    if platform.container:
        return (
            "start the container with the driver's compute libraries: docker run --gpus all "
            "-e NVIDIA_DRIVER_CAPABILITIES=compute,utility ... (the NVIDIA Container "
            "Toolkit mounts them from the host)"
        )
    major = kernel.split(".", 1)[0] if kernel else "<version>"
    return (
        f"install the NVIDIA user-mode driver{f' {kernel}' if kernel else ''}: "
        f"sudo apt install libnvidia-compute-{major} (Debian/Ubuntu), or rerun the NVIDIA "
        f"driver installer ({_DRIVER_DOCS})"
    )


# Each user-mode library the loader must find: (code, severity, what it is, what
# fails without it).
_REQUIRED: tuple[tuple[str, str, Severity, str, str], ...] = (
    (
        LIBCUDA,
        "libcuda-missing",
        ERROR,
        "the NVIDIA user-mode driver",
        "CUDA programs cannot start: the CUDA runtime finds no driver (PyTorch says 'Found "
        "no NVIDIA driver on your system')",
    ),
    (
        LIBNVML,
        "nvml-missing",
        WARNING,
        "NVML",
        "nvidia-smi and NVML-based tools fail ('NVML Shared Library Not Found'), and "
        "wheelwise's nvidia provider falls back to libcuda",
    ),
)


def _missing_libraries(
    machine: NvidiaMachine, kernel: str | None, platform: Platform, loader: Loader
) -> list[Finding]:
    module = f"kernel module {kernel}" if kernel else "the NVIDIA kernel module"
    findings = []
    for name, code, severity, role, why in _REQUIRED:
        library = machine.libraries[name]
        if library.found is not None:
            continue
        findings.append(
            _finding(
                code,
                severity,
                f"{name} ({role}) is not on the loader path, though {module} is loaded",
                why,
                _install_fix(library, kernel, platform, loader),
                library=name,
                elsewhere=list(library.elsewhere),
            )
        )
    return findings


def _is_compat(library: UserLibrary) -> bool:
    """A CUDA forward-compatibility libcuda (``/usr/local/cuda-X.Y/compat``)."""
    return library.found is not None and "compat" in library.found.real_path.split("/")


def _version_findings(machine: NvidiaMachine, kernel: str, platform: Platform) -> list[Finding]:
    findings = []
    mismatched: list[UserLibrary] = []
    for library in machine.libraries.values():
        if library.found is None or library.version is None or library.version == kernel:
            continue
        newer = version_key(library.version) > version_key(kernel)
        if library.name == LIBCUDA and _is_compat(library) and newer:
            findings.append(_forward_compat(library, kernel, machine))
        else:
            mismatched.append(library)
    if mismatched:
        findings.append(_mismatch(mismatched, kernel, platform))
    return findings


def _forward_compat(library: UserLibrary, kernel: str, machine: NvidiaMachine) -> Finding:
    assert library.found is not None
    consumer = [gpu.model for gpu in machine.gpus if gpu.model and "geforce" in gpu.model.lower()]
    what = (
        f"{LIBCUDA} {library.version} at {library.found.real_path} is newer than the kernel "
        f"module {kernel}: CUDA forward compatibility"
    )
    why = (
        "forward compatibility works on data-center GPUs only; on others cuInit fails with "
        "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"
    )
    if not consumer:
        return _finding("cuda-forward-compat", OK, what, why, "", library=LIBCUDA)
    return _finding(
        "cuda-forward-compat",
        WARNING,
        f"{what}, on {consumer[0]}",
        why,
        f"remove {_folder(library.found.path)} from LD_LIBRARY_PATH (or uninstall the "
        f"cuda-compat package) and upgrade the driver to {library.version} or later instead",
        library=LIBCUDA,
    )


def _mismatch(libraries: Sequence[UserLibrary], kernel: str, platform: Platform) -> Finding:
    parts = []
    for library in libraries:
        assert library.found is not None
        parts.append(f"{library.name} {library.version} at {library.found.real_path}")
    first = libraries[0]
    assert first.found is not None
    assert first.version is not None
    from_environment = [lib for lib in libraries if lib.found and lib.found.via == VIA_ENVIRONMENT]
    if from_environment and from_environment[0].found is not None:
        found = from_environment[0].found
        folder = _folder(found.path)
        fix = (
            f"remove {folder} from LD_LIBRARY_PATH: it holds NVIDIA driver libraries of "
            f"another version ({from_environment[0].version})"
        )
    elif platform.container:
        fix = (
            f"remove the NVIDIA driver libraries ({first.version}) from the container image: "
            f"the NVIDIA Container Toolkit mounts the host's ({kernel}) when the container "
            "runs with --gpus all"
        )
    elif version_key(first.version) > version_key(kernel):
        fix = (
            f"reboot: the driver was upgraded to {first.version} but the running kernel "
            f"module is still {kernel} (or reload it: sudo rmmod nvidia_uvm nvidia_drm "
            "nvidia_modeset nvidia && sudo modprobe nvidia)"
        )
    else:
        fix = (
            f"reinstall the NVIDIA driver so that its libraries match the kernel module "
            f"{kernel}: sudo apt install --reinstall libnvidia-compute-{kernel.split('.')[0]} "
            f"(Debian/Ubuntu), or rerun the NVIDIA driver installer of {kernel}"
        )
    return _finding(
        "driver-mismatch",
        ERROR,
        f"NVIDIA kernel module {kernel}, but user-mode driver " + ", ".join(parts),
        "the kernel refuses a user-mode driver of another version: NVML fails with 'Failed "
        "to initialize NVML: Driver/library version mismatch' (nvidia-smi too) and CUDA "
        "programs cannot use the GPU",
        fix,
        kernel_module=kernel,
        libraries={lib.name: lib.version for lib in libraries},
    )


def _kernel_module_missing(machine: NvidiaMachine, platform: Platform) -> Finding | None:
    # A GPU bound to vfio-pci is handed to a virtual machine, not used here.
    devices = [device for device in machine.pci if device.driver != "vfio-pci"]
    if not devices:
        return None
    named = ", ".join(
        f"{device.address} (0x{device.device:04x}"
        + (f", {device.driver} bound" if device.driver else "")
        + ")"
        for device in devices
    )
    gpus = "NVIDIA GPU" if len(devices) == 1 else f"{len(devices)} NVIDIA GPUs"
    if platform.container:
        fix = (
            "load the driver on the host (sudo modprobe nvidia there), then start the "
            "container with --gpus all"
        )
    elif any(device.driver == "nouveau" for device in devices):
        fix = (
            "install the NVIDIA driver, which turns nouveau off (Ubuntu: sudo ubuntu-drivers "
            f"install; others: {_DRIVER_DOCS}), then reboot"
        )
    else:
        fix = (
            "sudo modprobe nvidia; if that fails, install the NVIDIA driver (Ubuntu: sudo "
            f"ubuntu-drivers install; others: {_DRIVER_DOCS}) and reboot"
        )
    return _finding(
        "nvidia-kernel-module-missing",
        WARNING,
        f"{gpus} on the PCI bus ({named}) but no NVIDIA kernel module loaded",
        "CUDA programs cannot use it, and wheelwise's nvidia provider sees no driver, so "
        "installs choose builds without CUDA",
        fix,
        devices=[device.address for device in devices],
    )


def _container_fix(engine: str) -> str:
    if engine == "kubernetes":
        return (
            "request the GPUs in the pod: resources: limits: nvidia.com/gpu: 1 (needs the "
            "NVIDIA device plugin on the cluster)"
        )
    if engine == "podman":
        return (
            "podman run --device nvidia.com/gpu=all ... (needs the NVIDIA Container "
            "Toolkit's CDI specification)"
        )
    return "docker run --gpus all ... (needs the NVIDIA Container Toolkit on the host)"


def _wsl_findings(machine: NvidiaMachine, platform: Platform, loader: Loader) -> list[Finding]:
    in_wsl = [
        name for name in (LIBCUDA, LIBNVML) if loader.roots.path(f"{WSL_LIBRARIES}/{name}").exists()
    ]
    if not in_wsl:
        return []  # no NVIDIA driver in Windows: nothing of NVIDIA to check
    if not platform.wsl_gpu_device:
        return [
            _finding(
                "wsl-gpu-device-missing",
                WARNING,
                f"WSL has the NVIDIA libraries in {WSL_LIBRARIES} but no /dev/dxg",
                "without the GPU device of WSL 2, CUDA programs cannot reach the GPU",
                "in Windows: wsl --update, then wsl --shutdown (and use WSL 2: wsl "
                "--set-version <distribution> 2)",
            )
        ]
    missing = [name for name in in_wsl if machine.libraries[name].found is None]
    shadowed = [
        machine.libraries[name]
        for name in in_wsl
        if (found := machine.libraries[name].found) is not None
        and not found.real_path.startswith("/usr/lib/wsl/")
    ]
    findings = []
    if missing:
        listed = WSL_LIBRARIES in loader.conf_folders()
        findings.append(
            _finding(
                "wsl-libraries-not-on-loader-path",
                ERROR,
                f"{', '.join(missing)} of the Windows NVIDIA driver are in {WSL_LIBRARIES}, "
                "but the loader does not search there",
                "CUDA programs cannot start: the CUDA runtime finds no driver",
                "sudo ldconfig (/etc/ld.so.conf lists the folder, the loader cache does not)"
                if listed
                else f"echo {WSL_LIBRARIES} | sudo tee /etc/ld.so.conf.d/ld.wsl.conf && sudo "
                f"ldconfig (or export LD_LIBRARY_PATH={WSL_LIBRARIES}:$LD_LIBRARY_PATH)",
                libraries=missing,
            )
        )
    if shadowed:
        first = shadowed[0].found
        assert first is not None
        findings.append(
            _finding(
                "wsl-libcuda-shadowed",
                ERROR,
                f"{first.name} resolves to {first.real_path}, not to the Windows NVIDIA "
                f"driver's in {WSL_LIBRARIES}",
                "a Linux NVIDIA driver inside WSL replaces the one WSL provides; CUDA programs "
                "fail to reach the GPU",
                f"remove {_folder(first.path)} from LD_LIBRARY_PATH"
                if first.via == VIA_ENVIRONMENT
                else "remove the Linux NVIDIA driver from this WSL distribution (e.g. sudo apt "
                "remove --purge 'libnvidia-compute-*'), then sudo ldconfig",
                libraries=[library.name for library in shadowed],
            )
        )
    return findings


def _linux_findings(machine: NvidiaMachine, platform: Platform, loader: Loader) -> list[Finding]:
    if platform.wsl:
        return _wsl_findings(machine, platform, loader)
    kernel = machine.kernel
    if kernel is None:
        missing = _kernel_module_missing(machine, platform)
        return [missing] if missing else []
    findings = []
    if kernel.version is None:
        findings.append(
            _finding(
                "nvidia-driver-version-unreadable",
                WARNING,
                f"{kernel.source} names no driver version ("
                + (repr(kernel.content) if kernel.content else "it is empty")
                + ")",
                "the user-mode driver cannot be checked against the kernel module",
                "modinfo nvidia (and reinstall the driver if it does not name a version)",
            )
        )
    if platform.container and not machine.has_gpu_nodes:
        module = f" {kernel.version}" if kernel.version else ""
        findings.append(
            _finding(
                "container-without-gpu-devices",
                WARNING,
                f"this {platform.container} container has no NVIDIA device nodes "
                f"(/dev/nvidiactl, /dev/nvidia0...), though the host's kernel module{module} "
                "is loaded",
                "CUDA programs in this container cannot reach the GPU",
                _container_fix(platform.container),
                vendor="nvidia",
            )
        )
        return findings  # the container toolkit also brings the libraries
    findings += _missing_libraries(machine, kernel.version, platform, loader)
    if kernel.version is not None:
        findings += _version_findings(machine, kernel.version, platform)
    return findings


def _not_detected(
    machine: NvidiaMachine, platform: Platform, detected: _Detected
) -> Finding | None:
    """Detection saw no GPU although nothing above explains it (a provider that
    failed outright is the providers probe's finding)."""
    if detected.status != "unavailable":
        return None
    wsl_driver = platform.wsl and machine.libraries[LIBCUDA].found is not None
    if machine.kernel is None and not wsl_driver:
        return None
    source = detected.source
    override = source in (*DRIVER_VARIABLES, *GPU_VARIABLES)
    return _finding(
        "nvidia-not-detected",
        WARNING,
        f"the nvidia provider saw no usable GPU though an NVIDIA driver is here: {detected.detail}",
        "installs choose builds without CUDA",
        f"unset {source}" if override else "wheelwise detect --refresh, once the cause is fixed",
    )


def nvidia_probe(context: DoctorContext) -> ProbeOutcome:
    detected = _detected(context)
    if not sys.platform.startswith("linux"):
        facts: dict[str, object] = {
            "checked": False,
            "why": "the driver checks read Linux's /proc, /sys and loader files",
            "detection": detected.to_dict(),
        }
        return ProbeOutcome(facts={_SECTION: {"nvidia": facts}})
    platform = look_at_platform(context.roots, context.environ)
    loader = Loader(
        context.roots, context.environ, context.target.markers.get("platform_machine", "")
    )
    machine = look_at_nvidia(context.roots, loader)
    findings = _linux_findings(machine, platform, loader)
    if not any(finding.severity != OK for finding in findings):
        not_detected = _not_detected(machine, platform, detected)
        if not_detected is not None:
            findings.append(not_detected)
    facts = {
        "present": bool(machine.kernel or machine.pci or machine.libraries[LIBCUDA].found),
        **machine.to_dict(),
        "gpus": _gpu_facts(machine, detected),
        "detection": detected.to_dict(),
        "loader": loader.searched(),
    }
    return ProbeOutcome(findings=findings, facts={_SECTION: {"nvidia": facts}})
