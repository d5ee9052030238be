"""Placing many files at once (``Journal.link_many``), from their folders kept open
(:mod:`wheelwise.open_folders`) or by whole paths: the same hard links, the same
errors, no descriptor left open."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wheelwise.install import unpack
from wheelwise.install.journal import WriteAhead
from wheelwise.install.link import Linker
from wheelwise.install.unpack import Journal
from wheelwise.models.errors import InstallError
from wheelwise.open_folders import AVAILABLE, OpenFolders

pytestmark = pytest.mark.skipif(
    not AVAILABLE or not Path("/proc/self/fd").is_dir(), reason="no dir_fd, or no /proc"
)


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def source_tree(root: Path, folders: int, per_folder: int) -> list[str]:
    """*folders* folders of *per_folder* files each, two levels deep; their paths."""
    paths = []
    for index in range(folders):
        folder = root / f"pkg{index % 3}" / f"sub{index}"
        folder.mkdir(parents=True)
        for number in range(per_folder):
            path = folder / f"m{number}.py"
            path.write_text(f"{index}/{number}")
            paths.append(str(path.relative_to(root)))
    return paths


@pytest.fixture(params=[True, False], ids=["open-folders", "whole-paths"])
def open_folders(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(unpack, "OPEN_FOLDERS", request.param)
    return bool(request.param)


@pytest.mark.parametrize("threads", [1, 4])
def test_every_file_is_a_hard_link_of_its_source(
    tmp_path: Path, open_folders: bool, threads: int
) -> None:
    # 600 files: from 512 on, a lone wheel is placed by several threads.
    relative = source_tree(tmp_path / "cache", 30, 20)
    placements = [
        (str(tmp_path / "site" / path), str(tmp_path / "cache" / path), path.endswith("0.py"))
        for path in relative
    ]
    wal = WriteAhead.begin(tmp_path / "journal", {})
    journal = Journal(wal)
    journal.placing_threads = threads
    before = open_descriptors()
    journal.link_many(placements, Linker())
    assert open_descriptors() == before
    wal.close()
    # Every file and folder written down before it was made.
    lines = [json.loads(line) for line in (tmp_path / "journal").read_text().splitlines()[1:]]
    assert [path for kind, path in lines if kind == "file"] == [t for t, _, _ in placements]
    folders = {str(Path(target).parent) for target, _, _ in placements}
    folders |= {str(Path(folder).parent) for folder in folders} | {str(tmp_path / "site")}
    assert {path for kind, path in lines if kind == "dir"} == folders
    for target, source, _ in placements:
        assert os.stat(target).st_ino == os.stat(source).st_ino
        assert os.stat(source).st_nlink == 2


def test_a_clash_is_named_by_its_whole_path(tmp_path: Path, open_folders: bool) -> None:
    relative = source_tree(tmp_path / "cache", 3, 4)
    placements = [
        (str(tmp_path / "site" / path), str(tmp_path / "cache" / path), False) for path in relative
    ]
    there = Path(placements[5][0])
    there.parent.mkdir(parents=True)
    there.write_text("someone else's")
    before = open_descriptors()
    with pytest.raises(InstallError, match=f"^{there} already exists with other contents"):
        Journal().link_many(placements, Linker())
    assert open_descriptors() == before
    assert there.read_text() == "someone else's"


def test_a_file_there_with_the_same_bytes_is_shared(tmp_path: Path, open_folders: bool) -> None:
    """As every nvidia-*-cu12 wheel's nvidia/__init__.py: kept as it is, and noted
    as not this transaction's (a rollback leaves it)."""
    relative = source_tree(tmp_path / "cache", 3, 4)
    placements = [
        (str(tmp_path / "site" / path), str(tmp_path / "cache" / path), False) for path in relative
    ]
    there = Path(placements[5][0])
    there.parent.mkdir(parents=True)
    there.write_bytes(Path(placements[5][1]).read_bytes())
    inode = there.stat().st_ino
    wal = WriteAhead.begin(tmp_path / "journal", {})
    journal = Journal(wal)
    journal.placing_threads = 2
    journal.link_many(placements, Linker())
    wal.close()
    assert there.stat().st_ino == inode
    for target, source, _ in placements:
        assert Path(target).read_bytes() == Path(source).read_bytes()
    lines = [json.loads(line) for line in (tmp_path / "journal").read_text().splitlines()[1:]]
    assert [path for kind, path in lines if kind == "skip"] == [str(there)]


def test_a_missing_source_fails_as_whole_paths_say(tmp_path: Path, open_folders: bool) -> None:
    """A source folder gone (a cache entry removed meanwhile): the error names the
    file, as a link by whole paths does, whatever could not be opened."""
    relative = source_tree(tmp_path / "cache", 2, 3)
    placements = [
        (str(tmp_path / "site" / path), str(tmp_path / "cache" / path), False) for path in relative
    ]
    gone = Path(placements[4][1])
    for path in gone.parent.iterdir():
        path.unlink()
    gone.parent.rmdir()
    first = next(p for p in placements if Path(p[1]).parent == gone.parent)
    with pytest.raises(FileNotFoundError) as raised:
        Journal().link_many(placements, Linker())
    assert (raised.value.filename, raised.value.filename2) == (first[1], first[0])


def test_split_keeps_the_last_folder_open(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    folders = OpenFolders()
    before = open_descriptors()
    first, name = folders.split(str(tmp_path / "a" / "x"))
    assert name == "x"
    assert folders.split(str(tmp_path / "a" / "y")) == (first, "y")
    assert open_descriptors() == before + 1
    other, _ = folders.split(str(tmp_path / "b" / "z"))
    assert open_descriptors() == before + 1
    assert os.path.samestat(os.fstat(other), os.stat(tmp_path / "b"))
    # The root's files, and a bare name (the current folder).
    root, name = folders.split(os.sep + "x")
    assert (os.path.samestat(os.fstat(root), os.stat(os.sep)), name) == (True, "x")
    here, name = folders.split("x")
    assert (os.path.samestat(os.fstat(here), os.stat(os.curdir)), name) == (True, "x")
    folders.close()
    folders.close()
    assert open_descriptors() == before
    with pytest.raises(FileNotFoundError):
        folders.split(str(tmp_path / "nowhere" / "x"))
    assert open_descriptors() == before


@pytest.mark.skipif(sys.platform != "linux", reason="O_PATH is Linux's")
def test_a_folder_that_cannot_be_read_is_still_opened(tmp_path: Path) -> None:
    """O_PATH: a folder without read permission (only search) still names files."""
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "file").write_text("x")
    folder.chmod(0o100)
    try:
        folders = OpenFolders()
        descriptor, name = folders.split(str(folder / "file"))
        assert os.stat(name, dir_fd=descriptor).st_size == 1
        folders.close()
    finally:
        folder.chmod(0o700)


def test_a_wrapped_link_still_links_from_open_folders() -> None:
    """The kill matrix's driver puts wrappers in place of ``os.link`` before wheelwise
    is imported: the installs it kills must still link from open folders."""
    code = (
        "import os\n"
        "class Wrapped:\n"
        "    def __init__(self, real): self.real = real\n"
        "    def __call__(self, *args, **kwargs): return self.real(*args, **kwargs)\n"
        "os.link, os.stat = Wrapped(os.link), Wrapped(os.stat)\n"
        "from wheelwise.cache import unpacked\n"
        "from wheelwise.install import unpack\n"
        "print(unpack.OPEN_FOLDERS, unpacked.OPEN_FOLDERS)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert ran.stdout.split() == ["True", "True"], ran.stderr
