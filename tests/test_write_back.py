"""A file written to the disk while it is written (``wheelwise.write_back``), and a
rewritten wheel's output when a write-back fails: the error at the end, nothing
renamed into place, no temporary file left."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path
from typing import BinaryIO

import pytest

from wheelwise import write_back
from wheelwise.wheels.output import atomic_write
from wheelwise.write_back import writing_back

needs_fdatasync = pytest.mark.skipif(not hasattr(os, "fdatasync"), reason="no fdatasync here")


def _slow_pieces(stream: BinaryIO, pieces: int = 6) -> None:
    for index in range(pieces):
        stream.write(bytes([index]) * 4096)
        stream.flush()
        time.sleep(write_back._INTERVAL)


@pytest.fixture
def failing_write_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``fdatasync`` fails as a dying disk makes it fail."""

    def failing(descriptor: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fdatasync", failing)


def _no_write_back_thread() -> bool:
    return not any(thread.name == "write-back" for thread in threading.enumerate())


@needs_fdatasync
def test_the_file_is_written_back_while_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real = os.fdatasync

    def counting(descriptor: int) -> None:
        synced.append(os.fstat(descriptor).st_size)
        real(descriptor)

    monkeypatch.setattr(os, "fdatasync", counting)
    path = tmp_path / "out"
    with path.open("wb") as stream, writing_back(stream.fileno()):
        _slow_pieces(stream)
    assert path.read_bytes() == b"".join(bytes([i]) * 4096 for i in range(6))
    # Asked for while the file grew, not only once it was whole.
    assert synced
    assert min(synced) < 6 * 4096
    assert _no_write_back_thread()


@needs_fdatasync
@pytest.mark.usefixtures("failing_write_back")
def test_a_failed_write_back_is_raised_when_the_block_ends(tmp_path: Path) -> None:
    path = tmp_path / "out"
    with (
        pytest.raises(OSError, match="Input/output error") as caught,
        path.open("wb") as stream,
        writing_back(stream.fileno()),
    ):
        _slow_pieces(stream, pieces=3)
    assert caught.value.errno == errno.EIO
    assert _no_write_back_thread()


@needs_fdatasync
def test_an_error_of_the_block_stops_the_write_back(tmp_path: Path) -> None:
    def writer(stream: BinaryIO) -> None:
        with writing_back(stream.fileno()):
            _slow_pieces(stream, pieces=2)
            raise ValueError("the writer's own error")

    with (tmp_path / "out").open("wb") as stream, pytest.raises(ValueError, match="the writer's"):
        writer(stream)
    assert _no_write_back_thread()


@needs_fdatasync
def test_a_file_system_that_cannot_write_back_so_is_no_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def unsupported(descriptor: int) -> None:
        calls.append(descriptor)
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))

    monkeypatch.setattr(os, "fdatasync", unsupported)
    target = tmp_path / "out" / "demo-1.0-py3-none-any.whl"
    atomic_write(target, _slow_pieces)
    assert calls, "the write-back was tried"
    assert len(calls) == 1, "and given up after the first refusal"
    assert target.read_bytes() == b"".join(bytes([i]) * 4096 for i in range(6))


@pytest.mark.usefixtures("no_new_threads")
def test_without_a_thread_the_block_just_runs(tmp_path: Path) -> None:
    target = tmp_path / "out" / "demo-1.0-py3-none-any.whl"
    atomic_write(target, _slow_pieces)
    assert target.read_bytes() == b"".join(bytes([i]) * 4096 for i in range(6))


def test_without_fdatasync_the_block_just_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "fdatasync", raising=False)
    path = tmp_path / "out"
    with path.open("wb") as stream, writing_back(stream.fileno()):
        stream.write(b"whole")
    assert path.read_bytes() == b"whole"
    assert _no_write_back_thread()


@needs_fdatasync
@pytest.mark.usefixtures("failing_write_back")
def test_a_rewritten_wheel_is_not_renamed_into_place_when_its_write_back_fails(
    tmp_path: Path,
) -> None:
    target = tmp_path / "out" / "demo-1.0-py3-none-any.whl"
    with pytest.raises(OSError, match="Input/output error") as caught:
        atomic_write(target, _slow_pieces)
    assert caught.value.filename == str(target)
    assert not target.parent.exists()  # nor the folder made for it


def test_a_rewritten_wheel_is_whole_once_written(tmp_path: Path) -> None:
    target = tmp_path / "out" / "demo-1.0-py3-none-any.whl"
    atomic_write(target, _slow_pieces)
    assert target.read_bytes() == b"".join(bytes([i]) * 4096 for i in range(6))
    assert [p.name for p in target.parent.iterdir()] == [target.name]
    assert _no_write_back_thread()
