"""Running a project's PEP 517 build backend: a wheel (or an editable wheel) from a
source tree.

The backend runs in a subprocess (``pyproject_hooks``), in an isolated build
environment by default: a new virtual environment of the target interpreter whose
build requirements are installed by the caller's installer (an
:data:`InstallHook`: wheelwise's own, for source builds), or of this interpreter
with pip (``wheelwise build``). Without isolation, the backend runs in the target
environment. Whatever fails is one :class:`BuildError` naming the source, the
backend and the hook, with the last lines the backend printed.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from wheelwise.untrusted_json import loads_toml
from wheelwise.wheels.errors import BuildError

if TYPE_CHECKING:
    from build.env import DefaultIsolatedEnv

__all__ = ["InstallHook", "OutputCallback", "build_plain_wheel"]

# Lines of backend output kept for error messages, and how many of them the
# one-line error quotes.
KEPT_OUTPUT_LINES = 200
QUOTED_OUTPUT_LINES = 4
_MAX_QUOTE_CHARS = 600

OutputCallback = Callable[[str], None]


class _CapturingRunner:
    """A pyproject-hooks subprocess runner that keeps the tail of the backend's output.

    stdout and stderr are merged; each line also goes to *output* when given
    (``wheelwise build -v``), and nothing reaches this process's own streams.
    """

    def __init__(self, output: OutputCallback | None) -> None:
        self._output = output
        self.lines: collections.deque[str] = collections.deque(maxlen=KEPT_OUTPUT_LINES)

    def __call__(
        self,
        cmd: Sequence[str],
        cwd: str | None = None,
        extra_environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ.copy()
        if extra_environ:
            env.update(extra_environ)
        with subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        ) as process:
            assert process.stdout is not None
            for raw in process.stdout:
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                self.lines.append(line)
                if self._output is not None:
                    self._output(line)
            returncode = process.wait()
        if returncode:
            raise subprocess.CalledProcessError(returncode, list(cmd), output="\n".join(self.lines))

    def note(self, line: str) -> None:
        """Keep *line* with the backend's output (and pass it on, as its lines are)."""
        self.lines.append(line)
        if self._output is not None:
            self._output(line)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _quote_tail(text: str, count: int = QUOTED_OUTPUT_LINES) -> str:
    """The last *count* non-blank lines of *text*, as one line."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    tail = " | ".join([line for line in lines if line][-count:])
    if len(tail) > _MAX_QUOTE_CHARS:
        tail = "..." + tail[-_MAX_QUOTE_CHARS:]
    return tail


def _failure(message: str, output: str, *, lines: int = QUOTED_OUTPUT_LINES) -> BuildError:
    tail = _quote_tail(output, lines)
    if tail:
        message = f"{message}; output ended with: {tail}"
    return BuildError(message, output=output)


# Installs requirements into the environment of the given interpreter (the
# isolated build environment): wheelwise's own installer, for source builds.
InstallHook = Callable[[str, Sequence[str]], None]


def _venv_parent(scratch: Path | None) -> Path | None:
    """Where a build environment is made: in *scratch*, unless its path holds the
    PATH separator, where ``venv`` refuses to make one (a cache folder named with a
    colon): then in the system's temporary folder."""
    if scratch is not None and os.pathsep in str(scratch.absolute()):
        return None
    return scratch


class _VenvEnv:
    """A new virtual environment of the target interpreter *base*, without pip: what
    ``build``'s ``IsolatedEnv`` protocol asks of an isolated environment, its
    requirements installed by an :data:`InstallHook`."""

    def __init__(self, base: str, folder: Path) -> None:
        self.folder = folder
        try:
            subprocess.run(
                [base, "-m", "venv", "--without-pip", str(folder)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                check=True,
                timeout=120,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            output = getattr(exc, "output", b"") or b""
            raise _failure(
                f"cannot make the isolated build environment with {base} -m venv",
                output.decode("utf-8", errors="replace"),
            ) from None
        scripts = "Scripts" if os.name == "nt" else "bin"
        executable = "python.exe" if os.name == "nt" else "python"
        self.scripts = folder / scripts
        self.python_executable = str(self.scripts / executable)

    def make_extra_environ(self) -> dict[str, str]:
        path = os.environ.get("PATH")
        return {"PATH": os.pathsep.join([str(self.scripts), path]) if path else str(self.scripts)}


def build_plain_wheel(
    source_dir: Path,
    wheel_dir: Path,
    *,
    isolation: bool = True,
    output: OutputCallback | None = None,
    python: str | None = None,
    install: InstallHook | None = None,
    editable: bool = False,
    name: str | None = None,
    scratch: Path | None = None,
    config_settings: Mapping[str, str | list[str]] | None = None,
) -> Path:
    """Build an ordinary wheel of *source_dir* into *wheel_dir* with its PEP 517 backend
    (an editable one, PEP 660, with *editable*), given *config_settings* (pip's and
    uv's ``-C KEY=VALUE``).

    With *isolation*, the build requirements go into a fresh virtual environment:
    of *python* and installed by *install* when given (wheelwise's installer), else
    of this interpreter and installed by pip. Without it, the backend runs in
    *python*'s environment (default: this one), which must already have them (no
    network needed). *name* is how messages call the source (default: its folder).
    *scratch*: where the isolated environment is made (default: the temporary
    folder), so that a killed run's leftovers are where its next run clears them.
    """
    try:
        import build
        import build.env
        import pyproject_hooks
    except ImportError:  # pragma: no cover - a dependency of wheelwise
        raise BuildError("building needs the 'build' package: pip install build") from None

    where = name or str(source_dir)
    runner = _CapturingRunner(output)
    backend = _backend_name(source_dir)
    distribution: Literal["wheel", "editable"] = "editable" if editable else "wheel"
    hook = f"get_requires_for_build_{distribution}"
    # The hooks' warnings come back to this process (pyproject_hooks re-raises them
    # here): kept with the backend's output, never printed by the library.
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always", pyproject_hooks.BuildBackendWarning)
        try:
            if isolation and install is not None:
                with tempfile.TemporaryDirectory(
                    prefix="build-env-", dir=_venv_parent(scratch)
                ) as folder:
                    venv = _VenvEnv(python or sys.executable, Path(folder))
                    builder = build.ProjectBuilder.from_isolated_env(
                        venv, source_dir, runner=runner
                    )
                    _install_with(install, venv.python_executable, builder.build_system_requires)
                    _install_with(
                        install,
                        venv.python_executable,
                        builder.get_requires_for_build(distribution, config_settings),
                    )
                    hook = f"build_{distribution}"
                    built = builder.build(distribution, wheel_dir, config_settings)
            elif isolation:
                with build.env.DefaultIsolatedEnv() as env:
                    builder = build.ProjectBuilder.from_isolated_env(env, source_dir, runner=runner)
                    _install(env, builder.build_system_requires)
                    _install(env, builder.get_requires_for_build(distribution, config_settings))
                    hook = f"build_{distribution}"
                    built = builder.build(distribution, wheel_dir, config_settings)
            else:
                builder = build.ProjectBuilder(
                    source_dir, python_executable=python or sys.executable, runner=runner
                )
                if python is None:  # the check reads this interpreter's distributions
                    missing = sorted(
                        " -> ".join(chain)
                        for chain in builder.check_dependencies(distribution, config_settings)
                    )
                    if missing:
                        raise BuildError(
                            f"{where}: build requirements missing from this environment "
                            f"(building without isolation): {', '.join(missing)}; install them, "
                            "or build in an isolated environment"
                        )
                hook = f"build_{distribution}"
                built = builder.build(distribution, wheel_dir, config_settings)
        except build.BuildBackendException as exc:
            cause = exc.exception
            if isinstance(cause, pyproject_hooks.BackendUnavailable):
                raise _failure(
                    f"{where}: build backend {backend!r} is not available (a typo in "
                    "build-system.build-backend, or its package missing from "
                    "build-system.requires?)",
                    cause.traceback or runner.text,
                    lines=1,
                ) from None
            if isinstance(cause, pyproject_hooks.HookMissing) and editable:
                raise BuildError(
                    f"{where}: build backend {backend!r} cannot build editable installs (no "
                    "PEP 660 build_editable hook); install it without -e, or upgrade its "
                    "build backend"
                ) from None
            what = "" if isinstance(cause, subprocess.CalledProcessError) else f": {cause!r}"
            raise _failure(
                f"{where}: build backend {backend!r} failed in {hook}{what}", runner.text
            ) from None
        except build.BuildException as exc:
            raise BuildError(f"{where}: {exc}") from None
        except build.FailedProcessError as exc:
            raise _failure(f"{where}: {exc}", _process_output(exc.exception)) from None
        finally:
            for warning in heard:
                runner.note(f"warning: {warning.message}")
    return Path(built)


def _install_with(install: InstallHook, python: str, requirements: set[str]) -> None:
    if requirements:
        install(python, sorted(requirements))


def _backend_name(source_dir: Path) -> str:
    """``build-system.build-backend`` for messages (PEP 517's default when unset)."""
    try:
        data = loads_toml((source_dir / "pyproject.toml").read_text(encoding="utf-8"))
        name = data["build-system"]["build-backend"]
    except (OSError, ValueError, KeyError, TypeError):
        return "setuptools.build_meta:__legacy__"
    return name if isinstance(name, str) else "?"


def _process_output(exc: subprocess.CalledProcessError) -> str:
    parts = []
    for stream in (exc.stdout, exc.stderr):
        if isinstance(stream, bytes):
            stream = stream.decode("utf-8", errors="replace")
        if stream:
            parts.append(stream)
    return "\n".join(parts)


def _install(env: DefaultIsolatedEnv, requirements: set[str]) -> None:
    """Install *requirements* into the isolated environment *env* (pip, user config)."""
    try:
        env.install(requirements)
    except subprocess.CalledProcessError as exc:
        raise _failure(
            f"could not install the build requirements ({', '.join(sorted(requirements))}) "
            "into the isolated build environment (offline? configure pip with a local "
            "wheelhouse, or install them here and build without isolation)",
            _process_output(exc),
        ) from None
