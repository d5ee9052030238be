"""``wheelwise doctor``: the target's GPU stack and installed builds, checked."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from wheelwise.cli.errors import input_errors

if TYPE_CHECKING:
    from rich.console import Console

_MARKS = {"ok": "[green]ok[/]", "warning": "[yellow]warning[/]", "error": "[red]error[/]"}


@click.command()
@click.option(
    "--python",
    type=click.Path(path_type=str),
    help="Check this interpreter's environment (default: the activated virtual "
    "environment, $VIRTUAL_ENV, else the running interpreter's). A path, a virtual "
    "environment's folder, or a bare name looked up on PATH when no such file is here.",
)
@click.option(
    "--system",
    "system_file",
    type=click.Path(path_type=Path),
    help="JSON or TOML file of the machine's supported properties (instead of detecting).",
)
@click.option(
    "--index-url",
    metavar="URL",
    help="Also ask this index whether a better build of each installed variant wheel "
    "exists (the only network access doctor makes).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (docs/doctor.md).")
@input_errors
def doctor(
    python: str | None, system_file: Path | None, index_url: str | None, as_json: bool
) -> int:
    """Check the machine's drivers, the environment's CUDA/ROCm libraries and the
    installed builds against each other.

    Exits 0 when healthy, 1 with warnings, 2 with errors.
    """
    from wheelwise.cli.inputs import load_system
    from wheelwise.doctor import DoctorContext, MachineRoots, diagnose
    from wheelwise.doctor.context import probe_timeout
    from wheelwise.doctor.probes import PROBES
    from wheelwise.environment.interpreter import TargetEnvironment

    environ = dict(os.environ)
    try:
        timeout = probe_timeout(environ)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    from wheelwise.cli.errors import InputError
    from wheelwise.models.errors import EnvironmentQueryError

    try:
        target = TargetEnvironment.from_python(python) if python else TargetEnvironment.current()
    except EnvironmentQueryError as exc:
        raise InputError(str(exc)) from None
    context = DoctorContext(
        target=target,
        environ=environ,
        roots=MachineRoots.from_environment(environ),
        system=load_system(system_file) if system_file is not None else None,
        index_url=index_url,
        timeout=timeout,
    )
    report = diagnose(PROBES, context)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        _render(report)
    return report.exit_code


def _render(report: object) -> None:
    from rich.console import Console
    from rich.markup import escape

    from wheelwise.doctor.findings import SECTIONS, DoctorReport

    assert isinstance(report, DoctorReport)
    console = Console()
    console.print(f"[bold]wheelwise doctor[/] for {escape(report.target)}")
    for section in SECTIONS:
        findings = report.in_section(section)
        if not findings and section not in report.facts:
            continue
        console.print(f"\n[bold]{section}[/]")
        show_facts = _FACTS_RENDERERS.get(section)
        if show_facts is not None:
            show_facts(console, report.facts.get(section, {}))
        for finding in findings:
            console.print(f"  {_MARKS[finding.severity]} {escape(finding.what)}")
            if finding.why:
                console.print(f"     why: {escape(finding.why)}")
            if finding.fix:
                console.print(f"     fix: {escape(finding.fix)}")
        if not findings:
            console.print(f"  {_MARKS['ok']} nothing wrong found")
    counts = {s: sum(f.severity == s for f in report.findings) for s in ("error", "warning")}
    console.print(
        f"\n{_MARKS[report.severity]}: {counts['error']} error(s), {counts['warning']} "
        f"warning(s) (exit {report.exit_code})"
    )


def _mapping(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _machine_lines(facts: Mapping[str, Any]) -> list[str]:
    """The machine section's facts as lines: the providers' view, the platform, the
    NVIDIA driver and GPUs, ROCm and AMD GPUs."""
    lines = []
    if facts.get("source") == "--system":
        lines.append("described by --system (not detected)")
        for namespace, features in _mapping(facts.get("properties")).items():
            for feature, values in _mapping(features).items():
                shown = ", ".join(map(str, _list(values)))
                lines.append(f"--system {namespace} {feature}: {shown}")
    for namespace, report in _mapping(facts.get("providers")).items():
        report = _mapping(report)
        lines.append(f"provider {namespace}: {report.get('status')} ({report.get('detail')})")
    platform = _mapping(facts.get("platform"))
    if platform.get("wsl"):
        device = "with" if platform.get("wsl_gpu_device") else "without"
        lines.append(f"platform: WSL ({device} the GPU device /dev/dxg)")
    if platform.get("container"):
        lines.append(f"platform: {platform['container']} container")
    lines += _nvidia_lines(_mapping(facts.get("nvidia")), bool(platform.get("wsl")))
    lines += _amd_lines(_mapping(facts.get("amd")))
    return lines


def _nvidia_lines(nvidia: dict[str, Any], wsl: bool) -> list[str]:
    if not nvidia:
        return []
    if nvidia.get("checked") is False:
        return [f"NVIDIA: not checked ({nvidia.get('why')})"]
    if not nvidia.get("present") and not wsl:
        return ["NVIDIA: none (no kernel module, no NVIDIA GPU on the PCI bus, no libcuda)"]
    lines = []
    kernel = _mapping(nvidia.get("kernel_module"))
    if kernel.get("version"):
        flavor = f" ({kernel['flavor']})" if kernel.get("flavor") else ""
        lines.append(
            f"NVIDIA kernel module {kernel['version']}{flavor}, from {kernel.get('source')}"
        )
    elif kernel:
        lines.append(f"NVIDIA kernel module: loaded, version unreadable ({kernel.get('source')})")
    elif wsl:
        lines.append("NVIDIA kernel driver: the Windows host's (WSL)")
    else:
        lines.append("NVIDIA kernel module: not loaded")
    for name, library in _mapping(nvidia.get("user_mode_driver")).items():
        library = _mapping(library)
        if library.get("found"):
            version = library.get("version") or "version unknown"
            lines.append(f"{name}: {version} at {library.get('file')} (via {library.get('via')})")
        else:
            elsewhere = _list(library.get("elsewhere"))
            also = f"; it is at {', '.join(map(str, elsewhere))}" if elsewhere else ""
            lines.append(f"{name}: not found by the loader{also}")
    for gpu in _list(nvidia.get("gpus")):
        gpu = _mapping(gpu)
        capability = gpu.get("compute_capability")
        model = gpu.get("model") or "model unknown"
        cc = f", compute capability {capability}" if capability else ""
        lines.append(f"GPU {gpu.get('address')}: {model}{cc}")
    detection = _mapping(nvidia.get("detection"))
    capabilities = _list(detection.get("compute_capabilities"))
    if detection.get("cuda_driver"):
        lines.append(
            f"detected: CUDA driver {detection['cuda_driver']}, GPU compute capabilities "
            f"{', '.join(map(str, capabilities))} (from {detection.get('source')})"
        )
    return lines


def _amd_lines(amd: dict[str, Any]) -> list[str]:
    if not amd or amd.get("checked") is False:
        return []
    rocm = _mapping(amd.get("rocm"))
    gpus = [_mapping(gpu) for gpu in _list(amd.get("gpus"))]
    if not rocm and not gpus and not amd.get("pci_devices"):
        return ["AMD: none (no ROCm, no AMD GPU)"]
    lines = []
    if rocm:
        lines.append(f"ROCm {rocm.get('version') or '(version unknown)'} at {rocm.get('path')}")
    else:
        lines.append("ROCm: not installed")
    for gpu in gpus:
        lines.append(f"AMD GPU (node {gpu.get('node')}): {gpu.get('gfx') or 'unknown target'}")
    if not gpus:
        for device in _list(amd.get("pci_devices")):
            device = _mapping(device)
            lines.append(f"AMD GPU {device.get('address')} on the PCI bus: no compute driver")
    return lines


def _render_machine(console: Console, facts: Mapping[str, Any]) -> None:
    """The providers' view, the drivers and what detection could not see."""
    from rich.markup import escape

    for line in _machine_lines(facts):
        console.print(f"  {escape(line)}")


def _render_builds(console: Console, facts: Mapping[str, Any]) -> None:
    """The installed variant wheels and known GPU builds, before the findings."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    driver = facts.get("driver_cuda")
    console.print(
        f"  {facts.get('distributions', 0)} distributions installed; NVIDIA driver: "
        + (f"CUDA {driver}" if driver else "none")
        + ("; AMD GPU: yes" if facts.get("amd_gpu") else "")
    )
    variants = facts.get("variant_wheels") or []
    if variants:
        table = Table("variant wheel", "version", "label", "", box=box.SIMPLE, padding=(0, 1))
        for row in variants:
            cells = (escape(str(row[key])) for key in ("name", "version", "label"))
            table.add_row(*cells, _MARKS.get(row["status"], ""))
        console.print(table)
    packages = facts.get("gpu_packages") or []
    if packages:
        table = Table("GPU package", "version", "built for", box=box.SIMPLE, padding=(0, 1))
        for row in packages:
            built_for = f"{_RUNTIMES[row['runtime']]} {row['expects'] or ''}".rstrip()
            table.add_row(escape(row["name"]), escape(row["version"]), built_for)
        console.print(table)


_RUNTIMES = {"cuda": "CUDA", "rocm": "ROCm", "cpu": "CPU"}


def _compatibility_lines(facts: Mapping[str, Any]) -> list[str]:
    """The compatibility section's facts as lines: what the rules were applied to
    (driver, GPUs, the runtime in use), and each build's code for each GPU."""
    gpus = ", ".join(map(str, _list(facts.get("gpus")))) or "none known"
    runtimes = [_mapping(r) for r in _list(facts.get("runtime"))]
    in_use = ", ".join(f"{r.get('soname')} {r.get('version')}" for r in runtimes) or "none"
    driver = facts.get("driver_cuda")
    lines = [
        f"driver: {f'CUDA {driver}' if driver else 'none known'}; GPUs: {gpus}; "
        f"runtime in use: {in_use}"
    ]
    for build in map(_mapping, _list(facts.get("builds"))):
        code = ", ".join(f"{gpu} {how}" for gpu, how in _mapping(build.get("gpus")).items())
        lines.append(
            f"{build.get('name')} {build.get('version')} ({build.get('from')}): "
            f"{code or 'no GPU to check'}"
        )
    return lines


def _render_libraries(console: Console, facts: Mapping[str, Any]) -> None:
    """The library search variables, and a table of the copies found: which SONAME,
    which version, where, and whether the loader takes it."""
    from rich.markup import escape
    from rich.table import Table

    for variable in ("LD_PRELOAD", "LD_LIBRARY_PATH"):
        if facts.get(variable) is not None:
            console.print(f"  {variable}={escape(str(facts[variable]))}")
    copies = facts.get("libraries") or []
    if not copies:
        return
    table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 2))
    for column in ("library", "version", "from", "loader", "path"):
        table.add_column(column, overflow="fold")
    for copy in copies:
        if copy.get("winner"):
            loader = "[green]loads it[/]"
        elif copy.get("searched"):
            loader = "shadowed"
        else:
            loader = "[dim]not searched[/]"
        table.add_row(
            escape(str(copy.get("soname", ""))),
            escape(str(copy.get("version", ""))),
            escape(str(copy.get("provider") or copy.get("kind") or "")),
            loader,
            escape(str(copy.get("path", ""))),
        )
    console.print(table)


def _render_compatibility(console: Console, facts: Mapping[str, Any]) -> None:
    """What the CUDA rules were applied to, and each build's code for each GPU."""
    from rich.markup import escape

    for line in _compatibility_lines(facts):
        console.print(f"  {escape(line)}")


# Sections whose facts are shown before their findings.
_FACTS_RENDERERS: dict[str, Callable[[Console, Mapping[str, Any]], None]] = {
    "machine": _render_machine,
    "libraries": _render_libraries,
    "compatibility": _render_compatibility,
    "builds": _render_builds,
}
