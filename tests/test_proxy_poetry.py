"""poetry (no variant support) locks and installs through ``wheelwise proxy`` the build
each simulated machine of :mod:`proxykit`'s fleet should get.

poetry comes from the ``test`` extra. Its configuration, cache and data live in the
test's folder, its only source is the proxy (``priority = "primary"`` turns PyPI
off) and it reaches nothing but 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from indexkit import installer_env
from proxykit import build_of, installed, page
from wheelwise.untrusted_json import loads_toml

pytest_plugins = ["proxykit"]

PROJECT = """\
[project]
name = "cluster-job"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = ["app"]

[tool.poetry]
package-mode = false

[[tool.poetry.source]]
name = "proxy"
url = "{index}"
priority = "primary"
"""


@pytest.fixture(scope="module", autouse=True)
def _poetry_installed() -> None:
    if importlib.util.find_spec("poetry") is None:
        pytest.fail("poetry is not installed beside the tests: pip install -e '.[test]'")


def poetry_env(home: Path) -> dict[str, str]:
    """An environment in which poetry sees no user configuration, cache or virtual
    environment, and makes the project's environment in the project."""
    env = installer_env(home)
    for inherited in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        env.pop(inherited, None)
    for key in [key for key in env if key.startswith("POETRY_")]:
        del env[key]
    env.update(
        POETRY_CONFIG_DIR=str(home / "poetry-config"),
        POETRY_CACHE_DIR=str(home / "poetry-cache"),
        POETRY_DATA_DIR=str(home / "poetry-data"),
        POETRY_NO_INTERACTION="1",
        POETRY_KEYRING_ENABLED="false",
        POETRY_VIRTUALENVS_IN_PROJECT="true",
        POETRY_VIRTUALENVS_USE_POETRY_PYTHON="true",
        POETRY_VIRTUALENVS_OPTIONS_NO_PIP="true",
    )
    return env


def poetry(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "poetry", "--no-ansi", "--directory", str(project), *args]
    env = poetry_env(project.parent / "home")
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
@pytest.mark.parametrize(("prefix", "build"), [("/p/h100", "cu128"), ("", "null")])
def test_poetry_locks_and_installs_the_build_of_each_machine(
    proxy: str, prefix: str, build: str, tmp_path: Path
) -> None:
    project = tmp_path / "job"
    project.mkdir()
    (project / "pyproject.toml").write_text(PROJECT.format(index=f"{proxy}{prefix}/simple/"))
    lock = poetry(project, "lock")
    assert lock.returncode == 0, lock.stdout + lock.stderr
    sync = poetry(project, "sync")
    assert sync.returncode == 0, sync.stdout + sync.stderr
    python = project / ".venv" / "bin" / "python"
    assert build_of(python) == build
    names = installed(python)
    assert {"app", "gpukit"} <= names
    # Only the CUDA builds need the CUDA runtime (a variant marker says so).
    assert ("cudart" in names) == build.startswith("cu")
    # poetry hashed the wheel the proxy built for the lock (the first page has no
    # hash for it) and checked the same bytes when installing: the page says so now.
    locked = loads_toml((project / "poetry.lock").read_text())
    gpukit = next(p for p in locked["package"] if p["name"] == "gpukit")
    entry = page(f"{proxy}{prefix}", "gpukit").json()["files"][0]
    assert entry["_wheelwise"]["variant"] == build
    assert [f["hash"] for f in gpukit["files"]] == [f"sha256:{entry['hashes']['sha256']}"]
