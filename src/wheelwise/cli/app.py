"""Top-level command group; each command's module is imported only when it runs."""

from __future__ import annotations

import importlib

import click

from wheelwise import __version__

# command name -> "module:attribute" (kept lazy: start-up time is a feature).
COMMANDS = {
    "build": "wheelwise.cli.build_cmd:build",
    "cache": "wheelwise.cli.cache_cmd:cache",
    "check": "wheelwise.cli.list_cmd:check",
    "detect": "wheelwise.cli.detect_cmd:detect",
    "doctor": "wheelwise.cli.doctor_cmd:doctor",
    "download": "wheelwise.cli.download_cmd:download",
    "freeze": "wheelwise.cli.list_cmd:freeze",
    "index": "wheelwise.cli.index_cmd:index",
    "install": "wheelwise.cli.install_cmd:install",
    "list": "wheelwise.cli.list_cmd:list_cmd",
    "lock": "wheelwise.cli.lock_cmd:lock",
    "proxy": "wheelwise.cli.proxy_cmd:proxy",
    "recover": "wheelwise.cli.uninstall_cmd:recover",
    "select": "wheelwise.cli.select_cmd:select",
    "show": "wheelwise.cli.show_cmd:show",
    "sync": "wheelwise.cli.sync_cmd:sync",
    "tree": "wheelwise.cli.tree_cmd:tree",
    "uninstall": "wheelwise.cli.uninstall_cmd:uninstall",
    "variant": "wheelwise.cli.variant_cmd:variant",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attribute = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="wheelwise")
def cli() -> None:
    """Install the right build of a package for this machine (wheel variants)."""
