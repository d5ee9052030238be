"""The ``compatibility`` section: the CUDA compatibility rules between the driver,
the runtime libraries the target loads and the GPU code of its builds (NVIDIA's
CUDA Compatibility guide; see docs/doctor.md):

* a CUDA runtime of a newer major than the driver's does not run at all;
* one of the same major but a newer minor runs through minor-version compatibility,
  without PTX JIT;
* PTX is JIT-compiled only by a driver at least as new as the toolkit that made it;
* NVRTC before CUDA 11.2 has no minor-version compatibility;
* a build with neither SASS nor PTX for a GPU's architecture cannot run on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from wheelwise.doctor.context import DoctorContext
from wheelwise.doctor.cuda_machine import CudaMachine, Version, cuda_machine, format_version
from wheelwise.doctor.findings import ERROR, OK, WARNING, Finding
from wheelwise.doctor.gpu_code import GpuBuild, fatbin_builds, gpu_builds
from wheelwise.doctor.library_names import version_key
from wheelwise.doctor.library_survey import LibraryCopy, Survey, survey
from wheelwise.doctor.path_fixes import drop_copies
from wheelwise.doctor.runner import ProbeOutcome

__all__ = ["compatibility_probe"]

SECTION = "compatibility"
# NVRTC is minor-version compatible from this release on.
NVRTC_COMPATIBLE = (11, 2)


def compatibility_probe(context: DoctorContext) -> ProbeOutcome:
    machine = cuda_machine(context)
    found = survey(context)
    runtimes = found.in_use("libcudart")
    nvrtcs = found.in_use("libnvrtc")
    builds = gpu_builds(found.distributions) + fatbin_builds(found.distributions, found.gpu_code)
    findings = [
        *_runtime_vs_driver(machine, runtimes, found),
        *_old_nvrtc(machine, nvrtcs, found),
        *_gpu_code(machine, builds, runtimes),
    ]
    facts = {
        **machine.to_fact(),
        "runtime": [c.to_fact(True) for c in runtimes],
        "nvrtc": [c.to_fact(True) for c in nvrtcs],
        "builds": [b.to_fact(machine.gpus) for b in builds],
    }
    return ProbeOutcome(findings=findings, facts={SECTION: facts})


def _requirers(found: Survey, copy: LibraryCopy) -> list[str]:
    """The installed packages that require the distribution *copy* came with."""
    if copy.distribution is None:
        return []
    return [d.name for d in found.distributions if copy.distribution in d.requires]


def _reinstall(packages: Sequence[str], cuda: Version) -> str:
    """How to get the builds for *cuda*: wheelwise picks the variant the driver runs."""
    if not packages:
        return f"install the packages' builds for CUDA {format_version(cuda)} or older"
    names = " ".join(packages)
    return (
        f"reinstall the builds for CUDA {format_version(cuda)}: wheelwise install --upgrade "
        f"{names} (or choose one: --variant {packages[0]}=LABEL)"
    )


def _runtime_vs_driver(
    machine: CudaMachine, runtimes: Iterable[LibraryCopy], found: Survey
) -> list[Finding]:
    driver = machine.driver
    findings: list[Finding] = []
    if driver is None:
        return findings
    for runtime in runtimes:
        release = runtime.release
        if release is None or release <= driver:
            continue
        upgrade = f"upgrade the NVIDIA driver to one for CUDA {format_version(release)} or later"
        fix = f"{upgrade}, or {_reinstall(_requirers(found, runtime), driver)}"
        facts = {"runtime": runtime.to_fact(True), "driver_cuda": format_version(driver)}
        if release[0] > driver[0]:
            findings.append(
                Finding(
                    section=SECTION,
                    code="driver-too-old-for-runtime",
                    severity=ERROR,
                    what=f"the CUDA runtime {runtime.version} ({runtime.where}) needs a driver "
                    f"for CUDA {release[0]}; this driver supports CUDA {format_version(driver)}",
                    why="minor-version compatibility stays within a CUDA major: the first CUDA "
                    "call fails with cudaErrorInsufficientDriver ('CUDA driver version is "
                    "insufficient for CUDA runtime version') and the GPU is unusable here",
                    fix=fix,
                    facts=facts,
                )
            )
        else:
            findings.append(
                Finding(
                    section=SECTION,
                    code="runtime-newer-than-driver",
                    severity=WARNING,
                    what=f"the CUDA runtime {runtime.version} ({runtime.where}) is newer than "
                    f"the driver's CUDA {format_version(driver)}",
                    why="it runs through CUDA minor-version compatibility: functions newer than "
                    "the driver fail with cudaErrorCallRequiresNewerDriver, and the driver "
                    "cannot JIT-compile PTX made by this toolkit "
                    "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION), so code without SASS for the GPU fails",
                    fix=fix,
                    facts=facts,
                )
            )
    return findings


def _old_nvrtc(machine: CudaMachine, nvrtcs: Iterable[LibraryCopy], found: Survey) -> list[Finding]:
    findings = []
    for nvrtc in nvrtcs:
        key = version_key(nvrtc.version)
        if key is None or key[:2] >= NVRTC_COMPATIBLE:
            continue
        needs = f"a driver for CUDA {'.'.join(map(str, key[:2]))} or newer"
        if machine.driver is not None:
            needs += f" (this one supports CUDA {format_version(machine.driver)})"
        install = (
            f"pip install --upgrade {nvrtc.distribution}"
            if nvrtc.distribution
            else ("pip install nvidia-cuda-nvrtc-cu11")
        )
        drop = drop_copies(found.search, [nvrtc])
        findings.append(
            Finding(
                section=SECTION,
                code="nvrtc-without-minor-compat",
                severity=WARNING,
                what=f"NVRTC {nvrtc.version} ({nvrtc.where}) is older than CUDA 11.2",
                why="NVRTC before 11.2 has no minor-version compatibility: the code it "
                f"compiles at run time (CuPy kernels, PyTorch's fused kernels) needs {needs}",
                fix=f"{drop} and {install}" if drop else install,
                facts={"nvrtc": nvrtc.to_fact(True)},
            )
        )
    return findings


def _gpu_code(
    machine: CudaMachine, builds: Iterable[GpuBuild], runtimes: Sequence[LibraryCopy]
) -> list[Finding]:
    # Without its own toolkit version, a build is taken to come from the runtime it loads.
    runtime = next((r.release for r in runtimes if r.release is not None), None)
    findings: list[Finding] = []
    for build in builds:
        for gpu in machine.gpus:
            code = build.code_for(gpu)
            if code == "sass":
                continue
            sm = f"sm_{gpu[0]}{gpu[1]}"
            name = build.dist.name
            facts: dict[str, object] = {"build": build.to_fact([gpu]), "gpu": format_version(gpu)}
            if code == "none":
                findings.append(
                    Finding(
                        section=SECTION,
                        code="no-code-for-gpu",
                        severity=ERROR,
                        what=f"{build.spec} has no code for the GPU's architecture {sm}: its "
                        f"{build.evidence} name {', '.join(build.architectures) or 'none'}",
                        why="its CUDA kernels cannot run on this GPU: they fail with 'no kernel "
                        "image is available for execution on the device'",
                        fix=f"wheelwise install --upgrade {name} (it picks a build with code for "
                        f"{sm} when the index has one)",
                        facts=facts,
                    )
                )
                continue
            findings.append(_ptx_only(machine, build, gpu, runtime, facts))
    return findings


def _ptx_only(
    machine: CudaMachine,
    build: GpuBuild,
    gpu: Version,
    runtime: Version | None,
    facts: dict[str, object],
) -> Finding:
    sm = f"sm_{gpu[0]}{gpu[1]}"
    source = build.jit_source(gpu)
    ptx = f"compute_{source[0]}{source[1]}" if source else "PTX"
    toolkit = build.toolkit or runtime
    driver = machine.driver
    facts = {**facts, "toolkit": format_version(toolkit) if toolkit else None}
    if toolkit is not None and driver is not None and driver < toolkit:
        return Finding(
            section=SECTION,
            code="ptx-needs-newer-driver",
            severity=ERROR,
            what=f"{build.spec} has only PTX ({ptx}) for the GPU's {sm}, made by CUDA "
            f"{format_version(toolkit)}; this driver supports CUDA {format_version(driver)}",
            why="the driver JIT-compiles PTX only from toolkits no newer than itself: the "
            "kernels fail with CUDA_ERROR_UNSUPPORTED_PTX_VERSION ('the provided PTX was "
            "compiled with an unsupported toolchain')",
            fix=f"upgrade the NVIDIA driver to one for CUDA {format_version(toolkit)} or later, "
            f"or wheelwise install --upgrade {build.dist.name} (a build with SASS for {sm})",
            facts=facts,
        )
    return Finding(
        section=SECTION,
        code="ptx-jit-only",
        severity=OK,
        what=f"{build.spec} runs on the GPU's {sm} through PTX JIT ({ptx}; no SASS for {sm})",
        why="each kernel is compiled when first launched: a slow first start (the driver "
        "caches the result in ~/.nv/ComputeCache)",
        fix=f"wheelwise install --upgrade {build.dist.name} (a build with SASS for {sm}, when "
        "the index has one)",
        facts=facts,
    )
