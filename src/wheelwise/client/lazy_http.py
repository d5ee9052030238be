"""The HTTP client, made by the first request.

Loading httpx, and all it loads, is a large part of a short run's start-up, and a
run that finds every page fresh in the HTTP cache and every wheel in the wheel cache
sends no request at all. So the client, and with it httpx, is made when a request
first needs it. This is the one place that defers it: the modules that send requests
import httpx inside the functions that send them, and only for type checking at
their top.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

__all__ = ["LazyHttpClient", "as_client_source"]


class LazyHttpClient:
    """Calling it gives the client, made (once, whichever thread asks first) by
    *make*."""

    def __init__(self, make: Callable[[], httpx.Client]) -> None:
        self._make = make
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def __call__(self) -> httpx.Client:
        client = self._client
        if client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._make()
                client = self._client
        return client

    def close(self) -> None:
        """Close the client if it was made (a later call makes a new one)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()


def as_client_source(
    client: httpx.Client | Callable[[], httpx.Client],
) -> Callable[[], httpx.Client]:
    """*client*, or what makes it, as a callable that gives it."""
    if callable(client):
        return client
    return lambda: client
