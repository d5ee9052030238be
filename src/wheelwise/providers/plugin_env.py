"""Isolated, cached virtual environments for provider plugins.

One environment per requirement set and interpreter, under
``user_cache_dir("wheelwise")/plugins/<key>/`` (``$WHEELWISE_CACHE_DIR`` replaces
the cache folder). pip installs the requirements with the user's pip settings
from the environment (``PIP_INDEX_URL``, ``PIP_FIND_LINKS``...) and the global
``pip.conf``, but without credentials: see
:mod:`~wheelwise.providers.plugin_environ` (HOME is an empty folder, so the user's
own ``pip.conf``, ``~/.netrc`` and keyring are not read). pip's installation report
records which distribution, version and file it installed, for the user to see.

Creation is atomic: the environment is built in a temporary folder beside its
final place, a marker file is written last, and the folder is renamed into
place; a file lock keeps concurrent processes from building the same one twice.
An environment with its marker is complete and is reused without running pip;
a failed build leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import venv
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import filelock
import platformdirs
from packaging.version import InvalidVersion, Version

from wheelwise.errors import WheelwiseError
from wheelwise.providers.plugin_environ import plugin_environ

CACHE_ENV = "WHEELWISE_CACHE_DIR"
MARKER = "wheelwise-plugin-env.json"
# Lines of pip's output kept for an error report.
PIP_TAIL_LINES = 6
# Variables that would send pip's install somewhere other than the environment.
_PIP_REDIRECTS = ("PIP_TARGET", "PIP_PREFIX", "PIP_ROOT", "PIP_USER", "PIP_PYTHON")
# pip's --python option (run pip from outside against another interpreter).
_PIP_PYTHON_OPTION = Version("22.3")


class PluginEnvError(WheelwiseError):
    """An environment could not be created; ``str(exc)`` says why (pip's last lines)."""


def cache_root() -> Path:
    """Where plugin environments live: ``<user cache>/plugins``."""
    base = os.environ.get(CACHE_ENV) or platformdirs.user_cache_dir("wheelwise", appauthor=False)
    return Path(base) / "plugins"


def env_key(requires: Sequence[str]) -> str:
    """The folder name for *requires*: SHA-256 of the sorted set and the interpreter."""
    identity = {
        "requires": sorted(set(requires)),
        "python": sys.version,
        "implementation": sys.implementation.cache_tag,
        "base": os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return digest[:32]


def env_python(path: Path) -> Path:
    """The interpreter of the environment at *path*."""
    if os.name == "nt":  # pragma: no cover - POSIX CI
        return path / "Scripts" / "python.exe"
    return path / "bin" / "python"


@dataclass(frozen=True)
class InstalledDist:
    """One distribution pip installed into a plugin environment, and from where."""

    name: str
    version: str
    url: str
    # The SHA-256 of the file installed, as pip reported it ("" if it did not).
    sha256: str = ""

    def describe(self) -> str:
        return (
            f"{self.name} {self.version} from {self.url}"
            if self.url
            else (f"{self.name} {self.version}")
        )


@dataclass(frozen=True)
class PluginEnv:
    """A complete environment with *requires* installed."""

    path: Path
    requires: tuple[str, ...]
    # True when this call built it, False when it was reused.
    created: bool
    # What pip installed (empty for an environment built before this was recorded).
    installed: tuple[InstalledDist, ...] = ()

    def named(self) -> list[InstalledDist]:
        """The installed distributions that the requirements name."""
        from packaging.requirements import Requirement
        from packaging.utils import canonicalize_name

        names = {canonicalize_name(Requirement(r).name) for r in self.requires}
        return [d for d in self.installed if canonicalize_name(d.name) in names]

    def describe(self) -> str:
        """The installed distributions that the requirements name; for reports."""
        return ", ".join(d.describe() for d in self.named() or self.installed)

    @property
    def python(self) -> Path:
        return env_python(self.path)


def is_complete(path: Path) -> bool:
    """The marker was written (it is written last) and the interpreter still exists."""
    return (path / MARKER).is_file() and env_python(path).exists()


def ensure_env(
    requires: Sequence[str],
    *,
    root: Path | None = None,
    install_timeout: float = 600.0,
) -> PluginEnv:
    """The environment for *requires*, built on first use; raises :class:`PluginEnvError`."""
    requires = tuple(sorted(set(requires)))
    if not requires:
        raise PluginEnvError("no requirements to install")
    root = cache_root() if root is None else root
    key = env_key(requires)
    final = root / key
    if is_complete(final):
        return PluginEnv(final, requires, created=False, installed=_installed(final))
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock = filelock.FileLock(str(root / f"{key}.lock"), timeout=install_timeout + 60)
        with lock:
            if is_complete(final):  # another process finished it while we waited
                return PluginEnv(final, requires, created=False, installed=_installed(final))
            _remove_leftovers(root, key)
            _build(root, key, requires, install_timeout)
    except filelock.Timeout:
        raise PluginEnvError(f"timed out waiting for another process to create {final}") from None
    except OSError as exc:
        raise PluginEnvError(f"cannot create an environment in {root}: {exc}") from None
    return PluginEnv(final, requires, created=True, installed=_installed(final))


def _installed(path: Path) -> tuple[InstalledDist, ...]:
    """What the marker of the environment at *path* records as installed."""
    try:
        marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
        return tuple(
            InstalledDist(
                str(d["name"]), str(d["version"]), str(d.get("url", "")), str(d.get("sha256", ""))
            )
            for d in marker.get("installed", [])
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return ()


def _from_report(path: Path) -> list[dict[str, str]]:
    """name, version and URL of each item of pip's ``--report`` at *path*."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        return [
            {
                "name": str(item["metadata"]["name"]),
                "version": str(item["metadata"]["version"]),
                "url": str(item.get("download_info", {}).get("url", "")),
                "sha256": str(
                    item.get("download_info", {})
                    .get("archive_info", {})
                    .get("hashes", {})
                    .get("sha256", "")
                ),
            }
            for item in report.get("install", [])
        ]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return []


def _remove_leftovers(root: Path, key: str) -> None:
    """Remove half-built folders of *key* left by a killed process (we hold the lock)."""
    final = root / key
    if final.exists():
        shutil.rmtree(final, ignore_errors=True)
    for stale in root.glob(f".{key}-*.tmp"):
        shutil.rmtree(stale, ignore_errors=True)


def _build(root: Path, key: str, requires: tuple[str, ...], install_timeout: float) -> None:
    building = Path(tempfile.mkdtemp(prefix=f".{key}-", suffix=".tmp", dir=root))
    try:
        report = building / "pip-report.json"
        _create_and_install(building, requires, install_timeout, report)
        marker = {
            "requires": list(requires),
            "python": sys.version,
            "installed": _from_report(report),
        }
        report.unlink(missing_ok=True)
        (building / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        building.rename(root / key)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise


def _host_pip_usable() -> bool:
    """Whether this interpreter's pip can install into another one (``--python``)."""
    if importlib.util.find_spec("pip") is None:
        return False
    try:
        return Version(metadata.version("pip")) >= _PIP_PYTHON_OPTION
    except (metadata.PackageNotFoundError, InvalidVersion):
        return False


def _create_and_install(
    path: Path, requires: tuple[str, ...], timeout: float, report: Path
) -> None:
    """A fresh venv at *path* with *requires* installed by pip, which reports to *report*."""
    pip_args = ["install", "--no-input", "--disable-pip-version-check"]
    pip_args += ["--report", str(report), *requires]
    # Fast: no ensurepip when this interpreter's pip can install into the new venv.
    host_pip = _host_pip_usable()
    try:
        venv.EnvBuilder(with_pip=not host_pip, symlinks=os.name != "nt").create(path)
    except subprocess.CalledProcessError as exc:  # ensurepip failed
        raise PluginEnvError(f"cannot create a virtual environment: {exc}") from None
    if host_pip:
        command = [sys.executable, "-m", "pip", "--python", str(env_python(path)), *pip_args]
    else:
        command = [str(env_python(path)), "-m", "pip", *pip_args]
    with tempfile.TemporaryDirectory(prefix="wheelwise-plugin-home-") as home:
        env = plugin_environ(os.environ, Path(home))
        for name in (*_PIP_REDIRECTS, "PYTHONPATH", "PYTHONHOME"):
            env.pop(name, None)
        returncode, output = _run(command, env, timeout)
    if returncode is None:
        raise PluginEnvError(f"pip install {' '.join(requires)} timed out after {timeout:g} s")
    if returncode != 0:
        lines = [line for line in output.splitlines() if line.strip()][-PIP_TAIL_LINES:]
        tail = "; ".join(line.strip() for line in lines) or "(no output)"
        raise PluginEnvError(
            f"pip install {' '.join(requires)} failed (exit status {returncode}): {tail}"
        )


def _run(command: list[str], env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """Run *command*, output merged; ``(None, output)`` if it was killed for time."""
    posix = os.name == "posix"
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=posix,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        if posix:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.kill()
        out, _ = proc.communicate()
        return None, out.decode("utf-8", "replace")
    return proc.returncode, out.decode("utf-8", "replace")
