"""``name#label`` requirements: ``wheelwise install 'vpkg#v3'`` and the same line in
a ``-r`` file mean ``--variant vpkg=v3``; the parser, its fuzz test, the
requirements file, and the command against a local index into fresh venvs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from installkit import make_venv
from variantkit import (
    install_with_system,
    installed_variant,
    level,
    variants_document,
    vpkg_wheel,
    write_site,
)
from wheelwise.resolve.reqfile import RequirementsFileError, read_requirements
from wheelwise.resolve.variant_requirement import (
    LabelledRequirement,
    VariantRequirementError,
    apply_variant_labels,
    split_variant_label,
)

# -- the parser ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("torch#cu128", LabelledRequirement("torch", "torch", "cu128")),
        (
            "torch[extra]>=2.9#cu128",
            LabelledRequirement("torch[extra]>=2.9", "torch", "cu128"),
        ),
        (
            'torch >= 2.9 #cu12.8 ; python_version >= "3.10"',
            LabelledRequirement('torch >= 2.9 ; python_version >= "3.10"', "torch", "cu12.8"),
        ),
        ("Foo_Bar.baz#x86_64_v3", LabelledRequirement("Foo_Bar.baz", "foo-bar-baz", "x86_64_v3")),
        ("torch#null", LabelledRequirement("torch", "torch", "null")),
        # No label: left exactly as it is.
        ("torch>=2", LabelledRequirement("torch>=2")),
        (
            'foo ; platform_version == "#1 SMP"',
            LabelledRequirement('foo ; platform_version == "#1 SMP"'),
        ),
        (
            "pkg @ https://example.org/pkg-1.0-py3-none-any.whl#sha256=00",
            LabelledRequirement("pkg @ https://example.org/pkg-1.0-py3-none-any.whl#sha256=00"),
        ),
    ],
)
def test_split_variant_label(text: str, expected: LabelledRequirement) -> None:
    assert split_variant_label(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("torch#", "nothing after '#'"),
        ("torch# ; python_version > '3'", "nothing after '#'"),
        ("torch#CU128", "invalid variant label 'CU128'"),
        ("torch#cu 128", "invalid variant label 'cu 128'"),
        ("torch#cu-128", "invalid variant label 'cu-128'"),
        ("torch#cu128#x", "invalid variant label 'cu128#x'"),
    ],
)
def test_split_variant_label_errors(text: str, message: str) -> None:
    with pytest.raises(VariantRequirementError, match=message) as raised:
        split_variant_label(text)
    assert repr(text) in str(raised.value)


def test_apply_variant_labels_merges_with_variant_options() -> None:
    stripped, choice = apply_variant_labels(
        ["torch[cuda]>=2.9#cu128", "numpy", "Jax#cpu", "jax>=0.4#cpu"], {"Other_Pkg": "v3"}
    )
    assert stripped == ["torch[cuda]>=2.9", "numpy", "Jax", "jax>=0.4"]
    assert choice == {"other-pkg": "v3", "torch": "cu128", "jax": "cpu"}
    # The same label from both places is no conflict.
    assert apply_variant_labels(["Torch#cu128"], {"torch": "cu128"})[1] == {"torch": "cu128"}


@pytest.mark.parametrize(
    ("requirements", "chosen", "message"),
    [
        (
            ["torch#cu126"],
            {"Torch": "cu128"},
            "'torch#cu126' asks for variant 'cu126' of torch, but --variant torch=cu128 asks "
            "for 'cu128': choose one",
        ),
        (
            ["torch#cu126", "torch>=2#cu128"],
            {},
            "'torch>=2#cu128' asks for variant 'cu128' of torch, but 'torch#cu126' asks for "
            "'cu126': choose one",
        ),
    ],
)
def test_apply_variant_labels_conflicts(
    requirements: list[str], chosen: dict[str, str], message: str
) -> None:
    with pytest.raises(VariantRequirementError) as raised:
        apply_variant_labels(requirements, chosen)
    assert str(raised.value) == message


NAMES = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,10}[A-Za-z0-9])?", fullmatch=True)
LABELS = st.from_regex(r"[0-9a-z_.]{1,16}", fullmatch=True)
EXTRAS = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True), max_size=2)
SPECIFIERS = st.sampled_from(["", ">=2.9", "==1.0.*", " >= 1, < 3", "~=2.1"])
MARKERS = st.sampled_from(
    ["", 'python_version >= "3.10"', 'platform_version == "#1 SMP"', "extra == 'x'"]
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(NAMES, EXTRAS, SPECIFIERS, LABELS, MARKERS, st.booleans())
def test_fuzz_labelled_requirements_round_trip(
    name: str, extras: list[str], specifier: str, label: str, marker: str, space: bool
) -> None:
    head = name + (f"[{','.join(extras)}]" if extras else "") + specifier
    text = head + (" " if space else "") + f"#{label}" + (f" ; {marker}" if marker else "")
    found = split_variant_label(text)
    assert found.label == label
    assert found.name is not None
    assert found.name == found.name.lower()
    assert found.requirement == head.strip() + (f" ; {marker}" if marker else "")
    # Without its label, the requirement is left as it is.
    assert split_variant_label(found.requirement) == LabelledRequirement(found.requirement)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab1_.-[]<>=;# @'\"\\\n\t"), max_size=40))
def test_fuzz_any_text_gives_a_requirement_or_one_clear_error(text: str) -> None:
    error: VariantRequirementError | None = None
    try:
        found = split_variant_label(text)
    except VariantRequirementError as exc:
        error = exc
    if error is not None:
        assert repr(text) in str(error)
        return
    if found.label is None:
        assert found == LabelledRequirement(text)
    else:
        assert "#" not in found.requirement.partition(";")[0]


# -- requirements files ----------------------------------------------------------------


def test_requirements_file_keeps_labels_and_comments_stay_comments(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("torch[extra]>=2.9#cu128\njax #cpu\ngit+https://h/repo.git#egg=pkg\n")
    # A URL's fragment is no label: #egg= names a git checkout's project.
    assert read_requirements(path).requirements == [
        "torch[extra]>=2.9#cu128",
        "jax",
        "git+https://h/repo.git#egg=pkg",
    ]


@pytest.mark.parametrize(
    ("text", "constraint", "message"),
    [
        ("ok\ntorch#CU128\n", False, ":2: 'torch#CU128': invalid variant label 'CU128'"),
        (
            "torch#cu128\n",
            True,
            ":1: 'torch#cu128': a variant label (#cu128) cannot be a constraint",
        ),
    ],
)
def test_requirements_file_label_errors(
    tmp_path: Path, text: str, constraint: bool, message: str
) -> None:
    path = tmp_path / "reqs.txt"
    path.write_text(text)
    with pytest.raises(RequirementsFileError) as raised:
        read_requirements(path, constraint=constraint)
    assert str(raised.value).startswith(f"{path}{message}")


# -- the command -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A local index: vpkg 1.0 with a non-variant wheel and the v3 and v4 builds."""
    root = tmp_path_factory.mktemp("syntax")
    wheels = [vpkg_wheel(root / "w"), *(vpkg_wheel(root / "w", label=v) for v in ("v3", "v4"))]
    site = write_site(
        root / "site", wheels, {"1.0": variants_document({"v3": level("v3"), "v4": level("v4")})}
    )
    return str(site / "simple")


def install(
    tmp_path: Path, python: Path, index: str, *args: str, levels: tuple[str, ...] = ("v4", "v3")
) -> tuple[int, str, str]:
    return install_with_system(tmp_path, python, index, *args, levels=levels)


def test_label_on_the_command_line(index: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    code, out, err = install(tmp_path, python, index, "vpkg>=1.0#v3")
    assert code == 0, err
    # The machine prefers v4; the label chose v3.
    assert installed_variant(python) == "'v3'"
    assert "installed vpkg 1.0 (variant v3" in out


@pytest.mark.slow
def test_label_with_extras_in_a_requirements_file(index: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("vpkg[extra]>=1.0#v3  # the v3 build\n")
    code, out, err = install(tmp_path, python, index, "-r", str(requirements), "--report", "-")
    assert code == 0, err
    assert installed_variant(python) == "'v3'"
    report = json.loads(out[: out.rindex("}") + 1])
    assert [item["variant"]["label"] for item in report["install"]] == ["v3"]
    assert report["install"][0]["requested"] is True


@pytest.mark.slow
def test_unknown_label_lists_the_labels_like_variant_does(index: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    code, _, by_label = install(tmp_path, python, index, "vpkg#nope")
    assert code == 2
    expected = "variant 'nope' was asked for, but vpkg 1.0 has no such variant (variants: v3, v4)"
    assert expected in by_label
    code, _, by_option = install(tmp_path, python, index, "vpkg", "--variant", "vpkg=nope")
    assert code == 2
    assert by_option == by_label
    assert installed_variant(python) == "missing"


def test_unsupported_label_shows_the_machine(index: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    code, _, err = install(tmp_path, python, index, "vpkg#v4", levels=("v3", "v2"))
    assert code == 2
    assert "variant 'v4' of vpkg 1.0 is not supported by this machine" in err
    assert "machine supports x86_64 :: level :: v3, v2" in err


def test_conflicting_label_and_variant_option(index: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    code, out, err = install(tmp_path, python, index, "vpkg#v3", "--variant", "vpkg=v4")
    assert code == 2
    assert err.strip() == (
        "wheelwise: error: 'vpkg#v3' asks for variant 'v3' of vpkg, but --variant vpkg=v4 "
        "asks for 'v4': choose one"
    )
    assert out == ""
    assert installed_variant(python) == "missing"


def test_bad_label_in_a_requirements_file_names_the_line(index: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("vpkg#V3\n")
    code, _, err = install(tmp_path, python, index, "-r", str(requirements))
    assert code == 2
    assert err.startswith(f"wheelwise: error: {requirements}:1: 'vpkg#V3': invalid variant label")
