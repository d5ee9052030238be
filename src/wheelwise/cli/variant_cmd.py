"""``wheelwise variant``: inspect, make and strip variant wheels."""

from __future__ import annotations

import json
from pathlib import Path

import click

from wheelwise.cli.errors import InputError, input_errors


@click.group()
def variant() -> None:
    """Inspect, make and strip variant wheels."""


@variant.command("show")
@click.argument("wheel", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@input_errors
def show(wheel: Path, as_json: bool) -> None:
    """Show the variant label, properties and namespace priorities of WHEEL."""
    from wheelwise.wheels.variant_info import read_wheel_variant

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


def _split_namespaces(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [part.strip() for part in text.split(",") if part.strip()]


_VERIFY = click.option(
    "--verify",
    is_flag=True,
    help="Check every member against its RECORD hash first. Without it, members are "
    "copied as they are, with their RECORD rows: an installer still finds a damaged one.",
)


@variant.command("make")
@click.argument(
    "wheels", metavar="WHEEL...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option(
    "-p",
    "--property",
    "properties",
    multiple=True,
    metavar="'NS :: FEATURE :: VALUE'",
    help="A variant property (repeat for several).",
)
@click.option("--label", help="The variant label (default: the 8-hex hash of the properties).")
@click.option("--null", "null", is_flag=True, help="Make the null variant (no properties).")
@click.option(
    "--namespaces",
    metavar="NS1,NS2",
    help="default-priorities.namespace, most preferred first (default: the namespaces "
    "used, sorted, or the --pyproject's).",
)
@click.option(
    "--pyproject",
    type=click.Path(path_type=Path),
    help="A pyproject.toml whose [variant] table gives the namespace priorities and the "
    "provider information (providers, static properties, priorities) to write.",
)
@click.option(
    "--no-validate",
    is_flag=True,
    help="Accept properties the built-in providers do not know.",
)
@click.option(
    "-o",
    "--output-dir",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Where to write the variant wheels.",
)
@_VERIFY
@input_errors
def make(
    wheels: tuple[Path, ...],
    properties: tuple[str, ...],
    label: str | None,
    null: bool,
    namespaces: str | None,
    pyproject: Path | None,
    no_validate: bool,
    out_dir: Path,
    verify: bool,
) -> None:
    """Make variant wheels of WHEEL...: add variant.json, rewrite RECORD, add the label."""
    from wheelwise.cli.inputs import load_pyproject_variant
    from wheelwise.variants.properties import VariantProperty
    from wheelwise.wheels.make import make_variant

    if null and properties:
        raise InputError("--null makes the variant without properties; drop -p/--property")
    if null and label is not None and label != "null":
        raise InputError("--null and --label exclude each other (the null variant is 'null')")
    parsed = [VariantProperty.parse(text) for text in properties]
    project = load_pyproject_variant(pyproject) if pyproject is not None else None
    for wheel in wheels:
        written = make_variant(
            wheel,
            out_dir,
            properties=parsed,
            label=label,
            null=null,
            namespaces=_split_namespaces(namespaces),
            project=project,
            validate=not no_validate,
            verify=verify,
        )
        click.echo(f"wrote {written}")


@variant.command("strip")
@click.argument(
    "wheels", metavar="WHEEL...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option(
    "-o",
    "--output-dir",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Where to write the non-variant wheels.",
)
@_VERIFY
@input_errors
def strip(wheels: tuple[Path, ...], out_dir: Path, verify: bool) -> None:
    """Turn variant wheels back into non-variant wheels (drop variant.json and the label)."""
    from wheelwise.wheels.strip import strip_variant

    for wheel in wheels:
        click.echo(f"wrote {strip_variant(wheel, out_dir, verify=verify)}")
