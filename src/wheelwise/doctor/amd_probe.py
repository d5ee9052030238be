"""AMD GPUs and ROCm, checked: a GPU on the bus without the amdgpu compute driver,
a GPU without ROCm, a container without ``/dev/kfd``. Facts: the ROCm version and
every GPU's gfx target, from the kernel's topology and from detection."""

from __future__ import annotations

import sys

from wheelwise.doctor.amd_machine import KFD_DEVICE, KFD_NODES, AmdMachine, look_at_amd
from wheelwise.doctor.context import DoctorContext
from wheelwise.doctor.findings import WARNING, Finding
from wheelwise.doctor.runner import ProbeOutcome
from wheelwise.doctor.virtualization import Platform, look_at_platform
from wheelwise.providers.amd import GFX_ARCH, ROCM_VERSION

__all__ = ["amd_probe"]

_SECTION = "machine"
_ROCM_DOCS = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/"


def _detected(context: DoctorContext) -> dict[str, object]:
    supported = context.supported
    values: dict[str, object] = {
        "gfx_arch": list(supported.values("amd", GFX_ARCH)),
        "rocm_version": list(supported.values("amd", ROCM_VERSION)),
    }
    if context.system is not None:
        values["source"] = "--system"
    elif context.detection is not None and "amd" in context.detection.reports:
        report = context.detection.reports["amd"]
        values.update(status=report.status, source=report.source)
    return values


def _findings(machine: AmdMachine, platform: Platform) -> list[Finding]:
    # A GPU bound to vfio-pci is handed to a virtual machine, not used here.
    devices = [device for device in machine.pci if device.driver != "vfio-pci"]
    if not machine.gpus and not devices:
        return []
    findings = []
    if not machine.gpus:
        drivers = sorted({device.driver for device in devices if device.driver})
        bound = f" ({', '.join(drivers)} bound)" if drivers else ""
        findings.append(
            Finding(
                section=_SECTION,
                code="amd-compute-driver-missing",
                severity=WARNING,
                what=f"AMD GPU {devices[0].address}{bound} has no compute node in {KFD_NODES}",
                why="without the amdgpu driver's compute interface, ROCm programs cannot use "
                "it and the amd provider sees no GPU",
                fix="load the driver on the host: sudo modprobe amdgpu"
                if platform.container
                else f"sudo modprobe amdgpu (or install the amdgpu driver: {_ROCM_DOCS})",
                facts={"devices": [device.address for device in devices]},
            )
        )
    elif platform.container and not machine.kfd_device:
        findings.append(
            Finding(
                section=_SECTION,
                code="container-without-gpu-devices",
                severity=WARNING,
                what=f"this {platform.container} container has no {KFD_DEVICE}, though the "
                "host's amdgpu driver exposes GPUs",
                why="ROCm programs in this container cannot reach the GPU",
                fix="docker run --device=/dev/kfd --device=/dev/dri --group-add video ...",
                facts={"vendor": "amd"},
            )
        )
    if machine.rocm is None:
        targets = [gpu.gfx for gpu in machine.gpus if gpu.gfx]
        named = ", ".join(dict.fromkeys(targets)) or "AMD GPU"
        override = f" or name the GPU for wheelwise: export WHEELWISE_AMD_GFX={targets[0]}"
        findings.append(
            Finding(
                section=_SECTION,
                code="rocm-missing",
                severity=WARNING,
                what=f"{named} present but no ROCm installed "
                f"(no {machine.rocm_path}/.info/version)",
                why="the amd provider needs ROCm's rocminfo to see the GPU, so installs choose "
                "builds without ROCm; programs that do not bundle the ROCm runtime cannot use "
                "the GPU",
                fix=f"install ROCm ({_ROCM_DOCS})" + (override if targets else ""),
                facts={"gfx": targets},
            )
        )
    return findings


def amd_probe(context: DoctorContext) -> ProbeOutcome:
    detected = _detected(context)
    if not sys.platform.startswith("linux"):
        facts = {"checked": False, "detection": detected}
        return ProbeOutcome(facts={_SECTION: {"amd": facts}})
    platform = look_at_platform(context.roots, context.environ)
    machine = look_at_amd(context.roots, context.environ)
    unknown = sorted({gpu.gfx or str(gpu.target_version) for gpu in machine.gpus if not gpu.known})
    facts = {**machine.to_dict(), "detection": detected}
    if unknown:
        facts["unknown_targets"] = unknown
    return ProbeOutcome(findings=_findings(machine, platform), facts={_SECTION: {"amd": facts}})
