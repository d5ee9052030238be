"""The ``wheelwise`` command line. Only this package prints or exits.

``main`` answers ``wheelwise detect --json`` from the warm cache before importing
click or anything else heavy; every other invocation goes to the click app.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["detect", "--json"]:
        from wheelwise.cli.fast_detect import print_cached_detection

        if print_cached_detection():
            return
    from wheelwise.cli.app import cli

    cli()


__all__ = ["main"]
