"""What is fetched ahead of the resolver (wheelwise.resolve.prefetch and
wheelwise.resolve.lookahead), against a real index server on 127.0.0.1: asserted by
the requests the server saw and what got installed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name

from indexkit import demo_wheels, free_port, uvicorn_thread
from installkit import make_venv
from wheelfactory import make_wheel
from wheelwise.cache.stores import ContentCache
from wheelwise.client.index_client import IndexClient, IndexSource, SourceError
from wheelwise.fetch import download
from wheelwise.fetch.download import DownloadItem, Fetcher, download_workers
from wheelwise.install.fetch import Verifier
from wheelwise.install.plan import InstallOptions, InstallOutcome, run_install
from wheelwise.policy.retry import RetryPolicy
from wheelwise.publish.server import create_app
from wheelwise.resolve import lookahead as lookahead_module
from wheelwise.resolve.finder import IndexFinder, link_of
from wheelwise.resolve.lookahead import WARM_FILES, Lookahead, item_of
from wheelwise.resolve.prefetch import ListingPrefetcher


class _Counter:
    """Counts the project pages the server answers."""

    def __init__(self, app: object) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: dict[str, object], receive: object, send: object) -> None:
        if scope["type"] == "http":
            self.paths.append(str(scope["path"]))
        await self.app(scope, receive, send)  # type: ignore[operator]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, _Counter]]:
    directory = tmp_path_factory.mktemp("wheels")
    demo_wheels(directory)
    counter = _Counter(create_app(directory))
    with uvicorn_thread(counter) as base:
        yield base, counter


pytestmark = pytest.mark.usefixtures("no_proxies")


def _prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("prefetch")]


def test_listing_is_fetched_in_the_background_once(
    server: tuple[str, _Counter], tmp_path: Path
) -> None:
    base, counter = server
    source = IndexSource.index(f"{base}/simple/")
    with IndexClient(cache_dir=tmp_path) as client:
        prefetcher = ListingPrefetcher([source], client)
        prefetcher.want(["Demo_Pkg", "demo-pkg", "no-such-project"])
        listings = prefetcher.take(canonicalize_name("demo-pkg"))
        assert listings is not None
        assert listings[0].listing.found
        assert any(f.filename.startswith("demo_pkg-") for f in listings[0].listing.files)
        missing = prefetcher.take(canonicalize_name("no-such-project"))
        assert missing is not None
        assert not missing[0].listing.found
        assert prefetcher.take(canonicalize_name("never-asked")) is None
        prefetcher.close()
    # One request per distinct name, and no thread left behind.
    assert counter.paths.count("/simple/demo-pkg/") == 1
    assert _prefetch_threads() == []
    prefetcher.want(["late"])  # after close: ignored, no thread started
    assert _prefetch_threads() == []


def test_a_failed_fetch_is_raised_to_the_taker(tmp_path: Path) -> None:
    source = IndexSource.index(f"http://127.0.0.1:{free_port()}/simple/")  # nothing listens
    with (
        IndexClient(cache_dir=tmp_path, retry=RetryPolicy(retries=0)) as client,
        ListingPrefetcher([source], client) as prefetcher,
    ):
        prefetcher.want(["demo-pkg"])
        with pytest.raises(SourceError, match="cannot connect"):
            prefetcher.take(canonicalize_name("demo-pkg"))


def _warm_and_read(
    base: str, counter: _Counter, tmp_path: Path, *, listed_first: bool
) -> tuple[list[str], int]:
    """Hint demo-pkg <2 to a lookahead (after naming the project when
    *listed_first*, as the installer does for the requested projects), then read the
    metadata of every wheel of 1.0 the hint warmed. The metadata paths requested,
    and how many requests the reads made."""
    source = IndexSource.index(f"{base}/simple/")
    with IndexClient(cache_dir=tmp_path) as client, Lookahead([source], client) as lookahead:
        finder = IndexFinder([source], client, tags=list(sys_tags()), python_version="3.11.0")
        before = len(counter.paths)
        if listed_first:
            lookahead.want(["demo-pkg"])
        lookahead.serve(finder)
        if listed_first:
            lookahead.versions(canonicalize_name("demo-pkg"))  # listed, with no follow-up
        lookahead.will_ask([("demo-pkg", SpecifierSet("<2"))])
        (release,) = [
            r for r in lookahead.versions(canonicalize_name("demo-pkg")) if str(r.version) == "1.0"
        ]
        viable = [f for f in release.files if any(t in finder.tags for t in f.filename.tags)]
        assert viable
        for file in viable[:WARM_FILES]:  # waits for the background fetches
            assert lookahead.core_metadata(file).startswith(b"Metadata-Version")
        requested = [p for p in counter.paths[before:] if p.endswith(".metadata")]
        reads_before = len(counter.paths)
        for file in viable[:WARM_FILES]:
            lookahead.core_metadata(file)
        finder.close()
        # The hint fetched them: the reads (first or again) cost no request.
        return requested, len(counter.paths) - reads_before


@pytest.mark.parametrize("listed_first", [False, True], ids=["hint", "listed-then-hint"])
def test_finder_warms_the_metadata_of_the_likely_pick(
    server: tuple[str, _Counter], tmp_path: Path, listed_first: bool
) -> None:
    """A hint with a range: the newest release in range gets its wheels' PEP 658
    metadata fetched in the background, once each, even when its listing was
    already fetched (or in flight) without a follow-up."""
    base, counter = server
    requested, extra = _warm_and_read(base, counter, tmp_path, listed_first=listed_first)
    assert requested
    assert all("demo_pkg-1.0-" in p for p in requested)  # 2.0 is out of range
    assert len(requested) == len(set(requested))  # none fetched twice
    assert extra == 0


def test_follow_up_of_a_listing_taken_earlier_runs(
    server: tuple[str, _Counter], tmp_path: Path
) -> None:
    base, _ = server
    source = IndexSource.index(f"{base}/simple/")
    heard: list[str] = []
    done = threading.Event()

    def then(name: str, listings: object) -> None:
        heard.append(name)
        done.set()

    with (
        IndexClient(cache_dir=tmp_path) as client,
        ListingPrefetcher([source], client) as prefetcher,
    ):
        prefetcher.want(["demo-pkg"])
        prefetcher.take(canonicalize_name("demo-pkg"))
        prefetcher.want(["demo-pkg"], then)
        prefetcher.want(["demo-pkg"], then)  # once per name
        assert done.wait(10)
        assert prefetcher.submit(lambda: 1) is not None
    assert heard == ["demo-pkg"]
    assert prefetcher.submit(lambda: 1) is None  # closed: nothing starts
    assert _prefetch_threads() == []


# -- whole installs: what is fetched ahead, and what is not -----------------------------


def _wheel(folder: Path, filename: str, *requires: str) -> None:
    name, version = filename.split("-")[:2]
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    make_wheel(
        folder,
        filename,
        extra_members={f"{name}-{version}.dist-info/METADATA": metadata.encode()},
        record=True,
    )


@pytest.fixture(scope="module")
def backtracking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, _Counter]]:
    """top needs a and c; a 2.0 needs b 2, c needs b 1: the resolver pins a 2.0 first
    (newest), then must give it up for a 1.0."""
    folder = tmp_path_factory.mktemp("backtracking")
    _wheel(folder, "top-1.0-py3-none-any.whl", "a", "c")
    _wheel(folder, "a-1.0-py3-none-any.whl")
    _wheel(folder, "a-2.0-py3-none-any.whl", "b==2")
    _wheel(folder, "b-1.0-py3-none-any.whl")
    _wheel(folder, "b-2.0-py3-none-any.whl")
    _wheel(folder, "c-1.0-py3-none-any.whl", "b==1")
    counter = _Counter(create_app(folder))
    with uvicorn_thread(counter) as base:
        yield f"{base}/simple/", counter


def _requests(counter: _Counter, since: int, suffix: str) -> list[str]:
    """The file names the server was asked for since request *since*, by suffix."""
    return [p.rsplit("/", 1)[-1] for p in counter.paths[since:] if p.endswith(suffix)]


def _wheel_requests(counter: _Counter, since: int) -> list[str]:
    return _requests(counter, since, ".whl")


def _install_top(index: str, tmp_path: Path, *, dry_run: bool = False) -> InstallOutcome:
    """``top`` from *index* into a new venv at ``tmp_path / "venv"``."""
    python = make_venv(tmp_path / "venv")
    options = InstallOptions(
        requirements=["top"],
        index_url=index,
        python=python,
        cache_dir=tmp_path / "c",
        dry_run=dry_run,
    )
    return run_install(options)


# What installing top resolves to on the backtracking index.
RESOLUTION = {"top": "1.0", "a": "1.0", "b": "1.0", "c": "1.0"}


def _planned(outcome: InstallOutcome) -> dict[str, str]:
    return {p.name: str(p.package.version) for p in outcome.plan}


def test_pinned_wheels_download_early_and_only_the_resolution_is_installed(
    backtracking: tuple[str, _Counter], tmp_path: Path
) -> None:
    index, counter = backtracking
    before = len(counter.paths)
    outcome = _install_top(index, tmp_path)
    assert _planned(outcome) == RESOLUTION
    fetched = _wheel_requests(counter, before)
    # Each wheel of the resolution was fetched once; a pin given up was fetched too
    # (while resolving), and is not installed.
    for name in ("top-1.0", "a-1.0", "b-1.0", "c-1.0"):
        assert fetched.count(f"{name}-py3-none-any.whl") == 1
    assert "a-2.0-py3-none-any.whl" in fetched
    site = tmp_path / "venv" / "lib"
    versions = sorted(p.name for p in site.glob("python*/site-packages/*.dist-info"))
    assert versions == [
        "a-1.0.dist-info",
        "b-1.0.dist-info",
        "c-1.0.dist-info",
        "top-1.0.dist-info",
    ]
    assert _prefetch_threads() == []
    assert [t for t in threading.enumerate() if t.name.startswith("download")] == []


def test_dry_run_downloads_no_wheel(backtracking: tuple[str, _Counter], tmp_path: Path) -> None:
    index, counter = backtracking
    before = len(counter.paths)
    outcome = _install_top(index, tmp_path, dry_run=True)
    assert outcome.dry_run
    assert {p.name for p in outcome.plan} == {"top", "a", "b", "c"}
    assert _wheel_requests(counter, before) == []


def _announced(index: str, tmp_path: Path, wants: list[tuple[str, str]]) -> list[str]:
    """The wheels downloaded early from will_ask hints alone, with no resolver
    running and nothing pinned (each taken, as the fetch stage would)."""
    source = IndexSource.index(index)
    taken: list[str] = []
    with IndexClient(cache_dir=tmp_path) as client, Lookahead([source], client) as lookahead:
        finder = IndexFinder([source], client, tags=list(sys_tags()), python_version="3.11.0")
        fetcher = Fetcher(client.http_source, in_memory=1 << 20)
        lookahead.serve(finder, fetcher=fetcher, verify=Verifier())
        lookahead.will_ask([(name, SpecifierSet(spec)) for name, spec in wants])
        for name, _ in wants:  # a listing is taken once its follow-up has run
            for release in lookahead.versions(canonicalize_name(name)):
                for file in release.files:
                    if lookahead.take(item_of(link_of(file).file)) is not None:
                        taken.append(str(file))
        finder.close()
    return sorted(taken)


def test_the_only_wheel_that_can_satisfy_a_hint_is_announced_before_any_pin(
    backtracking: tuple[str, _Counter], tmp_path: Path
) -> None:
    index, _ = backtracking
    announced = _announced(index, tmp_path, [("top", ""), ("a", ""), ("b", "==1.0")])
    # a has two releases in range: which one the resolver keeps is not known yet.
    assert announced == ["b-1.0-py3-none-any.whl", "top-1.0-py3-none-any.whl"]


def test_variant_wheels_are_not_announced_before_the_resolver_ranks_them(
    server: tuple[str, _Counter], tmp_path: Path
) -> None:
    base, _ = server
    assert _announced(f"{base}/simple/", tmp_path, [("demo-pkg", "==1.0")]) == []


def test_a_version_already_installed_is_not_downloaded_again(
    backtracking: tuple[str, _Counter], tmp_path: Path
) -> None:
    index, counter = backtracking
    python = make_venv(tmp_path / "venv")
    options = InstallOptions(
        requirements=["top", "a==1.0"], index_url=index, python=python, cache_dir=tmp_path / "c"
    )
    run_install(options)
    before = len(counter.paths)
    outcome = run_install(options)
    assert all(p.skipped for p in outcome.plan)
    assert _wheel_requests(counter, before) == []


# -- the METADATA of a small wheel downloaded early comes from the wheel ---------------


def _metadata_requests(counter: _Counter, since: int) -> list[str]:
    return _requests(counter, since, ".metadata")


def test_a_small_wheel_downloaded_early_is_read_instead_of_its_metadata_file(
    backtracking: tuple[str, _Counter], tmp_path: Path
) -> None:
    index, counter = backtracking
    before = len(counter.paths)
    outcome = _install_top(index, tmp_path)
    assert _planned(outcome) == RESOLUTION
    fetched = _metadata_requests(counter, before)
    # top and c have one release each: their wheels were downloaded at once, and
    # their dependencies read from them (the resolution above needs both).
    assert "top-1.0-py3-none-any.whl.metadata" not in fetched
    assert "c-1.0-py3-none-any.whl.metadata" not in fetched
    # a has two releases: the metadata of the newest is fetched ahead, as before.
    assert "a-2.0-py3-none-any.whl.metadata" in fetched
    top = next(p for p in outcome.plan if p.name == "top")
    assert b"Requires-Dist: a\n" in top.metadata
    # Each wheel of the resolution was still fetched once in all.
    fetched_wheels = _wheel_requests(counter, before)
    assert fetched_wheels.count("top-1.0-py3-none-any.whl") == 1
    assert fetched_wheels.count("c-1.0-py3-none-any.whl") == 1


def test_a_big_wheel_downloaded_early_gets_its_metadata_file(
    backtracking: tuple[str, _Counter], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lookahead_module, "SMALL_WHEEL", 10)  # every wheel is bigger
    index, counter = backtracking
    before = len(counter.paths)
    _install_top(index, tmp_path)
    fetched = _metadata_requests(counter, before)
    assert fetched.count("top-1.0-py3-none-any.whl.metadata") == 1
    assert fetched.count("c-1.0-py3-none-any.whl.metadata") == 1


class _SpoilFirst:
    """Flips the last byte of the first answer for *path*: that download fails its
    hash check, the next one is fine."""

    def __init__(self, app: _Counter, path: str) -> None:
        self.app = app
        self.path = path
        self.spoiled = False

    async def __call__(self, scope: dict[str, object], receive: object, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or self.spoiled:
            await self.app(scope, receive, send)
            return
        self.spoiled = True
        chunks: list[dict[str, Any]] = []

        async def hold(message: dict[str, Any]) -> None:
            chunks.append(message)

        await self.app(scope, receive, hold)
        body = b"".join(m.get("body", b"") for m in chunks if m["type"] == "http.response.body")
        for message in chunks:
            if message["type"] == "http.response.start":
                await send(message)
        spoiled = body[:-1] + bytes([body[-1] ^ 0xFF])
        await send({"type": "http.response.body", "body": spoiled, "more_body": False})


def test_a_failed_early_download_falls_back_to_the_metadata_file(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()
    _wheel(folder, "solo-1.0-py3-none-any.whl")
    counter = _Counter(create_app(folder))
    app = _SpoilFirst(counter, "/files/solo/solo-1.0-py3-none-any.whl")
    python = make_venv(tmp_path / "venv")
    with uvicorn_thread(app) as base:
        outcome = run_install(
            InstallOptions(
                requirements=["solo"],
                index_url=f"{base}/simple/",
                python=python,
                cache_dir=tmp_path / "c",
            )
        )
    assert app.spoiled
    assert [p.name for p in outcome.to_install] == ["solo"]
    # The early copy failed its hash check: the metadata file was fetched instead,
    # and the wheel downloaded again, intact.
    assert _metadata_requests(counter, 0) == ["solo-1.0-py3-none-any.whl.metadata"]
    assert _wheel_requests(counter, 0) == ["solo-1.0-py3-none-any.whl"] * 2
    site = python.parent.parent / "lib"
    assert [p.name for p in site.glob("python*/site-packages/solo-1.0.dist-info")]


class _Overlap:
    """Answers each ``.metadata`` request of app after a short wait, and records how
    many were in flight at once."""

    def __init__(self, app: object) -> None:
        self.app = app
        self.in_flight = 0
        self.most = 0
        self.paths: list[str] = []

    async def __call__(self, scope: dict[str, object], receive: object, send: object) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not path.endswith(".metadata") or "/app-" not in path:
            await self.app(scope, receive, send)  # type: ignore[operator]
            return
        import asyncio

        self.paths.append(path)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.05)
            await self.app(scope, receive, send)  # type: ignore[operator]
        finally:
            self.in_flight -= 1


def test_working_back_through_releases_fetches_their_metadata_in_parallel(
    tmp_path: Path,
) -> None:
    """Each app release needs the dep of its number, and dep<3 rules out all but the
    oldest two: the resolver reads app's releases one by one from the newest, and
    the metadata of the next ones is already on its way (several requests at once)."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    for n in range(1, 25):
        _wheel(folder, f"app-1.{n}-py3-none-any.whl", f"dep=={n}")
        _wheel(folder, f"dep-{n}-py3-none-any.whl")
    overlap = _Overlap(create_app(folder))
    with uvicorn_thread(overlap) as base:
        options = InstallOptions(
            requirements=["dep<3", "app"],
            index_url=f"{base}/simple/",
            python=make_venv(tmp_path / "venv"),
            cache_dir=tmp_path / "c",
            dry_run=True,
        )
        outcome = run_install(options)
    assert _planned(outcome) == {"app": "1.2", "dep": "2"}
    assert len(overlap.paths) == len(set(overlap.paths))  # each fetched once
    assert overlap.most > 1


# -- a cached wheel does not wait behind downloads ---------------------------------------


class _Hold:
    """Holds every request for *path* until :attr:`release` is set; notes every path
    asked for."""

    def __init__(self, app: object, path: str) -> None:
        self.app = app
        self.path = path
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.paths: list[str] = []

    async def __call__(self, scope: dict[str, object], receive: object, send: object) -> None:
        if scope["type"] == "http":
            self.paths.append(str(scope["path"]))
        if scope["type"] == "http" and scope["path"] == self.path:
            self.arrived.set()
            while not self.release.is_set():
                await asyncio.sleep(0.01)
        await self.app(scope, receive, send)  # type: ignore[operator]


class _Where(Verifier):
    """A Verifier that notes which thread checked each wheel."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: dict[str, str] = {}

    def __call__(self, found: Any) -> Any:
        name = found.name if hasattr(found, "name") else str(found)
        self.threads[name] = threading.current_thread().name
        return super().__call__(found)


def _early_lookahead(
    source: IndexSource, client: IndexClient, kept: ContentCache, verify: Verifier
) -> tuple[Lookahead, IndexFinder]:
    lookahead = Lookahead([source], client)
    finder = IndexFinder([source], client, tags=list(sys_tags()), python_version="3.11.0")
    fetcher = Fetcher(client.http_source, in_memory=1 << 20, cache=kept.wheels)
    lookahead.serve(finder, fetcher=fetcher, verify=verify)
    return lookahead, finder


def _only_file(lookahead: Lookahead, name: str) -> Any:
    [release] = lookahead.versions(canonicalize_name(name))
    [file] = release.files
    return file


@pytest.mark.parametrize("cached", ["intact", "damaged"])
def test_a_cached_wheel_waiting_for_a_worker_is_read_by_the_resolver_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached: str
) -> None:
    """The early-download workers are all busy (one, held on a slow download): the
    resolver reads a wheel the cache holds itself rather than waiting for them. A
    cached copy changed since is downloaded again, there too."""
    monkeypatch.setattr(lookahead_module, "EARLY_WORKERS", 1)
    folder = tmp_path / "wheels"
    folder.mkdir()
    _wheel(folder, "slow-1.0-py3-none-any.whl")
    _wheel(folder, "quick-1.0-py3-none-any.whl", "slow")
    hold = _Hold(create_app(folder), "/files/slow/slow-1.0-py3-none-any.whl")
    kept = ContentCache.at(tmp_path / "c")
    where = _Where()
    safety = threading.Timer(20, hold.release.set)  # never hangs, even if it waits
    safety.start()
    try:
        with uvicorn_thread(hold) as base, IndexClient(cache_dir=tmp_path / "http") as client:
            source = IndexSource.index(f"{base}/simple/")
            # An earlier run left quick in the cache.
            lookahead, finder = _early_lookahead(source, client, kept, Verifier())
            with lookahead:
                lookahead.will_ask([("quick", SpecifierSet())])
                assert lookahead.take(item_of(link_of(_only_file(lookahead, "quick")).file))
                finder.close()
            [copy] = (tmp_path / "c" / "wheels").rglob("quick-1.0-py3-none-any.whl")
            if cached == "damaged":
                data = bytearray(copy.read_bytes())
                data[-1] ^= 0xFF
                copy.write_bytes(bytes(data))
            before = len(hold.paths)
            lookahead, finder = _early_lookahead(source, client, kept, where)
            with lookahead:
                lookahead.will_ask([("slow", SpecifierSet())])
                lookahead.versions(canonicalize_name("slow"))  # its follow-up has run
                assert hold.arrived.wait(10)  # the only worker is held
                lookahead.will_ask([("quick", SpecifierSet())])
                file = _only_file(lookahead, "quick")
                metadata = lookahead.core_metadata(file)
                held_then = not hold.release.is_set()
                hold.release.set()
                assert lookahead.take(item_of(link_of(file).file)) is not None
                finder.close()
    finally:
        safety.cancel()
    assert b"Requires-Dist: slow\n" in metadata
    assert held_then, "read while the download ahead of it was still held"
    assert where.threads["quick-1.0-py3-none-any.whl"] == "MainThread"
    fetched_again = "/files/quick/quick-1.0-py3-none-any.whl" in hold.paths[before:]
    assert fetched_again == (cached == "damaged")


class _SlowWheels:
    """Answers each wheel download after 0.3 s (so that downloads overlap), and counts
    them."""

    def __init__(self, app: object) -> None:
        self.app = app
        self.wheels = 0

    async def __call__(self, scope: dict[str, object], receive: object, send: object) -> None:
        if scope["type"] == "http" and str(scope["path"]).endswith(".whl"):
            self.wheels += 1
            await asyncio.sleep(0.3)
        await self.app(scope, receive, send)  # type: ignore[operator]


def _count_downloads_under_way(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """[now, most]: the downloads under way, counted in the client as requests (the
    server would also count one the client has dropped while the server still waits)."""
    lock = threading.Lock()
    under_way = [0, 0]
    request = download._Fetcher._http_now

    def counted(self: download._Fetcher, item: DownloadItem, out: Any) -> dict[str, str]:
        with lock:
            under_way[0] += 1
            under_way[1] = max(under_way)
        try:
            return request(self, item, out)
        finally:
            with lock:
                under_way[0] -= 1

    monkeypatch.setattr(download._Fetcher, "_http_now", counted)
    return under_way


@pytest.mark.parametrize("allowed", [1, None])
def test_concurrent_downloads_bound_every_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allowed: int | None
) -> None:
    """``--concurrent-downloads`` (InstallOptions.concurrent_downloads) bounds the
    downloads ahead of need as well as the install's own: with 1, six wheels come one
    at a time; by default, the machine's bound (download_workers(), at least 4) holds
    for both together. Counted in the client, as requests under way (the server would
    also count one the client has dropped while the server still waits)."""
    most = allowed or min(6, download_workers())
    under_way = _count_downloads_under_way(monkeypatch)
    folder = tmp_path / "wheels"
    folder.mkdir()
    names = [f"w{i}" for i in range(6)]
    for name in names:
        _wheel(folder, f"{name}-1.0-py3-none-any.whl")
    counting = _SlowWheels(create_app(folder))
    with uvicorn_thread(counting) as base:
        options = InstallOptions(
            requirements=names,
            index_url=f"{base}/simple/",
            python=make_venv(tmp_path / "venv"),
            cache_dir=tmp_path / "c",
            concurrent_downloads=allowed,
        )
        outcome = run_install(options)
    assert sorted(p.name for p in outcome.to_install) == names
    assert counting.wheels == 6
    if allowed:
        assert under_way[1] == most
    else:  # some at once, never more than the bound (all six where it allows as many)
        assert 2 <= under_way[1] <= most


def test_batches_at_once_share_the_fetchers_download_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two batches downloading at the same time (the downloads ahead of need and the
    install's own) together stay within the fetcher's ``downloads``: each batch's
    pool alone would allow as many, so only a bound they share keeps the sum there."""
    under_way = _count_downloads_under_way(monkeypatch)
    folder = tmp_path / "wheels"
    folder.mkdir()
    names = [f"b{i}-1.0-py3-none-any.whl" for i in range(6)]
    for name in names:
        _wheel(folder, name)
    slow = _SlowWheels(create_app(folder))
    with uvicorn_thread(slow) as base, Fetcher(downloads=2) as fetcher:
        halves = [names[:3], names[3:]]
        results: list[list[object]] = [[], []]

        def fetch_half(index: int) -> None:
            items = [DownloadItem(f"{base}/files/{n.split('-')[0]}/{n}") for n in halves[index]]
            results[index] = list(fetcher.fetch_all(items, tmp_path / f"out{index}"))

        threads = [threading.Thread(target=fetch_half, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert [len(found) for found in results] == [3, 3]
    assert slow.wheels == 6
    assert under_way[1] == 2
