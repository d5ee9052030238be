"""``variant make`` / ``variant strip``: the library (wheels.make, wheels.strip) and the CLI."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile

from paths import CORPUS
from variantlibkit import variantlib_label
from wheelfactory import make_wheel, variant_doc
from wheelwise.variants.errors import InvalidLabel, InvalidMetadata, InvalidProperty, VariantError
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.pyproject import read_pyproject_variant
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.make import choose_label, make_variant
from wheelwise.wheels.record import parse_record
from wheelwise.wheels.strip import strip_variant
from wheelwise.wheels.variant_info import read_wheel_variant

DIST = CORPUS / "test-package" / "dist"
CORPUS_LABELS = ["5d8be4b9", "60567bd9", "bar", "fbe82642", "foo", "null"]
PLAIN = "pkg-1.0-py3-none-any.whl"
DIST_INFO = "pkg-1.0.dist-info"
P = VariantProperty.parse
V3 = P("x86_64 :: level :: v3")
V4 = P("x86_64 :: level :: v4")
CU128 = P("nvidia :: cuda_version_lower_bound :: 12.8")


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """A small non-variant wheel with a correct RECORD."""
    src = tmp_path / "src"
    src.mkdir()
    return make_wheel(src, PLAIN, record=True, extra_members={"pkg/mod.py": b"x = 1\n"})


def variant_json(path: Path) -> dict[str, Any]:
    with WheelArchive(path) as archive:
        document: dict[str, Any] = json.loads(archive.read(archive.dist_info_path("variant.json")))
    return document


def check_output(path: Path, validator: Any) -> None:
    """RECORD verifies, and variant.json (if any) is canonical and valid PEP 825 0.1.1."""
    with WheelArchive(path) as archive:
        archive.verify_record()
        record = archive.read(archive.dist_info_path("RECORD"))
        rows = parse_record(record)
        # One row per member, in archive order, RECORD's own row last and empty.
        assert [row.path for row in rows] == archive.names
        assert rows[-1].hash_ is None
        assert rows[-1].size is None
        assert all(row.hash_ is not None and row.hash_.name == "sha256" for row in rows[:-1])
        assert record.endswith(b"\n")
        assert b"\r" not in record
        assert b"=," not in record  # no base64 padding
        name = archive.dist_info_path("variant.json")
        if name in archive:
            data = archive.read(name)
            validator.validate(json.loads(data))
            assert data == VariantMetadata.from_json(data).to_bytes()
            assert not VariantMetadata.from_json(data).is_legacy


# -- round trips against the corpus ----------------------------------------------------


@pytest.mark.parametrize("label", CORPUS_LABELS)
def test_corpus_round_trip(label: str, tmp_path: Path, variant_schema_validator: Any) -> None:
    original = DIST / f"test_package-0-py3-none-any-{label}.whl"
    info = read_wheel_variant(original)
    stripped = strip_variant(original, tmp_path / "stripped")
    assert stripped == tmp_path / "stripped" / "test_package-0-py3-none-any.whl"
    assert read_wheel_variant(stripped).label is None
    check_output(stripped, variant_schema_validator)
    with WheelArchive(stripped) as archive:
        assert archive.variant_metadata() is None

    made = make_variant(
        stripped,
        tmp_path / "made",
        properties=info.properties,
        label=info.label,
        null=label == "null",
        namespaces=info.namespaces,
    )
    assert made.name == original.name
    check_output(made, variant_schema_validator)
    again = read_wheel_variant(made)
    assert (again.label, again.properties, again.namespaces) == (
        info.label,
        info.properties,
        info.namespaces,
    )
    # The legacy provider data of the original is not written.
    assert again.metadata is not None
    assert again.metadata.providers == {}
    assert set(variant_json(made)) == {"$schema", "default-priorities", "variants"}


@pytest.mark.parametrize("label", ["5d8be4b9", "60567bd9", "fbe82642"])
def test_corpus_hash_labels_come_back_without_label(label: str, tmp_path: Path) -> None:
    """variantlib chose these labels; make_variant without --label chooses the same."""
    original = DIST / f"test_package-0-py3-none-any-{label}.whl"
    info = read_wheel_variant(original)
    stripped = strip_variant(original, tmp_path / "stripped")
    made = make_variant(
        stripped, tmp_path / "made", properties=info.properties, namespaces=info.namespaces
    )
    assert made.name == original.name


def test_strip_gives_back_the_corpus_non_variant_wheel(tmp_path: Path) -> None:
    stripped = strip_variant(DIST / "test_package-0-py3-none-any-foo.whl", tmp_path)
    plain = DIST / "test_package-0-py3-none-any.whl"
    with zipfile.ZipFile(stripped) as ours, zipfile.ZipFile(plain) as theirs:
        assert [i.filename for i in ours.infolist()] == [i.filename for i in theirs.infolist()]
        for mine, reference in zip(ours.infolist(), theirs.infolist(), strict=True):
            assert mine.date_time == reference.date_time
            assert mine.compress_type == reference.compress_type
            assert mine.external_attr == reference.external_attr
            assert ours.read(mine) == theirs.read(reference)


# -- reproducibility -----------------------------------------------------------------


def test_make_is_reproducible(plain: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = make_variant(plain, tmp_path / "a", properties=[V3, CU128])
    # Another clock, another output folder, a copy of the input with another mtime.
    monkeypatch.setattr(time, "time", lambda: 2_000_000_000.0)
    monkeypatch.setattr(time, "time_ns", lambda: 2_000_000_000 * 10**9)
    monkeypatch.setattr(time, "localtime", lambda *_: time.gmtime(2_000_000_000))
    other = tmp_path / "elsewhere"
    other.mkdir()
    copy = shutil.copy(plain, other / plain.name)
    os.utime(copy, (1_500_000_000, 1_500_000_000))
    second = make_variant(Path(copy), tmp_path / "b" / "deeper", properties=[CU128, V3])
    assert first.name == second.name
    assert first.read_bytes() == second.read_bytes()


def test_strip_is_reproducible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = DIST / "test_package-0-py3-none-any-5d8be4b9.whl"
    first = strip_variant(source, tmp_path / "a")
    monkeypatch.setattr(time, "time", lambda: 1_000_000_000.0)
    monkeypatch.setattr(time, "localtime", lambda *_: time.gmtime(1_000_000_000))
    second = strip_variant(source, tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()


def test_make_of_make_is_identical(plain: Path, tmp_path: Path) -> None:
    """Making a variant wheel again with the same data is accepted and changes nothing."""
    first = make_variant(plain, tmp_path / "a", properties=[V3], label="x86_64_v3")
    second = make_variant(first, tmp_path / "b", properties=[V3], label="x86_64_v3")
    assert first.read_bytes() == second.read_bytes()
    # ... and strip then make gives the same bytes again.
    stripped = strip_variant(second, tmp_path / "c")
    third = make_variant(stripped, tmp_path / "d", properties=[V3], label="x86_64_v3")
    assert third.read_bytes() == first.read_bytes()


def test_members_keep_their_attributes(tmp_path: Path, variant_schema_validator: Any) -> None:
    src = tmp_path / "src"
    src.mkdir()
    path = src / PLAIN
    script = zipfile.ZipInfo("pkg/run.sh", date_time=(2020, 5, 6, 7, 8, 10))
    script.external_attr = (stat.S_IFREG | 0o755) << 16
    script.compress_type = zipfile.ZIP_STORED
    members: list[tuple[zipfile.ZipInfo, bytes]] = [
        (script, b"#!/bin/sh\necho hi\n"),
        (zipfile.ZipInfo(f"{DIST_INFO}/METADATA", (2019, 1, 1, 0, 0, 0)), b"Name: pkg\n"),
        (zipfile.ZipInfo(f"{DIST_INFO}/WHEEL", (2018, 1, 1, 0, 0, 0)), b"Wheel-Version: 1.0\n"),
    ]
    from wheelwise.wheels.record import file_entry, write_record

    record_name = f"{DIST_INFO}/RECORD"
    record = write_record(
        [file_entry(info.filename, data) for info, data in members], record_path=record_name
    )
    record_info = zipfile.ZipInfo(record_name, (2017, 1, 1, 0, 0, 0))
    record_info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("pkg/", (2020, 1, 1, 0, 0, 0)), b"")  # a folder entry
        for info, data in [*members, (record_info, record)]:
            archive.writestr(info, data)
    made = make_variant(path, tmp_path / "out", properties=[V3])
    check_output(made, variant_schema_validator)
    with zipfile.ZipFile(made) as archive:
        infos = {info.filename: info for info in archive.infolist()}
        # The folder entry stays, in its place, as it was.
        assert list(infos) == [
            "pkg/",
            "pkg/run.sh",
            f"{DIST_INFO}/METADATA",
            f"{DIST_INFO}/WHEEL",
            f"{DIST_INFO}/variant.json",
            record_name,
        ]
        run = infos["pkg/run.sh"]
        assert (run.date_time, run.compress_type, run.external_attr) == (
            script.date_time,
            zipfile.ZIP_STORED,
            script.external_attr,
        )
        assert archive.read(run) == b"#!/bin/sh\necho hi\n"
        assert (infos["pkg/"].date_time, infos["pkg/"].file_size) == ((2020, 1, 1, 0, 0, 0), 0)
        assert infos[record_name].date_time == (2017, 1, 1, 0, 0, 0)
        new = infos[f"{DIST_INFO}/variant.json"]
        # The newest copied member's time, mode 0644.
        assert new.date_time == (2020, 5, 6, 7, 8, 10)
        assert new.external_attr >> 16 == stat.S_IFREG | 0o644


def test_signatures_over_record_are_dropped(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    path = make_wheel(src, PLAIN, record=True)
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(f"{DIST_INFO}/RECORD.jws", b"signature")
    made = make_variant(path, tmp_path / "out", properties=[V3])
    with WheelArchive(made) as archive:
        assert f"{DIST_INFO}/RECORD.jws" not in archive
        archive.verify_record()


# -- labels ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "properties",
    [
        [V3],
        [V3, CU128],
        [P("nvidia :: sm_arch :: 80_real"), P("nvidia :: sm_arch :: 90_real"), CU128],
        [P("acme :: flavour :: sweet")],
        [P("aarch64 :: version :: 8.2a"), P("aarch64 :: sve :: on")],
    ],
)
def test_hash_label_is_variantlib_label(
    properties: list[VariantProperty], plain: Path, tmp_path: Path
) -> None:
    made = make_variant(plain, tmp_path, properties=properties)
    assert read_wheel_variant(made).label == variantlib_label(properties)
    assert made.name == f"pkg-1.0-py3-none-any-{variantlib_label(properties)}.whl"


names = st.sampled_from(["a", "b", "ns", "x86_64", "level"])
values = st.sampled_from(["1", "2", "v3", "12.8", "on", "a.b"])


@given(st.lists(st.builds(VariantProperty, names, names, values), min_size=1, max_size=8))
def test_choose_label_agrees_with_variantlib(properties: list[VariantProperty]) -> None:
    assert choose_label(properties) == variantlib_label(sorted(set(properties)))


def test_explicit_label(plain: Path, tmp_path: Path) -> None:
    made = make_variant(plain, tmp_path, properties=[V3], label="x86_64_v3")
    assert made.name == "pkg-1.0-py3-none-any-x86_64_v3.whl"
    with pytest.raises(InvalidLabel, match="Bad-Label"):
        make_variant(plain, tmp_path / "bad", properties=[V3], label="Bad-Label")
    assert not (tmp_path / "bad").exists()


# -- validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ([P("nvidia :: sm_arch :: 999_real")], "unknown value in 'nvidia :: sm_arch :: 999_real'"),
        ([V3, V4], "x86_64 :: level takes a single value, got 2: v3, v4"),
        ([P("x86_64 :: nonsense :: on")], "has no feature 'nonsense'"),
        ([P("aarch64 :: sve :: off")], "known values: on"),
    ],
)
def test_validation_errors(
    properties: list[VariantProperty], expected: str, plain: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with pytest.raises(InvalidProperty) as excinfo:
        make_variant(plain, out, properties=properties)
    assert expected in str(excinfo.value)
    assert "--no-validate" in str(excinfo.value)
    assert not out.exists() or list(out.iterdir()) == []
    # validate=False accepts them.
    made = make_variant(plain, out, properties=properties, validate=False)
    assert read_wheel_variant(made).properties == tuple(sorted(properties))


def test_validation_accepts_known_and_foreign_properties(plain: Path, tmp_path: Path) -> None:
    properties = [
        P("nvidia :: sm_arch :: 80_real"),
        P("nvidia :: sm_arch :: 90_real"),  # multi-value feature
        P("amd :: gfx_arch :: gfx90a"),
        P("x86_64 :: avx512f :: on"),
        P("acme :: anything :: goes"),  # no built-in provider: not checked
    ]
    made = make_variant(plain, tmp_path, properties=properties)
    assert read_wheel_variant(made).properties == tuple(sorted(properties))


# -- null, namespaces, pyproject ---------------------------------------------------------


def test_null_variant(plain: Path, tmp_path: Path, variant_schema_validator: Any) -> None:
    made = make_variant(plain, tmp_path, properties=[], null=True, namespaces=["x86_64", "nvidia"])
    assert made.name == "pkg-1.0-py3-none-any-null.whl"
    check_output(made, variant_schema_validator)
    info = read_wheel_variant(made)
    assert (info.label, info.properties, info.namespaces) == ("null", (), ("x86_64", "nvidia"))
    assert variant_json(made)["variants"] == {"null": {}}


@pytest.mark.parametrize(
    ("kwargs", "error", "expected"),
    [
        ({"properties": [V3], "null": True}, InvalidProperty, "null variant has no properties"),
        ({"properties": [V3], "label": "null"}, InvalidProperty, "null variant has no properties"),
        (
            {"properties": [], "null": True, "label": "x"},
            InvalidLabel,
            "label is 'null', not 'x'",
        ),
        ({"properties": [], "null": True}, InvalidMetadata, "at least one namespace"),
        ({"properties": []}, InvalidProperty, "no variant properties given"),
        (
            {"properties": [V3, CU128], "namespaces": ["x86_64"]},
            InvalidMetadata,
            "namespace(s) nvidia used by the properties are not listed",
        ),
        ({"properties": [V3], "namespaces": ["x86_64", "x86_64"]}, InvalidMetadata, "duplicate"),
        ({"properties": [V3], "namespaces": ["X86", "x86_64"]}, InvalidMetadata, "'X86'"),
    ],
)
def test_bad_requests(
    kwargs: dict[str, Any],
    error: type[VariantError],
    expected: str,
    plain: Path,
    tmp_path: Path,
) -> None:
    with pytest.raises(error) as excinfo:
        make_variant(plain, tmp_path / "out", **kwargs)
    assert expected in str(excinfo.value)
    assert not (tmp_path / "out").exists()


def test_namespaces_order(plain: Path, tmp_path: Path) -> None:
    made = make_variant(plain, tmp_path / "a", properties=[V3, CU128])
    assert read_wheel_variant(made).namespaces == ("nvidia", "x86_64")  # sorted by default
    made = make_variant(
        plain, tmp_path / "b", properties=[V3, CU128], namespaces=["x86_64", "nvidia", "amd"]
    )
    assert read_wheel_variant(made).namespaces == ("x86_64", "nvidia", "amd")


PYPROJECT = """\
[project]
name = "pkg"

[variant.default-priorities]
namespace = ["x86_64", "nvidia", "installable_plugin"]

[variant.providers.installable_plugin]
requires = ["test-plugin-package"]
"""


def test_pyproject_namespaces(plain: Path, tmp_path: Path, pep850_validator: Any) -> None:
    project = read_pyproject_variant(PYPROJECT)
    assert project.providers
    made = make_variant(plain, tmp_path / "a", properties=[CU128], project=project)
    pep850_validator.validate(variant_json(made))
    assert variant_json(made)["default-priorities"] == {
        "namespace": ["x86_64", "nvidia", "installable_plugin"]
    }
    # Provider information is kept (PEP 850): installers need it to select the wheel.
    assert variant_json(made)["providers"] == {
        "installable_plugin": {"requires": ["test-plugin-package"]}
    }
    # --namespaces wins over the project.
    made = make_variant(
        plain, tmp_path / "b", properties=[CU128], project=project, namespaces=["nvidia"]
    )
    assert read_wheel_variant(made).namespaces == ("nvidia",)
    # The null variant takes the project's namespaces.
    made = make_variant(plain, tmp_path / "c", properties=[], null=True, project=project)
    assert read_wheel_variant(made).namespaces == ("x86_64", "nvidia", "installable_plugin")
    with pytest.raises(InvalidMetadata, match="amd"):
        make_variant(
            plain, tmp_path / "d", properties=[P("amd :: rocm_version :: 6.4")], project=project
        )


# -- already-variant input, overwriting -------------------------------------------------


def test_already_variant_input(tmp_path: Path) -> None:
    source = DIST / "test_package-0-py3-none-any-foo.whl"
    namespaces = ["installable_plugin", "non_existing_plugin"]
    feat1 = P("installable_plugin :: feat1 :: val1c")
    with pytest.raises(WheelError) as excinfo:
        make_variant(source, tmp_path / "out", properties=[V3])
    message = str(excinfo.value)
    assert "already a variant wheel (label 'foo': installable_plugin :: feat1 :: val1c)" in message
    assert "strip it first" in message
    # Other namespaces or another label are other data too.
    with pytest.raises(WheelError, match="already a variant wheel"):
        make_variant(source, tmp_path / "out", properties=[feat1], label="foo")
    with pytest.raises(WheelError, match="already a variant wheel"):
        make_variant(source, tmp_path / "out", properties=[feat1], namespaces=namespaces)
    assert not (tmp_path / "out").exists()
    # The same data: accepted, written canonical.
    made = make_variant(
        source, tmp_path / "out", properties=[feat1], label="foo", namespaces=namespaces
    )
    assert made.name == source.name
    assert "providers" not in variant_json(made)


def test_label_without_variant_json_is_already_variant(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "pkg-1.0-py3-none-any-v3.whl", record=True)
    with pytest.raises(WheelError, match=r"already a variant wheel \(label 'v3'\)"):
        make_variant(path, tmp_path / "out", properties=[V3], label="v3")


def test_variant_json_without_label_is_already_variant(tmp_path: Path) -> None:
    doc = variant_doc("v3", {"x86_64": {"level": ["v3"]}})
    path = make_wheel(tmp_path, PLAIN, doc, record=True)
    with pytest.raises(WheelError, match=r"it has pkg-1\.0\.dist-info/variant\.json"):
        make_variant(path, tmp_path / "out", properties=[V3], label="v3")
    # strip removes it.
    stripped = strip_variant(path, tmp_path / "stripped")
    assert stripped.name == PLAIN
    with WheelArchive(stripped) as archive:
        assert archive.variant_metadata() is None
        archive.verify_record()


def test_never_overwrites_the_input(plain: Path, tmp_path: Path) -> None:
    made = make_variant(plain, tmp_path / "out", properties=[V3], label="v3")
    before = made.read_bytes()
    with pytest.raises(WheelError, match="would overwrite the input wheel"):
        make_variant(made, made.parent, properties=[V3], label="v3")
    assert made.read_bytes() == before
    assert sorted(p.name for p in made.parent.iterdir()) == [made.name]


def test_output_replaces_an_older_output(plain: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "pkg-1.0-py3-none-any-v3.whl"
    target.parent.mkdir()
    target.write_bytes(b"stale")
    assert make_variant(plain, tmp_path / "out", properties=[V3], label="v3") == target
    assert zipfile.is_zipfile(target)


def test_strip_non_variant_wheel(plain: Path, tmp_path: Path) -> None:
    with pytest.raises(WheelError, match="not a variant wheel"):
        strip_variant(plain, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_strip_label_without_variant_json(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "pkg-1.0-py3-none-any-v3.whl", record=True)
    stripped = strip_variant(path, tmp_path / "out")
    assert stripped.name == PLAIN


# -- installers ----------------------------------------------------------------------------


def test_output_installs_with_installer(plain: Path, tmp_path: Path) -> None:
    made = make_variant(plain, tmp_path / "out", properties=[V3, CU128])
    root = tmp_path / "root"
    scheme = {key: str(root / key) for key in ("purelib", "platlib", "headers", "scripts", "data")}
    destination = SchemeDictionaryDestination(
        scheme, interpreter=sys.executable, script_kind="posix"
    )
    with WheelFile.open(made) as source:
        source.validate_record()
        install(source, destination, {})
    installed = root / "purelib" / DIST_INFO
    assert json.loads((installed / "variant.json").read_text())["variants"] == {
        made.name.rsplit("-", 1)[1].removesuffix(".whl"): {
            "nvidia": {"cuda_version_lower_bound": ["12.8"]},
            "x86_64": {"level": ["v3"]},
        }
    }
    assert (root / "purelib" / "pkg" / "mod.py").read_bytes() == b"x = 1\n"
    assert f"{DIST_INFO}/variant.json," in (installed / "RECORD").read_text()


# -- the command line ------------------------------------------------------------------------


def cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wheelwise", *(str(a) for a in args)],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("wheelwise: error: ")
    for text in expected:
        assert text in lines[0]


@pytest.mark.slow
def test_cli_make_and_strip(plain: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    other = make_wheel(plain.parent, "other-2.0-py3-none-any.whl", record=True)
    result = cli(
        "variant", "make", plain, other, "-p", "x86_64 :: level :: v3",
        "-p", "nvidia::sm_arch::80_real", "--label", "fast", "-o", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"wrote {out / 'pkg-1.0-py3-none-any-fast.whl'}",
        f"wrote {out / 'other-2.0-py3-none-any-fast.whl'}",
    ]
    shown = cli("variant", "show", out / "pkg-1.0-py3-none-any-fast.whl", "--json")
    assert json.loads(shown.stdout)["properties"] == [
        "nvidia :: sm_arch :: 80_real",
        "x86_64 :: level :: v3",
    ]
    result = cli("variant", "strip", out / "pkg-1.0-py3-none-any-fast.whl", "-o", tmp_path / "s")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"wrote {tmp_path / 's' / PLAIN}\n"


def test_cli_options(plain: Path, tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(PYPROJECT)
    result = cli("variant", "make", plain, "--null", "--pyproject", pyproject, "-o", tmp_path / "n")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "n" / "pkg-1.0-py3-none-any-null.whl").is_file()
    result = cli(
        "variant", "make", plain, "-p", "x86_64 :: level :: v3", "-p", "x86_64 :: level :: v4",
        "--no-validate", "--namespaces", "x86_64, nvidia", "-o", tmp_path / "nv",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    made = next((tmp_path / "nv").iterdir())
    assert read_wheel_variant(made).namespaces == ("x86_64", "nvidia")
    assert made.name == f"pkg-1.0-py3-none-any-{variantlib_label([V3, V4])}.whl"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-p", "nvidia :: sm_arch :: 999_real"], ["999_real", "unknown value"]),
        (["-p", "x86_64 :: level :: v3", "-p", "x86_64 :: level :: v4"], ["single value"]),
        (["-p", "x86_64 :: level"], ["invalid variant property"]),
        (["--null", "-p", "x86_64 :: level :: v3"], ["--null"]),
        (["--null", "--label", "x"], ["--null and --label"]),
        (["--null"], ["at least one namespace"]),
        ([], ["no variant properties given"]),
        (["-p", "x86_64 :: level :: v3", "--namespaces", "nvidia"], ["x86_64", "not listed"]),
        (["-p", "x86_64 :: level :: v3", "--pyproject", "missing.toml"], ["missing.toml"]),
    ],
)
def test_cli_make_errors(args: list[str], expected: list[str], plain: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert_one_line_error(cli("variant", "make", plain, *args, "-o", out, cwd=tmp_path), *expected)
    assert not out.exists() or list(out.iterdir()) == []


@pytest.mark.slow
def test_cli_wheel_errors(tmp_path: Path) -> None:
    corpus_foo = DIST / "test_package-0-py3-none-any-foo.whl"
    assert_one_line_error(
        cli("variant", "make", corpus_foo, "-p", "x86_64 :: level :: v3", "-o", tmp_path / "o"),
        "already a variant wheel",
        "strip it first",
    )
    assert_one_line_error(
        cli("variant", "strip", DIST / "test_package-0-py3-none-any.whl", "-o", tmp_path / "o"),
        "not a variant wheel",
    )
    assert_one_line_error(
        cli("variant", "strip", tmp_path / "pkg-1.0-py3-none-any-x.whl", "-o", tmp_path / "o"),
        "no such file",
    )
    broken = tmp_path / PLAIN
    broken.write_bytes(b"not a zip")
    assert_one_line_error(
        cli("variant", "make", broken, "-p", "x86_64 :: level :: v3", "-o", tmp_path / "o"),
        "not a valid wheel",
    )
    assert not (tmp_path / "o").exists()
    bad_pyproject = tmp_path / "pyproject.toml"
    bad_pyproject.write_bytes(b"[variant]\nname = '\xff'\n")
    assert_one_line_error(
        cli(
            "variant", "make", broken, "--null", "--pyproject", bad_pyproject, "-o", tmp_path / "o"
        ),
        "not valid UTF-8",
    )


def test_cli_usage_errors(plain: Path) -> None:
    result = cli("variant", "make", plain, "-p", "x86_64 :: level :: v3")
    assert result.returncode == 2
    assert "-o" in result.stderr
