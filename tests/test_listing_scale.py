"""A project page at PyPI's scale: the listing work of a resolution stays linear.

A page with 5,000 versions x 20 files (botocore has about 4,800 versions) is read
from a local index and resolved. Work is counted, not timed: version comparisons
have a budget that any scan of every file for every version exceeds many times
over (the counter stops such a run at once), and only the files of the versions
the resolver looks at may be read in full.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.tags import sys_tags
from packaging.version import Version

from wheelwise.client.index_client import IndexClient, IndexSource
from wheelwise.resolve.finder import IndexFinder
from wheelwise.resolve.resolver import resolve
from wheelwise.variants.supported import SupportedProperties

VERSIONS = 5000
FILES_PER_VERSION = 20
FILES = VERSIONS * FILES_PER_VERSION
# Comparisons a linear listing needs: sorting 5,000 versions (~60,000) and grouping
# 100,000 files, with room to spare; a scan of every file per version needs 5e8.
COMPARISON_BUDGET = 20 * FILES
# Files of other interpreters and platforms, as a binary project's page has them.
OTHER_TAGS = [
    f"{python}-{python}m-{platform}"
    for python in ("cp27", "cp34", "cp35", "cp36")
    for platform in ("win32", "win_amd64", "macosx_10_9_x86_64", "linux_armv6l", "linux_i686")
][: FILES_PER_VERSION - 2]


def _version(index: int) -> str:
    return f"1.{index // 100}.{index % 100}"


@pytest.fixture(scope="module")
def big_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scale")
    files_dir = root / "files"
    files_dir.mkdir()
    entries = []
    for index in range(VERSIONS):
        version = _version(index)
        pure = f"big-{version}-py3-none-any.whl"
        metadata = f"Metadata-Version: 2.1\nName: big\nVersion: {version}\n".encode()
        (files_dir / f"{pure}.metadata").write_bytes(metadata)
        names = [pure, f"big-{version}.tar.gz"]
        names += [f"big-{version}-{tag}.whl" for tag in OTHER_TAGS]
        for name in names:
            entry = {
                "filename": name,
                "url": f"../../files/{name}",
                "hashes": {"sha256": hashlib.sha256(name.encode()).hexdigest()},
                "requires-python": ">=3.8",
                "size": 1000,
            }
            if name == pure:
                entry["core-metadata"] = {"sha256": hashlib.sha256(metadata).hexdigest()}
            entries.append(entry)
    assert len(entries) == FILES
    page = {"meta": {"api-version": "1.1"}, "name": "big", "files": entries}
    (root / "simple" / "big").mkdir(parents=True)
    (root / "simple" / "big" / "index.json").write_text(json.dumps(page))
    return root / "simple"


class _Budget(Exception):
    pass


@pytest.fixture
def comparisons(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts Version comparisons; raises once the budget is spent."""
    count = [0]
    methods = {name: getattr(Version, name) for name in ("__eq__", "__lt__", "__le__")}

    def counted(name: str):  # type: ignore[no-untyped-def]
        original = methods[name]

        def compare(self: Version, other: object) -> bool:
            count[0] += 1
            if count[0] > COMPARISON_BUDGET:
                raise _Budget(f"more than {COMPARISON_BUDGET} version comparisons")
            result: bool = original(self, other)
            return result

        return compare

    for name in methods:
        monkeypatch.setattr(Version, name, counted(name))
    return count


@pytest.mark.slow
@pytest.mark.parametrize(
    ("requirement", "expected"),
    [("big", _version(VERSIONS - 1)), ("big<1.20", "1.19.99"), ("big==1.0.7", "1.0.7")],
)
def test_resolving_a_huge_page_reads_few_files(
    big_index: Path, comparisons: list[int], requirement: str, expected: str
) -> None:
    source = IndexSource.index(big_index)
    with IndexClient(cache=False) as client:
        finder = IndexFinder([source], client, tags=list(sys_tags()), python_version="3.11.0")
        try:
            resolution = resolve(
                [requirement],
                finder,
                supported=lambda _metadata: SupportedProperties({}),
                tags=list(sys_tags()),
            )
            listing = finder.release("big", Version(expected))
            assert listing is not None
            page = listing.listing.page
        finally:
            finder.close()
    assert str(resolution["big"].version) == expected
    assert str(resolution["big"].file) == f"big-{expected}-py3-none-any.whl"
    assert len(page) == FILES
    # The chosen version's files, and no other version's.
    assert page.built() == FILES_PER_VERSION
    assert comparisons[0] <= COMPARISON_BUDGET


@pytest.mark.slow
def test_every_version_is_listed(big_index: Path, comparisons: list[int]) -> None:
    with IndexClient(cache=False) as client:
        listing = client.fetch_project(IndexSource.index(big_index), "big")
    versions = listing.versions()
    assert len(versions) == VERSIONS
    assert versions == sorted(versions)
    assert [f.filename for f in listing.files_for("1.49.3")][:2] == [
        "big-1.49.3-py3-none-any.whl",
        "big-1.49.3.tar.gz",
    ]
    assert listing.page.built() == FILES_PER_VERSION


# -- going back through releases ---------------------------------------------------


class _Releases:
    """An in-memory finder: botocore-like dep releases, and app releases each pinning
    one of them (boto3 and botocore)."""

    def __init__(self, deps: int, apps: int) -> None:
        from wheelwise.resolve.candidates import Release, WheelFile

        self.releases: dict[str, list[Release]] = {"dep": [], "app": []}
        self.requires: dict[str, list[str]] = {}
        for n in range(deps):
            version = f"1.{n // 100}.{n % 100}"
            wheel = WheelFile.parse(f"dep-{version}-py3-none-any.whl")
            self.releases["dep"].append(Release(Version(version), [wheel]))
            self.requires[str(wheel)] = []
        for n in range(apps):
            index = deps - apps + n  # the newest app pins the newest dep
            dep = f"1.{index // 100}.{index % 100}"
            version = f"1.{n}"
            wheel = WheelFile.parse(f"app-{version}-py3-none-any.whl")
            self.releases["app"].append(Release(Version(version), [wheel]))
            self.requires[str(wheel)] = [
                f"dep>={dep},<{Version(dep).major}.{Version(dep).minor}.{Version(dep).micro + 1}"
            ]

    def versions(self, name: str) -> list[Any]:
        return self.releases.get(name, [])

    def dependencies(self, file: Any) -> list[str]:
        return self.requires[str(file)]


def test_working_back_through_releases_does_not_check_every_release_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each app release (newest first) pins a dep release that dep<1.30 rules out, so
    the resolver tries 1,500 of them; checking every dep release against each new
    range would take 1,500 x 4,500 range checks."""
    finder = _Releases(deps=4500, apps=1600)
    checks = [0]
    original = SpecifierSet.contains
    budget = 50 * (4500 + 1600)

    def counted(
        self: SpecifierSet, item: Any, prereleases: Any = None, installed: Any = None
    ) -> bool:
        checks[0] += 1
        if checks[0] > budget:
            raise _Budget(f"more than {budget} range checks")
        return original(self, item, prereleases=prereleases, installed=installed)

    monkeypatch.setattr(SpecifierSet, "contains", counted)
    resolution = resolve(
        ["dep<1.30", "app"],
        finder,
        supported=lambda _metadata: SupportedProperties({}),
        tags=list(sys_tags()),
        max_rounds=5000,
    )
    assert str(resolution["app"].version) == "1.99"
    assert str(resolution["dep"].version) == "1.29.99"
