"""Unpacking several wheels at once, all writing through one :class:`Journal`.

Most of an unpack is Python code (zip members, RECORD entries, paths), so threads
share one core. On Linux, when the calling process runs no other thread (so that a
fork cannot inherit a lock held elsewhere), this process and forked children, one
per further available core, take wheels from a shared queue, heaviest first. A child
writes each file and folder down in the transaction's journal file (inherited,
opened for appending) before it makes it, as this process does, so a rollback
removes them even if a child dies; it reports its failure and its warnings over a
pipe. A one-byte shared flag stops every worker at its next file: set by a failing
worker, by Ctrl-C in a child, or by cancelling the journal. Elsewhere, or when other
threads run, the wheels are unpacked by a small thread pool.

Each task is a callable that unpacks one wheel through the journal it is given and
raises :class:`InstallError` (or :class:`Cancelled`, once another task failed).
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from wheelwise.forked_map import (
    MAX_QUEUED,
    can_fork,
    cores,
    describe_status,
    new_queue,
    reap,
    stop,
    stop_on_ctrl_c,
    take,
)
from wheelwise.install.unpack import Cancelled, Journal
from wheelwise.models.errors import InstallError

__all__ = [
    "ERROR",
    "WARNING",
    "ReportingJournal",
    "Task",
    "receive",
    "run_tasks",
    "send",
]

Task = Callable[[Journal], None]

# Threads for the fallback pool: enough to overlap one wheel's decompression and
# hashing with another's file creation; more only adds contention.
THREADS = 4
# "auto", or "fork" / "threads" / "serial" to force a strategy (tests use this).
STRATEGY = "auto"

# What a child reports: its failure, a warning.
ERROR, WARNING = b"E", b"W"


def _strategy(count: int, alone: bool) -> str:
    if STRATEGY != "auto":
        return STRATEGY
    if count <= 1 or alone:
        return "serial"
    return "fork" if can_fork() and count <= MAX_QUEUED else "threads"


def run_tasks(
    tasks: Sequence[Task], weights: Sequence[int], journal: Journal, *, busy: int = 0
) -> None:
    """Run *tasks* (their *weights* guide the split); the first failure, in task
    order, is raised once every task has stopped. Never leaves a child running.
    *busy*: cores the caller keeps busy meanwhile (a head start's worker): no child
    is forked for them, and when they leave only this process's core, the tasks run
    here one after another."""
    alone = busy > 0 and cores() - busy < 2
    strategy = _strategy(len(tasks), alone)
    threads = journal.placing_threads
    # Workers side by side have a core each, as has a process left one core: threads
    # of their own would only hand the interpreter lock to and fro.
    if strategy != "serial" or alone:
        journal.placing_threads = 1
    try:
        if strategy == "serial":
            for task in tasks:
                task(journal)
        elif strategy == "fork":
            _forked(tasks, weights, journal, busy)
        else:
            _threaded(tasks, weights, journal)
    finally:
        journal.placing_threads = threads


def _raise_first(failures: dict[int, BaseException]) -> None:
    if failures:
        raise failures[min(failures)]


def _threaded(tasks: Sequence[Task], weights: Sequence[int], journal: Journal) -> None:
    # Heaviest first, so that a big wheel does not start last and finish alone.
    order = sorted(range(len(tasks)), key=lambda i: weights[i], reverse=True)
    failures: dict[int, BaseException] = {}
    with ThreadPoolExecutor(min(THREADS, len(tasks))) as pool:
        futures = {pool.submit(tasks[i], journal): i for i in order}
        try:
            for future in as_completed(futures):
                error = future.exception()
                if error is not None and not isinstance(error, Cancelled):
                    journal.cancel()
                    failures[futures[future]] = error
        except BaseException:  # interrupted while waiting: stop the workers too
            journal.cancel()
            raise
    _raise_first(failures)


class ReportingJournal(Journal):
    """A child's journal: the parent's journal file, the shared stop flag, and its
    warnings sent to the parent."""

    def __init__(self, pipe: int, flag: mmap.mmap, parent: Journal) -> None:
        super().__init__(parent.wal)  # the parent's open journal file, inherited
        self.placing_threads = parent.placing_threads
        self._pipe = pipe
        self._flag = flag

    def is_cancelled(self) -> bool:
        return self._flag[0] != 0

    def note_warning(self, message: str) -> None:
        send(self._pipe, WARNING + message.encode("utf-8", "replace"))


def send(pipe: int, message: bytes) -> None:
    data = message + b"\0"
    while data:
        data = data[os.write(pipe, data) :]


def _work(
    tasks: Sequence[Task], queue: int, flag: mmap.mmap, journal: Journal
) -> tuple[int, BaseException] | None:
    """One worker: tasks from the queue until it is empty or a task failed; the
    failure (task index, exception) if it was one of these tasks'."""
    index = -1
    try:
        while (taken := take(queue, flag)) is not None:
            index = taken
            tasks[index](journal)
    except Cancelled:
        return None
    except Exception as exc:
        flag[0] = 1
        return index, exc
    return None


def _child(tasks: Sequence[Task], queue: int, pipe: int, flag: mmap.mmap, parent: Journal) -> int:
    try:
        failure = _work(tasks, queue, flag, ReportingJournal(pipe, flag, parent))
    except BaseException as exc:  # interrupted: the parent says so
        flag[0] = 1
        failure = (-1, exc)
    if failure is None:
        return 0
    index, error = failure
    message = str(error) if isinstance(error, InstallError) else f"{type(error).__name__}: {error}"
    send(pipe, ERROR + f"{index}\t{message}".encode("utf-8", "replace"))
    return 1


class _Reader(threading.Thread):
    """Moves one child's reports into the journal; keeps its failure, if any."""

    def __init__(self, pipe: int, journal: Journal, flag: mmap.mmap) -> None:
        super().__init__(daemon=True)
        self.pipe = pipe
        self.journal = journal
        self.flag = flag
        self.failure: tuple[int, str] | None = None

    def run(self) -> None:
        pending = b""
        with os.fdopen(self.pipe, "rb", buffering=0) as stream:
            while chunk := stream.read(1 << 16):
                *messages, pending = (pending + chunk).split(b"\0")
                for message in messages:
                    self._on_message(message)

    # Not `_handle`: Python 3.13's Thread keeps its own `_handle` on the instance.
    def _on_message(self, message: bytes) -> None:
        error = receive(message, self.journal)
        if error is not None:
            index, _, text = error.partition("\t")
            self.failure = (int(index), text)
            self.flag[0] = 1
            self.journal.cancel()


def receive(message: bytes, journal: Journal) -> str | None:
    """A child's report into *journal*; the text of an ``ERROR`` report, else None."""
    kind, body = message[:1], message[1:]
    if kind == WARNING:
        journal.note_warning(body.decode("utf-8", "replace"))
    elif kind == ERROR:
        return body.decode("utf-8", "replace")
    return None


def _forked(tasks: Sequence[Task], weights: Sequence[int], journal: Journal, busy: int = 0) -> None:
    # The work queue: task indexes, heaviest first, in a pipe every worker reads
    # from, so that whoever is free takes the next wheel.
    order = sorted(range(len(tasks)), key=lambda i: weights[i], reverse=True)
    queue = new_queue(order)
    flag = mmap.mmap(-1, 1)  # shared with the children: non-zero means stop
    journal.when_cancelled(lambda: stop(flag))
    if journal.is_cancelled():
        stop(flag)
    children: list[tuple[int, _Reader]] = []
    failures: dict[int, BaseException] = {}
    try:
        for _ in range(min(cores() - busy, len(tasks)) - 1):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child; coverage does not follow forks
                code = 1
                try:
                    os.close(read_end)
                    stop_on_ctrl_c(flag)
                    code = _child(tasks, queue, write_end, flag, journal)
                finally:
                    os._exit(code)
            os.close(write_end)
            children.append((pid, _Reader(read_end, journal, flag)))
        for _, reader in children:
            reader.start()
        failure = _work(tasks, queue, flag, journal)
        if failure is not None:
            journal.cancel()
            failures[failure[0]] = failure[1]
    except BaseException:  # interrupted, or a fork failed: stop the children, then go on
        flag[0] = 1
        journal.cancel()
        raise
    finally:
        os.close(queue)
        interrupted = False
        for pid, reader in children:
            status, stopped = reap(pid, flag)
            interrupted = interrupted or stopped
            reader.join()
            if reader.failure is not None:
                failures[reader.failure[0]] = InstallError(reader.failure[1])
            elif status != 0 and not flag[0]:
                failures[len(tasks)] = InstallError(
                    f"a worker process unpacking wheels died ({describe_status(status)})"
                )
        flag.close()
        if interrupted:
            raise KeyboardInterrupt
    _raise_first(failures)
