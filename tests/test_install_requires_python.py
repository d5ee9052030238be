"""A wheel's own ``Requires-Python`` (its METADATA), where the source does not give
it (a find-links folder, an index page without ``data-requires-python``): a release
whose wheel leaves out the target's Python is passed over for an older one, as pip
and uv do, and one error line names what it needs when none is left."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from indexkit import demo_wheel, http_server
from installkit import make_venv, site_packages, tree_hash
from variantkit import wheelwise

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    folder = tmp_path / "wheels"
    folder.mkdir()
    demo_wheel(folder, "eta-1.0-py3-none-any.whl", requires_python=">=3")
    demo_wheel(folder, "eta-2.0-py3-none-any.whl", requires_python=">=99")
    demo_wheel(folder, "uses_eta-1.0-py3-none-any.whl", requires_dist=["eta>=1"])
    return folder


def test_a_release_for_another_python_is_passed_over(wheels: Path, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    args = ["install", "--python", str(python), "--no-index", "-f", str(wheels)]
    result = wheelwise([*args, "uses-eta"], tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    assert "installed eta 1.0" in result.stdout
    assert (site_packages(python) / "eta-1.0.dist-info").is_dir()


def test_none_left_says_what_it_needs(wheels: Path, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    args = ["install", "--python", str(python), "--no-index", "-f", str(wheels)]
    result = wheelwise([*args, "eta==2.0"], tmp_path / "cache")
    assert result.returncode == 2, result.stdout
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("wheelwise: error: no release fits the target's Python ")
    assert "eta 2.0 requires Python >=99 (in its METADATA)" in result.stderr
    assert tree_hash(site_packages(python)) == before


def test_an_index_page_without_the_range(wheels: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "files").mkdir(parents=True)
    for name in ("eta-1.0-py3-none-any.whl", "eta-2.0-py3-none-any.whl"):
        shutil.copy(wheels / name, site / "files" / name)
    page = site / "simple" / "eta"
    page.mkdir(parents=True)
    links = "".join(
        f'<a href="../../files/{name}">{name}</a>\n'
        for name in ("eta-1.0-py3-none-any.whl", "eta-2.0-py3-none-any.whl")
    )
    (page / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    python = make_venv(tmp_path / "venv")
    with http_server(site) as base:
        result = wheelwise(
            ["install", "--python", str(python), "--index-url", f"{base}/simple/", "eta"],
            tmp_path / "cache",
        )
    assert result.returncode == 0, result.stderr
    assert "installed eta 1.0" in result.stdout
