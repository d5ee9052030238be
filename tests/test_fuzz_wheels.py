"""Fuzzing the wheel readers: whatever the bytes, reading a wheel either works or
raises WheelError (never zlib.error, UnicodeDecodeError, NotImplementedError,
struct.error...); the wheel filename parser gives a value or InvalidWheelFilename;
the index's sdist check passes or raises UnsafeFile; the base URL check lets
through only http(s) URLs and relative paths."""

from __future__ import annotations

import contextlib
import hashlib
import io
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzzkit import bounded, damaged
from indexkit import demo_sdist
from wheelfactory import make_wheel, variant_doc
from wheelwise.publish.distfiles import core_fields, read_dist
from wheelwise.publish.errors import IndexBuildError
from wheelwise.publish.filecheck import UnsafeFile, check_sdist
from wheelwise.publish.static import check_base_url
from wheelwise.variants.errors import InvalidWheelFilename
from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.markers import variant_environment
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.archive import InMemoryWheel, WheelArchive
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.members import MemberReader
from wheelwise.wheels.plain import make_plain_wheel
from wheelwise.wheels.strip import strip_variant
from zipcraft import raw_zip, zip64_sizes

pytestmark = pytest.mark.interp

NAME = "pkg-1.0-py3-none-any-v3.whl"
FUZZ = bounded(200, function_fixtures=True)


@pytest.fixture(scope="module")
def valid(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    directory = tmp_path_factory.mktemp("fuzz")
    doc = variant_doc("v3", {"x86_64": {"level": ["v3"]}})
    members = {"pkg/data.txt": b"some text that deflates well " * 20}
    path = make_wheel(directory, NAME, doc, extra_members=members, record=True)
    return path.read_bytes()


def _read_all(data: bytes) -> None:
    with WheelArchive(InMemoryWheel(NAME, data)) as archive:
        opened = archive.detach()  # for the installer's reader too
        try:
            reader = MemberReader(opened, data)
            for name in archive.names:
                # BadZipFile: its documented error (the installer reports it).
                with contextlib.suppress(zipfile.BadZipFile):
                    reader.read(archive.info(name))
                archive.read(name)
            archive.metadata()
            archive.variant_metadata()
            archive.verify_record()
        finally:
            opened.close()


def read_everything(data: bytes) -> None:
    """Every read a command does; only WheelError may come out."""
    message = ""
    try:
        _read_all(data)
    except WheelError as exc:
        message = str(exc)
    if message:
        assert NAME in message
        assert "\n" not in message


def test_the_unchanged_wheel_reads(valid: bytes) -> None:
    read_everything(valid)
    with WheelArchive(InMemoryWheel(NAME, valid)) as archive:
        archive.verify_record()


@pytest.mark.slow
@bounded(600, function_fixtures=True)
@given(data=st.data())
def test_damaged_wheels(valid: bytes, data: st.DataObject) -> None:
    read_everything(data.draw(damaged(valid)))


_SIZES = st.integers(0, (1 << 64) - 1) | st.sampled_from([0, 1, 0xFFFFFFFF, 1 << 32])


@pytest.mark.slow
@FUZZ
@given(
    data=st.data(),
    extra=st.booleans(),
    lie=st.none() | st.tuples(_SIZES, _SIZES),
)
def test_rewrites_of_zip64_marked_wheels(
    valid: bytes,
    tmp_path: Path,
    data: st.DataObject,
    extra: bool,
    lie: tuple[int, int] | None,
) -> None:
    """The ZIP64 size markers, true or lying, damaged or not: every rewrite (variant
    strip, the proxy's plain wheel) works or raises WheelError."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    path = folder / NAME
    path.write_bytes(valid)
    zip64_sizes(path, extra=extra, lie=lie)
    if data.draw(st.booleans()):
        path.write_bytes(data.draw(damaged(path.read_bytes())))
    environment = variant_environment("v3", [VariantProperty.parse("x86_64 :: level :: v3")])
    verify = data.draw(st.booleans())

    def stripped() -> Path:
        return strip_variant(path, folder / "stripped", verify=verify)

    def plain() -> Path:
        return make_plain_wheel(path, folder / "plain", environment).path

    rewrites: list[Callable[[], Path]] = [stripped, plain]
    for rewrite in rewrites:
        with contextlib.suppress(WheelError):
            written = rewrite()
            with WheelArchive(written) as archive:
                archive.verify_record()


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_index_reads_of_damaged_wheels(valid: bytes, tmp_path: Path, data: st.DataObject) -> None:
    """What ``index build`` reads of a wheel (one read for the hash and the zip):
    the facts, or a WheelError naming the file."""
    mutated = data.draw(damaged(valid))
    path = tmp_path / NAME
    path.write_bytes(mutated)
    message = ""
    try:
        read = read_dist(path)
    except WheelError as exc:
        message = str(exc)
    if message:
        assert NAME in message
        assert "\n" not in message
        return
    assert read.dist.sha256 == hashlib.sha256(mutated).hexdigest()
    assert read.dist.size == len(mutated)


FIELD_LINES = st.lists(
    st.tuples(
        st.sampled_from(["Name", "name", "Version", "Requires-Python", "Summary", "X"]),
        st.text(st.characters(blacklist_characters="\r\n"), max_size=20),
        st.booleans(),  # folded onto a continuation line
    ),
    max_size=8,
)


@FUZZ
@given(fields=FIELD_LINES, body=st.text(max_size=200), crlf=st.booleans())
def test_core_fields_come_from_the_header_only(
    fields: list[tuple[str, str, bool]], body: str, crlf: bool
) -> None:
    """The first Name, Version and Requires-Python of the header, unfolded; nothing
    from the body after the first empty line, whatever it holds."""
    end = "\r\n" if crlf else "\n"
    lines: list[str] = []
    expected: dict[str, str] = {}
    for key, value, folded in fields:
        value = value.strip()
        if not value or value[0] in " \t":
            continue
        if folded:
            lines += [f"{key}:", f" {value}"]
        else:
            lines.append(f"{key}: {value}")
        if key.lower() in ("name", "version", "requires-python"):
            expected.setdefault(key.lower(), value)
    text = end.join(lines) + end + end + "Name: from-the-body" + end + body
    assert core_fields(text.encode()) == expected


@FUZZ
@given(data=st.binary(max_size=400))
def test_core_fields_of_any_bytes(data: bytes) -> None:
    fields = core_fields(data)
    assert set(fields) <= {"name", "version", "requires-python"}


NAMES = st.one_of(
    st.sampled_from(
        [
            b"pkg-1.0.dist-info/METADATA",
            b"pkg-1.0.dist-info/RECORD",
            b"pkg-1.0.dist-info/variant.json",
            b"pkg/__init__.py",
        ]
    ),
    st.binary(min_size=1, max_size=24),
    st.text(max_size=12).map(lambda text: ("pkg/" + text).encode()),
)
ENTRIES = st.tuples(
    NAMES,
    st.binary(max_size=64),
    st.one_of(st.sampled_from([0, 0x8, 0x800, 0x1, 0x801]), st.integers(0, 0xFFFF)),
    st.one_of(st.sampled_from([0, 8, 12, 14, 1, 6, 9, 93, 98, 99]), st.integers(0, 0xFFFF)),
    st.one_of(st.sampled_from([10, 20, 45, 46, 63, 67]), st.integers(0, 0xFFFF)),
)


@pytest.mark.slow
@FUZZ
@given(entries=st.lists(ENTRIES, min_size=1, max_size=6))
def test_crafted_directories(entries: list[tuple[bytes, bytes, int, int, int]]) -> None:
    read_everything(raw_zip(entries))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.one_of(
        st.text(max_size=40),
        st.lists(
            st.sampled_from(["pkg", "1.0", "7", "py3", "none", "any", "v3", "-", "_", ".", "é"]),
            max_size=12,
        ).map(lambda parts: "".join(parts) + ".whl"),
    )
)
def test_wheel_filename_parser(text: str) -> None:
    try:
        parsed = WheelFilename.parse(text)
    except InvalidWheelFilename as exc:
        message = str(exc)
    else:
        assert WheelFilename.parse(str(parsed)) == parsed
        return
    assert repr(text) in message


# -- sdists and base URLs (index build / serve) ---------------------------------------------


@pytest.fixture(scope="module")
def valid_sdist(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    directory = tmp_path_factory.mktemp("sdist")
    return demo_sdist(directory, "pkg-1.0.tar.gz").read_bytes()


def check_sdist_bytes(directory: Path, data: bytes) -> None:
    """check_sdist of *data* as ``pkg-1.0.tar.gz``: passes or raises UnsafeFile."""
    path = directory / "pkg-1.0.tar.gz"
    path.write_bytes(data)
    message = ""
    try:
        check_sdist(path)
    except UnsafeFile as exc:
        message = str(exc)
    if message:
        assert message.startswith("pkg-1.0.tar.gz: ")
        assert "\n" not in message


@FUZZ
@given(
    cut=st.integers(0, 1 << 16),
    flips=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 7)), max_size=4),
)
def test_damaged_sdists(
    valid_sdist: bytes, tmp_path: Path, cut: int, flips: list[tuple[int, int]]
) -> None:
    mutated = bytearray(valid_sdist[: max(cut % (len(valid_sdist) + 1), 1)])
    for position, bit in flips:
        mutated[position % len(mutated)] ^= 1 << bit
    check_sdist_bytes(tmp_path, bytes(mutated))


MEMBER_NAMES = st.one_of(
    st.sampled_from(["pkg-1.0/PKG-INFO", "pkg-1.0/", "pkg-1.0", "/etc/x", "pkg-1.0/../x"]),
    st.text(min_size=1, max_size=20).filter(lambda name: "\0" not in name),
)


@pytest.mark.slow
@FUZZ
@given(
    members=st.lists(
        st.tuples(MEMBER_NAMES, st.sampled_from([b"0", b"2", b"1", b"5"]), st.text(max_size=12)),
        max_size=5,
    )
)
def test_crafted_sdists(tmp_path: Path, members: list[tuple[str, bytes, str]]) -> None:
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        for name, kind, link in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            archive.addfile(info, io.BytesIO(b"") if kind == b"0" else None)
    check_sdist_bytes(tmp_path, stream.getvalue())


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.one_of(
        st.text(max_size=30),
        st.tuples(
            st.sampled_from(["", "http:", "https:", "HTTP:", "javascript:", "data:", " "]),
            st.sampled_from(["", "//", "/"]),
            st.text(alphabet="abc./:?#'\"<> \t\x00é", max_size=12),
        ).map("".join),
    )
)
def test_base_url_check(text: str) -> None:
    try:
        check_base_url(text)
    except IndexBuildError as exc:
        assert repr(text) in str(exc)  # noqa: PT017 - every refusal quotes the value
        return
    parts = urlsplit(text)
    assert parts.scheme.lower() in ("", "http", "https")
    assert not parts.scheme or parts.netloc
    assert not any(char in text for char in " \t\"'<>\\")
    assert not text.startswith("//")
