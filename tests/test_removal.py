"""What an uninstall moves out (wheelwise.environment.dist_files): whole folders where
every file in them is the distribution's, its files elsewhere."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from installkit import make_venv, simple_wheel
from wheelwise.environment.dist_files import (
    FolderListings,
    RemovableFiles,
    inside_any,
    joined,
    removable_files,
    split_path,
)
from wheelwise.environment.installed import InstalledDist
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.install.transaction import install_wheels, uninstall
from wheelwise.models.errors import InstallError


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)


def test_folders_holding_only_its_files_move_whole(tmp_path: Path) -> None:
    prefix = tmp_path / "venv"
    site, scripts = prefix / "site", prefix / "bin"
    ours = [
        "site/pkg/__init__.py",
        "site/pkg/sub/mod.py",
        "site/pkg/sub/__pycache__/mod.cpython-311.pyc",
        "site/shared/own.py",
        "site/shared/ours/x.py",
        "site/top.py",
        "bin/tool",
    ]
    _tree(prefix, [*ours, "site/shared/theirs.py", "bin/python", "site/other/y.py"])
    (prefix / "site" / "pkg" / "empty").mkdir()  # goes with its folder
    files = [str(prefix / name) for name in ours]
    found = RemovableFiles(files, FolderListings())
    moves = found.whole_folders([site, scripts, prefix])
    assert moves == [
        str(site / "pkg"),
        str(site / "shared" / "ours"),
        str(site / "shared" / "own.py"),
        str(site / "top.py"),
        str(scripts / "tool"),
    ]
    assert sorted(found.folders[str(site / "pkg")]) == sorted(files[:3])


def test_a_root_or_a_folder_above_one_never_moves_whole(tmp_path: Path) -> None:
    """Every file under the environment is the distribution's: still file by file
    at the top, never the install folders themselves."""
    prefix = tmp_path / "venv"
    site = prefix / "lib" / "site"
    names = ["lib/site/mod.py", "lib/stray.txt", "data.txt"]
    _tree(prefix, names)
    files = [str(prefix / name) for name in names]
    moves = RemovableFiles(files, FolderListings()).whole_folders([site, prefix])
    assert moves == files


@pytest.mark.skipif(os.name == "nt", reason="symbolic links")
def test_a_link_to_a_folder_counts_as_a_file_and_is_not_followed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _tree(site, ["pkg/a.py", "elsewhere/b.py"])
    (site / "pkg" / "link").symlink_to(site / "elsewhere", target_is_directory=True)
    listed = RemovableFiles([str(site / "pkg" / "a.py")], FolderListings())
    assert listed.whole_folders([site]) == [str(site / "pkg" / "a.py")]  # the link is not ours
    both = [str(site / "pkg" / "a.py"), str(site / "pkg" / "link")]
    assert RemovableFiles(both, FolderListings()).whole_folders([site]) == [str(site / "pkg")]


def test_a_folder_that_cannot_be_renamed_into_the_backup_moves_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder on another file system than the backup folder (``EXDEV``): its
    files are moved one by one instead, and the uninstall completes."""
    env = TargetEnvironment.from_python(make_venv(tmp_path / "venv"))
    install_wheels(env, [simple_wheel(tmp_path / "wheels", "beta", "1.0")])
    rename = os.rename
    refused: list[str] = []

    def across(source: str, target: str) -> None:
        if os.path.isdir(source) and ".wheelwise-backup-" in target:
            refused.append(source)
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
        rename(source, target)

    def no_copy(*args: object, **kwargs: object) -> None:
        raise AssertionError("a folder copied across file systems whole")

    monkeypatch.setattr(os, "rename", across)
    monkeypatch.setattr(shutil, "copytree", no_copy)
    assert uninstall(env, ["beta"]) == ["beta"]
    assert str(env.purelib / "beta") in refused
    assert not (env.purelib / "beta").exists()
    assert not list(env.purelib.glob(".wheelwise-backup-*"))


# RECORD paths made of the parts that normalizing changes: names, dots, slashes.
_RECORD_PATH = st.lists(
    st.sampled_from(["a", "b.py", ".hidden", "/", ".", "..", "...", "\\"]), max_size=8
).map("".join)
_FOLDER = st.sampled_from(["/", "/env/lib/site", "/env/lib/site/", "//net/site", "rel/site"])


@pytest.mark.skipif(os.name == "nt", reason="POSIX paths")
@settings(max_examples=2000, deadline=None)
@given(_FOLDER, _RECORD_PATH)
def test_a_record_path_joins_its_folder_as_normalizing_would(folder: str, path: str) -> None:
    """What an uninstall reads torch's 12,000 rows with: the same path as
    ``normpath(join(...))``, inside the folder for a relative path without ``..``."""
    base = os.path.normpath(folder)
    assert joined(base, path) == os.path.normpath(os.path.join(base, path))
    if not path.startswith("/") and ".." not in path.split("/"):
        assert inside_any([base])(joined(base, path))


@pytest.mark.skipif(os.name == "nt", reason="POSIX paths")
@settings(max_examples=2000, deadline=None)
@given(_FOLDER, _RECORD_PATH)
def test_a_path_splits_as_os_path_split_splits_it(folder: str, path: str) -> None:
    for whole in (folder + path, joined(os.path.normpath(folder), path)):
        assert split_path(whole) == os.path.split(whole)


def _installed(tmp_path: Path, rows: list[str]) -> tuple[Path, InstalledDist]:
    site = tmp_path / "site"
    _tree(site, ["pkg/__init__.py", "pkg/data/.hidden", "beta-1.0.dist-info/METADATA"])
    info = site / "beta-1.0.dist-info"
    (info / "RECORD").write_text("".join(row + "\n" for row in rows))
    dist = InstalledDist(name="beta", version="1.0", installer=None, variant=None, location=info)
    return site, dist


def test_an_uninstall_reads_only_the_paths_of_record(tmp_path: Path) -> None:
    """A row's hash or size, even malformed, and a row with no path, change
    nothing: pip and uv read only the paths too."""
    rows = [
        "pkg/__init__.py,sha256=not base64!,twelve",
        "pkg/data/.hidden,md5,",
        ",,",
        "beta-1.0.dist-info/METADATA,,",
        "beta-1.0.dist-info/RECORD,,",
    ]
    site, dist = _installed(tmp_path, rows)
    found = removable_files(dist, [site])
    assert sorted(found.files) == sorted(
        str(site / name)
        for name in (
            "pkg/__init__.py",
            "pkg/data/.hidden",
            "beta-1.0.dist-info/METADATA",
            "beta-1.0.dist-info/RECORD",
        )
    )


def test_a_plain_record_path_is_still_checked_when_the_folder_is_outside(
    tmp_path: Path,
) -> None:
    """Plain rows are taken as inside only when the .dist-info's folder is: the
    same RECORD under another root is refused."""
    site, dist = _installed(tmp_path, ["pkg/__init__.py,,", "../outside.txt,,"])
    with pytest.raises(InstallError, match=r"'\.\./outside\.txt', outside"):
        removable_files(dist, [site])
    with pytest.raises(InstallError, match=r"'pkg/__init__\.py', outside"):
        removable_files(dist, [tmp_path / "elsewhere"])
