"""Telling, without running a venv's interpreter, that a requirement is not installed
there (so an install does not wait for the interpreter before loading the resolver)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wheelwise.environment.installed import missing_from_venv


def _venv(root: Path, *dists: str) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    site = root / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    for dist in dists:
        (site / f"{dist}.dist-info").mkdir()
    return root / "bin" / "python"


def test_a_name_without_a_dist_info_is_missing(tmp_path: Path) -> None:
    python = _venv(tmp_path / "v", "Six-1.17.0", "docopt-0.6.2")
    assert missing_from_venv(python, {"six", "langdetect"})
    assert not missing_from_venv(python, {"six", "docopt"})
    assert not missing_from_venv(python, set())


def test_anything_else_is_not_told(tmp_path: Path) -> None:
    # No pyvenv.cfg: not a venv (its site folders are the interpreter's to say).
    plain = tmp_path / "plain" / "bin" / "python"
    plain.parent.mkdir(parents=True)
    assert not missing_from_venv(plain, {"six"})
    # Two site-packages folders (or none): which one is used is not guessed.
    python = _venv(tmp_path / "two")
    (tmp_path / "two" / "lib" / "python3.13" / "site-packages").mkdir(parents=True)
    assert not missing_from_venv(python, {"six"})
    bare = tmp_path / "bare"
    (bare / "bin").mkdir(parents=True)
    (bare / "pyvenv.cfg").write_text("")
    assert not missing_from_venv(bare / "bin" / "python", {"six"})


def test_a_relative_interpreter_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _venv(tmp_path / "v")
    monkeypatch.chdir(tmp_path)
    assert missing_from_venv(Path("v/bin/python"), {"six"})
