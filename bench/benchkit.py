"""Helpers shared by the benchmark scripts: machine notes, venv paths, ports."""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Where bench/gpu_stack.py keeps the torch CUDA stack's wheels (fetched once).
GPU_STACK_WHEELS = Path.home() / ".cache" / "wheelwise-bench" / "gpu-stack"


def torch_wheel(folder: Path) -> Path:
    """The torch 2.14.1 wheel for this interpreter in *folder*; exits when there is none."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    found = sorted(folder.glob(f"torch-2.14.1-{tag}-*.whl"))
    if not found:
        raise SystemExit(
            f"no torch 2.14.1 wheel for {tag} in {folder}: run pip download "
            f"torch==2.14.1 --only-binary=:all: --no-deps -d {folder}"
        )
    return found[0]


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine_info() -> dict[str, Any]:
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        nproc = os.cpu_count() or 0
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "nproc": nproc,
    }


def bin_dir(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def installer_paths() -> tuple[Path, Path]:
    """The ``wheelwise`` and ``uv`` executables beside this interpreter (``uv`` from
    PATH when it is not there)."""
    here = Path(sys.executable).parent
    uv = shutil.which("uv", path=str(here)) or shutil.which("uv") or "uv"
    return here / "wheelwise", Path(uv)


def clean_env() -> dict[str, str]:
    """This environment without any tool's settings (``PIP_*``, ``UV_*``,
    ``WHEELWISE_*``, ``PYTHONDONTWRITEBYTECODE``: installers run as users run them),
    with pip and uv told to read no configuration file."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "UV_", "WHEELWISE_", "PYTHONDONTWRITEBYTECODE"))
    }
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.update(PIP_NO_INPUT="1", UV_NO_CONFIG="1")
    return env


def run_timed(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float,
    where: str,
    on_timeout: str,
) -> float:
    """The seconds *argv* took, run as a whole process; stops the benchmark (naming
    *where*) when it fails, or takes over *timeout* seconds (saying *on_timeout*)."""
    start = time.perf_counter()
    try:
        result = subprocess.run(
            argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{where} took over {timeout:.0f} s; {on_timeout}") from None
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{where} failed ({result.returncode}):\n{result.stderr}")
    return elapsed


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system) process *pid* has used, or None where ``/proc``
    does not tell (not Linux, or the process is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name, which is in parentheses and may hold spaces.
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def round_orders(names: Sequence[str]) -> list[tuple[str, ...]]:
    """Every order of *names*, arranged so that consecutive rounds have different
    leaders (round r starts with names[r % len(names)])."""
    by_leader = [[o for o in itertools.permutations(names) if o[0] == n] for n in names]
    return [order for group in zip(*by_leader, strict=True) for order in group]


def add_warm_up_option(parser: argparse.ArgumentParser) -> None:
    """``--no-warm-up``: leave out the untimed first round (the tests' smoke runs, which
    check what the script does, not its figures)."""
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="skip the untimed first round (a smoke run: the figures are then colder)",
    )


def copy_tree(source: Path, target: Path) -> None:
    """A copy keeping links and times (so pip's .pyc files stay valid)."""
    if shutil.which("cp"):
        subprocess.run(["cp", "-a", str(source), str(target)], check=True)
    else:
        shutil.copytree(source, target, symlinks=True)
