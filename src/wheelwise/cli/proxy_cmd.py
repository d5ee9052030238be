"""``wheelwise proxy``: a Simple API proxy that plain pip, uv and poetry install through."""

from __future__ import annotations

import re
from pathlib import Path

import click

from wheelwise.cli.errors import InputError, input_errors
from wheelwise.cli.inputs import load_system
from wheelwise.cli.options import (
    SECONDS,
    connection_options,
    parse_size,
    request_deadline_option,
)
from wheelwise.client.connection import Connection
from wheelwise.variants.supported import SupportedProperties

_PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def _profile(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not _PROFILE_NAME.fullmatch(name) or not path:
        raise InputError(
            f"--profile {text!r}: give NAME=FILE, NAME in lowercase letters, digits, '.', "
            "'_' and '-' (it is the URL path /p/NAME/simple/)"
        )
    return name, Path(path)


@click.command()
@click.option(
    "--upstream",
    "upstreams",
    multiple=True,
    required=True,
    metavar="URL",
    help="A simple index to serve (repeat: for each release, the first that lists it wins).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--system",
    "system_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Choose builds for the machine this file describes (wheelwise detect --json), "
    "not for this one.",
)
@click.option(
    "--profile",
    "profiles",
    multiple=True,
    metavar="NAME=FILE",
    help="Also serve the machine FILE describes at /p/NAME/simple/ (repeat for a fleet).",
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where pages and built wheels are kept (default: the user cache folder).",
)
@click.option(
    "--max-cache-size",
    default="20G",
    show_default=True,
    help="Bound on the wheels kept; the least recently used go first.",
)
@click.option(
    "--timeout",
    default=15.0,
    show_default=True,
    type=SECONDS,
    help="Network timeout: seconds to connect to an upstream, and between bytes read.",
)
@request_deadline_option(
    "Seconds one upstream request may take in all (a wheel also gets 1 s per 16 KiB "
    "received) [env: WHEELWISE_REQUEST_DEADLINE]."
)
@connection_options
@input_errors
def proxy(
    upstreams: tuple[str, ...],
    host: str,
    port: int,
    system_file: Path | None,
    profiles: tuple[str, ...],
    cache_dir: Path | None,
    max_cache_size: str,
    timeout: float,
    request_deadline: float,
    connection: Connection,
) -> None:
    """Serve the upstream indexes so that plain pip, uv and poetry install the best
    build for the machine: each release's best variant as a plain wheel."""
    try:
        from wheelwise.proxy.run import ProxyOptions, serve
    except ImportError as exc:
        raise InputError(
            f"the proxy needs the 'serve' extra ({exc.name} is missing): "
            "pip install 'wheelwise[serve]'"
        ) from None
    from wheelwise.cachedir import user_cache_dir

    for url in upstreams:
        if not re.match(r"(?i)(https?|file)://", url):
            raise InputError(f"--upstream {url!r}: give the http(s):// URL of a simple index")
    named: dict[str, tuple[SupportedProperties, str]] = {}
    for text in profiles:
        name, path = _profile(text)
        if name in named:
            raise InputError(f"--profile {name!r} is given twice")
        named[name] = (load_system(path), str(path))
    options = ProxyOptions(
        upstreams=upstreams,
        cache_dir=cache_dir if cache_dir is not None else Path(user_cache_dir()),
        system=(load_system(system_file), str(system_file)) if system_file else None,
        profiles=named,
        store_bytes=parse_size(max_cache_size),
        timeout=timeout,
        deadline=request_deadline,
        connection=connection,
    )
    serve(options, host=host, port=port)
