"""Fuzzing the readers of what users give: JSON and TOML documents (variants.json of
every era, ``--system`` files), requirements files, ``name#label`` requirements and
variant markers. Each input gives a value or the reader's documented error class,
never another exception (RecursionError, a bare ValueError, KeyError, ...).

Document-level structure is fuzzed in test_metadata.py and test_uv_target.py; here
the inputs are raw text and bytes, deep nesting and huge numbers, which reach the
parsers before any structure is checked."""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement

from fuzzkit import bounded
from wheelwise.providers.plugin_runner import PluginAnswer, PluginFailure, parse_answer
from wheelwise.providers.uv_target import parse_uv_target
from wheelwise.resolve.reqfile import RequirementsFileError, RequirementsSet, read_requirements
from wheelwise.resolve.variant_requirement import (
    LabelledRequirement,
    VariantRequirementError,
    split_variant_label,
)
from wheelwise.untrusted_json import UntrustedDocumentError, loads_json, loads_toml
from wheelwise.variants.errors import InvalidMetadata, InvalidSystem
from wheelwise.variants.markers import parse_marker, parse_requirement
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.supported import SupportedProperties

_T = TypeVar("_T")
_E = TypeVar("_E", bound=Exception)

FUZZ = bounded(150)

SCHEMAS = [
    "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
    "https://variants-schema.wheelnext.dev/peps/817/v0.1.0.json",
    "https://variants-schema.wheelnext.dev/v0.0.2.json",
    "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json",
]
KEYS = st.sampled_from(
    [
        "$schema",
        "default-priorities",
        "namespace",
        "feature",
        "property",
        "variants",
        "providers",
        "static-properties",
        "requires",
        "plugin-api",
        "x86_64",
        "level",
        "null",
        "a\nb\x1b[31m",
    ]
) | st.text(max_size=6)
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.sampled_from(SCHEMAS)
    | st.text(max_size=8)
)
JSONISH = st.recursive(
    LEAVES,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)


def _hostile(depth: int, digits: int) -> list[bytes]:
    """Nesting deeper than the interpreter's recursion limit, an integer longer than
    int() converts; as whole documents and inside a plausible one."""
    deep = b"[" * depth + b"]" * depth
    huge = b"9" * digits
    return [
        deep,
        b'{"a":' * depth + b"1" + b"}" * depth,
        huge,
        b'{"variants": {"x": ' + deep + b"}}",
        b'{"default-priorities": {"namespace": [' + huge + b"]}}",
    ]


HOSTILE = _hostile(50_000, 5_000)
RAW = st.binary(max_size=200) | st.text(max_size=200).map(str.encode) | st.sampled_from(HOSTILE)


def attempt(call: Callable[[], _T], error: type[_E]) -> _T | _E:
    """What *call* returns, or the *error* it raises (any other exception fails)."""
    try:
        return call()
    except error as exc:
        return exc


def _document(value: Any) -> bytes:
    return json.dumps(value).encode()


DOCUMENTS = JSONISH.map(_document) | RAW


# -- the shared readers ---------------------------------------------------------------


@FUZZ
@given(RAW)
def test_loads_json_gives_a_value_or_its_error(data: bytes) -> None:
    outcome = attempt(lambda: loads_json(data), UntrustedDocumentError)
    if isinstance(outcome, UntrustedDocumentError):
        assert "\n" not in str(outcome)


@FUZZ
@given(st.text(max_size=200) | st.sampled_from([d.decode() for d in HOSTILE]))
@example("a = " + "[" * 50_000 + "]" * 50_000)
@example("a = {b = " * 5_000 + "1" + "}" * 5_000)
def test_loads_toml_gives_a_table_or_its_error(text: str) -> None:
    outcome = attempt(lambda: loads_toml(text), UntrustedDocumentError)
    if isinstance(outcome, UntrustedDocumentError):
        assert "\n" not in str(outcome)
    else:
        assert isinstance(outcome, dict)


# -- variants.json, any era -----------------------------------------------------------


@FUZZ
@given(DOCUMENTS)
def test_variant_metadata_loads_or_raises_invalid_metadata(data: bytes) -> None:
    outcome = attempt(lambda: VariantMetadata.from_json(data, source="f.json"), InvalidMetadata)
    if isinstance(outcome, InvalidMetadata):
        assert str(outcome).startswith("f.json")
    else:
        assert isinstance(outcome, VariantMetadata)


@pytest.mark.slow
@FUZZ
@given(
    schema=st.sampled_from(SCHEMAS),
    body=st.dictionaries(KEYS, JSONISH, max_size=4),
)
def test_variant_metadata_with_a_schema_loads_or_raises(schema: str, body: dict[str, Any]) -> None:
    document = {"$schema": schema, **body}
    outcome = attempt(
        lambda: VariantMetadata.from_json(json.dumps(document), source="f.json"), InvalidMetadata
    )
    assert isinstance(outcome, (VariantMetadata, InvalidMetadata))


# -- --system documents: JSON and uv's TOML ------------------------------------------


@FUZZ
@given(DOCUMENTS)
def test_system_json_loads_or_raises_invalid_system(data: bytes) -> None:
    outcome = attempt(lambda: SupportedProperties.from_json(data, source="s.json"), InvalidSystem)
    if isinstance(outcome, InvalidSystem):
        assert str(outcome).startswith("s.json")
    else:
        assert isinstance(outcome, SupportedProperties)


@FUZZ
@given(RAW)
@example(b"[variant]\nx = " + b"[" * 50_000 + b"]" * 50_000)
def test_uv_target_loads_or_raises_invalid_system(data: bytes) -> None:
    outcome = attempt(lambda: parse_uv_target(data, source="s.toml"), InvalidSystem)
    if isinstance(outcome, InvalidSystem):
        assert str(outcome).startswith("s.toml")
    else:
        assert isinstance(outcome, SupportedProperties)


# -- requirements files ---------------------------------------------------------------

REQ_LINES = st.lists(
    st.sampled_from(
        [
            "alpha",
            "alpha>=1",
            "alpha#cu128",
            "alpha[x]>=1#lbl ; python_version >= '3'",
            "-r other.txt",
            "-c other.txt",
            "--index-url http://127.0.0.1:1/",
            "--extra-index-url=http://127.0.0.1:1/",
            "-f ./links",
            "--bogus",
            "-r",
            "# comment",
            "alpha \\",
            "",
            "#",
            "x#",
            "alpha==1.0 --hash=sha256:" + "a" * 64,
            "alpha==1.0 --hash sha512:" + "b" * 128 + " --hash=sha256:" + "c" * 64,
            "  --hash=sha256:" + "d" * 64,
            "alpha --hash=md5:" + "e" * 32,
            "alpha --hash=sha256:xyz --pre",
            "alpha --hash=",
        ]
    )
    | st.text(max_size=30),
    max_size=8,
)


@pytest.mark.slow
@FUZZ
@given(lines=REQ_LINES, other=REQ_LINES, raw=st.binary(max_size=100))
def test_requirements_files_read_or_raise(lines: list[str], other: list[str], raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "reqs.txt"
        path.write_text("\n".join(lines), encoding="utf-8")
        (Path(folder) / "other.txt").write_text("\n".join(other), encoding="utf-8")
        (Path(folder) / "raw.txt").write_bytes(raw)
        for name in ("reqs.txt", "raw.txt"):
            path = Path(folder) / name
            outcome = attempt(functools.partial(read_requirements, path), RequirementsFileError)
            assert isinstance(outcome, (RequirementsSet, RequirementsFileError))


# -- name#label requirements and variant markers --------------------------------------

REQUIREMENT_TEXT = st.text(
    alphabet=st.sampled_from("aZ9_.-[]()<>=!~,;:#@ '\"\\\n\t\x1b\u2028é"), max_size=50
) | st.text(max_size=30)


@FUZZ
@given(REQUIREMENT_TEXT)
def test_labelled_requirements_split_or_raise(text: str) -> None:
    outcome = attempt(lambda: split_variant_label(text), VariantRequirementError)
    assert isinstance(outcome, (LabelledRequirement, VariantRequirementError))


MARKER_TEXT = st.lists(
    st.sampled_from(
        [
            "variant_namespaces",
            "variant_features",
            "variant_properties",
            "variant_label",
            "python_version",
            "extra",
            "'x86_64'",
            "'x86_64 :: level :: v3'",
            '"v1"',
            " in ",
            " not in ",
            " == ",
            " >= ",
            " and ",
            " or ",
            "(",
            ")",
            ";",
            "alpha",
            ">=1",
            "[x]",
            "@ http://127.0.0.1/",
        ]
    )
    | st.text(max_size=5),
    max_size=10,
).map("".join)


@FUZZ
@given(MARKER_TEXT)
@example("(" * 5_000 + "python_version >= '3'" + ")" * 5_000)
def test_variant_markers_parse_or_raise(text: str) -> None:
    marker = attempt(lambda: parse_marker(text), InvalidMarker)
    assert isinstance(marker, (Marker, InvalidMarker))
    requirement = attempt(lambda: parse_requirement(f"alpha ; {text}"), InvalidRequirement)
    assert isinstance(requirement, (Requirement, InvalidRequirement))
    for outcome in (marker, requirement):
        if isinstance(outcome, Exception):
            assert "\n" not in str(outcome)


# -- a provider plugin's answer ---------------------------------------------------------

ANSWER_KEYS = st.sampled_from(["all", "supported", "namespace", "name", "values", "x"])
ANSWERS = st.recursive(
    LEAVES,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(ANSWER_KEYS, children, max_size=4)
    ),
    max_leaves=20,
).map(_document)


@FUZZ
@given(ANSWERS | RAW)
def test_plugin_answers_parse_or_raise_plugin_failure(raw: bytes) -> None:
    outcome = attempt(lambda: parse_answer(raw, "ns"), PluginFailure)
    assert isinstance(outcome, (PluginAnswer, PluginFailure))


# -- the target interpreter's answer to the query ---------------------------------------


def _real_answer() -> dict[str, Any]:
    import subprocess
    import sys

    from wheelwise.environment.interpreter import QUERY_SCRIPT

    proc = subprocess.run([sys.executable, "-c", QUERY_SCRIPT], capture_output=True, check=True)
    answer: dict[str, Any] = json.loads(proc.stdout)
    return answer


_ANSWER = _real_answer()


@FUZZ
@given(key=st.sampled_from(sorted(_ANSWER)), value=JSONISH, raw=JSONISH)
def test_query_answers_of_any_shape_make_an_environment_or_one_error(
    key: str, value: object, raw: object
) -> None:
    """The answer with one field replaced by anything, or anything at all: an
    environment, or one EnvironmentQueryError (never another exception)."""
    from wheelwise.environment.interpreter import environment_of
    from wheelwise.models.errors import EnvironmentQueryError

    changed = {**_ANSWER, key: value}
    for answer in (changed, raw):
        call = functools.partial(environment_of, json.dumps(answer).encode(), Path("py"))
        outcome = attempt(call, EnvironmentQueryError)
        assert not isinstance(outcome, Exception) or "\n" not in str(outcome)


# -- what an error line shows --------------------------------------------------------------


@FUZZ
@given(
    user=st.text(alphabet="abcXYZ019-_.%~!$&'()*+,;=:", min_size=1, max_size=12),
    scheme=st.sampled_from(["https", "http", "git+https", "HTTPS"]),
    around=st.text(max_size=20),
)
def test_an_error_line_never_shows_a_urls_credentials(user: str, scheme: str, around: str) -> None:
    from wheelwise.cli.errors import one_line

    shown = one_line(f"{around}{scheme}://{user}:T0k3n-s3cret@host.example/simple/ {around}")
    assert "T0k3n-s3cret" not in shown
    assert f"{scheme}://****@host.example/simple/" in shown
    assert "\n" not in shown
