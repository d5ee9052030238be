"""The one reader of core metadata files (METADATA, PEP 658 files): the fields each
caller needs, lenient as the e-mail format, and never an error but its own."""

from __future__ import annotations

import email.parser
import email.policy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded
from wheelwise.wheels.core_metadata import CoreMetadataError, read_core_metadata
from wheelwise.wheels.errors import WheelError

FUZZ = bounded(200)
LINES = [
    b"Metadata-Version: 2.4",
    b"Name: app",
    b"Name: other",
    b"Version: 1.0",
    b"Requires-Dist: x>=1",
    b"Requires-Dist: \xff\xfe",
    b"Requires-Python: >=3.9",
    b"Provides-Extra: cli",
    b"Keywords: a b, c",
    b"Project-URL: Home, https://example.org",
    b"Project-URL: broken",
    b"Description: from the header",
    b"Content-Type: multipart/mixed; boundary=x",
    b"Content-Transfer-Encoding: base64",
    b"--x",
    b"  folded",
    b"From nobody",
    b"no colon here",
    b"",
    b"\r",
]
documents = st.one_of(
    st.binary(max_size=400),
    st.lists(st.one_of(st.sampled_from(LINES), st.binary(max_size=30)), max_size=16).map(
        b"\n".join
    ),
    st.lists(st.sampled_from(LINES), max_size=16).map(b"\r\n".join),
)


@pytest.mark.slow
@FUZZ
@given(documents)
def test_any_bytes_read_or_raise_only_the_readers_error(data: bytes) -> None:
    for body in (True, False):
        try:
            metadata = read_core_metadata(data, body=body)
        except CoreMetadataError:
            continue
        # Every accessor answers with the types it promises.
        assert all(isinstance(v, str) for v in metadata.requires_dist)
        assert metadata.name is None or isinstance(metadata.name, str)
        assert metadata.version is None or isinstance(metadata.version, str)
        assert isinstance(metadata.to_json(), dict)


@FUZZ
@given(documents)
def test_without_the_body_the_fields_are_the_same(data: bytes) -> None:
    whole, head = read_core_metadata(data), read_core_metadata(data, body=False)
    for field in ("Name", "Version", "Requires-Dist", "Requires-Python", "Provides-Extra"):
        assert whole.values(field) == head.values(field)


@FUZZ
@given(st.lists(st.sampled_from(LINES[:12]), max_size=12).map(b"\n".join))
def test_ascii_fields_read_as_the_email_parser_reads_them(data: bytes) -> None:
    """For well-formed UTF-8 headers the values are the e-mail package's, first wins."""
    message = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(
        data, headersonly=True
    )
    metadata = read_core_metadata(data, body=False)
    for field in ("Name", "Version", "Requires-Python"):
        expected = message.get(field)
        assert metadata.first(field) == (str(expected).strip() if expected is not None else None)


def test_the_readers_error_is_a_wheel_error() -> None:
    assert issubclass(CoreMetadataError, WheelError)


def test_fields_a_caller_needs() -> None:
    raw = (
        b"Metadata-Version: 2.4\nName: App\nVersion: 2.0\nClassifier: A\nClassifier: B\n"
        b"Keywords: one two,three\nProject-URL: Home, https://example.org\n"
        b"Requires-Dist: x>=1\nProvides-Extra: cli\nX-Custom: kept\n\nThe body\n"
    )
    metadata = read_core_metadata(raw)
    assert (metadata.name, metadata.version) == ("App", "2.0")
    assert metadata.requires_dist == ["x>=1"]
    assert metadata.values("Provides-Extra") == ["cli"]
    assert metadata.body == "The body\n"
    assert metadata.to_json() == {
        "metadata_version": "2.4",
        "name": "App",
        "version": "2.0",
        "description": "The body\n",
        "keywords": ["one", "two", "three"],
        "classifier": ["A", "B"],
        "requires_dist": ["x>=1"],
        "project_url": ["Home, https://example.org"],
        "provides_extra": ["cli"],
        "x_custom": "kept",
    }
    assert read_core_metadata(raw, body=False).body is None


def test_broken_files_are_read_leniently() -> None:
    raw = (
        b"Name: first\nName: second\nVersion: 2\nRequires-Dist: ok\nRequires-Dist: caf\xc3\xa9\n"
        b"Author: S\xc3\xa9bastien\nMaintainer: \xff\n\n\xffbody"
    )
    metadata = read_core_metadata(raw)
    assert metadata.name == "first"  # repeated where it may appear once: the first
    assert metadata.requires_dist == ["ok", "café"]
    assert metadata.first("Author") == "Sébastien"  # UTF-8, not mojibake
    assert metadata.first("Maintainer") == "ÿ"  # not UTF-8: read as Latin-1
    assert metadata.body is None  # a body that is not UTF-8 is left out
