"""Run the tests that lean on the interpreter's own modules under every other Python
this machine has.

wheelwise runs on Python 3.10 and later, and some of its code leans on standard
modules whose insides change between releases: the forked unpacking on threading (a
``threading.Thread`` subclass's own ``_handle`` method was shadowed by the one Python
3.13 keeps on every thread), the wheel readers on zipfile and tarfile. ``make test``
runs the whole suite on its own interpreter; this runs those tests under each other
``python3.N`` (3.10 and later) on PATH or installed by pyenv, each in a venv of its
own holding wheelwise (editable) and the test tools from the package registry. The
venvs are kept in ``.venv/other-pythons/`` and made again only when the interpreter,
``pyproject.toml`` or the test tools change::

    python tests/other_pythons.py

It names each interpreter it runs, and says so when it finds none (the tests then ran
on one interpreter only). Exit status 1, naming the interpreter, when they fail on one.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The tests of the code that leans on threading, fork, zipfile and tarfile, and the
# installs killed at every step (their driver wraps os functions that pathlib calls):
# the modules marked ``pytestmark = ... pytest.mark.interp`` (found by their text: the
# other interpreters' venvs lack what the rest of the suite imports).
INTERP_MARK = "pytest.mark.interp"
# What those tests use besides wheelwise: conftest.py checks documents against the
# schema with jsonschema, the test servers run on uvicorn (wheelwise's "serve" extra),
# target venvs are made with uv and some get pip.
TEST_TOOLS = (
    "pytest>=8",
    "pytest-xdist>=3.6",
    "hypothesis>=6.100",
    "jsonschema>=4.20",
    "uv>=0.5",
    "pip>=24",
)
VENVS = ROOT / ".venv" / "other-pythons"
OTHER_KILL_POINTS = "4"
STAMP = "wheelwise-test-stamp"
MINORS = range(10, 16)
_WANTED = frozenset(f"3.{minor}" for minor in MINORS)
_VERSION = "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"


def other_pythons() -> Iterator[tuple[str, str]]:
    """(version, executable) of each Python 3.10+ found that runs and is not this
    interpreter's version: ``python3.N`` on PATH, then pyenv's installs."""
    seen = {f"{sys.version_info[0]}.{sys.version_info[1]}"}
    for candidate in _candidates():
        try:
            probe = subprocess.run(
                [candidate, "-c", _VERSION], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        version = probe.stdout.strip()
        if probe.returncode == 0 and version in _WANTED and version not in seen:
            seen.add(version)
            yield version, candidate


def _candidates() -> Iterator[str]:
    for minor in MINORS:
        found = shutil.which(f"python3.{minor}")
        if found is not None:
            yield found
    # pyenv's shims on PATH answer only for the selected version: its installs directly.
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    yield from sorted(str(path) for path in pyenv_root.glob("versions/*/bin/python3"))


def uv_executable() -> str:
    """This environment's uv, else the one on PATH (the test scripts' venvs are made
    and filled with it)."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        raise RuntimeError("uv is needed to make the tests' throw-away venvs")
    return uv


def interp_test_files() -> list[str]:
    """The test modules marked ``interp``, relative to the repository."""
    return sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").glob("test_*.py")
        if INTERP_MARK in path.read_text(encoding="utf-8")
    )


def _stamp(python: str) -> str:
    """What a venv was made from: made again when any of it changes."""
    digest = hashlib.sha256()
    for part in (python, os.path.realpath(python), *TEST_TOOLS):
        digest.update(part.encode() + b"\0")
    digest.update((ROOT / "pyproject.toml").read_bytes())
    return digest.hexdigest()


def venv_for(version: str, python: str) -> Path:
    """The venv of *python* with wheelwise (editable) and the test tools, made once
    and kept while its stamp holds."""
    uv = uv_executable()
    folder = VENVS / version
    stamp = _stamp(python)
    stamp_file = folder / STAMP
    if stamp_file.is_file() and stamp_file.read_text() == stamp:
        return folder / "bin" / "python"
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([uv, "venv", "--quiet", "--python", python, str(folder)], check=True)
    venv_python = folder / "bin" / "python"
    install = [uv, "pip", "install", "--quiet", "--python", str(venv_python)]
    subprocess.run([*install, "-e", f"{ROOT}[serve]", *TEST_TOOLS], check=True)
    stamp_file.write_text(stamp)
    return venv_python


def start_under(
    venv_python: Path, tests: Sequence[str], log: Path, port_block: int
) -> subprocess.Popen[bytes]:
    """Start *tests* under *venv_python*, its output to *log* (one worker: the runs
    of the other Pythons go side by side, each with its own *port_block* of
    tests/indexkit.free_port, after those of make test's workers)."""
    env = dict(os.environ)
    env["WHEELWISE_TEST_PORT_BLOCK"] = str(port_block)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    # The kill matrices kill at fewer steps here than on the main interpreter: what
    # differs between interpreters is how their driver hooks the os functions, which
    # every step goes through (KILL_MATRIX_POINTS=all still means all).
    env.setdefault("KILL_MATRIX_POINTS", OTHER_KILL_POINTS)
    command = [str(venv_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    with log.open("wb") as out:
        return subprocess.Popen(
            [*command, "-m", "interp", *tests], env=env, cwd=ROOT, stdout=out, stderr=out
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    found = list(other_pythons())
    if not found:
        print(
            "== no other Python 3.10+ on PATH: the interpreter-sensitive tests ran on "
            f"Python {sys.version_info[0]}.{sys.version_info[1]} only"
        )
        return 0
    tests = args.tests or interp_test_files()
    # The venvs first (one at a time: uv shares its cache), then every run at once.
    venvs = [(version, python, venv_for(version, python)) for version, python in found]
    runs = []
    for index, (version, python, venv_python) in enumerate(venvs):
        log = VENVS / f"{version}.log"
        runs.append((version, python, log, start_under(venv_python, tests, log, 6 + index)))
    failed = []
    for version, python, log, process in runs:
        status = process.wait()
        print(f"== the interpreter-sensitive tests on Python {version} ({python})", flush=True)
        sys.stdout.write(log.read_text(encoding="utf-8", errors="replace"))
        if status != 0:
            failed.append(version)
    if failed:
        print(
            f"FAILED: the interpreter-sensitive tests fail on Python {', '.join(failed)}",
            file=sys.stderr,
        )
        return 1
    print(f"== they pass on Python {', '.join(version for version, _ in found)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
