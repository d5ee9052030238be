"""Run one plugin in its environment's interpreter and check what it says.

The child is ``VENV/bin/python -I -c <_plugin_child.py> OBJECT_REFERENCE``: isolated
mode (no ``PYTHON*`` variables, no user site, no current folder on ``sys.path``),
in its own process group, with no standard input, and with an environment
without credentials and an empty HOME (:mod:`~wheelwise.providers.plugin_environ`).
The parent enforces a time limit (the whole group is killed) and a size limit on
the output, then parses and validates the JSON document. Every failure is a :class:`PluginFailure`
whose message is one line for the user.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO, Any

from wheelwise.errors import WheelwiseError
from wheelwise.providers.base import FeatureConfig
from wheelwise.providers.plugin_environ import plugin_environ
from wheelwise.providers.validation import ProviderOutputError, supported_features
from wheelwise.untrusted_json import UntrustedDocumentError, loads_json

MAX_OUTPUT = 1024 * 1024
# How much of the child's standard error is kept (the end of it).
STDERR_TAIL = 64 * 1024
_CHUNK = 65536
_CHILD_PREFIX = "plugin-host: "


class PluginFailure(WheelwiseError):
    """The plugin crashed, hung, or said something invalid."""


@dataclass(frozen=True)
class PluginAnswer:
    """A plugin's validated answer."""

    # Supported features, best first, and their values, best first.
    features: dict[str, tuple[str, ...]]
    all_configs: tuple[FeatureConfig, ...]


def child_source() -> str:
    """The source of the standalone program run in the environment."""
    return (
        resources.files("wheelwise.providers")
        .joinpath("_plugin_child.py")
        .read_text(encoding="utf-8")
    )


class _Reader(threading.Thread):
    """Drain a pipe: keep the first *limit* bytes (or the last, with *tail*)."""

    def __init__(
        self,
        stream: IO[bytes],
        limit: int,
        *,
        tail: bool = False,
        on_overflow: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.limit = limit
        self.tail = tail
        self.on_overflow = on_overflow
        self.data = bytearray()
        self.overflow = False

    def run(self) -> None:
        fd = self.stream.fileno()
        try:
            while chunk := os.read(fd, _CHUNK):
                self.data += chunk
                if len(self.data) > self.limit:
                    if self.tail:
                        del self.data[: len(self.data) - self.limit]
                    elif not self.overflow:
                        self.overflow = True
                        del self.data[self.limit :]
                        if self.on_overflow is not None:
                            self.on_overflow()
                    else:
                        del self.data[self.limit :]
        except OSError:  # pragma: no cover - nothing more to read
            pass
        finally:
            # Closed here, not by the caller: a grandchild that escaped the kill
            # may still hold the pipe, and this thread must not read a reused fd.
            self.stream.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    else:  # pragma: no cover - POSIX CI
        proc.kill()


@dataclass(frozen=True)
class _Outcome:
    returncode: int | None  # None: killed for time
    stdout: bytes
    stderr: bytes
    overflow: bool


def _run_child(python: Path, reference: str, timeout: float) -> _Outcome:
    with tempfile.TemporaryDirectory(
        prefix="wheelwise-plugin-home-", ignore_cleanup_errors=True
    ) as home:
        return _run_child_in(python, reference, timeout, Path(home))


def _run_child_in(python: Path, reference: str, timeout: float, home: Path) -> _Outcome:
    proc = subprocess.Popen(
        [str(python), "-I", "-c", child_source(), reference],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(python.parent),
        env=plugin_environ(os.environ, home),
        start_new_session=os.name == "posix",
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    out = _Reader(proc.stdout, MAX_OUTPUT, on_overflow=lambda: _kill_group(proc))
    err = _Reader(proc.stderr, STDERR_TAIL, tail=True)
    out.start()
    err.start()
    returncode: int | None
    try:
        returncode = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        returncode = None
    # Whatever happened, nothing the plugin started outlives it.
    _kill_group(proc)
    proc.wait()
    # The document's pipe is not inherited by the plugin's own children, so it
    # closes with the child; standard error may be held by an escaped grandchild.
    out.join(timeout=5)
    err.join(timeout=0.5)
    return _Outcome(returncode, bytes(out.data), bytes(err.data), out.overflow)


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    last = lines[-1]
    return last.removeprefix(_CHILD_PREFIX)[:500]


def run_plugin(python: Path, reference: str, namespace: str, timeout: float) -> PluginAnswer:
    """Query the plugin at *reference* with the interpreter *python*."""
    try:
        outcome = _run_child(python, reference, timeout)
    except OSError as exc:
        raise PluginFailure(f"cannot start {python}: {exc}") from None
    if outcome.overflow:
        raise PluginFailure(f"output exceeds the {MAX_OUTPUT // 1024} KiB limit; killed")
    if outcome.returncode is None:
        raise PluginFailure(f"no answer within {timeout:g} s; killed")
    last = _last_line(outcome.stderr)
    if outcome.returncode != 0:
        status = (
            f"killed by signal {-outcome.returncode}"
            if outcome.returncode < 0
            else f"exited with status {outcome.returncode}"
        )
        raise PluginFailure(f"{status}: {last}" if last else status)
    if not outcome.stdout.strip():
        detail = f" (last output line: {last})" if last else ""
        raise PluginFailure(f"exited without an answer{detail}")
    return parse_answer(outcome.stdout, namespace)


def parse_answer(raw: bytes, namespace: str) -> PluginAnswer:
    """Parse and validate the child's document; raises :class:`PluginFailure`."""
    try:
        doc = loads_json(raw)
    except UntrustedDocumentError as exc:
        raise PluginFailure(f"invalid output, not a JSON document: {exc}") from None
    if not isinstance(doc, dict) or not {"all", "supported"} <= doc.keys():
        raise PluginFailure("invalid output: expected an object with 'all' and 'supported'")
    declared = doc.get("namespace")
    if declared is not None and declared != namespace:
        raise PluginFailure(
            f"plugin declares namespace {declared!r}, but the metadata names it {namespace!r}"
        )
    all_configs = _configs(doc["all"], "get_all_configs()")
    supported = _configs(doc["supported"], "get_supported_configs()")
    try:
        features = supported_features(namespace, all_configs, supported)
    except ProviderOutputError as exc:
        raise PluginFailure(f"invalid output: {exc}") from None
    return PluginAnswer(features, all_configs)


def _configs(raw: Any, what: str) -> tuple[FeatureConfig, ...]:
    if not isinstance(raw, list):
        raise PluginFailure(f"invalid output: {what} did not return a list")
    result = []
    for item in raw:
        name = item.get("name") if isinstance(item, dict) else None
        values = item.get("values") if isinstance(item, dict) else None
        multi = item.get("multi_value", False) if isinstance(item, dict) else None
        if not isinstance(name, str):
            raise PluginFailure(f"invalid output: {what}: a config has no string 'name'")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise PluginFailure(
                f"invalid output: {what}: values of {name!r} are not a list of strings"
            )
        if not isinstance(multi, bool):
            raise PluginFailure(f"invalid output: {what}: multi_value of {name!r} is not a bool")
        result.append(FeatureConfig(name, tuple(values), multi))
    return tuple(result)
