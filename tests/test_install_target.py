"""``wheelwise install --target DIR`` and ``--prefix DIR``: the files pip places with
the same flag, where it places them (compared with pip in the same test), importable
from there, installed again as already there; a folder that cannot be one is one
error line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from installkit import alpha_wheel, imported_from, make_venv, pip, simple_wheel

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


def _install(
    python: Path, wheels: Path, target: Path, *requirements: str, flag: str = "--target"
) -> str:
    result = _wheelwise(
        "install", "--python", str(python), "--no-index", "-f", str(wheels),
        flag, str(target), *requirements,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("flag", ["--target", "--prefix"])
def test_places_what_pip_places(tmp_path: Path, wheels: Path, flag: str) -> None:
    python = make_venv(tmp_path / "venv")
    site_before = _files(python.parent.parent)
    ours, theirs = tmp_path / "ours", tmp_path / "pip"
    _install(python, wheels, ours, "alpha", "beta", flag=flag)
    found = pip(
        python, "install", "--no-index", "--find-links", str(wheels), flag, str(theirs),
        "alpha", "beta",
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert _files(ours) == _files(theirs)
    version = "python{}.{}".format(*sys.version_info[:2])
    library = "" if flag == "--target" else f"lib/{version}/site-packages/"
    assert {f"{library}alpha/__init__.py", "bin/alpha-cli", "share/alpha/readme.txt"} <= _files(
        ours
    )
    assert _files(python.parent.parent) == site_before  # the environment is untouched
    if flag == "--target":
        # Nothing of wheelwise's own among the packages (its lock and journal are in
        # the cache): the folder holds what pip's does.
        assert not [path.name for path in ours.iterdir() if path.name.startswith(".")]
    # The script runs the target's interpreter, and finds the package on PYTHONPATH.
    script = (ours / "bin" / "alpha-cli").read_text().splitlines()[0]
    assert script == f"#!{python}"
    ran = subprocess.run(
        [str(ours / "bin" / "alpha-cli")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ours / library)},
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


@pytest.mark.parametrize("flag", ["--target", "--prefix"])
def test_a_folder_that_is_a_file_is_one_error(tmp_path: Path, wheels: Path, flag: str) -> None:
    python = make_venv(tmp_path / "venv")
    file = tmp_path / "file"
    file.write_text("not a folder")
    result = _wheelwise(
        "install", "--python", str(python), "--no-index", "-f", str(wheels),
        flag, str(file), "alpha",
    )  # fmt: skip
    assert result.returncode != 0
    assert result.stderr.splitlines() == [
        f"wheelwise: error: {flag} {file}: not a folder; give a folder to install into"
    ]
    assert file.read_text() == "not a folder"


def _base_python() -> Path:
    """An interpreter outside any virtual environment (the one this venv was made
    from): the only kind with a user site."""
    return Path(getattr(sys, "_base_executable", sys.executable)).resolve()


def test_user_places_what_pip_places(tmp_path: Path, wheels: Path) -> None:
    python = _base_python()
    # A system Python may be externally managed (PEP 668): the user base here is a
    # scratch folder, so both installers are told to go ahead.
    stdlib = sysconfig.get_paths()["stdlib"]
    managed = ["--break-system-packages"] if Path(stdlib, "EXTERNALLY-MANAGED").exists() else []
    ours, theirs = tmp_path / "ours", tmp_path / "pip"
    os.environ["PYTHONUSERBASE"] = str(ours)
    try:
        result = _wheelwise(
            "install", "--python", str(python), "--no-index", "-f", str(wheels),
            "--user", *managed, "alpha", "beta",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        os.environ["PYTHONUSERBASE"] = str(theirs)
        found = pip(
            python, "install", "--no-index", "--find-links", str(wheels), "--user",
            *managed, "alpha", "beta",
        )  # fmt: skip
        assert found.returncode == 0, found.stderr
    finally:
        del os.environ["PYTHONUSERBASE"]
    assert _files(ours) == _files(theirs)
    version = "python{}.{}".format(*sys.version_info[:2])
    assert {f"lib/{version}/site-packages/alpha/__init__.py", "bin/alpha-cli"} <= _files(ours)
    assert imported_from(python, "alpha", ours).startswith(str(ours))  # found there


def test_user_in_a_virtual_environment_is_one_error(tmp_path: Path, wheels: Path) -> None:
    python = make_venv(tmp_path / "venv")
    before = _files(tmp_path)
    result = _wheelwise(
        "install", "--python", str(python), "--no-index", "-f", str(wheels), "--user", "alpha",
    )  # fmt: skip
    assert result.returncode != 0
    [line] = result.stderr.splitlines()
    assert line.startswith("wheelwise: error: --user: user site-packages are not visible in ")
    assert "this virtual environment" in line
    assert _files(tmp_path) == before


def test_two_locations_at_once_are_one_error(tmp_path: Path) -> None:
    result = _wheelwise("install", "--target", str(tmp_path), "--user", "alpha")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "wheelwise: error: --target and --user cannot be used together; give one"
    ]


@pytest.mark.parametrize("flag", ["--target", "--prefix"])
def test_list_and_uninstall_take_the_same_location(tmp_path: Path, wheels: Path, flag: str) -> None:
    python = make_venv(tmp_path / "venv")
    folder = tmp_path / "folder"
    _install(python, wheels, folder, "alpha", "beta", flag=flag)
    listed = _wheelwise("list", "--python", str(python), flag, str(folder), "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(d["name"] for d in json.loads(listed.stdout)) == ["alpha", "beta"]
    removed = _wheelwise("uninstall", "-y", "--python", str(python), flag, str(folder), "alpha")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.splitlines() == ["uninstalled alpha"]
    left = _files(folder)
    assert not [path for path in left if "alpha" in path]  # script, data file and all
    assert any(path.endswith("beta/__init__.py") for path in left)
    empty = _wheelwise("list", "--python", str(python), flag, str(tmp_path / "none"), "--json")
    assert empty.returncode == 0, empty.stderr
    assert json.loads(empty.stdout) == []
    assert not (tmp_path / "none").exists()  # listing makes nothing
