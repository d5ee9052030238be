"""Benchmark: reading one big PEP 691 project page, first and again.

Builds a page of ``--versions`` releases with ``--files`` files each (botocore's shape
at 4,500 x 20 by default: a 38 MB page), in memory, then times in one process
(median of ``--runs``, each on a new cache folder where one is used):

* ``every link read``: ``parse_json_page`` (the page read in full, as before pages
  were read lazily);
* ``first read``: ``read_json_page`` and the files of one version (what reading a
  page costs now when it is not kept, or the first time);
* ``first read, kept``: ``GroupedPages.read`` the first time (the page read, and its
  grouped copy written) and one version's files;
* ``again, from the copy``: ``GroupedPages.read`` of the same body again and one
  version's files (what a warm install pays for the page, after reading its body
  from the HTTP cache);
* ``again, without a copy``: ``read_json_page`` again and one version's files.

Usage::

    .venv/bin/python bench/page_read.py [--versions 4500] [--files 20] [--runs 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from packaging.version import Version

from benchkit import cpu_model, machine_info
from wheelwise.client.grouped_cache import GroupedPages
from wheelwise.client.simple_parse import parse_json_page, read_json_page

URL = "https://example.test/simple/big/"
PLATFORMS = ["win32", "win_amd64", "macosx_10_9_x86_64", "musllinux_1_1_x86_64", "linux_i686"]


def page(versions: int, files: int) -> bytes:
    entries = []
    for n in range(versions):
        version = f"1.{n // 100}.{n % 100}"
        names = [f"big-{version}-py3-none-any.whl", f"big-{version}.tar.gz"]
        names += [
            f"big-{version}-cp3{k % 9}-cp3{k % 9}-{PLATFORMS[k % len(PLATFORMS)]}.whl"
            for k in range(files - 2)
        ]
        for name in names:
            digest = hashlib.sha256(name.encode()).hexdigest()
            entries.append(
                {
                    "filename": name,
                    "url": f"https://files.example.test/packages/{digest[:2]}/{name}",
                    "hashes": {"sha256": digest},
                    "requires-python": ">=3.8",
                    "core-metadata": {"sha256": digest},
                    "size": 10_000 + n,
                    "upload-time": "2026-01-01T00:00:00.000000Z",
                }
            )
    document = {"meta": {"api-version": "1.1"}, "name": "big", "files": entries}
    return json.dumps(document).encode()


def timed(job: Callable[[], object], runs: int, setup: Callable[[], None] | None = None) -> float:
    times = []
    for _ in range(runs):
        if setup is not None:
            setup()
        start = time.perf_counter()
        job()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description="reading a big project page")
    parser.add_argument("--versions", type=int, default=4500)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    body = page(args.versions, args.files)
    wanted = Version(f"1.{(args.versions - 1) // 100}.{(args.versions - 1) % 100}")
    info = machine_info()
    print(
        f"machine: Python {info['python']}, {cpu_model()}, nproc={info['nproc']}; "
        f"page: {args.versions} versions x {args.files} files, {len(body) / 1e6:.1f} MB"
    )
    folder = tempfile.TemporaryDirectory()
    state: dict[str, GroupedPages] = {}

    def new_store() -> None:
        state["store"] = GroupedPages(Path(tempfile.mkdtemp(dir=folder.name)))

    def kept_first() -> None:
        state["store"].read(body, URL).files_for(wanted)

    def kept_again() -> None:
        state["store"].read(body, URL).files_for(wanted)

    rows = [
        ("every link read", timed(lambda: parse_json_page(body, URL), args.runs)),
        ("first read", timed(lambda: read_json_page(body, URL).files_for(wanted), args.runs)),
        ("first read, kept", timed(kept_first, args.runs, setup=new_store)),
        ("again, from the copy", timed(kept_again, args.runs, setup=kept_first)),
        (
            "again, without a copy",
            timed(lambda: read_json_page(body, URL).files_for(wanted), args.runs),
        ),
    ]
    folder.cleanup()
    for name, seconds in rows:
        print(f"{name:24} {seconds:8.3f} s")


if __name__ == "__main__":
    main()
