"""Benchmark: turning a large variant wheel into a plain wheel, as ``wheelwise proxy``
does on the first download of a rewritten build.

The wheel is made of this machine's shared libraries (``--lib-dir``, real machine code,
which compresses as a GPU wheel's libraries do) until it holds ``--mib`` MiB
uncompressed. Timed, median of ``--runs``: checking the wheel against its RECORD
(``WheelArchive.verify_record``, part of the rewrite) and the whole rewrite
(``wheels.plain.make_plain_wheel``), with throughput in MB of wheel file per second.

Usage::

    .venv/bin/python bench/plain_wheel.py [--mib 256] [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchkit import machine_info
from wheelwise.variants.markers import variant_environment
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.plain import make_plain_wheel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from wheelfactory import make_wheel, variant_doc

LABEL = "v3"
WHEEL_FILE = b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: false\nTag: py3-none-any\n"


def libraries(directory: Path, budget: int) -> dict[str, bytes]:
    members: dict[str, bytes] = {}
    total = 0
    for path in sorted(directory.glob("*.so*")):
        if total >= budget:
            break
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        members[f"big/lib/{path.name}"] = data
        total += len(data)
    if total < budget:
        raise SystemExit(f"{directory}: only {total >> 20} MiB of libraries; give --lib-dir")
    return members


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lib-dir", type=Path, default=Path("/usr/lib/x86_64-linux-gnu"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        members = libraries(args.lib_dir, args.mib << 20)
        members["big-1.0.dist-info/WHEEL"] = WHEEL_FILE
        wheel = make_wheel(
            root,
            f"big-1.0-py3-none-any-{LABEL}.whl",
            variant_doc(LABEL, {"x86_64": {"level": [LABEL]}}),
            extra_members=members,
            record=True,
            requires_dist=[f'helper; variant_label == "{LABEL}"'],
        )
        size = wheel.stat().st_size
        raw = sum(len(data) for data in members.values())
        verify, rewrite = [], []
        for run in range(args.runs):
            start = time.perf_counter()
            with WheelArchive(wheel) as archive:
                archive.verify_record()
            verify.append(time.perf_counter() - start)
            out = root / f"out{run}"
            start = time.perf_counter()
            plain = make_plain_wheel(wheel, out, variant_environment(LABEL, ()))
            rewrite.append(time.perf_counter() - start)
            with WheelArchive(plain.path) as archive:
                archive.verify_record()  # a fast rewrite is worth nothing if it is wrong
                if b"Requires-Dist: helper\n" not in archive.metadata():
                    raise SystemExit("the variant marker was not settled")
    result = {
        "machine": machine_info(),
        "wheel_bytes": size,
        "uncompressed_bytes": raw,
        "members": len(members),
        "verify_s": statistics.median(verify),
        "rewrite_s": statistics.median(rewrite),
        "rewrite_mb_per_s": size / 1e6 / statistics.median(rewrite),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"wheel {size / 1e6:.0f} MB ({raw / 1e6:.0f} MB uncompressed, {len(members)} members): "
        f"verify {result['verify_s']:.2f} s, rewrite {result['rewrite_s']:.2f} s "
        f"({result['rewrite_mb_per_s']:.1f} MB/s of wheel)"
    )


if __name__ == "__main__":
    main()
