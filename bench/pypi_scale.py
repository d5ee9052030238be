"""Benchmark: installs from an index with PyPI's shape, wheelwise vs pip vs uv.

Setup (a few seconds, before anything is timed): ``bench/scale_index.py`` lays out a
synthetic index, deterministically from ``--seed``, and serves it from a separate
process on 127.0.0.1 (HTTP/1.1 keep-alive, a thread per connection; PEP 691 JSON or
PEP 503 HTML by ``Accept``, gzip by ``Accept-Encoding``, ``ETag`` and PyPI's
``Cache-Control`` on pages and files, 304 on ``If-None-Match``, PEP 658 metadata
files). At ``--scale 1``:

* ``scale-botocore``: 4,500 releases (45 minor series of 100), each with a pure wheel,
  an sdist and 18 wheels for other platforms and Pythons (20 files a release, a
  38 MB JSON page);
* ``scale-boto3``: 1,980 releases, each pinning one ``scale-botocore`` release
  (``>=1.X.Y,<1.X.(Y+1)``) and depending on two ordinary projects;
* ``scale-core``: 150 releases of 60 platform wheels and an sdist, one wheel per
  release for the running interpreter; ``scale-pydantic``: 100 releases, each pinning
  one ``scale-core`` exactly (its newest not the newest core);
* 8 ordinary projects of 10 to 50 releases and 1 to 3 files, some with a newer
  pre-release or a yanked newest release.

Only the files this interpreter can install are real (wheels, stored in memory, with
their metadata files); the rest have made-up hashes and the server answers 404 for
them. ``--scale`` shrinks the release counts (0.05 for a smoke run).

Requirement sets (``--sets``): ``boto3`` (``scale-boto3``), ``boto3-backtrack``
(``scale-botocore<1.30 scale-boto3``: the newest boto3 releases pin botocore 1.30 and
later, so a resolver goes back through a third of boto3's releases, as boto3 with an
older botocore does on PyPI), ``pydantic`` (``scale-pydantic``) and ``ordinary`` (four
ordinary projects and a dependency).

Timed, as whole processes, each into a new venv made before the clock starts, no
byte-compilation, each set both **cold** (a new, empty cache dir) and **warm** (the
cache dir filled by an untimed install of the same set into another venv right
before):

* pip: ``VENV/bin/python -m pip install --quiet --no-compile --cache-dir DIR
  --trusted-host 127.0.0.1 --index-url URL REQS`` (pip caches nothing from a
  plain-HTTP index that is not a trusted host; the venv gets this environment's pip, untimed and
  byte-compiled, from a wheel repacked from its installed files;
  ``PIP_CONFIG_FILE=/dev/null``, ``PIP_DISABLE_PIP_VERSION_CHECK=1``);
* uv: ``uv pip install --quiet --cache-dir DIR --index-url URL --python VENV/bin/python
  REQS`` (``UV_NO_CONFIG=1``);
* wheelwise: ``wheelwise install -q --index-url URL --python VENV/bin/python REQS``
  with ``WHEELWISE_CACHE_DIR=DIR``.

After one untimed round of each installer on the ``ordinary`` set (OS file cache,
the installers' bytecode), each round runs every set and mode with the installers in
the next of all their orders; medians of ``--runs``. After every install (timed or
not) the venv must hold exactly the distributions, at the versions, that the set
resolves to in the generated data (so the installers agree with each other), no new
``.pyc`` file, and the server must have answered no 404: else the script stops. Right
after each timed wheelwise install, the import floor is timed three times
(``bench/import_floor.py``'s "chosen libraries": the interpreter starting and importing
the libraries wheelwise is built on, nothing of its own): the ratios "above the floor"
compare wheelwise's time above it with uv's whole time.

Usage::

    .venv/bin/python bench/pypi_scale.py [--runs 3] [--scale 1] [--sets boto3,pydantic]
        [--installers pip,uv,wheelwise] [--json]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import (
    add_warm_up_option,
    bin_dir,
    clean_env,
    copy_tree,
    cpu_model,
    free_port,
    installer_paths,
    machine_info,
    run_timed,
)
from import_floor import floor_seconds
from scale_index import SETS, plan, resolve

HERE = Path(__file__).resolve().parent
INSTALLERS = ["pip", "uv", "wheelwise"]
MODES = ["cold", "warm"]
AIMS = [  # (mode, ratio, at most)
    ("cold", "wheelwise/pip", 0.5),
    ("cold", "wheelwise/uv", 2.0),
    ("warm", "wheelwise/uv", 1.5),
    ("warm", "wheelwise above the floor/uv", 1.5),
]
RATIOS = ("wheelwise/pip", "wheelwise/uv", "wheelwise above the floor/uv", "uv/pip")


def canonical(name: str) -> str:
    return name.replace("_", "-").replace(".", "-").lower()


def venv_python(venv: Path) -> Path:
    return bin_dir(venv) / ("python.exe" if os.name == "nt" else "python")


def site_packages(venv: Path) -> Path:
    if os.name == "nt":
        return venv / "Lib" / "site-packages"
    (path,) = venv.glob("lib/python*/site-packages")
    return path


def installed(venv: Path) -> dict[str, str]:
    """{name: version} of the venv's distributions, pip's own left out."""
    found = {}
    for path in site_packages(venv).glob("*.dist-info"):
        name, version = path.name[: -len(".dist-info")].split("-", 1)
        found[canonical(name)] = version
    found.pop("pip", None)
    return found


def count_pyc(venv: Path) -> int:
    root = site_packages(venv)
    return sum(1 for path in root.rglob("*.pyc") if path.relative_to(root).parts[0] != "pip")


def repack_pip(directory: Path) -> Path:
    """A wheel of this environment's pip, made from its installed files (offline)."""
    dist = metadata.distribution("pip")
    version = dist.version
    dist_info = f"pip-{version}.dist-info"
    skip = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
    path = directory / f"pip-{version}-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in dist.files or []:
            name = file.as_posix()
            if name.startswith("..") or "__pycache__" in file.parts or file.name in skip:
                continue
            data = Path(str(dist.locate_file(file))).read_bytes()
            archive.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            records.append(f"{name},sha256={digest.decode()},{len(data)}\n")
        archive.writestr(f"{dist_info}/RECORD", "".join(records) + f"{dist_info}/RECORD,,\n")
    return path


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


@contextlib.contextmanager
def index_server(scale: float, seed: int) -> Iterator[str]:
    """bench/scale_index.py in its own process; yields the index URL once it answers."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "scale_index.py"),
            "--scale",
            str(scale),
            "--seed",
            str(seed),
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        if process.stdout.readline().strip() != "ready":
            raise SystemExit(f"bench/pypi_scale.py: the index server stopped ({process.wait()})")
        yield f"http://127.0.0.1:{port}/simple/"
    finally:
        process.terminate()
        process.wait()


def tool_version(argv: list[str]) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    return result.stdout.strip().splitlines()[0]


def ratio(top: float | None, bottom: float | None) -> float | None:
    return top / bottom if top is not None and bottom else None


def show(value: float | None, suffix: str = "x") -> str:
    return "-" if value is None else f"{value:.2f}{suffix}"


def ratio_cells(ratios: dict[str, float | None]) -> str:
    return "".join(f" {show(ratios[key]):>8}" for key in RATIOS)


def above(seconds: float | None, floor: float | None) -> float | None:
    return seconds - floor if seconds is not None and floor is not None else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="installs from a PyPI-shaped index")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the index (0.05)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated")
    parser.add_argument("--installers", default=",".join(INSTALLERS), help="comma-separated")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one install may take")
    parser.add_argument("--json", action="store_true")
    add_warm_up_option(parser)
    args = parser.parse_args(argv)
    sets = args.sets.split(",")
    names = args.installers.split(",")
    for chosen, known, what in ((sets, SETS, "--sets"), (names, INSTALLERS, "--installers")):
        unknown = sorted(set(chosen) - set(known))
        if unknown:
            parser.error(f"{what}: unknown {', '.join(unknown)}; known: {', '.join(known)}")
    if args.runs < 1:
        parser.error("--runs: at least 1")
    if not 0 < args.scale <= 1:
        parser.error("--scale: between 0 (excluded) and 1")

    started = time.perf_counter()
    projects = plan(args.scale, args.seed)
    expected = {name: resolve(projects, SETS[name]) for name in SETS}
    wheelwise, uv = installer_paths()
    base_env = clean_env()
    # PYTHONPATH reaches wheelwise only (it may name the source tree to measure).
    tool_env = {k: v for k, v in base_env.items() if k != "PYTHONPATH"}

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wheelwise-scale-")))
        index_url = stack.enter_context(index_server(args.scale, args.seed))
        stats_url = index_url.replace("/simple/", "/-/stats")
        setup_s = time.perf_counter() - started
        tools = tmp / "tools"
        tools.mkdir()
        repack_pip(tools)
        counter = itertools.count()

        def new_venv(with_pip: bool) -> Path:
            venv = tmp / f"venv-{next(counter)}"
            if with_pip:  # a copy of one venv with pip in it: the same files, made faster
                copy_tree(pip_venv, venv)
            else:
                subprocess.run(
                    [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True
                )
            return venv

        pip_venv = tmp / "venv-pip"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(pip_venv)], check=True)
        subprocess.run(
            [
                str(uv), "pip", "install", "--quiet", "--compile-bytecode", "--no-index",
                "--find-links", str(tools), "--no-cache", "--python",
                str(venv_python(pip_venv)), "pip",
            ],
            check=True,
            env=tool_env,
        )  # fmt: skip

        def command(name: str, venv: Path, cache: Path, reqs: list[str]) -> list[str]:
            python = str(venv_python(venv))
            if name == "pip":
                # pip caches nothing from a plain-HTTP index unless it is a trusted
                # host: this makes it cache as it does from PyPI over HTTPS.
                return [
                    python, "-m", "pip", "install", "--quiet", "--no-compile",
                    "--cache-dir", str(cache), "--trusted-host", "127.0.0.1",
                    "--index-url", index_url, *reqs,
                ]  # fmt: skip
            if name == "uv":
                return [
                    str(uv), "pip", "install", "--quiet", "--cache-dir", str(cache),
                    "--index-url", index_url, "--python", python, *reqs,
                ]  # fmt: skip
            return [
                str(wheelwise), "install", "-q", "--index-url", index_url,
                "--python", python, *reqs,
            ]  # fmt: skip

        def install(name: str, set_name: str, cache: Path) -> tuple[float, dict[str, int]]:
            """One checked install into a new venv: (seconds, what it asked the index).

            The index's counters, as differences: requests, pages (200), not_modified
            (304), files, metadata, bytes.
            """
            venv = new_venv(with_pip=name == "pip")
            env = (
                {**base_env, "WHEELWISE_CACHE_DIR": str(cache)} if name == "wheelwise" else tool_env
            )
            argv = command(name, venv, cache, SETS[set_name])
            before = get_json(stats_url)
            where = f"{name}, set {set_name} ({' '.join(SETS[set_name])})"
            elapsed = run_timed(
                argv, env=env, cwd=tmp, timeout=args.timeout, where=where,
                on_timeout="raise --timeout or leave it out with --installers",
            )  # fmt: skip
            after = get_json(stats_url)
            missing = after["not_found"][len(before["not_found"]) :]
            if missing:
                raise SystemExit(f"{where} asked for files that do not exist: {missing[:5]}")
            got, want = installed(venv), expected[set_name]
            if got != want:
                wrong = {k: (got.get(k), want.get(k)) for k in got.keys() | want.keys()}
                wrong = {k: v for k, v in wrong.items() if v[0] != v[1]}
                raise SystemExit(f"{where} installed (got, expected): {wrong}")
            if count_pyc(venv) != 0:
                raise SystemExit(f"{where} byte-compiled {count_pyc(venv)} files")
            # Venvs stay until the end: deleting thousands of files slows the next
            # installer's file creation on some disks (see docs/benchmarks.md).
            traffic = {k: v - before[k] for k, v in after.items() if k != "not_found"}
            return elapsed, traffic

        def run(name: str, set_name: str, mode: str) -> tuple[float, dict[str, int]]:
            cache = tmp / f"cache-{next(counter)}"
            if mode == "warm":
                install(name, set_name, cache)
            return install(name, set_name, cache)

        for name in names if args.warm_up else ():
            run(name, "ordinary", "cold")  # warm-up: OS file cache, the installers' bytecode
        times: dict[str, dict[str, dict[str, list[float]]]] = {
            s: {m: {n: [] for n in names} for m in MODES} for s in sets
        }
        requests: dict[str, dict[str, dict[str, list[dict[str, int]]]]] = {
            s: {m: {n: [] for n in names} for m in MODES} for s in sets
        }
        # Each round takes the next of all the orders of the installers, so that each
        # runs right after each other one equally often.
        orders = list(itertools.permutations(names))
        floors: list[float] = []
        for round_ in range(args.runs):
            for set_name in sets:
                for mode in MODES:
                    for name in orders[round_ % len(orders)]:
                        elapsed, traffic = run(name, set_name, mode)
                        if name == "wheelwise":
                            floors.append(floor_seconds())
                        times[set_name][mode][name].append(elapsed)
                        requests[set_name][mode][name].append(traffic)
        total_s = time.perf_counter() - started

    medians = {
        s: {m: {n: statistics.median(v) for n, v in by.items()} for m, by in modes.items()}
        for s, modes in times.items()
    }
    floor = statistics.median(floors) if floors else None
    ratios: dict[str, dict[str, dict[str, float | None]]] = {}
    for set_name, modes in medians.items():
        ratios[set_name] = {}
        for mode, by in modes.items():
            above_floor = above(by.get("wheelwise"), floor)
            ratios[set_name][mode] = {
                "wheelwise/pip": ratio(by.get("wheelwise"), by.get("pip")),
                "wheelwise/uv": ratio(by.get("wheelwise"), by.get("uv")),
                "wheelwise above the floor/uv": ratio(above_floor, by.get("uv")),
                "uv/pip": ratio(by.get("uv"), by.get("pip")),
            }
    overall: dict[str, dict[str, float | None]] = {}
    for mode in MODES:
        overall[mode] = {}
        for key in RATIOS:
            values = [v for r in ratios.values() if (v := r[mode][key]) is not None]
            overall[mode][key] = statistics.median(values) if values else None
    aims: list[dict[str, Any]] = []
    for mode, key, limit in AIMS:
        value = overall[mode][key]
        aims.append(
            {
                "mode": mode,
                "ratio": key,
                "at_most": limit,
                "overall": value,
                "holds": None if value is None else value <= limit,
            }
        )
    versions = {
        "pip": metadata.version("pip"),
        "uv": tool_version([str(uv), "--version"]),
        "wheelwise": metadata.version("wheelwise"),
    }
    pages = {
        name: sum(len(r.files) for r in project.releases) for name, project in projects.items()
    }
    result = {
        "command": "python bench/pypi_scale.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_info(),
        "versions": versions,
        "scale": args.scale,
        "seed": args.seed,
        "runs": args.runs,
        "files_per_project": pages,
        "releases_per_project": {n: len(p.releases) for n, p in projects.items()},
        "sets": {s: SETS[s] for s in sets},
        # What every set resolves to in the generated data, those not run included.
        "expected": expected,
        "setup_s": setup_s,
        "total_s": total_s,
        "median_s": medians,
        "times_s": times,
        "requests": requests,
        "import_floor_s": floor,
        "ratios": ratios,
        "overall": overall,
        "aims": aims,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"machine: Python {result['machine']['python']}, {cpu_model()}, "
        f"nproc={result['machine']['nproc']}; pip {versions['pip']}, {versions['uv']}, "
        f"wheelwise {versions['wheelwise']}"
    )
    print(
        f"index at scale {args.scale} (seed {args.seed}): "
        + ", ".join(
            f"{n} {len(p.releases)} releases/{pages[n]} files"
            for n, p in projects.items()
            if pages[n] > 500
        )
        + f"; setup {setup_s:.1f} s; {args.runs} run{'s' if args.runs != 1 else ''} each, "
        + f"interleaved; {total_s:.0f} s in all"
    )
    header = f"{'set':<16} {'mode':<5}" + "".join(f" {n + ' s':>12}" for n in names)
    header += f" {'ww/pip':>8} {'ww/uv':>8} {'above/uv':>8} {'uv/pip':>8}"
    print(header)
    for set_name in sets:
        for mode in MODES:
            row = f"{set_name:<16} {mode:<5}"
            row += "".join(f" {medians[set_name][mode][n]:>12.2f}" for n in names)
            row += ratio_cells(ratios[set_name][mode])
            print(row)
    for mode in MODES:
        print(
            f"{'overall (median)':<16} {mode:<5}"
            + " " * 13 * len(names)
            + ratio_cells(overall[mode])
        )
    print(f"import floor (chosen libraries): {show(floor, ' s')}; above/uv: wheelwise above it")
    for aim in aims:
        verdict = {True: "holds", False: "does not hold", None: "not measured"}[aim["holds"]]
        print(
            f"aim: {aim['mode']} {aim['ratio']} <= {aim['at_most']}x: "
            f"{show(aim['overall'])} overall, {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
