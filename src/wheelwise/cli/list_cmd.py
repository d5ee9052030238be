"""``wheelwise list``, ``freeze`` and ``check``: what an environment holds."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from wheelwise.cli.errors import input_errors
from wheelwise.cli.install_cmd import install_errors
from wheelwise.cli.locations import (
    environment_getter,
    location_options,
    python_option,
    warn_if_interrupted,
)

if TYPE_CHECKING:
    from wheelwise.environment.installed import InstalledDist

FORMATS = ("columns", "json", "freeze")


@click.command(name="list")
@python_option("List")
@location_options("List")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default=None,
    help="columns (a table, the default), json, or freeze (pip freeze's lines), as "
    "pip list --format.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list (--format json).")
@input_errors
@install_errors
def list_cmd(
    python: str | None,
    target_dir: Path | None,
    prefix_dir: Path | None,
    user: bool,
    output_format: str | None,
    as_json: bool,
) -> None:
    """List installed distributions with their variant label."""
    if as_json and output_format not in (None, "json"):
        raise click.UsageError(f"--json and --format {output_format} contradict each other")
    dists, editables = _installed(python, target_dir, prefix_dir, user)
    chosen = "json" if as_json else output_format or "columns"
    if chosen == "freeze":
        _freeze(dists, editables)
        return
    if chosen == "json":
        document = [
            {
                "name": d.name,
                "version": d.version,
                "variant": d.variant,
                "installer": d.installer,
                "editable": editable,
                # pip list --format json's key for the same folder.
                "editable_project_location": editable,
            }
            for d, editable in zip(dists, editables, strict=True)
        ]
        click.echo(json.dumps(document, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table()
    columns = ["name", "version", "variant", "installer"]
    any_editable = any(editables)
    for column in [*columns, "editable project location"] if any_editable else columns:
        table.add_column(column)
    for d, editable in zip(dists, editables, strict=True):
        row = [d.name, d.version, d.variant or "-", d.installer or "-"]
        table.add_row(*row, *([editable or "-"] if any_editable else []))
    Console(width=200 if not sys.stdout.isatty() else None).print(table)


@click.command()
@python_option("Freeze")
@location_options("Freeze")
@input_errors
@install_errors
def freeze(
    python: str | None, target_dir: Path | None, prefix_dir: Path | None, user: bool
) -> None:
    """Print the installed distributions as requirements, as pip freeze does:
    NAME==VERSION, NAME @ URL for a direct reference, -e FOLDER for an editable
    install; a variant build's label follows in a comment (pip reads the lines as
    they are; ``wheelwise install NAME==VERSION#LABEL`` chooses the same build)."""
    dists, editables = _installed(python, target_dir, prefix_dir, user)
    _freeze(dists, editables)


def _installed(
    python: str | None, target_dir: Path | None, prefix_dir: Path | None, user: bool
) -> tuple[list[InstalledDist], list[str | None]]:
    """The distributions of the environment the options name, and the folder of each
    editable one; a warning first when a killed run's journal is still there."""
    environment = environment_getter(python, target_dir, prefix_dir, user)
    from wheelwise.environment.installed import editable_location, list_installed

    env: Any = environment()
    warn_if_interrupted(env, target_dir, prefix_dir, user, "this list")
    dists = list_installed(env)
    return dists, [editable_location(d) for d in dists]


def _freeze(dists: list[InstalledDist], editables: list[str | None]) -> None:
    from wheelwise.environment.installed import direct_reference

    for dist, editable in zip(dists, editables, strict=True):
        if editable is not None:
            line = f"-e {editable}"
        else:
            line = direct_reference(dist) or f"{dist.name}=={dist.version}"
        click.echo(line + (f"  # variant {dist.variant}" if dist.variant else ""))


@click.command()
@python_option("Check")
@location_options("Check")
@input_errors
@install_errors
def check(python: str | None, target_dir: Path | None, prefix_dir: Path | None, user: bool) -> None:
    """Say which installed distributions require what is not installed, or not in
    the range they ask for, as pip check does (exit 1 when any)."""
    environment = environment_getter(python, target_dir, prefix_dir, user)
    from wheelwise.environment.installed import list_installed
    from wheelwise.environment.satisfied import unmet_requirements

    env: Any = environment()
    problems = unmet_requirements({d.name: d for d in list_installed(env)}, env.markers)
    for line in problems:
        click.echo(line)
    if problems:
        raise click.exceptions.Exit(1)
    click.echo("no broken requirements found")
