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
    help="Check this interpreter's environment (default: the running one). A path, or a "
    "bare name looked up on PATH when no such file is here.",
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
    from wheelwise.install.environment import TargetEnvironment

    environ = dict(os.environ)
    try:
        timeout = probe_timeout(environ)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    target = TargetEnvironment.from_python(python) if python else TargetEnvironment.current()
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

# Sections whose facts are shown before their findings.
_FACTS_RENDERERS: dict[str, Callable[[Console, Mapping[str, Any]], None]] = {
    "builds": _render_builds,
}
