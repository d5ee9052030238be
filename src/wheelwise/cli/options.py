"""Options shared by the commands that look at the machine."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

_F = TypeVar("_F", bound=Callable[..., object])


def _check_trust(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[str, ...]:
    """Each ``--allow-provider`` value must parse: a malformed one is one error line."""
    from wheelwise.cli.errors import InputError
    from wheelwise.providers.plugin_trust import PluginTrustError, parse_trust

    for value in values:
        try:
            parse_trust(value)
        except PluginTrustError as exc:
            raise InputError(str(exc)) from None
    return values


REFRESH_HELP = "Detect the machine again instead of using the cache."


def provider_options(func: _F, *, refresh_help: str = REFRESH_HELP) -> _F:
    """``--allow-provider``, ``--enable-provider`` and ``--refresh`` (*refresh_help*:
    for a command whose ``--refresh`` does more)."""
    func = click.option("--refresh", is_flag=True, help=refresh_help)(func)
    func = click.option(
        "--enable-provider",
        multiple=True,
        metavar="NS",
        help="Turn on a provider the metadata marks optional (repeatable).",
    )(func)
    return click.option(
        "--allow-provider",
        multiple=True,
        metavar="NS=REQUIREMENT",
        callback=_check_trust,
        help="Trust the third-party plugin REQUIREMENT (as the metadata writes it) to "
        "answer namespace NS; NS:OBJECT=REQUIREMENT also trusts a plugin-api OBJECT "
        "other than the default; a trailing ' --hash=sha256:HEX' pins the plugin's file "
        "(repeatable). Metadata that maps NS to another plugin "
        "stops the command. Trusted for good: [providers] allow = [...] in "
        "~/.config/wheelwise/config.toml ($WHEELWISE_CONFIG).",
    )(func)
