"""Putting a proxy together from its options, and running it under uvicorn."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from starlette.applications import Starlette

from wheelwise.cache.wheel_cache import ContentStore
from wheelwise.client.bounded import DEFAULT_DEADLINE
from wheelwise.client.connection import Connection
from wheelwise.client.index_client import IndexClient
from wheelwise.proxy.app import create_app
from wheelwise.proxy.errors import StreamCut
from wheelwise.proxy.machines import THIS_MACHINE, Machine
from wheelwise.proxy.service import SKIPPED_LINKS, Proxy
from wheelwise.proxy.store import BuildStore
from wheelwise.variants.supported import SupportedProperties

__all__ = ["DEFAULT_STORE_BYTES", "ProxyOptions", "build_app", "build_proxy", "serve"]

DEFAULT_STORE_BYTES = 20 << 30


@dataclass(frozen=True)
class ProxyOptions:
    upstreams: Sequence[str]
    cache_dir: Path
    # --system FILE: (what it says, its path); None: this machine's providers.
    system: tuple[SupportedProperties, str] | None = None
    # --profile NAME=FILE, served under /p/NAME/.
    profiles: Mapping[str, tuple[SupportedProperties, str]] = field(default_factory=dict)
    store_bytes: int = DEFAULT_STORE_BYTES
    timeout: float = 15.0
    # Seconds for one whole upstream request (a wheel gets more as bytes arrive): an
    # upstream that drips a byte now and then never trips the timeout.
    deadline: float = DEFAULT_DEADLINE
    # The certificates, unchecked hosts and proxy for reaching the upstreams.
    connection: Connection = field(default_factory=Connection)


def build_app(options: ProxyOptions) -> Starlette:
    """The proxy's ASGI application (its client is closed when the process ends)."""
    return create_app(build_proxy(options))


def build_proxy(options: ProxyOptions) -> Proxy:
    """The proxy *options* describe; whoever ends it before the process does closes
    its ``client``."""
    machines: dict[str | None, Machine] = {}
    if options.system is None:
        machines[None] = Machine(THIS_MACHINE)
    else:
        supported, path = options.system
        machines[None] = Machine(f"the machine in {path}", supported, path)
    for name, (supported, path) in options.profiles.items():
        machines[name] = Machine(f"profile {name} ({path})", supported, path)
    root = options.cache_dir / "proxy"
    client = IndexClient(
        cache_dir=root / "http",
        timeout=options.timeout,
        deadline=options.deadline,
        # PEP 658 files by the hash their page gives: passed through without asking again.
        metadata_cache=ContentStore(root / "metadata"),
        warn=SKIPPED_LINKS.note,
        connection=options.connection,
    )
    store = BuildStore(root / "store", max_bytes=options.store_bytes)
    return Proxy(options.upstreams, machines, store, client, root / "scratch")


class _CutsInOneLine(logging.Filter):
    """A response cut on purpose (:class:`StreamCut`) is logged as its reason, one
    line, not as a traceback of a failed application."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, StreamCut):
            record.msg, record.args, record.exc_info = "%s", (str(error),), None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def serve(options: ProxyOptions, *, host: str, port: int) -> None:
    """Run the proxy until interrupted (uvicorn logs its start-up lines to stderr)."""
    import uvicorn

    logging.getLogger("uvicorn.error").addFilter(_CutsInOneLine())
    uvicorn.run(
        build_app(options),
        host=host,
        port=port,
        access_log=False,
        lifespan="off",
        server_header=False,
    )
