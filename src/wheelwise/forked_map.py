"""One function mapped over many items by this process and forked copies of it.

Reading wheels and writing a site's files is mostly Python code, so threads would
share one core. On Linux, when this process runs no other thread (a fork cannot
inherit a lock held elsewhere), :func:`forked_map` forks one child per further
available core. Every process takes batches of items from one shared queue, so
whoever is free takes the next; a child writes each result, pickled, to an unnamed
temporary file that the parent reads once the child has ended. The children inherit
the function and the items: nothing is pickled on the way in, so a closure serves.
Elsewhere, with other threads running, or for a few items, it is a plain map in
this process.

What runs in a child must not depend on changing this process's state: its changes
to objects stay in the child. Results and exceptions go back pickled (an exception
that does not pickle comes back as :class:`WorkerFailed` naming it).
"""

from __future__ import annotations

import io
import mmap
import os
import pickle
import signal
import struct
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from typing import IO, TypeVar, cast

from wheelwise.errors import WheelwiseError

__all__ = [
    "WorkerFailed",
    "can_fork",
    "cores",
    "describe_status",
    "forked_map",
    "new_queue",
    "reap",
    "stop",
    "stop_on_ctrl_c",
    "take",
]

T = TypeVar("T")
R = TypeVar("R")

# "auto", or "fork" / "serial" to force a strategy (tests use this).
STRATEGY = "auto"
# Below this many items a fork costs more than it saves.
MIN_ITEMS = 64

# Work is queued in a pipe before the workers start: its buffer (64 KiB on Linux)
# must hold every index, four bytes each, or the write would wait for a reader.
MAX_QUEUED = 8192
_INDEX = struct.Struct("<I")
# A child's exit status when it could not write its results.
_UNWRITTEN = 2


class WorkerFailed(WheelwiseError, RuntimeError):
    """A worker process died, or its failure could not be passed back as it was."""


def cores() -> int:
    """The processor cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether forking workers is safe and useful here."""
    return sys.platform == "linux" and threading.active_count() == 1 and cores() > 1


def forked_map(function: Callable[[T], R], items: Sequence[T], *, busy: int = 0) -> list[R]:
    """``[function(item) for item in items]``, over several processes where that
    pays. An exception is raised once every worker has stopped: the one of the
    first item that failed (items after it may have run meanwhile). *busy*: cores
    the caller keeps busy meanwhile (a process it started): no child is forked for
    them, and none at all when that leaves only this process's core."""
    spare = cores() - busy
    if STRATEGY == "serial" or (
        STRATEGY == "auto" and (len(items) < MIN_ITEMS or spare < 2 or not can_fork())
    ):
        return [function(item) for item in items]
    batches = _batches(len(items))
    outs = _results_files(max(1, min(spare, len(batches)) - 1))
    if outs is None:  # no temporary folder to hand results back through
        return [function(item) for item in items]
    return _forked(function, items, batches, outs)


def _results_files(count: int) -> list[IO[bytes]] | None:
    """*count* unnamed temporary files, one per child; None if they cannot be made."""
    outs: list[IO[bytes]] = []
    try:
        for _ in range(count):
            outs.append(tempfile.TemporaryFile())  # noqa: SIM115 - closed in _collect
    except OSError:
        for out in outs:
            out.close()
        return None
    return outs


class _Outcome:
    """Results by item index, and failures by item index."""

    def __init__(self) -> None:
        self.results: dict[int, object] = {}
        self.failures: dict[int, BaseException] = {}


def _batches(count: int) -> list[range]:
    size = -(-count // MAX_QUEUED)
    return [range(start, min(start + size, count)) for start in range(0, count, size)]


def new_queue(indexes: Sequence[int]) -> int:
    """A work queue holding *indexes* (at most :data:`MAX_QUEUED`), in that order:
    the read end of a pipe, for :func:`take`, to share with forked workers."""
    if len(indexes) > MAX_QUEUED:
        raise ValueError(f"{len(indexes)} indexes to queue, more than {MAX_QUEUED}")
    queue, queue_in = os.pipe()
    try:
        os.write(queue_in, b"".join(_INDEX.pack(i) for i in indexes))
    except BaseException:
        os.close(queue)
        raise
    finally:
        os.close(queue_in)
    return queue


def take(queue: int, flag: mmap.mmap) -> int | None:
    """The next index from the shared *queue*, or None when it is empty or *flag* is
    set (a worker failed). A pipe read of 4 bytes is atomic, so each index goes to
    one worker."""
    if flag[0]:
        return None
    record = os.read(queue, _INDEX.size)
    return _INDEX.unpack(record)[0] if len(record) == _INDEX.size else None


def _work(
    function: Callable[[T], R],
    items: Sequence[T],
    batches: Sequence[range],
    queue: int,
    flag: mmap.mmap,
    report: Callable[[int, bool, object], None],
) -> None:
    """One worker: batches from the queue until it is empty or an item failed."""
    while (batch := take(queue, flag)) is not None:
        for index in batches[batch]:
            try:
                value: object = function(items[index])
            except Exception as exc:
                flag[0] = 1
                report(index, False, exc)
                return
            report(index, True, value)


def _child_report(out: IO[bytes]) -> Callable[[int, bool, object], None]:
    def report(index: int, ok: bool, value: object) -> None:
        try:
            record = pickle.dumps((index, ok, value), pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            what = "result" if ok else f"failure ({type(value).__name__}: {value})"
            problem = WorkerFailed(f"a worker's {what} could not be passed back: {exc}")
            record = pickle.dumps((index, False, problem), pickle.HIGHEST_PROTOCOL)
        out.write(record)

    return report


def _child(
    function: Callable[[T], R],
    items: Sequence[T],
    batches: Sequence[range],
    queue: int,
    flag: mmap.mmap,
    out: IO[bytes],
) -> int:
    try:
        _work(function, items, batches, queue, flag, _child_report(out))
        out.flush()
    except OSError:  # the results file could not be written
        flag[0] = 1
        return _UNWRITTEN
    except BaseException:  # interrupted
        flag[0] = 1
        return 1
    return 0


def _forked(
    function: Callable[[T], R],
    items: Sequence[T],
    batches: Sequence[range],
    outs: Sequence[IO[bytes]],
) -> list[R]:
    queue = new_queue(range(len(batches)))
    flag = mmap.mmap(-1, 1)  # shared with the children: non-zero means stop
    outcome = _Outcome()

    def report(index: int, ok: bool, value: object) -> None:
        if ok:
            outcome.results[index] = value
        else:
            assert isinstance(value, BaseException)
            outcome.failures[index] = value

    children: list[tuple[int, IO[bytes]]] = []
    unused = list(outs)
    try:
        while unused:
            out = unused[0]
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child; coverage does not follow forks
                code = 1
                try:
                    stop_on_ctrl_c(flag)
                    code = _child(function, items, batches, queue, flag, out)
                finally:
                    os._exit(code)
            children.append((pid, unused.pop(0)))
        _work(function, items, batches, queue, flag, report)
    except BaseException:  # interrupted, or a fork failed: stop the children, then go on
        flag[0] = 1
        raise
    finally:
        os.close(queue)
        for out in unused:  # a fork failed
            out.close()
        interrupted = _collect(children, flag, report, outcome)
        flag.close()
        if interrupted:
            raise KeyboardInterrupt
    if outcome.failures:
        raise outcome.failures[min(outcome.failures)]
    if len(outcome.results) < len(items):  # Ctrl-C stopped them; this process defers it
        raise WorkerFailed("the worker processes were stopped (Ctrl-C) before the end")
    return [cast(R, outcome.results[index]) for index in range(len(items))]


def _collect(
    children: list[tuple[int, IO[bytes]]],
    flag: mmap.mmap,
    report: Callable[[int, bool, object], None],
    outcome: _Outcome,
) -> bool:
    """Wait for every child and take in its results; whether Ctrl-C came meanwhile."""
    interrupted = False
    for pid, out in children:
        with out:
            status, stopped = reap(pid, flag)
            interrupted = interrupted or stopped
            if status != 0:  # its results are not all there: the map has failed
                outcome.failures[-1] = WorkerFailed(_stopped(status))
                continue
            out.seek(0)
            results = io.BytesIO(out.read())  # one read, not several per result
            while True:
                try:
                    index, ok, value = pickle.load(results)
                except EOFError:
                    break
                report(index, ok, value)
    return interrupted


def _stopped(status: int) -> str:
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _UNWRITTEN:
        return (
            "a worker process could not write its results to a temporary file in "
            f"{tempfile.gettempdir()} (is it full?); free some space there, or set TMPDIR "
            "to another folder"
        )
    return f"a worker process stopped ({describe_status(status)})"


def stop(flag: mmap.mmap) -> None:
    """Set the shared stop *flag* (unless it is closed already)."""
    if not flag.closed:
        flag[0] = 1


def stop_on_ctrl_c(flag: mmap.mmap) -> None:
    """In a child: Ctrl-C (sent to the whole process group) sets *flag*, which stops
    every worker before its next piece of work; the parent decides what happens next."""
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda signum, frame: stop(flag))


def reap(pid: int, flag: mmap.mmap) -> tuple[int, bool]:
    """Wait for the child *pid*, even through Ctrl-C (which sets *flag*, stopping
    every worker before its next piece of work), so that whatever it reports is in
    before the parent goes on: its status, and whether Ctrl-C came meanwhile."""
    interrupted = False
    while True:
        try:
            return os.waitpid(pid, 0)[1], interrupted
        except KeyboardInterrupt:
            stop(flag)
            interrupted = True


def describe_status(status: int) -> str:
    """A child's wait status in words."""
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
