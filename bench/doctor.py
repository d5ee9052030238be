"""Benchmark: ``wheelwise doctor --json`` on a healthy environment, as a whole process.

Setup (each run, in a temporary folder, no network): a virtual environment made by
``python -m venv`` (so it has pip, as a user's would), into which ``wheelwise
install`` puts, from a local folder, ``--plain`` small distributions (default 40) and
two variant projects: ``cpukit`` (x86-64 levels v1 to v4: the CPU's own level is
installed) and ``gpukit`` (CUDA 12.6, 12.8, 13.0 builds and a ``null`` variant:
``null`` on a machine without an NVIDIA driver). The report must be healthy (exit 0).

Timed, interleaved, each a fresh process, median and min of N runs after one
untimed warm-up round (bytecode caches on, as in a normal installation):

* ``python -c "import wheelwise"``: the floor for any wheelwise command;
* ``wheelwise doctor --json --python VENV``: the whole report (machine detection
  included: doctor always detects afresh);
* ``VENV/bin/python -m pip list`` and ``wheelwise detect --json`` (warm detection
  cache), each alone and one after the other: what a user runs to learn the same
  (installed distributions, and what the machine supports);
* ``python -m torch.utils.collect_env``, only when torch is importable here.

Usage::

    .venv/bin/python bench/doctor.py [--runs 20] [--plain 40] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
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

from benchkit import bin_dir, machine_info
from wheelwise.wheels.record import file_entry, write_record

SCHEMA = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"
WHEEL = b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
# The aim: a healthy report well within what a container health check allows.
AIM_SECONDS = 0.5


# A variant: its label and properties.
Variant = tuple[str, dict[str, dict[str, list[str]]]]


def make_wheel(directory: Path, name: str, version: str, variant: Variant | None = None) -> Path:
    """A small wheel with a full RECORD; with *variant*, a variant wheel."""
    info = f"{name}-{version}.dist-info"
    label = variant[0] if variant is not None else None
    members = {
        f"{name}/__init__.py": f"VARIANT = {label!r}\n".encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": WHEEL,
    }
    if variant is not None:
        document = {
            "$schema": SCHEMA,
            "default-priorities": {"namespace": ["nvidia", "x86_64"]},
            "variants": dict([variant]),
        }
        members[f"{info}/variant.json"] = json.dumps(document).encode()
    record = f"{info}/RECORD"
    members[record] = write_record(
        [file_entry(member, data) for member, data in members.items()], record_path=record
    )
    suffix = f"-{label}" if label else ""
    path = directory / f"{name}-{version}-py3-none-any{suffix}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


def wheelhouse(directory: Path, plain: int) -> list[str]:
    """The wheels of the benchmark's environment; the requirements that install them."""
    directory.mkdir(parents=True)
    names = [f"plain{i:02d}" for i in range(plain)]
    for name in names:
        make_wheel(directory, name, "1.0")
    for level in ("v1", "v2", "v3", "v4"):
        make_wheel(directory, "cpukit", "1.0", (f"x86_64_{level}", {"x86_64": {"level": [level]}}))
    for label, bound in (("cu126", "12.6"), ("cu128", "12.8"), ("cu130", "13.0")):
        properties = {"nvidia": {"cuda_version_lower_bound": [bound], "sm_arch": ["90_real"]}}
        make_wheel(directory, "gpukit", "1.0", (label, properties))
    make_wheel(directory, "gpukit", "1.0", ("null", {}))
    return [*names, "cpukit", "gpukit"]


def run_once(argv: Sequence[str], env: dict[str, str], expect: int = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.decode()}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="wheelwise doctor vs pip list + detect")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--plain", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    wheelwise = str(Path(sys.executable).parent / "wheelwise")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WHEELWISE_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env["WHEELWISE_CACHE_DIR"] = str(root / "cache")
        requirements = wheelhouse(root / "wheels", args.plain)
        subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
        python = str(bin_dir(root / "venv") / "python")
        (root / "empty").mkdir()
        install = [wheelwise, "install", "-q", "--python", python]
        install += ["--index-url", str(root / "empty"), "--find-links", str(root / "wheels")]
        subprocess.run([*install, *requirements], env=env, check=True, stdout=subprocess.DEVNULL)
        report = subprocess.run(
            [wheelwise, "doctor", "--json", "--python", python], env=env, capture_output=True
        )
        document = json.loads(report.stdout)
        if report.returncode != 0:
            raise SystemExit(f"the environment is not healthy: {report.stdout.decode()}")
        distributions = document["sections"]["builds"]["facts"]["distributions"]
        variants = document["sections"]["builds"]["facts"]["variant_wheels"]

        pip_list = [python, "-m", "pip", "list", "--disable-pip-version-check"]
        detect = [wheelwise, "detect", "--json"]
        contenders: dict[str, Callable[[], float]] = {
            "python -c 'import wheelwise'": lambda: run_once(
                [sys.executable, "-c", "import wheelwise"], env
            ),
            "wheelwise doctor --json": lambda: run_once(
                [wheelwise, "doctor", "--json", "--python", python], env
            ),
            "pip list": lambda: run_once(pip_list, env),
            "wheelwise detect --json": lambda: run_once(detect, env),
            "pip list + wheelwise detect --json": lambda: (
                run_once(pip_list, env) + run_once(detect, env)
            ),
        }
        torch_found = importlib.util.find_spec("torch") is not None
        if torch_found:
            contenders["python -m torch.utils.collect_env"] = lambda: run_once(
                [sys.executable, "-m", "torch.utils.collect_env"], env
            )
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for round_number in range(args.runs + 1):
            for name, run in contenders.items():
                elapsed = run()
                if round_number:  # round 0 fills the file cache and bytecode caches
                    times[name].append(elapsed)

    medians = {name: statistics.median(values) * 1e3 for name, values in times.items()}
    doctor_ms = medians["wheelwise doctor --json"]
    baseline = (
        "python -m torch.utils.collect_env" if torch_found else "pip list + wheelwise detect --json"
    )
    result = {
        "command": "python bench/doctor.py " + " ".join(argv or sys.argv[1:]),
        "machine": machine_info(),
        "runs": args.runs,
        "distributions": distributions,
        "variant_wheels": [f"{v['name']} {v['label']}" for v in variants],
        "torch": "importable" if torch_found else "not installed (torch.utils.collect_env not run)",
        "median_ms": medians,
        "min_ms": {name: min(values) * 1e3 for name, values in times.items()},
        "baseline": baseline,
        "baseline_over_doctor": medians[baseline] / doctor_ms,
        "aim_met": doctor_ms / 1e3 < AIM_SECONDS,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    info = result["machine"]
    print(
        f"machine: {info['implementation']} {info['python']}, {info['cpu']}, nproc="
        f"{info['nproc']}; {args.runs} runs each, interleaved; {distributions} distributions "
        f"({', '.join(result['variant_wheels'])}); torch {result['torch']}"
    )
    print(f"{'command':<40} {'median ms':>10} {'min ms':>8}")
    for name in contenders:
        print(f"{name:<40} {medians[name]:>10.1f} {result['min_ms'][name]:>8.1f}")
    print(f"{baseline} / wheelwise doctor: {result['baseline_over_doctor']:.2f}x")
    print(
        f"wheelwise doctor: {doctor_ms:.0f} ms (aim: < {AIM_SECONDS * 1e3:.0f} ms: "
        f"{'met' if result['aim_met'] else 'not met'})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
