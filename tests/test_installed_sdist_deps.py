"""A release published only as an sdist, once installed, is not built again to read
its dependencies: where the resolver keeps the installed distribution, its
``Requires-Dist`` (extras included) come from the installed ``METADATA``, as pip
reads them. Real PEP 517 builds (``tinybuild``), an index served on 127.0.0.1 and
real venvs.

After the first install, the tests switch to a second index where the same sdist's
build fails: any build of it there is an error, so a resolution that succeeds
against it built nothing.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name

from buildkit import backend_wheel, project, sdist
from gpuhouse import machine, wheel
from indexkit import http_server
from installkit import make_venv, run_python, site_packages
from variantkit import wheelwise
from wheelfactory import make_wheel
from wheelwise.client.index_client import IndexClient, IndexFile, IndexSource
from wheelwise.environment.installed import InstalledDist
from wheelwise.publish.static import build_site
from wheelwise.resolve.finder import IndexFinder
from wheelwise.resolve.lookahead import Lookahead

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

DEPENDENCIES = ["leafdep", 'extradep; extra == "fast"']


def _house(root: Path, *, fail: bool) -> Path:
    """The backend, two plain dependencies, ``needs-srconly`` (a wheel depending on
    srconly) and ``srconly`` 1.0 as an sdist only (whose build fails with *fail*)."""
    wheels = root / "wheels"
    backend_wheel(wheels)
    wheel(wheels, "leafdep-1.0-py3-none-any.whl")
    wheel(wheels, "extradep-1.0-py3-none-any.whl")
    wheel(wheels, "needs_srconly-1.0-py3-none-any.whl", requires_dist=["srconly>=1"])
    tree = project(root / "tree", "srconly", "1.0", dependencies=DEPENDENCIES, fail=fail)
    sdist(tree, wheels, "srconly", "1.0")
    site = root / "site"
    build_site(wheels, site)
    return site


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(an index whose srconly builds, one whose srconly fails to build)."""
    good = _house(tmp_path_factory.mktemp("good"), fail=False)
    bad = _house(tmp_path_factory.mktemp("bad"), fail=True)
    with http_server(good) as first, http_server(bad) as second:
        yield f"{first}/simple/", f"{second}/simple/"


def _install(python: Path, index: str, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return wheelwise(
        ["install", "--python", str(python), "--index-url", index, *args], cache, machine()
    )


@pytest.fixture
def installed(indexes: tuple[str, str], tmp_path: Path) -> Path:
    """A venv with srconly 1.0 built from its sdist and installed (and leafdep)."""
    python = make_venv(tmp_path / "venv")
    result = _install(python, indexes[0], tmp_path / "first-cache", "srconly")
    assert result.returncode == 0, result.stderr
    assert "building " in result.stderr
    return python


def _names(python: Path) -> set[str]:
    return {p.name.split("-")[0] for p in site_packages(python).glob("*.dist-info")}


@pytest.mark.parametrize(
    "args",
    [
        ("--dry-run", "srconly"),
        ("--dry-run", "-U", "srconly"),
        ("--dry-run", "-U", "leafdep", "srconly"),
    ],
)
def test_a_dry_run_keeping_the_installed_sdist_builds_nothing(
    indexes: tuple[str, str], installed: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    result = _install(installed, indexes[1], tmp_path / "cache", *args)
    assert result.returncode == 0, result.stderr
    assert "building " not in result.stderr
    [row] = [line for line in result.stdout.splitlines() if " srconly " in line]
    assert "1.0 (installed)" in row


def test_a_dependent_of_the_installed_sdist_installs_without_building_it(
    indexes: tuple[str, str], installed: Path, tmp_path: Path
) -> None:
    result = _install(installed, indexes[1], tmp_path / "cache", "needs-srconly")
    assert result.returncode == 0, result.stderr
    assert "building " not in result.stderr
    assert _names(installed) == {"srconly", "leafdep", "needs_srconly"}
    assert run_python(installed, "import srconly, needs_srconly").returncode == 0


def test_an_extra_of_the_installed_sdist_comes_from_its_installed_metadata(
    indexes: tuple[str, str], installed: Path, tmp_path: Path
) -> None:
    result = _install(installed, indexes[1], tmp_path / "cache", "srconly[fast]")
    assert result.returncode == 0, result.stderr
    assert "building " not in result.stderr
    assert _names(installed) == {"srconly", "leafdep", "extradep"}


def test_a_reinstall_still_builds_the_sdist(
    indexes: tuple[str, str], installed: Path, tmp_path: Path
) -> None:
    # Not kept: the release is read from the index, so its (failing) build runs.
    result = _install(installed, indexes[1], tmp_path / "cache", "--reinstall", "srconly")
    assert result.returncode != 0
    assert "tinybuild: this project is set to fail" in result.stderr


def test_the_lookahead_reads_kept_metadata_and_falls_back_to_the_build(
    indexes: tuple[str, str], tmp_path: Path
) -> None:
    """The installer's own Lookahead and IndexFinder over the index, with a builder
    that counts its builds: the kept installed METADATA answers (Requires-Python
    too); once it cannot be read, or the dist is not kept, the sdist is built."""
    built: list[str] = []

    def build(sdist_file: IndexFile, archive: Path) -> Path:
        built.append(sdist_file.filename)
        (tmp_path / "built").mkdir()
        return make_wheel(
            tmp_path / "built", "srconly-1.0-py3-none-any.whl", requires_dist=["frombuild"]
        )

    folder = tmp_path / "site" / "srconly-1.0.dist-info"
    folder.mkdir(parents=True)
    lines = ["Name: srconly", "Version: 1.0", "Requires-Python: >=99"]
    lines += [f"Requires-Dist: {dependency}" for dependency in DEPENDENCIES]
    (folder / "METADATA").write_text("Metadata-Version: 2.1\n" + "\n".join(lines) + "\n")
    dist = InstalledDist("srconly", "1.0", None, None, folder)
    other_build = dist._replace(variant="x86_64_v3")
    source = IndexSource.index(indexes[1])
    with IndexClient(cache_dir=tmp_path / "c") as client, Lookahead([source], client) as lookahead:
        finder = IndexFinder(
            [source], client, tags=list(sys_tags()), python_version="3.11.0", build=build
        )
        lookahead.serve(finder)
        [release] = lookahead.versions(canonicalize_name("srconly"))
        [stand_in] = release.files
        lookahead.keep_installed([dist])
        assert lookahead.dependencies(stand_in) == DEPENDENCIES
        assert lookahead.missing_extras(stand_in, frozenset({"fast"})) == frozenset()
        assert lookahead.python_excluded(stand_in) == ">=99"
        assert built == []
        for kept in ([], [other_build]):  # reinstalled, or another build of the version
            lookahead.keep_installed(kept)
            assert lookahead.dependencies(stand_in) == ["frombuild"]
        assert built == ["srconly-1.0.tar.gz"]
        (folder / "METADATA").unlink()  # unreadable: the finder's answer (built already)
        lookahead.keep_installed([dist])
        assert lookahead.dependencies(stand_in) == ["frombuild"]
        finder.close()
