"""``wheelwise sync PYLOCK_TOML``: ``install -r pylock.toml`` that also removes what the
lock does not select."""

from __future__ import annotations

from pathlib import Path

import click

from wheelwise.cli.errors import input_errors
from wheelwise.cli.install_cmd import TargetArgs, install_errors, install_lock, target_options
from wheelwise.cli.lock_install import LockSelection
from wheelwise.cli.options import selection_options


@click.command()
@click.argument("lock_file", metavar="PYLOCK_TOML", type=click.Path(path_type=Path))
@selection_options
@target_options
@input_errors
@install_errors
def sync(
    lock_file: Path,
    extras: tuple[str, ...],
    all_extras: bool,
    groups: tuple[str, ...],
    target: TargetArgs,
) -> None:
    """Make an environment hold exactly what a pylock.toml selects for it.

    Installs the lock as `install -r pylock.toml` does, then removes every other
    distribution, in the same transaction; pip, setuptools and wheel are kept unless
    the lock lists them."""
    with target.query() as query:
        selected = LockSelection(extras, all_extras, groups)
        install_lock(lock_file, query, target, sync=True, selected=selected)
