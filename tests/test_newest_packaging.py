"""The run of the marker tests against another packaging release (tests/newest_packaging.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import packaging
import pytest

SCRIPT = Path(__file__).resolve().parent / "newest_packaging.py"


def run_script(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )


@pytest.mark.slow
def test_the_marker_tests_run_on_the_packaging_asked_for() -> None:
    done = run_script("--packaging", "26.3")
    assert done.returncode == 0, done.stdout + done.stderr
    header = done.stdout.splitlines()[0]
    assert header.startswith("== marker tests against packaging 26.3 (")
    # Its own installation in the throw-away venv, not this environment's.
    assert "/wheelwise-packaging-" in header
    assert str(Path(packaging.__file__).parent) not in header
    assert " passed" in done.stdout
    assert done.stdout.splitlines()[-1] == "== the marker tests pass on packaging 26.3"


@pytest.mark.slow
def test_a_release_that_breaks_the_markers_fails_and_is_named() -> None:
    # On packaging 25.0 some marker tests fail (the extras of a settled marker, the
    # error for a set on the left of a comparison).
    done = run_script(WHEELWISE_TEST_PACKAGING="25.0")
    assert done.returncode == 1
    assert "== marker tests against packaging 25.0 (" in done.stdout
    assert " failed" in done.stdout
    assert "FAILED: the marker tests fail on packaging 25.0 " in done.stderr
