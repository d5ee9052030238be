"""Benchmark: building index metadata over 2,000 variant wheels, wheelwise vs variantlib.

Generates (seeded, once per run) a directory of 2,000 small variant wheels: 20
projects x 10 versions x 10 variants (9 labelled variants over the nvidia and
x86_64 namespaces plus a null variant), each with a ``variant.json`` in the format
both tools read (variantlib 0.2, with a ``providers`` block). Then times, as whole
processes, interleaved, median of N runs:

* ``wheelwise index build DIR -o SITE`` into a fresh SITE: the complete static
  index (PEP 503 + PEP 691 pages, hashes, PEP 658 metadata files, one merged
  ``*-variants.json`` per version);
* the same command re-run over an unchanged DIR into the existing SITE
  (incremental: nothing new to read);
* ``variantlib generate-index-json -d DIR``: only the merged ``*-variants.json``
  files (on its own copy of DIR, since it writes into it).

Usage::

    .venv/bin/python bench/index_build.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from benchkit import cpu_model

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


def timed(argv: Sequence[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="index build: wheelwise vs variantlib")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    bin_dir = Path(sys.executable).parent
    wheelwise, variantlib = str(bin_dir / "wheelwise"), str(bin_dir / "variantlib")

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        wheels = tmp / "wheels"
        wheels.mkdir()
        count = generate(wheels)
        vl_dir = tmp / "variantlib-wheels"
        shutil.copytree(wheels, vl_dir)
        runs = iter(range(10**6))
        incremental_site = tmp / "site-incremental"
        subprocess.run(
            [wheelwise, "index", "build", str(wheels), "-o", str(incremental_site)],
            check=True,
            capture_output=True,
        )

        def fresh() -> float:
            return timed(
                [wheelwise, "index", "build", str(wheels), "-o", str(tmp / f"site-{next(runs)}")]
            )

        def variantlib_run() -> float:
            for stale in vl_dir.glob("*-variants.json"):
                stale.unlink()
            return timed([variantlib, "generate-index-json", "-d", str(vl_dir)])

        contenders: dict[str, Callable[[], float]] = {
            "wheelwise index build (fresh site)": fresh,
            "wheelwise index build (no change)": lambda: timed(
                [wheelwise, "index", "build", str(wheels), "-o", str(incremental_site)]
            ),
            "variantlib generate-index-json": variantlib_run,
        }
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, run in contenders.items():
                times[name].append(run())
        produced = len(list(vl_dir.glob("*-variants.json")))

    medians = {name: statistics.median(values) for name, values in times.items()}
    fresh_s = medians["wheelwise index build (fresh site)"]
    vl_s = medians["variantlib generate-index-json"]
    result = {
        "command": "python bench/index_build.py " + " ".join(argv or sys.argv[1:]),
        "machine": {"python": sys.version.split()[0], "cpu": cpu_model(), "nproc": os.cpu_count()},
        "wheels": count,
        "variants_json_files": produced,
        "runs": args.runs,
        "median_s": medians,
        "min_s": {name: min(values) for name, values in times.items()},
        "variantlib_over_wheelwise_fresh": vl_s / fresh_s,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"machine: Python {result['machine']['python']}, {result['machine']['cpu']}, "
        f"nproc={result['machine']['nproc']}; {count} wheels, {args.runs} runs each"
    )
    print(f"{'command':<40} {'median s':>9} {'min s':>8}")
    for name in contenders:
        print(f"{name:<40} {medians[name]:>9.2f} {result['min_s'][name]:>8.2f}")
    print(f"variantlib / wheelwise (fresh site): {vl_s / fresh_s:.1f}x (aim: >= 5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
