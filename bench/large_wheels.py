"""Benchmark: throughput of installing a few large wheels, wheelwise vs uv vs pip,
against the disk's own write speed.

Setup (each run, untimed): three wheels generated deterministically into a temporary
folder, shaped like a GPU framework and two of its CUDA libraries: ``bigtorch``
(which requires the other two, pinned), ``bigcudnn`` and ``bigcublas``. Together
they hold ``--megabytes`` of large shared-object-like members of incompressible
(seeded random) data, split over nine ``.so`` files of fixed shares, and
``--small-files`` small ``.py`` modules (1 to 8 KiB of text each, mostly in
``bigtorch``, a hundred to a folder). Every member is deflated, as real GPU wheels
are. ``wheelwise index serve`` serves them on 127.0.0.1 (PEP 658 metadata files);
the wheel files are read once so that they are in the OS file cache.

Contenders, each into a new venv made before the clock starts, installing
``bigtorch`` (the other two come as its dependencies), cold caches, no
byte-compilation, timed as whole processes:

* pip: ``VENV/bin/python -m pip install --no-compile --no-cache-dir`` (the venv's
  pip installed untimed, as in ``bench/install.py``);
* uv: ``uv pip install --no-cache --python VENV/bin/python``;
* wheelwise: ``wheelwise install -q --python VENV/bin/python`` with a new, empty
  ``WHEELWISE_CACHE_DIR``;
* disk: the same files (the members' sizes, the same folders) written into a new
  folder beside the venvs with plain ``os.write`` calls, then ``os.sync()``: the
  time to the last write is what the page cache takes (``write``), the time to the
  end of the sync what the disk takes (``write+sync``), the limit.

Protocol: before each timed run, the previous run's venv and caches are deleted,
``os.sync()`` flushes what is dirty, and the script waits ``--pause`` seconds, so
that the disk has settled (an ext4 disk without a journal skips inodes freed in the
last 30 s; see docs/benchmarks.md, "This machine's disk"). Each round runs the four
in the next of their orders, consecutive rounds led by different ones; medians of
``--runs`` (one by default). After every install the venv must hold the three
distributions, every member at its size, and no new ``.pyc`` file. Throughput is
the members' uncompressed bytes over the seconds taken. Everything made is deleted
at the end.

Usage::

    .venv/bin/python bench/large_wheels.py [--megabytes 1000] [--small-files 4000]
        [--pause 35] [--runs 1] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import zipfile
from base64 import urlsafe_b64encode
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import clean_env, installer_paths, machine_info, round_orders, run_timed
from install import (
    count_pyc,
    ensure_tools,
    has_install_command,
    index_server,
    installed,
    make_venv,
    site_packages,
    tool_version,
    venv_python,
)

MB = 1_000_000
CHUNK = 8 * 1024 * 1024
TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Spec:
    """One wheel: its shared objects as shares of the total bytes, its share of the
    small modules, and what it requires."""

    name: str
    version: str
    libraries: tuple[float, ...]
    small_share: float
    requires: tuple[str, ...] = ()


# Shares loosely after torch, cudnn and cublas wheels: one library of nearly half
# the bytes, a few of some tens of MB, thousands of small modules in the framework.
SPECS = (
    Spec(
        "bigtorch",
        "2.9.0",
        (0.38, 0.12, 0.05, 0.02),
        0.8,
        ("bigcudnn==9.10.2", "bigcublas==12.9.1"),
    ),
    Spec("bigcudnn", "9.10.2", (0.22, 0.08, 0.03), 0.1),
    Spec("bigcublas", "12.9.1", (0.07, 0.03), 0.1),
)
NAMES = {spec.name for spec in SPECS}


def record_hash(digest: bytes) -> str:
    return "sha256=" + urlsafe_b64encode(digest).rstrip(b"=").decode()


def module_text(rng: random.Random, index: int) -> bytes:
    """A small module of 1 to 8 KiB of Python text."""
    size = rng.randint(1024, 8192)
    line = f"def f_{index}(x):\n    return x * {index} + {rng.randint(0, 10**6)}\n\n"
    return (f'"""module {index}."""\n\n' + line * (size // len(line) + 1)).encode()[:size]


def members(spec: Spec, total: int, small: int, rng: random.Random) -> Iterator[tuple[str, Any]]:
    """The wheel's members in order: (path, bytes) for small ones, (path, size) for
    a shared object whose bytes come from *rng* as it is written."""
    yield f"{spec.name}/__init__.py", f"VERSION = {spec.version!r}\n".encode()
    for i, share in enumerate(spec.libraries):
        yield f"{spec.name}/lib/lib{spec.name}_{i}.so", int(total * share)
    for i in range(int(small * spec.small_share)):
        yield f"{spec.name}/part{i // 100:03d}/m{i:05d}.py", module_text(rng, i)


def write_wheel(directory: Path, spec: Spec, total: int, small: int, seed: int) -> dict[str, int]:
    """The wheel of *spec* into *directory*; returns its members' sizes by path."""
    rng = random.Random(f"{seed}-{spec.name}")
    dist_info = f"{spec.name}-{spec.version}.dist-info"
    path = directory / f"{spec.name}-{spec.version}-py3-none-any.whl"
    sizes: dict[str, int] = {}
    rows: list[str] = []
    date = (2020, 1, 1, 0, 0, 0)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:

        def put(name: str, data: bytes) -> None:
            archive.writestr(zipfile.ZipInfo(name, date), data, zipfile.ZIP_DEFLATED)
            sizes[name] = len(data)
            rows.append(f"{name},{record_hash(hashlib.sha256(data).digest())},{len(data)}")

        for name, content in members(spec, total, small, rng):
            if isinstance(content, bytes):
                put(name, content)
                continue
            info = zipfile.ZipInfo(name, date)
            info.compress_type = zipfile.ZIP_DEFLATED
            digest = hashlib.sha256()
            with archive.open(info, "w", force_zip64=content > 2**31) as member:
                left = content
                while left:
                    block = rng.randbytes(min(CHUNK, left))
                    member.write(block)
                    digest.update(block)
                    left -= len(block)
            sizes[name] = content
            rows.append(f"{name},{record_hash(digest.digest())},{content}")
        head = f"Metadata-Version: 2.1\nName: {spec.name}\nVersion: {spec.version}\n"
        requires = "".join(f"Requires-Dist: {r}\n" for r in spec.requires)
        put(f"{dist_info}/METADATA", (head + requires).encode())
        put(
            f"{dist_info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        record = "\n".join([*rows, f"{dist_info}/RECORD,,"]) + "\n"
        archive.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", date), record.encode())
    return sizes


def write_disk_probe(folder: Path, sizes: dict[str, int]) -> tuple[float, float]:
    """Write files of *sizes* (by relative path) under *folder*, then sync; the
    seconds to the last write and to the end of the sync."""
    block = random.Random(0).randbytes(CHUNK)
    start = time.perf_counter()
    made: set[Path] = set()
    for name, size in sizes.items():
        path = folder / name
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            left = size
            while left:
                left -= os.write(fd, block[: min(CHUNK, left)])
        finally:
            os.close(fd)
    written = time.perf_counter() - start
    os.sync()
    return written, time.perf_counter() - start


def check_install(name: str, venv: Path, sizes: dict[str, int], pyc_before: int) -> None:
    """Stop the benchmark unless *venv* holds the three distributions, every member
    at its size, and no new ``.pyc`` file."""
    got = installed(venv)
    if got != NAMES:
        raise SystemExit(f"{name}: missing {sorted(NAMES - got)}, unexpected {sorted(got - NAMES)}")
    root = site_packages(venv)
    for member, size in sizes.items():
        if member.endswith("/RECORD"):
            continue
        path = root / member
        if not path.is_file() or path.stat().st_size != size:
            raise SystemExit(f"{name}: {member} missing or not {size} bytes")
    if count_pyc(venv) != pyc_before:
        raise SystemExit(f"{name} byte-compiled {count_pyc(venv) - pyc_before} files")


def settle(pause: float, *leftovers: Path) -> None:
    """Delete *leftovers*, flush what is dirty, and wait *pause* seconds."""
    for path in leftovers:
        shutil.rmtree(path, ignore_errors=True)
    os.sync()
    time.sleep(pause)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="large wheels: throughput vs uv, pip, disk")
    parser.add_argument("--megabytes", type=float, default=1000.0, help="bytes in shared objects")
    parser.add_argument("--small-files", type=int, default=4000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--pause",
        type=float,
        default=35.0,
        metavar="SECONDS",
        help="wait this long (after deleting the last run's files and a sync) before "
        "each timed run; 35 lets an ext4 disk without a journal settle",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where to work (default: TMPDIR)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs: at least 1")

    wheelwise, uv = installer_paths()
    if not has_install_command(wheelwise):
        raise SystemExit("this wheelwise has no `install` command")
    pip_version = metadata.version("pip")
    ensure_tools(pip_version)
    base_env = clean_env()
    total = int(args.megabytes * MB)

    with contextlib.ExitStack() as stack:
        tmp = Path(
            stack.enter_context(
                tempfile.TemporaryDirectory(prefix="wheelwise-bench-large-", dir=args.dir)
            )
        )
        wheels = tmp / "wheels"
        wheels.mkdir()
        started = time.perf_counter()
        sizes: dict[str, int] = {}
        for spec in SPECS:
            sizes |= write_wheel(wheels, spec, total, args.small_files, args.seed)
        generate_s = time.perf_counter() - started
        wheel_bytes = sum(path.stat().st_size for path in wheels.iterdir())
        for path in wheels.iterdir():  # into the OS file cache
            with path.open("rb") as file:
                while file.read(CHUNK):
                    pass
        member_bytes = sum(sizes.values())
        index_url = stack.enter_context(index_server(wheelwise, wheels))
        counter = iter(range(10**6))
        previous: list[Path] = []  # the last run's venv, caches or files

        def settled(*made: Path) -> None:
            """Settle the disk before a run that will leave *made* behind."""
            settle(args.pause, *previous)
            previous[:] = made

        def install(
            name: str, pip: bool, command: Callable[[Path], list[str]], env: dict[str, str]
        ) -> float:
            venv = tmp / f"venv-{next(counter)}"
            make_venv(venv, uv, pip_version if pip else None, base_env)
            before = count_pyc(venv)
            cache = Path(env.get("WHEELWISE_CACHE_DIR", venv))
            settled(venv, cache)
            seconds = run_timed(
                command(venv), env=env, cwd=tmp, timeout=TIMEOUT_S, where=name,
                on_timeout="stopped",
            )  # fmt: skip
            check_install(name, venv, sizes, before)
            return seconds

        def run_pip() -> float:
            return install(
                "pip",
                True,
                lambda venv: [
                    str(venv_python(venv)), "-m", "pip", "install", "--quiet", "--no-compile",
                    "--no-cache-dir", "--index-url", index_url, "bigtorch",
                ],
                base_env,
            )  # fmt: skip

        def run_uv() -> float:
            return install(
                "uv",
                False,
                lambda venv: [
                    str(uv), "pip", "install", "--quiet", "--no-cache", "--index-url", index_url,
                    "--python", str(venv_python(venv)), "bigtorch",
                ],
                base_env,
            )  # fmt: skip

        def run_wheelwise() -> float:
            cache = tmp / f"cache-{next(counter)}"
            return install(
                "wheelwise",
                False,
                lambda venv: [
                    str(wheelwise), "install", "-q", "--index-url", index_url,
                    "--python", str(venv_python(venv)), "bigtorch",
                ],
                {**base_env, "WHEELWISE_CACHE_DIR": str(cache)},
            )  # fmt: skip

        probe_written: list[float] = []

        def run_disk() -> float:
            folder = tmp / f"disk-{next(counter)}"
            settled(folder)
            written, synced = write_disk_probe(folder, sizes)
            probe_written.append(written)
            return synced

        contenders: dict[str, Callable[[], float]] = {
            "disk": run_disk,
            "pip": run_pip,
            "uv": run_uv,
            "wheelwise": run_wheelwise,
        }
        times: dict[str, list[float]] = {name: [] for name in contenders}
        orders = round_orders(list(contenders))
        for round_ in range(args.runs):
            for name in orders[round_ % len(orders)]:
                times[name].append(contenders[name]())
        settle(0, *previous)

    medians = {name: statistics.median(values) for name, values in times.items()}
    medians["disk (write only)"] = statistics.median(probe_written)
    throughput = {name: member_bytes / MB / seconds for name, seconds in medians.items()}
    result: dict[str, Any] = {
        "command": "python bench/large_wheels.py " + " ".join(argv or sys.argv[1:]),
        "machine": machine_info(),
        "versions": {
            "pip": pip_version,
            "uv": tool_version([str(uv), "--version"]),
            "wheelwise": metadata.version("wheelwise"),
        },
        "wheels": len(SPECS),
        "wheel_bytes": wheel_bytes,
        "member_bytes": member_bytes,
        "files": len(sizes),
        "generate_s": generate_s,
        "runs": args.runs,
        "pause_s": args.pause,
        "median_s": medians,
        "times_s": times,
        "mb_per_s": throughput,
        "of_disk_limit": {
            name: throughput[name] / throughput["disk"] for name in ("pip", "uv", "wheelwise")
        },
        "ratios": {
            "wheelwise/uv": medians["wheelwise"] / medians["uv"],
            "wheelwise/pip": medians["wheelwise"] / medians["pip"],
            "uv/pip": medians["uv"] / medians["pip"],
        },
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    machine = result["machine"]
    versions = result["versions"]
    print(
        f"machine: Python {machine['python']}, {machine['cpu']}, nproc={machine['nproc']}; "
        f"pip {versions['pip']}, {versions['uv']}, wheelwise {versions['wheelwise']}"
    )
    print(
        f"{len(SPECS)} wheels, {wheel_bytes / MB:.0f} MB of wheels, {member_bytes / MB:.0f} MB "
        f"in {len(sizes)} files; {args.runs} run(s) each, --pause {args.pause:g}"
    )
    print(f"{'contender':<18} {'median s':>9} {'MB/s':>8}")
    for name, seconds in medians.items():
        print(f"{name:<18} {seconds:>9.2f} {throughput[name]:>8.0f}")
    for name, share in result["of_disk_limit"].items():
        print(f"{name}: {share:.2f} of the disk's write+sync speed")
    for name, ratio in result["ratios"].items():
        print(f"{name}: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
