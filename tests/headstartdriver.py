"""Run ``python -m wheelwise ARGS`` with a head start for any wheel kept unpacked
(not only big ones, nor only for projects that had one; ``HEAD_START_REAL=1``: as
an install decides), each step of it written to ``HEAD_START_LOG``: ``offered
NAME``, ``opened``, ``adopted NAME`` or ``abandoned``, ``compared beside the worker``
(the cache entries compared with a core left to the worker), ``failed`` (a head
start that failed, then the install made again). ``HEAD_START_FAIL=1``: the worker's placing
fails once it has placed the wheel's files; ``HEAD_START_NO_FORK=1``: the worker
cannot be forked; ``HEAD_START_READ_AHEAD=N``: while it waits, the worker compares
at most the first N files of the entries it reads ahead (whenever the command
comes), and ``left N`` tells how many files of its entry were left to the install."""

from __future__ import annotations

import os
import runpy
import sys
from typing import Any

import wheelwise.install.head_start as head
import wheelwise.install.transaction as transaction
from wheelwise.models.errors import InstallError

if not os.environ.get("HEAD_START_REAL"):
    head.MIN_ENTRY_BYTES = 0
    vars(head)["likely"] = lambda store, requested: True
log = os.environ["HEAD_START_LOG"]


def note(line: str) -> None:
    with open(log, "a") as out:
        out.write(line + "\n")


# The module's own names for what it imported: replaced below, as it looks them up.
names = vars(head)
offer, open_transaction, adopt = (
    head.HeadStart.offer,
    names["open_transaction"],
    head.HeadStart.adopt,
)
join, place_cached = head.HeadStart.join, names["place_cached"]
changed_entries = vars(transaction)["changed_entries"]


def logged_offer(self: Any, file: Any, *args: Any, **kwargs: Any) -> None:
    if self._pid is not None and self._entry is None:  # a worker waits for its first
        note(f"offered {file.filename}")
    offer(self, file, *args, **kwargs)


def logged_open(*args: Any, **kwargs: Any) -> Any:
    opened = open_transaction(*args, **kwargs)
    note("opened" if opened is not None else "not opened")
    return opened


def logged_adopt(self: Any, wheels: Any) -> Any:
    began = self.opened is not None
    found = adopt(self, wheels)
    if began:
        note(f"adopted {found.path.name}" if found is not None else "abandoned")
    return found


def logged_join(self: Any, journal: Any) -> None:
    try:
        join(self, journal)
    except head.HeadStartFailed:
        note("failed")
        raise


def logged_changed_entries(entries: Any, *, busy: int = 0) -> Any:
    if busy:
        note("compared beside the worker")
    return changed_entries(entries, busy=busy)


def failing_place(*args: Any, **kwargs: Any) -> None:
    place_cached(*args, **kwargs)
    raise InstallError("the disk is on fire")


head.HeadStart.offer = logged_offer  # type: ignore[method-assign]
names["open_transaction"] = logged_open
head.HeadStart.adopt = logged_adopt  # type: ignore[method-assign]
head.HeadStart.join = logged_join  # type: ignore[method-assign]
vars(transaction)["changed_entries"] = logged_changed_entries
if os.environ.get("HEAD_START_NO_FORK"):  # the first fork (the worker's) fails
    fork = os.fork

    def failing_fork_once() -> int:
        os.fork = fork
        raise OSError(11, "Resource temporarily unavailable")

    os.fork = failing_fork_once
if os.environ.get("HEAD_START_FAIL"):
    names["place_cached"] = failing_place
if "HEAD_START_READ_AHEAD" in os.environ:
    most = int(os.environ["HEAD_START_READ_AHEAD"])
    files_match, left_to_compare = names["files_match"], head.HeadStart.left_to_compare
    compared = [0]

    def counted_match(entry: Any, start: int, stop: int) -> bool:
        compared[0] += stop - start
        return bool(files_match(entry, start, stop))

    def logged_left(self: Any, ahead: Any) -> Any:
        left = left_to_compare(self, ahead)
        note(f"left {0 if left is None else len(left.files)}")
        return left

    names["_FILES_BETWEEN_LOOKS"] = 1
    names["files_match"] = counted_match
    names["_came"] = lambda commands: compared[0] >= most
    head.HeadStart.left_to_compare = logged_left  # type: ignore[method-assign]
sys.argv = ["wheelwise", *sys.argv[1:]]
runpy.run_module("wheelwise", run_name="__main__", alter_sys=True)
