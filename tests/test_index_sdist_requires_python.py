"""An sdist's ``Requires-Python`` on its index link, as PyPI gives it: ``index
build`` reads the sdist's ``PKG-INFO`` (bounded, while checking the archive) and puts
its ``Requires-Python`` on the link, so that an installer skips a release it cannot
install without building it first."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from buildkit import sdist
from indexkit import parse_anchors
from variantkit import wheelwise
from wheelwise.publish.distfiles import read_dist, sdist_requires_python
from wheelwise.publish.filecheck import MAX_PKG_INFO_BYTES


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "setup.py").write_text("raise SystemExit('never built here')\n")
    return tree


def test_index_build_puts_it_on_the_sdist_link(tmp_path: Path) -> None:
    folder = tmp_path / "dists"
    tree = _tree(tmp_path)
    sdist(tree, folder, "oldpy", "1.0", pkg_info="Requires-Python: >=3.8,<4\n")
    sdist(tree, folder, "oldpy", "2.0")  # none given: none on the link
    result = wheelwise(["index", "build", str(folder), "-o", str(tmp_path / "site")], tmp_path)
    assert result.returncode == 0, result.stderr
    page = tmp_path / "site" / "simple" / "oldpy"
    files = {f["filename"]: f for f in json.loads((page / "index.json").read_text())["files"]}
    assert files["oldpy-1.0.tar.gz"]["requires-python"] == ">=3.8,<4"
    assert "requires-python" not in files["oldpy-2.0.tar.gz"]
    anchors = parse_anchors((page / "index.html").read_text())
    assert anchors["oldpy-1.0.tar.gz"]["data-requires-python"] == ">=3.8,<4"
    assert "data-requires-python" not in anchors["oldpy-2.0.tar.gz"]


def _sdist_with(path: Path, pkg_info: tarfile.TarInfo, data: bytes = b"") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(pkg_info, io.BytesIO(data) if pkg_info.isfile() else None)
    return path


def test_a_pkg_info_that_cannot_be_read_gives_no_requires_python(tmp_path: Path) -> None:
    """A PKG-INFO that is a link, or too long to read, still makes an sdist; the link
    then says nothing of Python."""
    link = tarfile.TarInfo("big-1.0/PKG-INFO")
    link.type, link.linkname = tarfile.SYMTYPE, "other"
    linked = _sdist_with(tmp_path / "big-1.0.tar.gz", link)
    assert read_dist(linked).dist.requires_python is None
    (tmp_path / "b").mkdir()
    huge = tarfile.TarInfo("big-1.0/PKG-INFO")
    body = b"Requires-Python: >=3.8\n" + b"x" * MAX_PKG_INFO_BYTES
    huge.size = len(body)
    long = _sdist_with(tmp_path / "b" / "big-1.0.tar.gz", huge, body)
    assert read_dist(long).dist.requires_python is None


def test_an_invalid_specifier_is_left_out() -> None:
    assert sdist_requires_python(b"Name: x\nRequires-Python: >=3.8\n") == ">=3.8"
    assert sdist_requires_python(b"Name: x\nRequires-Python: python 3\n") is None
    assert sdist_requires_python(b"Name: x\nRequires-Python:\n") is None
    assert sdist_requires_python(None) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_pkg_info_gives_a_specifier_or_none(data: bytes) -> None:
    from packaging.specifiers import SpecifierSet

    found = sdist_requires_python(b"Requires-Python: " + data)
    if found is not None:
        SpecifierSet(found)
    assert sdist_requires_python(data) is None or isinstance(sdist_requires_python(data), str)


def test_index_serve_puts_it_on_the_sdist_link(tmp_path: Path) -> None:
    import httpx

    from indexkit import uvicorn_thread
    from wheelwise.publish.server import create_app

    folder = tmp_path / "dists"
    sdist(_tree(tmp_path), folder, "oldpy", "1.0", pkg_info="Requires-Python: >=3.9\n")
    with uvicorn_thread(create_app(folder)) as base:
        page = httpx.get(
            f"{base}/simple/oldpy/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
        ).json()
    [entry] = page["files"]
    assert entry["requires-python"] == ">=3.9"
