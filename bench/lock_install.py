"""Benchmark: installing from a ``pylock.toml`` into fresh venvs, wheelwise vs uv.

Two sets (``--sets``), each served on 127.0.0.1 by ``wheelwise index serve`` and locked
once, untimed, by ``wheelwise lock --index-url URL REQS -o DIR/pylock.toml``:

* ``wheelhouse``: the 31 real wheels of ``bench/install.py`` (its ``REQUIREMENTS``,
  downloaded once into ``bench/.wheelhouse`` with pip from the package registry);
* ``variants``: the torch-like variant wheels of ``bench/variant_house.py``, generated
  into a temporary folder (the index serves each release's ``*-variants.json``, and
  the lock inlines it as ``[packages.variants-json]``). wheelwise gets the system
  document of an H100 with a CUDA 13 driver (``--system``) and installs ``faketorch``
  ``cu130``, the variant-gated ``fakecublas`` and ``fakesimd`` ``x86_64_v3``; uv, which
  chooses no variant from a lock, installs the non-variant builds and no ``fakecublas``.

Timed, as whole processes, each into a new venv made before the clock starts, without
byte-compilation, each set **cold** (a new, empty cache dir) and **warm** (the cache
dir filled by an untimed run of the same command into another venv right before):

* ``uv pip install --no-config --cache-dir DIR --python VENV/bin/python -r pylock.toml``;
* ``uv pip sync --cache-dir DIR --python VENV/bin/python pylock.toml``;
* ``wheelwise install -q -r pylock.toml --python VENV/bin/python``;
* ``wheelwise sync -q pylock.toml --python VENV/bin/python``

(``UV_NO_CONFIG=1`` for uv; ``WHEELWISE_CACHE_DIR=DIR`` for wheelwise, which also
gets ``PYTHONPATH``, so that it may name the source tree to measure; no tool gets
``PYTHONDONTWRITEBYTECODE``). One untimed round of every command on every set comes
first (the OS file cache, the installers' own bytecode); then each round runs every
set and mode with the commands in the next of all their orders, each round led by
another command; medians of ``--runs``. After every run, timed or not, the venv must
hold exactly the expected distributions (for ``variants``, the expected build of each
variant project) and no ``.pyc`` file, or the script stops.

Usage::

    .venv/bin/python bench/lock_install.py [--runs 5] [--sets wheelhouse,variants] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import variant_house
from benchkit import (
    add_warm_up_option,
    clean_env,
    cpu_model,
    installer_paths,
    machine_info,
    round_orders,
    run_timed,
)
from install import (
    EXPECTED,
    REQUIREMENTS,
    WHEELHOUSE,
    count_pyc,
    ensure_wheelhouse,
    index_server,
    installed,
    site_packages,
    tool_version,
    venv_python,
)
from wheelwise.untrusted_json import loads_toml

ROOT = Path(__file__).resolve().parent.parent
SETS = ["wheelhouse", "variants"]
MODES = ["cold", "warm"]
COMMANDS = ["uv-install", "uv-sync", "wheelwise-install", "wheelwise-sync"]
RATIOS = {
    "wheelwise-install/uv-install": ("wheelwise-install", "uv-install"),
    "wheelwise-sync/uv-sync": ("wheelwise-sync", "uv-sync"),
}


@dataclass
class LockSet:
    """One set: where its wheels are, what to lock, and what each installer must leave."""

    name: str
    wheels: Path
    requirements: list[str]
    # installer ("uv", "wheelwise") -> distributions, and the builds of variant projects
    distributions: dict[str, set[str]]
    builds: dict[str, dict[str, str | None]] = field(default_factory=dict)
    system: Path | None = None  # wheelwise's --system document
    lock: Path | None = None


def make_sets(names: Sequence[str], tmp: Path) -> list[LockSet]:
    sets = []
    if "wheelhouse" in names:
        ensure_wheelhouse(metadata.version("pip"))
        distributions = {"uv": EXPECTED, "wheelwise": EXPECTED}
        sets.append(LockSet("wheelhouse", WHEELHOUSE, REQUIREMENTS, distributions))
    if "variants" in names:
        folder = tmp / "variant-wheels"
        variant_house.write_house(folder)
        system = tmp / "h100-cuda13.json"
        system.write_text(json.dumps(variant_house.H100))
        sets.append(
            LockSet(
                "variants",
                folder,
                variant_house.REQUIREMENTS,
                {"uv": variant_house.WITHOUT_GATED, "wheelwise": variant_house.DISTRIBUTIONS},
                {"uv": variant_house.PLAIN_BUILDS, "wheelwise": variant_house.VARIANT_BUILDS},
                system,
            )
        )
    return sets


def lock_summary(lock: Path) -> dict[str, Any]:
    document = loads_toml(lock.read_bytes())
    packages = document.get("packages", [])
    return {
        "packages": len(packages),
        "wheels": sum(len(p.get("wheels", [])) for p in packages),
        "wheel_bytes": sum(w.get("size", 0) for p in packages for w in p.get("wheels", [])),
        "variant_packages": sum(1 for p in packages if "variants-json" in p),
        "bytes": lock.stat().st_size,
    }


def source_commit() -> str:
    result = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="installing a pylock.toml: wheelwise vs uv")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one install may take")
    parser.add_argument("--json", action="store_true")
    add_warm_up_option(parser)
    args = parser.parse_args(argv)
    names = args.sets.split(",")
    unknown = sorted(set(names) - set(SETS))
    if unknown:
        parser.error(f"--sets: unknown {', '.join(unknown)}; known: {', '.join(SETS)}")
    if args.runs < 1:
        parser.error("--runs: at least 1")

    started = time.perf_counter()
    wheelwise, uv = installer_paths()
    base_env = clean_env()
    # PYTHONPATH reaches wheelwise only (it may name the source tree to measure).
    uv_env = {k: v for k, v in base_env.items() if k != "PYTHONPATH"}

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wheelwise-lockbench-")))
        sets = make_sets(names, tmp)
        counter = itertools.count()
        for lock_set in sets:
            index_url = stack.enter_context(index_server(wheelwise, lock_set.wheels))
            lock_set.lock = tmp / f"lock-{lock_set.name}" / "pylock.toml"
            lock_set.lock.parent.mkdir()
            subprocess.run(
                [
                    str(wheelwise), "lock", "--index-url", index_url,
                    *lock_set.requirements, "-o", str(lock_set.lock),
                ],
                env={**base_env, "WHEELWISE_CACHE_DIR": str(tmp / "lock-cache")},
                cwd=tmp,
                check=True,
                capture_output=True,
            )  # fmt: skip
        setup_s = time.perf_counter() - started

        def command(name: str, lock_set: LockSet, python: Path, cache: Path) -> list[str]:
            assert lock_set.lock is not None
            lock = str(lock_set.lock)
            if name == "uv-install":
                return [
                    str(uv), "pip", "install", "--no-config", "--cache-dir", str(cache),
                    "--python", str(python), "-r", lock,
                ]  # fmt: skip
            if name == "uv-sync":
                return [
                    str(uv), "pip", "sync", "--cache-dir", str(cache), "--python", str(python),
                    lock,
                ]  # fmt: skip
            head = (
                ["install", "-q", "-r", lock]
                if name == "wheelwise-install"
                else ["sync", "-q", lock]
            )
            system = ["--system", str(lock_set.system)] if lock_set.system is not None else []
            return [str(wheelwise), *head, "--python", str(python), *system]

        def install(name: str, lock_set: LockSet, cache: Path) -> tuple[float, dict[str, Any]]:
            """One checked run into a new venv: (seconds, what the venv holds)."""
            venv = tmp / f"venv-{next(counter)}"
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
            argv = command(name, lock_set, venv_python(venv), cache)
            installer = name.split("-")[0]
            env = uv_env if installer == "uv" else {**base_env, "WHEELWISE_CACHE_DIR": str(cache)}
            where = f"{name}, set {lock_set.name}"
            elapsed = run_timed(
                argv, env=env, cwd=tmp, timeout=args.timeout, where=where,
                on_timeout="raise --timeout",
            )  # fmt: skip
            got, want = installed(venv), lock_set.distributions[installer]
            if got != want:
                raise SystemExit(
                    f"{where}: missing {sorted(want - got)}, unexpected {sorted(got - want)}"
                )
            builds = variant_house.builds(site_packages(venv))
            if lock_set.builds and builds != lock_set.builds[installer]:
                raise SystemExit(
                    f"{where}: installed the builds {builds}, not {lock_set.builds[installer]}"
                )
            if count_pyc(venv) != 0:
                raise SystemExit(f"{where} byte-compiled {count_pyc(venv)} files")
            # Venvs stay until the end: deleting thousands of files slows the next
            # installer's file creation on some disks (see docs/benchmarks.md).
            return elapsed, {"distributions": sorted(got), "builds": builds}

        def run(name: str, lock_set: LockSet, mode: str) -> tuple[float, dict[str, Any]]:
            cache = tmp / f"cache-{next(counter)}"
            if mode == "warm":
                install(name, lock_set, cache)
            return install(name, lock_set, cache)

        for lock_set in sets if args.warm_up else ():
            for name in COMMANDS:  # warm-up: OS file cache, the installers' bytecode
                run(name, lock_set, "cold")
        times: dict[str, dict[str, dict[str, list[float]]]] = {
            s.name: {m: {n: [] for n in COMMANDS} for m in MODES} for s in sets
        }
        held: dict[str, dict[str, dict[str, Any]]] = {s.name: {} for s in sets}
        orders = round_orders(COMMANDS)
        for round_ in range(args.runs):
            for lock_set in sets:
                for mode in MODES:
                    for name in orders[round_ % len(orders)]:
                        elapsed, held[lock_set.name][name] = run(name, lock_set, mode)
                        times[lock_set.name][mode][name].append(elapsed)
        total_s = time.perf_counter() - started
        locks = {s.name: lock_summary(s.lock) for s in sets if s.lock is not None}

    medians = {
        s: {m: {n: statistics.median(v) for n, v in by.items()} for m, by in modes.items()}
        for s, modes in times.items()
    }
    ratios = {
        s: {
            m: {key: by[top] / by[bottom] for key, (top, bottom) in RATIOS.items()}
            for m, by in modes.items()
        }
        for s, modes in medians.items()
    }
    overall = {
        mode: {key: statistics.median(r[mode][key] for r in ratios.values()) for key in RATIOS}
        for mode in MODES
    }
    versions = {
        "uv": tool_version([str(uv), "--version"]),
        "wheelwise": metadata.version("wheelwise"),
        "wheelwise_source": source_commit(),
    }
    result = {
        "command": "python bench/lock_install.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_info(),
        "versions": versions,
        "runs": args.runs,
        "sets": {s.name: s.requirements for s in sets},
        "locks": locks,
        "system": variant_house.H100 if "variants" in names else None,
        "installed": held,
        "setup_s": setup_s,
        "total_s": total_s,
        "median_s": medians,
        "times_s": times,
        "min_s": {
            s: {m: {n: min(v) for n, v in by.items()} for m, by in modes.items()}
            for s, modes in times.items()
        },
        "ratios": ratios,
        "overall": overall,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"machine: Python {result['machine']['python']}, {cpu_model()}, "
        f"nproc={result['machine']['nproc']}; {versions['uv']}, wheelwise "
        f"{versions['wheelwise']} ({versions['wheelwise_source']})"
    )
    print(
        f"{args.runs} run{'s' if args.runs != 1 else ''} each, interleaved; setup "
        f"{setup_s:.1f} s, {total_s:.0f} s in all"
    )
    header = f"{'set':<11} {'mode':<5}" + "".join(f" {n + ' s':>19}" for n in COMMANDS)
    print(header + "".join(f" {key:>28}" for key in RATIOS))
    for set_name, modes in medians.items():
        for mode, by in modes.items():
            row = f"{set_name:<11} {mode:<5}" + "".join(f" {by[n]:>19.3f}" for n in COMMANDS)
            print(row + "".join(f" {ratios[set_name][mode][k]:>27.2f}x" for k in RATIOS))
    for mode in MODES:
        print(
            f"{'overall':<11} {mode:<5}"
            + " " * 20 * len(COMMANDS)
            + "".join(f" {overall[mode][k]:>27.2f}x" for k in RATIOS)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
