"""Run ``python -m wheelwise ARGS``, sending this process a signal at the N-th
file-system step it takes inside a folder.

    python killdriver.py ROOT N SIGNAL COUNT_FILE -- ARGS...

The steps are the calls a transaction makes (``os.open``, ``os.write`` and
``os.sendfile`` to a file opened there, ``os.mkdir``, ``os.rename``,
``os.replace``, ``os.link``, ``os.symlink``, ``os.unlink``, ``os.rmdir``,
``os.fsync``), each counted twice: just before and just after it, so
that a kill can land between creating a file and writing it. ``N = 0`` only
counts; the count is written to COUNT_FILE when the run ends (not when killed).
``KILL_EXTRA_ROOTS`` (paths joined by ``os.pathsep``) counts the steps inside those
folders too (the cache's unpacked wheels, say). Unpacking runs in this
process, one wheel after another, so that the steps come in the same order
(``KILL_STRATEGY=fork``: in forked workers too, which count on from the fork;
``KILL_HEAD_START=1``: in a head start's worker too, likewise;
``KILL_STREAM_UNPACK_FROM``: wheels from that size on are unpacked as they download;
``KILL_UNPACK_AHEAD``: the others are unpacked into the cache before the transaction);
the files of a wheel kept unpacked in the cache are placed by threads, as a big
wheel's are, so the step a kill lands on is among theirs, in any order.
"""

from __future__ import annotations

import atexit
import os
import runpy
import signal
import sys
import threading
from typing import Any

# Ctrl-C as a terminal's foreground process gets it: a shell that starts the tests in
# the background ignores SIGINT (POSIX), and every child inherits that.
signal.signal(signal.SIGINT, signal.default_int_handler)

root = os.path.abspath(sys.argv[1])
roots = [root] + [
    os.path.abspath(extra)
    for extra in os.environ.get("KILL_EXTRA_ROOTS", "").split(os.pathsep)
    if extra
]
target = int(sys.argv[2])
signum = getattr(signal, sys.argv[3])
count_file = sys.argv[4]
arguments = sys.argv[sys.argv.index("--") + 1 :]
steps = 0
opened: set[int] = set()


_counting = threading.Lock()  # files are placed by several threads


def _step() -> None:
    global steps
    with _counting:
        steps += 1
        now = steps
    if now == target:
        os.kill(os.getpid(), signum)


def _inside(path: Any, dir_fd: int | None) -> bool:
    if isinstance(path, int):
        return path in opened
    try:
        text = os.fsdecode(path)
    except TypeError:
        return False
    if dir_fd is not None and not os.path.isabs(text):
        # shutil.rmtree, inside a folder it opened: counted only when that folder
        # is inside (a scratch folder in the cache is not).
        return dir_fd in opened
    full = os.path.abspath(text)
    return any(full == top or full.startswith(top + os.sep) for top in roots)


class _Counted:
    """os.NAME, counting each call on a path inside the target. A callable object, not
    a function: Python 3.10's pathlib keeps os functions as class attributes of its
    accessor, where a function would be bound as a method."""

    def __init__(self, name: str, paths: int) -> None:
        self.name = name
        self.paths = paths
        self.real = getattr(os, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        counted = any(
            _inside(arg, _folder_of(index, kwargs)) for index, arg in enumerate(args[: self.paths])
        )
        if counted:
            _step()
        result = self.real(*args, **kwargs)
        if counted:
            if self.name == "open":
                opened.add(result)
            _step()
        return result


def _folder_of(index: int, kwargs: dict[str, Any]) -> int | None:
    """The folder descriptor the *index*-th path argument is relative to, if any
    (``os.link`` and ``os.rename`` take one for each of their two paths)."""
    if "dir_fd" in kwargs:
        return kwargs["dir_fd"]  # type: ignore[no-any-return]
    return kwargs.get("src_dir_fd" if index == 0 else "dst_dir_fd")


def _wrap(name: str, paths: int) -> None:
    setattr(os, name, _Counted(name, paths))


_real_close = os.close


def _close(fd: int) -> None:
    opened.discard(fd)
    _real_close(fd)


os.close = _close
for _name, _paths in [
    ("open", 1),
    ("write", 1),
    ("mkdir", 1),
    ("rename", 2),
    ("replace", 2),
    ("link", 2),
    ("symlink", 2),
    ("sendfile", 1),
    ("unlink", 1),
    ("rmdir", 1),
    ("fsync", 1),
]:
    _wrap(_name, _paths)


@atexit.register
def _report() -> None:
    # Also after a run that ended before its step: streamed wheels are written as the
    # network delivers them, so two runs may take different numbers of steps.
    with open(count_file, "w") as out:
        out.write(str(steps))


import wheelwise.cache.unpacked  # noqa: E402
import wheelwise.delete_tree  # noqa: E402
import wheelwise.fetch.download  # noqa: E402
import wheelwise.install.head_start  # noqa: E402
import wheelwise.install.parallel  # noqa: E402
import wheelwise.install.unpack  # noqa: E402

wheelwise.install.parallel.STRATEGY = os.environ.get("KILL_STRATEGY", "serial")
# Every backup is deleted as a big one is, folder by folder (in this process, the
# runs being few), so kills land among those unlinks and removals.
wheelwise.delete_tree.MIN_FILES = 1
# Every entry published is noted as one of many files is, so kills land on the note.
wheelwise.cache.unpacked.MANY_FILES = 1
# KILL_HEAD_START=1: the first wheel pinned that is kept unpacked, and not installed,
# is placed ahead by the head start's worker (counting on from its fork), however
# small; else never, so that every step is this process's.
if os.environ.get("KILL_HEAD_START"):
    wheelwise.install.head_start.MIN_ENTRY_BYTES = 0
    vars(wheelwise.install.head_start)["likely"] = lambda store, requested: True
else:
    wheelwise.install.head_start.SWITCH = "off"
# Every unpacked wheel of two files (or folders of one depth) or more is placed by
# several threads, as a big one is: a kill lands wherever they are.
wheelwise.install.unpack._THREADED_LINKS = 2
wheelwise.install.unpack._THREADED_DIRS = 2
# KILL_STREAM_UNPACK_FROM=0: every wheel is unpacked into the cache as it downloads,
# as a big one is (none fits the memory budget, either), so kills land while its
# members arrive.
if "KILL_STREAM_UNPACK_FROM" in os.environ:
    import wheelwise.install.plan

    wheelwise.fetch.download.STREAM_UNPACK_FROM = int(os.environ["KILL_STREAM_UNPACK_FROM"])
    wheelwise.install.plan.IN_MEMORY_DOWNLOADS = 0
# KILL_UNPACK_AHEAD=1: every wheel fetched whole is unpacked into the cache by the
# background thread, at once, and the fetch waits for it, so kills land there too.
if os.environ.get("KILL_UNPACK_AHEAD"):
    from aheadkit import unpack_ahead_at_once

    unpack_ahead_at_once()
sys.argv = ["wheelwise", *arguments]
runpy.run_module("wheelwise", run_name="__main__", alter_sys=True)
