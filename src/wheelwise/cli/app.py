"""Top-level command group."""

from __future__ import annotations

import click

from wheelwise import __version__
from wheelwise.cli.detect_cmd import detect
from wheelwise.cli.select_cmd import select
from wheelwise.cli.variant_cmd import variant


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="wheelwise")
def cli() -> None:
    """Install the right build of a package for this machine (wheel variants)."""


cli.add_command(detect)
cli.add_command(select)
cli.add_command(variant)
