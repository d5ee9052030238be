"""``wheelwise build``: build a variant wheel from a source tree."""

from __future__ import annotations

from pathlib import Path

import click

from wheelwise.cli.errors import InputError, input_errors
from wheelwise.variants.properties import VariantProperty


@click.command()
@click.argument(
    "src", default=".", type=click.Path(file_okay=False, path_type=Path), metavar="[SRC]"
)
@click.option(
    "-p",
    "--property",
    "property_texts",
    multiple=True,
    metavar="'NS :: FEATURE :: VALUE'",
    help="A variant property of the wheel (repeatable).",
)
@click.option("--label", metavar="L", help="The variant label (default: the hash label).")
@click.option("--null", is_flag=True, help="Build the null variant (no properties).")
@click.option(
    "--no-validate",
    is_flag=True,
    help="Do not check the properties against the built-in providers' features and values.",
)
@click.option(
    "-o",
    "--outdir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Where the variant wheel goes (default: SRC/dist).",
)
@click.option(
    "--no-isolation",
    is_flag=True,
    help="Build in this environment, which must have the build requirements (offline).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show the build backend's output.")
@input_errors
def build(
    src: Path,
    property_texts: tuple[str, ...],
    label: str | None,
    null: bool,
    no_validate: bool,
    outdir: Path | None,
    no_isolation: bool,
    verbose: bool,
) -> None:
    """Build a variant wheel of the project in SRC (default: the current directory).

    The project's PEP 517 backend builds a wheel (in an isolated environment
    unless --no-isolation); it becomes a variant wheel with the given properties
    and the [variant] table of pyproject.toml. Prints the wheel's path.
    """
    if label is not None and null:
        raise InputError("--label and --null exclude each other (the null variant's label is null)")
    if null and property_texts:
        raise InputError("--null builds the variant without properties; drop -p or --null")
    if not null and not property_texts:
        raise InputError(
            "a variant build needs properties (-p 'ns :: feature :: value') or --null; "
            "for a plain, non-variant wheel use `python -m build`"
        )
    properties = [VariantProperty.parse(text) for text in property_texts]

    from wheelwise.wheels.build import build_variant_wheel

    def show(line: str) -> None:
        click.echo(line, err=True)

    out = outdir if outdir is not None else src / "dist"
    wheel = build_variant_wheel(
        src,
        out,
        properties=properties,
        label=label,
        null=null,
        validate=not no_validate,
        isolation=not no_isolation,
        output=show if verbose else None,
    )
    click.echo(str(out / wheel.name))
