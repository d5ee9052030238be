"""Running ``wheelwise proxy`` in front of an index, for the proxy tests and benchmarks.

As a pytest plugin (``pytest_plugins = ["proxykit"]``) it gives a test module the
simulated fleet: ``upstream`` serves the GPU demo wheelhouse (:mod:`gpuhouse`) and
``proxy`` runs on a K10 without GPUs (its own machine: ``/simple/``) with two profiles
made from ``wheelwise detect --json`` of other machines: ``h100`` (a Haswell with an
NVIDIA driver for CUDA 12.8 and a compute capability 9.0 GPU) and ``haswell`` (no GPU).
Both are module-scoped: one proxy per test module.

PYTEST_DONT_REWRITE: test modules import helpers from here before pytest registers
the plugin, too late for assertion rewriting (as for any helper module here).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import httpx
import pytest

from gpuhouse import HASWELL, K10, demo_house, machine
from indexkit import free_port, installer_env, running, uvicorn_thread
from installkit import pip, run_python
from variantkit import wheelwise
from wheelwise.publish.server import create_app as index_app

SOURCE = Path(__file__).resolve().parent.parent / "src"

JSON_PAGE = "application/vnd.pypi.simple.v1+json"


def detect_json(path: Path, env: Mapping[str, str], cache: Path) -> Path:
    """``wheelwise detect --json`` of the machine *env* simulates, written to *path*:
    what a GPU node would hand a login node as its system file."""
    result = wheelwise(["detect", "--json"], cache, env)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    path.write_text(result.stdout)
    return path


@contextlib.contextmanager
def proxy_process(
    upstreams: Sequence[str],
    cache: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    output: list[bytes] | None = None,
) -> Iterator[str]:
    """``wheelwise proxy`` as a subprocess with its own cache; yields its base URL.

    *env* adds to an environment without proxies or user configuration (the
    providers' overrides simulate the machine it runs on)."""
    port = free_port()
    argv = [sys.executable, "-m", "wheelwise", "proxy", "--port", str(port)]
    argv += ["--cache-dir", str(cache)]
    for url in upstreams:
        argv += ["--upstream", url]
    argv += list(args)
    environment = installer_env(cache / "home")
    # The proxy is the code under test: the source tree the tests run, not an install.
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(SOURCE), os.environ.get("PYTHONPATH")])
    )
    environment.update(WHEELWISE_CACHE_DIR=str(cache / "user-cache"), **(env or {}))
    base = f"http://127.0.0.1:{port}"
    with running(argv, f"{base}/simple/", output, env=environment):
        yield base


def page(base: str, project: str, **headers: str) -> httpx.Response:
    """*project*'s page under *base* (a proxy or one of its profiles), JSON unless asked."""
    headers.setdefault("Accept", JSON_PAGE)
    return httpx.get(f"{base}/simple/{project}/", headers=headers, timeout=30)


def build_of(python: Path) -> str:
    """The gpukit build installed in *python*'s environment ("missing" if none)."""
    result = run_python(python, "import gpukit; print(gpukit.VARIANT)")
    return result.stdout.strip() if result.returncode == 0 else "missing"


def installed(python: Path) -> set[str]:
    """The distributions installed in *python*'s environment."""
    result = pip(python, "list", "--format", "json")
    assert result.returncode == 0, result.stderr
    return {entry["name"] for entry in json.loads(result.stdout)}


# -- the simulated fleet, as fixtures ------------------------------------------------


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("proxy")


@pytest.fixture(scope="module")
def upstream(root: Path) -> Iterator[str]:
    house = root / "wheels"
    demo_house(house)
    with uvicorn_thread(index_app(house)) as base:
        yield f"{base}/simple/"


@pytest.fixture(scope="module")
def proxy(root: Path, upstream: str) -> Iterator[str]:
    h100 = detect_json(root / "h100.json", machine(HASWELL, "12.8", "9.0"), root / "c1")
    haswell = detect_json(root / "haswell.json", machine(HASWELL), root / "c2")
    profiles = ["--profile", f"h100={h100}", "--profile", f"haswell={haswell}"]
    with proxy_process([upstream], root / "cache", *profiles, env=machine(K10)) as base:
        yield base
