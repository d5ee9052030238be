"""``wheelwise download``: the files for another machine saved into a folder, on this
CPU-only machine, then installed from that folder with no index at all, as a Docker
build stage or an air-gapped cluster does."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from buildkit import backend_wheel, project, sdist
from gpuhouse import demo_house, machine, wheel
from indexkit import http_server
from installkit import installed_build, make_venv
from variantkit import wheelwise
from wheelfactory import make_wheel
from wheelwise.publish.static import build_site

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

# An H100 with a CUDA 13 driver, as `wheelwise detect --json` writes it.
H100 = {
    "system": {
        "nvidia": {
            "cuda_version_lower_bound": ["13.0", "12.9", "12.8", "12.6"],
            "sm_arch": ["90_real", "90a_real"],
        },
        "x86_64": {"level": ["v3", "v2", "v1"]},
    }
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("download")
    wheels = root / "wheels"
    demo_house(wheels)
    backend_wheel(wheels)
    for tag in ("cp311-cp311", "cp312-cp312"):
        make_wheel(wheels, f"native-1.0-{tag}-manylinux_2_28_x86_64.whl", record=True)
    sdist(project(root / "src", "srconly", "1.0"), wheels, "srconly", "1.0")
    wheel(wheels, "usessrc-1.0-py3-none-any.whl", requires_dist=["srconly"])
    build_site(wheels, root / "site")
    with http_server(root / "site") as base:
        yield f"{base}/simple/"


def _download(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return wheelwise(["download", *args], cache, machine())


def test_download_for_an_h100_then_install_offline(index: str, tmp_path: Path) -> None:
    system = tmp_path / "h100.json"
    system.write_text(json.dumps(H100))
    folder = tmp_path / "wheelhouse"
    result = _download(
        tmp_path / "cache", "--index-url", index, "-d", str(folder), "--system", str(system), "app"
    )
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in folder.iterdir()) == [
        "app-1.0-py3-none-any.whl",
        "cudart-1.0-py3-none-any.whl",
        "gpukit-1.0-py3-none-any-cu130.whl",
        "gpukit-1.0-variants.json",
    ]
    assert "saved gpukit-1.0-py3-none-any-cu130.whl (variant cu130)" in result.stdout
    # Again: every file is there already, and kept.
    again = _download(
        tmp_path / "cache", "--index-url", index, "-d", str(folder), "--system", str(system), "app"
    )
    assert again.returncode == 0, again.stderr
    assert "saved" not in again.stdout

    # On the GPU node: no index, the folder only; the CUDA build is installed.
    python = make_venv(tmp_path / "venv")
    installed = wheelwise(
        ["install", "--python", str(python), "--no-index", "-f", str(folder), "app"],
        tmp_path / "node-cache",
        machine(driver="13.0", gpus="9.0"),
    )
    assert installed.returncode == 0, installed.stderr
    assert installed_build(python, "gpukit") == "'cu130'"


def test_download_for_another_python_and_platform(index: str, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    result = _download(
        tmp_path / "cache", "--index-url", index, "-d", str(folder),
        "--python-version", "3.12", "--platform", "x86_64-manylinux_2_28", "native",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [p.name for p in folder.iterdir()] == [
        "native-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    ]
    assert "Python 3.12 on x86_64-manylinux_2_28" in result.stdout


def test_source_only_dependencies(index: str, tmp_path: Path) -> None:
    # For this interpreter, the sdist is saved as published (built here only to read
    # its metadata), for the target to build.
    folder = tmp_path / "here"
    result = _download(tmp_path / "cache", "--index-url", index, "-d", str(folder), "usessrc")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in folder.iterdir()) == [
        "srconly-1.0.tar.gz",
        "usessrc-1.0-py3-none-any.whl",
    ]
    # For a named target nothing is built: one line says which and why, and the
    # folder gets nothing.
    other = tmp_path / "other"
    other.mkdir()
    result = _download(
        tmp_path / "cache", "--index-url", index, "-d", str(other),
        "--python-version", "3.12", "usessrc",
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "srconly 1.0 has only a source distribution" in result.stderr
    assert list(other.iterdir()) == []


def test_a_folder_that_is_a_file_is_one_error(index: str, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = _download(tmp_path / "cache", "--index-url", index, "-d", str(blocker), "cudart")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "file" in result.stderr
    assert blocker.read_text() == ""


def test_a_project_folder_is_saved_as_its_wheel(index: str, tmp_path: Path) -> None:
    """A direct reference is built (for this interpreter) and saved as a wheel with
    its dependencies; for another interpreter only a wheel can be taken."""
    tree = project(tmp_path / "mine", "mine", "0.1", dependencies=["cudart"])
    folder = tmp_path / "out"
    result = _download(tmp_path / "cache", "--index-url", index, "-d", str(folder), str(tree))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in folder.iterdir()) == [
        "cudart-1.0-py3-none-any.whl",
        "mine-0.1-py3-none-any.whl",
    ]
    other = _download(
        tmp_path / "cache", "--index-url", index, "-d", str(tmp_path / "o"),
        "--python-version", "3.12", str(tree),
    )  # fmt: skip
    assert other.returncode == 2
    assert other.stderr.count("\n") == 1, other.stderr
    assert "nothing is built for another interpreter" in other.stderr
