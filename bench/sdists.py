"""Benchmark: installing five source-only projects, cold and with built wheels cached,
wheelwise vs uv vs pip.

Setup (untimed): the files are fetched once from the package registry with ``pip
download`` into ``--files DIR`` (default ``~/.cache/wheelwise-bench/sdists``): the
sdists of five projects published as source only (:data:`SDISTS`), and the wheels
their builds and installs need (setuptools, the build backend of all five; six, a
dependency of langdetect). ``wheelwise index build`` makes a static index of them, and
nginx (else ``python -m http.server``) serves it on 127.0.0.1.

Contenders, each installing the five into a new venv made before the clock starts,
with no byte-compilation, timed as whole processes; each builds in isolated
environments, with the build backend from the same index:

* uv: ``uv pip install --python VENV/bin/python`` with ``UV_CACHE_DIR``;
* wheelwise: ``wheelwise install -q --python VENV/bin/python`` with
  ``WHEELWISE_CACHE_DIR``;
* pip: ``VENV/bin/python -m pip install --no-compile`` with ``PIP_CACHE_DIR``.

Per round, each contender in turn (the rounds rotate who goes first): a new empty cache,
then *cold* into a new venv (five builds), then *warm*: the same cache, another new
venv (each keeps the wheels it built by the sdist's hash; nothing is built). Medians of
``--rounds`` (3) after one untimed warm-up round (``--no-warm-up`` skips it), and
ratios. Right after each warm wheelwise run, the import floor is timed three times
(``bench/import_floor.py``'s "chosen libraries": the interpreter starting and importing
the libraries wheelwise is built on, nothing of its own), so that the time above it is
compared with uv's in the same minutes.

Usage::

    PYTHONPATH=$PWD/src .venv/bin/python bench/sdists.py [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import add_warm_up_option, clean_env, installer_paths, machine_info
from gpu_stack import CONTENDERS, Contest, cold_and_warm, serve, timings
from install import ensure_tools

DEFAULT_FILES = Path.home() / ".cache" / "wheelwise-bench" / "sdists"
SDISTS = (
    "docopt==0.6.2",
    "langdetect==1.0.9",
    "antlr4-python3-runtime==4.9.3",
    "pyperclip==1.9.0",
    "sgmllib3k==1.0.0",
)
WHEELS = ("setuptools", "six")
EXPECTED = {"docopt", "langdetect", "antlr4-python3-runtime", "pyperclip", "sgmllib3k", "six"}


def ensure_files(folder: Path) -> list[Path]:
    """The sdists and wheels in *folder*, downloaded once (when it holds no sdist)."""
    if not folder.exists() or not list(folder.glob("*.tar.gz")):
        folder.mkdir(parents=True, exist_ok=True)
        download = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d"]
        subprocess.run([*download, str(folder), "--no-binary=:all:", *SDISTS], check=True)
        subprocess.run([*download, str(folder), "--only-binary=:all:", *WHEELS], check=True)
    return sorted(p for p in folder.iterdir() if p.name.endswith((".tar.gz", ".whl")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=Path, default=DEFAULT_FILES)
    parser.add_argument(
        "--requirement",
        action="append",
        help="what to install from --files, repeatable (default: the five projects; a "
        "smoke run: a small folder, every project named must be installed, and only those)",
    )
    parser.add_argument("--json", action="store_true")
    add_warm_up_option(parser)
    args = parser.parse_args(argv)

    files = ensure_files(args.files)
    wheelwise, uv = installer_paths()
    pip_version = metadata.version("pip")
    ensure_tools(pip_version)
    base = clean_env()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    requirements = args.requirement or [spec.split("==")[0] for spec in SDISTS]
    expected = set(args.requirement) if args.requirement else EXPECTED

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wheelwise-sdists-")))
        site = tmp / "site"
        subprocess.run(
            [str(wheelwise), "index", "build", str(args.files), "-o", str(site)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        url, server = stack.enter_context(serve(site, tmp))
        contest = Contest(tmp, url, uv, wheelwise, pip_version, base, requirements, expected)
        results = cold_and_warm(contest, args.rounds, args.warm_up)
    floor = contest.floor(args.rounds)

    def median(name: str, phase: str) -> float:
        return statistics.median(run.seconds for run in results[name][phase])

    report = {
        "machine": machine_info(),
        "server": server,
        "files": [path.name for path in files],
        "rounds": args.rounds,
        **timings(results),
        "ratios": {
            "wheelwise/pip cold": median("wheelwise", "cold") / median("pip", "cold"),
            "wheelwise/uv cold": median("wheelwise", "cold") / median("uv", "cold"),
            "wheelwise/pip warm": median("wheelwise", "warm") / median("pip", "warm"),
            "wheelwise/uv warm": median("wheelwise", "warm") / median("uv", "warm"),
            "wheelwise above the floor/uv warm": (median("wheelwise", "warm") - floor)
            / median("uv", "warm"),
        },
        "import_floor_s": floor,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{len(files)} files, served by {server}")
    print(f"{'':10} {'cold s':>8} {'warm s':>8} {'peak RSS MB':>12}")
    for name in CONTENDERS:
        print(
            f"{name:10} {median(name, 'cold'):8.2f} {median(name, 'warm'):8.2f} "
            f"{report['peak_rss_mb'][name]:12.0f}"
        )
    print(f"import floor (chosen libraries): {floor:.3f} s")
    for label, value in report["ratios"].items():
        print(f"{label}: {value:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
