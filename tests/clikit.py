"""Running the wheelwise command line from the tests: in this process through click's
test runner (:func:`invoke`), or in a child process as ``python -m wheelwise``, the
real entry point with its fast ``detect`` path (:func:`run_wheelwise`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from click.testing import CliRunner, Result

from wheelwise.cli.app import cli


def invoke(*args: str | Path) -> Result:
    """``wheelwise ARGS`` in this process."""
    return CliRunner().invoke(cli, [str(a) for a in args])


def run_wheelwise(
    args: Sequence[str | Path],
    env: Mapping[str, str] | None = None,
    *,
    cwd: Path | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m wheelwise ARGS`` with *env* as its whole environment (default: this
    process's), its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "wheelwise", *map(str, args)],
        capture_output=True,
        text=True,
        env=None if env is None else dict(env),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
