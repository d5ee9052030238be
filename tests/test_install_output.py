"""What ``install`` and ``sync`` print: with ``-q`` nothing on success, as pip and uv
(errors and warnings still on stderr, one line each); without it, a line per change
and a summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from installkit import make_venv, simple_wheel
from variantkit import wheelwise


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("output") / "venv")


def _install(tmp_path: Path, python: Path, *args: str) -> tuple[int, str, str]:
    links = tmp_path / "links"
    if not links.exists():
        simple_wheel(links, "beta", "1.0")
    (tmp_path / "empty").mkdir(exist_ok=True)
    argv = ["install", "--python", str(python), "-f", str(links)]
    argv += ["--index-url", str(tmp_path / "empty"), *args]
    result = wheelwise(argv, tmp_path / "cache")
    return result.returncode, result.stdout, result.stderr


def test_quiet_prints_nothing_on_success(tmp_path: Path, venv: Path) -> None:
    assert _install(tmp_path, venv, "-q", "--dry-run", "beta") == (0, "", "")
    assert _install(tmp_path, venv, "-q", "beta") == (0, "", "")
    assert _install(tmp_path, venv, "-q", "beta") == (0, "", "")  # already installed
    code, out, err = _install(tmp_path, venv, "beta")
    assert code == 0, err
    assert out.splitlines() == ["already installed beta 1.0"]
    wheelwise(["uninstall", "-y", "beta", "--python", str(venv)], tmp_path / "cache")
    code, out, err = _install(tmp_path, venv, "beta")
    assert code == 0, err
    assert out.splitlines()[0] == "installed beta 1.0"
    assert out.splitlines()[-1].startswith("changed 1 package in ")


def test_quiet_still_says_what_failed_in_one_line(tmp_path: Path, venv: Path) -> None:
    code, out, err = _install(tmp_path, venv, "-q", "gamma")
    assert code == 2
    assert out == ""
    [line] = err.splitlines()
    assert line.startswith("wheelwise: error: ")
    assert "gamma" in line


def test_no_index_takes_only_find_links(tmp_path: Path, venv: Path) -> None:
    links = tmp_path / "links"
    simple_wheel(links, "delta", "1.0")
    unreachable = "http://127.0.0.1:9/simple/"  # nothing listens: never asked
    argv = ["install", "-q", "--python", str(venv), "--no-index", "-f", str(links)]
    result = wheelwise([*argv, "--index-url", unreachable, "delta"], tmp_path / "cache")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    alone = wheelwise(["install", "--python", str(venv), "--no-index", "delta"], tmp_path / "cache")
    assert alone.returncode == 2
    [line] = alone.stderr.splitlines()
    assert "--no-index leaves no package source: give --find-links" in line


@pytest.mark.parametrize("flag", [["--force-reinstall"], ["--reinstall-package", "Beta"]])
def test_reinstall_installs_the_same_build_again(
    tmp_path: Path, flag: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    python = make_venv(tmp_path_factory.mktemp("reinstall") / "venv")
    assert _install(tmp_path, python, "-q", "beta")[0] == 0
    module = next(python.parent.parent.glob("lib/python*/site-packages/beta/__init__.py"))
    module.write_text("changed by hand\n")
    code, out, err = _install(tmp_path, python, "beta")
    assert (code, out.splitlines()) == (0, ["already installed beta 1.0"]), err
    code, out, err = _install(tmp_path, python, *flag, "beta")
    assert code == 0, err
    assert out.splitlines()[0] == "reinstalled beta 1.0"
    assert module.read_text() == "VERSION = '1.0'\n"
    listed = wheelwise(["list", "--python", str(python)], tmp_path / "cache")
    assert "beta" in listed.stdout


def test_reinstall_package_names_a_project(tmp_path: Path, venv: Path) -> None:
    code, _, err = _install(tmp_path, venv, "--reinstall-package", "no such", "beta")
    assert code == 2
    [line] = err.splitlines()
    assert "--reinstall-package 'no such': not a project name" in line
