"""Deleting a folder and everything in it, its files unlinked by a process per core.

Unlinking is the kernel's work, and it scales over processes where one interpreter's
threads do not (docs/benchmarks-method.md, "Figures behind design choices"):
:func:`delete_tree` lists the folders first, hands their files to
:func:`~wheelwise.forked_map.forked_map` in runs, then removes the emptied folders
deepest first. A tree of few files, or one it cannot list, goes to
:func:`shutil.rmtree` as it is.

What is deleted is what :func:`shutil.rmtree` deletes: a link is unlinked, never
followed, and a folder is entered only when it is still the one that was listed (its
device and inode); errors are ignored, as ``rmtree(ignore_errors=True)`` ignores
them, and whatever is left at the end gets that ``rmtree`` too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from typing import NamedTuple

__all__ = ["MIN_FILES", "delete_tree"]

# Below this many files one process deletes them faster than forked ones.
MIN_FILES = 2048
# Files one worker unlinks per item of work: big folders are shared too.
_RUN = 256


class _Run(NamedTuple):
    """Some of one folder's files: the folder's path, device and inode, and names."""

    folder: str
    device: int
    inode: int
    names: list[str]


def delete_tree(top: str | os.PathLike[str]) -> None:
    """Delete the folder *top* and everything in it, ignoring errors."""
    path = os.fspath(top)
    try:
        folders, runs = _listed(path)
    except OSError:
        folders, runs = [], []
    if sum(len(run.names) for run in runs) >= MIN_FILES:
        from wheelwise.forked_map import WorkerFailed, forked_map

        # A fork that failed, or workers stopped (Ctrl-C deferred by a transaction's
        # commit): what they left goes to rmtree below.
        with contextlib.suppress(OSError, WorkerFailed):
            forked_map(_unlink_run, runs)
        for folder in reversed(folders):  # listed parents first
            with contextlib.suppress(OSError):
                os.rmdir(folder)  # noqa: PTH106 - plain strings
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)


def _listed(top: str) -> tuple[list[str], list[_Run]]:
    """The folders under *top* (itself first, parents before children) and their
    files (anything but a folder) in runs of at most :data:`_RUN`; raises OSError
    when *top* is not a folder or cannot be read."""
    folders: list[str] = []
    runs: list[_Run] = []
    found = os.lstat(top)
    if not stat.S_ISDIR(found.st_mode):
        raise NotADirectoryError(top)
    pending = [(top, found.st_dev, found.st_ino)]
    while pending:
        folder, device, inode = pending.pop()
        folders.append(folder)
        names: list[str] = []
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    # scandir gives no device: taken as its parent's (a folder with
                    # a file system mounted on it differs, and is left to rmtree).
                    pending.append((entry.path, device, entry.inode()))
                else:
                    names.append(entry.name)
        runs += [
            _Run(folder, device, inode, names[start : start + _RUN])
            for start in range(0, len(names), _RUN)
        ]
    return folders, runs


def _unlink_run(run: _Run) -> None:
    """Unlink *run*'s files from its folder, if the folder is still the one listed."""
    try:
        fd = os.open(run.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        found = os.fstat(fd)
        if (found.st_dev, found.st_ino) != (run.device, run.inode):
            return  # replaced since it was listed: left to rmtree's own checks
        for name in run.names:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)
