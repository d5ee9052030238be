"""``wheelwise select``: rank the labels of a variant metadata file for a machine."""

from __future__ import annotations

import json
from pathlib import Path

import click

from wheelwise.cli.errors import input_errors
from wheelwise.cli.inputs import load_metadata, load_system
from wheelwise.cli.options import provider_options
from wheelwise.providers.machine import MachineOptions, machine_for
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.ordering import Ranking, rank_variants


@click.command()
@click.argument("variants_json", type=click.Path(path_type=Path))
@click.option(
    "--system",
    "system_file",
    type=click.Path(path_type=Path),
    help="JSON or TOML file of the target machine's supported properties "
    "(wheelwise detect --json, or --format uv).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@provider_options
@input_errors
def select(
    variants_json: Path,
    system_file: Path | None,
    as_json: bool,
    allow_provider: tuple[str, ...],
    enable_provider: tuple[str, ...],
    refresh: bool,
) -> None:
    """Rank the variants in VARIANTS_JSON for a machine, offline.

    VARIANTS_JSON is a *-variants.json or variant.json file (PEP 825 or legacy).
    Without --system, this machine is detected (see `wheelwise detect`).
    """
    metadata = load_metadata(variants_json)
    system = load_system(system_file) if system_file is not None else None
    options = MachineOptions(allow_provider, enable_provider, refresh)
    view = machine_for(metadata, options, system=system, system_source=str(system_file))
    ranking = rank_variants(metadata, view.supported)
    if as_json:
        click.echo(json.dumps(ranking_document(ranking), indent=2))
        return
    machine = "this machine" if system_file is None else str(system_file)
    render_ranking(ranking, metadata, title=f"{variants_json.name} for {machine}")
    for note in view.notes:
        click.echo(f"note: {note}")
    for ns, report in view.reports.items():
        if report.status != "ok":
            click.echo(f"note: {ns}: {report.status}: {report.detail}")


def ranking_document(ranking: Ranking) -> dict[str, object]:
    return {
        "selected": ranking.selected,
        "order": list(ranking.order),
        "rejected": dict(ranking.rejected),
    }


def render_ranking(ranking: Ranking, metadata: VariantMetadata, *, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("label")
    table.add_column("why", overflow="fold")
    for rank, variant in enumerate(ranking.compatible, start=1):
        why = ", ".join(str(p) for p in variant.best) or (
            "null variant (always compatible)"
            if metadata.is_null(variant.label)
            else "no properties (always compatible)"
        )
        table.add_row(str(rank), variant.label, why)
    for label, reason in ranking.rejected.items():
        table.add_row("-", label, f"[red]rejected:[/red] {reason}")
    console.print(table)
    if ranking.selected is None:
        console.print("selected: none (only non-variant wheels would fit)")
    else:
        console.print(f"selected: [bold]{ranking.selected}[/bold]")
