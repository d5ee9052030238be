"""Build a variant wheel from a source tree (``wheelwise build``).

The project's own PEP 517 backend (setuptools, hatchling, flit-core, ...) builds
an ordinary wheel, by default in an isolated environment into which pip installs
``build-system.requires`` (pip reads the user's own configuration: index, proxy,
``PIP_FIND_LINKS``/``PIP_NO_INDEX`` for offline wheelhouses). The wheel is then
turned into a variant wheel by :func:`wheelwise.wheels.make.make_variant`, with
the namespace priorities of the project's ``[variant]`` table (PEP 817; its
legacy provider data is read and checked, but PEP 825's variant.json has no
place for it).

The plain wheel is built in a temporary directory; only the finished variant
wheel is written (atomically) into the output directory. Bad variant data is
refused before the backend runs.
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from wheelwise.untrusted_json import UntrustedDocumentError, loads_toml
from wheelwise.variants.errors import InvalidMetadata
from wheelwise.variants.labels import NULL_LABEL
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.errors import BuildError
from wheelwise.wheels.make import choose_label, make_variant, variant_metadata
from wheelwise.wheels.validate import validate_properties

if TYPE_CHECKING:
    from build.env import DefaultIsolatedEnv

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


def load_project_variant(source_dir: Path) -> VariantMetadata | None:
    """The ``[variant]`` data of *source_dir*'s pyproject.toml (None without the table)."""
    if not source_dir.is_dir():
        raise BuildError(f"{source_dir}: no such directory")
    pyproject = source_dir / "pyproject.toml"
    if not pyproject.is_file():
        raise BuildError(
            f"{source_dir}: no pyproject.toml; a variant build needs a project with a "
            "pyproject.toml (its [build-system] and [variant] tables)"
        )
    source = str(pyproject)
    try:
        data = loads_toml(pyproject.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InvalidMetadata(f"{source}: not valid UTF-8") from None
    except UntrustedDocumentError as exc:
        raise InvalidMetadata(f"{source}: {exc}") from None
    if "variant" not in data:
        return None
    return VariantMetadata.from_pyproject(data, source=source)


def _check_request(
    properties: Sequence[VariantProperty],
    label: str | None,
    null: bool,
    project: VariantMetadata | None,
    validate: bool,
) -> None:
    """Refuse what make_variant would refuse, before the (possibly long) backend build."""
    if not null and not properties and label != NULL_LABEL:
        raise BuildError(
            "a variant build needs variant properties or the null variant; for a plain, "
            "non-variant wheel use `python -m build`"
        )
    final_label = choose_label(properties, label, null=null)
    if final_label == NULL_LABEL and project is None:
        raise BuildError(
            "the null variant needs the project's namespace priorities: add a [variant] "
            "table with default-priorities.namespace to pyproject.toml"
        )
    if validate:
        validate_properties(properties)
    variant_metadata(properties, final_label, project=project)


def build_plain_wheel(
    source_dir: Path,
    wheel_dir: Path,
    *,
    isolation: bool = True,
    output: OutputCallback | None = None,
) -> Path:
    """Build an ordinary wheel of *source_dir* into *wheel_dir* with its PEP 517 backend.

    With *isolation*, pip installs the build requirements into a fresh virtual
    environment; without it, the backend runs in this interpreter's environment,
    which must already have them (no network needed).
    """
    try:
        import build
        import build.env
        import pyproject_hooks
    except ImportError:
        raise BuildError(
            "building needs the 'build' package: pip install 'wheelwise[build]'"
        ) from None

    runner = _CapturingRunner(output)
    backend = _backend_name(source_dir)
    hook = "get_requires_for_build_wheel"
    try:
        if isolation:
            with build.env.DefaultIsolatedEnv() as env:
                builder = build.ProjectBuilder.from_isolated_env(env, source_dir, runner=runner)
                _install(env, builder.build_system_requires)
                _install(env, builder.get_requires_for_build("wheel"))
                hook = "build_wheel"
                built = builder.build("wheel", wheel_dir)
        else:
            builder = build.ProjectBuilder(source_dir, runner=runner)
            missing = sorted(" -> ".join(chain) for chain in builder.check_dependencies("wheel"))
            if missing:
                raise BuildError(
                    f"{source_dir}: build requirements missing from this environment "
                    f"(building without isolation): {', '.join(missing)}; install them, "
                    "or build in an isolated environment"
                )
            hook = "build_wheel"
            built = builder.build("wheel", wheel_dir)
    except build.BuildBackendException as exc:
        cause = exc.exception
        if isinstance(cause, pyproject_hooks.BackendUnavailable):
            raise _failure(
                f"{source_dir}: build backend {backend!r} is not available (a typo in "
                "build-system.build-backend, or its package missing from "
                "build-system.requires?)",
                cause.traceback or runner.text,
                lines=1,
            ) from None
        what = "" if isinstance(cause, subprocess.CalledProcessError) else f": {cause!r}"
        raise _failure(
            f"{source_dir}: build backend {backend!r} failed in {hook}{what}", runner.text
        ) from None
    except build.BuildException as exc:
        raise BuildError(f"{source_dir}: {exc}") from None
    except build.FailedProcessError as exc:
        raise _failure(f"{source_dir}: {exc}", _process_output(exc.exception)) from None
    return Path(built)


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


def build_variant_wheel(
    source_dir: Path,
    out_dir: Path,
    *,
    properties: Sequence[VariantProperty] = (),
    label: str | None = None,
    null: bool = False,
    validate: bool = True,
    isolation: bool = True,
    output: OutputCallback | None = None,
) -> Path:
    """Build *source_dir* into a variant wheel in *out_dir*; return its path.

    *properties* are the wheel's variant properties (or *null* for the null
    variant); *label* names the variant (default: the hash label). The project's
    ``[variant]`` table supplies the namespace priorities. Backend
    output goes to *output* line by line when given, and its tail into the
    :class:`BuildError` of a failed build.
    """
    source_dir = Path(source_dir).absolute()
    out_dir = Path(out_dir).absolute()
    project = load_project_variant(source_dir)
    _check_request(properties, label, null, project, validate)

    with tempfile.TemporaryDirectory(prefix="wheelwise-build-") as tmp:
        plain = build_plain_wheel(
            source_dir, Path(tmp) / "wheel", isolation=isolation, output=output
        )
        created = not out_dir.exists()
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            # Written atomically: a temporary file beside the target, then a rename.
            return make_variant(
                plain,
                out_dir,
                properties=properties,
                label=label,
                null=null,
                # default-priorities.namespace and provider data from [variant].
                project=project,
                validate=validate,
            )
        except BaseException:
            if created:
                # Leave no empty output directory behind.
                with contextlib.suppress(OSError):
                    out_dir.rmdir()
            raise
