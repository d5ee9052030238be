"""Top-level command group."""

from __future__ import annotations

import click

from wheelwise import __version__
from wheelwise.cli.select_cmd import select
from wheelwise.cli.variant_cmd import variant


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="wheelwise")
def main() -> None:
    """Install the right build of a package for this machine (wheel variants)."""


main.add_command(select)
main.add_command(variant)
