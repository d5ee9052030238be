"""Listings fetched ahead of the resolver (wheelwise.install.prefetch), against a
real index server on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name

from indexkit import demo_wheels, free_port, uvicorn_thread
from wheelwise.index.client import IndexClient, IndexSource, RetryPolicy, SourceError
from wheelwise.index.server import create_app
from wheelwise.install.finder import IndexFinder
from wheelwise.install.prefetch import ListingPrefetcher


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


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


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


def test_finder_warms_the_metadata_of_the_likely_pick(
    server: tuple[str, _Counter], tmp_path: Path
) -> None:
    """A hint with a range: the newest release in range gets its wheels' PEP 658
    metadata fetched in the background; the resolver's later ask costs no request."""
    base, counter = server
    source = IndexSource.index(f"{base}/simple/")
    with IndexClient(cache_dir=tmp_path) as client:
        prefetcher = ListingPrefetcher([source], client)
        finder = IndexFinder(
            [source], client, tags=list(sys_tags()), python_version="3.11.0", prefetcher=prefetcher
        )
        before = len(counter.paths)
        finder.prefetch([("demo-pkg", SpecifierSet("<2"))])
        prefetcher.take(canonicalize_name("demo-pkg"))  # the job, follow-up included, is done
        warmed = [p for p in counter.paths[before:] if p.endswith(".metadata")]
        assert warmed
        assert all("demo_pkg-1.0-" in p for p in warmed)  # 2.0 is out of range
        (release,) = [
            r for r in finder.versions(canonicalize_name("demo-pkg")) if str(r.version) == "1.0"
        ]
        asked = len(counter.paths)
        served = [f for f in release.files if any(str(f.filename) in p for p in warmed)]
        assert served
        for file in served:
            assert finder.core_metadata(file).startswith(b"Metadata-Version")
        assert len(counter.paths) == asked
        prefetcher.close()
        finder.close()
