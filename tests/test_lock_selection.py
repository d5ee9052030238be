"""Choosing what a lock installs, offline (``resolve.lock_selection``): entries by
marker, wheels by tags and variant ranking, and variant-gated packages settled from
the selected wheels' own ``Requires-Dist``; METADATA is handed in from memory."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.tags import Tag

from fuzzkit import bounded
from wheelwise.lock import LockError, Package, PyLock, VariantsJson, Wheel, is_lock_file_name
from wheelwise.resolve.lock_selection import (
    LockedChoice,
    LockSelection,
    LockTarget,
    select_from_lock,
    variant_group,
)
from wheelwise.resolve.selection import TargetSpec
from wheelwise.variants import PEP825_SCHEMA_URL
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.supported import SupportedProperties

MARKERS = {
    "python_full_version": "3.12.1",
    "python_version": "3.12",
    "sys_platform": "linux",
    "platform_machine": "x86_64",
    "platform_system": "Linux",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "implementation_version": "3.12.1",
    "platform_release": "",
    "platform_version": "",
}
TAGS = [Tag("py3", "none", "any")]
GPU = {"nvidia": {"cuda_version_lower_bound": ["13.0", "12.8"], "sm_arch": ["90_real"]}}
VARIANTS = {
    "$schema": PEP825_SCHEMA_URL,
    "default-priorities": {"namespace": ["nvidia"]},
    "variants": {
        "null": {},
        "cu130": {
            "nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["80_real", "90_real"]}
        },
    },
}
GATE = "'variant-needs-{}' in dependency_groups"
FUZZ = bounded(150)


def wheel(filename: str) -> Wheel:
    return Wheel(
        url=f"https://files.example.test/{filename}",
        hashes={"sha256": hashlib.sha256(filename.encode()).hexdigest()},
    )


def package(name: str, *labels: str | None, marker: str | None = None, **fields: Any) -> Package:
    """*name* 1.0 with a wheel per label (None: the non-variant wheel)."""
    files = [f"{name}-1.0-py3-none-any{'-' + label if label else ''}.whl" for label in labels]
    variant = any(labels)
    return Package(
        name=name,
        version="1.0",
        marker=marker,
        wheels=tuple(wheel(f) for f in files or [f"{name}-1.0-py3-none-any.whl"]),
        variants_json=VariantsJson(VARIANTS) if variant else None,
        **fields,
    )


def target(machine: Mapping[str, Any], **fields: Any) -> LockTarget:
    supported = SupportedProperties.from_dict(machine)

    def for_metadata(metadata: VariantMetadata) -> SupportedProperties:
        return supported

    spec_fields = {k: fields.pop(k) for k in ("no_variant", "variant_choice") if k in fields}
    return LockTarget(MARKERS, TargetSpec(TAGS, for_metadata, **spec_fields), **fields)


class Metadata:
    """METADATA of each wheel by file name; records what was asked for."""

    def __init__(self, requires: Mapping[str, Sequence[str]], extras: Sequence[str] = ()) -> None:
        self.requires = requires
        self.extras = extras
        self.asked: list[list[str]] = []

    def __call__(self, choices: Sequence[LockedChoice]) -> list[bytes]:
        self.asked.append([choice.wheel.filename for choice in choices])
        return [self.text(choice) for choice in choices]

    def text(self, choice: LockedChoice) -> bytes:
        lines = ["Metadata-Version: 2.1", f"Name: {choice.name}", "Version: 1.0"]
        lines += [f"Provides-Extra: {extra}" for extra in self.extras]
        lines += [f"Requires-Dist: {r}" for r in self.requires.get(choice.wheel.filename, ())]
        return ("\n".join(lines) + "\n").encode()


def names(selection: LockSelection) -> dict[str, str | None]:
    return {choice.name: choice.label for choice in selection.choices}


CHAIN = PyLock(
    created_by="wheelwise",
    packages=(
        package("app"),
        package("vtorch", None, "null", "cu130"),
        package("vcublas", marker=GATE.format("vcublas")),
        package("vnvjit", marker=GATE.format("vnvjit")),
    ),
)
CHAIN_REQUIRES = {
    "app-1.0-py3-none-any.whl": ["vtorch"],
    "vtorch-1.0-py3-none-any-cu130.whl": ['vcublas ; "nvidia" in variant_namespaces'],
    "vcublas-1.0-py3-none-any.whl": ["vnvjit>=1"],
}


def test_gated_packages_are_settled_round_by_round() -> None:
    metadata = Metadata(CHAIN_REQUIRES)
    selection = select_from_lock(CHAIN, target(GPU), metadata)
    assert names(selection) == {"app": None, "vcublas": None, "vnvjit": None, "vtorch": "cu130"}
    assert {"variant-needs-vcublas", "variant-needs-vnvjit"} <= selection.groups
    # Each wheel is read once, and only while something could still be brought in.
    assert metadata.asked == [
        ["app-1.0-py3-none-any.whl", "vtorch-1.0-py3-none-any-cu130.whl"],
        ["vcublas-1.0-py3-none-any.whl"],
    ]


def test_a_cpu_machine_activates_nothing() -> None:
    metadata = Metadata(CHAIN_REQUIRES)
    selection = select_from_lock(CHAIN, target({}), metadata)
    assert names(selection) == {"app": None, "vtorch": "null"}
    assert len(metadata.asked) == 1
    no_variant = select_from_lock(CHAIN, target(GPU, no_variant=True), Metadata(CHAIN_REQUIRES))
    assert names(no_variant) == {"app": None, "vtorch": None}


def test_nothing_is_read_without_gated_entries() -> None:
    lock = PyLock(created_by="x", packages=(package("app"), package("vtorch", None, "cu130")))
    metadata = Metadata(CHAIN_REQUIRES)
    assert names(select_from_lock(lock, target(GPU), metadata)) == {"app": None, "vtorch": "cu130"}
    assert metadata.asked == []


def test_variant_properties_are_narrowed_to_the_machine() -> None:
    """PEP 825: a wheel listing sm_arch 80_real and 90_real, on a machine with only
    90_real, does not satisfy a test for 80_real."""
    lock = PyLock(
        created_by="x",
        packages=(
            package("vtorch", "cu130"),
            package("ampere", marker=GATE.format("ampere")),
            package("hopper", marker=GATE.format("hopper")),
        ),
    )
    requires = {
        "vtorch-1.0-py3-none-any-cu130.whl": [
            'ampere; "nvidia :: sm_arch :: 80_real" in variant_properties',
            'hopper; "nvidia::sm_arch::90_real" in variant_properties',
        ]
    }
    assert names(select_from_lock(lock, target(GPU), Metadata(requires))) == {
        "hopper": None,
        "vtorch": "cu130",
    }


def test_a_requirement_of_an_extra_counts_and_groups_come_from_the_lock_and_user() -> None:
    lock = replace_packages(
        CHAIN,
        default_groups=("default",),
        packages=(
            package("vtorch", "cu130"),
            package("vcublas", marker=GATE.format("vcublas")),
            package("docs", marker="'docs' in dependency_groups"),
            package("base", marker="'default' in dependency_groups"),
        ),
    )
    requires = {
        "vtorch-1.0-py3-none-any-cu130.whl": [
            'vcublas; extra == "cuda" and "nvidia" in variant_namespaces'
        ]
    }
    plain = select_from_lock(lock, target(GPU), Metadata(requires))
    assert names(plain) == {"base": None, "vtorch": "cu130"}
    with_extra = select_from_lock(lock, target(GPU), Metadata(requires, extras=["CUDA"]))
    assert "vcublas" in names(with_extra)
    grouped = select_from_lock(lock, target(GPU, groups=frozenset({"docs"})), Metadata(requires))
    assert "docs" in names(grouped)


def replace_packages(lock: PyLock, **fields: Any) -> PyLock:
    from dataclasses import replace

    return replace(lock, **fields)


@pytest.mark.parametrize(
    ("lock", "requires", "machine", "message"),
    [
        (
            CHAIN,
            {"app-1.0-py3-none-any.whl": ["vtorch ; nonsense"]},
            GPU,
            "pylock.toml: package app 1.0: app-1.0-py3-none-any.whl has a Requires-Dist that "
            "cannot be read, 'vtorch ; nonsense'",
        ),
        (
            PyLock(created_by="x", packages=(package("vtorch", "cu130"),)),
            {},
            {},
            "pylock.toml: package vtorch 1.0: no wheel it lists fits this target (Python "
            "3.12.1): no variant wheel is supported by this machine",
        ),
        (
            PyLock(
                created_by="x",
                packages=(
                    package("vtorch", "cu130"),
                    package("twice", marker=GATE.format("twice")),
                    package("twice", marker=GATE.format("twice") + " and python_version > '3'"),
                ),
            ),
            {"vtorch-1.0-py3-none-any-cu130.whl": ["twice"]},
            GPU,
            "pylock.toml: 2 entries for package 'twice' apply",
        ),
    ],
)
def test_what_is_refused(
    lock: PyLock, requires: dict[str, list[str]], machine: dict[str, Any], message: str
) -> None:
    with pytest.raises(LockError) as caught:
        select_from_lock(lock, target(machine), Metadata(requires))
    assert str(caught.value).startswith(message)


def test_a_variant_chosen_by_label() -> None:
    both = PyLock(created_by="x", packages=(package("vtorch", None, "null", "cu130"),))
    chosen = select_from_lock(both, target(GPU, variant_choice={"vtorch": "null"}), Metadata({}))
    assert names(chosen) == {"vtorch": "null"}
    with pytest.raises(LockError, match=r"--variant other=null: pylock\.toml installs no package"):
        select_from_lock(both, target(GPU, variant_choice={"other": "null"}), Metadata({}))
    with pytest.raises(LockError, match="has no such variant"):
        select_from_lock(both, target(GPU, variant_choice={"vtorch": "cu999"}), Metadata({}))


# -- fuzz ------------------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "vcublas",
        "vnvjit",
        "vtorch",
        "app",
        ";",
        " ",
        "(",
        ")",
        '"nvidia" in variant_namespaces',
        "variant_label == 'cu130'",
        "'nvidia :: sm_arch :: 90_real' in variant_properties",
        'extra == "x"',
        "python_version >= '3'",
        "and",
        "or",
        ">=1",
        "[cuda]",
        "@ https://x.test/a.whl",
        "\\",
        "\u2028",
        "'",
    ]
)
_REQUIREMENT = st.one_of(st.lists(_PIECES, max_size=8).map("".join), st.text(max_size=30))


@pytest.mark.slow
@FUZZ
@given(
    requires=st.dictionaries(
        st.sampled_from(sorted(CHAIN_REQUIRES)),
        st.lists(_REQUIREMENT, max_size=4),
        max_size=3,
    ),
    extras=st.lists(st.text(max_size=8), max_size=2),
    gpu=st.booleans(),
)
def test_any_requires_dist_selects_or_is_one_lock_error(
    requires: dict[str, list[str]], extras: list[str], gpu: bool
) -> None:
    """Whatever the wheels' METADATA says, the answer is a selection that holds the
    ungated packages, or one LockError line naming the lock."""
    try:
        selection = select_from_lock(CHAIN, target(GPU if gpu else {}), Metadata(requires, extras))
    except LockError as exc:
        error = str(exc)
    else:
        assert {"app", "vtorch"} <= set(names(selection))
        assert set(names(selection)) <= {"app", "vtorch", "vcublas", "vnvjit"}
        return
    assert "\n" not in error
    assert error.startswith("pylock.toml: package ")


@FUZZ
@given(st.text(max_size=30))
def test_lock_file_names_follow_pep_751(name: str) -> None:
    """``pylock.toml`` or ``pylock.<name>.toml`` with a name without dots."""
    expected = name == "pylock.toml" or (
        name.startswith("pylock.")
        and name.endswith(".toml")
        and len(name) > len("pylock..toml")
        and "." not in name[len("pylock.") : -len(".toml")]
    )
    assert is_lock_file_name(name) == expected
    assert is_lock_file_name(f"pylock.{name.replace('.', '')}.toml") == bool(name.replace(".", ""))


def test_variant_group_names_the_normalized_package() -> None:
    assert variant_group("NVIDIA_cuBLAS.cu12") == "variant-needs-nvidia-cublas-cu12"
