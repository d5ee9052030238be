"""``wheelwise tree``: the dependency tree of an environment, as ``uv pip tree`` draws
it, with the variant label of each variant build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from wheelwise.cli.errors import input_errors, warn
from wheelwise.cli.install_cmd import install_errors
from wheelwise.cli.locations import (
    environment_getter,
    installed_or_warned,
    location_options,
    python_option,
)


@click.command()
@click.option(
    "-d",
    "--depth",
    type=click.IntRange(min=0, max=255),
    default=255,
    show_default=True,
    help="How many levels of dependencies to draw.",
)
@click.option(
    "--prune",
    multiple=True,
    metavar="NAME",
    help="Leave NAME out of the tree (repeatable); what it requires is drawn where "
    "something else leads to it.",
)
@click.option(
    "--package",
    "packages",
    multiple=True,
    metavar="NAME",
    help="Draw the tree of NAME only (repeatable).",
)
@click.option(
    "--no-dedupe",
    is_flag=True,
    help="Draw the dependencies of a distribution each time it appears (default: once, "
    "later appearances marked (*)).",
)
@click.option(
    "--invert",
    is_flag=True,
    help="Draw what requires each distribution, from those that require nothing (with "
    "--package: what requires NAME).",
)
@click.option(
    "--show-version-specifiers",
    is_flag=True,
    help="Show the range each requirement asks for.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Warn of each requirement no installed distribution meets.",
)
@python_option("Show the tree of")
@location_options("Show the tree of")
@input_errors
@install_errors
def tree(
    depth: int,
    prune: tuple[str, ...],
    packages: tuple[str, ...],
    no_dedupe: bool,
    invert: bool,
    show_version_specifiers: bool,
    strict: bool,
    python: str | None,
    target_dir: Path | None,
    prefix_dir: Path | None,
    user: bool,
) -> None:
    """Show the dependency tree of the environment, as uv pip tree draws it: the
    distributions nothing requires, and under each what it requires (installed, in
    the range asked for), with each variant build's label."""
    from packaging.utils import canonicalize_name

    from wheelwise.environment.dependency_tree import TreeOptions, dependency_graph, draw_tree

    env: Any = environment_getter(python, target_dir, prefix_dir, user)()
    graph = dependency_graph(installed_or_warned(env), env.markers)
    options = TreeOptions(
        depth=depth,
        prune=frozenset(canonicalize_name(name) for name in prune),
        packages=tuple(canonicalize_name(name) for name in packages),
        dedupe=not no_dedupe,
        invert=invert,
        show_specifiers=show_version_specifiers,
    )
    for line in draw_tree(graph, options):
        click.echo(line)
    if strict:
        for problem in graph.problems:
            warn(problem)
