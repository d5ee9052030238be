"""Benchmark: the 550 MB torch wheel through ``variant make``, ``variant strip`` and a
proxy behind a slow upstream.

The wheel is torch 2.14.1's for this interpreter, from the folder ``bench/gpu_stack.py``
fills (``--wheels``, default ``~/.cache/wheelwise-bench/gpu-stack``; ``pip download
torch==2.14.1 --only-binary=:all: --no-deps -d DIR`` fills it).

**Rewrites**, timed as whole processes, medians of ``--rounds`` (the four in rotating
order, ``os.sync()`` untimed before each), every output in a new temporary folder on
the same file system as the wheel's copy:

* ``cp``: ``cp WHEEL DIR/`` (no sync: as a user times it);
* ``cp+sync``: ``cp WHEEL DIR/`` then ``sync DIR/WHEEL`` (the copy on the disk, as
  ``make`` and ``strip`` leave theirs);
* ``read``: ``cat WHEEL > /dev/null`` (the OS file cache holds it after the first);
* ``make``: ``wheelwise variant make -p 'nvidia :: cuda_version_lower_bound :: 13.0'
  --label cu130 -o DIR WHEEL`` (which syncs its output before renaming it into place);
* ``strip``: ``wheelwise variant strip -o DIR`` of that ``cu130`` wheel.

The aim: ``make`` and ``strip`` each at most 2x ``cp`` + ``read``. Also reported: each
against ``cp+sync`` + ``read``, what any copy that is on the disk when it ends costs.

**Through a proxy** (``--skip-proxy`` leaves it out): the ``cu130`` wheel is served by
``wheelwise``'s index app on 127.0.0.1 at ``--rate`` MB/s (``tests/throttlekit.py``),
and ``wheelwise proxy --system H100.json`` (``bench/variant_house.py``'s H100) rewrites
it into a plain wheel; unmodified pip, with its default timeout (15 s) and
``--retries 0``, runs ``pip download torch --no-deps --no-cache-dir --index-url PROXY``.
It must succeed with the bytes the proxy stored. Reported: pip's time against the
upstream's transfer time alone.

Usage::

    .venv/bin/python bench/torch_wheel.py [--rounds 5] [--rate 20] [--json]

``--wheel FILE`` takes another wheel instead (the smoke test's small one).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import variant_house
from benchkit import (
    GPU_STACK_WHEELS,
    clean_env,
    free_port,
    machine_info,
    round_orders,
    torch_wheel,
)
from install import wait_for

PROPERTY = "nvidia :: cuda_version_lower_bound :: 13.0"
LABEL = "cu130"
STEPS = ("cp", "cp+sync", "read", "make", "strip")


def wheelwise(*args: str) -> list[str]:
    return [sys.executable, "-m", "wheelwise", *args]


def make_argv(out: Path, wheel: Path) -> list[str]:
    make = ["variant", "make", "-p", PROPERTY, "--label", LABEL]
    return wheelwise(*make, "-o", str(out), str(wheel))


def timed(argv: list[str], **kwargs: object) -> float:
    os.sync()
    start = time.perf_counter()
    subprocess.run(argv, check=True, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - start


def rewrites(wheel: Path, tmp: Path, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {step: [] for step in STEPS}
    base = tmp / "made"
    base.mkdir()
    made = base / wheel.name.replace(".whl", f"-{LABEL}.whl")
    subprocess.run(make_argv(base, wheel), check=True, capture_output=True)
    orders = round_orders(STEPS)
    for index in range(rounds):
        for step in orders[index % len(orders)]:
            out = Path(tempfile.mkdtemp(dir=tmp))
            quiet = {"stdout": subprocess.DEVNULL}
            if step == "cp":
                seconds = timed(["cp", str(wheel), str(out)])
            elif step == "cp+sync":
                copied = out / wheel.name
                seconds = timed(["sh", "-c", f"cp '{wheel}' '{out}/' && sync '{copied}'"])
            elif step == "read":
                seconds = timed(["sh", "-c", f"cat '{wheel}' > /dev/null"])
            elif step == "make":
                seconds = timed(make_argv(out, wheel), **quiet)
            else:
                seconds = timed(wheelwise("variant", "strip", "-o", str(out), str(made)), **quiet)
            times[step].append(seconds)
            shutil.rmtree(out)
    return times


def through_proxy(wheel: Path, tmp: Path, rate_mb: float) -> dict[str, object]:
    project = wheel.name.split("-")[0]
    from indexkit import uvicorn_thread
    from throttlekit import Throttled
    from wheelwise.publish.server import create_app

    house = tmp / "upstream"
    house.mkdir()
    subprocess.run(make_argv(house, wheel), check=True, capture_output=True)
    [variant] = house.glob("*.whl")
    system = tmp / "h100.json"
    system.write_text(json.dumps(variant_house.H100))
    rate = int(rate_mb * 1e6)
    upstream_app = Throttled(create_app(house), rate)
    cache = tmp / "proxy-cache"
    port = free_port()
    with uvicorn_thread(upstream_app) as upstream:
        argv = wheelwise("proxy", "--upstream", f"{upstream}/simple/", "--cache-dir", str(cache))
        argv += ["--system", str(system), "--port", str(port)]
        env = {**clean_env(), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        log = (tmp / "proxy.log").open("wb")
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            url = f"http://127.0.0.1:{port}/simple/"
            wait_for(url, process)
            target = tmp / "downloaded"
            start = time.perf_counter()
            result = subprocess.run(
                [sys.executable, "-m", "pip", "download", project, "--no-deps", "--no-cache-dir",
                 "--retries", "0", "--index-url", url, "-d", str(target),
                 "--disable-pip-version-check", "--progress-bar", "off"],
                capture_output=True, text=True, env=clean_env(), check=False,
            )  # fmt: skip
            seconds = time.perf_counter() - start
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()
    ok = result.returncode == 0
    stored = [p for p in cache.rglob("entries/*/*") if not p.name.endswith(".json")]
    same = False
    if ok and len(stored) == 1:
        [got] = target.glob("*.whl")
        same = _sha256(got) == _sha256(stored[0])
    return {
        "pip_succeeded": ok,
        "pip_error": "" if ok else result.stderr.strip().splitlines()[-1:],
        "seconds": round(seconds, 2),
        "upstream_seconds": round(variant.stat().st_size / rate, 2),
        "wheel_bytes": variant.stat().st_size,
        "same_bytes_as_stored": same,
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--wheels", type=Path, default=GPU_STACK_WHEELS)
    parser.add_argument("--wheel", type=Path, help="this wheel instead of torch's")
    parser.add_argument("--rate", type=float, default=20.0, help="upstream MB/s")
    parser.add_argument("--skip-proxy", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    wheel = args.wheel.resolve() if args.wheel else torch_wheel(args.wheels)
    with tempfile.TemporaryDirectory(dir=wheel.parent) as scratch:
        tmp = Path(scratch)
        times = rewrites(wheel, tmp, args.rounds)
        medians = {step: statistics.median(values) for step, values in times.items()}
        floor = medians["cp"] + medians["read"]
        synced = medians["cp+sync"] + medians["read"]
        report: dict[str, object] = {
            "machine": machine_info(),
            "wheel": wheel.name,
            "wheel_bytes": wheel.stat().st_size,
            "median_seconds": {k: round(v, 3) for k, v in medians.items()},
            "make_over_cp_read": round(medians["make"] / floor, 2),
            "strip_over_cp_read": round(medians["strip"] / floor, 2),
            "make_over_synced_cp_read": round(medians["make"] / synced, 2),
            "strip_over_synced_cp_read": round(medians["strip"] / synced, 2),
            "rounds": {k: [round(v, 3) for v in vs] for k, vs in times.items()},
        }
        if not args.skip_proxy:
            report["proxy"] = through_proxy(wheel, tmp, args.rate)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for step in STEPS:
            print(f"{step:8} {medians[step]:6.3f} s")
        print(f"make/(cp+read) {report['make_over_cp_read']}x, strip/(cp+read) "
              f"{report['strip_over_cp_read']}x (aim: at most 2x)")  # fmt: skip
        print(f"make/(cp+sync+read) {report['make_over_synced_cp_read']}x, "
              f"strip/(cp+sync+read) {report['strip_over_synced_cp_read']}x")  # fmt: skip
        if "proxy" in report:
            print(f"proxy: {report['proxy']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
