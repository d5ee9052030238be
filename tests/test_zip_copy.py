"""Rewriting a wheel copies its members compressed as they are (``wheels.zip_copy``),
and the result is a zip that ``zipfile`` reads and whose RECORD verifies; the
``zipfile`` path (for wheels in memory) gives the same members. Members whose local
header already is the one written go by the kernel in runs, with the same bytes as
through the interpreter, and a wheel cut short meanwhile is refused. Wheels whose
directory uses the ZIP64 size markers rewrite like any other, and sizes and offsets
past 4 GiB are written in ZIP64 records (a sparse file stands in for the 4 GiB)."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
import threading
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelfactory import make_wheel
from wheelwise.kernel_copy import copy_range
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels import make, zip_copy
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.members import MemberReader
from wheelwise.wheels.output import rewrite_output
from wheelwise.wheels.rewrite import rewrite_wheel
from wheelwise.wheels.zip_copy import CompressedCopyWriter
from zipcraft import zip64_sizes

NAME = "pkg-1.0-py3-none-any.whl"
METADATA = "pkg-1.0.dist-info/METADATA"
PROPERTY = VariantProperty.parse("x86_64 :: level :: v3")


def compressed(path: Path, name: str) -> bytes:
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
        start = MemberReader(archive).data_offset(info)
    with path.open("rb") as stream:
        stream.seek(start)
        return stream.read(info.compress_size)


def contents(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        return {info.filename: archive.read(info) for info in archive.infolist()}


def wheel(directory: Path, members: dict[str, bytes]) -> Path:
    directory.mkdir(parents=True)
    return make_wheel(directory, NAME, extra_members=members, record=True)


def package_wheel(root: Path, members: dict[str, bytes]) -> tuple[dict[str, bytes], Path]:
    """The wheel in *root*/in whose package ``pkg`` holds *members*; their full names."""
    named = {f"pkg/{name}": data for name, data in members.items()}
    return named, wheel(root / "in", named)


def rewritten(source: Path, target: Path, replacement: bytes) -> Path:
    with WheelArchive(source) as archive:
        archive.verify_record()
        rewrite_wheel(archive, target, replace={METADATA: replacement})
    with WheelArchive(target) as archive:
        archive.verify_record()
    return target


def test_unchanged_members_keep_their_compressed_bytes(tmp_path: Path) -> None:
    members = {"pkg/lib.so": bytes(range(256)) * 4000, "pkg/ünï.txt": b"text " * 100}
    source = wheel(tmp_path / "in", members)
    target = rewritten(source, tmp_path / "out" / NAME, b"Metadata-Version: 2.1\nName: pkg\n")
    for name in members:
        assert compressed(target, name) == compressed(source, name)
    out = contents(target)
    assert out[METADATA] == b"Metadata-Version: 2.1\nName: pkg\n"
    assert {n: out[n] for n in members} == members
    # Reproducible: the same input gives the same bytes.
    again = rewritten(source, tmp_path / "again" / NAME, b"Metadata-Version: 2.1\nName: pkg\n")
    assert again.read_bytes() == target.read_bytes()


def test_the_zipfile_path_gives_the_same_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    members = {"pkg/a.py": b"A = 1\n" * 50, "pkg/b.bin": bytes(3000)}
    source = wheel(tmp_path / "in", members)
    # Folder entries too, one of them (oddly) holding bytes: both paths keep them.
    folders = {"pkg/a.py": b"", "pkg/b.bin": b"odd"}
    source = with_extra_field(source, tmp_path / "folders" / NAME, set(), set(), folders)
    copied = rewritten(source, tmp_path / "copied" / NAME, b"Name: pkg\n")
    monkeypatch.setattr(WheelArchive, "on_disk", property(lambda self: False))
    inflated = rewritten(source, tmp_path / "inflated" / NAME, b"Name: pkg\n")
    assert contents(copied).keys() == contents(inflated).keys()
    assert {"pkg/a.py.d/", "pkg/b.bin.d/"} <= contents(copied).keys()
    assert contents(inflated)["pkg/b.bin.d/"] == b"odd"
    record = "pkg-1.0.dist-info/RECORD"
    assert {k: v for k, v in contents(copied).items() if k != record} == {
        k: v for k, v in contents(inflated).items() if k != record
    }


MEMBER_NAMES = st.text(
    alphabet=st.characters(min_codepoint=48, max_codepoint=0x24F, exclude_characters="/\\:"),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(
    members=st.dictionaries(MEMBER_NAMES, st.binary(max_size=4000), min_size=1, max_size=6),
    stored=st.booleans(),
    replacement=st.binary(max_size=500),
)
def test_any_wheel_rewrites_to_a_valid_zip(
    members: dict[str, bytes],
    stored: bool,
    replacement: bytes,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("z")
    named, source = package_wheel(root, members)
    if stored:  # the same wheel with every member stored
        plain = root / "stored" / NAME
        plain.parent.mkdir()
        with zipfile.ZipFile(source) as zin, zipfile.ZipFile(plain, "w") as zout:
            for info in zin.infolist():
                zout.writestr(info.filename, zin.read(info), zipfile.ZIP_STORED)
        source = plain
    target = rewritten(source, root / "out" / NAME, replacement)
    out = contents(target)
    assert out[METADATA] == replacement
    for name, data in named.items():
        assert out[name] == data


def test_a_wheel_with_zip64_size_markers_rewrites(tmp_path: Path) -> None:
    members = {"pkg/a.py": b"A = 1\n" * 50, "pkg/b.bin": bytes(3000)}
    source = zip64_sizes(wheel(tmp_path / "in", members))
    with zipfile.ZipFile(source) as archive:  # the markers are there, zipfile reads past them
        assert b"\xff\xff\xff\xff" * 2 in source.read_bytes()
        assert archive.getinfo("pkg/b.bin").file_size == 3000
    target = rewritten(source, tmp_path / "out" / NAME, b"Name: pkg\n")
    out = contents(target)
    assert {name: out[name] for name in members} == members


class _Sparse:
    """A file that leaves a hole where a chunk is all zeros."""

    def __init__(self, path: Path) -> None:
        self.stream = path.open("wb")

    def write(self, data: bytes) -> int:
        if len(data) > 4096 and data.count(0) == len(data):
            self.stream.seek(len(data), 1)
        else:
            self.stream.write(data)
        return len(data)

    def close(self) -> None:
        self.stream.truncate()
        self.stream.close()


def test_sizes_and_offsets_past_4_gib_go_into_zip64_records(tmp_path: Path) -> None:
    path = tmp_path / "big.zip"
    out = _Sparse(path)
    writer = CompressedCopyWriter(out)  # type: ignore[arg-type]
    big = zipfile.ZipInfo("pkg/huge.bin", date_time=(2024, 1, 1, 0, 0, 0))
    big.compress_type = zipfile.ZIP_STORED
    big.file_size = big.compress_size = (1 << 32) + 4096
    big.CRC = 0  # never read here
    chunk = bytes(1 << 24)
    writer.start_copy(big)
    left = big.compress_size
    while left:
        writer.copy_bytes(chunk[: min(left, len(chunk))])
        left -= min(left, len(chunk))
    small = zipfile.ZipInfo("pkg/after.txt", date_time=(2024, 1, 1, 0, 0, 0))
    small.compress_type = zipfile.ZIP_DEFLATED
    writer.add(small, b"past 4 GiB\n" * 10)
    writer.close()
    out.close()
    assert path.stat().st_size > 1 << 32
    with zipfile.ZipFile(path) as archive:
        huge, after = archive.infolist()
        assert huge.file_size == huge.compress_size == (1 << 32) + 4096
        assert after.header_offset > 1 << 32
        assert archive.read("pkg/after.txt") == b"past 4 GiB\n" * 10


def test_a_member_whose_zip64_size_lies_is_refused_not_a_crash(tmp_path: Path) -> None:
    source = wheel(tmp_path / "in", {"pkg/a.py": b"A = 1\n" * 50})
    zip64_sizes(source, lie=(300, 1 << 33), only="pkg/a.py")  # 8 GiB compressed, says it
    with WheelArchive(source) as archive:
        with pytest.raises(WheelError, match="is truncated"):
            archive.verify_record()
        # Unverified (variant make's default), the copy finds it.
        with pytest.raises(WheelError, match="the archive is damaged; re-download or rebuild"):
            rewrite_wheel(archive, tmp_path / "out" / NAME, replace={METADATA: b"Name: pkg\n"})
    assert not (tmp_path / "out" / NAME).exists()


@contextmanager
def interpreter_only() -> Iterator[None]:
    """Every member copied through the interpreter (no run sent by the kernel)."""
    with mock.patch.object(CompressedCopyWriter, "copy_verbatim", return_value=False):
        yield


def test_members_already_in_the_written_form_go_by_the_kernel_in_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    members = {f"pkg/part{i}.bin": os.urandom(20000) for i in range(20)}
    # Rewritten once, every member has the local header a rewrite writes.
    ours = rewritten(wheel(tmp_path / "in", members), tmp_path / "ours" / NAME, b"Name: pkg\n")
    sent: list[int] = []

    def counted(source: int, target: int, offset: int, count: int) -> int:
        sent.append(count)
        return copy_range(source, target, offset, count)

    monkeypatch.setattr(zip_copy, "copy_range", counted)
    target = rewritten(ours, tmp_path / "again" / NAME, b"Name: pkg\nSummary: s\n")
    # The members before and after the replaced METADATA: at most two runs.
    assert 1 <= len(sent) <= 2
    assert sum(sent) > sum(len(data) for data in members.values())
    with interpreter_only():
        slow = rewritten(ours, tmp_path / "slow" / NAME, b"Name: pkg\nSummary: s\n")
    assert target.read_bytes() == slow.read_bytes()


def test_a_wheel_zipfile_wrote_goes_by_the_kernel_in_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folder entries, and members whose headers say version 2.0 (what most tools
    write, stored members too), are copied as they are, so nothing splits the run."""
    members = {f"pkg/part{i}.bin": os.urandom(20000) for i in range(6)}
    source = wheel(tmp_path / "in", members)
    names = sorted(members)
    source = with_extra_field(
        source, tmp_path / "odd" / NAME, set(), set(names[::2]), dict.fromkeys(names, b"")
    )
    with zipfile.ZipFile(source) as archive:
        assert {info.extract_version for info in archive.infolist()} == {20}
        assert last_entry(archive) == "pkg-1.0.dist-info/RECORD"
    sent: list[int] = []

    def counted(source: int, target: int, offset: int, count: int) -> int:
        sent.append(count)
        return copy_range(source, target, offset, count)

    monkeypatch.setattr(zip_copy, "copy_range", counted)
    out = tmp_path / "out" / NAME
    rewritten_without(source, out, set())
    assert len(sent) == 1
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(out) as new:
        before = [(i.filename, i.extract_version) for i in old.infolist()]
        assert [(i.filename, i.extract_version) for i in new.infolist()] == before
        # Everything up to RECORD is the source's bytes.
        start = new.getinfo("pkg-1.0.dist-info/RECORD").header_offset
    assert out.read_bytes()[:start] == source.read_bytes()[:start]


def test_a_member_that_says_it_needs_a_newer_version_gets_the_one_it_needs(
    tmp_path: Path,
) -> None:
    """A header that claims more than ZIP64 (4.5) is not kept: the rewrite says what
    the member needs, in its directory entry and local header alike."""
    source = wheel(tmp_path / "in", {"pkg/a.txt": b"a" * 500})
    claimed = tmp_path / "claimed" / NAME
    claimed.parent.mkdir()
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(claimed, "w") as zout:
        for info in zin.infolist():
            info.extract_version = 63 if info.filename == "pkg/a.txt" else info.extract_version
            zout.writestr(info, zin.read(info))
    with zipfile.ZipFile(claimed) as archive:
        assert archive.getinfo("pkg/a.txt").extract_version == 63
    out = tmp_path / "out" / NAME
    rewritten_without(claimed, out, set())
    with zipfile.ZipFile(out) as archive:
        info = archive.getinfo("pkg/a.txt")
        local = out.read_bytes()[info.header_offset + 4 : info.header_offset + 6]
        assert (info.extract_version, int.from_bytes(local, "little")) == (20, 20)
        assert archive.read(info) == b"a" * 500


def last_entry(archive: zipfile.ZipFile) -> str:
    return max(archive.infolist(), key=lambda info: info.header_offset).filename


def with_extra_field(
    source: Path,
    target: Path,
    names: set[str],
    stored: set[str],
    folders: dict[str, bytes] | None = None,
) -> Path:
    """*source* written again, the members *names* with an extra field in their local
    header and those in *stored* stored: headers a rewrite does not write. Before a
    member named in *folders*, a folder entry ``NAME.d/`` holding those bytes (a
    folder entry has none; readers ignore them)."""
    target.parent.mkdir(parents=True)
    folders = folders or {}
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for info in zin.infolist():
            if info.filename in folders:
                zout.writestr(f"{info.filename}.d/", folders[info.filename])
            copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            copy.external_attr = info.external_attr
            copy.compress_type = (
                zipfile.ZIP_STORED if info.filename in stored else info.compress_type
            )
            if info.filename in names:
                copy.extra = b"\xca\xfe\x04\x00abcd"
            zout.writestr(copy, zin.read(info))
    return target


def rewritten_without(source: Path, target: Path, drop: set[str], early: bool = False) -> bytes:
    """*source* rewritten without *drop*; with *early*, into an output begun before
    the wheel was opened (as variant make and strip write)."""
    if early:
        with rewrite_output(source, target) as output, WheelArchive(source) as archive:
            rewrite_wheel(archive, target, drop=drop, output=output)
    else:
        with WheelArchive(source) as archive:
            rewrite_wheel(archive, target, drop=drop)
    with WheelArchive(target) as archive:
        archive.verify_record()
    return target.read_bytes()


@settings(max_examples=30, deadline=None)
@given(
    members=st.dictionaries(MEMBER_NAMES, st.binary(max_size=3000), min_size=2, max_size=6),
    odd=st.sets(st.integers(0, 9), max_size=4),
    stored=st.sets(st.integers(0, 9), max_size=4),
    dropped=st.sets(st.integers(0, 9), max_size=2),
    folders=st.dictionaries(st.integers(0, 9), st.binary(max_size=40), max_size=3),
    twice=st.booleans(),
)
def test_copying_by_the_kernel_gives_the_bytes_the_interpreter_writes(
    members: dict[str, bytes],
    odd: set[int],
    stored: set[int],
    dropped: set[int],
    folders: dict[int, bytes],
    twice: bool,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("v")
    named, source = package_wheel(root, members)
    names = sorted(named)
    source = with_extra_field(
        source,
        root / "odd" / NAME,
        {names[i % len(names)] for i in odd},
        {names[i % len(names)] for i in stored},
        {names[i % len(names)]: data for i, data in folders.items()},
    )
    with zipfile.ZipFile(source) as archive:
        entries = [(info.filename, archive.read(info)) for info in archive.infolist()]
    if twice:  # a wheel a rewrite wrote: every member in its form
        source = rewritten(source, root / "once" / NAME, b"Name: pkg\n")
    # Members left out (as variant.json by strip) split the runs the kernel sends.
    drop = {names[i % len(names)] for i in dropped}
    fast = rewritten_without(source, root / "fast" / NAME, drop)
    early = rewritten_without(source, root / "early" / NAME, drop, early=True)
    with interpreter_only():
        slow = rewritten_without(source, root / "slow" / NAME, drop)
    assert fast == slow
    assert early == slow
    kept = {name: data for name, data in named.items() if name not in drop}
    assert {name: contents(root / "fast" / NAME)[name] for name in kept} == kept
    assert not drop & set(contents(root / "fast" / NAME))
    # Folder entries stay, in their order, with their bytes.
    with zipfile.ZipFile(root / "fast" / NAME) as archive:
        out = [(info.filename, archive.read(info)) for info in archive.infolist()]
    assert [e for e in out if e[0].endswith("/")] == [e for e in entries if e[0].endswith("/")]


def test_a_wheel_cut_short_while_it_is_copied_is_refused_and_nothing_written(
    tmp_path: Path,
) -> None:
    members = {f"pkg/part{i}.bin": os.urandom(20000) for i in range(5)}
    ours = rewritten(wheel(tmp_path / "in", members), tmp_path / "ours" / NAME, b"Name: pkg\n")
    out = tmp_path / "out"
    with WheelArchive(ours) as archive:
        archive.check_record_sizes()  # RECORD read, as variant make does first
        os.truncate(ours, ours.stat().st_size // 2)  # another process cuts the file
        with pytest.raises(WheelError, match=r"cannot copy it \(the archive ends \d+ bytes before"):
            rewrite_wheel(archive, out / NAME, replace={METADATA: b"Name: pkg\n"})
    assert not out.exists()  # nor the folder made for it


def sends_by_thread(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """Each run the kernel is given from now on: (thread name, offset, length)."""
    sent: list[tuple[str, int, int]] = []

    def counted(source: int, target: int, offset: int, count: int) -> int:
        sent.append((threading.current_thread().name, offset, count))
        return copy_range(source, target, offset, count)

    monkeypatch.setattr(zip_copy, "copy_range", counted)
    return sent


RECORD = "pkg-1.0.dist-info/RECORD"


def runs_of_a_rewrite(
    source: Path, root: Path, sent: list[tuple[str, int, int]]
) -> list[tuple[str, int, int]]:
    """The runs the kernel was given to rewrite *source* (dropping nothing), whose
    bytes are checked against the rewrite through the interpreter alone."""
    fast = rewritten_without(source, root / "fast" / NAME, set())
    runs = list(sent)
    with interpreter_only():
        assert fast == rewritten_without(source, root / "slow" / NAME, set())
    return runs


def test_the_kernel_copies_the_members_before_the_first_change_while_they_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    members = {f"pkg/part{i}.bin": os.urandom(20000) for i in range(6)}
    ours = rewritten(wheel(tmp_path / "in", members), tmp_path / "ours" / NAME, b"Name: pkg\n")
    with zipfile.ZipFile(ours) as archive:
        record_at = archive.getinfo(RECORD).header_offset
    runs = runs_of_a_rewrite(ours, tmp_path, sends_by_thread(monkeypatch))
    # One run, from another thread: everything before RECORD (the first change).
    assert runs == [("copy-ahead", 0, record_at)]
    assert not [t for t in threading.enumerate() if t.name == "copy-ahead"]


def test_what_the_members_do_not_confirm_of_the_copy_ahead_is_cut_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member in the middle whose local header is not the one written: the copy
    ahead is kept up to it, then the rest is written as without it."""
    members = {f"pkg/part{i}.bin": os.urandom(20000) for i in range(6)}
    source = wheel(tmp_path / "in", members)
    odd = with_extra_field(source, tmp_path / "odd" / NAME, {"pkg/part3.bin"}, set())
    with zipfile.ZipFile(odd) as archive:
        odd_at = archive.getinfo("pkg/part3.bin").header_offset
        record_at = archive.getinfo(RECORD).header_offset
    runs = runs_of_a_rewrite(odd, tmp_path, sends_by_thread(monkeypatch))
    assert runs[0] == ("copy-ahead", 0, record_at)
    # Nothing before the odd member is sent again.
    assert all(offset >= odd_at for _, offset, _ in runs[1:])


def test_no_copy_ahead_when_the_first_member_is_not_copied_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = wheel(tmp_path / "in", {"pkg/a.bin": os.urandom(5000)})
    with zipfile.ZipFile(source) as archive:
        first = min(archive.infolist(), key=lambda info: info.header_offset).filename
    odd = with_extra_field(source, tmp_path / "odd" / NAME, {first}, set())
    runs = runs_of_a_rewrite(odd, tmp_path, sends_by_thread(monkeypatch))
    assert "copy-ahead" not in {name for name, _, _ in runs}


def copy_ahead_meets_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A wheel a rewrite wrote (every member copied as it is), and from now on a copy
    ahead that fails as on a full disk."""
    members = {f"pkg/part{i}.bin": os.urandom(20000) for i in range(3)}
    ours = rewritten(wheel(tmp_path / "in", members), tmp_path / "ours" / NAME, b"Name: pkg\n")

    def full(source: int, target: int, offset: int, count: int) -> int:
        if threading.current_thread().name == "copy-ahead":
            raise OSError(errno.ENOSPC, "No space left on device")
        return copy_range(source, target, offset, count)

    monkeypatch.setattr(zip_copy, "copy_range", full)
    return ours


def test_a_copy_ahead_that_fails_is_told_on_one_line_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = copy_ahead_meets_a_full_disk(tmp_path, monkeypatch)
    out = tmp_path / "out"
    with WheelArchive(ours) as archive, pytest.raises(OSError, match="free some space") as raised:
        rewrite_wheel(archive, out / NAME, replace={METADATA: b"Name: pkg\n"})
    assert raised.value.filename == str(out / NAME)
    assert not out.exists()  # nor the folder made for it


def test_a_wheel_refused_while_the_copy_ahead_runs_is_told_as_before_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RECORD's sizes are checked while the kernel copies: a wrong one is the same
    error as when it was checked first, and the copy is waited for."""
    members = {f"pkg/part{i}.bin": os.urandom(20000) for i in range(3)}
    source = wheel(tmp_path / "in", members)
    lying = tmp_path / "lying" / NAME
    lying.parent.mkdir()
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(lying, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == RECORD:
                data = data.replace(b",20000\n", b",19999\n", 1)
            zout.writestr(info, data)
    waited: list[bool] = []
    real_wait = zip_copy._CopyAhead.wait

    def wait(self: zip_copy._CopyAhead) -> None:
        real_wait(self)
        waited.append(not self._thread.is_alive())

    monkeypatch.setattr(zip_copy._CopyAhead, "wait", wait)
    sent = sends_by_thread(monkeypatch)
    out = tmp_path / "out"
    with WheelArchive(lying) as archive, pytest.raises(WheelError) as raised:
        rewrite_wheel(archive, out / NAME, drop=set())
    assert str(raised.value).endswith(
        "does not match its RECORD hash/size: the wheel was modified or corrupted"
    )
    assert sent
    assert sent[0][0] == "copy-ahead"
    assert waited == [True]
    assert not out.exists()  # nor the folder made for it


def test_make_begins_its_output_before_it_opens_the_wheel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """variant make starts the kernel's copy of the whole wheel before reading it; the
    members copied as they are keep those bytes (up to RECORD), and the output is
    the one written without copying ahead."""
    members = {f"pkg/part{i}.bin": os.urandom(20000) for i in range(6)}
    ours = rewritten(wheel(tmp_path / "in", members), tmp_path / "ours" / NAME, b"Name: pkg\n")
    events: list[str] = []
    real_ahead, real_open = zip_copy._CopyAhead.__init__, WheelArchive.__init__

    def ahead(self: Any, source: int, target: int, length: int) -> None:
        events.append(f"ahead {length}")
        real_ahead(self, source, target, length)

    def opened(self: Any, *args: Any, **kwargs: Any) -> None:
        events.append("open")
        real_open(self, *args, **kwargs)

    monkeypatch.setattr(zip_copy._CopyAhead, "__init__", ahead)
    monkeypatch.setattr(WheelArchive, "__init__", opened)
    sent = sends_by_thread(monkeypatch)
    made = make.make_variant(ours, tmp_path / "out", properties=[PROPERTY], label="v3")
    assert events[:2] == [f"ahead {ours.stat().st_size}", "open"]
    assert sent[0] == ("copy-ahead", 0, ours.stat().st_size)
    with zipfile.ZipFile(ours) as archive:
        record_at = archive.getinfo(RECORD).header_offset
    # The members before RECORD were kept from it: none is sent again.
    assert all(offset >= record_at for _, offset, _ in sent[1:])
    with interpreter_only():
        slow = make.make_variant(ours, tmp_path / "slow", properties=[PROPERTY], label="v3")
    assert made.read_bytes() == slow.read_bytes()
    # What the copy ahead wrote past RECORD's place was cut off, then written anew.
    assert made.read_bytes()[:record_at] == ours.read_bytes()[:record_at]


def test_what_begins_the_output_imports_neither_the_zip_reader_nor_installer() -> None:
    """variant make and strip begin their output before the modules that read the
    wheel (and installer, with its own imports) are loaded: the copy goes on while
    they load."""
    script = (
        "import sys, wheelwise.wheels.make, wheelwise.wheels.strip\n"
        "print(sorted(m for m in ('installer', 'wheelwise.wheels.archive', "
        "'wheelwise.wheels.rewrite', 'wheelwise.variants.metadata') if m in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout
    assert found.strip() == "[]"


def test_a_record_deflated_ahead_is_the_one_deflated_in_place(tmp_path: Path) -> None:
    data = os.urandom(1000) * 300
    ahead, now = io.BytesIO(), io.BytesIO()
    for stream, deflated in ((ahead, zip_copy.Deflating(data)), (now, None)):
        writer = CompressedCopyWriter(stream)
        info = zipfile.ZipInfo("pkg-1.0.dist-info/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        writer.add(info, data, deflated)
        writer.close()
    assert ahead.getvalue() == now.getvalue()
    with zipfile.ZipFile(ahead) as archive:
        assert archive.read("pkg-1.0.dist-info/RECORD") == data


def test_a_deflate_that_fails_in_its_thread_fails_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_memory(*args: Any) -> Any:
        raise MemoryError("injected")

    monkeypatch.setattr(zlib, "compressobj", no_memory)
    deflating = zip_copy.Deflating(b"x" * 100)
    with pytest.raises(MemoryError, match="injected"):
        deflating.body()
    with pytest.raises(MemoryError, match="injected"):
        zip_copy.Deflating(b"x", ahead=False).body()


def test_a_copy_ahead_of_a_file_that_is_no_wheel_stops_soon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big file named like a wheel that is not one: the error is the usual one, the
    copy begun ahead stops after a piece instead of copying it all, and nothing is
    left (nor the output folder)."""
    monkeypatch.setattr(zip_copy._CopyAhead, "PIECE", 1 << 20)
    fake = tmp_path / NAME
    with fake.open("wb") as file:
        file.truncate(256 << 20)
    sent = sends_by_thread(monkeypatch)
    out = tmp_path / "out"
    with pytest.raises(WheelError, match="not a valid wheel"):
        make.make_variant(fake, out, properties=[PROPERTY], label="v3")
    copied = sum(count for name, _, count in sent if name == "copy-ahead")
    assert copied < 64 << 20
    assert not out.exists()


def test_make_on_a_full_disk_is_told_on_one_line_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy begun before the wheel is opened meets a full disk: variant make says
    so on one line, naming the output and what to do, and leaves neither the file nor
    the folder made for it."""
    ours = copy_ahead_meets_a_full_disk(tmp_path, monkeypatch)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="free some space") as raised:
        make.make_variant(ours, out, properties=[PROPERTY], label="v3")
    assert raised.value.filename == str(out / "pkg-1.0-py3-none-any-v3.whl")
    assert "\n" not in str(raised.value)
    assert not out.exists()
