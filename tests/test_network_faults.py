"""``wheelwise install`` against an index that misbehaves on purpose.

One threaded HTTP server on 127.0.0.1 (:mod:`faultkit`) serves a PEP 691 site (a
plain ``vpkg`` wheel, two variant wheels, PEP 658 metadata, a ``*-variants.json``)
and breaks one kind of file in one way: a wrong hash, a truncated body, persistent
5xx answers, no answer, response headers or a body that drip, a reset connection, a
gzip bomb, a body over its size or over a cap, metadata that lies about the wheel.
Every case must end with exit status 2, one ``wheelwise: error:`` line naming the
broken URL, within a bounded time, and the target environment exactly as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import pytest

from faultkit import BOUND, FaultServer, bomb, fault_server, target_of
from faultkit import serving as serving  # test_lock_cmd imports these from here
from faultkit import write_site as write_site
from installkit import make_venv, site_packages, tree_hash
from variantkit import system_file

PAGE = "/simple/vpkg/"
# Fast failures: small per-read timeout and request deadline.
TIMEOUT = "1"
DEADLINE = "2"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("faults") / "venv")


class Run:
    def __init__(self, result: subprocess.CompletedProcess[str], peak_rss_kib: int) -> None:
        self.code = result.returncode
        self.out = result.stdout
        self.err = result.stderr
        self.peak_rss_kib = peak_rss_kib


def install(
    tmp_path: Path, python: Path, base: str, *args: str, env: Mapping[str, str] | None = None
) -> Run:
    """``wheelwise install vpkg`` from *base* (its own cache, no proxy), with its peak
    memory (max RSS of the child, in KiB)."""
    full = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WHEELWISE_") and k.lower() not in ("http_proxy", "https_proxy")
    }
    full.update(WHEELWISE_CACHE_DIR=str(tmp_path / "cache"), NO_PROXY="*", COLUMNS="300")
    full.update(env or {})
    argv = [sys.executable, "-m", "wheelwise", "install", "--python", str(python)]
    argv += ["--index-url", f"{base}/simple/", "--system", str(system_file(tmp_path, ["v3"]))]
    argv += ["--timeout", TIMEOUT, "--retries", "1", *args, "vpkg"]
    # Measured in a child of its own: RUSAGE_CHILDREN is the peak of any child so far.
    probe = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr)\n"
        "sys.stderr.write('\\nRSS %d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(r.returncode)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        text=True,
        env=full,
        timeout=BOUND,
        check=False,
    )
    err, _, rss = result.stderr.rpartition("\nRSS ")
    result.stderr = err
    return Run(result, int(rss))


CASES = [
    ("hash", "metadata"),
    ("hash", "variants"),
    ("hash", "wheel"),
    ("truncated", "page"),
    ("truncated", "metadata"),
    ("truncated", "wheel"),
    ("5xx", "page"),
    ("5xx", "variants"),
    ("5xx", "wheel"),
    ("hang", "page"),
    ("hang", "wheel"),
    ("drip", "page"),
    ("drip", "metadata"),
    ("drip", "variants"),
    ("drip", "wheel"),
    ("header-drip", "page"),
    ("header-drip", "wheel"),
    ("reset", "page"),
    ("reset", "wheel"),
    ("gzip-bomb", "page"),
    ("gzip-bomb", "metadata"),
    ("gzip-bomb", "variants"),
    ("gzip-bomb", "wheel"),
    ("oversize", "page"),
    ("oversize", "metadata"),
    ("oversize", "wheel"),
    ("lying", "metadata"),
    ("lying", "variants"),
]
# What the one error line says besides the URL (the limit, where there is one).
SAYS = {
    "drip": f"{DEADLINE} s",
    "header-drip": f"{DEADLINE} s",
    "gzip-bomb": "once decoded",
    "oversize": "",
    "hang": f"{TIMEOUT} s",
    "truncated": "complete message body",
}


def urls_of(base: str, target: str) -> list[str]:
    if target == "page":
        return [f"{base}{PAGE}"]
    if target == "variants":
        return [f"{base}/files/vpkg-1.0-variants.json"]
    names = [f"vpkg-1.0-py3-none-any{s}.whl" for s in ("", "-v3", "-v4")]
    suffix = ".metadata" if target == "metadata" else ""
    return [f"{base}/files/{name}{suffix}" for name in names]


class Outcome(NamedTuple):
    run: Run
    base: str
    before: str
    after: str
    seconds: float


def run_case(fault: str, target: str, root: Path) -> Outcome:
    root.mkdir()
    site = root / "site"
    write_site(
        site,
        lying_metadata=(fault, target) == ("lying", "metadata"),
        lying_variants=(fault, target) == ("lying", "variants"),
    )
    python = make_venv(root / "venv")
    before = tree_hash(python.parent.parent)
    server = serving(site, None if fault == "lying" else fault, target)
    started = time.monotonic()
    try:
        run = install(root, python, server.base, "--request-deadline", DEADLINE)
    finally:
        seconds = time.monotonic() - started
        server.stop.set()
        server.shutdown()
        server.server_close()
    return Outcome(run, server.base, before, tree_hash(python.parent.parent), seconds)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Outcome]:
    """Every case, run at once: most of their time is spent waiting for timeouts."""
    root = tmp_path_factory.mktemp("matrix")
    bomb()  # made before any server needs it
    with ThreadPoolExecutor(8) as pool:
        futures = {case: pool.submit(run_case, *case, root / "-".join(case)) for case in CASES}
        results = {case: future.result() for case, future in futures.items()}
    report = os.environ.get("FAULT_MATRIX_REPORT")  # docs/reliability.md's table
    if report:
        rows = [
            {
                "fault": fault,
                "target": target,
                "exit": outcome.run.code,
                "stderr": outcome.run.err.strip(),
                "seconds": round(outcome.seconds, 1),
                "peak_rss_mib": outcome.run.peak_rss_kib // 1024,
                "tree_unchanged": outcome.before == outcome.after,
            }
            for (fault, target), outcome in results.items()
        ]
        Path(report).write_text(json.dumps(rows, indent=1))
    return results


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "target"), CASES, ids=[f"{f}-{t}" for f, t in CASES])
def test_a_misbehaving_index_fails_cleanly(
    fault: str, target: str, outcomes: dict[tuple[str, str], Outcome]
) -> None:
    run, base, before, after, _ = outcomes[fault, target]
    assert run.code == 2, run.err
    lines = run.err.strip().splitlines()
    errors = [line for line in lines if line.startswith("wheelwise: error: ")]
    assert len(errors) == 1, run.err
    [line] = errors
    assert "Traceback" not in run.err
    assert any(url in line for url in urls_of(base, target)), line
    assert SAYS.get(fault, "") in line
    if "drip" in fault:
        assert "--request-deadline" in line
    if fault == "truncated":
        assert "cannot connect" not in line  # it connected: the body was cut short
    assert after == before


@pytest.mark.slow
def test_the_undisturbed_site_installs(tmp_path: Path) -> None:
    """The control case: the same site and options, no fault, installs the v3 wheel."""
    python = make_venv(tmp_path / "venv")
    site = tmp_path / "site"
    write_site(site)
    server = serving(site, None, None)
    try:
        run = install(tmp_path, python, server.base, "--request-deadline", DEADLINE)
    finally:
        server.shutdown()
        server.server_close()
    assert run.code == 0, run.err
    assert "VARIANT = 'v3'" in (site_packages(python) / "vpkg" / "__init__.py").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["drip", "header-drip"])
def test_a_dripping_page_stops_at_the_deadline(fault: str, venv: Path, tmp_path: Path) -> None:
    """1 byte every 0.5 s (of the body, or of the response headers), never ending: the
    deadline (here from the environment) ends it with one line naming the URL, the
    limit and how to raise it."""
    site = tmp_path / "site"
    write_site(site)
    before = tree_hash(venv.parent.parent)
    server = serving(site, fault, "page")
    started = time.monotonic()
    try:
        run = install(tmp_path, venv, server.base, env={"WHEELWISE_REQUEST_DEADLINE": "1.5"})
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()
    assert time.monotonic() - started < BOUND
    assert run.code == 2, run.err
    [line] = run.err.strip().splitlines()
    assert line.startswith(f"wheelwise: error: {server.base}{PAGE}: ")
    assert "1.5 s" in line
    assert "--request-deadline" in line
    assert tree_hash(venv.parent.parent) == before


@pytest.mark.parametrize("target", ["wheel", "metadata", "variants"])
def test_a_deadline_is_paid_once(target: str, venv: Path, tmp_path: Path) -> None:
    """A request that reaches --request-deadline is not sent again (by a later stage
    that found the early fetch failed): each dripping file is asked for once."""
    site = tmp_path / "site"
    write_site(site)
    with fault_server(site, "drip", target) as server:
        run = install(tmp_path, venv, server.base, "--request-deadline", DEADLINE)
    assert run.code == 2, run.err
    assert "--request-deadline" in run.err
    dripped = {path: n for path, n in server.requests.items() if target_of(path) == target}
    assert dripped, server.requests
    assert set(dripped.values()) == {1}, server.requests


@pytest.mark.slow
def test_a_gzip_bomb_page_is_refused_in_little_memory(venv: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_site(site)
    server = serving(site, "gzip-bomb", "page")
    try:
        run = install(tmp_path, venv, server.base)
    finally:
        server.shutdown()
        server.server_close()
    assert run.code == 2, run.err
    [line] = run.err.strip().splitlines()
    assert line.startswith(f"wheelwise: error: {server.base}{PAGE}: ")
    assert "64 MiB" in line
    assert 0 < run.peak_rss_kib < 400 << 10  # the probe saw the child, which stayed small


@pytest.fixture
def served_page(tmp_path: Path) -> Iterator[tuple[FaultServer, Path]]:
    site = tmp_path / "site"
    write_site(site)
    server = serving(site, None, None)
    try:
        yield server, site
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
@pytest.mark.parametrize("form", ["json", "html"])
def test_an_unparseable_link_is_skipped_with_a_warning(
    form: str, served_page: tuple[FaultServer, Path], tmp_path: Path
) -> None:
    """``http://[::1/x.whl`` (and a link that cannot be joined to the page) is left
    out with a warning, as pip does, when its version is looked at; the other files
    install."""
    server, site = served_page
    page = site / "simple" / "vpkg" / "index.json"
    document = json.loads(page.read_text())
    bad = ["http://[::1/vpkg-1.0-py2-none-any.whl", "//[::1/vpkg-1.0-py2.py3-none-any.whl"]
    if form == "json":
        bad_files = [{"filename": link.rsplit("/", 1)[1], "url": link} for link in bad]
        document["files"][:0] = bad_files
        page.write_text(json.dumps(document))
    else:
        page.unlink()
        anchors = [f'<a href="{link}">x</a>' for link in bad]
        for entry in document["files"]:
            digest = entry["hashes"]["sha256"]
            meta = entry.get("core-metadata")
            extra = f' data-core-metadata="sha256={meta["sha256"]}"' if meta else ""
            anchors.append(f'<a href="{entry["url"]}#sha256={digest}"{extra}>x</a>')
        (page.parent / "index.json").write_text("<html><body>" + "".join(anchors) + "</body>")
        server.page_kind = "text/html"
    python = make_venv(tmp_path / "venv")
    run = install(tmp_path, python, server.base)
    assert run.code == 0, run.err
    warnings = [line for line in run.err.splitlines() if line.startswith("wheelwise: warning: ")]
    assert len(warnings) == 2, run.err
    for link, warning in zip(bad, warnings, strict=True):
        assert f"{server.base}{PAGE}" in warning
        assert repr(link) in warning
    assert "VARIANT = 'v3'" in (site_packages(python) / "vpkg" / "__init__.py").read_text()
