"""``wheelwise list``, ``freeze`` and ``check``: what an environment holds."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from wheelwise.cli.errors import InputError, input_errors, warn
from wheelwise.cli.install_cmd import install_errors
from wheelwise.cli.locations import (
    environment_getter,
    installed_or_warned,
    location_options,
    python_option,
    warn_if_interrupted,
)
from wheelwise.cli.options import (
    cutoff_options,
    index_options,
    network_options,
    provider_options,
    upload_cutoffs,
)

if TYPE_CHECKING:
    from wheelwise.client.connection import Connection
    from wheelwise.environment.installed import InstalledDist
    from wheelwise.environment.interpreter import TargetEnvironment
    from wheelwise.install.options import InstallOptions

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
@click.option(
    "-o",
    "--outdated",
    is_flag=True,
    help="List only the distributions of which the sources offer a newer release for "
    "the environment, with it and the variant install would choose of it, as pip list "
    "--outdated (and uv pip list --outdated).",
)
@click.option("--pre", is_flag=True, help="With --outdated: count pre-releases too.")
@index_options
@cutoff_options
@click.option("--no-index", is_flag=True, help="With --outdated: only --find-links.")
@click.option(
    "--system",
    "system_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="With --outdated: choose variants for the machine this JSON or TOML file "
    "describes (wheelwise detect --json), not this one.",
)
@provider_options
@network_options
@input_errors
@install_errors
def list_cmd(
    python: str | None,
    target_dir: Path | None,
    prefix_dir: Path | None,
    user: bool,
    output_format: str | None,
    as_json: bool,
    outdated: bool,
    pre: bool,
    index_url: str | None,
    extra_index_url: tuple[str, ...],
    index_strategy: str | None,
    find_links: tuple[str, ...],
    exclude_newer: float | None,
    exclude_newer_package: tuple[tuple[str, float | None], ...],
    no_index: bool,
    system_file: Path | None,
    allow_provider: tuple[str, ...],
    enable_provider: tuple[str, ...],
    refresh: bool,
    timeout: float,
    request_deadline: float,
    retries: int,
    connection: Connection,
    concurrent_downloads: int | None,
    no_cache: bool,
) -> None:
    """List installed distributions with their variant label; with --outdated, those
    of which a newer release is offered."""
    if as_json and output_format not in (None, "json"):
        raise click.UsageError(f"--json and --format {output_format} contradict each other")
    env, dists, editables = _installed(python, target_dir, prefix_dir, user)
    chosen = "json" if as_json else output_format or "columns"
    if outdated:
        if chosen == "freeze":
            raise InputError("--format freeze cannot be used with --outdated, as in pip")
        from wheelwise.cli.inputs import load_system
        from wheelwise.cli.install_cmd import chosen_index_strategy, chosen_indexes
        from wheelwise.install.options import InstallOptions
        from wheelwise.resolve.reqfile import RequirementsSet

        index, extra = chosen_indexes(index_url, extra_index_url, RequirementsSet(), no_index)
        if index is None and not extra and not find_links:
            raise InputError("--no-index leaves no package source: give --find-links DIR|URL")
        options = InstallOptions(
            index_url=index,
            extra_index_urls=extra,
            index_strategy=chosen_index_strategy(index_strategy),
            find_links=list(find_links),
            pre=pre,
            exclude_newer=upload_cutoffs(exclude_newer, exclude_newer_package),
            python=Path(python) if python is not None else None,
            system=load_system(system_file) if system_file is not None else None,
            allowed_providers=allow_provider,
            enabled_providers=enable_provider,
            refresh=refresh,
            timeout=timeout,
            request_deadline=request_deadline,
            retries=retries,
            connection=connection,
            concurrent_downloads=concurrent_downloads,
            no_cache=no_cache,
            warn=warn,
        )
        _outdated(dists, editables, env, options, chosen)
        return
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
    columns = ["name", "version", "variant", "installer"]
    any_editable = any(editables)
    rows = [
        [d.name, d.version, d.variant or "-", d.installer or "-"]
        + ([editable or "-"] if any_editable else [])
        for d, editable in zip(dists, editables, strict=True)
    ]
    _table([*columns, "editable project location"] if any_editable else columns, rows)


def _outdated(
    dists: list[InstalledDist],
    editables: list[str | None],
    env: TargetEnvironment,
    options: InstallOptions,
    chosen: str,
) -> None:
    """The distributions of which a newer release is offered, as pip lists them (an
    editable one with its folder, as pip and uv give it)."""
    from wheelwise.install.options import listing_finder
    from wheelwise.resolve.outdated import newer_releases

    with listing_finder(options, env) as (finder, spec):
        found = newer_releases(dists, finder, spec, options.pre, options.concurrent_downloads)
    folders = {d.name: e for d, e in zip(dists, editables, strict=True) if e is not None}
    if chosen == "json":
        document = []
        for n in found:
            entry: dict[str, object] = {
                "name": n.name,
                "version": n.version,
                "variant": n.variant,
                # pip list --outdated --format json's keys.
                "latest_version": n.latest,
                "latest_variant": n.latest_variant,
                "latest_filetype": n.latest_type,
            }
            if n.name in folders:
                entry["editable_project_location"] = folders[n.name]
            document.append(entry)
        click.echo(json.dumps(document, indent=2))
        return
    columns = ["name", "version", "variant", "latest", "latest variant", "type"]
    any_editable = any(n.name in folders for n in found)
    rows = [
        [n.name, n.version, n.variant or "-", n.latest, n.latest_variant or "-", n.latest_type]
        + ([folders.get(n.name, "-")] if any_editable else [])
        for n in found
    ]
    _table([*columns, "editable project location"] if any_editable else columns, rows)


def _table(columns: list[str], rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table()
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
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
    _, dists, editables = _installed(python, target_dir, prefix_dir, user)
    _freeze(dists, editables)


def _installed(
    python: str | None, target_dir: Path | None, prefix_dir: Path | None, user: bool
) -> tuple[Any, list[InstalledDist], list[str | None]]:
    """The environment the options name, its distributions, and the folder of each
    editable one; a warning first when a killed run's journal is still there."""
    environment = environment_getter(python, target_dir, prefix_dir, user)
    from wheelwise.environment.installed import editable_location

    env: Any = environment()
    warn_if_interrupted(env, target_dir, prefix_dir, user, "this list")
    dists = installed_or_warned(env)
    return env, dists, [editable_location(d) for d in dists]


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
    from wheelwise.environment.satisfied import unmet_requirements

    env: Any = environment()
    problems = unmet_requirements({d.name: d for d in installed_or_warned(env)}, env.markers)
    for line in problems:
        click.echo(line)
    if problems:
        raise click.exceptions.Exit(1)
    click.echo("no broken requirements found")
