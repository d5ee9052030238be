"""The ``builds`` section: whether the builds installed in the target still fit the
machine.

* Installed variant wheels (their ``variant.json``): each label's properties
  against the machine as ``wheelwise install`` would rank them now; with
  ``--index-url``, against the build the index's release would give today.
* Non-variant GPU builds known by name or local version (``torch 2.7.0+cu128``,
  ``cupy-cuda12x``, ``nvidia-cublas-cu12``...): the CUDA version each expects against
  the one the NVIDIA driver supports, ROCm builds against the AMD GPUs found.

Distributions are read from the target's ``.dist-info`` folders directly
(:mod:`wheelwise.doctor.installed_dists`); nothing is imported from the target and
nothing is run.
"""

from __future__ import annotations

from typing import Any

from wheelwise.doctor.context import DoctorContext
from wheelwise.doctor.findings import WARNING, Finding
from wheelwise.doctor.fix_commands import FixCommands
from wheelwise.doctor.gpu_fit import MachineRuntimes, judge_gpu_builds, machine_runtimes
from wheelwise.doctor.gpu_packages import GpuBuild, recognize
from wheelwise.doctor.index_choice import IndexChoices, ask_index
from wheelwise.doctor.installed_dists import installed_dists
from wheelwise.doctor.installed_variants import InstalledVariant, UnreadableVariant, read_variant
from wheelwise.doctor.runner import ProbeOutcome
from wheelwise.doctor.variant_fit import judge_variant
from wheelwise.doctor.variant_machine import VariantMachine

__all__ = ["builds_probe"]


def builds_probe(context: DoctorContext) -> ProbeOutcome:
    dists = installed_dists(context.target.site_dirs)
    variants: list[InstalledVariant] = []
    unreadable: list[UnreadableVariant] = []
    gpu_builds: list[GpuBuild] = []
    for dist in dists:
        found = read_variant(dist)
        if isinstance(found, InstalledVariant):
            variants.append(found)
        elif isinstance(found, UnreadableVariant):
            unreadable.append(found)
        else:
            build = recognize(dist.name, dist.version)
            if build is not None:
                gpu_builds.append(build)
    machine = VariantMachine(context, {dist.name: dist.version for dist in dists})
    commands = FixCommands(context.target.python, context.target.prefix)
    findings: list[Finding] = []
    index: IndexChoices | None = None
    if context.index_url is not None and variants:
        index = ask_index(
            context.index_url,
            [(v.dist.name, v.dist.version) for v in variants],
            context.target,
            machine.supported,
            context.timeout,
            machine.installed,
        )
        if index.failure is not None:
            findings.append(_index_failed(context.index_url, index.failure))
    for variant in variants:
        answer = index.answers.get(variant.dist.name) if index is not None else None
        findings.append(judge_variant(variant, machine, commands, answer, context.index_url))
    findings += [_unreadable(item, commands, context.index_url) for item in unreadable]
    runtimes = machine_runtimes(context.supported, _provider_details(context))
    findings += judge_gpu_builds(gpu_builds, runtimes, commands)
    facts = _facts(len(dists), variants, findings, gpu_builds, runtimes, context.index_url)
    return ProbeOutcome(findings=findings, facts={"builds": facts})


def _provider_details(context: DoctorContext) -> dict[str, str]:
    detection = context.detection
    if detection is None:
        return dict.fromkeys(("nvidia", "amd"), "the --system file lists no support for it")
    return {ns: report.detail for ns, report in detection.reports.items()}


def _index_failed(url: str, failure: str) -> Finding:
    return Finding(
        section="builds",
        code="index-failed",
        severity=WARNING,
        what=f"could not ask {url} for better builds: {failure}",
        why="the installed variant wheels were checked against the machine only, not "
        "against what the index offers today",
        fix="check the URL and that the index is up (and HTTP_PROXY, HTTPS_PROXY, "
        "NO_PROXY), or leave out --index-url",
        facts={"url": url, "failure": failure},
    )


def _unreadable(item: UnreadableVariant, commands: FixCommands, index_url: str | None) -> Finding:
    dist = item.dist
    return Finding(
        section="builds",
        code="variant-unreadable",
        severity=WARNING,
        what=f"{dist.name} {dist.version}: its variant.json cannot be used: {item.reason}",
        why="which build this is, and whether it fits the machine, cannot be told",
        fix=commands.wheelwise_install(dist.name, None, index_url),
        facts={"name": dist.name, "version": dist.version, "reason": item.reason},
    )


def _facts(
    distributions: int,
    variants: list[InstalledVariant],
    findings: list[Finding],
    gpu_builds: list[GpuBuild],
    runtimes: MachineRuntimes,
    index_url: str | None,
) -> dict[str, Any]:
    status = {
        f.facts["name"]: f.severity
        for f in findings
        if f.code in ("variant-fits", "variant-unfit", "better-variant")
    }
    return {
        "distributions": distributions,
        "variant_wheels": [
            {
                "name": v.dist.name,
                "version": v.dist.version,
                "label": v.label,
                "status": status.get(v.dist.name, "ok"),
            }
            for v in variants
        ],
        "gpu_packages": [
            {
                "name": b.name,
                "version": b.version,
                "runtime": b.runtime,
                "expects": b.expects_text or None,
            }
            for b in gpu_builds
        ],
        "driver_cuda": runtimes.cuda_text,
        "amd_gpu": runtimes.amd,
        "index_url": index_url,
    }
