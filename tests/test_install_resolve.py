"""The resolver core of `wheelwise install`, with an in-memory package source."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

import pytest
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from paths import DATA
from wheelwise.providers.base import Environment
from wheelwise.providers.detect import detect
from wheelwise.resolve.candidates import Release, ReleaseFiles, WheelFile
from wheelwise.resolve.resolver import (
    NoCompatibleWheel,
    PackageNotFound,
    Resolution,
    ResolutionConflict,
    ResolveError,
    VariantChoiceError,
    resolve,
)
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.supported import SupportedProperties

TAGS = [
    Tag("cp312", "cp312", "manylinux_2_17_x86_64"),
    Tag("cp312", "abi3", "manylinux_2_17_x86_64"),
    Tag("py3", "none", "manylinux_2_17_x86_64"),
    Tag("py3", "none", "any"),
]
ENV = {"python_version": "3.12", "sys_platform": "linux", "platform_machine": "x86_64"}
NO_MACHINE = SupportedProperties()


@dataclass
class Index:
    """An in-memory Finder: releases per name, Requires-Dist per wheel filename."""

    releases: dict[str, list[Release]] = field(default_factory=dict)
    requires: dict[str, list[str]] = field(default_factory=dict)
    metadata_calls: list[str] = field(default_factory=list)
    # Versions listed with source distributions only, by name.
    sdists: dict[str, list[str]] = field(default_factory=dict)

    def add(
        self,
        name: str,
        version: str,
        deps: Sequence[str] = (),
        *,
        files: Sequence[str] | None = None,
        metadata: VariantMetadata | None = None,
        per_file: Mapping[str, Sequence[str]] | None = None,
        yanked: bool = False,
    ) -> Index:
        dist = name.replace("-", "_")
        names = files if files is not None else [f"{dist}-{version}-py3-none-any.whl"]
        wheels = [WheelFile.parse(f, link=f"https://example.invalid/{f}") for f in names]
        for wheel in wheels:
            self.requires[str(wheel)] = list((per_file or {}).get(str(wheel), deps))
        self.releases.setdefault(str(canonicalize_name(name)), []).append(
            _Counted(
                Version(version),
                [] if yanked else wheels,
                metadata,
                yanked_files=wheels if yanked else [],
                calls=self.metadata_calls,
            )
        )
        return self

    def versions(self, name: NormalizedName) -> Sequence[ReleaseFiles]:
        return self.releases.get(name, [])

    def dependencies(self, file: WheelFile) -> list[str]:
        return self.requires[str(file)]

    def source_only_versions(self, name: NormalizedName) -> list[Version]:
        return [Version(v) for v in self.sdists.get(name, [])]


@dataclass(frozen=True)
class _Counted(Release):
    calls: list[str] = field(default_factory=list, compare=False)

    def variant_metadata(self) -> VariantMetadata | None:
        self.calls.append(str(self.version))
        return self.metadata


def run(
    index: Index,
    *requirements: str,
    machine: SupportedProperties = NO_MACHINE,
    **options: object,
) -> Resolution:
    return resolve(
        requirements,
        index,
        supported=lambda _metadata: machine,
        tags=TAGS,
        environment=ENV,
        **options,  # type: ignore[arg-type]
    )


def versions(result: Resolution) -> dict[str, str]:
    return {p.name: str(p.version) for p in result}


@cache
def simulated(
    driver: str = "none", gpus: str = "", cpu: str = "linux-rhel7-haswell"
) -> SupportedProperties:
    """A machine as the real built-in providers see it, from overrides only."""
    variables = {
        "WHEELWISE_NVIDIA_DRIVER": driver,
        "WHEELWISE_NVIDIA_GPUS": gpus,
        "WHEELWISE_AMD_ROCM": "none",
        "WHEELWISE_AMD_GFX": "none",
        "WHEELWISE_CPUINFO": str(DATA / "cpuinfo" / cpu),
    }
    return detect(env=Environment(variables)).system


NO_GPU = ("none", "")
AMPERE_CUDA12 = ("12.8", "8.6")
HOPPER_CUDA13 = ("13.0", "9.0")
PASCAL = ("12.8", "6.1")

TORCHY_META = VariantMetadata.build(
    ["nvidia"],
    {
        "cu126": {
            "nvidia": {"cuda_version_lower_bound": ["12.6"], "sm_arch": ["80_real", "86_real"]}
        },
        "cu128": {
            "nvidia": {
                "cuda_version_lower_bound": ["12.8"],
                "sm_arch": ["80_real", "86_real", "90_real", "120_real"],
            }
        },
        "cu130": {
            "nvidia": {
                "cuda_version_lower_bound": ["13.0"],
                "sm_arch": ["90_real", "100_real", "120_real"],
            }
        },
        "cu126legacy": {
            "nvidia": {"cuda_version_lower_bound": ["12.6"], "sm_arch": ["50_real", "60_real"]}
        },
        "null": {},
    },
)
TORCHY_LABELS = ["cu126", "cu128", "cu130", "cu126legacy", "null"]


def torchy(index: Index, version: str = "1.0", *, plain: bool = False) -> Index:
    files = [f"torchy-{version}-cp312-cp312-manylinux_2_17_x86_64-{x}.whl" for x in TORCHY_LABELS]
    if plain:
        files.append(f"torchy-{version}-cp312-cp312-manylinux_2_17_x86_64.whl")
    return index.add("torchy", version, ["filelike"], files=files, metadata=TORCHY_META).add(
        "filelike", "1.0"
    )


LEVELS_META = VariantMetadata.build(
    ["x86_64"],
    {f"x86_64_{v}": {"x86_64": {"level": [v]}} for v in ("v2", "v3", "v4")},
)


def levels(index: Index) -> Index:
    files = [
        f"simdy-1.0-cp312-cp312-manylinux_2_17_x86_64-x86_64_{v}.whl" for v in ("v2", "v3", "v4")
    ]
    files.append("simdy-1.0-cp312-cp312-manylinux_2_17_x86_64.whl")  # the v1 baseline
    return index.add("simdy", "1.0", files=files, metadata=LEVELS_META)


# -- plain resolution ------------------------------------------------------------------


def test_simple_chain_dependencies_first() -> None:
    index = Index().add("app", "1.0", ["lib>=1"]).add("lib", "1.0", ["base"]).add("base", "2.0")
    result = run(index, "app")
    assert [p.name for p in result] == ["base", "lib", "app"]
    assert versions(result) == {"base": "2.0", "lib": "1.0", "app": "1.0"}
    app = result["App"]
    assert app.requires == ("lib",)
    assert app.label is None
    assert app.won_by is None
    assert app.rejected == {}
    assert app.file.link == "https://example.invalid/app-1.0-py3-none-any.whl"
    assert "app" in result
    assert "nothing" not in result


def test_newest_version_wins() -> None:
    index = Index().add("foo", "1.0").add("foo", "2.0").add("foo", "1.5")
    assert versions(run(index, "foo")) == {"foo": "2.0"}
    assert versions(run(index, "foo<2")) == {"foo": "1.5"}


def test_extras() -> None:
    index = (
        Index()
        .add("foo", "1.0", ['bar; extra == "fast"', "baz", 'qux; extra == "Other"'])
        .add("bar", "1.0")
        .add("baz", "1.0")
        .add("qux", "1.0")
    )
    assert versions(run(index, "foo")) == {"foo": "1.0", "baz": "1.0"}
    result = run(index, "foo[fast]")
    assert versions(result) == {"foo": "1.0", "bar": "1.0", "baz": "1.0"}
    assert result["foo"].extras == {"fast"}
    assert set(result["foo"].requires) == {"bar", "baz"}
    both = run(index, "foo[fast,other]")
    assert set(versions(both)) == {"foo", "bar", "baz", "qux"}


def test_extras_of_a_dependency_pin_the_same_version() -> None:
    index = (
        Index()
        .add("app", "1.0", ["foo[fast]"])
        .add("foo", "2.0", ['bar; extra == "fast"'])
        .add("foo", "1.0", ['bar; extra == "fast"'])
        .add("bar", "1.0")
    )
    result = run(index, "app", "foo<2")
    assert versions(result) == {"app": "1.0", "foo": "1.0", "bar": "1.0"}


def test_markers() -> None:
    index = (
        Index()
        .add("foo", "1.0", ['win-only; sys_platform == "win32"', 'old; python_version < "3.11"'])
        .add("win-only", "1.0")
        .add("old", "1.0")
    )
    assert versions(run(index, "foo")) == {"foo": "1.0"}
    old_python = resolve(
        ["foo"], index, supported=lambda _m: NO_MACHINE, tags=TAGS, environment={**ENV,
        "python_version": "3.10"},
    )  # fmt: skip
    assert versions(old_python) == {"foo": "1.0", "old": "1.0"}
    # A requested requirement whose marker is false is left out altogether.
    assert versions(run(index, "foo", 'old; sys_platform == "win32"')) == {"foo": "1.0"}


def test_constraints() -> None:
    index = Index().add("foo", "1.0", ["bar"]).add("foo", "2.0", ["bar"])
    index.add("bar", "1.0").add("bar", "2.0").add("unused", "1.0")
    result = run(index, "foo", constraints=["bar<2", "unused==1.0", 'foo<1; os_name == "nt"'])
    assert versions(result) == {"foo": "2.0", "bar": "1.0"}
    with pytest.raises(ResolutionConflict) as info:
        run(index, "foo>=2", constraints=["foo<2"])
    assert "foo (foo>=2 requested; constraint foo<2); available: 2.0, 1.0" in str(info.value)


def test_pre_releases() -> None:
    index = Index().add("foo", "1.0").add("foo", "2.0b1")
    assert versions(run(index, "foo")) == {"foo": "1.0"}
    assert versions(run(index, "foo", pre=True)) == {"foo": "2.0b1"}
    assert versions(run(index, "foo>=2.0b1")) == {"foo": "2.0b1"}
    assert run(index, "foo").notes == ()


def test_pre_releases_when_nothing_else_fits() -> None:
    """As pip and uv: without --pre, a pre-release is chosen when no final release
    is in range, and the user is told."""
    only_pre = Index().add("bar", "1.0rc1").add("bar", "0.9b2")
    result = run(only_pre, "bar")
    assert versions(result) == {"bar": "1.0rc1"}
    assert result.notes == (
        "bar 1.0rc1 is a pre-release: no final release of bar fits the requirements, so "
        "pre-releases are allowed for it (as with --pre)",
    )
    older = Index().add("foo", "1.0").add("foo", "0.9b1")
    assert versions(run(older, "foo<1.0")) == {"foo": "0.9b1"}
    assert versions(run(older, "foo")) == {"foo": "1.0"}
    # A final release in range, even an older one, keeps pre-releases out.
    newer_pre = Index().add("foo", "1.0").add("foo", "2.0b1")
    assert versions(run(newer_pre, "foo<3")) == {"foo": "1.0"}
    # The rule applies to a dependency too.
    dep = Index().add("app", "1.0", ["bar>=0.5"]).add("bar", "1.0rc1")
    result = run(dep, "app")
    assert versions(result) == {"app": "1.0", "bar": "1.0rc1"}
    assert [note.split(" is ")[0] for note in result.notes] == ["bar 1.0rc1"]


def test_source_distributions_only_say_so() -> None:
    index = Index(sdists={"docopt": ["0.6.2"], "old": ["1.0", "2.0"]}).add("mixed", "1.0")
    index.sdists["mixed"] = ["2.0"]
    with pytest.raises(PackageNotFound) as info:
        run(index, "docopt")
    assert str(info.value) == (
        "docopt 0.6.2 has only a source distribution; this command takes wheels only: build "
        "one (`pip wheel --no-deps docopt==0.6.2 -w wheels`), then pass --find-links wheels "
        "(docopt requested)"
    )
    with pytest.raises(
        PackageNotFound,
        match=r"^old has source distributions only \(2 "
        r"releases, the newest 2.0\); .* old==1.0 ",
    ):
        run(index, "old<2")
    # A version in range with a source distribution only, older ones with wheels.
    with pytest.raises(NoCompatibleWheel, match=r"mixed 2.0: this command takes wheels only"):
        run(index, "mixed>=2")
    assert versions(run(index, "mixed")) == {"mixed": "1.0"}
    # Several such releases in range: the advice once, for the newest.
    index.sdists["mixed"] = ["2.0", "2.1", "3.0"]
    expected = (
        "no compatible wheel for mixed (source distributions are never built): mixed 3.0, "
        "2.1, 2.0: this command takes wheels only: build one (`pip wheel --no-deps "
        "mixed==3.0 -w wheels`), then pass --find-links wheels"
    )
    with pytest.raises(NoCompatibleWheel, match=f"^{re.escape(expected)}$"):
        run(index, "mixed>=2")


def test_a_yanked_release_only_when_pinned() -> None:
    """PEP 592, as pip and uv: a yanked release is skipped unless pinned with == or
    ===; installing it is told."""
    index = Index().add("foo", "1.0").add("foo", "2.0", yanked=True)
    assert versions(run(index, "foo")) == {"foo": "1.0"}
    pinned = run(index, "foo==2.0")
    assert versions(pinned) == {"foo": "2.0"}
    assert pinned.notes == (
        "foo 2.0 is yanked; installing it because it is pinned with == (PEP 592)",
    )
    assert versions(run(index, "foo===2.0")) == {"foo": "2.0"}
    assert versions(run(index, "foo", constraints=["foo==2.0"])) == {"foo": "2.0"}
    with pytest.raises(NoCompatibleWheel) as info:
        run(index, "foo>=2")
    assert str(info.value) == (
        "no compatible wheel for foo: foo 2.0: yanked; pin it with ==2.0 to install it anyway"
    )
    with pytest.raises(ResolveError):
        run(index, "foo==2.*")  # a wildcard is no pin


def test_installed_is_kept_unless_upgrade() -> None:
    index = Index().add("foo", "1.0").add("foo", "2.0").add("foo", "3.0")
    kept = run(index, "foo", installed={"Foo": "2.0"})
    assert versions(kept) == {"foo": "2.0"}
    assert kept["foo"].is_installed
    upgraded = run(index, "foo", installed={"foo": "2.0"}, upgrade=True)
    assert versions(upgraded) == {"foo": "3.0"}
    assert upgraded["foo"].installed == Version("2.0")
    assert not upgraded["foo"].is_installed
    # An installed version that does not satisfy the requirement is replaced.
    assert versions(run(index, "foo<2", installed={"foo": "2.0"})) == {"foo": "1.0"}


def test_no_deps() -> None:
    index = Index().add("app", "1.0", ["lib"]).add("lib", "1.0")
    assert versions(run(index, "app", no_deps=True)) == {"app": "1.0"}
    index.add("foo", "1.0", ['lib; extra == "x"'])
    assert versions(run(index, "foo[x]", no_deps=True)) == {"foo": "1.0"}


def test_backtracking_on_conflicts() -> None:
    index = (
        Index()
        .add("app", "2.0", ["lib>=2"])
        .add("app", "1.0", ["lib<2"])
        .add("lib", "1.0")
        .add("lib", "2.0")
        .add("other", "1.0", ["lib<2"])
    )
    assert versions(run(index, "app", "other")) == {"app": "1.0", "lib": "1.0", "other": "1.0"}


def test_unsatisfiable_conflict_names_both_sides() -> None:
    index = Index().add("a", "1.0", ["lib>=2"]).add("b", "1.0", ["lib<2"])
    index.add("lib", "1.0").add("lib", "2.0")
    with pytest.raises(ResolutionConflict) as info:
        run(index, "a", "b")
    message = str(info.value)
    assert "lib>=2 required by a 1.0" in message
    assert "lib<2 required by b 1.0" in message


def test_a_version_that_does_not_exist_is_no_conflict() -> None:
    with pytest.raises(
        PackageNotFound, match=r"no release of a \(a==9\.9 requested\); available: 1\.0"
    ):
        run(Index().add("a", "1.0"), "a==9.9")


def test_unknown_package() -> None:
    with pytest.raises(PackageNotFound, match="no release of missing"):
        run(Index().add("app", "1.0", ["missing"]), "app")


def test_invalid_and_url_requirements() -> None:
    with pytest.raises(ResolveError, match="invalid requirement"):
        run(Index(), "foo >>> 1")
    with pytest.raises(ResolveError, match="direct URL"):
        run(Index(), "foo @ https://example.invalid/foo-1.0-py3-none-any.whl")


# -- tags ------------------------------------------------------------------------------


def test_wheel_for_another_platform_is_ignored() -> None:
    index = Index().add(
        "foo",
        "1.0",
        files=[
            "foo-1.0-cp312-cp312-win_amd64.whl",
            "foo-1.0-py3-none-any.whl",
            "foo-1.0-cp312-cp312-manylinux_2_17_x86_64.whl",
        ],
    )
    chosen = run(index, "foo")["foo"].file
    assert str(chosen) == "foo-1.0-cp312-cp312-manylinux_2_17_x86_64.whl"


def test_higher_build_number_wins_a_tag_tie() -> None:
    index = Index().add(
        "foo", "1.0", files=["foo-1.0-1-py3-none-any.whl", "foo-1.0-2-py3-none-any.whl"]
    )
    assert str(run(index, "foo")["foo"].file) == "foo-1.0-2-py3-none-any.whl"


def test_no_compatible_wheel_falls_back_to_an_older_version() -> None:
    index = Index().add("foo", "2.0", files=["foo-2.0-cp313-cp313-win_amd64.whl"])
    index.add("foo", "1.0")
    assert versions(run(index, "foo")) == {"foo": "1.0"}


def test_no_compatible_wheel_error() -> None:
    index = Index().add("app", "1.0", ["foo"])
    index.add("foo", "2.0", files=["foo-2.0-cp313-cp313-win_amd64.whl"])
    index.add("foo", "1.0", files=[])
    with pytest.raises(NoCompatibleWheel) as info:
        run(index, "app")
    message = str(info.value)
    assert info.value.name == "foo"
    assert message.startswith("no compatible wheel for foo")
    assert "foo 2.0: wheels have tags cp313-cp313-win_amd64" in message
    assert "this Python supports cp312-cp312-manylinux_2_17_x86_64" in message
    assert "foo 1.0: no wheels (source distributions are never built)" in message


def test_better_tag_preferred_within_a_label() -> None:
    index = Index().add(
        "simdy",
        "1.0",
        files=[
            "simdy-1.0-py3-none-any-x86_64_v3.whl",
            "simdy-1.0-cp312-cp312-manylinux_2_17_x86_64-x86_64_v3.whl",
            "simdy-1.0-cp312-cp312-manylinux_2_17_x86_64-x86_64_v2.whl",
            "simdy-1.0-cp312-cp312-win_amd64-x86_64_v4.whl",
        ],
        metadata=LEVELS_META,
    )
    machine = SupportedProperties({"x86_64": {"level": ("v4", "v3", "v2", "v1")}})
    chosen = run(index, "simdy", machine=machine)["simdy"]
    # v4 has no wheel for this platform; v3 beats v2 whatever their tags.
    assert str(chosen.file) == "simdy-1.0-cp312-cp312-manylinux_2_17_x86_64-x86_64_v3.whl"
    assert chosen.label == "x86_64_v3"


def test_build_numbers_only_break_ties() -> None:
    """PEP 825 as merged (python/peps#5110): build numbers no longer group wheels;
    they break ties between otherwise equal wheels. A newer build of the non-variant
    wheel does not beat a variant, nor a newer build of a worse variant a better one;
    two wheels of the same variant and tags go by build number."""
    machine = SupportedProperties({"x86_64": {"level": ("v4", "v3", "v2", "v1")}})
    index = Index().add(
        "simdy",
        "1.0",
        files=[
            "simdy-1.0-3-cp312-cp312-manylinux_2_17_x86_64.whl",
            "simdy-1.0-2-cp312-cp312-manylinux_2_17_x86_64-x86_64_v2.whl",
            "simdy-1.0-1-cp312-cp312-manylinux_2_17_x86_64-x86_64_v3.whl",
            "simdy-1.0-2-cp312-cp312-manylinux_2_17_x86_64-x86_64_v3.whl",
        ],
        metadata=LEVELS_META,
    )
    chosen = run(index, "simdy", machine=machine)["simdy"]
    assert str(chosen.file) == "simdy-1.0-2-cp312-cp312-manylinux_2_17_x86_64-x86_64_v3.whl"


# -- variants --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "label", "won_by"),
    [
        (NO_GPU, "null", None),
        (AMPERE_CUDA12, "cu128", "nvidia :: cuda_version_lower_bound :: 12.8"),
        (HOPPER_CUDA13, "cu130", "nvidia :: cuda_version_lower_bound :: 13.0"),
        (PASCAL, "cu126legacy", "nvidia :: cuda_version_lower_bound :: 12.6"),
    ],
)
def test_simulated_gpu_machines(gpu: tuple[str, str], label: str, won_by: str | None) -> None:
    machine = simulated(*gpu)
    chosen = run(torchy(Index()), "torchy", machine=machine)["torchy"]
    assert chosen.label == label
    assert str(chosen.file).endswith(f"-{label}.whl")
    assert (str(chosen.won_by) if chosen.won_by else None) == won_by
    compatible = chosen.ranking.order if chosen.ranking else ()
    assert set(chosen.rejected) == set(TORCHY_LABELS) - set(compatible)


def test_rejected_labels_carry_reasons() -> None:
    chosen = run(torchy(Index()), "torchy", machine=simulated(*AMPERE_CUDA12))["torchy"]
    assert set(chosen.rejected) == {"cu130", "cu126legacy"}
    assert "needs nvidia :: cuda_version_lower_bound :: 13.0" in chosen.rejected["cu130"]
    assert "machine has 12.8" in chosen.rejected["cu130"]
    assert "sm_arch one of 50_real, 60_real" in chosen.rejected["cu126legacy"]


@pytest.mark.parametrize(
    ("cpu", "label"), [("linux-rhel7-haswell", "x86_64_v3"), ("linux-scientific7-k10", None)]
)
def test_simulated_cpu_levels(cpu: str, label: str | None) -> None:
    chosen = run(levels(Index()), "simdy", machine=simulated(cpu=cpu))["simdy"]
    assert chosen.label == label
    if label is None:
        assert str(chosen.file) == "simdy-1.0-cp312-cp312-manylinux_2_17_x86_64.whl"
        assert set(chosen.rejected) == {"x86_64_v2", "x86_64_v3", "x86_64_v4"}
    else:
        assert chosen.won_by == VariantProperty("x86_64", "level", "v3")


def test_dependency_that_is_a_variant_package() -> None:
    index = torchy(Index().add("app", "1.0", ["torchy>=1"]))
    result = run(index, "app", machine=simulated(*HOPPER_CUDA13))
    assert [p.name for p in result] == ["filelike", "torchy", "app"]
    assert result["torchy"].label == "cu130"
    assert result["app"].label is None


def test_dependency_gated_by_a_variant_marker() -> None:
    gated = [
        'fast-gemm; "nvidia :: sm_arch :: 120_real" in variant_properties',
        'generic-gemm; "nvidia :: sm_arch :: 120_real" not in variant_properties',
        'gpu-runtime; variant_label != "null" and "nvidia" in variant_namespaces',
    ]
    index = torchy(Index())
    index.releases.pop("torchy")
    files = [f"torchy-1.0-cp312-cp312-manylinux_2_17_x86_64-{x}.whl" for x in TORCHY_LABELS]
    index.add("torchy", "1.0", gated, files=files, metadata=TORCHY_META)
    for extra in ("fast-gemm", "generic-gemm", "gpu-runtime"):
        index.add(extra, "1.0")
    blackwell = run(index, "torchy", machine=simulated("12.8", "12.0"))
    assert blackwell["torchy"].label == "cu128"
    assert set(versions(blackwell)) == {"torchy", "fast-gemm", "gpu-runtime"}
    # The same wheel lists 120_real, but this machine only supports 90_real of it.
    hopper = run(index, "torchy", machine=simulated("12.8", "9.0"))
    assert hopper["torchy"].label == "cu128"
    assert set(versions(hopper)) == {"torchy", "generic-gemm", "gpu-runtime"}
    cpu_only = run(index, "torchy", machine=simulated(*NO_GPU))
    assert set(versions(cpu_only)) == {"torchy", "generic-gemm"}


def test_variant_marker_of_a_non_variant_wheel() -> None:
    index = Index().add(
        "foo", "1.0", ['plain-extra; variant_label == ""', 'x; variant_label == "a"']
    )
    index.add("plain-extra", "1.0")
    assert set(versions(run(index, "foo"))) == {"foo", "plain-extra"}


def test_no_variant() -> None:
    index = torchy(Index(), plain=True)
    chosen = run(index, "torchy", machine=simulated(*AMPERE_CUDA12), no_variant=True)["torchy"]
    assert chosen.label is None
    assert str(chosen.file) == "torchy-1.0-cp312-cp312-manylinux_2_17_x86_64.whl"
    assert index.metadata_calls == []
    with pytest.raises(NoCompatibleWheel, match="variant wheels are disabled"):
        run(torchy(Index()), "torchy", no_variant=True)


def test_non_variant_wheel_comes_after_compatible_variants() -> None:
    index = torchy(Index(), plain=True)
    assert run(index, "torchy", machine=simulated(*PASCAL))["torchy"].label == "cu126legacy"
    only_plain = Index().add(
        "torchy",
        "1.0",
        files=[
            "torchy-1.0-cp312-cp312-manylinux_2_17_x86_64-cu130.whl",
            "torchy-1.0-cp312-cp312-manylinux_2_17_x86_64.whl",
        ],
        metadata=TORCHY_META,
    )
    chosen = run(only_plain, "torchy", machine=simulated(*AMPERE_CUDA12))["torchy"]
    assert chosen.label is None
    assert set(chosen.rejected) == {"cu130", "cu126legacy"}


def test_metadata_is_read_only_for_releases_with_variant_wheels() -> None:
    index = Index().add("foo", "1.0", metadata=TORCHY_META)
    run(index, "foo")
    assert index.metadata_calls == []
    run(torchy(index), "torchy")
    assert index.metadata_calls == ["1.0"]


def test_variant_wheels_without_metadata() -> None:
    files = ["foo-1.0-py3-none-any-cu128.whl", "foo-1.0-py3-none-any.whl"]
    index = Index().add("foo", "1.0", files=files)
    assert run(index, "foo")["foo"].label is None
    index = Index().add("foo", "1.0", files=files[:1])
    with pytest.raises(NoCompatibleWheel, match="no variant metadata"):
        run(index, "foo")


def test_no_supported_variant_error_shows_the_machine() -> None:
    files = [f"torchy-1.0-cp312-cp312-manylinux_2_17_x86_64-{x}.whl" for x in ("cu130", "cu128")]
    index = Index().add("torchy", "1.0", files=files, metadata=TORCHY_META)
    with pytest.raises(NoCompatibleWheel) as info:
        run(index, "torchy", machine=simulated(*PASCAL))
    message = str(info.value)
    assert "no variant wheel is supported by this machine" in message
    assert "cu130: needs nvidia :: cuda_version_lower_bound :: 13.0" in message
    assert "machine supports nvidia :: cuda_version_lower_bound :: 12.8, 12.7" in message
    assert "sm_arch :: 61_real, 60_real" in message


def test_variant_choice_valid() -> None:
    index = torchy(Index())
    chosen = run(
        index, "torchy", machine=simulated(*AMPERE_CUDA12), variant_choice={"TorChy": "cu126"}
    )["torchy"]
    assert chosen.label == "cu126"
    assert str(chosen.won_by) == "nvidia :: cuda_version_lower_bound :: 12.6"


def test_variant_choice_incompatible() -> None:
    with pytest.raises(VariantChoiceError) as info:
        run(
            torchy(Index()),
            "torchy",
            machine=simulated(*AMPERE_CUDA12),
            variant_choice={"torchy": "cu130"},
        )
    message = str(info.value)
    assert (info.value.name, info.value.label) == ("torchy", "cu130")
    assert "variant 'cu130' of torchy 1.0 is not supported by this machine" in message
    assert "needs nvidia :: cuda_version_lower_bound :: 13.0; machine has 12.8" in message
    assert "machine supports nvidia :: cuda_version_lower_bound :: 12.8, 12.7" in message
    assert "nvidia :: sm_arch :: 86_real" in message


def test_variant_choice_unknown() -> None:
    with pytest.raises(VariantChoiceError) as info:
        run(torchy(Index()), "torchy", variant_choice={"torchy": "rocm7"})
    message = str(info.value)
    assert "variant 'rocm7' was asked for, but torchy 1.0 has no such variant" in message
    assert "variants: cu126, cu126legacy, cu128, cu130, null" in message


def test_variant_choice_falls_back_to_a_release_that_has_it() -> None:
    index = torchy(Index(), "2.0")
    index.add(
        "torchy",
        "1.0",
        files=["torchy-1.0-cp312-cp312-manylinux_2_17_x86_64-old.whl"],
        metadata=VariantMetadata.build(["nvidia"], {"old": {}}),
    )
    result = run(index, "torchy", variant_choice={"torchy": "old"})
    assert (str(result["torchy"].version), result["torchy"].label) == ("1.0", "old")


def test_older_releases_are_not_looked_at_when_the_newest_fits() -> None:
    index = torchy(torchy(Index(), "2.0"), "1.0")
    result = run(index, "torchy", machine=simulated(*AMPERE_CUDA12))
    assert str(result["torchy"].version) == "2.0"
    assert index.metadata_calls == ["2.0"]


class _HintedIndex(Index):
    def __init__(self) -> None:
        super().__init__()
        self.hints: list[str] = []
        self.ranges: dict[str, str] = {}

    def will_ask(self, wants: Iterable[tuple[str, SpecifierSet]]) -> None:
        for name, specifier in wants:
            self.hints.append(name)
            self.ranges[name] = str(specifier)

    def will_read(self, files: Iterable[WheelFile]) -> None:
        pass

    def pinned(self, file: WheelFile) -> None:
        pass


def test_resolver_hints_the_projects_it_will_need() -> None:
    """Roots first, then each pinned candidate's dependencies that apply to the
    target; a dependency excluded by its marker is not hinted."""
    index = _HintedIndex()
    index.add(
        "app", "1.0", ["lib>=1", 'winonly; sys_platform == "win32"', "extra-only; extra == 'x'"]
    )
    index.add("lib", "1.0", ["base"]).add("base", "2.0")
    assert versions(run(index, "app", hints=index)) == {"base": "2.0", "lib": "1.0", "app": "1.0"}
    assert index.hints[0] == "app"
    assert "lib" in index.hints
    assert "base" in index.hints
    assert "winonly" not in index.hints
    assert "extra-only" not in index.hints
    assert index.ranges["lib"] == ">=1"  # with the range, for the metadata to warm


@dataclass
class _LookingAhead(Index):
    """An Index that records the resolver's hints of wheels to read next."""

    hinted: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    early: list[str] = field(default_factory=list)

    def will_ask(self, wants: Iterable[tuple[str, SpecifierSet]]) -> None:
        pass

    def will_read(self, files: Iterable[WheelFile]) -> None:
        self.hinted.extend(str(file) for file in files)

    def pinned(self, file: WheelFile) -> None:
        self.early.append(str(file))

    def dependencies(self, file: WheelFile) -> list[str]:
        self.read.append(str(file))
        return super().dependencies(file)


def test_working_back_through_releases_hints_the_next_ones() -> None:
    """boto3 and botocore: each newer app needs a newer dep than allowed, so the
    resolver reads app's releases one by one; it says which it will read next."""
    index = _LookingAhead()
    for n in range(1, 41):
        index.add("app", f"1.{n}", [f"dep=={n}"]).add("dep", str(n))
    result = run(index, "dep<5", "app", hints=index)
    assert versions(result) == {"app": "1.4", "dep": "4"}
    read = [name for name in index.read if name.startswith("app-")]
    assert read[:2] == ["app-1.40-py3-none-any.whl", "app-1.39-py3-none-any.whl"]
    # Every app wheel read after the first was hinted before it was read.
    assert all(name in index.hinted for name in read[1:])
    assert "app-1.40-py3-none-any.whl" not in index.hinted
    # Hints stop where the releases do, and name each wheel once.
    assert len(index.hinted) == len(set(index.hinted))
    # Only the first pin of app may start a download: the others are mostly given up.
    assert [name for name in index.early if name.startswith("app-")] == [
        "app-1.40-py3-none-any.whl"
    ]


def test_no_hints_when_the_first_candidate_stands() -> None:
    index = _LookingAhead()
    index.add("app", "1.0", ["dep"]).add("app", "0.9").add("dep", "1")
    assert versions(run(index, "app", hints=index)) == {"app": "1.0", "dep": "1"}
    assert index.hinted == []
    assert index.early == ["app-1.0-py3-none-any.whl", "dep-1-py3-none-any.whl"]


def test_no_release_in_range_lists_the_newest_versions_only() -> None:
    index = Index()
    for n in range(25):
        index.add("foo", f"1.{n}")
    with pytest.raises(PackageNotFound) as info:
        run(index, "foo>=2")
    newest = ", ".join(f"1.{n}" for n in range(24, 14, -1))
    assert str(info.value).endswith(f"available: {newest} and 15 older")


def test_no_compatible_wheel_error_stays_short_for_many_releases() -> None:
    """Forty releases without a wheel for this machine: the newest named, once per
    reason, never every release (a line, not a page)."""
    index = Index()
    for minor in range(40):
        index.add("foo", f"0.{minor}", files=[f"foo-0.{minor}-cp313-cp313-win_amd64.whl"])
    index.add("foo", "0.40", files=[])
    with pytest.raises(NoCompatibleWheel) as info:
        run(index, "foo")
    message = str(info.value)
    assert len(message) < 600, message
    assert "foo 0.40: no wheels" in message
    assert "foo 0.39, 0.38, 0.37 and 37 older: wheels have tags cp313-cp313-win_amd64" in message
    assert "0.12" not in message
    assert len(info.value.reasons) == 41


def test_a_release_passed_over_for_a_source_only_dependency_is_told() -> None:
    """hydra-core's case: its newer releases need a dependency published as source
    only; where it is not built (a finder that takes wheels only, as ``lock``'s, or
    ``--only-binary``), an older release is taken, and the notes say which and why."""
    index = Index().add("app", "2.0", ["dep==2.0"]).add("app", "1.0", ["dep==1.0"])
    index.add("dep", "1.0")
    index.sdists["dep"] = ["2.0"]
    result = run(index, "app")
    assert versions(result) == {"app": "1.0", "dep": "1.0"}
    assert result.notes == (
        "app 2.0 was passed over: it needs dep==2.0, and dep has source distributions only "
        "there (newest 2.0): this command takes wheels only: build one (`pip wheel --no-deps "
        "dep==2.0 -w wheels`), then pass --find-links wheels; app 1.0 is installed",
    )
    # Not when the newer release is passed over for another reason.
    index = Index().add("app", "2.0", ["dep==3.0"]).add("app", "1.0", ["dep==1.0"])
    index.add("dep", "1.0")
    assert run(index, "app").notes == ()


# -- an installed build kept -----------------------------------------------------------


def _kept_index(v2_requires: list[str]) -> Index:
    """simdy 1.0 in x86_64_v2, v3 and v4 builds (v2's with *v2_requires*), other 1.0
    and 2.0."""
    name = "simdy-1.0-cp312-cp312-manylinux_2_17_x86_64-x86_64_{}.whl"
    files = [name.format(v) for v in ("v2", "v3", "v4")]
    index = Index().add(
        "simdy", "1.0", files=files, metadata=LEVELS_META, per_file={files[0]: v2_requires}
    )
    return index.add("other", "1.0").add("other", "2.0")


def _kept(*requirements: str, v2_requires: list[str], **options: object) -> Resolution:
    return run(
        _kept_index(v2_requires),
        *requirements,
        machine=simulated(cpu="linux-rhel7-haswell"),  # v3 is the machine's best
        installed={"simdy": "1.0"},
        installed_labels={"simdy": "x86_64_v2"},
        **options,
    )


def test_the_installed_build_is_tried_first() -> None:
    found = {str(p.name): p for p in _kept("simdy", "other", v2_requires=["other<2"])}
    assert (found["simdy"].label, found["simdy"].replaces_kept) == ("x86_64_v2", False)
    assert str(found["other"].version) == "1.0"  # the kept build's own requirement counts


def test_the_machines_best_build_when_the_kept_ones_requirements_conflict() -> None:
    found = {str(p.name): p for p in _kept("simdy", "other>=2", v2_requires=["other<2"])}
    assert (found["simdy"].label, found["simdy"].replaces_kept) == ("x86_64_v3", True)
    assert str(found["simdy"].version) == "1.0"


def test_an_extra_and_its_base_stay_on_one_build() -> None:
    """simdy[x] and simdy are two candidates: both move to v3 together when the v2
    build's extra conflicts, never v2 for one and v3 for the other."""
    found = {
        str(p.name): p for p in _kept("simdy[x]", "other>=2", v2_requires=['other<2; extra == "x"'])
    }
    assert (found["simdy"].label, found["simdy"].replaces_kept) == ("x86_64_v3", True)
    assert str(found["other"].version) == "2.0"


def test_upgrade_or_an_unknown_label_gives_the_machines_best() -> None:
    upgraded = {str(p.name): p for p in _kept("simdy", v2_requires=[], upgrade=True)}
    assert (upgraded["simdy"].label, upgraded["simdy"].replaces_kept) == ("x86_64_v3", False)
    unknown = run(
        _kept_index([]),
        "simdy",
        machine=simulated(cpu="linux-rhel7-haswell"),
        installed={"simdy": "1.0"},
        installed_labels={"simdy": "x86_64_v9"},
    )
    assert [(p.label, p.replaces_kept) for p in unknown] == [("x86_64_v3", False)]
