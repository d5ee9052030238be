"""Reading a wheel's variant label and variant.json, including hostile archives."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from paths import CORPUS
from wheelfactory import make_wheel, variant_doc
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.variant_info import MAX_VARIANT_JSON_BYTES, read_wheel_variant

CORPUS_DIST = CORPUS / "test-package" / "dist"


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("foo", ["installable_plugin :: feat1 :: val1c"]),
        ("60567bd9", ["installable_plugin :: feat1 :: val1c"]),
        ("bar", ["installable_plugin :: feat2 :: val2b"]),
        ("fbe82642", ["installable_plugin :: feat2 :: val2b"]),
        (
            "5d8be4b9",
            ["installable_plugin :: feat1 :: val1c", "installable_plugin :: feat2 :: val2b"],
        ),
        ("null", []),
    ],
)
def test_corpus_wheels(label: str, expected: list[str]) -> None:
    info = read_wheel_variant(CORPUS_DIST / f"test_package-0-py3-none-any-{label}.whl")
    assert info.label == label
    assert [str(p) for p in info.properties] == expected
    assert info.namespaces == ("installable_plugin", "non_existing_plugin")
    assert info.metadata is not None
    assert "installable_plugin" in info.metadata.providers


def test_corpus_non_variant_wheel() -> None:
    info = read_wheel_variant(CORPUS_DIST / "test_package-0-py3-none-any.whl")
    assert info.label is None
    assert info.metadata is None
    assert info.properties == ()
    assert info.namespaces == ()


def test_pep825_wheel(tmp_path: Path) -> None:
    path = make_wheel(
        tmp_path,
        "numpy-2.3.2-cp313-cp313t-musllinux_1_2_x86_64-x86_64_v3.whl",
        variant_doc("x86_64_v3", {"x86_64": {"level": ["v3"]}}),
    )
    info = read_wheel_variant(path)
    assert info.label == "x86_64_v3"
    assert info.properties == (VariantProperty("x86_64", "level", "v3"),)


def test_only_directory_and_variant_json_are_read(tmp_path: Path) -> None:
    """A corrupt payload member does not matter: it is never decompressed."""
    path = make_wheel(
        tmp_path,
        "pkg-1.0-py3-none-any-v3.whl",
        variant_doc("v3", {"x86_64": {"level": ["v3"]}}),
        extra_members={"pkg/big.bin": b"\0" * 100_000},
    )
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("pkg/big.bin")
    # Corrupt the compressed body of the payload member.
    start = info.header_offset + 30 + len(info.filename) + 10
    data[start : start + 20] = b"\xff" * 20
    path.write_bytes(bytes(data))
    with zipfile.ZipFile(path) as archive, pytest.raises(Exception):  # noqa: B017, PT011
        archive.read("pkg/big.bin")
    assert read_wheel_variant(path).label == "v3"


def _error(path: Path) -> str:
    with pytest.raises(WheelError) as excinfo:
        read_wheel_variant(path)
    return str(excinfo.value)


def test_missing_file(tmp_path: Path) -> None:
    message = _error(tmp_path / "pkg-1.0-py3-none-any-v3.whl")
    assert "no such file" in message


def test_bad_filename(tmp_path: Path) -> None:
    path = tmp_path / "pkg-1.0-3py-none-any.whl"
    path.write_bytes(b"")
    assert "pkg-1.0-3py-none-any.whl" in _error(path)


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "pkg-1.0-py3-none-any-v3.whl"
    path.write_bytes(b"this is not a zip file")
    assert "not a valid wheel (zip) archive" in _error(path)


def test_variant_wheel_without_variant_json(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "pkg-1.0-py3-none-any-v3.whl", None)
    message = _error(path)
    assert "has no *.dist-info/variant.json" in message
    assert "'v3'" in message


def test_two_variant_json_members(tmp_path: Path) -> None:
    doc = variant_doc("v3", {"x86_64": {"level": ["v3"]}})
    path = make_wheel(
        tmp_path,
        "pkg-1.0-py3-none-any-v3.whl",
        doc,
        extra_members={"other-1.0.dist-info/variant.json": b"{}"},
    )
    assert "several .dist-info directories" in _error(path)


def test_label_mismatch(tmp_path: Path) -> None:
    path = make_wheel(
        tmp_path,
        "pkg-1.0-py3-none-any-v3.whl",
        variant_doc("v4", {"x86_64": {"level": ["v4"]}}),
    )
    message = _error(path)
    assert "'v3'" in message
    assert "v4" in message


def test_invalid_utf8(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "pkg-1.0-py3-none-any-v3.whl", b'{"$schema": "\xff"}')
    message = _error(path)
    assert "not valid UTF-8" in message
    assert "variant.json" in message


def test_invalid_json(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "pkg-1.0-py3-none-any-v3.whl", b"{not json")
    assert "invalid JSON" in _error(path)


def test_oversized_variant_json_is_refused(tmp_path: Path) -> None:
    # Highly compressible: a few KiB on disk, over the limit once inflated.
    path = make_wheel(tmp_path, "pkg-1.0-py3-none-any-v3.whl", b" " * (MAX_VARIANT_JSON_BYTES + 10))
    assert path.stat().st_size < MAX_VARIANT_JSON_BYTES // 10
    assert "refusing" in _error(path)


def test_invalid_metadata_is_reported_with_location(tmp_path: Path) -> None:
    doc = variant_doc("v3", {"x86_64": {"level": ["V3"]}})
    path = make_wheel(tmp_path, "pkg-1.0-py3-none-any-v3.whl", doc)
    message = _error(path)
    assert "pkg-1.0-py3-none-any-v3.whl!pkg-1.0.dist-info/variant.json" in message
    assert "'V3'" in message
