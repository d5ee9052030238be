"""Running a script of bench/ as its smoke tests do: with this source tree first on
PYTHONPATH, and its ``--json`` report read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_bench(script: str, *args: str, timeout: float) -> dict[str, Any]:
    """The JSON report of ``bench/SCRIPT ARGS --json``; fails the test when the script
    fails (each script checks its own installs and exits non-zero on a wrong one)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, f"bench/{script}", *args, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report: dict[str, Any] = json.loads(result.stdout)
    return report
