"""Running ``wheelwise proxy`` in front of an index, for the proxy tests and benchmarks."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from indexkit import free_port, installer_env, running
from variantkit import wheelwise

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
    environment.update(WHEELWISE_CACHE_DIR=str(cache / "user-cache"), **(env or {}))
    base = f"http://127.0.0.1:{port}"
    with running(argv, f"{base}/simple/", output, env=environment):
        yield base
