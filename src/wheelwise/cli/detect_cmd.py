"""``wheelwise detect``: what this machine supports, per provider."""

from __future__ import annotations

import click

from wheelwise.cli.errors import input_errors
from wheelwise.providers.detect import Detection, detect_cached


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the system document as JSON.")
@click.option("--refresh", is_flag=True, help="Ignore the cached result and detect again.")
@input_errors
def detect(as_json: bool, refresh: bool) -> None:
    """Detect this machine's supported variant properties.

    The --json document is what --system FILE accepts everywhere: record it on the
    target machine, install for that machine elsewhere.
    """
    detection, text = detect_cached(refresh=refresh)
    if as_json:
        click.echo(text, nl=False)
        return
    render_detection(detection)


def render_detection(detection: Detection) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="wheelwise detect", title_justify="left")
    table.add_column("namespace")
    table.add_column("status")
    table.add_column("source")
    table.add_column("features and values (best first)", overflow="fold")
    styles = {"ok": "green", "unavailable": "yellow", "error": "red"}
    for ns, report in detection.reports.items():
        lines = [report.detail] if report.detail else []
        switches = [f for f, values in report.features.items() if values == ("on",)]
        for feature, values in report.features.items():
            if feature not in switches:
                lines.append(f"{feature}: {_shorten(values)}")
        if switches:
            lines.append(f"on: {', '.join(switches)}")
        status = f"[{styles[report.status]}]{report.status}[/]"
        table.add_row(ns, status, report.source, "\n".join(lines))
    Console().print(table)
    click.echo("Full lists: wheelwise detect --json")


def _shorten(values: tuple[str, ...], shown: int = 8) -> str:
    if len(values) <= shown:
        return ", ".join(values)
    return ", ".join(values[:shown]) + f", ... ({len(values) - shown} more)"
