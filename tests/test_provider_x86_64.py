"""The built-in ``x86_64`` provider, on public /proc/cpuinfo and sysctl dumps.

The expected results were checked against the reference provider-variant-x86-64
(its get_supported_configs() logic with archspec 0.2.5, run on the same files).
Levels agree everywhere except on a v1-only CPU. Feature sets differ by design: the
reference reports the feature list of the archspec *model* it matches, we report
the CPU's own flags, so our sets are supersets of the reference's; every difference
is listed per fixture below and asserted, not ignored.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from cpukit import CPUINFO, cpu_provider, features, write_dump
from wheelwise.providers import _cpu, x86_64
from wheelwise.providers.base import Environment, ProviderUnavailable
from wheelwise.providers.runner import run_builtin
from wheelwise.providers.x86_64 import EXTENSIONS, LEVELS, X86_64Provider


def provider_for(
    path: Path | str, machine: str | None = None, platform: str | None = None
) -> X86_64Provider:
    return cpu_provider(X86_64Provider, path, machine, platform)


def features_of(path: Path | str) -> dict[str, tuple[str, ...]]:
    return features(provider_for(path))


def levels_from(level: str) -> tuple[str, ...]:
    return LEVELS[LEVELS.index(level) :]


# fixture -> (our level; the reference's level and "on" features, in its order; the
# features we report beyond the reference's).
#
# Why the extras, by kind:
# * psABI flags that archspec's model lists leave out: Intel models lack abm (LZCNT),
#   cx16, lahf_lm and xsave; AMD Bulldozer-family models lack popcnt, lahf_lm and
#   xsave; Zen models lack lahf_lm and xsave. The CPUs have them (the reference still
#   reports the right level, from archspec's generic targets).
# * Extensions the CPU has that its archspec model list omits: fsgsbase, tsc_adjust,
#   xsaveopt (pre-Skylake Intel), rdrand/adx/sha_ni/rdpid (Zen family), avx_vnni
#   (Sapphire Rapids), rdrand/pclmulqdq (the generic-v3 case).
# * flush_l1d and ibrs_enhanced depend on microcode and kernel as well as the model;
#   we report what this machine's kernel says.
# * k10 is v1-only: the reference reports nothing at all there (archspec names the
#   level-1 target "x86_64", not "x86_64_v1"), we report level v1 and its flags.
REFERENCE: dict[str, tuple[str, str | None, str, str]] = {
    "linux-scientific7-k10": (
        "v1",
        None,
        "",
        "abm sse4a sse3 cx16 lahf_lm popcnt sse2 sse mmx",
    ),
    "linux-rhel6-piledriver": (
        "v2",
        "v2",
        "avx bmi1 abm f16c fma aes pclmulqdq sse4a sse4_2 sse4_1 ssse3 sse3 cx16 sse2 sse mmx",
        "xsave lahf_lm popcnt",
    ),
    "linux-scientific7-piledriver": (
        "v2",
        "v2",
        "avx bmi1 abm f16c fma aes pclmulqdq sse4a sse4_2 sse4_1 ssse3 sse3 cx16 sse2 sse mmx",
        "xsave lahf_lm popcnt",
    ),
    "linux-scientificfermi6-piledriver": (
        "v2",
        "v2",
        "avx bmi1 abm f16c fma aes pclmulqdq sse4a sse4_2 sse4_1 ssse3 sse3 cx16 sse2 sse mmx",
        "xsave lahf_lm popcnt",
    ),
    "linux-scientificfermi6-bulldozer": (
        "v2",
        "v2",
        "avx abm aes pclmulqdq sse4a sse4_2 sse4_1 ssse3 sse3 cx16 sse2 sse mmx",
        "xsave lahf_lm popcnt",
    ),
    "linux-rhel7-ivybridge": (
        "v2",
        "v2",
        "avx f16c rdrand aes pclmulqdq sse4_2 sse4_1 ssse3 sse3 popcnt sse2 sse mmx",
        "xsaveopt xsave fsgsbase cx16 lahf_lm",
    ),
    "linux-rhel7-haswell": (
        "v3",
        "v3",
        "avx2 avx bmi2 bmi1 f16c fma movbe rdrand aes pclmulqdq sse4_2 sse4_1 ssse3 sse3 "
        "popcnt sse2 sse mmx",
        "tsc_adjust xsaveopt abm xsave fsgsbase cx16 lahf_lm",
    ),
    "linux-rhel7-x86_64_v3": (
        "v3",
        "v3",
        "avx2 avx bmi2 bmi1 abm f16c fma movbe xsave sse4_2 sse4_1 ssse3 sse3 cx16 lahf_lm "
        "popcnt sse2 sse mmx",
        "tsc_adjust xsaveopt rdrand pclmulqdq fsgsbase",
    ),
    "linux-rhel7-broadwell": (
        "v3",
        "v3",
        "rdseed adx avx2 avx bmi2 bmi1 f16c fma movbe rdrand aes pclmulqdq sse4_2 sse4_1 "
        "ssse3 sse3 popcnt sse2 sse mmx",
        "tsc_adjust xsaveopt abm xsave fsgsbase cx16 lahf_lm",
    ),
    "linux-ubuntu18.04-broadwell": (
        "v3",
        "v3",
        "rdseed adx avx2 avx bmi2 bmi1 f16c fma movbe rdrand aes pclmulqdq sse4_2 sse4_1 "
        "ssse3 sse3 popcnt sse2 sse mmx",
        "tsc_adjust flush_l1d xsaveopt abm xsave fsgsbase cx16 lahf_lm",
    ),
    "linux-rhel7-zen": (
        "v3",
        "v3",
        "clzero clflushopt rdseed xsavec xsaveopt avx2 avx bmi2 bmi1 abm f16c fma movbe aes "
        "pclmulqdq sse4a fsgsbase sse4_2 sse4_1 ssse3 sse3 cx16 popcnt sse2 sse mmx",
        "sha_ni adx xsave rdrand lahf_lm",
    ),
    "linux-ubuntu20.04-zen3": (
        "v3",
        "v3",
        "vaes vpclmulqdq clwb clzero clflushopt rdseed xsavec xsaveopt avx2 avx bmi2 bmi1 abm "
        "f16c fma movbe aes pclmulqdq sse4a fsgsbase sse4_2 sse4_1 ssse3 sse3 cx16 popcnt "
        "sse2 sse mmx",
        "rdpid sha_ni adx xsave rdrand lahf_lm",
    ),
    "linux-rhel7-skylake_avx512": (
        "v4",
        "v4",
        "clwb avx512bw avx512cd avx512dq avx512f avx512vl clflushopt rdseed xsavec xsaveopt "
        "adx avx2 avx bmi2 bmi1 f16c fma movbe rdrand aes pclmulqdq sse4_2 sse4_1 ssse3 sse3 "
        "popcnt sse2 sse mmx",
        "tsc_adjust abm xsave fsgsbase cx16 lahf_lm",
    ),
    "linux-centos7-cascadelake": (
        "v4",
        "v4",
        "avx512_vnni clwb avx512bw avx512cd avx512dq avx512f avx512vl clflushopt rdseed "
        "xsavec xsaveopt adx avx2 avx bmi2 bmi1 f16c fma movbe rdrand aes pclmulqdq sse4_2 "
        "sse4_1 ssse3 sse3 popcnt sse2 sse mmx",
        "ibrs_enhanced tsc_adjust flush_l1d abm xsave fsgsbase cx16 lahf_lm",
    ),
    "linux-unknown-sapphirerapids": (
        "v4",
        "v4",
        "movdir64b movdiri avx512_bf16 avx512_bitalg avx512_vbmi2 avx512_vnni "
        "avx512_vpopcntdq avx512ifma avx512vbmi rdpid sha_ni vaes vpclmulqdq clwb avx512bw "
        "avx512cd avx512dq avx512f avx512vl clflushopt gfni rdseed xsavec xsaveopt adx avx2 "
        "avx bmi2 bmi1 f16c fma movbe rdrand aes pclmulqdq sse4_2 sse4_1 ssse3 sse3 popcnt "
        "sse2 sse mmx",
        "avx_vnni ibrs_enhanced tsc_adjust flush_l1d abm xsave fsgsbase cx16 lahf_lm",
    ),
    "linux-rocky8.5-zen4": (
        "v4",
        "v4",
        "flush_l1d avx512_bf16 avx512_bitalg avx512_vbmi2 avx512_vnni avx512_vpopcntdq "
        "avx512ifma avx512vbmi vaes vpclmulqdq clwb clzero avx512bw avx512cd avx512dq avx512f "
        "avx512vl clflushopt gfni rdseed xsavec xsaveopt avx2 avx bmi2 bmi1 abm f16c fma movbe "
        "aes pclmulqdq sse4a fsgsbase sse4_2 sse4_1 ssse3 sse3 cx16 popcnt sse2 sse mmx",
        "rdpid sha_ni adx xsave rdrand lahf_lm",
    ),
    "linux-rocky9-zen5": (
        "v4",
        "v4",
        "avx_vnni cppc ibrs_enhanced tsc_adjust flush_l1d movdir64b movdiri avx512_bf16 "
        "avx512_bitalg avx512_vbmi2 avx512_vnni avx512_vp2intersect avx512_vpopcntdq "
        "avx512ifma avx512vbmi vaes vpclmulqdq clwb clzero avx512bw avx512cd avx512dq avx512f "
        "avx512vl clflushopt gfni rdseed xsavec xsaveopt avx2 avx bmi2 bmi1 abm f16c fma movbe "
        "aes pclmulqdq sse4a fsgsbase sse4_2 sse4_1 ssse3 sse3 cx16 popcnt sse2 sse mmx",
        "rdpid sha_ni adx xsave rdrand lahf_lm",
    ),
}

AARCH64_DUMPS = (
    "linux-amazon-cortex_a72",
    "linux-amazon-neoverse_n1",
    "linux-rhel9-neoverse_v2",
    "darwin-monterey-m1",
)


def test_all_configs_match_the_reference_vocabulary() -> None:
    configs = X86_64Provider(Environment({})).get_all_configs()
    assert configs[0].name == "level"
    assert configs[0].values == ("v4", "v3", "v2", "v1")
    names = [config.name for config in configs[1:]]
    assert len(names) == 56
    assert names[:3] == ["avx_vnni", "cppc", "ibrs_enhanced"]
    assert names[-6:] == ["cx16", "lahf_lm", "popcnt", "sse2", "sse", "mmx"]
    assert tuple(names) == EXTENSIONS
    assert all(config.values == ("on",) for config in configs[1:])
    assert not any(config.multi_value for config in configs)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_fixture_matches_reference(name: str) -> None:
    level, reference_level, reference, extra = REFERENCE[name]
    features = features_of(CPUINFO / name)
    assert features["level"] == levels_from(level)
    if reference_level is not None:
        assert reference_level == level  # levels agree by design
    ours = [feature for feature in features if feature != "level"]
    assert all(features[feature] == ("on",) for feature in ours)
    expected = set(reference.split()) | set(extra.split())
    assert not set(reference.split()) & set(extra.split())
    # Same features as the reference plus the documented extras, in the reference order.
    assert ours == [feature for feature in EXTENSIONS if feature in expected]


def test_sapphirerapids_on_aws() -> None:
    # Not in the reference run (a newer archspec-json file); the CPU's flags decide.
    features = features_of(CPUINFO / "linux-amazon2-sapphirerapids")
    assert features["level"] == ("v4", "v3", "v2", "v1")
    for feature in ("avx512_bf16", "avx512_vbmi2", "sha_ni", "movdir64b", "gfni", "sse3"):
        assert features[feature] == ("on",)
    assert "avx_vnni" not in features  # this 8488C's kernel does not list avx_vnni


def test_detail_and_source() -> None:
    path = CPUINFO / "linux-rhel7-haswell"
    report = run_builtin(provider_for(path))
    assert report.source == str(path)
    assert report.detail == "x86-64-v3 (Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz, 1 processor)"


def test_v1_only_cpu_reports_level_v1() -> None:
    report = run_builtin(provider_for(CPUINFO / "linux-scientific7-k10"))
    assert report.status == "ok"
    assert report.features["level"] == ("v1",)
    assert report.detail.startswith("x86-64-v1 (AMD Opteron(tm) Processor 6136")
    # K10 has SSE3 (cpuinfo "pni") and SSE4a but neither SSSE3 nor SSE4.1: not v2.
    assert "sse3" in report.features
    assert "ssse3" not in report.features


def haswell_block(processor: int, drop: Sequence[str] = (), mhz: str = "2500.000") -> str:
    """The haswell fixture's processor block, renumbered, with flags removed."""
    text = (CPUINFO / "linux-rhel7-haswell").read_text(encoding="utf-8").strip()
    lines = []
    for line in text.splitlines():
        key = line.split(":", 1)[0].strip()
        if key == "processor":
            line = f"processor\t: {processor}"
        elif key == "cpu MHz":
            line = f"cpu MHz\t\t: {mhz}"
        elif key == "flags":
            flags = [flag for flag in line.split(":", 1)[1].split() if flag not in drop]
            line = "flags\t\t: " + " ".join(flags)
        lines.append(line)
    return "\n".join(lines) + "\n\n"


def test_heterogeneous_processors_use_the_common_flags(tmp_path: Path) -> None:
    # Processor 1 lacks AVX2 and BMI2 (like an efficiency core that a VM masks).
    path = write_dump(tmp_path, haswell_block(0) + haswell_block(1, drop=("avx2", "bmi2")))
    report = run_builtin(provider_for(path))
    assert report.status == "ok"
    assert report.features["level"] == ("v2", "v1")
    assert "avx2" not in report.features
    assert "bmi2" not in report.features
    assert report.features["avx"] == ("on",)
    assert "2 processors" in report.detail
    assert "flags differ between processors" in report.detail


def test_syscall_flag_is_not_required(tmp_path: Path) -> None:
    # 32-bit views and some hypervisors hide "syscall"; x86-64 has it architecturally.
    path = write_dump(tmp_path, haswell_block(0, drop=("syscall",)))
    assert features_of(path)["level"] == ("v3", "v2", "v1")


@pytest.mark.parametrize(
    ("dropped", "level"),
    [
        ("pni", "v1"),  # SSE3 is spelled "pni" in cpuinfo
        ("lahf_lm", "v1"),
        ("cx16", "v1"),
        ("abm", "v2"),  # LZCNT
        ("movbe", "v2"),
        ("xsave", "v2"),  # stands for OSXSAVE
        ("fma", "v2"),
    ],
)
def test_each_level_flag_counts(tmp_path: Path, dropped: str, level: str) -> None:
    path = write_dump(tmp_path, haswell_block(0, drop=(dropped,)))
    features = features_of(path)
    assert features["level"] == levels_from(level)
    if dropped == "pni":
        assert "sse3" not in features


def test_avx512_needs_all_five_for_v4(tmp_path: Path) -> None:
    text = (CPUINFO / "linux-rhel7-skylake_avx512").read_text(encoding="utf-8")
    path = write_dump(tmp_path, text.replace(" avx512vl", ""))
    features = features_of(path)
    assert features["level"] == ("v3", "v2", "v1")
    assert features["avx512f"] == ("on",)


@pytest.mark.parametrize("machine", ["aarch64", "arm64", "ppc64le", "i686"])
def test_other_machines_are_unavailable(machine: str) -> None:
    provider = X86_64Provider(Environment({}), machine=machine)
    with pytest.raises(ProviderUnavailable) as caught:
        provider.probe()
    assert str(caught.value) == f"not an x86-64 CPU (machine is {machine})"
    assert caught.value.source == "platform.machine()"
    report = run_builtin(provider)
    assert report.status == "unavailable"
    assert report.detail == f"not an x86-64 CPU (machine is {machine})"
    assert report.features == {}


@pytest.mark.parametrize("machine", ["x86_64", "AMD64", "amd64", "x86-64"])
def test_x86_64_machine_names(machine: str) -> None:
    path = str(CPUINFO / "linux-rhel7-ivybridge")
    provider = X86_64Provider(Environment({}), machine=machine, platform="linux", cpuinfo_path=path)
    report = run_builtin(provider)
    assert report.status == "ok"
    assert report.source == path
    assert report.features["level"] == ("v2", "v1")


def test_missing_proc_cpuinfo_is_unavailable(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-cpuinfo")
    provider = X86_64Provider(
        Environment({}), machine="x86_64", platform="linux", cpuinfo_path=missing
    )
    report = run_builtin(provider)
    assert report.status == "unavailable"
    assert report.detail.startswith(f"cannot read {missing}")
    assert report.source == missing


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\xff\xfe garbage \x80\x81\n\x00",
        b"flags : nonsense words only\n",
        b"processor : 0\nvendor_id : GenuineIntel\n",
    ],
)
def test_garbage_dumps_are_unavailable(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "cpuinfo"
    path.write_bytes(content)
    report = run_builtin(provider_for(path))
    assert report.status == "unavailable"
    assert report.features == {}


def test_missing_override_file_and_directory_are_unavailable(tmp_path: Path) -> None:
    for path in (tmp_path / "missing", tmp_path):
        report = run_builtin(provider_for(path))
        assert report.status == "unavailable"
        assert report.detail.startswith(f"cannot read {path}")


def test_32_bit_cpu_is_unavailable(tmp_path: Path) -> None:
    path = write_dump(tmp_path, haswell_block(0, drop=("lm",)))
    report = run_builtin(provider_for(path))
    assert report.status == "unavailable"
    assert "no 'lm' (long mode) flag" in report.detail


def test_pre_sse2_cpu_is_unavailable(tmp_path: Path) -> None:
    path = write_dump(tmp_path, haswell_block(0, drop=("sse2",)))
    report = run_builtin(provider_for(path))
    assert report.status == "unavailable"
    assert report.detail.endswith("lacks sse2")


@pytest.mark.parametrize("name", [*AARCH64_DUMPS, "linux-rhel8-power9", "windows-cpuid-broadwell"])
def test_dumps_of_other_cpus_are_unavailable(name: str) -> None:
    # The override bypasses the machine check, so the dump itself must say x86.
    report = run_builtin(provider_for(CPUINFO / name))
    assert report.status == "unavailable"
    assert "describes no x86 CPU" in report.detail


def test_override_simulates_x86_on_any_machine() -> None:
    provider = provider_for(CPUINFO / "linux-rhel7-haswell", machine="aarch64", platform="win32")
    assert run_builtin(provider).features["level"] == ("v3", "v2", "v1")


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_supported_is_a_subset_of_all(name: str) -> None:
    provider = provider_for(CPUINFO / name)
    report = run_builtin(provider)
    assert report.status == "ok"
    everything = {config.name: set(config.values) for config in provider.get_all_configs()}
    for feature, values in report.features.items():
        assert set(values) <= everything[feature]


# macOS -------------------------------------------------------------------------------


def test_darwin_dump_with_extfeatures() -> None:
    report = run_builtin(provider_for(CPUINFO / "darwin-mojave-ivybridge"))
    assert report.status == "ok"
    assert report.detail == "x86-64-v2 (Intel(R) Core(TM) i5-3230M CPU @ 2.60GHz, 4 processors)"
    features = [feature for feature in report.features if feature != "level"]
    # The same CPU family as linux-rhel7-ivybridge, minus xsaveopt, which XNU does not
    # name.
    assert report.features["level"] == ("v2", "v1")
    assert features == [
        "flush_l1d",
        "avx",
        "f16c",
        "xsave",
        "rdrand",
        "aes",
        "pclmulqdq",
        "fsgsbase",
        "sse4_2",
        "sse4_1",
        "ssse3",
        "sse3",
        "cx16",
        "lahf_lm",
        "popcnt",
        "sse2",
        "sse",
        "mmx",
    ]


@pytest.mark.parametrize("name", ["darwin-mojave-haswell", "darwin-mojave-skylake"])
def test_darwin_dump_without_extfeatures_stays_at_v1(name: str) -> None:
    # These older dumps lack machdep.cpu.extfeatures (LAHF, LZCNT), so v2 cannot be
    # shown; the reference (archspec) reports v3 there because its model lists do not
    # require lahf_lm or abm. A live Mac is always asked for extfeatures.
    report = run_builtin(provider_for(CPUINFO / name))
    assert report.status == "ok"
    assert report.features["level"] == ("v1",)
    assert "LAHF and LZCNT count as absent" in report.detail
    for feature in ("avx2", "bmi1", "bmi2", "fma", "movbe", "f16c", "sse4_2", "sse3"):
        assert report.features[feature] == ("on",)
    assert "lahf_lm" not in report.features
    assert "abm" not in report.features


def darwin_haswell_with_extfeatures(translated: bool = False) -> str:
    text = (CPUINFO / "darwin-mojave-haswell").read_text(encoding="utf-8")
    text += "machdep.cpu.extfeatures: SYSCALL XD 1GBPAGE EM64T LAHF LZCNT PREFETCHW RDTSCP TSCI\n"
    text += "hw.logicalcpu: 8\n"
    if translated:
        text += "sysctl.proc_translated: 1\n"
    return text


def test_live_macos_path_asks_sysctl() -> None:
    asked: list[Sequence[str]] = []

    def sysctl(names: Sequence[str]) -> str:
        asked.append(names)
        return darwin_haswell_with_extfeatures()

    provider = X86_64Provider(Environment({}), machine="x86_64", platform="darwin", sysctl=sysctl)
    report = run_builtin(provider)
    assert report.status == "ok"
    assert report.source == "sysctl machdep.cpu"
    assert report.features["level"] == ("v3", "v2", "v1")
    assert report.features["abm"] == ("on",)
    assert report.features["lahf_lm"] == ("on",)
    assert report.detail == "x86-64-v3 (Intel(R) Core(TM) i7-4980HQ CPU @ 2.80GHz, 8 processors)"
    assert len(asked) == 1
    assert "machdep.cpu.extfeatures" in asked[0]
    assert "machdep.cpu.leaf7_features" in asked[0]
    assert len(asked) == 1


def test_rosetta_reports_what_sysctl_says() -> None:
    provider = X86_64Provider(
        Environment({}),
        machine="x86_64",
        platform="darwin",
        sysctl=lambda names: darwin_haswell_with_extfeatures(translated=True),
    )
    report = run_builtin(provider)
    assert report.features["level"] == ("v3", "v2", "v1")
    assert report.detail.endswith("; under Rosetta 2")


def test_darwin_xsave_needs_osxsave() -> None:
    text = darwin_haswell_with_extfeatures().replace(" OSXSAVE", "")
    provider = X86_64Provider(
        Environment({}), machine="x86_64", platform="darwin", sysctl=lambda names: text
    )
    report = run_builtin(provider)
    assert "xsave" not in report.features
    assert report.features["level"] == ("v2", "v1")


def test_sysctl_failure_is_unavailable() -> None:
    def sysctl(names: Sequence[str]) -> str:
        raise ProviderUnavailable("sysctl did not answer within 2 s", "sysctl")

    provider = X86_64Provider(Environment({}), machine="x86_64", platform="darwin", sysctl=sysctl)
    report = run_builtin(provider)
    assert report.status == "unavailable"
    assert report.detail == "sysctl did not answer within 2 s"


def test_real_sysctl_without_machdep_keys_is_unavailable() -> None:
    # Off macOS, sysctl (if any) knows no machdep.cpu.* keys: nothing to read, no error.
    provider = X86_64Provider(Environment({}), machine="x86_64", platform="darwin")
    report = run_builtin(provider)
    if sys.platform == "darwin" and report.status == "ok":
        pytest.skip("running on an x86-64 Mac")
    assert report.status == "unavailable"


# Windows and the real machine --------------------------------------------------------


def test_windows_is_unavailable_with_a_way_out() -> None:
    provider = X86_64Provider(Environment({}), machine="AMD64", platform="win32")
    report = run_builtin(provider)
    assert report.status == "unavailable"
    assert report.source == "Windows"
    assert "not implemented on Windows" in report.detail
    assert "WHEELWISE_CPUINFO" in report.detail
    assert "--system FILE" in report.detail


def test_this_machine() -> None:
    report = run_builtin(X86_64Provider(Environment({})))
    machine = _cpu.machine_name().lower()
    if machine not in x86_64.X86_64_MACHINES or sys.platform == "win32":
        assert report.status == "unavailable"
        return
    assert report.status == "ok", report.detail
    assert report.features["level"][-1] == "v1"
    assert report.features["sse2"] == ("on",)


def test_import_is_light() -> None:
    code = (
        "import sys; import wheelwise.providers.x86_64, wheelwise.providers.aarch64; "
        "print(' '.join(m for m in ('subprocess', 'platform', 'archspec', 'packaging', "
        "'ctypes', 'pathlib') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
