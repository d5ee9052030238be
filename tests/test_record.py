"""RECORD rows read and written (``wheelwise.wheels.record``): what csv writes, joined
at once where no field needs quoting, and rows kept as they were read."""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelfactory import make_wheel
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.make import make_variant
from wheelwise.wheels.record import (
    RecordEntry,
    RecordRow,
    file_entry,
    parse_record,
    parse_record_rows,
    write_record,
)

# Quotes, commas and line breaks need csv's quoting; the rest are ordinary.
FIELD = st.text(alphabet=st.sampled_from('ab/=._- ,"\r\n\t\\é'), max_size=8)
ROW = st.tuples(FIELD, FIELD, FIELD)
# csv writes a lone carriage return unquoted (3.11), and reads it as a line end.
READABLE = st.text(alphabet=st.sampled_from('ab/=._- ,"\n\t\\é'), max_size=8)


def _csv(rows: Sequence[Sequence[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, delimiter=",", quotechar='"', lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(st.lists(ROW, max_size=6))
def test_rows_are_written_as_csv_writes_them(rows: list[tuple[str, str, str]]) -> None:
    assert write_record(rows) == _csv(rows)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(READABLE, READABLE, READABLE), max_size=6))
def test_written_rows_read_back(rows: list[tuple[str, str, str]]) -> None:
    # installer reads a backslash in a path as a slash
    expected = [(path.replace("\\", "/"), digest, size) for path, digest, size in rows]
    assert parse_record_rows(write_record(rows)) == expected


def test_rows_of_other_lengths_go_through_csv() -> None:
    rows = [("",), ("a", "b", "c", "d", "e")]  # as many commas as two rows of three
    assert write_record(rows) == _csv(rows) == b'""\na,b,c,d,e\n'  # type: ignore[arg-type]


def test_entries_and_rows_mix_and_record_gets_no_hash() -> None:
    entry = file_entry("pkg/a.py", b"x")
    rows: list[RecordEntry | RecordRow] = [
        entry,
        ("pkg/b.py", "sha256=abc", "0012"),
        RecordEntry("pkg/c,d.py", None, 3),
    ]
    written = write_record(rows, record_path="pkg-1.dist-info/RECORD")
    assert written.decode().splitlines() == [
        f"pkg/a.py,{entry.hash_},1",
        "pkg/b.py,sha256=abc,0012",  # as it was read
        '"pkg/c,d.py",,3',
        "pkg-1.dist-info/RECORD,,",
    ]
    listed = [("pkg-1.dist-info/RECORD", "sha256=abc", "9"), ("pkg/a.py", "", "")]
    assert write_record(listed, record_path="pkg-1.dist-info/RECORD") == (
        b"pkg-1.dist-info/RECORD,,\npkg/a.py,,\n"
    )


def test_a_field_past_csvs_limit_is_one_error() -> None:
    with pytest.raises(WheelError, match=r"^malformed RECORD: field larger than field limit"):
        parse_record(b"a.py,sha256=" + b"A" * 200_000 + b",1\n")


def test_make_keeps_the_copied_members_rows_as_written(tmp_path: Path) -> None:
    """A copied member's bytes are unchanged, and so is its row, zeros and quotes
    included; the new rows are csv's, quoted where needed."""
    wheel = make_wheel(
        tmp_path, "pkg-1.0-py3-none-any.whl", extra_members={"pkg/a,b.py": b"x = 1\n"}, record=True
    )
    with WheelArchive(wheel) as archive:
        record_name = archive.dist_info_path("RECORD")
        rows = parse_record_rows(archive.read(record_name))
    # the same sizes written with leading zeros: csv and installer read them alike
    padded = [(path, digest, size.zfill(4) if size else size) for path, digest, size in rows]
    _rewrite_record(wheel, record_name, write_record(padded))

    made = make_variant(
        wheel, tmp_path / "out", properties=[VariantProperty("x86_64", "level", "v3")]
    )
    with WheelArchive(made) as archive:
        text = archive.read(record_name).decode()
        archive.verify_record()
    assert '"pkg/a,b.py",sha256=' in text
    for path, digest, size in padded:
        if path != record_name:
            assert _csv([(path, digest, size)]).decode() in text


def _rewrite_record(wheel: Path, record_name: str, record: bytes) -> None:
    with zipfile.ZipFile(wheel) as old:
        members = [(info, old.read(info)) for info in old.infolist()]
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as new:
        for info, data in members:
            new.writestr(info, record if info.filename == record_name else data)
