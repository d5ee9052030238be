"""``wheelwise proxy`` in front of upstreams that misbehave on purpose, on 127.0.0.1.

Each case runs its own in-process proxy (``--timeout 1``, a 2 s request deadline)
in front of its own :class:`faultkit.FaultServer`, which serves ``vpkg`` (a plain
wheel and the variants v3 and v4: the proxy rewrites v3 for its x86-64-v3 machine)
and ``other`` (one plain wheel, passed through). The upstream breaks one kind of
file: it is down, slow, cut short, lies about hashes, or publishes a file that is
hostile or inconsistent with the release. Every case must answer 502 (504 when the
upstream is slow) with one line naming the upstream URL, store nothing, keep
serving what is not broken, and serve the right bytes once the fault is cleared.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import subprocess
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest

from faultkit import (
    BOUND,
    JSON_PAGE,
    FaultServer,
    bomb,
    fault_server,
    replace_file,
    write_project,
    write_site,
)
from indexkit import (
    free_port,
    install,
    uvicorn_thread,
)
from installkit import installed_build, make_venv, simple_wheel, site_packages, tree_hash
from variantkit import system_file, vpkg_wheel
from wheelwise.proxy.app import create_app
from wheelwise.proxy.run import ProxyOptions, build_proxy
from wheelwise.variants.supported import SupportedProperties

# Every test here uses servers or peers that take seconds to start.
pytestmark = pytest.mark.slow

V3 = "vpkg-1.0-py3-none-any-v3.whl"
PLAIN = "vpkg-1.0-py3-none-any.whl"
OTHER = "other-1.0-py3-none-any.whl"
VARIANTS = "vpkg-1.0-variants.json"
# The file of each project a wheel or metadata fault is seen through.
UPSTREAM_WHEEL = {"vpkg": V3, "other": OTHER}


def zip_bomb(directory: Path) -> bytes:
    """The v3 wheel with a member that inflates 1000 times, to 64 MiB."""
    wheel = vpkg_wheel(directory, label="v3")
    with zipfile.ZipFile(wheel, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("vpkg/zeros.bin", bytes(64 << 20))
    return wheel.read_bytes()


# Faults in what the upstream publishes (each file's hash on the page is right).
SPOILERS: dict[str, Callable[[Path], None]] = {
    "lying-metadata": lambda site: write_site(site, lying_metadata=True),
    "lying-variants": lambda site: write_site(site, lying_variants=True),
    "not-a-zip": lambda site: replace_file(site, "vpkg", V3, b"PK\x03\x04 not a zip" * 64),
    "zip-bomb": lambda site: replace_file(site, "vpkg", V3, zip_bomb(site.parent / "bomb")),
    "garbage": lambda site: replace_file(site, "vpkg", VARIANTS, b'{"variants": [garbage'),
}


class Case(NamedTuple):
    fault: str  # a FaultHandler fault, a SPOILERS key, or "down" (nothing listening)
    target: str  # root, page, variants, wheel or metadata
    project: str = "vpkg"

    @property
    def id(self) -> str:
        return "-".join(self)


CASES = [
    Case("down", "root"),
    Case("down", "page"),
    Case("5xx", "page"),
    Case("5xx", "root"),
    Case("hang", "page"),
    Case("hang", "wheel"),
    Case("hang", "metadata"),
    Case("drip", "page"),
    Case("drip", "variants"),
    Case("drip", "wheel"),
    Case("drip", "wheel", "other"),
    Case("drip", "metadata"),
    Case("header-drip", "page"),
    Case("header-drip", "wheel"),
    Case("hash", "variants"),
    Case("hash", "wheel"),
    Case("hash", "wheel", "other"),
    Case("hash", "metadata"),
    Case("hash", "metadata", "other"),
    Case("truncated", "page"),
    Case("truncated", "wheel"),
    Case("truncated", "wheel", "other"),
    Case("reset", "page"),
    Case("reset", "wheel"),
    Case("gzip-bomb", "page"),
    Case("gzip-bomb", "variants"),
    Case("gzip-bomb", "wheel"),
    Case("gzip-bomb", "wheel", "other"),
    Case("oversize", "wheel"),
    Case("lying-metadata", "wheel"),
    Case("lying-variants", "wheel"),
    Case("not-a-zip", "wheel"),
    Case("zip-bomb", "wheel"),
    Case("garbage", "variants"),
]
SLOW = {"hang", "drip", "header-drip"}
# What the message says besides the URL.
SAYS = {
    "down": "cannot connect",
    "5xx": "answered 503",
    "hang": "no answer within 1 s",
    "drip": "deadline",
    "header-drip": "deadline",
    "hash": "the index page says",
    "truncated": "broke off",
    "reset": "broke off",
    "gzip-bomb": "once decoded",
    "oversize": "bigger than",
    "lying-metadata": "inconsistent",
    "lying-variants": "inconsistent",
    "not-a-zip": "not a valid wheel",
    "zip-bomb": "decompression bomb",
    "garbage": "invalid JSON",
}


def write_upstream(site: Path) -> None:
    write_site(site)
    write_project(site, "other", [simple_wheel(site.parent / "other", "other", "1.0")], {})


@contextlib.contextmanager
def proxy_of(upstream: str, cache: Path, system: Path) -> Iterator[str]:
    """An in-process proxy for the machine *system* describes; yields its base URL."""
    supported = SupportedProperties.from_json(system.read_bytes(), source=str(system))
    options = ProxyOptions(
        upstreams=[upstream],
        cache_dir=cache,
        system=(supported, str(system)),
        timeout=1.0,
        deadline=2.0,
    )
    proxy = build_proxy(options)
    try:
        # Each case checks the clean 502 of a file that fails before a byte is sent.
        # On a loaded machine the retries of a broken file (1.75 s of backoff) can
        # outlast the default 2 s and the file is streamed, then cut: that is
        # test_proxy_streaming's case.
        with uvicorn_thread(create_app(proxy, stream_after=BOUND)) as base:
            yield base
    finally:
        proxy.client.close()


def get(url: str | httpx.URL) -> httpx.Response:
    # The client's timeout bounds every request: a proxy that hangs fails the case.
    return httpx.get(url, headers={"Accept": JSON_PAGE}, timeout=BOUND)


def file_url(proxy: str, project: str, filename: str) -> httpx.URL:
    """The URL *project*'s page gives *filename* (the page must answer)."""
    page = get(f"{proxy}/simple/{project}/")
    page.raise_for_status()
    [entry] = [f for f in page.json()["files"] if f["filename"] == filename]
    return httpx.URL(f"{proxy}/simple/{project}/").join(entry["url"])


def request(proxy: str, case: Case) -> httpx.Response:
    """The request *case* breaks."""
    if case.target == "root":
        return get(f"{proxy}/simple/")
    if case.target in ("page", "variants"):
        return get(f"{proxy}/simple/{case.project}/")
    filename = PLAIN if case.project == "vpkg" else OTHER
    url = file_url(proxy, case.project, filename)
    return get(f"{url}.metadata" if case.target == "metadata" else url)


def upstream_url(base: str, case: Case) -> str:
    """The upstream URL the proxy's message must name."""
    if case.target == "root":
        return f"{base}/simple/"
    if case.target == "page":
        return f"{base}/simple/{case.project}/"
    if case.target == "variants":
        return f"{base}/files/{VARIANTS}"
    suffix = ".metadata" if case.target == "metadata" else ""
    return f"{base}/files/{UPSTREAM_WHEEL[case.project]}{suffix}"


def kept(cache: Path) -> list[str]:
    """Every file the proxy keeps, built or being built (pages aside)."""
    folders = [cache / "proxy" / "store" / "entries", cache / "proxy" / "store" / "tmp"]
    folders.append(cache / "proxy" / "scratch")
    return sorted(str(p) for folder in folders for p in folder.rglob("*") if p.is_file())


def store_entry(cache: Path, url: httpx.URL) -> Path:
    """Where the store keeps the file at *url* (``files/<project>/<key>/<name>``)."""
    name = hashlib.sha256(url.path.split("/")[-2].encode()).hexdigest()
    return cache / "proxy" / "store" / "entries" / name[:2] / name


@dataclass
class Outcome:
    upstream: str  # the upstream's base URL
    cache: Path
    failed: httpx.Response
    kept_after_failure: list[str]
    # Another project's page while the fault lasts, where the fault leaves it alone.
    others: httpx.Response | None
    recovered: httpx.Response


def run_case(case: Case, root: Path) -> Outcome:
    root.mkdir()
    site = root / "site"
    write_upstream(site)
    system = system_file(root, ["v3"])
    cache = root / "cache"
    port = free_port()
    upstream = f"http://127.0.0.1:{port}"
    with proxy_of(f"{upstream}/simple/", cache, system) as proxy:
        if case.fault == "down":
            failed = request(proxy, case)
            kept_after_failure = kept(cache)
            with fault_server(site, port=port):
                return Outcome(
                    upstream, cache, failed, kept_after_failure, None, request(proxy, case)
                )
        spoil = SPOILERS.get(case.fault)
        if spoil is not None:
            spoil(site)
        fault = None if spoil is not None else case.fault
        # The root page is a page to the server.
        target = "page" if case.target == "root" else case.target
        with fault_server(site, fault, target, port) as server:
            failed = request(proxy, case)
            quiet = case.project == "vpkg" and case.target in ("wheel", "metadata", "variants")
            others = get(f"{proxy}/simple/other/") if quiet else None
            kept_after_failure = kept(cache)
            server.fault = None
            if spoil is not None:
                write_site(site)
            recovered = request(proxy, case)
    return Outcome(upstream, cache, failed, kept_after_failure, others, recovered)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[Case, Outcome | BaseException]:
    """Every case, run at once: most of their time is spent waiting for timeouts."""
    root = tmp_path_factory.mktemp("proxy-faults")
    bomb()  # made before any server needs it
    with ThreadPoolExecutor(8) as pool:
        futures = {case: pool.submit(run_case, case, root / case.id) for case in CASES}
        return {case: future.exception() or future.result() for case, future in futures.items()}


def outcome_of(outcomes: dict[Case, Outcome | BaseException], case: Case) -> Outcome:
    """*case*'s outcome; what running it raised, raised again."""
    outcome = outcomes[case]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_misbehaving_upstream_fails_one_request_cleanly(
    case: Case, outcomes: dict[Case, Outcome | BaseException]
) -> None:
    outcome = outcome_of(outcomes, case)
    failed = outcome.failed
    assert failed.status_code == (504 if case.fault in SLOW else 502), failed.text
    assert failed.headers["cache-control"] == "no-store"
    assert failed.text.endswith("\n")
    [line] = failed.text.splitlines()
    assert line.startswith(f"upstream: {upstream_url(outcome.upstream, case)}: "), line
    assert SAYS[case.fault] in line
    # The proxy's own folders are no business of its clients.
    assert str(outcome.cache) not in line
    # Advice names the proxy's option, not an installer's.
    assert "--index-url" not in line
    assert outcome.kept_after_failure == []
    if outcome.others is not None:
        assert outcome.others.status_code == 200
        assert [f["filename"] for f in outcome.others.json()["files"]] == [OTHER]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_once_the_fault_is_cleared_the_right_bytes_are_served(
    case: Case, outcomes: dict[Case, Outcome | BaseException]
) -> None:
    outcome = outcome_of(outcomes, case)
    recovered = outcome.recovered
    assert recovered.status_code == 200, recovered.text
    body = recovered.content
    site = outcome.cache.parent / "site"
    if case.target == "root":
        assert [p["name"] for p in recovered.json()["projects"]] == ["other", "vpkg"]
    elif case.target in ("page", "variants"):
        assert [f["filename"] for f in recovered.json()["files"]] == [PLAIN]
    elif case.target == "metadata":
        assert f"Name: {case.project}\n".encode() in body
    elif case.project == "other":
        assert body == (site / "files" / OTHER).read_bytes()
    else:
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            assert archive.testzip() is None
            assert archive.read("vpkg/__init__.py").startswith(b"VARIANT = 'v3'")
    if case.target == "wheel":
        built = store_entry(outcome.cache, recovered.url)
        assert built.read_bytes() == body
        sidecar = json.loads(built.with_name(f"{built.name}.json").read_text())
        assert sidecar["sha256"] == hashlib.sha256(body).hexdigest()


@contextlib.contextmanager
def upstream_and_proxy(
    tmp_path: Path, fault: str | None = None, target: str | None = None
) -> Iterator[tuple[FaultServer, str]]:
    """An upstream (``vpkg`` and ``other``) breaking *target* with *fault*, and a proxy
    in front of it."""
    write_upstream(tmp_path / "site")
    system = system_file(tmp_path, ["v3"])
    with (
        fault_server(tmp_path / "site", fault, target) as server,
        proxy_of(f"{server.base}/simple/", tmp_path / "cache", system) as proxy,
    ):
        yield server, proxy


def install_through(
    installer: str, proxy: str, python: Path, tmp_path: Path, project: str
) -> subprocess.CompletedProcess[str]:
    # pip retries a 502 five times, backing off: once shows the same.
    quick = ["--retries", "0"] if installer == "pip" else []
    return install(installer, f"{proxy}/simple/", python, tmp_path, project, *quick)


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_installers_fail_on_a_wheel_whose_hash_lies_and_install_nothing(
    installer: str, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    with upstream_and_proxy(tmp_path, "hash", "wheel") as (server, proxy):
        refused = install_through(installer, proxy, python, tmp_path, "vpkg")
        assert refused.returncode != 0, refused.stdout
        assert "502" in refused.stderr
        assert tree_hash(site_packages(python)) == before
        assert kept(tmp_path / "cache") == []
        server.fault = None
        result = install_through(installer, proxy, python, tmp_path, "vpkg")
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "vpkg") == "'v3'"


def test_a_broken_project_leaves_the_others_installable(tmp_path: Path) -> None:
    """vpkg's ``*-variants.json`` is not JSON: its page answers 502, while ``other``
    (on the same upstream) stays listed and installable; vpkg is again once fixed."""
    python = make_venv(tmp_path / "venv")
    site = tmp_path / "site"
    with upstream_and_proxy(tmp_path) as (server, proxy):
        SPOILERS["garbage"](site)
        broken = get(f"{proxy}/simple/vpkg/")
        assert broken.status_code == 502
        assert broken.text.startswith(f"upstream: {server.base}/files/{VARIANTS}: ")
        assert get(f"{proxy}/simple/").status_code == 200
        result = install_through("pip", proxy, python, tmp_path, "other")
        assert result.returncode == 0, result.stderr
        refused = install_through("pip", proxy, python, tmp_path, "vpkg")
        assert refused.returncode != 0, refused.stdout
        assert get(f"{proxy}/simple/vpkg/").status_code == 502
        write_site(site)
        result = install_through("pip", proxy, python, tmp_path, "vpkg")
        assert result.returncode == 0, result.stderr
        assert get(f"{proxy}/simple/other/").status_code == 200
    assert installed_build(python, "vpkg") == "'v3'"
    assert (site_packages(python) / "other-1.0.dist-info").is_dir()
