"""Benchmark: a full static index of 2,000 wheels, wheelwise vs simple503 and
dumb-pypi; and adding 10 wheels to a site already built.

The folder: 2,000 ordinary wheels generated from a seed (:mod:`wheelset`: about 150
projects, several releases each, full METADATA). Each tool runs on that same
folder, as whole processes, interleaved, median of ``--runs``; every output is
kept until the end (this machine's disk pays for files created next to files
just deleted, see docs/benchmarks.md):

* ``wheelwise index build WHEELS -o SITE`` into a new SITE: PEP 503 and PEP 691
  pages, a sha256 for every file, a PEP 658 metadata file per wheel, the wheels
  hard-linked into the site;
* ``simple503 -e DIR`` (0.4.0, its own venv) on a hard-linked copy of the folder
  made untimed: it writes in place (PEP 503 pages, sha256 hashes, PEP 658
  metadata files), so it places no file and writes no JSON page;
* dumb-pypi (1.15.0, its own venv) renders pages from a package list and never
  opens a wheel. "full": ``bench/dumb_pypi_list.py`` (hashes every wheel, writes
  its metadata file, links it into the site) then ``dumb-pypi
  --package-list-json LIST --no-per-release-json --no-generate-timestamp``;
  "pages only": dumb-pypi alone, from a list made untimed.

Then the incremental case: a site of the 2,000 wheels built untimed, 10 more
wheels added to the folder (new releases of six projects, four new projects),
and ``wheelwise index build`` again, timed; the updated site must equal, byte for
byte, a full build of the folder.

``generate`` and ``write_wheel`` also make the variant wheels of bench/serve.py.

Usage::

    .venv/bin/python bench/index_build.py [--runs 5] [--wheels 2000] [--dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

PROJECTS = 20
VERSIONS = 10
SM = ["50_real", "60_real", "70_real", "75_real", "80_real", "86_real", "90_real", "100_real"]
CUDA = ["11.8", "12.0", "12.4", "12.6", "12.8", "13.0"]
LEVELS = ["v2", "v3", "v4"]


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def variant_json(label: str, properties: dict[str, dict[str, list[str]]]) -> bytes:
    document = {
        "$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
        "default-priorities": {"namespace": ["nvidia", "x86_64"]},
        "providers": {
            "nvidia": {"requires": ["nvidia-variant-provider"]},
            "x86_64": {"requires": ["provider-variant-x86-64"]},
        },
        "variants": {label: properties},
    }
    return json.dumps(document, indent=2).encode()


def write_wheel(
    directory: Path,
    name: str,
    version: str,
    label: str | None,
    props: bytes | None,
    *,
    requires: Sequence[str] = (),
    files: Mapping[str, bytes] | None = None,
    deflate: bool = False,
    metadata: str | None = None,
    tag: str = "py3-none-any",
) -> Path:
    """A wheel of *name* *version*: a variant wheel labelled *label* whose
    ``variant.json`` is *props*, or a non-variant wheel when *label* is None. Its
    METADATA lists *requires* as ``Requires-Dist``, or is *metadata* when given;
    *files* replace the package's one module (``NAME/__init__.py``) when given.
    Members are stored, or deflated with *deflate*."""
    dist_info = f"{name}-{version}.dist-info"
    if metadata is None:
        metadata = (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Python: >=3.9\n"
            + "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
        )
    members = dict(files) if files is not None else {}
    if not members:
        members[f"{name}/__init__.py"] = f"VERSION = {version!r}\n".encode()
    members[f"{dist_info}/METADATA"] = metadata.encode()
    purelib = str(tag.endswith("-any")).lower()
    members[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: {purelib}\nTag: {tag}\n".encode()
    )
    if props is not None:
        members[f"{dist_info}/variant.json"] = props
    rows = [f"{path},{record_hash(data)},{len(data)}" for path, data in members.items()]
    members[f"{dist_info}/RECORD"] = ("\n".join([*rows, f"{dist_info}/RECORD,,"]) + "\n").encode()
    suffix = f"-{label}" if label is not None else ""
    path = directory / f"{name}-{version}-{tag}{suffix}.whl"
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(zipfile.ZipInfo(member, (2020, 1, 1, 0, 0, 0)), data, method)
    return path


def generate(directory: Path, seed: int = 825) -> int:
    rng = random.Random(seed)
    count = 0
    for p in range(PROJECTS):
        name = f"bench_pkg{p:02d}"
        for v in range(VERSIONS):
            version = f"1.{v}.0"
            labels: dict[str, dict[str, dict[str, list[str]]]] = {"null": {}}
            seen: set[str] = set()
            while len(labels) < 10:
                if rng.random() < 0.7:
                    cuda = rng.choice(CUDA)
                    archs = sorted(rng.sample(SM, rng.randint(1, 5)))
                    label = f"cu{cuda.replace('.', '')}_{len(labels)}"
                    props = {"nvidia": {"cuda_version_lower_bound": [cuda], "sm_arch": archs}}
                else:
                    level = rng.choice(LEVELS)
                    label = f"x86_64_{level}_{len(labels)}"
                    props = {"x86_64": {"level": [level]}}
                # One label per property set, as PEP 825 requires.
                key = json.dumps(props, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    labels[label] = props
            for label, props in labels.items():
                write_wheel(directory, name, version, label, variant_json(label, props))
                count += 1
    return count


ROOT = Path(__file__).resolve().parent.parent
PEERS = {
    "simple503": ("simple503==0.4.0", "simple503"),
    "dumb-pypi": ("dumb-pypi==1.15.0", "dumb-pypi"),
}
TIMEOUT_S = 600.0
WHEELWISE_FULL = "wheelwise index build (new site)"
SIMPLE503 = "simple503 -e (in place)"
DUMB_FULL = "dumb-pypi, full (list maker + dumb-pypi)"
DUMB_PAGES = "dumb-pypi, pages only"
INCREMENTAL = "wheelwise index build (10 wheels added)"


def ensure_peer(name: str) -> Path:
    """The peer's executable, from its own venv under bench/ (made once)."""
    requirement, script = PEERS[name]
    venv = ROOT / "bench" / f".venv-{name}"
    executable = venv / "bin" / script
    if not executable.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, requirement], check=True)
    return executable


def link_tree(source: Path, target: Path, names: Sequence[str] | None = None) -> None:
    """Hard links in *target* to the files of *source* (or those named)."""
    target.mkdir(parents=True, exist_ok=True)
    for name in names if names is not None else sorted(p.name for p in source.iterdir()):
        os.link(source / name, target / name)


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def main(argv: list[str] | None = None) -> int:
    from benchkit import machine_info, run_timed
    from wheelset import added_wheels, generate_wheels

    parser = argparse.ArgumentParser(description="index build: wheelwise vs simple503, dumb-pypi")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--wheels", type=int, default=2000)
    parser.add_argument("--dir", type=Path, default=None, help="work here (default: a temp dir)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    wheelwise = str(Path(sys.executable).parent / "wheelwise")
    simple503, dumb_pypi = ensure_peer("simple503"), ensure_peer("dumb-pypi")
    dumb_python = str(dumb_pypi.parent / "python")
    list_maker = str(ROOT / "bench" / "dumb_pypi_list.py")
    env = dict(os.environ)

    def timed(argv: Sequence[str], where: str, cwd: Path) -> float:
        return run_timed(
            argv, env=env, cwd=cwd, timeout=TIMEOUT_S, where=where, on_timeout="stopping"
        )

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp_name:
        work = Path(tmp_name)
        wheels, added = work / "wheels", work / "added"
        wheels.mkdir()
        added.mkdir()
        count = len(generate_wheels(wheels, args.wheels))
        extra = [p.name for p in added_wheels(added, wheels)]
        projects = len({p.name.split("-")[0] for p in wheels.iterdir()})
        # dumb-pypi's list, made once untimed, for the pages-only runs.
        premade = work / "premade"
        subprocess.run(
            [
                dumb_python,
                list_maker,
                str(wheels),
                str(premade / "packages"),
                str(premade / "list"),
            ],
            check=True,
        )
        runs = iter(range(10**6))
        dumb_args = ["--packages-url", "../../packages/", "--no-per-release-json"]
        dumb_args.append("--no-generate-timestamp")

        def wheelwise_full() -> float:
            site = work / f"ww-{next(runs)}"
            return timed(
                [wheelwise, "index", "build", str(wheels), "-o", str(site)], "wheelwise", work
            )

        def simple503_run() -> float:
            folder = work / f"s503-{next(runs)}"
            link_tree(wheels, folder)
            return timed([str(simple503), "-e", str(folder)], "simple503", work)

        def dumb_full() -> float:
            out = work / f"dp-{next(runs)}"
            listing = work / f"dp-list-{out.name}"
            make = [dumb_python, list_maker, str(wheels), str(out / "packages"), str(listing)]
            pages = [str(dumb_pypi), "--package-list-json", str(listing), "--output-dir", str(out)]
            return timed(make, "dumb_pypi_list.py", work) + timed(
                [*pages, *dumb_args], "dumb-pypi", work
            )

        def dumb_pages() -> float:
            out = work / f"dpp-{next(runs)}"
            pages = [str(dumb_pypi), "--package-list-json", str(premade / "list")]
            return timed([*pages, "--output-dir", str(out), *dumb_args], "dumb-pypi", work)

        contenders: dict[str, Callable[[], float]] = {
            WHEELWISE_FULL: wheelwise_full,
            SIMPLE503: simple503_run,
            DUMB_FULL: dumb_full,
            DUMB_PAGES: dumb_pages,
        }
        times: dict[str, list[float]] = {name: [] for name in [*contenders, INCREMENTAL]}
        for _ in range(args.runs):
            for name, run in contenders.items():
                times[name].append(run())
        check_outputs(work, count, projects)

        folder = work / "incremental"
        link_tree(wheels, folder)
        for number in range(args.runs):
            site = work / f"inc-{number}"
            for name in extra:
                (folder / name).unlink(missing_ok=True)
            subprocess.run(
                [wheelwise, "index", "build", str(folder), "-o", str(site)],
                check=True,
                capture_output=True,
            )
            link_tree(added, folder, extra)
            update = [wheelwise, "index", "build", str(folder), "-o", str(site)]
            times[INCREMENTAL].append(timed(update, "wheelwise (update)", work))
        fresh = work / "inc-fresh"
        subprocess.run(
            [wheelwise, "index", "build", str(folder), "-o", str(fresh)],
            check=True,
            capture_output=True,
        )
        identical = tree(fresh) == tree(site)
        if not identical:
            raise SystemExit("the updated site differs from a full build of the same folder")

    medians = {name: statistics.median(values) for name, values in times.items()}
    full = medians[WHEELWISE_FULL]
    ratios = {name: medians[name] / full for name in contenders if name != WHEELWISE_FULL}
    result = {
        "command": "python bench/index_build.py " + " ".join(argv or sys.argv[1:]),
        "machine": machine_info(),
        "wheels": count,
        "projects": projects,
        "added": len(extra),
        "runs": args.runs,
        "median_s": medians,
        "min_s": {name: min(values) for name, values in times.items()},
        "over_wheelwise": ratios,
        "updated_site_identical": identical,
        "aims": {
            "full_build_3x": all(ratios[name] >= 3 for name in (SIMPLE503, DUMB_FULL)),
            "update_under_0.5s": medians[INCREMENTAL] < 0.5,
        },
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    machine = result["machine"]
    print(
        f"machine: Python {machine['python']}, {machine['cpu']}, nproc={machine['nproc']}; "
        f"{count} wheels ({projects} projects), {args.runs} runs each"
    )
    print(f"{'command':<44} {'median s':>9} {'min s':>8} {'/ wheelwise':>12}")
    for name in times:
        ratio = f"{ratios[name]:.2f}x" if name in ratios else ""
        print(f"{name:<44} {medians[name]:>9.2f} {result['min_s'][name]:>8.2f} {ratio:>12}")
    print(f"aim, full build >= 3x faster than simple503 and dumb-pypi (full): {result['aims']}")
    return 0


def check_outputs(work: Path, count: int, projects: int) -> None:
    """Every tool's output of the first round has a page per project and a metadata
    file per wheel (or the benchmark stops)."""
    found = {
        "wheelwise": (
            len(list(work.glob("ww-0/simple/*/index.html"))),
            len(list(work.glob("ww-0/files/*/*.whl.metadata"))),
        ),
        "simple503": (
            len(list(work.glob("s503-1/*/index.html"))),
            len(list(work.glob("s503-1/*.whl.metadata"))),
        ),
        "dumb-pypi": (
            len(list(work.glob("dp-2/simple/*/index.html"))),
            len(list(work.glob("dp-2/packages/*.whl.metadata"))),
        ),
    }
    wrong = {tool: got for tool, got in found.items() if got != (projects, count)}
    if wrong:
        raise SystemExit(f"expected {projects} pages and {count} metadata files, found {wrong}")


if __name__ == "__main__":
    raise SystemExit(main())
