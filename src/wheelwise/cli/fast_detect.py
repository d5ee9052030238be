"""``wheelwise detect --json [--refresh]`` without click or rich.

This document is what other tools call wheelwise for, often once per build step,
so its path imports only what detection needs: on a warm cache, nothing but the
fingerprint and the cache file.
"""

from __future__ import annotations

import sys

from wheelwise import __version__
from wheelwise.providers import cache
from wheelwise.providers.fingerprint import machine_fingerprint

ARGUMENT_SETS = ({"--json"}, {"--json", "--refresh"})


def handles(argv: list[str]) -> bool:
    """Whether *argv* (without the program name) is a plain ``detect --json``."""
    return (
        len(argv) >= 2
        and argv[0] == "detect"
        and len(set(argv[1:])) == len(argv) - 1
        and set(argv[1:]) in ARGUMENT_SETS
    )


def run(argv: list[str]) -> None:
    if "--refresh" not in argv:
        text = cache.load(machine_fingerprint(__version__))
        if text is not None:
            sys.stdout.write(text)
            return
    from wheelwise.providers.detect import detect_cached

    _, text = detect_cached(refresh=True)
    sys.stdout.write(text)
