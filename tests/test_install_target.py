"""``wheelwise install --target DIR``: the files pip's ``--target`` places, where it
places them (compared with pip in the same test), importable from DIR, installed
again as already there; a target that cannot be a folder is one error line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from installkit import alpha_wheel, make_venv, pip, simple_wheel

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

# Files that say who installed what, differently for each installer.
BOOKKEEPING = {"INSTALLER", "RECORD", "REQUESTED", "direct_url.json", ".wheelwise.lock"}


def _files(root: Path) -> set[str]:
    return {
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and path.name not in BOOKKEEPING and "__pycache__" not in path.parts
    }


def _wheelwise(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WHEELWISE_")}
    return subprocess.run(
        [sys.executable, "-m", "wheelwise", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**env, "NO_PROXY": "*"},
        timeout=120,
    )


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    alpha_wheel(folder, "1.0")  # a module, a console script and a data file
    simple_wheel(folder, "beta", "1.0")
    return folder


def _install(python: Path, wheels: Path, target: Path, *requirements: str) -> str:
    result = _wheelwise(
        "install", "--python", str(python), "--no-index", "-f", str(wheels),
        "--target", str(target), *requirements,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_target_places_what_pip_places(tmp_path: Path, wheels: Path) -> None:
    python = make_venv(tmp_path / "venv")
    site_before = _files(python.parent.parent)
    ours, theirs = tmp_path / "ours", tmp_path / "pip"
    _install(python, wheels, ours, "alpha", "beta")
    found = pip(
        python, "install", "--no-index", "--find-links", str(wheels), "--target", str(theirs),
        "alpha", "beta",
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert _files(ours) == _files(theirs)
    assert {"alpha/__init__.py", "bin/alpha-cli", "share/alpha/readme.txt"} <= _files(ours)
    assert _files(python.parent.parent) == site_before  # the environment is untouched
    # The script runs the target's interpreter, and finds the package on PYTHONPATH.
    script = (ours / "bin" / "alpha-cli").read_text().splitlines()[0]
    assert script == f"#!{python}"
    ran = subprocess.run(
        [str(ours / "bin" / "alpha-cli")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ours)},
        check=False,
    )
    assert ran.stdout.strip() == "alpha 1.0", ran.stderr


def test_a_target_is_its_own_environment(tmp_path: Path, wheels: Path) -> None:
    """What the folder holds counts as installed: asked again, nothing changes."""
    python = make_venv(tmp_path / "venv")
    target = tmp_path / "new" / "folder"  # made, parents too
    _install(python, wheels, target, "alpha")
    before = {path: path.stat().st_mtime_ns for path in target.rglob("*") if path.is_file()}
    _install(python, wheels, target, "alpha")
    after = {path: path.stat().st_mtime_ns for path in target.rglob("*") if path.is_file()}
    assert after == before
    listed = _wheelwise("list", "--python", str(python))
    assert "alpha" not in listed.stdout  # installed in the folder, not the environment


def test_a_target_that_is_a_file_is_one_error(tmp_path: Path, wheels: Path) -> None:
    python = make_venv(tmp_path / "venv")
    file = tmp_path / "file"
    file.write_text("not a folder")
    result = _wheelwise(
        "install", "--python", str(python), "--no-index", "-f", str(wheels),
        "--target", str(file), "alpha",
    )  # fmt: skip
    assert result.returncode != 0
    assert result.stderr.splitlines() == [
        f"wheelwise: error: --target {file}: not a folder; give a folder to install into"
    ]
    assert file.read_text() == "not a folder"
