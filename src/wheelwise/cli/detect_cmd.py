"""``wheelwise detect``: what this machine supports, per provider."""

from __future__ import annotations

import click

from wheelwise.cli.errors import input_errors
from wheelwise.cli.fast_detect import FORMATS, detection_as_uv_target
from wheelwise.providers.detect import Detection, detect_cached


@click.command()
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default=None,
    help="table (default); json: the document --system FILE reads; "
    "uv: the same, as uv's variant target TOML (the UV_VARIANT_LOCK file format).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the system document as JSON.")
@click.option("--refresh", is_flag=True, help="Ignore the cached result and detect again.")
@input_errors
def detect(output_format: str | None, as_json: bool, refresh: bool) -> None:
    """Detect this machine's supported variant properties.

    The --json document and the --format uv TOML are what --system FILE accepts
    everywhere: record one on the target machine, install for that machine elsewhere.
    The TOML is in the format of uv's variant target file (UV_VARIANT_LOCK).
    """
    if as_json and output_format not in (None, "json"):
        raise click.UsageError(f"--json and --format {output_format} ask for different formats")
    output_format = "json" if as_json else output_format or "table"
    detection, text = detect_cached(refresh=refresh)
    if output_format == "json":
        click.echo(text, nl=False)
    elif output_format == "uv":
        click.echo(detection_as_uv_target(detection), nl=False)
    else:
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
    click.echo("Full lists: wheelwise detect --json (or --format uv, for uv)")


def _shorten(values: tuple[str, ...], shown: int = 8) -> str:
    if len(values) <= shown:
        return ", ".join(values)
    return ", ".join(values[:shown]) + f", ... ({len(values) - shown} more)"
