"""The quick reader of a wheel's small members (``index build``'s reads) against
WheelArchive: whatever the bytes, it gives what WheelArchive gives, or None (and the
caller asks WheelArchive); it reads the wheels that tools write, and defers on the
shapes it does not handle."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded, damaged
from wheelfactory import make_wheel, variant_doc
from wheelwise.publish import distfiles
from wheelwise.publish.distfiles import read_dist
from wheelwise.wheels.archive import InMemoryWheel, WheelArchive
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.quick_read import SmallMembers, read_small_members
from zipcraft import raw_zip

pytestmark = pytest.mark.interp

NAME = "pkg-1.0-py3-none-any-v3.whl"
WANTED = {"METADATA": 1 << 20, "variant.json": 1 << 20, "RECORD": 1 << 20}
FUZZ = bounded(600)
METADATA = b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"


@pytest.fixture(scope="module")
def valid(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    directory = tmp_path_factory.mktemp("quick")
    doc = variant_doc("v3", {"x86_64": {"level": ["v3"]}})
    members = {"pkg/data.txt": b"some text that deflates well " * 20}
    return make_wheel(directory, NAME, doc, extra_members=members, record=True).read_bytes()


def archive_reads(data: bytes) -> SmallMembers:
    """What WheelArchive reads of *data*'s wanted members (raises WheelError)."""
    with WheelArchive(InMemoryWheel(NAME, data)) as archive:
        files = {}
        for short, limit in WANTED.items():
            name = archive.dist_info_path(short)
            if name in archive:
                files[short] = archive.read(name, limit=limit)
        return SmallMembers(archive.dist_info, files)


def agrees(data: bytes) -> SmallMembers | None:
    """The quick read of *data*, asserted to be WheelArchive's when it is not None."""
    quick = read_small_members(data, WANTED)
    if quick is not None:
        try:
            assert quick == archive_reads(data)
        except WheelError as exc:
            raise AssertionError(f"read quickly, but WheelArchive refuses it: {exc}") from None
    return quick


def zip_of(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def test_reads_a_wheel_as_the_archive_does(valid: bytes) -> None:
    quick = agrees(valid)
    assert quick is not None
    assert quick.dist_info == "pkg-1.0.dist-info"
    assert set(quick.files) == {"METADATA", "variant.json", "RECORD"}


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_reads_stored_and_deflated_members_utf8_names_and_directories(
    compression: int,
) -> None:
    data = zip_of(
        {
            "pkg/": b"",
            "pkg/é.txt": b"non-ASCII name, flagged UTF-8",
            "pkg-1.0.dist-info/METADATA": METADATA,
            "pkg-1.0.dist-info/RECORD": b"",
        },
        compression=compression,
    )
    quick = agrees(data)
    assert quick is not None
    assert quick.files == {"METADATA": METADATA, "RECORD": b""}


def test_reads_members_written_with_data_descriptors() -> None:
    class Unseekable(io.RawIOBase):
        def __init__(self) -> None:
            self.data = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, chunk: object) -> int:
            view = memoryview(chunk)  # type: ignore[arg-type]
            self.data += view
            return view.nbytes

    sink = Unseekable()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("pkg-1.0.dist-info/METADATA", METADATA)
    data = bytes(sink.data)
    assert zipfile.ZipFile(io.BytesIO(data)).infolist()[0].flag_bits & 0x8
    quick = agrees(data)
    assert quick is not None
    assert quick.files["METADATA"] == METADATA


def _with_comment(data: bytes) -> bytes:
    buffer = io.BytesIO(data)
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.comment = b"a comment"
    return buffer.getvalue()


def _with_extra_field(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(buffer, "w") as target:
        for info in source.infolist():
            info.extra = struct.pack("<HH4s", 0xCAFE, 4, b"data")
            target.writestr(info, source.read(info))
    return buffer.getvalue()


def _copy(data: bytes, *, force_zip64: bool = False) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(buffer, "w") as target:
        for info in source.infolist():
            with target.open(info.filename, "w", force_zip64=force_zip64) as member:
                member.write(source.read(info))
    return buffer.getvalue()


def test_reads_members_whose_local_header_has_a_zip64_field(valid: bytes) -> None:
    data = _copy(valid, force_zip64=True)
    (name_length,) = struct.unpack_from("<H", data, 26)
    assert data[30 + name_length : 32 + name_length] == b"\x01\x00"  # the ZIP64 field
    assert agrees(data) == agrees(valid)
    assert agrees(data) is not None


def test_defers_on_a_zip64_end_record(valid: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 1)  # so zipfile writes ZIP64's
        data = _copy(valid)
    assert b"PK\x06\x06" in data
    assert read_small_members(data, WANTED) is None
    assert archive_reads(data).files["METADATA"]


UNUSUAL = {
    "a comment": _with_comment,
    "bytes before the archive": lambda data: b"#!/bin/sh\n" + data,
    "extra fields": _with_extra_field,
}


@pytest.mark.parametrize("change", UNUSUAL.values(), ids=list(UNUSUAL))
def test_defers_on_shapes_it_does_not_read(valid: bytes, change: object) -> None:
    data = change(valid)  # type: ignore[operator]
    assert read_small_members(data, WANTED) is None
    assert archive_reads(data).files["METADATA"]  # zipfile reads them


def test_defers_on_a_member_above_its_limit(valid: bytes) -> None:
    assert read_small_members(valid, {"METADATA": 10}) is None


def _retarget(data: bytes, member: bytes, offset: int) -> bytes:
    """*data* with the directory entry of *member* pointing at *offset*."""
    mutated = bytearray(data)
    entry = mutated.find(b"PK\x01\x02")
    while entry != -1:
        (length,) = struct.unpack_from("<H", mutated, entry + 28)
        if mutated[entry + 46 : entry + 46 + length] == member:
            struct.pack_into("<L", mutated, entry + 42, offset)
            return bytes(mutated)
        entry = mutated.find(b"PK\x01\x02", entry + 4)
    raise LookupError(member)


def test_defers_on_members_that_share_or_overlap_bytes() -> None:
    data = raw_zip(
        [
            (b"pkg-1.0.dist-info/METADATA", METADATA, 0, 0, 20),
            (b"pkg-1.0.dist-info/RECORX", b"", 0, 0, 20),
        ]
    )
    assert agrees(data) is not None
    other = b"pkg-1.0.dist-info/RECORX"
    assert read_small_members(_retarget(data, other, 0), WANTED) is None
    # METADATA's bytes would run into the other member's local header.
    header = data.find(b"PK\x03\x04", 4)
    assert read_small_members(_retarget(data, other, header - 1), WANTED) is None


@pytest.mark.parametrize(
    "members",
    [
        {"pkg/x.py": b""},
        {"a-1.dist-info/METADATA": METADATA, "b-1.dist-info/METADATA": METADATA},
        {"../pkg-1.0.dist-info/METADATA": METADATA},
    ],
    ids=["no dist-info", "two dist-infos", "unsafe name"],
)
def test_defers_on_wheels_the_archive_refuses(members: dict[str, bytes]) -> None:
    data = zip_of(members)
    assert read_small_members(data, WANTED) is None
    with pytest.raises(WheelError):
        archive_reads(data)


def test_read_dist_gives_the_same_facts_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = variant_doc("v3", {"x86_64": {"level": ["v3"]}})
    path = make_wheel(tmp_path, NAME, doc, requires_python=">=3.10", record=True)
    quick = read_dist(path)
    monkeypatch.setattr(distfiles, "read_small_members", lambda data, wanted: None)
    assert read_dist(path) == quick


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_damaged_wheels(valid: bytes, data: st.DataObject) -> None:
    agrees(data.draw(damaged(valid)))


NAMES = st.one_of(
    st.sampled_from(
        [
            b"pkg-1.0.dist-info/METADATA",
            b"pkg-1.0.dist-info/RECORD",
            b"pkg-1.0.dist-info/variant.json",
            b"pkg-1.0.dist-info/",
            b"pkg/__init__.py",
            b"pkg\\x.py",
            "pkg/é".encode(),
            "pkg/é".encode("cp437"),
        ]
    ),
    st.binary(min_size=1, max_size=24),
)
ENTRIES = st.tuples(
    NAMES,
    st.binary(max_size=64),
    st.one_of(st.sampled_from([0, 0x8, 0x800, 0x1, 0x20, 0x40]), st.integers(0, 0xFFFF)),
    st.one_of(st.sampled_from([0, 8, 12, 14]), st.integers(0, 0xFFFF)),
    st.one_of(st.sampled_from([10, 20, 63, 64]), st.integers(0, 0xFF)),
)


@pytest.mark.slow
@FUZZ
@given(entries=st.lists(ENTRIES, min_size=1, max_size=6))
def test_crafted_directories(entries: list[tuple[bytes, bytes, int, int, int]]) -> None:
    agrees(raw_zip(entries))


def test_defers_when_the_local_header_reads_the_name_in_another_encoding() -> None:
    data = bytearray(zip_of({"pké-1.0.dist-info/METADATA": METADATA}))
    assert agrees(bytes(data)) is not None
    (flags,) = struct.unpack_from("<H", data, 6)
    struct.pack_into("<H", data, 6, flags & ~0x800)  # the local name is now cp437
    assert read_small_members(bytes(data), WANTED) is None
    with pytest.raises(WheelError):
        archive_reads(bytes(data))


def test_a_repeated_directory_entry_is_left_to_the_archive_which_reads_it() -> None:
    data = raw_zip(
        [
            (b"pkg/", b"", 0, 0, 20),
            (b"pkg/", b"", 0, 0, 20),
            (b"pkg-1.0.dist-info/METADATA", METADATA, 0, 0, 20),
        ]
    )
    assert read_small_members(data, WANTED) is None
    assert archive_reads(data).files == {"METADATA": METADATA}
