"""``wheelwise sync PYLOCK_TOML``, and installing a lock file (``install -r pylock.toml``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from wheelwise.cli.errors import input_errors
from wheelwise.cli.inputs import read_bytes
from wheelwise.cli.install_cmd import (
    RichProgress,
    install_errors,
    interactive,
    show_outcome,
    target_install_options,
    target_options,
)

if TYPE_CHECKING:
    from wheelwise.install.environment import PendingEnvironment
    from wheelwise.install.plan import InstallOptions


def install_lock(
    path: Path,
    query: PendingEnvironment,
    options: InstallOptions,
    *,
    sync: bool,
    quiet: bool,
    report_file: Path | None,
) -> None:
    """Install the lock file *path* into the environment *query* is about (with
    *sync*, also remove what it does not select), and say what was done."""
    from dataclasses import replace

    from wheelwise.install.from_lock import run_lock_install
    from wheelwise.lock import read_pylock

    lock = read_pylock(read_bytes(path, "lock file"), source=str(path))
    if interactive(quiet) and not options.dry_run:
        with RichProgress() as bar:
            done = run_lock_install(lock, path, replace(options, progress=bar), query, sync=sync)
    else:
        done = run_lock_install(lock, path, options, query, sync=sync)
    show_outcome(done.outcome, quiet=quiet, report_file=report_file, removals=done.removals)


@click.command()
@click.argument("lock_file", metavar="PYLOCK_TOML", type=click.Path(path_type=Path))
@target_options
@input_errors
@install_errors
def sync(
    lock_file: Path,
    python: str | None,
    no_variant: bool,
    variants: tuple[str, ...],
    system_file: Path | None,
    dry_run: bool,
    report_file: Path | None,
    require_hashes: bool,
    break_system_packages: bool,
    timeout: float,
    request_deadline: float,
    retries: int,
    no_cache: bool,
    quiet: bool,
    allow_provider: tuple[str, ...],
    enable_provider: tuple[str, ...],
    refresh: bool,
) -> None:
    """Make an environment hold exactly what a pylock.toml selects for it.

    Installs the lock as `install -r pylock.toml` does, then removes every other
    distribution, in the same transaction; pip, setuptools and wheel are kept unless
    the lock lists them."""
    from wheelwise.install.environment import TargetEnvironment

    with TargetEnvironment.start_query(python if python is not None else sys.executable) as query:
        options = target_install_options(
            python=python,
            no_variant=no_variant,
            variants=variants,
            system_file=system_file,
            dry_run=dry_run,
            require_hashes=require_hashes,
            break_system_packages=break_system_packages,
            timeout=timeout,
            request_deadline=request_deadline,
            retries=retries,
            no_cache=no_cache,
            allow_provider=allow_provider,
            enable_provider=enable_provider,
            refresh=refresh,
        )
        install_lock(lock_file, query, options, sync=True, quiet=quiet, report_file=report_file)
