"""forked_map: the same results as a plain map, from several processes."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from wheelwise import forked_map as fm
from wheelwise.forked_map import WorkerFailed, forked_map

pytestmark = [
    pytest.mark.interp,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only"),
]


def no_child_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def slow_in_parent(parent: int, child: Callable[[int], object]) -> Callable[[int], object]:
    """A function the parent runs slowly, so that the children take most items."""

    def function(item: int) -> object:
        if os.getpid() == parent:
            time.sleep(0.02)
            return item
        return child(item)

    return function


def test_results_come_back_in_order_from_several_processes(forking: int) -> None:
    offset = 1000  # a closure: nothing is pickled on the way to the children

    def function(item: int) -> tuple[int, int]:
        time.sleep(0.001)
        return item + offset, os.getpid()

    results = forked_map(function, list(range(300)))
    assert [value for value, _ in results] == [item + offset for item in range(300)]
    assert len({pid for _, pid in results}) > 1
    assert no_child_left()


def test_the_first_failing_item_raises_its_own_exception(forking: int) -> None:
    def function(item: int) -> int:
        time.sleep(0.001)
        if item in (40, 250):
            raise ValueError(f"item {item} is bad")
        return item

    with pytest.raises(ValueError, match="item 40 is bad"):
        forked_map(function, list(range(300)))
    assert no_child_left()


def test_a_failure_in_a_child_comes_back_with_its_type(forking: int) -> None:
    def fail(item: int) -> object:
        raise LookupError(f"no such item {item}")

    with pytest.raises(LookupError, match="no such item"):
        forked_map(slow_in_parent(forking, fail), list(range(20)))


def test_a_result_that_cannot_be_pickled_is_a_clear_failure(forking: int) -> None:
    def unpicklable(item: int) -> object:
        return lambda: item

    with pytest.raises(WorkerFailed, match="result could not be passed back"):
        forked_map(slow_in_parent(forking, unpicklable), list(range(20)))


def test_a_child_that_dies_fails_the_map(forking: int) -> None:
    def die(item: int) -> object:
        os._exit(3)

    with pytest.raises(WorkerFailed, match=r"a worker process stopped \(exit status 3\)"):
        forked_map(slow_in_parent(forking, die), list(range(20)))
    assert no_child_left()


def test_ctrl_c_in_the_parent_stops_and_reaps_the_children(forking: int) -> None:
    def function(item: int) -> int:
        if os.getpid() == forking and item > 5:
            raise KeyboardInterrupt
        time.sleep(0.005)
        return item

    with pytest.raises(KeyboardInterrupt):
        forked_map(function, list(range(200)))
    assert no_child_left()


def test_ctrl_c_the_parent_defers_still_stops_the_map_with_a_failure(forking: int) -> None:
    deferred: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: deferred.append(signum))
    try:

        def function(item: int) -> int:
            if os.getpid() == forking:
                time.sleep(0.02)
            elif item > 5:
                os.kill(os.getpid(), signal.SIGINT)  # as the terminal sends it to all
            return item

        with pytest.raises(WorkerFailed, match="stopped"):
            forked_map(function, list(range(200)))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert no_child_left()


@pytest.mark.skipif(sys.platform != "linux", reason="forks only on Linux")
def test_few_items_or_other_threads_mean_a_plain_map(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fm, "cores", lambda: 4)
    parent = os.getpid()
    few = forked_map(lambda item: os.getpid(), list(range(fm.MIN_ITEMS - 1)))
    assert set(few) == {parent}

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        many = forked_map(lambda item: os.getpid(), list(range(fm.MIN_ITEMS * 2)))
    finally:
        stop.set()
        other.join()
    assert set(many) == {parent}


@pytest.mark.skipif(sys.platform != "linux", reason="forks only on Linux")
@pytest.mark.parametrize(("machine", "busy", "processes"), [(2, 1, 1), (3, 1, 2), (4, 2, 2)])
def test_cores_kept_busy_by_the_caller_get_no_child(
    monkeypatch: pytest.MonkeyPatch, forks: list[int], machine: int, busy: int, processes: int
) -> None:
    monkeypatch.setattr(fm, "cores", lambda: machine)
    items = list(range(fm.MIN_ITEMS * 4))
    assert forked_map(lambda item: item * 2, items, busy=busy) == [item * 2 for item in items]
    assert len(forks) == processes - 1
    assert no_child_left()


def test_the_queue_refuses_more_than_its_pipe_holds() -> None:
    with pytest.raises(ValueError, match="more than"):
        fm.new_queue(range(fm.MAX_QUEUED + 1))


def test_many_items_are_queued_in_batches(forking: int) -> None:
    count = fm.MAX_QUEUED * 2 + 3
    assert forked_map(lambda item: item * 2, list(range(count))) == [i * 2 for i in range(count)]


def test_no_temporary_folder_means_a_plain_map(
    forking: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_room() -> object:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_room)
    results = forked_map(lambda item: os.getpid(), list(range(100)))
    assert set(results) == {forking}


def test_a_child_that_cannot_write_its_results_says_where(
    forking: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    readonly = tmp_path / "results"
    readonly.write_bytes(b"")

    def unwritable(count: int) -> list[IO[bytes]]:
        return [readonly.open("rb") for _ in range(count)]

    monkeypatch.setattr(fm, "_results_files", unwritable)
    with pytest.raises(WorkerFailed, match=r"could not write its results .* set TMPDIR"):
        forked_map(slow_in_parent(forking, lambda item: item), list(range(20)))
    assert no_child_left()
