"""Options shared by the commands that look at the machine."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

_F = TypeVar("_F", bound=Callable[..., object])


def provider_options(func: _F) -> _F:
    """``--allow-provider``, ``--enable-provider`` and ``--refresh``."""
    func = click.option(
        "--refresh", is_flag=True, help="Detect the machine again instead of using the cache."
    )(func)
    func = click.option(
        "--enable-provider",
        multiple=True,
        metavar="NS",
        help="Turn on a provider the metadata marks optional (repeatable).",
    )(func)
    return click.option(
        "--allow-provider",
        multiple=True,
        metavar="NS",
        help="Trust the third-party provider plugin of namespace NS (repeatable).",
    )(func)
