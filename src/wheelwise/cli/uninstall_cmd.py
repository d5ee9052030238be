"""``wheelwise uninstall`` and ``recover``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from wheelwise.cli.errors import InputError, input_errors, warn
from wheelwise.cli.install_cmd import install_errors
from wheelwise.cli.locations import environment_getter, location_options, python_option


def _named_in(requirement_files: Sequence[Path]) -> list[str]:
    """The project names the requirements in *requirement_files* name (their
    versions, markers and hashes do not matter to an uninstall, as in pip)."""
    from packaging.requirements import InvalidRequirement, Requirement

    from wheelwise.cli.inputs import read_requirement_files
    from wheelwise.resolve.direct import parse_direct
    from wheelwise.resolve.variant_requirement import split_variant_label

    files = read_requirement_files(requirement_files, ())
    for editable in files.editables:
        warn(f"-e {editable}: not uninstalled from a requirements file; give its project name")
    found: list[str] = []
    for text in files.requirements:
        reference = parse_direct(text)
        if reference is not None:
            if reference.name is None:
                raise InputError(f"{text!r}: name the project to uninstall (NAME @ URL)")
            found.append(reference.name)
            continue
        try:
            found.append(Requirement(split_variant_label(text).requirement).name)
        except InvalidRequirement as exc:
            raise InputError(f"{text!r}: not a requirement ({exc})") from None
    return found


@click.command()
@click.argument("names", nargs=-1)
@python_option("Uninstall")
@location_options("Uninstall")
@click.option(
    "-r",
    "--requirement",
    "requirement_files",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Uninstall the projects a requirements file names (repeatable), as pip's -r; "
    "-r - reads it from standard input (then give --yes or --dry-run).",
)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Print nothing on success, as pip and uv do (the question without --yes, "
    "errors and warnings still show).",
)
@click.option(
    "--break-system-packages",
    is_flag=True,
    help="Uninstall from an externally managed environment (PEP 668) anyway.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Say what would be uninstalled, and remove nothing (uv's --dry-run).",
)
@input_errors
@install_errors
def uninstall(
    names: tuple[str, ...],
    python: str | None,
    target_dir: Path | None,
    prefix_dir: Path | None,
    user: bool,
    requirement_files: tuple[Path, ...],
    yes: bool,
    quiet: bool,
    break_system_packages: bool,
    dry_run: bool,
) -> None:
    """Uninstall distributions NAME... (all or nothing; a NAME that is not installed
    is skipped with a warning, as in pip and uv)."""
    environment = environment_getter(python, target_dir, prefix_dir, user)
    from packaging.utils import canonicalize_name

    from wheelwise.install.transaction import uninstall as remove

    if requirement_files:
        from wheelwise.cli.inputs import is_stdin

        if not (yes or dry_run) and any(map(is_stdin, requirement_files)):
            raise InputError(
                "-r - takes the names from standard input, which then cannot answer "
                "the confirmation: give --yes (or --dry-run)"
            )
        names = (*names, *_named_in(requirement_files))
    if not names:
        raise InputError("nothing to uninstall: give NAME... or -r FILE")

    env = environment()
    if dry_run:
        _would_remove(env, names, break_system_packages)
        return
    if not yes and not click.confirm(f"uninstall {', '.join(names)} from {env.prefix}?"):
        raise InputError("nothing uninstalled")
    removed = remove(
        env, list(names), break_system_packages=break_system_packages, missing_ok=True, warn=warn
    )
    for name in dict.fromkeys(names):
        if canonicalize_name(name) not in removed:
            warn(f"skipped {name}: it is not installed in {env.prefix}")
    for name in removed:
        if not quiet:
            click.echo(f"uninstalled {name}")


@click.command()
@python_option("Recover")
@location_options("Recover")
@input_errors
@install_errors
def recover(
    python: str | None, target_dir: Path | None, prefix_dir: Path | None, user: bool
) -> None:
    """Undo (or finish) an install or uninstall that was killed midway.

    Every install and uninstall does this first; this command does only that."""
    environment = environment_getter(python, target_dir, prefix_dir, user)
    from wheelwise.install.transaction import recover as replay_journal

    env = environment()
    found = replay_journal(env)
    for recovered in found:
        click.echo(recovered.describe())
    if not found:
        click.echo(f"nothing to recover in {env.purelib}")


def _would_remove(env: Any, names: Sequence[str], break_system_packages: bool) -> None:
    """What ``uninstall NAME...`` would remove from *env*, after the checks the real
    run makes (so that it fails as that would): a line each, and a warning for each
    name that is not installed."""
    from packaging.utils import canonicalize_name

    from wheelwise.install.transaction import would_uninstall

    found = would_uninstall(env, names, break_system_packages=break_system_packages)
    by_name = {dist.name: dist for dist in found}
    for name in dict.fromkeys(names):
        dist = by_name.get(canonicalize_name(name))
        if dist is None:
            warn(f"skipped {name}: it is not installed in {env.prefix}")
        else:
            click.echo(f"would uninstall {dist.name} {dist.version}")
