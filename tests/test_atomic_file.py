"""Files written whole or not at all (wheelwise.atomic_file)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from wheelwise.atomic_file import replace_with, replace_with_bytes


def test_many_small_pieces_and_a_big_one_arrive_whole(tmp_path: Path) -> None:
    pieces = [bytes([i % 251]) * (i % 9000) for i in range(2_000)] + [b"x" * (3 << 20)]
    target = tmp_path / "new" / "folder" / "entry"
    replace_with_bytes(target, pieces)
    assert target.read_bytes() == b"".join(pieces)
    assert sorted(p.name for p in target.parent.iterdir()) == ["entry"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "entry"
    target.write_bytes(b"old")

    def failing() -> Iterator[bytes]:
        yield b"a" * (2 << 20)  # past the write buffer: some bytes reach the file
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        replace_with_bytes(target, failing())
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["entry"]


def test_replace_with_hands_a_closed_temporary_file_to_fill(tmp_path: Path) -> None:
    target = tmp_path / "entry"
    seen: list[Path] = []

    def write(temporary: Path) -> None:
        seen.append(temporary)
        temporary.unlink()  # as a hard link is put in its place
        temporary.write_bytes(b"linked")

    replace_with(target, write)
    assert target.read_bytes() == b"linked"
    assert seen[0].parent == tmp_path
    assert not seen[0].exists()
