"""``wheelwise doctor``: the target's GPU stack and installed builds, checked."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from wheelwise.cli.errors import input_errors

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
        for finding in findings:
            console.print(f"  {_MARKS[finding.severity]} {escape(finding.what)}")
            if finding.why:
                console.print(f"     why: {escape(finding.why)}")
            if finding.fix:
                console.print(f"     fix: {escape(finding.fix)}")
        if not findings:
            console.print(f"  {_MARKS['ok']} nothing wrong found")
        if section == "libraries":
            _render_libraries(console, report.facts.get(section, {}))
    counts = {s: sum(f.severity == s for f in report.findings) for s in ("error", "warning")}
    console.print(
        f"\n{_MARKS[report.severity]}: {counts['error']} error(s), {counts['warning']} "
        f"warning(s) (exit {report.exit_code})"
    )


def _render_libraries(console: object, facts: Mapping[str, Any]) -> None:
    """The library search variables, and a table of the copies found: which SONAME,
    which version, where, and whether the loader takes it."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    assert isinstance(console, Console)
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
