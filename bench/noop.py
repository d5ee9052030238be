"""Benchmark: an install with nothing to do, wheelwise vs uv vs pip, index up and down.

What a CI job or a setup script does on every run: install requirements that are all
installed already. Setup (untimed): the 31 pinned wheels of ``bench/install.py``
(``bench/.wheelhouse``, fetched once from the package registry) served by ``wheelwise
index serve`` on 127.0.0.1; each contender installs them once into a venv of its own,
with a cache of its own.

Timed, as whole processes, per round and contender (the rounds rotate who goes
first): the same install again, first with the index up (*up*), then with the index
URL pointing at a port where nothing listens (*down*: a laptop offline, an index
out of service). Every run must exit 0 and leave the venv's ``.dist-info`` folders as
they were.

* uv: ``uv pip install --python VENV/bin/python`` with ``UV_CACHE_DIR``;
* wheelwise: ``wheelwise install -q --python VENV/bin/python`` with
  ``WHEELWISE_CACHE_DIR``;
* pip: ``VENV/bin/python -m pip install --quiet`` with ``PIP_CACHE_DIR``.

Medians of ``--rounds`` (5), after one untimed round (``--no-warm-up`` skips it).

Usage::

    .venv/bin/python bench/noop.py [--rounds 5] [--requirement REQ ...] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import (
    add_warm_up_option,
    clean_env,
    free_port,
    installer_paths,
    machine_info,
    round_orders,
    run_timed,
)
from install import (
    REQUIREMENTS,
    WHEELHOUSE,
    ensure_wheelhouse,
    index_server,
    make_venv,
    site_packages,
    venv_python,
)

CONTENDERS = ("uv", "wheelwise", "pip")
PHASES = ("up", "down")


def command(name: str, python: Path, url: str, cache: Path) -> tuple[list[str], dict[str, str]]:
    """How *name* installs into *python* from *url* with the cache *cache*: the
    arguments before the requirements, and the variables it gets."""
    if name == "uv":
        argv = [str(installer_paths()[1]), "pip", "install", "--python", str(python)]
        return [*argv, "--index-url", url], {"UV_CACHE_DIR": str(cache)}
    if name == "wheelwise":
        argv = [str(installer_paths()[0]), "install", "-q", "--python", str(python)]
        return [*argv, "--index-url", url], {"WHEELWISE_CACHE_DIR": str(cache)}
    argv = [str(python), "-m", "pip", "install", "--quiet", "--index-url", url]
    return argv, {"PIP_CACHE_DIR": str(cache)}


def dist_infos(venv: Path) -> list[str]:
    return sorted(path.name for path in site_packages(venv).glob("*.dist-info"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--requirement",
        action="append",
        help="what to install, repeatable (default: the 31 pinned wheels of install.py)",
    )
    parser.add_argument("--wheels", type=Path, default=WHEELHOUSE)
    parser.add_argument("--json", action="store_true")
    add_warm_up_option(parser)
    args = parser.parse_args(argv)

    pip_version = metadata.version("pip")
    if args.wheels == WHEELHOUSE:
        ensure_wheelhouse(pip_version)
    requirements = args.requirement or REQUIREMENTS
    wheelwise, uv = installer_paths()
    base = clean_env()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    down = f"http://127.0.0.1:{free_port()}/simple/"  # nothing listens there
    times: dict[str, dict[str, list[float]]] = {n: {p: [] for p in PHASES} for n in CONTENDERS}

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wheelwise-noop-")))
        url = stack.enter_context(index_server(wheelwise, args.wheels))
        venvs: dict[str, Path] = {}
        for name in CONTENDERS:
            venv = make_venv(tmp / f"venv-{name}", uv, pip_version if name == "pip" else None, base)
            prefix, extra = command(name, venv_python(venv), url, tmp / f"cache-{name}")
            run_timed([*prefix, *requirements], env={**base, **extra}, cwd=tmp, timeout=600,
                      where=f"{name}'s first install", on_timeout="is the index up?")  # fmt: skip
            venvs[name] = venv
        before = {name: dist_infos(venv) for name, venv in venvs.items()}
        orders = round_orders(CONTENDERS)
        for index in range(args.rounds + (1 if args.warm_up else 0)):
            for name in orders[index % len(orders)]:
                for phase, where in (("up", url), ("down", down)):
                    python = venv_python(venvs[name])
                    prefix, extra = command(name, python, where, tmp / f"cache-{name}")
                    seconds = run_timed(
                        [*prefix, *requirements], env={**base, **extra}, cwd=tmp, timeout=600,
                        where=f"{name} ({phase})", on_timeout="it should have nothing to do",
                    )  # fmt: skip
                    if dist_infos(venvs[name]) != before[name]:
                        raise SystemExit(f"{name} ({phase}) changed the environment")
                    if index > 0 or not args.warm_up:
                        times[name][phase].append(seconds)

    medians = {n: {p: statistics.median(times[n][p]) for p in PHASES} for n in CONTENDERS}
    report = {
        "machine": machine_info(),
        "requirements": len(requirements),
        "rounds": args.rounds,
        "median_s": medians,
        "runs_s": times,
        "ratios": {
            f"wheelwise/{peer} {phase}": medians["wheelwise"][phase] / medians[peer][phase]
            for peer in ("uv", "pip")
            for phase in PHASES
        },
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{len(requirements)} requirements, all installed already")
    print(f"{'':10} {'index up s':>11} {'index down s':>13}")
    for name in CONTENDERS:
        print(f"{name:10} {medians[name]['up']:11.3f} {medians[name]['down']:13.3f}")
    for label, value in report["ratios"].items():
        print(f"{label}: {value:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
