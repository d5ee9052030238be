"""The warm path of ``wheelwise detect --json``: print the cached document if the
machine's fingerprint is unchanged. Imports only ``os``/``sys``-level modules."""

from __future__ import annotations

import sys

from wheelwise import __version__
from wheelwise.providers import cache
from wheelwise.providers.fingerprint import machine_fingerprint


def print_cached_detection() -> bool:
    """Print the cached detection and return True, or return False on a miss."""
    text = cache.load(machine_fingerprint(__version__))
    if text is None:
        return False
    sys.stdout.write(text)
    return True
