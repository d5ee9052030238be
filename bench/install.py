"""Benchmark: installing ~30 real wheels into fresh venvs, wheelwise vs pip vs uv.

Setup (once): ``pip download --only-binary=:all:`` fetches the pinned wheels of
``REQUIREMENTS`` (31 distributions, a closed set: every dependency is pinned too)
from the package registry into ``bench/.wheelhouse`` (skipped when they are there),
with the current pip under the current interpreter, whose Python every target venv
uses. Each run of the script then serves them on 127.0.0.1 with ``wheelwise index
serve`` (uvicorn; PEP 691 JSON or PEP 503 HTML as asked, PEP 658 metadata files),
or with ``--server static``, ``wheelwise index build`` to a static site served by
``python -m http.server``; ``--server file`` reads that static site as a ``file://``
index (no server process: the installers' own cost). Prefer ``serve`` for HTTP:
http.server answers each request on a new HTTP/1.0 connection, which costs uv about
2 s more here (its resolution takes 1.8 s instead of 0.1 s) and distorts the
comparison.

Timed, as whole processes, interleaved (each round in the next of all the orders of
the installers, consecutive rounds led by different ones: use a multiple of 6 runs,
24 with ``--set variants``), median of N runs (plus one untimed warm-up
round that fills the OS file cache), each into a new venv made before the clock
starts, with cold caches and no byte-compilation:

* pip: ``VENV/bin/python -m pip install --no-compile --no-cache-dir`` (the venv gets
  the same pip version as this environment's, byte-compiled as ``ensurepip`` leaves
  it, installed untimed from a local wheel);
* uv: ``uv pip install --no-cache --python VENV/bin/python`` (uv does not compile
  by default);
* wheelwise: ``wheelwise install -q --python VENV/bin/python`` with a new, empty
  ``WHEELWISE_CACHE_DIR`` (HTTP cache and detection cache) on every run. Skipped,
  with a note, when this wheelwise has no ``install`` command.

After every timed run the venv must hold exactly the expected distributions, and
no new ``.pyc`` file. Right after each wheelwise run, the import floor is timed three
times (``bench/import_floor.py``'s "chosen libraries": the interpreter starting and
importing the libraries wheelwise is built on, nothing of its own), so that the time
above it is compared with uv's in the same minutes.

``--set variants`` installs ``faketorch fakesimd`` from the torch-like variant wheels
of ``bench/variant_house.py`` instead, generated into a temporary folder with PEP 850
documents that name the reference provider plugins (which uv 0.13.9 reimplements),
on a simulated machine: a CUDA 13.0 driver and a GPU of compute capability 9.0
through ``NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION`` and
``NV_VARIANT_PROVIDER_FORCE_SM_ARCH`` (the x86-64 level is this CPU's: neither uv
nor the reference provider has a variable for it). uv runs with ``--preview-features
wheel-variants``. uv 0.13.9 cannot parse variant markers, so the CUDA builds of that
index require ``fakecublas`` plainly; ``wheelwise-markers`` installs from a second
index whose CUDA builds say ``fakecublas; "nvidia" in variant_namespaces``. After
every run, uv and both wheelwise rows must have installed ``faketorch`` ``cu130``,
``fakecublas`` and the same ``fakesimd`` build as every other such run; pip, which
ignores variant wheels, the non-variant builds without ``fakecublas`` (a reference,
not the same work).

Usage::

    .venv/bin/python bench/install.py [--set wheelhouse|variants] [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import variant_house
from benchkit import (
    add_warm_up_option,
    bin_dir,
    clean_env,
    copy_tree,
    cpu_model,
    free_port,
    installer_paths,
    round_orders,
)
from import_floor import floor_seconds

ROOT = Path(__file__).resolve().parent.parent
WHEELHOUSE = ROOT / "bench" / ".wheelhouse"
TOOLS = WHEELHOUSE / "tools"

# Resolved together for CPython 3.11 on manylinux x86-64; the top-level packages are
# requests, rich, jsonschema, httpx, pydantic, python-dateutil, pytz, pyyaml, jinja2,
# click, packaging (and tzdata), the rest are their dependencies.
REQUIREMENTS = [
    "annotated-types==0.8.0",
    "anyio==4.16.0",
    "attrs==26.1.0",
    "certifi==2026.10.18",
    "charset-normalizer==3.5.2",
    "click==8.5.1",
    "h11==0.16.0",
    "httpcore==1.0.9",
    "httpx==0.28.1",
    "idna==3.20",
    "jinja2==3.1.6",
    "jsonschema==4.26.0",
    "jsonschema-specifications==2025.9.1",
    "markdown-it-py==4.3.0",
    "markupsafe==3.0.4",
    "mdurl==0.1.2",
    "packaging==26.3",
    "pydantic==2.14.3",
    "pydantic-core==2.50.4",
    "pygments==2.21.0",
    "python-dateutil==4.0.0",
    "pytz==2026.6",
    "pyyaml==6.0.3",
    "referencing==0.37.0",
    "requests==2.34.2",
    "rich==15.0.0",
    "rpds-py==2026.9.1",
    "typing-extensions==4.16.0",
    "typing-inspection==0.4.5",
    "tzdata==2026.6",
    "urllib3==2.8.0",
]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


EXPECTED = {canonical(req.split("==")[0]) for req in REQUIREMENTS}


def venv_python(venv: Path) -> Path:
    return bin_dir(venv) / ("python.exe" if os.name == "nt" else "python")


def wheel_names(directory: Path) -> set[str]:
    return {canonical(path.name.split("-")[0]) for path in directory.glob("*.whl")}


_DOWNLOAD = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:"]


def ensure_tools(pip_version: str) -> None:
    """Download pip's wheel (for the pip venvs) once; a no-op when present."""
    if "pip" not in wheel_names(TOOLS):
        subprocess.run(
            [*_DOWNLOAD, "--no-deps", "-d", str(TOOLS), f"pip=={pip_version}"], check=True
        )


def ensure_wheelhouse(pip_version: str) -> None:
    """Download the wheels (and pip, for the pip venvs) once; a no-op when present."""
    ensure_tools(pip_version)
    if wheel_names(WHEELHOUSE) >= EXPECTED:
        return
    subprocess.run([*_DOWNLOAD, "-d", str(WHEELHOUSE), *REQUIREMENTS], check=True)
    missing = EXPECTED - wheel_names(WHEELHOUSE)
    if missing:
        raise SystemExit(f"bench/install.py: not downloaded: {', '.join(sorted(missing))}")


@contextlib.contextmanager
def static_server(site: Path) -> Iterator[str]:
    """``python -m http.server`` on SITE; yields the index URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=site,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/simple/"
    try:
        wait_for(url, process)
        yield url
    finally:
        process.terminate()
        process.wait()


@contextlib.contextmanager
def index_server(wheelwise: Path, directory: Path = WHEELHOUSE) -> Iterator[str]:
    """``wheelwise index serve`` on *directory* (the wheelhouse); yields the index URL."""
    port = free_port()
    process = subprocess.Popen(
        [str(wheelwise), "index", "serve", str(directory), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/simple/"
    try:
        wait_for(url, process)
        yield url
    finally:
        process.terminate()
        process.wait()


def wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 15
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise
            time.sleep(0.05)


def site_packages(venv: Path) -> Path:
    (path,) = venv.glob("lib/python*/site-packages") if os.name != "nt" else [venv / "Lib"]
    return path / "site-packages" if os.name == "nt" else path


def installed(venv: Path) -> set[str]:
    return {
        canonical(path.name.split("-")[0])
        for path in site_packages(venv).glob("*.dist-info")
        if canonical(path.name.split("-")[0]) not in {"pip"}
    }


def count_pyc(venv: Path) -> int:
    """``.pyc`` files of the installed packages (pip's own are not counted)."""
    root = site_packages(venv)
    return sum(1 for path in root.rglob("*.pyc") if path.relative_to(root).parts[0] != "pip")


# (uv, pip version, folder) -> a venv with that pip in it, which the others copy.
_PIP_VENVS: dict[tuple[Path, str, Path], Path] = {}


def make_venv(venv: Path, uv: Path, pip_version: str | None, env: dict[str, str]) -> Path:
    """A new venv at *venv* without pip, or with *pip_version* installed from
    ``TOOLS`` and byte-compiled, as ``ensurepip`` leaves it (untimed). The first venv
    with pip in a folder is made so and kept; the next ones are copies of it, the same
    files made faster (the installers run ``python -m pip``, so the copied ``bin/pip``
    scripts, which name the first venv's Python, are never used)."""
    if pip_version is None:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        return venv
    key = (uv, pip_version, venv.parent)
    template = _PIP_VENVS.get(key)
    if template is None:
        template = venv.parent / f"venv-with-pip-{pip_version}"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(template)], check=True)
        subprocess.run(
            [
                str(uv), "pip", "install", "--quiet", "--compile-bytecode", "--no-index",
                "--find-links", str(TOOLS), "--python", str(venv_python(template)),
                f"pip=={pip_version}",
            ],
            check=True,
            env=env,
        )  # fmt: skip
        _PIP_VENVS[key] = template
    copy_tree(template, venv)
    return venv


def has_install_command(wheelwise: Path) -> bool:
    result = subprocess.run([str(wheelwise), "install", "--help"], capture_output=True, check=False)
    return result.returncode == 0


def tool_version(argv: list[str]) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    return result.stdout.strip().splitlines()[0]


# The simulated machine of the ``variants`` set: a CUDA 13.0 driver and one GPU of
# compute capability 9.0 (an H100), through the NVIDIA reference provider's variables,
# which uv and wheelwise both honour. Neither uv nor the x86-64 reference provider has
# a variable for the CPU: the x86-64 level is this machine's for both.
MACHINE = {
    "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "13.0",
    "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0",
}
# uv 0.13.9 cannot parse a variant marker (``"nvidia" in variant_namespaces``): metadata
# holding one is invalid to it and the package cannot be installed. The set all
# installers read gives the CUDA builds a plain ``Requires-Dist: fakecublas`` instead
# (each build's own METADATA, the same outcome); the marker form is a second index,
# installed by ``wheelwise-markers`` only.
PLAIN_GATE = "fakecublas"
SETS = ("wheelhouse", "variants")


@dataclass(frozen=True)
class Workload:
    """What one set installs, and what each installer must leave in the venv."""

    requirements: list[str]
    folders: dict[str, Path]  # index name -> wheel folder
    distributions: dict[str, set[str]]  # installer -> distributions it must install
    env: dict[str, str]  # added to every installer's environment
    chooses_variants: frozenset[str] = frozenset()  # installers that must pick variants


def make_workload(name: str, tmp: Path, pip_version: str) -> Workload:
    if name == "wheelhouse":
        ensure_wheelhouse(pip_version)
        every = {"pip": EXPECTED, "uv": EXPECTED, "wheelwise": EXPECTED}
        return Workload(REQUIREMENTS, {"plain": WHEELHOUSE}, every, {})
    ensure_tools(pip_version)
    plain, markers = tmp / "variant-wheels", tmp / "variant-wheels-markers"
    variant_house.write_house(plain, providers=True, gated=PLAIN_GATE)
    variant_house.write_house(markers, providers=True)
    full = variant_house.DISTRIBUTIONS
    distributions = {
        "pip": variant_house.WITHOUT_GATED,
        "uv": full,
        "wheelwise": full,
        "wheelwise-markers": full,
    }
    return Workload(
        variant_house.REQUIREMENTS,
        {"plain": plain, "markers": markers},
        distributions,
        MACHINE,
        frozenset({"uv", "wheelwise", "wheelwise-markers"}),
    )


class Picks:
    """The builds of the variant projects each run left, checked as they come: an
    installer that chooses variants must pick ``cu130`` for faketorch on the
    simulated machine, and every such run the same build of every project as the
    first; pip must take the non-variant builds."""

    def __init__(self, choosers: frozenset[str]) -> None:
        self.choosers = choosers
        self.agreed: dict[str, str | None] | None = None
        self.seen: dict[str, dict[str, str | None]] = {}

    def check(self, name: str, venv: Path) -> None:
        if not self.choosers:
            return
        got = variant_house.builds(site_packages(venv))
        self.seen[name] = got
        if name not in self.choosers:
            if got != variant_house.PLAIN_BUILDS:
                raise SystemExit(f"{name} installed {got}, not the non-variant builds")
            return
        if got.get("faketorch") != "cu130":
            raise SystemExit(f"{name} installed {got}: faketorch should be cu130 here")
        if self.agreed is None:
            self.agreed = got
        elif got != self.agreed:
            raise SystemExit(f"{name} installed {got}, another installer {self.agreed}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="wheelwise install vs pip vs uv")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--set",
        choices=SETS,
        default="wheelhouse",
        help="wheelhouse: the 31 real wheels (default); variants: generated CUDA and "
        "x86-64 level variants on a simulated machine, uv with its wheel-variants preview",
    )
    parser.add_argument(
        "--server",
        choices=["serve", "static", "file"],
        default="serve",
        help="serve: `wheelwise index serve` (default); static: a static site served by "
        "`python -m http.server`; file: the static site as a file:// index",
    )
    parser.add_argument(
        "--pause",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="wait this long before each timed run, so that the files the previous "
        "installer deleted no longer slow this one's file creation (35 is enough on an "
        "ext4 disk without a journal, which skips inodes freed in the last 30 s)",
    )
    parser.add_argument("--json", action="store_true")
    add_warm_up_option(parser)
    args = parser.parse_args(argv)

    wheelwise, uv = installer_paths()
    pip_version = metadata.version("pip")
    base_env = clean_env()

    with_wheelwise = has_install_command(wheelwise)
    notes: list[str] = []
    if not with_wheelwise:
        notes.append("wheelwise row skipped: this wheelwise has no `install` command yet")

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wheelwise-bench-")))
        work = make_workload(args.set, tmp, pip_version)
        env = {**base_env, **work.env}
        urls: dict[str, str] = {}
        for index, folder in work.folders.items():
            if args.server == "serve":
                urls[index] = stack.enter_context(index_server(wheelwise, folder))
                continue
            site = tmp / f"site-{index}"
            subprocess.run(
                [str(wheelwise), "index", "build", str(folder), "-o", str(site)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            if args.server == "static":
                urls[index] = stack.enter_context(static_server(site))
            else:
                urls[index] = (site / "simple").as_uri() + "/"
        counter = iter(range(10**6))
        picks = Picks(work.chooses_variants)

        def new_venv(with_pip: bool) -> Path:
            venv = tmp / f"venv-{next(counter)}"
            return make_venv(venv, uv, pip_version if with_pip else None, base_env)

        def timed(name: str, venv: Path, command: list[str], env: dict[str, str]) -> float:
            before = count_pyc(venv)
            time.sleep(args.pause)
            start = time.perf_counter()
            result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            elapsed = time.perf_counter() - start
            if result.returncode != 0:
                raise SystemExit(f"{name} failed ({result.returncode}):\n{result.stderr}")
            got, expected = installed(venv), work.distributions[name]
            if got != expected:
                raise SystemExit(
                    f"{name}: missing {sorted(expected - got)}, unexpected {sorted(got - expected)}"
                )
            if count_pyc(venv) != before:
                raise SystemExit(f"{name} byte-compiled {count_pyc(venv) - before} files")
            picks.check(name, venv)
            # Venvs are kept until the end: deleting one here made the next contender's
            # file creations several times slower on a disk mounted with `discard`.
            return elapsed

        def run_pip() -> float:
            venv = new_venv(with_pip=True)
            command = [
                str(venv_python(venv)), "-m", "pip", "install", "--quiet", "--no-compile",
                "--no-cache-dir", "--index-url", urls["plain"], *work.requirements,
            ]  # fmt: skip
            return timed("pip", venv, command, env)

        def run_uv() -> float:
            venv = new_venv(with_pip=False)
            command = [
                str(uv), "pip", "install", "--quiet", "--no-cache", "--index-url",
                urls["plain"], "--python", str(venv_python(venv)), *work.requirements,
            ]  # fmt: skip
            if work.chooses_variants:
                command[3:3] = ["--preview-features", "wheel-variants"]
            return timed("uv", venv, command, env)

        floors: list[float] = []

        def wheelwise_run(name: str, index: str) -> Callable[[], float]:
            def run() -> float:
                venv = new_venv(with_pip=False)
                cache = tmp / f"cache-{next(counter)}"
                command = [
                    str(wheelwise), "install", "-q", "--index-url", urls[index],
                    "--python", str(venv_python(venv)), *work.requirements,
                ]  # fmt: skip
                elapsed = timed(name, venv, command, {**env, "WHEELWISE_CACHE_DIR": str(cache)})
                floors.append(floor_seconds())
                return elapsed

            return run

        contenders: dict[str, Callable[[], float]] = {"pip": run_pip, "uv": run_uv}
        if with_wheelwise:
            contenders["wheelwise"] = wheelwise_run("wheelwise", "plain")
            if "markers" in urls:
                contenders["wheelwise-markers"] = wheelwise_run("wheelwise-markers", "markers")
        for run in contenders.values() if args.warm_up else ():
            run()  # warm-up: OS file cache, installers' bytecode
        floors.clear()  # the timed rounds' only
        times: dict[str, list[float]] = {name: [] for name in contenders}
        # Each round takes the next of all the orders of the installers, consecutive
        # rounds led by different ones, so that each runs right after each other one
        # as often: on this machine's disk, an installer that deletes thousands of
        # files at its end (uv's temporary cache) slows the file creation of whichever
        # runs next.
        orders = round_orders(list(contenders))
        for round_ in range(args.runs):
            for name in orders[round_ % len(orders)]:
                times[name].append(contenders[name]())

    medians = {name: statistics.median(values) for name, values in times.items()}
    floor = statistics.median(floors) if floors else None
    ratios: dict[str, float] = {}
    for name in ("wheelwise", "wheelwise-markers"):
        if name in medians:
            ratios[f"{name}/uv"] = medians[name] / medians["uv"]
            ratios[f"{name}/pip"] = medians[name] / medians["pip"]
            if floor is not None:
                ratios[f"{name} above the floor/uv"] = (medians[name] - floor) / medians["uv"]
    ratios["uv/pip"] = medians["uv"] / medians["pip"]
    aims = {"wheelwise/uv": 1.0} if args.set == "variants" else {"wheelwise/uv": 1.5}
    aims["wheelwise above the floor/uv"] = 1.5
    if args.set == "wheelhouse":
        aims["wheelwise/pip"] = 0.5
    else:
        notes.append(
            "pip installs the non-variant builds (no fakecublas): its row is a reference, "
            "not the same work"
        )
    versions = {
        "pip": pip_version,
        "uv": tool_version([str(uv), "--version"]),
        "wheelwise": metadata.version("wheelwise"),
    }
    result = {
        "command": "python bench/install.py " + " ".join(argv or sys.argv[1:]),
        "machine": {
            "python": sys.version.split()[0],
            "cpu": cpu_model(),
            "nproc": os.cpu_count(),
        },
        "versions": versions,
        "set": args.set,
        "distributions": len(work.distributions["uv"]),
        "runs": args.runs,
        "server": args.server,
        "pause_s": args.pause,
        "simulated_machine": work.env,
        "builds": picks.seen,
        "median_s": medians,
        "times_s": times,
        "min_s": {name: min(values) for name, values in times.items()},
        "import_floor_s": floor,
        "ratios": ratios,
        "aims": {
            f"{ratio} <= {limit}x": ratios[ratio] <= limit
            for ratio, limit in aims.items()
            if ratio in ratios
        },
        "notes": notes,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"machine: Python {result['machine']['python']}, {result['machine']['cpu']}, "
        f"nproc={result['machine']['nproc']}; pip {versions['pip']}, {versions['uv']}, "
        f"wheelwise {versions['wheelwise']}"
    )
    print(
        f"set {args.set}: {result['distributions']} distributions from a local index "
        f"({args.server}) into fresh venvs; {args.runs} runs each, interleaved"
    )
    for name, found in picks.seen.items():
        print(f"{name} installed: {', '.join(f'{k} {v}' for k, v in sorted(found.items()))}")
    print(f"{'installer':<18} {'median s':>9} {'min s':>8}")
    for name in contenders:
        print(f"{name:<18} {medians[name]:>9.2f} {result['min_s'][name]:>8.2f}")
    if floor is not None:
        print(f"import floor (chosen libraries): {floor:.3f} s")
    for name, ratio in ratios.items():
        print(f"{name}: {ratio:.2f}x")
    for aim, met in result["aims"].items():
        print(f"aim {aim}: {'met' if met else 'not met'}")
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
