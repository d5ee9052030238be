"""A chosen variant wheel rewritten as a plain wheel (wheels.plain): METADATA with its
variant markers settled, the wheel under its non-variant name, installed by real pip
and uv."""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import re
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.requirements import Requirement

from fuzzkit import bounded
from indexkit import installer_env, uv_executable
from installkit import WHEEL, make_venv, pip, simple_wheel, site_packages
from wheelfactory import make_wheel, variant_doc
from wheelwise.variants.markers import variant_environment
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.plain import PlainWheel, make_plain_wheel, plain_metadata
from wheelwise.wheels.rewrite import rewrite_wheel

LABEL = "x86_64_v3"
V3 = variant_environment(LABEL, [VariantProperty("x86_64", "level", "v3")])
FILENAME = f"vpkg-1.0-py3-none-any-{LABEL}.whl"
PLAIN_NAME = "vpkg-1.0-py3-none-any.whl"
DIST_INFO = "vpkg-1.0.dist-info"
HEAD = b"Metadata-Version: 2.1\nName: vpkg\nVersion: 1.0\n"
BODY = b"\nA description that mentions Requires-Dist: x; variant_label == 'y'.\n"
FUZZ = bounded(200)

# Requires-Dist values and what the plain wheel says instead (None: dropped).
SETTLED = [
    ('gpu-only; variant_label == "cu128"', None),
    ('fast-math>=1.0; "x86_64 :: level :: v3" in variant_properties', "fast-math>=1.0"),
    (
        'compat[One,two]; python_version >= "3.9" and variant_label == "x86_64_v3"',
        'compat[One,two]; python_version >= "3.9"',
    ),
    (
        "tool @ https://example.invalid/tool-1-py3-none-any.whl ; "
        '"x86_64" in variant_namespaces and os_name == "posix"',
        'tool @ https://example.invalid/tool-1-py3-none-any.whl ; os_name == "posix"',
    ),
    (
        'old; "x86_64::level" not in variant_features or python_version < "3.8"',
        'old; python_version < "3.8"',
    ),
    ('new; "x86_64::level" not in variant_features and python_version >= "3.8"', None),
    ('either; variant_label == "null" or extra == "Fast"', 'either; extra == "fast"'),
]


@pytest.mark.parametrize(("value", "expected"), SETTLED)
def test_requires_dist_settled(value: str, expected: str | None) -> None:
    before = HEAD + b"Requires-Dist: numpy\nRequires-Dist: " + value.encode() + b"\n"
    after = HEAD + b"Requires-Dist: numpy\n"
    if expected is not None:
        after += b"Requires-Dist: " + expected.encode() + b"\n"
    tail = b"Requires-Python: >=3.9\n" + BODY
    assert plain_metadata(before + tail, V3) == after + tail


def test_metadata_without_variant_markers_comes_back_as_it_is() -> None:
    metadata = (
        HEAD
        + b"Requires-Dist: numpy >= 2 ;python_version<'3.13'\n"
        + b"requires-dist: os_name_lookalike; os_name == 'variant_label'\n"
        + b"Summary: variant_label == 'x'\n"
        + BODY
    )
    assert plain_metadata(metadata, V3) is metadata


def test_field_names_are_matched_as_the_email_parser_matches_them() -> None:
    metadata = HEAD + b'requires-DIST: a; variant_label == "x86_64_v3"\n'
    assert plain_metadata(metadata, V3) == HEAD + b"requires-DIST: a\n"
    # Not the Requires-Dist field (a space before the colon): left alone.
    other = HEAD + b'Requires-Dist : a; variant_label == "null"\n'
    assert plain_metadata(other, V3) is other


def test_folded_fields() -> None:
    folded = (
        b"Requires-Dist: fast-math>=1.0;\n"
        b' "x86_64 :: level :: v3" in variant_properties\n'
        b'\tand os_name == "posix"\n'
    )
    dropped = b'Requires-Dist: gpu-only;\n  variant_label == "cu128"\n'
    kept = b"Requires-Dist: numpy;\n python_version >= '3'\n"
    summary = b'Summary: a summary\n on two lines; variant_label == "null"\n'
    metadata = HEAD + folded + dropped + kept + summary + BODY
    assert plain_metadata(metadata, V3) == (
        HEAD + b'Requires-Dist: fast-math>=1.0; os_name == "posix"\n' + kept + summary + BODY
    )


def test_line_endings_are_kept() -> None:
    metadata = (
        b"Metadata-Version: 2.1\r\nName: vpkg\r\nVersion: 1.0\r\n"
        b'Requires-Dist: a; variant_label == "x86_64_v3" and os_name == "nt"\r\n'
        b'Requires-Dist: b; variant_label == "null"\r\n'
        b"Requires-Dist: c\r\n"
        b"\r\nBody line one\r\nline two\n"
    )
    assert plain_metadata(metadata, V3) == (
        b"Metadata-Version: 2.1\r\nName: vpkg\r\nVersion: 1.0\r\n"
        b'Requires-Dist: a; os_name == "nt"\r\n'
        b"Requires-Dist: c\r\n"
        b"\r\nBody line one\r\nline two\n"
    )
    # The last line without a line ending stays without one.
    last = HEAD + b'Requires-Dist: a; variant_label == "x86_64_v3"'
    assert plain_metadata(last, V3) == HEAD + b"Requires-Dist: a"


def test_non_ascii_and_the_body_are_untouched() -> None:
    author = "Author: Zoë Ångström 日本\n".encode()
    body = (
        "\nDescription ünïcode — Requires-Dist: b; variant_label == 'x86_64_v3'\n".encode()
        + b"not even UTF-8: \xff\xfe\n"
    )
    metadata = HEAD + author + b'Requires-Dist: a; variant_label == "null"\n' + body
    assert plain_metadata(metadata, V3) == HEAD + author + body


def test_headers_end_where_the_email_parser_ends_them() -> None:
    """A line that is no header ends the headers (the email parser reads the rest as
    the body): a Requires-Dist after it is no field, and stays."""
    metadata = HEAD + b"not a header\n" + b'Requires-Dist: a; variant_label == "null"\n'
    assert plain_metadata(metadata, V3) is metadata
    message = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(metadata)
    assert message.get_all("Requires-Dist") is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"Requires-Dist: pkg >= \n", "METADATA line 4: cannot read Requires-Dist 'pkg >='"),
        (b"Requires-Dist: a; variant_label = 'x'\n", "METADATA line 4: cannot read"),
        (b"Requires-Dist: caf\xe9\n", "METADATA line 4: Requires-Dist b'Requires-Dist: caf\\xe9"),
        (
            b"Requires-Dist: a; variant_properties == 'x :: y :: z'\n",
            "METADATA line 4: cannot read Requires-Dist",
        ),
        # Values plain packaging cannot write back.
        (
            b"Requires-Dist: a; os_name == '\\x27\\x22' and variant_label == 'x86_64_v3'\n",
            "cannot be written without variant markers",
        ),
        (
            b"Requires-Dist: a; os_name == '\\n' and variant_label == 'x86_64_v3'\n",
            "cannot be written without variant markers",
        ),
    ],
)
def test_unreadable_requires_dist(line: bytes, expected: str) -> None:
    with pytest.raises(WheelError) as caught:
        plain_metadata(HEAD + line + BODY, V3)
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message
    assert message.endswith("rebuild the wheel")


# -- fuzzing ----------------------------------------------------------------------


def _requires_dist(metadata: bytes) -> list[str]:
    message = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(
        metadata, headersonly=True
    )
    values = message.get_all("Requires-Dist") or []
    return [re.sub(r"\r\n|\r|\n", "", str(value)).strip() for value in values]


def _check_plain_metadata(metadata: bytes) -> None:
    """plain_metadata gives bytes or a one-line WheelError; every Requires-Dist an
    installer then reads parses with plain packaging."""
    message = ""
    try:
        result = plain_metadata(metadata, V3)
    except WheelError as exc:
        message = str(exc)
    else:
        for value in _requires_dist(result):
            Requirement(value)
    assert "\n" not in message


@FUZZ
@given(st.binary(max_size=400))
def test_fuzz_plain_metadata_bytes(metadata: bytes) -> None:
    _check_plain_metadata(metadata)


_LINES = st.sampled_from(
    [
        b"Name: vpkg\n",
        b"\n",
        b"\r\n",
        b" continued\n",
        b"\tcontinued; variant_label == 'null'\n",
        b'Requires-Dist: a; variant_label == "x86_64_v3"\n',
        b'Requires-Dist: b; "x86_64 :: level :: v3" in variant_properties\r\n',
        b"Requires-Dist: c; os_name == 'nt' or variant_label == 'null'\n",
        b"Requires-Dist: d; python_version >= '3'\r",
        b'Requires-Dist: e[x] @ https://example.invalid/e.whl ; "x86_64" in variant_namespaces\n',
        b"requires-dist: f;\n",
        b"Requires-Dist:\n",
        b"garbage line\n",
        "Summary: ünï\n".encode(),
    ]
)


@pytest.mark.slow
@FUZZ
@given(st.lists(st.one_of(_LINES, st.binary(max_size=24)), max_size=12))
def test_fuzz_plain_metadata_lines(lines: list[bytes]) -> None:
    _check_plain_metadata(b"".join(lines))


# -- wheels -----------------------------------------------------------------------

REQUIRES = [
    'fast_math>=1.0; "x86_64 :: level :: v3" in variant_properties',
    'gpu_only; variant_label == "cu128"',
    'compat; python_version >= "3.9" and variant_label == "x86_64_v3"',
    'winonly; os_name == "nt"',
]
PLAIN_REQUIRES = ["fast_math>=1.0", 'compat; python_version >= "3.9"', 'winonly; os_name == "nt"']
DOC = variant_doc(LABEL, {"x86_64": {"level": ["v3"]}})


def variant_wheel(directory: Path, filename: str = FILENAME, metadata: bytes | None = None) -> Path:
    """vpkg, a variant wheel with variant-gated dependencies and a full RECORD (with
    *metadata* as its METADATA if given)."""
    directory.mkdir(parents=True, exist_ok=True)
    extra = {"vpkg/__init__.py": b"VARIANT = 'x86_64_v3'\n", f"{DIST_INFO}/WHEEL": WHEEL}
    if metadata is not None:
        extra[f"{DIST_INFO}/METADATA"] = metadata
    return make_wheel(
        directory, filename, DOC, extra_members=extra, record=True, requires_dist=REQUIRES
    )


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_plain_wheel_round_trip(tmp_path: Path) -> None:
    source = variant_wheel(tmp_path / "src")
    made = make_plain_wheel(source, tmp_path / "out", V3)
    assert made.path == tmp_path / "out" / PLAIN_NAME
    data = made.path.read_bytes()
    assert (made.sha256, made.size) == (sha256(data), len(data))
    assert made.metadata_sha256 == sha256(made.metadata)
    with WheelArchive(source) as before, WheelArchive(made.path) as after:
        after.verify_record()
        assert after.names == before.names
        assert after.metadata() == made.metadata
        assert _requires_dist(made.metadata) == PLAIN_REQUIRES
        for name in before.names:
            old, new = before.info(name), after.info(name)
            assert (new.date_time, new.compress_type, new.external_attr) == (
                old.date_time,
                old.compress_type,
                old.external_attr,
            )
            if not name.endswith(("/METADATA", "/RECORD")):
                assert after.read(name) == before.read(name), name
        assert after.read(f"{DIST_INFO}/variant.json") == before.read(f"{DIST_INFO}/variant.json")


def test_plain_wheel_is_reproducible(tmp_path: Path) -> None:
    source = variant_wheel(tmp_path / "src")
    first = make_plain_wheel(source, tmp_path / "one", V3)
    second = make_plain_wheel(source, tmp_path / "two", V3)
    again = make_plain_wheel(source, tmp_path / "one", V3)  # over the earlier output
    assert first.path.read_bytes() == second.path.read_bytes()
    assert first.sha256 == second.sha256 == again.sha256
    assert [p.name for p in (tmp_path / "one").iterdir()] == [PLAIN_NAME]


def test_signatures_over_record_are_dropped(tmp_path: Path) -> None:
    source = variant_wheel(tmp_path / "src")
    with zipfile.ZipFile(source, "a") as archive:
        archive.writestr(f"{DIST_INFO}/RECORD.jws", b"signature")
    made = make_plain_wheel(source, tmp_path / "out", V3)
    with WheelArchive(made.path) as archive:
        assert f"{DIST_INFO}/RECORD.jws" not in archive
        archive.verify_record()


def test_replacing_a_member_the_wheel_lacks_is_refused(tmp_path: Path) -> None:
    source = variant_wheel(tmp_path / "src")
    with WheelArchive(source) as archive, pytest.raises(WheelError, match="no member vpkg/x"):
        rewrite_wheel(archive, tmp_path / "out.whl", replace={"vpkg/x": b""})
    assert not (tmp_path / "out.whl").exists()


def _broken_record(directory: Path) -> Path:
    path = variant_wheel(directory)
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w") as archive:
        for info, data in members:
            archive.writestr(
                info, b"VARIANT = 'tampered'\n" if "__init__" in info.filename else data
            )
    return path


def _wrong_name(directory: Path) -> Path:
    metadata = b"Metadata-Version: 2.1\nName: other\nVersion: 1.0\n"
    return variant_wheel(directory, metadata=metadata)


def _wrong_version(directory: Path) -> Path:
    metadata = b"Metadata-Version: 2.1\nName: VPKG\nVersion: 1.0.post1\n"
    return variant_wheel(directory, metadata=metadata)


def _unreadable_requirement(directory: Path) -> Path:
    metadata = HEAD + b"Requires-Dist: a; variant_label ==\n"
    return variant_wheel(directory, metadata=metadata)


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (
            lambda d: variant_wheel(d, PLAIN_NAME),
            f"{PLAIN_NAME} is not a variant wheel (no variant label in its name)",
        ),
        (_broken_record, "does not match its RECORD hash/size"),
        (_wrong_name, f"{FILENAME}: METADATA names other 1.0, the file name vpkg 1.0"),
        (_wrong_version, "METADATA names VPKG 1.0.post1, the file name vpkg 1.0"),
        (_unreadable_requirement, f"{FILENAME}: METADATA line 4: cannot read Requires-Dist"),
    ],
)
def test_refused_wheels(build: object, expected: str, tmp_path: Path) -> None:
    assert callable(build)
    source = build(tmp_path / "src")
    with pytest.raises(WheelError) as caught:
        make_plain_wheel(source, tmp_path / "out", V3)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_metadata_without_version_is_refused(tmp_path: Path) -> None:
    source = variant_wheel(tmp_path / "src", metadata=b"Name: vpkg\n")
    with pytest.raises(WheelError, match=r"METADATA names vpkg \(no Version\)"):
        make_plain_wheel(source, tmp_path / "out", V3)


def test_output_beside_the_input_is_refused(tmp_path: Path) -> None:
    """There it would take the name of the release's own non-variant wheel."""
    source = variant_wheel(tmp_path / "src")
    own = simple_wheel(tmp_path / "src", "vpkg", "1.0")
    before = own.read_bytes()
    for out_dir in (tmp_path / "src", tmp_path / "src" / ".." / "src"):
        with pytest.raises(WheelError, match="is the folder of the input wheel"):
            make_plain_wheel(source, out_dir, V3)
    assert own.read_bytes() == before


def test_markers_of_another_label_are_refused(tmp_path: Path) -> None:
    source = variant_wheel(tmp_path / "src")
    with pytest.raises(ValueError, match="label 'null', not 'x86_64_v3'"):
        make_plain_wheel(source, tmp_path / "out", variant_environment("null"))
    assert not (tmp_path / "out").exists()


# -- real installers ------------------------------------------------------------------


@dataclass(frozen=True)
class Installed:
    plain: PlainWheel
    pip_python: Path
    uv_python: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The plain wheel and the dependencies it keeps, installed by pip into one venv and
    by uv into another (no index, no dependency resolution)."""
    root = tmp_path_factory.mktemp("plain-install")
    plain = make_plain_wheel(variant_wheel(root / "src"), root / "out", V3)
    wheels = [
        str(plain.path),
        str(simple_wheel(root / "deps", "fast_math", "1.0")),
        str(simple_wheel(root / "deps", "compat", "1.0")),
    ]
    pip_python = make_venv(root / "pip-venv")
    result = pip(pip_python, "install", "--no-index", "--no-deps", *wheels)
    assert result.returncode == 0, result.stderr
    uv_python = make_venv(root / "uv-venv")
    argv = [uv_executable(), "pip", "install", "--no-config", "--offline", "--no-deps"]
    result = subprocess.run(
        [*argv, "--python", str(uv_python), *wheels],
        env=installer_env(root / "home"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return Installed(plain, pip_python, uv_python)


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_installers_take_the_plain_wheel(installed: Installed, installer: str) -> None:
    python = installed.pip_python if installer == "pip" else installed.uv_python
    dist_info = site_packages(python) / DIST_INFO
    metadata = (dist_info / "METADATA").read_bytes()
    assert metadata == installed.plain.metadata
    assert _requires_dist(metadata) == PLAIN_REQUIRES
    assert (dist_info / "variant.json").is_file()
    check = pip(python, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "No broken requirements found" in check.stdout
