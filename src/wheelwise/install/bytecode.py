"""Byte-compiling what an install put in place (``--compile-bytecode``).

Installs write no bytecode by default, as uv's do: the first import writes it. With
``--compile-bytecode``, once the transaction is committed, the target interpreter
itself compiles the ``.py`` files the new distributions' ``RECORD`` files list (its
version's bytecode, under its cache tag), in one child process that spreads the files
over the cores. The ``.pyc`` files are not added to ``RECORD`` (uv does not add them
either); uninstalling removes them with the module they belong to. Python writes each
one whole (a temporary file renamed), so a run stopped midway leaves some modules
compiled and the others to be compiled on import. A file that does not compile (a
Python 2 leftover in a wheel) is skipped, as pip and uv skip it; a child that fails
or takes longer than *timeout* is a warning: the install itself is done.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from wheelwise.environment.dist_files import inside_any, joined
from wheelwise.environment.installed import InstalledDist
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.install.options import InstallOptions
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.record import parse_record

__all__ = ["COMPILE_TIMEOUT", "compile_bytecode", "compile_installed", "python_files"]

# Seconds the target interpreter may take to compile an install (a CUDA stack's
# tens of thousands of modules take a minute on two cores).
COMPILE_TIMEOUT = 600.0
# Run by the target interpreter in isolated mode: NUL-separated paths on stdin.
_COMPILER = """\
import compileall, functools, os, sys
files = [f for f in sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\\0") if f]
compile_one = functools.partial(compileall.compile_file, quiet=2)
if len(files) > 200 and (os.cpu_count() or 1) > 1:
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor() as pool:
        list(pool.map(compile_one, files, chunksize=64))
else:
    for f in files:
        compile_one(f)
"""


def python_files(env: TargetEnvironment, dists: Iterable[InstalledDist]) -> list[Path]:
    """The ``.py`` files that *dists*' ``RECORD`` files list inside *env*'s site
    folders (a RECORD that cannot be read gives none: nothing to compile)."""
    found: list[Path] = []
    in_site = inside_any(env.site_dirs)
    for dist in dists:
        record = dist.location / "RECORD"
        try:
            entries = parse_record(record.read_bytes(), name=str(record))
        except (OSError, WheelError):
            continue
        base = os.path.normpath(dist.location.parent)
        for entry in entries:
            if not entry.path.endswith(".py"):
                continue
            full = joined(base, entry.path)
            if in_site(full):
                found.append(Path(full))
    return found


def compile_bytecode(
    env: TargetEnvironment, dists: Iterable[InstalledDist], *, timeout: float = COMPILE_TIMEOUT
) -> str | None:
    """Compile the modules *dists* installed, with *env*'s interpreter; what went
    wrong, as a warning, or None."""
    files = python_files(env, dists)
    if not files:
        return None
    paths = b"\0".join(os.fsencode(path) for path in files)
    try:
        result = subprocess.run(
            [str(env.python), "-I", "-c", _COMPILER],
            input=paths,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return (
            f"compiling the installed modules took longer than {timeout:g} s and was stopped; "
            "they are compiled on first import"
        )
    except OSError as exc:
        return f"cannot run {env.python} to compile the installed modules ({exc.strerror or exc})"
    if result.returncode != 0:
        lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = lines[-1] if lines else f"exit status {result.returncode}"
        return (
            f"compiling the installed modules failed ({reason}); they are compiled on first import"
        )
    return None


def compile_installed(
    env: TargetEnvironment, dists: Sequence[InstalledDist], options: InstallOptions
) -> None:
    """With ``options.compile_bytecode``, compile what *dists* installed; a problem
    goes to ``options.warn``."""
    if not options.compile_bytecode or not dists:
        return
    problem = compile_bytecode(env, dists)
    if problem is not None and options.warn is not None:
        options.warn(problem)
