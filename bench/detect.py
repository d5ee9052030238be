"""Benchmark: machine detection as whole processes, wheelwise vs variantlib 0.2.2.

Times, interleaved, each as a fresh process (median of N runs):

* ``python -c "import wheelwise"``: the floor for any wheelwise command;
* ``wheelwise detect --json`` cold: an empty cache folder on every run, so all
  built-in providers (nvidia, amd, x86_64, aarch64) detect from scratch;
* ``wheelwise detect --json`` warm: the cached answer for an unchanged machine;
* ``variantlib plugins get-configs -s`` with one installed plugin: the corpus'
  ``installable_plugin`` provider (returns constants, no detection at all), so
  variantlib's number is a lower bound for any real provider.

variantlib runs in its own virtual environment, created once under
``bench/.venv-variantlib`` (variantlib 0.2.2 from the package registry plus the
plugin as a local wheel with a ``variant_plugins`` entry point).

Usage::

    .venv/bin/python bench/detect.py [--runs 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from benchkit import bin_dir, cpu_model

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_SOURCE = (
    ROOT
    / "tests/data/corpus/variantlib-test-package/test-plugin-package/dist"
    / "test_plugin_package-0-py3-none-any.whl"
)
VARIANTLIB_VENV = ROOT / "bench" / ".venv-variantlib"


def plugin_wheel(directory: Path) -> Path:
    """The corpus plugin, repackaged with the entry point variantlib discovers."""
    path = directory / "bench_plugin-0-py3-none-any.whl"
    with zipfile.ZipFile(PLUGIN_SOURCE) as source:
        module = source.read("test_plugin_package.py")
    info = "bench_plugin-0.dist-info"
    members = {
        "test_plugin_package.py": module,
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: bench-plugin\nVersion: 0\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
        f"{info}/entry_points.txt": (
            b"[variant_plugins]\ninstallable_plugin = test_plugin_package\n"
        ),
        f"{info}/RECORD": b"",
    }
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def ensure_variantlib() -> Path:
    executable = bin_dir(VARIANTLIB_VENV) / "variantlib"
    if executable.exists():
        return executable
    subprocess.run([sys.executable, "-m", "venv", str(VARIANTLIB_VENV)], check=True)
    pip = [str(bin_dir(VARIANTLIB_VENV) / "python"), "-m", "pip", "install", "-q"]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([*pip, "variantlib==0.2.2", str(plugin_wheel(Path(tmp)))], check=True)
    return executable


def run_once(argv: Sequence[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="wheelwise detect vs variantlib")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    wheelwise = str(Path(sys.executable).parent / "wheelwise")
    variantlib = str(ensure_variantlib())
    # As installed for real: bytecode caches may be written (the warm-up runs write them).
    base_env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WHEELWISE_") and k != "PYTHONDONTWRITEBYTECODE"
    }

    with tempfile.TemporaryDirectory() as tmp:
        warm_env = {**base_env, "WHEELWISE_CACHE_DIR": str(Path(tmp) / "warm")}
        subprocess.run(
            [wheelwise, "detect", "--json"], env=warm_env, check=True, capture_output=True
        )
        cold_dirs = iter(range(10**6))

        def cold() -> float:
            cache_dir = str(Path(tmp) / f"cold-{next(cold_dirs)}")
            return run_once(
                [wheelwise, "detect", "--json"], {**base_env, "WHEELWISE_CACHE_DIR": cache_dir}
            )

        contenders: dict[str, Callable[[], float]] = {
            "python -c 'import wheelwise'": lambda: run_once(
                [sys.executable, "-c", "import wheelwise"], base_env
            ),
            "wheelwise detect --json (cold)": cold,
            "wheelwise detect --json (warm)": lambda: run_once(
                [wheelwise, "detect", "--json"], warm_env
            ),
            "variantlib plugins get-configs -s": lambda: run_once(
                [variantlib, "plugins", "get-configs", "-s"], base_env
            ),
        }
        for run in contenders.values():  # warm up the OS file cache
            run()
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, run in contenders.items():
                times[name].append(run())

    medians = {name: statistics.median(values) * 1e3 for name, values in times.items()}
    floor = medians["python -c 'import wheelwise'"]
    cold_ms = medians["wheelwise detect --json (cold)"]
    warm_ms = medians["wheelwise detect --json (warm)"]
    vl_ms = medians["variantlib plugins get-configs -s"]
    result = {
        "command": "python bench/detect.py " + " ".join(argv or sys.argv[1:]),
        "machine": {
            "python": sys.version.split()[0],
            "cpu": cpu_model(),
            "nproc": os.cpu_count(),
        },
        "runs": args.runs,
        "median_ms": medians,
        "min_ms": {name: min(values) * 1e3 for name, values in times.items()},
        "variantlib_over_cold": vl_ms / cold_ms,
        "warm_over_import": warm_ms / floor,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"machine: Python {result['machine']['python']}, {result['machine']['cpu']}, "
        f"nproc={result['machine']['nproc']}; {args.runs} runs each, interleaved"
    )
    print(f"{'command':<40} {'median ms':>10} {'min ms':>8}")
    for name in contenders:
        print(f"{name:<40} {medians[name]:>10.1f} {result['min_ms'][name]:>8.1f}")
    print(f"variantlib / wheelwise cold: {vl_ms / cold_ms:.1f}x (aim: >= 5x)")
    print(f"wheelwise warm / import wheelwise: {warm_ms / floor:.2f}x (aim: <= 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
