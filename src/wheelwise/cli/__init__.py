"""The ``wheelwise`` command line. Only this package prints or exits.

``wheelwise detect --json`` is served without importing click (see fast_detect);
every other invocation goes to the click app.
"""

from __future__ import annotations

import sys


def main() -> None:
    from wheelwise.cli import fast_detect

    if fast_detect.handles(sys.argv[1:]):
        fast_detect.run(sys.argv[1:])
        return
    # On import, httpx loads its own command line (click, rich and pygments) whenever
    # those are installed; this process never runs it, and skipping it saves ~40 ms.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    from wheelwise.cli.app import cli

    cli()


__all__ = ["main"]
