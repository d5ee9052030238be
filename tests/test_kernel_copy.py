"""``kernel_copy.copy_range``: a range of one file appended to another at its
position, by ``sendfile`` or, where the kernel cannot, a read/write loop; both give
the same bytes, a source that ends early gives fewer, and other errors are raised."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelwise.kernel_copy import copy_range


@contextmanager
def files(directory: Path, data: bytes, prefix: bytes) -> Iterator[tuple[int, int, Path]]:
    """The source holding *data*, and a new target already holding *prefix*."""
    source_path, target_path = directory / "source", directory / "target"
    source_path.write_bytes(data)
    source = os.open(source_path, os.O_RDONLY)
    target = os.open(target_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(target, prefix)
        yield source, target, target_path
    finally:
        os.close(source)
        os.close(target)


def unsupported(*args: object) -> int:
    raise OSError(errno.EINVAL, "Invalid argument")


@pytest.mark.parametrize("kernel", [True, False], ids=["sendfile", "loop"])
def test_a_range_lands_at_the_targets_position_which_moves_past_it(
    tmp_path: Path, kernel: bool
) -> None:
    data = os.urandom(3 << 20)
    with files(tmp_path, data, b"head") as (source, target, path):
        with mock.patch.object(os, "sendfile", wraps=os.sendfile) as sendfile:
            if not kernel:
                sendfile.side_effect = unsupported
            assert copy_range(source, target, 1000, 2 << 20) == 2 << 20
        assert sendfile.called
        os.write(target, b"tail")
        assert os.lseek(source, 0, os.SEEK_CUR) == 0  # the source's position stays
    assert path.read_bytes() == b"head" + data[1000 : 1000 + (2 << 20)] + b"tail"


@pytest.mark.parametrize("kernel", [True, False], ids=["sendfile", "loop"])
def test_a_source_that_ends_early_gives_fewer_bytes(tmp_path: Path, kernel: bool) -> None:
    with (
        files(tmp_path, b"x" * 5000, b"") as (source, target, path),
        mock.patch.object(os, "sendfile", wraps=os.sendfile) as sendfile,
    ):
        if not kernel:
            sendfile.side_effect = unsupported
        assert copy_range(source, target, 4000, 3000) == 1000
    assert path.read_bytes() == b"x" * 1000


def test_an_error_other_than_no_support_is_raised(tmp_path: Path) -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    with (
        files(tmp_path, b"x" * 5000, b"") as (source, target, _),
        mock.patch.object(os, "sendfile", side_effect=full),
        pytest.raises(OSError, match="No space left"),
    ):
        copy_range(source, target, 0, 5000)


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(max_size=5000),
    prefix=st.binary(max_size=50),
    offset=st.integers(0, 6000),
    count=st.integers(0, 6000),
)
def test_sendfile_and_the_loop_agree(
    data: bytes, prefix: bytes, offset: int, count: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    results = []
    for kernel in (True, False):
        with (
            files(tmp_path_factory.mktemp("k"), data, prefix) as (source, target, path),
            mock.patch.object(os, "sendfile", wraps=os.sendfile) as sendfile,
        ):
            if not kernel:
                sendfile.side_effect = unsupported
            copied = copy_range(source, target, offset, count)
        results.append((copied, path.read_bytes()))
    assert (
        results[0]
        == results[1]
        == (len(data[offset : offset + count]), prefix + data[offset : offset + count])
    )
