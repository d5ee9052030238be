"""delete_tree: a folder deleted whole, its files by several processes, and nothing
outside it touched (links unlinked, never followed)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wheelwise import delete_tree as dt
from wheelwise import forked_map as fm
from wheelwise.delete_tree import delete_tree

pytestmark = [
    pytest.mark.interp,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only"),
]


def _outside(tmp_path: Path) -> Path:
    """A folder beside the tree, with a file, that must survive its deletion."""
    outside = tmp_path / "outside"
    (outside / "kept").mkdir(parents=True)
    (outside / "kept" / "file.txt").write_text("keep me")
    (outside / "target.txt").write_text("keep me too")
    return outside


def _outside_intact(outside: Path) -> bool:
    return (outside / "kept" / "file.txt").read_text() == "keep me" and (
        outside / "target.txt"
    ).read_text() == "keep me too"


def _tree(top: Path, outside: Path) -> int:
    """A tree of nested folders, a big folder, empty ones and links out; its files."""
    count = 0
    big = top / "pkg" / "big"
    big.mkdir(parents=True)
    for n in range(700):  # several runs of one folder
        (big / f"m{n}.py").write_text("x")
        count += 1
    for depth in range(5):
        deep = top / "pkg" / Path(*[f"d{level}" for level in range(depth + 1)])
        deep.mkdir(parents=True, exist_ok=True)
        (deep / "f.so").write_bytes(b"\0" * 100)
        count += 1
    (top / "empty" / "inside").mkdir(parents=True)
    (top / "link-to-file").symlink_to(outside / "target.txt")
    (top / "pkg" / "link-to-folder").symlink_to(outside / "kept")
    (top / "dangling").symlink_to(top / "nowhere")
    return count + 3


def _pids(log: Path) -> set[str]:
    """The processes that wrote a line of *log*."""
    try:
        return {line.split()[0] for line in log.read_text().splitlines() if line.strip()}
    except FileNotFoundError:
        return set()


def test_a_big_tree_is_deleted_by_several_processes(
    tmp_path: Path, forking: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = _outside(tmp_path)
    top = tmp_path / "backup"
    files = _tree(top, outside)
    monkeypatch.setattr(dt, "MIN_FILES", files)
    log = tmp_path / "pids"
    real = dt._unlink_run

    def logged(run: dt._Run) -> None:
        # A process takes a second run only once another has taken one (for 5 s at
        # most): on a loaded runner one process could otherwise take them all
        # before the others start.
        me = str(os.getpid())
        deadline = time.monotonic() + 5
        while me in _pids(log) and _pids(log) == {me} and time.monotonic() < deadline:
            time.sleep(0.01)
        with log.open("a") as out:  # appends from every process
            out.write(f"{os.getpid()} {len(run.names)}\n")
        real(run)

    monkeypatch.setattr(dt, "_unlink_run", logged)
    delete_tree(top)
    assert not os.path.lexists(top)
    assert _outside_intact(outside)
    rows = [line.split() for line in log.read_text().splitlines()]
    assert len({pid for pid, _ in rows}) >= 2
    assert sum(int(size) for _, size in rows) == files
    assert max(int(size) for _, size in rows) <= dt._RUN


def test_workers_that_fail_leave_the_rest_to_rmtree(
    tmp_path: Path, forking: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = _outside(tmp_path)
    top = tmp_path / "backup"
    _tree(top, outside)
    monkeypatch.setattr(dt, "MIN_FILES", 1)

    def dies(run: dt._Run) -> None:
        if os.getpid() != forking:
            os._exit(9)  # a worker killed midway
        time.sleep(0.02)

    monkeypatch.setattr(dt, "_unlink_run", dies)
    delete_tree(top)
    assert not os.path.lexists(top)
    assert _outside_intact(outside)


def test_a_small_tree_goes_to_rmtree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = _outside(tmp_path)
    top = tmp_path / "backup"
    files = _tree(top, outside)
    monkeypatch.setattr(dt, "MIN_FILES", files + 1)

    def unexpected(run: dt._Run) -> None:
        raise AssertionError("a small tree is rmtree's")

    monkeypatch.setattr(dt, "_unlink_run", unexpected)
    delete_tree(top)
    assert not os.path.lexists(top)
    assert _outside_intact(outside)


def test_a_folder_swapped_for_a_link_after_listing_is_never_entered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = _outside(tmp_path)
    (outside / "kept" / "m0.py").write_text("not the tree's")
    top = tmp_path / "backup"
    _tree(top, outside)
    monkeypatch.setattr(dt, "MIN_FILES", 1)
    real = dt._listed

    def swapped(path: str) -> tuple[list[str], list[dt._Run]]:
        listed = real(path)
        big = top / "pkg" / "big"
        big.rename(tmp_path / "moved-big")
        big.symlink_to(outside / "kept")  # same names would be unlinked through it
        return listed

    monkeypatch.setattr(dt, "_listed", swapped)
    delete_tree(top)
    assert not os.path.lexists(top)
    assert _outside_intact(outside)
    assert (outside / "kept" / "m0.py").read_text() == "not the tree's"


def test_a_folder_replaced_by_another_keeps_the_other_files(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a").write_text("a")
    listed = os.lstat(folder)
    run = dt._Run(str(folder), listed.st_dev, listed.st_ino, ["a"])
    folder.rename(tmp_path / "was")
    folder.mkdir()
    (folder / "a").write_text("another's")
    dt._unlink_run(run)
    assert (folder / "a").read_text() == "another's"
    dt._unlink_run(run._replace(inode=os.lstat(folder).st_ino))
    assert not (folder / "a").exists()


def test_what_is_not_a_folder_is_left_as_rmtree_leaves_it(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(outside / "kept", target_is_directory=True)
    delete_tree(link)  # rmtree refuses a link to a folder
    assert link.is_symlink()
    assert _outside_intact(outside)
    delete_tree(tmp_path / "missing")  # nothing to do, no error
    assert not (tmp_path / "missing").exists()


_NAMES = st.sampled_from(["a", "b", "c", ".d", "e.py", "__pycache__"])
_ENTRIES = st.lists(
    st.tuples(st.lists(_NAMES, min_size=1, max_size=4), st.sampled_from(["file", "dir", "link"])),
    max_size=30,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(entries=_ENTRIES, threshold=st.sampled_from([1, 5, 10_000]))
def test_any_tree_is_deleted_whole_and_nothing_outside(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    entries: list[tuple[list[str], str]],
    threshold: int,
) -> None:
    monkeypatch.setattr(dt, "MIN_FILES", threshold)
    monkeypatch.setattr(fm, "STRATEGY", "serial")
    case = Path(os.path.join(tmp_path, f"case-{time.monotonic_ns()}"))
    outside = _outside(case)
    top = case / "tree"
    top.mkdir()
    for parts, kind in entries:
        path = top.joinpath(*parts)
        if any(parent.is_symlink() or parent.is_file() for parent in path.parents):
            continue
        if os.path.lexists(path):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "file":
            path.write_text("x")
        elif kind == "dir":
            path.mkdir()
        else:
            path.symlink_to(outside / "kept", target_is_directory=True)
    delete_tree(top)
    assert not os.path.lexists(top)
    assert _outside_intact(outside)
