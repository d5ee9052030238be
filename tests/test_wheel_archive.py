"""Reading hostile or broken wheels: every problem is a clear WheelError, and
``variant make`` / ``variant strip`` write nothing for them."""

from __future__ import annotations

import base64
import errno
import hashlib
import io
import os
import stat
import struct
import warnings
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wheelfactory import make_wheel, variant_doc
from wheelwise.fetch.verify import verify_wheel
from wheelwise.models.errors import InstallError
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels import archive as archive_module
from wheelwise.wheels import zip_copy
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.make import make_variant
from wheelwise.wheels.record import RecordEntry, file_entry, parse_record, write_record
from wheelwise.wheels.strip import strip_variant
from wheelwise.wheels.zip_copy import CompressedCopyWriter
from zipcraft import garble_member, patch_member

pytestmark = pytest.mark.interp

NAME = "pkg-1.0-py3-none-any.whl"
DIST_INFO = "pkg-1.0.dist-info"
RECORD = f"{DIST_INFO}/RECORD"
V3 = VariantProperty("x86_64", "level", "v3")

Member = tuple[str | zipfile.ZipInfo, bytes]


def _name(member: str | zipfile.ZipInfo) -> str:
    return member.filename if isinstance(member, zipfile.ZipInfo) else member


def base_members(extra: Sequence[Member] = ()) -> list[Member]:
    return [
        ("pkg/__init__.py", b"print('hello')\n"),
        (f"{DIST_INFO}/METADATA", b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"),
        (f"{DIST_INFO}/WHEEL", b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"),
        *extra,
    ]


def write_zip(
    directory: Path,
    members: Sequence[Member],
    *,
    record: bool | bytes = True,
    filename: str = NAME,
    compression: int = zipfile.ZIP_DEFLATED,
) -> Path:
    """A zip of *members* plus RECORD: computed (True), given bytes, or none (False)."""
    members = list(members)
    if record is True:
        entries = [file_entry(_name(m), data) for m, data in members]
        members.append((RECORD, write_record(entries, record_path=RECORD)))
    elif isinstance(record, bytes):
        members.append((RECORD, record))
    path = directory / filename
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": wanted here
        with zipfile.ZipFile(path, "w", compression) as archive:
            for member, data in members:
                archive.writestr(member, data)
    return path


def _symlink() -> zipfile.ZipInfo:
    info = zipfile.ZipInfo("pkg/link.py")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def _shrink_central_size(path: Path, member: str, size: int) -> None:
    """Make the central directory claim *member* is *size* bytes (it is larger)."""
    data = bytearray(path.read_bytes())
    central = data.find(b"PK\x01\x02")
    start = data.find(member.encode(), central) - 46
    assert data[start : start + 4] == b"PK\x01\x02"
    data[start + 24 : start + 28] = struct.pack("<I", size)
    path.write_bytes(bytes(data))


Builder = Callable[[Path, pytest.MonkeyPatch], Path]


def _lying_header(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = write_zip(directory, base_members([("pkg/data.bin", b"a" * 5000)]))
    _shrink_central_size(path, "pkg/data.bin", 100)
    return path


def _oversized(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(archive_module, "MAX_MEMBER_BYTES", 4096)
    return write_zip(directory, base_members([("pkg/big.bin", bytes(range(256)) * 32)]))


def _bomb(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(archive_module, "BOMB_MIN_BYTES", 64 << 10)
    return write_zip(directory, base_members([("pkg/zeros.bin", b"\0" * (1 << 20))]))


def _simple(
    members: Sequence[Member] = (), *, record: bool | bytes = True, base: bool = True
) -> Builder:
    def build(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        return write_zip(directory, base_members(members) if base else members, record=record)

    return build


def _damaged(**changes: int | bytes) -> Builder:
    """A well-formed wheel whose ``pkg/__init__.py`` entry is then damaged."""

    def build(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        path = write_zip(directory, base_members())
        if changes.get("garble"):
            return garble_member(path, "pkg/__init__.py")
        return patch_member(path, "pkg/__init__.py", **changes)  # type: ignore[arg-type]

    return build


GOOD_RECORD = write_record([file_entry(_name(m), d) for m, d in base_members()], record_path=RECORD)

HOSTILE: dict[str, tuple[Builder, str]] = {
    "zip-slip": (_simple([("../evil.py", b"x")]), "unsafe member name '../evil.py'"),
    "nested-zip-slip": (_simple([("pkg/../../evil.py", b"x")]), "unsafe member name"),
    "trailing-dotdot": (_simple([("pkg/..", b"x")]), "'.' or '..' components"),
    "dot-component": (_simple([("pkg/./mod.py", b"x")]), "'.' or '..' components"),
    "absolute": (_simple([("/etc/evil.py", b"x")]), "unsafe member name '/etc/evil.py'"),
    "backslash": (_simple([("pkg\\evil.py", b"x")]), "backslash"),
    "drive-letter": (_simple([("C:/evil.py", b"x")]), "drive-letter"),
    "duplicate": (_simple([("pkg/__init__.py", b"again")]), "duplicate member 'pkg/__init__.py'"),
    "symlink": (_simple([(_symlink(), b"/etc/passwd")]), "symbolic link"),
    "record-hash-mismatch": (
        _simple(
            [("pkg/mod.py", b"tampered")],
            record=write_record(
                [*parse_record(GOOD_RECORD), file_entry("pkg/mod.py", b"original")],
                record_path=RECORD,
            ),
        ),
        "'pkg/mod.py' does not match its RECORD hash",
    ),
    "missing-from-record": (
        _simple([("pkg/extra.py", b"x")], record=GOOD_RECORD),
        "'pkg/extra.py' is not listed in RECORD",
    ),
    "record-lists-missing": (
        _simple(
            record=write_record(
                [*parse_record(GOOD_RECORD), file_entry("pkg/gone.py", b"x")],
                record_path=RECORD,
            )
        ),
        "RECORD lists missing members: pkg/gone.py",
    ),
    "no-hash-in-record": (
        _simple(
            record=write_record(
                [RecordEntry(e.path, None, e.size) for e in parse_record(GOOD_RECORD)],
                record_path=RECORD,
            )
        ),
        "RECORD has no hash for 'pkg/__init__.py'",
    ),
    "bad-hash-in-record": (
        _simple(record=GOOD_RECORD.replace(b"pkg/__init__.py,sha256=", b"pkg/__init__.py,#")),
        "malformed",
    ),
    "no-record": (_simple(record=False), f"no {RECORD}"),
    "malformed-record": (_simple(record=b"a,b\n"), "malformed"),
    # A field past csv's limit (128 KiB): csv's own error, told as the others are.
    "record-field-too-long": (
        _simple(record=b"pkg/__init__.py,sha256=" + b"A" * 200_000 + b",0\n"),
        "malformed pkg-1.0.dist-info/RECORD: field larger than field limit",
    ),
    "record-not-utf8": (_simple(record=b"pkg/\xff.py,,\n"), "RECORD is not valid UTF-8"),
    "variant-json-not-utf8": (
        _simple([(f"{DIST_INFO}/variant.json", b'{"$schema": "\xff"}')]),
        "not valid UTF-8",
    ),
    "oversized": (_oversized, "declares 8192 bytes (limit 4096)"),
    "bomb": (_bomb, "decompression bomb"),
    "lying-header": (_lying_header, "'pkg/data.bin'"),
    "unlisted-record-suffix": (
        _simple([(f"{DIST_INFO}/RECORD.evil", b"x")], record=GOOD_RECORD),
        f"'{DIST_INFO}/RECORD.evil' is not listed in RECORD",
    ),
    "corrupt-deflate": (_damaged(garble=1), "'pkg/__init__.py'"),
    "utf8-flag-invalid-name": (
        _damaged(flags=0x800, name=b"pkg/__init_\xff.py"),
        "member name is not valid UTF-8",
    ),
    "version-needed-6.7": (_damaged(version=67), "zip file version 6.7"),
    "unknown-compression": (_damaged(method=99), "compression method 99"),
    "encrypted": (_damaged(flags=1), "'pkg/__init__.py' is encrypted"),
    "several-dist-info": (
        _simple([("other-2.0.dist-info/METADATA", b"Name: other\n")]),
        "several .dist-info directories",
    ),
    "no-dist-info": (
        _simple([("pkg/__init__.py", b"")], record=False, base=False),
        "no .dist-info directory",
    ),
}


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    return src, out


def _open_and_verify(path: Path) -> None:
    with WheelArchive(path) as archive:
        archive.verify_record()
        archive.variant_metadata()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_reading_refuses(
    case: str, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    build, expected = HOSTILE[case]
    path = build(dirs[0], monkeypatch)
    with pytest.raises(WheelError) as excinfo:
        _open_and_verify(path)
    message = str(excinfo.value)
    assert expected in message
    assert NAME in message
    assert f"{NAME}: {NAME}:" not in message  # named once
    assert "\n" not in message


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_installing_refuses_naming_the_wheel_once(
    case: str, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    build, expected = HOSTILE[case]
    path = build(dirs[0], monkeypatch)
    try:
        verify_wheel(path)
    except InstallError as exc:
        message = str(exc)
    else:  # what verify_wheel leaves to unpacking (member bytes, hashes)
        with pytest.raises(WheelError):
            _open_and_verify(path)
        return
    assert message.startswith(f"refusing to install {NAME}: "), message
    assert f"{NAME}: {NAME}:" not in message
    assert expected in message
    assert "\n" not in message


CORRUPT = ["corrupt-deflate", "utf8-flag-invalid-name", "version-needed-6.7", "unknown-compression"]


@pytest.mark.parametrize("case", CORRUPT)
def test_damaged_archives_say_what_to_do(
    case: str, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = HOSTILE[case][0](dirs[0], monkeypatch)
    with pytest.raises(WheelError, match="re-download or rebuild it"):
        _open_and_verify(path)


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_make_writes_nothing(
    case: str, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, out = dirs
    build, expected = HOSTILE[case]
    path = build(src, monkeypatch)
    with pytest.raises(WheelError) as excinfo:
        make_variant(path, out, properties=[V3], verify=True)
    assert expected in str(excinfo.value)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_strip_writes_nothing(
    case: str, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, out = dirs
    build, expected = HOSTILE[case]
    path = build(src, monkeypatch)
    with pytest.raises(WheelError) as excinfo:
        strip_variant(path, out, verify=True)
    assert expected in str(excinfo.value)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_make_without_verify_keeps_every_damage_findable(
    case: str, dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unverified, members are copied with their RECORD rows: a damage only their
    hashes show is in the output as it was in the input, never made to look right."""
    src, out = dirs
    build, expected = HOSTILE[case]
    path = build(src, monkeypatch)
    refused: WheelError | None = None
    try:
        made = make_variant(path, out, properties=[V3])
    except WheelError as exc:
        refused = exc
    if refused is not None:
        assert expected in str(refused)
        assert list(out.iterdir()) == []
        return
    with pytest.raises(WheelError) as excinfo:
        _open_and_verify(made)
    assert expected in str(excinfo.value)


def test_well_formed_wheel_passes(dirs: tuple[Path, Path]) -> None:
    path = write_zip(dirs[0], base_members([("pkg/mod.py", b"x = 1\n")]))
    with WheelArchive(path) as archive:
        archive.verify_record()
        assert archive.dist_info == DIST_INFO
        assert archive.names[-1] == RECORD
        assert archive.variant_metadata() is None


def test_signature_files_need_no_record_row(dirs: tuple[Path, Path]) -> None:
    path = write_zip(dirs[0], base_members())
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(f"{DIST_INFO}/RECORD.jws", b"signature")
    with WheelArchive(path) as archive:
        archive.verify_record()


def test_not_a_zip(dirs: tuple[Path, Path]) -> None:
    src, out = dirs
    path = src / NAME
    path.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(WheelError, match="not a valid wheel"):
        make_variant(path, out, properties=[V3])
    assert list(out.iterdir()) == []


def test_missing_input(dirs: tuple[Path, Path]) -> None:
    src, out = dirs
    with pytest.raises(WheelError, match="no such file"):
        strip_variant(src / "pkg-1.0-py3-none-any-v3.whl", out)
    assert list(out.iterdir()) == []


def test_failure_midway_leaves_no_temporary_file(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error while the output is being written removes the partial file."""
    src, out = dirs
    path = make_wheel(src, NAME, record=True, extra_members={"pkg/data.bin": b"d" * 5000})
    real = WheelArchive.compressed_chunks

    def failing(self: WheelArchive, member: str | zipfile.ZipInfo) -> Iterator[bytes]:
        name = member if isinstance(member, str) else member.filename
        if name == "pkg/data.bin":  # copied after other members were written
            raise WheelError("simulated read failure")
        yield from real(self, member)

    monkeypatch.setattr(WheelArchive, "compressed_chunks", failing)
    # Through the interpreter: no member is copied by the kernel.
    monkeypatch.setattr(CompressedCopyWriter, "copy_verbatim", lambda *args: False)
    with pytest.raises(WheelError, match="simulated"):
        make_variant(path, out, properties=[V3])
    assert list(out.iterdir()) == []


def test_a_failed_copy_by_the_kernel_leaves_no_temporary_file(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, out = dirs
    path = make_wheel(src, NAME, record=True, extra_members={"pkg/data.bin": b"d" * 5000})

    def failing(source: int, target: int, offset: int, count: int) -> int:
        os.write(target, b"partial")
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(zip_copy, "copy_range", failing)
    with pytest.raises(OSError, match="cannot write it") as caught:
        make_variant(path, out, properties=[V3])
    # The error names the output (the CLI prints "FILE: REASON").
    assert caught.value.strerror == "cannot write it (Input/output error)"
    assert Path(caught.value.filename).parent == out
    assert list(out.iterdir()) == []


def test_existing_variant_json_is_validated(dirs: tuple[Path, Path]) -> None:
    src, out = dirs
    doc = variant_doc("v3", {"x86_64": {"level": ["V3"]}})
    path = make_wheel(src, "pkg-1.0-py3-none-any-v3.whl", doc, record=True)
    with pytest.raises(WheelError, match="'V3'"):
        strip_variant(path, out)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("algorithm", ["md5", "sha1"])
def test_weak_record_hashes_are_refused(tmp_path: Path, algorithm: str) -> None:
    body = b"x = 1\n"
    digest = base64.urlsafe_b64encode(hashlib.new(algorithm, body).digest()).rstrip(b"=")
    path = tmp_path / "weak-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("weak.py", body)
        archive.writestr("weak-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: weak\n")
        archive.writestr(
            "weak-1.0.dist-info/RECORD",
            f"weak.py,{algorithm}={digest.decode()},{len(body)}\nweak-1.0.dist-info/RECORD,,\n"
            "weak-1.0.dist-info/METADATA,,\n",
        )
    with WheelArchive(path) as wheel, pytest.raises(WheelError, match="sha256 or stronger"):
        wheel.verify_record()


NAME_PARTS = ["", ".", "..", "...", "a", ".a", "a.", "pkg", "x.py"]


@given(st.lists(st.sampled_from(NAME_PARTS), max_size=5))
def test_dot_components_are_refused_exactly(parts: list[str]) -> None:
    name = "/".join(parts)
    if not name or name.startswith("/"):
        return  # refused as absolute (or empty) before the components are looked at
    dotted = any(part in (".", "..") for part in name.split("/"))
    reason = archive_module._unsafe_name(name)
    assert (reason == "path with '.' or '..' components") == dotted


@pytest.mark.parametrize("threads", [1, 4])
def test_a_big_wheel_reports_the_first_bad_member_in_archive_order(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    """Past 64 MiB to inflate, members are checked by threads, the largest first; the
    error still names the first mismatching member in archive order."""
    monkeypatch.setattr(archive_module, "cores", lambda: threads)
    big = [(f"pkg/part{i}.bin", bytes([i]) * (9 << 20)) for i in range(8)]  # 72 MiB
    members = base_members([("pkg/a.py", b"A = 1\n"), *big, ("pkg/z.py", b"Z = 1\n")])
    entries = [file_entry(_name(m), data) for m, data in members]
    honest = write_record(entries, record_path=RECORD)
    z_row = next(line for line in honest.splitlines() if line.startswith(b"pkg/z.py,"))
    record = honest.replace(z_row, b"pkg/z.py,sha256=" + b"A" * 43 + b"," + z_row.split(b",")[2])
    assert record != honest  # pkg/z.py's row is wrong too, after pkg/part0.bin
    tampered = [(m, data) for m, data in members]
    tampered[4] = (tampered[4][0], tampered[4][1][:-1] + b"\xff")  # pkg/part0.bin
    path = write_zip(dirs[0], tampered, record=record, compression=zipfile.ZIP_STORED)
    with WheelArchive(path) as archive, pytest.raises(WheelError, match=r"'pkg/part0\.bin'"):
        archive.verify_record()


def test_checking_an_in_memory_wheel_leaves_no_view_of_its_bytes(dirs: tuple[Path, Path]) -> None:
    """A view of the in-memory stream's buffer, held by a failed check's traceback,
    would make closing the stream fail (BufferError) and crash some interpreters."""
    from wheelwise.wheels.archive import InMemoryWheel

    members = base_members([("pkg/mod.py", b"x = 1\n")])
    record = write_record([file_entry(_name(m), d) for m, d in members], record_path=RECORD)
    path = write_zip(dirs[0], [*members[:-1], (members[-1][0], b"changed")], record=record)
    archive = WheelArchive(InMemoryWheel(NAME, path.read_bytes()))
    with pytest.raises(WheelError) as failed:
        archive.verify_record()
    stream = archive._zip.fp
    assert isinstance(stream, io.BytesIO)
    stream.seek(0, io.SEEK_END)
    stream.write(b"more")  # no view pins the buffer, though the traceback lives
    archive.close()
    assert failed.value is not None
