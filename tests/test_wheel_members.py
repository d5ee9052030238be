"""Small zip members read whole (wheelwise.wheels.members), checked against
zipfile's own reading."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelwise.wheels.members import INFLATE_ERRORS, OUT_CHUNK, MemberReader, new_inflater

COMPRESSIONS = [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]


def _zip(members: dict[str, tuple[bytes, int]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, (data, compression) in members.items():
            archive.writestr(name, data, compress_type=compression)
    return buffer.getvalue()


def _read_all(data: bytes, tmp_path: Path | None) -> dict[str, bytes | None]:
    """Every member through MemberReader: from memory, or from a file on disk."""
    if tmp_path is None:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            reader = MemberReader(archive, data)
            return {info.filename: reader.read(info) for info in archive.infolist()}
    path = tmp_path / "w.zip"
    path.write_bytes(data)
    with zipfile.ZipFile(path) as archive:
        reader = MemberReader(archive)
        return {info.filename: reader.read(info) for info in archive.infolist()}


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    members=st.dictionaries(
        st.from_regex(r"[a-zé_/]{1,20}\.py", fullmatch=True).filter(lambda n: "//" not in n),
        st.tuples(st.binary(max_size=3000), st.sampled_from(COMPRESSIONS)),
        max_size=6,
    ),
    on_disk=st.booleans(),
)
def test_reads_what_zipfile_reads(
    members: dict[str, tuple[bytes, int]], on_disk: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    data = _zip(members)
    found = _read_all(data, tmp_path_factory.mktemp("z") if on_disk else None)
    assert found == {name: content for name, (content, _) in members.items()}


@pytest.mark.parametrize("compression", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_other_compressions_are_left_to_zipfile(compression: int) -> None:
    data = _zip({"a.py": (b"x" * 100, compression)})
    assert _read_all(data, None) == {"a.py": None}


def test_encrypted_member_is_left_to_zipfile() -> None:
    data = bytearray(_zip({"a.py": (b"x", zipfile.ZIP_STORED)}))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("a.py")
        info.flag_bits |= 0x1
        assert MemberReader(archive, bytes(data)).read(info) is None


def _patched(data: bytes, old: bytes, new: bytes, count: int = 1) -> bytes:
    assert data.count(old) >= count
    return data.replace(old, new, count)


def test_local_header_naming_another_file_is_refused() -> None:
    """The central directory says a.py, the local header b.py: zipfile refuses that
    (file name confusion), and so does the reader."""
    data = _patched(_zip({"a.py": (b"print(1)\n", zipfile.ZIP_DEFLATED)}), b"a.py", b"b.py")
    with (
        zipfile.ZipFile(io.BytesIO(data)) as archive,
        pytest.raises(zipfile.BadZipFile, match=r"the local header of 'a\.py' names 'b\.py'"),
    ):
        MemberReader(archive, data).read(archive.getinfo("a.py"))


def test_bad_local_signature_is_refused() -> None:
    data = _patched(_zip({"a.py": (b"x", zipfile.ZIP_STORED)}), b"PK\x03\x04", b"PK\x09\x09")
    with (
        zipfile.ZipFile(io.BytesIO(data)) as archive,
        pytest.raises(zipfile.BadZipFile, match="local header"),
    ):
        MemberReader(archive, data).read(archive.getinfo("a.py"))


def test_member_larger_than_its_directory_entry_is_refused() -> None:
    """Inflating stops one byte past the announced size: a member that says 10 bytes
    and inflates to a megabyte is refused without inflating it all."""
    data = _zip({"a.py": (b"\0" * 1_000_000, zipfile.ZIP_DEFLATED)})
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("a.py")
        info.file_size = 10
        with pytest.raises(zipfile.BadZipFile, match="directory entry says 10"):
            MemberReader(archive, data).read(info)


def test_corrupt_deflate_data_is_refused() -> None:
    payload = bytes(range(256)) * 40
    data = bytearray(_zip({"a.py": (payload, zipfile.ZIP_DEFLATED)}))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("a.py")
        start = info.header_offset + 30 + len("a.py")
    data[start : start + 8] = b"\xff" * 8
    with (
        zipfile.ZipFile(io.BytesIO(bytes(data))) as archive,
        pytest.raises(zipfile.BadZipFile, match=r"a\.py"),
    ):
        MemberReader(archive, bytes(data)).read(archive.getinfo("a.py"))


def test_truncated_archive_is_refused(tmp_path: Path) -> None:
    data = _zip({"a.py": (bytes(range(256)) * 100, zipfile.ZIP_STORED)})
    path = tmp_path / "w.zip"
    path.write_bytes(data)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("a.py")
        info.compress_size += 10**6  # past the end of the file
        info.file_size += 10**6
        with pytest.raises(zipfile.BadZipFile, match="truncated"):
            MemberReader(archive).read(info)


@pytest.mark.parametrize("on_disk", [False, True], ids=["in-memory", "on-disk"])
def test_local_name_of_another_length_is_refused(on_disk: bool, tmp_path: Path) -> None:
    """The directory entry names a longer file than the local header holds."""
    data = _zip({"a.py": (b"print(1)\n", zipfile.ZIP_DEFLATED)})
    path = tmp_path / "w.zip"
    path.write_bytes(data)
    with zipfile.ZipFile(path if on_disk else io.BytesIO(data)) as archive:
        info = archive.getinfo("a.py")
        info.orig_filename = "longer_name.py"
        reader = MemberReader(archive) if on_disk else MemberReader(archive, data)
        with pytest.raises(zipfile.BadZipFile, match=r"'longer_name\.py' names 'a\.py'"):
            reader.read(info)


# -- large members, read in chunks (MemberReader.stream) ---------------------------------


def _streamed(data: bytes, info: zipfile.ZipInfo, archive: zipfile.ZipFile) -> bytes:
    stream = MemberReader(archive, data).stream(info)
    assert stream is not None
    chunks = []
    while chunk := stream.read(1 << 20):
        assert len(chunk) <= 1 << 20
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_a_large_member_streams_as_zipfile_reads_it(compression: int, tmp_path: Path) -> None:
    payload = bytes(range(256)) * 12_000 + b"\0" * 3_000_000  # 6 MB: several chunks
    data = _zip({"lib.so": (payload, compression)})
    path = tmp_path / "w.zip"
    path.write_bytes(data)
    with zipfile.ZipFile(path) as archive:
        stream = MemberReader(archive).stream(archive.getinfo("lib.so"))
        assert stream is not None
        first = stream.read()  # one chunk at a time
        assert 0 < len(first) <= OUT_CHUNK
        assert first == payload[: len(first)]
        rest = b"".join(iter(lambda: stream.read(1 << 16), b""))
        assert rest == payload[len(first) :]


def test_a_streamed_member_larger_than_its_entry_is_refused() -> None:
    data = _zip({"a.so": (b"\0" * 5_000_000, zipfile.ZIP_DEFLATED)})
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("a.so")
        info.file_size = 10
        with pytest.raises(zipfile.BadZipFile, match="more than the 10 bytes"):
            _streamed(data, info, archive)


def test_a_streamed_member_smaller_than_its_entry_is_refused() -> None:
    data = _zip({"a.so": (b"\0" * 5_000_000, zipfile.ZIP_DEFLATED)})
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("a.so")
        info.file_size += 1
        with pytest.raises(zipfile.BadZipFile, match="directory entry says 5000001"):
            _streamed(data, info, archive)


def test_streamed_corrupt_or_cut_deflate_data_is_refused(tmp_path: Path) -> None:
    payload = bytes(range(256)) * 20_000
    data = bytearray(_zip({"a.so": (payload, zipfile.ZIP_DEFLATED)}))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("a.so")
        start = info.header_offset + 30 + len("a.so")
    corrupt = bytearray(data)
    corrupt[start : start + 8] = b"\xff" * 8
    with (
        zipfile.ZipFile(io.BytesIO(bytes(corrupt))) as archive,
        pytest.raises(zipfile.BadZipFile, match=r"a\.so"),
    ):
        _streamed(bytes(corrupt), archive.getinfo("a.so"), archive)
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("a.so")
        info.compress_size -= 100  # the deflate stream ends early
        with pytest.raises(zipfile.BadZipFile, match=r"ends early|directory entry says"):
            _streamed(bytes(data), info, archive)


@settings(max_examples=200, deadline=None)
@given(
    garbage=st.binary(min_size=1, max_size=2000),
    declared=st.integers(min_value=0, max_value=10**6),
    compression=st.sampled_from(COMPRESSIONS),
)
def test_any_member_bytes_stream_to_their_size_or_a_bad_zip_error(
    garbage: bytes, declared: int, compression: int
) -> None:
    """Whatever the compressed bytes and the declared size: exactly that many bytes
    come out, or BadZipFile; never another error, never more."""
    data = bytearray(_zip({"a.so": (b"x", zipfile.ZIP_STORED)}))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("a.so")
    start = info.header_offset + 30 + len("a.so")
    body = bytes(data[:start]) + garbage
    info.compress_size = len(garbage)
    info.file_size = declared
    info.compress_type = compression
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        try:
            out = _streamed(body, info, archive)
        except zipfile.BadZipFile:
            return
    assert len(out) == declared


def test_members_are_inflated_by_isa_l_which_refuses_what_zlib_refuses() -> None:
    from isal import isal_zlib  # a dependency: the inflater of wheel members

    assert isinstance(new_inflater(), type(isal_zlib.decompressobj(-15)))
    with pytest.raises(INFLATE_ERRORS):
        new_inflater().decompress(b"\xff" * 64)
