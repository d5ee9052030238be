"""The ``abi_dependency`` variant namespace (PEP 817): matching, and the resolver.

The pure part follows the PEP's table (``2`` -> ``==2.*``, ``2.9`` -> ``==2.9.*``,
``2.8.0`` -> ``==2.8.0.*``). The resolver part uses tiny fake packages: ``fakeorch``
(the dependency) and ``myext``, whose variant wheels are builds against different
fakeorch versions; first with the in-memory source of the resolver tests, then end
to end with real wheels, ``wheelwise index serve`` and fresh virtual environments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import packaging
import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from gpuhouse import metadata_member, wheel
from indexkit import wheelwise_serve
from installkit import make_venv, run_python
from test_install_resolve import Index, run, versions
from wheelwise.providers.abi_dependency import abi_dependency_report, installed_versions
from wheelwise.resolve.resolver import NoCompatibleWheel, ResolutionConflict, VariantChoiceError
from wheelwise.variants import abi_dependency as abi
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.ordering import rank_variants
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.supported import SupportedProperties


def prop(feature: str, value: str) -> VariantProperty:
    return VariantProperty(abi.NAMESPACE, feature, value)


# -- matching (pure) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2", "torch==2.*"), ("2.9", "torch==2.9.*"), ("2.8.0", "torch==2.8.0.*")],
)
def test_the_peps_table(value: str, expected: str) -> None:
    assert abi.requirement(prop("torch", value)) == expected


@pytest.mark.parametrize(
    ("value", "version", "expected"),
    [
        ("2", "2.9.1", True),
        ("2", "3.0", False),
        ("2.9", "2.9.1", True),
        ("2.9", "2.10.0", False),
        ("2.9", "2.90", False),
        ("2.8.0", "2.8", True),  # trailing zeros match fewer components
        ("2.0", "2", True),
        ("2.0", "2.1", False),
        ("2.8.0", "2.8.1", False),
        ("2.9", "2.9.1+cu128", True),  # local versions are ignored, as by ==2.9.*
        ("2.9", "2.9.0rc1", True),  # an installed pre-release is what it is
        ("2.9", "2.9.1.post1", True),
        ("2", "1!2.3", False),  # non-zero epochs are not supported
        ("02.9", "2.9.1", True),  # a release segment may have leading zeros
        ("2.9.1.0", "2.9.1", False),  # more than three components
        ("2.9a1", "2.9a1", False),  # not a release segment
        ("v2", "2", False),
        ("2.", "2", False),
    ],
)
def test_matches(value: str, version: str, expected: bool) -> None:
    assert abi.matches(value, Version(version)) is expected


def test_invalid_values_have_no_specifier() -> None:
    assert not abi.is_valid_value("2.9.1.1")
    with pytest.raises(ValueError, match=r"invalid abi_dependency value '2\.x'"):
        abi.specifier("2.x")


@pytest.mark.parametrize(
    ("package", "feature"),
    [("torch", "torch"), ("Fake.Orch-lib", "fake_orch_lib"), ("a__b", "a_b"), ("A-_.B", "a_b")],
)
def test_feature_names_are_normalized_package_names(package: str, feature: str) -> None:
    assert abi.feature_name(package) == feature
    assert abi.package_name(feature) == abi.package_name(package)


def test_preferred_values_matching_first_most_specific_first() -> None:
    listed = ["2.8", "2", "2.9", "2.9.1", "2.9.0", "bogus", "2.10"]
    assert abi.preferred_values(listed, Version("2.9.1")) == (
        "2.9.1",
        "2.9",
        "2",
        "2.10",
        "2.9.0",
        "2.8",
    )
    # Without a preferred version: the newest range first.
    assert abi.preferred_values(listed) == ("2.10", "2.9.1", "2.9.0", "2.9", "2.8", "2")


def test_supported_features_for_fixed_versions() -> None:
    metadata = VariantMetadata.build(
        ["x86_64", "abi_dependency"],
        {
            "t28": {"abi_dependency": {"torch": ["2.8"]}},
            "t29": {"abi_dependency": {"torch": ["2.9", "2.9.1"], "numpy_lib": ["2"]}},
            "both": {"abi_dependency": {"torch": ["2.8.0", "2.9.0"]}},
            "v3": {"x86_64": {"level": ["v3"]}},
        },
    )
    assert abi.used_features(metadata) == {
        "numpy_lib": ("2",),
        "torch": ("2.8", "2.8.0", "2.9", "2.9.0", "2.9.1"),
    }
    assert abi.supported_features(metadata, {"Torch": Version("2.9.1")}) == {
        "torch": ("2.9.1", "2.9")
    }
    assert abi.supported_features(
        metadata, {"torch": Version("2.8"), "numpy-lib": Version("2.1")}
    ) == {"numpy_lib": ("2",), "torch": ("2.8.0", "2.8")}
    assert abi.supported_features(metadata, {"torch": Version("3.0")}) == {}
    assert abi.supported_features(metadata, {}) == {}


def test_installed_distributions_answer_outside_a_resolution(tmp_path: Path) -> None:
    for name, version in [("Fake.Orch", "2.9.1"), ("broken", "not a version")]:
        dist_info = tmp_path / f"{name}-{version}.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        )
    names = ["fake_orch", "broken", "absent"]
    assert installed_versions(names, [str(tmp_path)]) == {"fake-orch": Version("2.9.1")}
    here = installed_versions(["Packaging"])  # this interpreter's
    assert here == {"packaging": Version(packaging.__version__)}

    metadata = VariantMetadata.build(
        ["abi_dependency"],
        {
            "p26": {"abi_dependency": {"packaging": [packaging.__version__.split(".")[0]]}},
            "p1": {"abi_dependency": {"packaging": ["1"]}},
            "orch": {"abi_dependency": {"fake_orch": ["2.9", "2.8"]}},
        },
    )
    report = abi_dependency_report(metadata)
    assert report.status == "ok"
    assert dict(report.features) == {"packaging": (packaging.__version__.split(".")[0],)}
    ranking = rank_variants(metadata, SupportedProperties({abi.NAMESPACE: report.features}))
    assert ranking.order == ("p26",)
    fixed = abi_dependency_report(metadata, installed_versions(names, [str(tmp_path)]))
    assert dict(fixed.features) == {"fake_orch": ("2.9",)}


RELEASES = st.lists(st.integers(0, 12), min_size=1, max_size=4)


@given(value=st.lists(st.integers(0, 12), min_size=1, max_size=3), release=RELEASES)
def test_matching_is_a_prefix_test_on_zero_padded_releases(
    value: list[int], release: list[int]
) -> None:
    """``{value}`` matches when the version's release, padded with zeros, starts with it."""
    padded = release + [0] * len(value)
    expected = padded[: len(value)] == value
    text = ".".join(map(str, value))
    version = Version(".".join(map(str, release)))
    assert abi.matches(text, version) is expected
    if expected:
        assert text in abi.preferred_values([text, "99"], version)[:1]


@pytest.mark.slow
@given(
    values=st.lists(
        st.from_regex(r"[0-9]{1,2}(\.[0-9]{1,2}){0,3}|[a-z0-9_.]{1,6}", fullmatch=True), max_size=8
    ),
    release=RELEASES,
)
def test_preferred_values_are_the_valid_values_reordered(
    values: list[str], release: list[int]
) -> None:
    version = Version(".".join(map(str, release)))
    ordered = abi.preferred_values(values, version)
    assert set(ordered) == {v for v in values if abi.is_valid_value(v)}
    matched = [abi.matches(v, version) for v in ordered]
    assert matched == sorted(matched, reverse=True)  # every match before every other


# -- the resolver (in-memory source) ---------------------------------------------------


def abi_meta(*builds: str) -> VariantMetadata:
    return VariantMetadata.build(
        ["abi_dependency"],
        {f"torch{b.replace('.', '')}": {"abi_dependency": {"fakeorch": [b]}} for b in builds},
    )


def myext(index: Index, version: str, *builds: str, plain: bool = False) -> Index:
    """myext *version* with one variant wheel per fakeorch build (``torch29``, ...)."""
    files = [f"myext-{version}-py3-none-any-torch{b.replace('.', '')}.whl" for b in builds]
    if plain:
        files.append(f"myext-{version}-py3-none-any.whl")
    return index.add("myext", version, files=files, metadata=abi_meta(*builds))


def fakeorch(index: Index, *releases: str) -> Index:
    for version in releases:
        index.add("fakeorch", version)
    return index


def source() -> Index:
    return myext(fakeorch(Index(), "2.8.0", "2.9.1", "2.10.0"), "1.0", "2.8", "2.9")


def test_a_pinned_dependency_picks_its_build() -> None:
    result = run(source(), "fakeorch==2.9.1", "myext")
    assert versions(result) == {"fakeorch": "2.9.1", "myext": "1.0"}
    chosen = result["myext"]
    assert chosen.label == "torch29"
    assert chosen.won_by == prop("fakeorch", "2.9")
    assert chosen.requires == ("fakeorch",)
    assert [str(match) for match in chosen.abi] == [
        "abi_dependency :: fakeorch :: 2.9 (fakeorch 2.9.1)"
    ]
    assert run(source(), "myext", "fakeorch==2.8.0")["myext"].label == "torch28"


def test_the_build_decides_the_dependency_when_nothing_pins_it() -> None:
    result = run(source(), "myext")
    assert versions(result) == {"fakeorch": "2.9.1", "myext": "1.0"}  # the newest build
    assert result["myext"].label == "torch29"
    result = run(source(), "myext", "fakeorch<2.9")
    assert (versions(result), result["myext"].label) == (
        {"fakeorch": "2.8.0", "myext": "1.0"},
        "torch28",
    )


def test_an_installed_version_is_matched_first() -> None:
    result = run(source(), "myext", installed={"fakeorch": "2.8.0"})
    assert versions(result) == {"fakeorch": "2.8.0", "myext": "1.0"}
    assert result["myext"].label == "torch28"
    assert result["fakeorch"].is_installed
    # Upgrading: installed versions no longer steer the choice.
    result = run(source(), "myext", installed={"fakeorch": "2.8.0"}, upgrade=True)
    assert result["myext"].label == "torch29"
    # Nor do they with --no-deps, where only the preference is left.
    result = run(source(), "myext", installed={"fakeorch": "2.8.0"}, no_deps=True)
    assert (versions(result), result["myext"].label) == ({"myext": "1.0"}, "torch28")
    assert [str(m) for m in result["myext"].abi] == [
        "abi_dependency :: fakeorch :: 2.8 (fakeorch 2.8.0)"
    ]


def test_constraints_pin_like_requirements() -> None:
    result = run(source(), "myext", constraints=["fakeorch==2.8.0"])
    assert result["myext"].label == "torch28"


def test_backtracks_to_an_older_release_with_a_matching_build() -> None:
    index = myext(source(), "0.9", "2.10")
    result = run(index, "fakeorch==2.10.0", "myext")
    assert versions(result) == {"fakeorch": "2.10.0", "myext": "0.9"}
    assert result["myext"].label == "torch210"


def test_backtracks_when_a_dependency_pins_late() -> None:
    # myext is pinned first (alphabetically before zlib), to torch29; zlib then
    # wants fakeorch 2.8 and the resolver goes back to the torch28 build.
    index = source().add("zlib", "1.0", ["fakeorch==2.8.0"])
    result = run(index, "myext", "zlib")
    assert versions(result) == {"fakeorch": "2.8.0", "myext": "1.0", "zlib": "1.0"}
    assert result["myext"].label == "torch28"


def test_falls_back_to_the_non_variant_wheel() -> None:
    index = myext(fakeorch(Index(), "2.9.1", "2.10.0"), "1.0", "2.9", plain=True)
    result = run(index, "fakeorch==2.10.0", "myext")
    assert versions(result) == {"fakeorch": "2.10.0", "myext": "1.0"}
    assert result["myext"].label is None
    assert result["myext"].abi == ()


def test_no_matching_build_names_the_pairs() -> None:
    with pytest.raises(ResolutionConflict) as caught:
        run(source(), "fakeorch==2.10.0", "myext")
    message = str(caught.value)
    assert "fakeorch==2.10.0 requested" in message
    assert (
        "fakeorch==2.9.* (abi_dependency :: fakeorch :: 2.9) required by myext 1.0 "
        "(variant torch29)" in message
    )
    assert "(abi_dependency :: fakeorch :: 2.8) required by myext 1.0 (variant torch28)" in message


def test_no_variant_ignores_the_builds() -> None:
    index = myext(fakeorch(Index(), "2.9.1", "2.10.0"), "1.0", "2.9", plain=True)
    result = run(index, "fakeorch==2.10.0", "myext", no_variant=True)
    assert result["myext"].label is None
    assert run(index, "myext", no_variant=True)["myext"].requires == ()
    with pytest.raises(NoCompatibleWheel, match="variant wheels are disabled"):
        run(source(), "myext", no_variant=True)


def test_a_chosen_variant_keeps_its_dependency() -> None:
    result = run(source(), "myext", variant_choice={"myext": "torch28"})
    assert versions(result) == {"fakeorch": "2.8.0", "myext": "1.0"}
    with pytest.raises(ResolutionConflict, match="variant torch28"):
        run(source(), "myext", "fakeorch==2.9.1", variant_choice={"myext": "torch28"})
    with pytest.raises(VariantChoiceError, match="no such variant"):
        run(source(), "myext", variant_choice={"myext": "torch27"})


def test_one_label_for_several_versions() -> None:
    metadata = VariantMetadata.build(
        ["abi_dependency"], {"torch2x": {"abi_dependency": {"fakeorch": ["2.8.0", "2.9.0"]}}}
    )
    index = fakeorch(Index(), "2.8.0", "2.9.0", "2.9.1")
    index.add("myext", "1.0", files=["myext-1.0-py3-none-any-torch2x.whl"], metadata=metadata)
    result = run(index, "myext")
    assert versions(result)["fakeorch"] == "2.9.0"  # 2.9.1 is not 2.9.0.*
    assert result["myext"].won_by == prop("fakeorch", "2.9.0")
    result = run(index, "myext", installed={"fakeorch": "2.8.0"})
    assert versions(result)["fakeorch"] == "2.8.0"
    assert [m.property.value for m in result["myext"].abi] == ["2.8.0"]
    with pytest.raises(ResolutionConflict):
        run(index, "myext", "fakeorch==2.9.1")


def test_invalid_values_make_a_variant_incompatible() -> None:
    metadata = VariantMetadata.build(
        ["abi_dependency"],
        {
            "bad": {"abi_dependency": {"fakeorch": ["2.9.1.0"]}},
            "good": {"abi_dependency": {"fakeorch": ["2"]}},
        },
    )
    files = ["myext-1.0-py3-none-any-bad.whl", "myext-1.0-py3-none-any-good.whl"]
    index = fakeorch(Index(), "2.9.1").add("myext", "1.0", files=files, metadata=metadata)
    result = run(index, "myext")
    assert result["myext"].label == "good"
    assert "abi_dependency :: fakeorch :: 2.9.1.0" in result["myext"].rejected["bad"]


def test_the_machine_ranks_first_and_the_dependency_picks_among_equals() -> None:
    metadata = VariantMetadata.build(
        ["x86_64", "abi_dependency"],
        {
            f"{level}_torch{b.replace('.', '')}": {
                "x86_64": {"level": [level]},
                "abi_dependency": {"fake_orch": [b]},
            }
            for level in ("v1", "v3", "v4")
            for b in ("2.8", "2.9")
        },
    )
    files = [f"myext-1.0-py3-none-any-{label}.whl" for label in metadata.labels]
    index = Index().add("fake-orch", "2.8.0").add("fake-orch", "2.9.1")
    index.add("myext", "1.0", files=files, metadata=metadata)
    machine = SupportedProperties({"x86_64": {"level": ("v3", "v2", "v1")}})
    result = run(index, "myext", "fake-orch==2.8.0", machine=machine)
    assert result["myext"].label == "v3_torch28"
    assert result["myext"].won_by == VariantProperty("x86_64", "level", "v3")
    assert result["myext"].requires == ("fake-orch",)
    assert sorted(result["myext"].rejected) == ["v4_torch28", "v4_torch29"]
    assert run(index, "myext", machine=machine)["myext"].label == "v3_torch29"


def test_variant_markers_see_the_value_of_the_build() -> None:
    metadata = VariantMetadata.build(
        ["abi_dependency"], {"torch2x": {"abi_dependency": {"fakeorch": ["2.8", "2.9"]}}}
    )
    marker = '"abi_dependency :: fakeorch :: 2.9" in variant_properties'
    index = fakeorch(Index(), "2.8.0", "2.9.1").add("helper29", "1.0")
    index.add(
        "myext",
        "1.0",
        [f"helper29; {marker}"],
        files=["myext-1.0-py3-none-any-torch2x.whl"],
        metadata=metadata,
    )
    assert "helper29" in run(index, "myext")
    assert "helper29" not in run(index, "myext", "fakeorch==2.8.0")


# -- end to end: real wheels, a real index, fresh virtual environments -----------------


def build_wheelhouse(directory: Path) -> None:
    """fakeorch 2.7.0, 2.8.0, 2.9.1, 2.10.0; myext 1.0 with builds for fakeorch 2.8
    and 2.9 only; myext 0.9 with a build for 2.10 and a non-variant wheel that needs
    fakeorch>=2.9."""
    directory.mkdir(parents=True)
    for version in ("2.7.0", "2.8.0", "2.9.1", "2.10.0"):
        wheel(
            directory,
            f"fakeorch-{version}-py3-none-any.whl",
            extra_members=metadata_member("fakeorch", version, []),
        )
    for version, builds in (("1.0", ("2.8", "2.9")), ("0.9", ("2.10",))):
        for build in builds:
            label = f"torch{build.replace('.', '')}"
            wheel(
                directory,
                f"myext-{version}-py3-none-any-{label}.whl",
                label,
                {"abi_dependency": {"fakeorch": [build]}},
                extra_members=metadata_member("myext", version, []),
            )
    wheel(
        directory,
        "myext-0.9-py3-none-any.whl",
        extra_members=metadata_member("myext", "0.9", ["fakeorch>=2.9"]),
    )


@pytest.fixture(scope="module")
def index_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    house = tmp_path_factory.mktemp("abi") / "wheels"
    build_wheelhouse(house)
    with wheelwise_serve(house) as base:
        yield f"{base}/simple/"


def install(python: Path, index: str, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WHEELWISE_") and k.lower() not in ("http_proxy", "https_proxy")
    }
    env.update(WHEELWISE_CACHE_DIR=str(cache), NO_PROXY="*", COLUMNS="300")
    argv = [sys.executable, "-m", "wheelwise", "install", "--python", str(python)]
    return subprocess.run(
        [*argv, "--index-url", index, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def installed(python: Path) -> dict[str, str]:
    """``{name: version}`` in the venv, and ``myext``'s build as ``myext-build``."""
    code = (
        "import importlib.metadata as m, json, myext\n"
        "found = {d.metadata['Name']: d.version for d in m.distributions()}\n"
        "found['myext-build'] = str(myext.VARIANT)\n"
        "print(json.dumps(found))"
    )
    result = run_python(python, code)
    assert result.returncode == 0, result.stderr
    found: dict[str, str] = json.loads(result.stdout)
    return found


@pytest.mark.slow
def test_install_picks_the_build_for_the_requested_dependency(
    index_url: str, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv")
    result = install(python, index_url, tmp_path / "cache", "fakeorch==2.9.1", "myext")
    assert result.returncode == 0, result.stderr
    assert installed(python) == {"fakeorch": "2.9.1", "myext": "1.0", "myext-build": "torch29"}
    assert "installed myext 1.0 (variant torch29, won by abi_dependency :: fakeorch :: 2.9" in (
        result.stdout
    )


@pytest.mark.slow
def test_install_matches_the_installed_dependency(index_url: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    cache = tmp_path / "cache"
    first = install(python, index_url, cache, "fakeorch==2.8.0")
    assert first.returncode == 0, first.stderr
    result = install(python, index_url, cache, "myext")
    assert result.returncode == 0, result.stderr
    assert installed(python) == {"fakeorch": "2.8.0", "myext": "1.0", "myext-build": "torch28"}
    assert "already installed fakeorch 2.8.0" in result.stdout


@pytest.mark.slow
def test_a_new_dependency_version_replaces_the_installed_build(
    index_url: str, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv")
    cache = tmp_path / "cache"
    first = install(python, index_url, cache, "fakeorch==2.8.0", "myext")
    assert first.returncode == 0, first.stderr
    assert installed(python)["myext-build"] == "torch28"
    # Same myext version, no --upgrade: the torch28 build would break on 2.9.1.
    result = install(python, index_url, cache, "fakeorch==2.9.1", "myext")
    assert result.returncode == 0, result.stderr
    assert installed(python) == {"fakeorch": "2.9.1", "myext": "1.0", "myext-build": "torch29"}
    again = install(python, index_url, cache, "myext")
    assert again.returncode == 0, again.stderr
    assert "already installed myext 1.0 (variant torch29)" in again.stdout


@pytest.mark.slow
def test_install_backtracks_to_an_older_release(index_url: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    result = install(python, index_url, tmp_path / "cache", "fakeorch==2.10.0", "myext")
    assert result.returncode == 0, result.stderr
    assert installed(python) == {"fakeorch": "2.10.0", "myext": "0.9", "myext-build": "torch210"}


@pytest.mark.slow
def test_install_fails_clearly_when_no_build_matches(index_url: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    result = install(python, index_url, tmp_path / "cache", "fakeorch==2.7.0", "myext")
    assert result.returncode == 2, result.stdout
    assert result.stderr.startswith("wheelwise: error: the requirements conflict: ")
    [line] = result.stderr.splitlines()  # one line, and no escaped line break in it
    assert "\\n" not in line
    assert "fakeorch==2.7.0 requested" in result.stderr
    assert "(abi_dependency :: fakeorch :: 2.9) required by myext 1.0 (variant torch29)" in (
        result.stderr
    )
    assert run_python(python, "import myext").returncode != 0  # nothing installed


@pytest.mark.slow
def test_install_without_variants_takes_the_non_variant_wheel(
    index_url: str, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv")
    result = install(python, index_url, tmp_path / "cache", "myext", "--no-variant")
    assert result.returncode == 0, result.stderr
    assert installed(python) == {"fakeorch": "2.10.0", "myext": "0.9", "myext-build": "None"}


@pytest.mark.slow
def test_dry_run_shows_the_deciding_property(index_url: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    result = install(python, index_url, tmp_path / "cache", "myext", "fakeorch<2.9", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "torch28" in result.stdout
    assert "abi_dependency :: fakeorch :: 2.8" in result.stdout
    assert "torch29" not in result.stdout


# -- wheelwise select: no resolution, the installed distributions answer ----------------


def test_select_matches_this_interpreters_distributions(tmp_path: Path) -> None:
    major = packaging.__version__.split(".")[0]
    document = {
        "$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
        "default-priorities": {"namespace": ["abi_dependency"]},
        "variants": {
            "current": {"abi_dependency": {"packaging": [major]}},
            "old": {"abi_dependency": {"packaging": ["1.0"]}},
            "missing": {"abi_dependency": {"not_installed_anywhere": ["1"]}},
        },
    }
    variants = tmp_path / "pkg-1.0-variants.json"
    variants.write_text(json.dumps(document))
    argv = [sys.executable, "-m", "wheelwise", "select", str(variants), "--json"]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    ranking = json.loads(result.stdout)
    assert ranking["order"] == ["current"]
    assert set(ranking["rejected"]) == {"old", "missing"}
    # With --system, the file alone says what the target has.
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"system": {"abi_dependency": {"packaging": ["1.0"]}}}))
    result = subprocess.run(
        [*argv, "--system", str(system)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["order"] == ["old"]
