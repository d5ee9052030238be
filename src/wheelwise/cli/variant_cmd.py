"""``wheelwise variant``: inspect variant wheels."""

from __future__ import annotations

import json
from pathlib import Path

import click

from wheelwise.cli.errors import input_errors
from wheelwise.wheels.variant_info import read_wheel_variant


@click.group()
def variant() -> None:
    """Inspect variant wheels."""


@variant.command("show")
@click.argument("wheel", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@input_errors
def show(wheel: Path, as_json: bool) -> None:
    """Show the variant label, properties and namespace priorities of WHEEL."""
    info = read_wheel_variant(wheel)
    properties = [str(p) for p in info.properties]
    if as_json:
        document = {
            "filename": wheel.name,
            "label": info.label,
            "properties": properties,
            "namespaces": list(info.namespaces),
        }
        click.echo(json.dumps(document, indent=2))
        return
    click.echo(f"wheel:      {wheel.name}")
    if info.label is None:
        click.echo("label:      (none: a non-variant wheel)")
        return
    null_note = (
        " (null variant: no properties, always compatible)" if info.filename.is_null_variant else ""
    )
    click.echo(f"label:      {info.label}{null_note}")
    click.echo(f"namespaces: {', '.join(info.namespaces)}  (most preferred first)")
    if properties:
        click.echo("properties:")
        for prop in properties:
            click.echo(f"  {prop}")
