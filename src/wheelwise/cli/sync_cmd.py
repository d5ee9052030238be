"""``wheelwise sync PYLOCK_TOML``, and installing a lock file (``install -r pylock.toml``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from wheelwise.cli.errors import input_errors
from wheelwise.cli.inputs import read_bytes
from wheelwise.cli.install_cmd import (
    RichProgress,
    TargetArgs,
    install_errors,
    interactive,
    show_outcome,
    target_options,
)

if TYPE_CHECKING:
    from wheelwise.install.environment import PendingEnvironment


def install_lock(path: Path, query: PendingEnvironment, target: TargetArgs, *, sync: bool) -> None:
    """Install the lock file *path* into the environment *query* is about (with
    *sync*, also remove what it does not select), and say what was done."""
    from dataclasses import replace

    from wheelwise.install.from_lock import run_lock_install
    from wheelwise.lock import read_pylock

    lock = read_pylock(read_bytes(path, "lock file"), source=str(path))
    options = target.install_options()
    if interactive(target.quiet) and not target.dry_run:
        with RichProgress() as bar:
            done = run_lock_install(lock, path, replace(options, progress=bar), query, sync=sync)
    else:
        done = run_lock_install(lock, path, options, query, sync=sync)
    show_outcome(
        done.outcome, quiet=target.quiet, report_file=target.report_file, removals=done.removals
    )


@click.command()
@click.argument("lock_file", metavar="PYLOCK_TOML", type=click.Path(path_type=Path))
@target_options
@input_errors
@install_errors
def sync(lock_file: Path, target: TargetArgs) -> None:
    """Make an environment hold exactly what a pylock.toml selects for it.

    Installs the lock as `install -r pylock.toml` does, then removes every other
    distribution, in the same transaction; pip, setuptools and wheel are kept unless
    the lock lists them."""
    with target.query() as query:
        install_lock(lock_file, query, target, sync=True)
