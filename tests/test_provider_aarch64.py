"""The built-in ``aarch64`` provider, on public /proc/cpuinfo and sysctl dumps.

The expected results were checked against the reference provider-variant-aarch64
(its get_supported_configs() logic with archspec 0.2.5, run on the same files).
Versions agree on every fixture. Feature sets differ by design: the reference
reports the feature list of the archspec *model* it matches, we report the CPU's own
hwcaps, so our sets are supersets of the reference's; every difference is listed
per fixture below and asserted, not ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from cpukit import CPUINFO, cpu_provider, features, write_dump
from wheelwise.providers import _cpu, aarch64
from wheelwise.providers.aarch64 import FEATURES, VERSIONS, AArch64Provider, version_of
from wheelwise.providers.base import Environment, ProviderUnavailable
from wheelwise.providers.runner import run_builtin


def provider_for(
    path: Path | str, machine: str | None = None, platform: str | None = None
) -> AArch64Provider:
    return cpu_provider(AArch64Provider, path, machine, platform)


def features_of(path: Path | str) -> dict[str, tuple[str, ...]]:
    return features(provider_for(path))


def versions_from(version: str) -> tuple[str, ...]:
    return VERSIONS[VERSIONS.index(version) :]


# fixture -> (version, the same for the reference; the reference's "on" features in
# its order; the features we report beyond the reference's).
#
# Why the extras: archspec's model lists omit hwcaps these machines have. Neoverse
# lists lack "ssbs" (Speculative Store Bypass Safe, N1 onwards), PAuth ("paca",
# "pacg": shown when the kernel supports pointer authentication, so the RHEL 8/9
# fixtures lack them), and N2/V2 lists lack "dgh", "dit" and "rng" where the kernel
# lists them. "cpuid" and "evtstrm" (Linux kernel services) are reported by both.
REFERENCE: dict[str, tuple[str, str, str]] = {
    "linux-amazon-cortex_a72": (
        "8a",
        "aes asimd cpuid crc32 evtstrm fp pmull sha1 sha2",
        "",
    ),
    "linux-centos7-thunderx2": (
        "8.1a",
        "aes asimd cpuid crc32 evtstrm fp pmull sha1 sha2",
        "",
    ),
    "linux-amazon-neoverse_n1": (
        "8.2a",
        "asimddp lrcpc asimdhp dcpop fphp aes asimd cpuid crc32 evtstrm fp pmull sha1 sha2",
        "ssbs",
    ),
    "linux-rocky8-a64fx": (
        "8.2a",
        "asimdhp dcpop fcma fphp sve asimd cpuid crc32 evtstrm fp sha1 sha2",
        "",
    ),
    "linux-amazon-neoverse_v1": (
        "8.4a",
        "asimdfhm bf16 dcpodp dgh dit flagm i8mm ilrcpc jscvt rng sha3 sha512 svebf16 "
        "svei8mm uscat asimddp lrcpc asimdhp dcpop fcma fphp sve aes asimd cpuid crc32 "
        "evtstrm fp pmull sha1 sha2",
        "paca pacg ssbs",
    ),
    "linux-rhel8-neoverse_v1": (
        "8.4a",
        "asimdfhm bf16 dcpodp dgh dit flagm i8mm ilrcpc jscvt rng sha3 sha512 svebf16 "
        "svei8mm uscat asimddp lrcpc asimdhp dcpop fcma fphp sve aes asimd cpuid crc32 "
        "evtstrm fp pmull sha1 sha2",
        "ssbs",
    ),
    "linux-asahi-m1": (
        "8.4a",
        "flagm2 frint sb paca pacg ssbs asimdfhm dcpodp dit flagm ilrcpc jscvt sha3 sha512 "
        "uscat asimddp lrcpc asimdhp dcpop fcma fphp aes asimd cpuid crc32 evtstrm fp pmull "
        "sha1 sha2",
        "",
    ),
    "linux-asahi-m2": (
        "8.5a",
        "flagm2 frint sb paca pacg ssbs asimdfhm bf16 dcpodp dit flagm i8mm ilrcpc jscvt "
        "sha3 sha512 uscat asimddp lrcpc asimdhp dcpop fcma fphp aes asimd cpuid crc32 "
        "evtstrm fp pmull sha1 sha2",
        "",
    ),
    "linux-rhel9-neoverse_n2": (
        "9.0a",
        "sve2 flagm2 frint sb asimdfhm bf16 dcpodp flagm i8mm ilrcpc jscvt sha3 sha512 "
        "svebf16 svei8mm uscat asimddp lrcpc asimdhp dcpop fcma fphp sve aes asimd cpuid "
        "crc32 evtstrm fp pmull sha1 sha2",
        "ssbs dgh dit",
    ),
    "linux-ubuntu22.04-neoverse_n2": (
        "9.0a",
        "sve2 flagm2 frint sb asimdfhm bf16 dcpodp flagm i8mm ilrcpc jscvt sha3 sha512 "
        "svebf16 svei8mm uscat asimddp lrcpc asimdhp dcpop fcma fphp sve aes asimd cpuid "
        "crc32 evtstrm fp pmull sha1 sha2",
        "paca pacg ssbs",
    ),
    "linux-rhel9-neoverse_v2": (
        "9.0a",
        "sve2 flagm2 frint sb asimdfhm bf16 dcpodp flagm i8mm ilrcpc jscvt sha3 sha512 "
        "svebf16 svei8mm uscat asimddp lrcpc asimdhp dcpop fcma fphp sve aes asimd cpuid "
        "crc32 evtstrm fp pmull sha1 sha2",
        "ssbs dgh dit",
    ),
    "linux-ubuntu22.04-neoverse_v2": (
        "9.0a",
        "sve2 flagm2 frint sb asimdfhm bf16 dcpodp flagm i8mm ilrcpc jscvt sha3 sha512 "
        "svebf16 svei8mm uscat asimddp lrcpc asimdhp dcpop fcma fphp sve aes asimd cpuid "
        "crc32 evtstrm fp pmull sha1 sha2",
        "paca pacg ssbs dgh dit",
    ),
    "linux-unknown-neoverse_v2": (
        "9.0a",
        "sve2 flagm2 frint sb asimdfhm bf16 dcpodp flagm i8mm ilrcpc jscvt sha3 sha512 "
        "svebf16 svei8mm uscat asimddp lrcpc asimdhp dcpop fcma fphp sve aes asimd cpuid "
        "crc32 evtstrm fp pmull sha1 sha2",
        "paca pacg ssbs dgh dit rng",
    ),
}

X86_DUMPS = ("linux-rhel7-haswell", "linux-scientific7-k10", "darwin-mojave-ivybridge")


def test_all_configs_match_the_reference_vocabulary() -> None:
    configs = AArch64Provider(Environment({})).get_all_configs()
    assert configs[0].name == "version"
    assert configs[0].values == ("9.0a", "8.5a", "8.4a", "8.3a", "8.2a", "8.1a", "8a")
    names = [config.name for config in configs[1:]]
    assert len(names) == 40
    assert tuple(names) == FEATURES
    assert names[:5] == ["sve2", "flagm2", "frint", "sb", "btiecv"]
    assert "asimdrdmatomics" in names  # the reference's missing comma, kept
    assert names[-1] == "sha2"
    assert all(config.values == ("on",) for config in configs[1:])
    assert not any(config.multi_value for config in configs)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_fixture_matches_reference(name: str) -> None:
    version, reference, extra = REFERENCE[name]
    features = features_of(CPUINFO / name)
    assert features["version"] == versions_from(version)
    ours = [feature for feature in features if feature != "version"]
    assert all(features[feature] == ("on",) for feature in ours)
    assert not set(reference.split()) & set(extra.split())
    expected = set(reference.split()) | set(extra.split())
    # Same features as the reference plus the documented extras, in the reference order.
    assert ours == [feature for feature in FEATURES if feature in expected]


def test_detail_and_source() -> None:
    path = CPUINFO / "linux-amazon-neoverse_n1"
    report = run_builtin(provider_for(path))
    assert report.source == str(path)
    assert report.detail == "Armv8.2-A (Arm part 0xd0c, 1 processor)"
    report = run_builtin(provider_for(CPUINFO / "linux-rocky8-a64fx"))
    assert report.detail == "Armv8.2-A (Fujitsu part 0x001, 1 processor)"


# The version rules ---------------------------------------------------------------------

BASE_8_0 = {"fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "cpuid"}
UP_TO_8_1 = BASE_8_0 | {"crc32", "atomics", "asimdrdm"}
UP_TO_8_2 = UP_TO_8_1 | {"dcpop", "fphp", "asimdhp"}
UP_TO_8_3 = UP_TO_8_2 | {"jscvt", "fcma", "lrcpc"}
UP_TO_8_4 = UP_TO_8_3 | {"uscat", "ilrcpc", "flagm", "asimddp", "asimdfhm", "dit"}
UP_TO_8_5 = UP_TO_8_4 | {"flagm2", "frint", "sb", "dcpodp", "bti"}


@pytest.mark.parametrize(
    ("caps", "version"),
    [
        (BASE_8_0, "8a"),
        (BASE_8_0 | {"crc32", "atomics"}, "8a"),  # no RDM
        (UP_TO_8_1, "8.1a"),
        (UP_TO_8_1 - {"crc32"}, "8a"),  # CRC32 is mandatory from 8.1
        (UP_TO_8_2, "8.2a"),
        (UP_TO_8_2 - {"fphp", "asimdhp"}, "8.2a"),  # FP16 is optional
        (UP_TO_8_3, "8.3a"),
        (UP_TO_8_3 - {"lrcpc"}, "8.2a"),
        (UP_TO_8_4, "8.4a"),
        (UP_TO_8_4 - {"dit"}, "8.4a"),  # DIT is not required (hidden by hypervisors)
        (UP_TO_8_4 - {"asimdfhm"}, "8.3a"),  # FHM is mandatory with FP16 ...
        (UP_TO_8_4 - {"asimdfhm", "fphp", "asimdhp"}, "8.4a"),  # ... and only then
        (UP_TO_8_4 - {"uscat"}, "8.3a"),
        (UP_TO_8_4 - {"asimddp"}, "8.3a"),
        (UP_TO_8_5, "8.5a"),
        (UP_TO_8_5 - {"bti"}, "8.4a"),  # Apple M1: all of 8.5 but BTI
        (UP_TO_8_5 - {"dcpodp"}, "8.4a"),
        (UP_TO_8_5 | {"sve", "sve2"}, "9.0a"),
        (UP_TO_8_5 - {"bti"} | {"sve", "sve2"}, "9.0a"),  # SVE2 implies Armv9 (BTI)
        (UP_TO_8_4 | {"sve", "sve2"}, "8.4a"),  # but not the rest of 8.5
        (BASE_8_0 | {"sve2"}, "8a"),  # versions are cumulative
    ],
)
def test_version_rules(caps: set[str], version: str) -> None:
    assert version_of(frozenset(caps)) == version


def block(fixture: str, processor: int, drop: Sequence[str] = (), add: str = "") -> str:
    """The fixture's processor block, renumbered, with hwcaps removed or added."""
    text = (CPUINFO / fixture).read_text(encoding="utf-8").strip()
    lines = []
    for line in text.splitlines():
        key = line.split(":", 1)[0].strip()
        if key == "processor":
            line = f"processor\t: {processor}"
        elif key == "Features":
            caps = [cap for cap in line.split(":", 1)[1].split() if cap not in drop]
            line = "Features\t: " + " ".join([*caps, *add.split()])
        lines.append(line)
    return "\n".join(lines) + "\n\n"


def test_heterogeneous_processors_use_the_common_features(tmp_path: Path) -> None:
    # A big.LITTLE-style dump: the second core lacks SVE2 and I8MM.
    text = block("linux-rhel9-neoverse_v2", 0) + block(
        "linux-rhel9-neoverse_v2", 1, drop=("sve2", "i8mm", "svei8mm")
    )
    report = run_builtin(provider_for(write_dump(tmp_path, text)))
    assert report.status == "ok"
    # Without SVE2, the hidden BTI is no longer implied: 8.4a.
    assert report.features["version"] == versions_from("8.4a")
    for cap in ("sve2", "i8mm", "svei8mm"):
        assert cap not in report.features
    assert report.features["sve"] == ("on",)
    assert "2 processors" in report.detail
    assert "features differ between processors" in report.detail


def test_undetectable_names_are_never_reported(tmp_path: Path) -> None:
    # Even a dump that spells them out: no kernel reports these joined names.
    text = block("linux-asahi-m2", 0, add="btiecv asimdrdmatomics")
    features = features_of(write_dump(tmp_path, text))
    assert "btiecv" not in features
    assert "asimdrdmatomics" not in features
    assert features["version"] == versions_from("8.5a")


@pytest.mark.parametrize("machine", ["x86_64", "AMD64", "armv7l", "armv8l", "ppc64le"])
def test_other_machines_are_unavailable(machine: str) -> None:
    provider = AArch64Provider(Environment({}), machine=machine)
    with pytest.raises(ProviderUnavailable) as caught:
        provider.probe()
    assert str(caught.value) == f"not an AArch64 CPU (machine is {machine})"
    assert caught.value.source == "platform.machine()"
    report = run_builtin(provider)
    assert report.status == "unavailable"
    assert report.features == {}


@pytest.mark.parametrize("machine", ["aarch64", "arm64", "ARM64"])
def test_aarch64_machine_names(machine: str) -> None:
    path = str(CPUINFO / "linux-amazon-neoverse_n1")
    provider = AArch64Provider(
        Environment({}), machine=machine, platform="linux", cpuinfo_path=path
    )
    report = run_builtin(provider)
    assert report.status == "ok"
    assert report.source == path
    assert report.features["version"] == versions_from("8.2a")


def test_missing_proc_cpuinfo_is_unavailable(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-cpuinfo")
    provider = AArch64Provider(
        Environment({}), machine="aarch64", platform="linux", cpuinfo_path=missing
    )
    report = run_builtin(provider)
    assert report.status == "unavailable"
    assert report.detail.startswith(f"cannot read {missing}")


@pytest.mark.parametrize(
    "content",
    [b"", b"\x00\xff\xfe garbage \x80\x81\n\x00", b"processor : 0\nBogoMIPS : 50.00\n"],
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


def test_32_bit_view_is_unavailable(tmp_path: Path) -> None:
    # What a 32-bit process sees on an arm64 kernel.
    text = (
        "processor\t: 0\nmodel name\t: ARMv8 Processor rev 1 (v8l)\nBogoMIPS\t: 50.00\n"
        "Features\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt lpae "
        "evtstrm aes pmull sha1 sha2 crc32\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
    )
    report = run_builtin(provider_for(write_dump(tmp_path, text)))
    assert report.status == "unavailable"
    assert "32-bit ARM view" in report.detail


@pytest.mark.parametrize("name", [*X86_DUMPS, "linux-rhel8-power9", "windows-cpuid-broadwell"])
def test_dumps_of_other_cpus_are_unavailable(name: str) -> None:
    # The override bypasses the machine check, so the dump itself must say AArch64.
    report = run_builtin(provider_for(CPUINFO / name))
    assert report.status == "unavailable"
    assert "describes no AArch64 CPU" in report.detail


def test_override_simulates_aarch64_on_any_machine() -> None:
    provider = provider_for(CPUINFO / "linux-rhel9-neoverse_v2", machine="x86_64")
    assert run_builtin(provider).features["version"] == versions_from("9.0a")


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_supported_is_a_subset_of_all(name: str) -> None:
    provider = provider_for(CPUINFO / name)
    report = run_builtin(provider)
    assert report.status == "ok"
    everything = {config.name: set(config.values) for config in provider.get_all_configs()}
    for feature, values in report.features.items():
        assert set(values) <= everything[feature]


# macOS -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "version", "linux_twin"),
    [
        ("darwin-monterey-m1", "8.4a", "linux-asahi-m1"),
        ("darwin-monterey-m2", "8.5a", "linux-asahi-m2"),
    ],
)
def test_darwin_dumps_agree_with_linux_on_the_same_chip(
    name: str, version: str, linux_twin: str
) -> None:
    darwin = features_of(CPUINFO / name)
    linux = features_of(CPUINFO / linux_twin)
    assert darwin["version"] == linux["version"] == versions_from(version)
    # "cpuid" and "evtstrm" are Linux kernel services; macOS 12 has no FEAT_DIT key.
    assert list(darwin) == [f for f in linux if f not in ("cpuid", "evtstrm", "dit")]


def test_darwin_big_sur_has_only_the_old_keys() -> None:
    report = run_builtin(provider_for(CPUINFO / "darwin-bigsur-m1"))
    assert report.status == "ok"
    # No hw.optional.arm.FEAT_* keys: RDM, DPB, JSCVT, ... are unknown, so only 8a is
    # shown (an M1 is 8.4a; see the Monterey dump).
    assert report.features["version"] == ("8a",)
    assert "macOS 11" in report.detail
    for cap in ("fp", "asimd", "crc32", "fphp", "asimdhp", "sha3", "sha512", "asimdfhm"):
        assert report.features[cap] == ("on",)


def test_live_macos_path_asks_sysctl() -> None:
    asked: list[Sequence[str]] = []
    text = (CPUINFO / "darwin-monterey-m2").read_text(encoding="utf-8")

    def sysctl(names: Sequence[str]) -> str:
        asked.append(names)
        return text

    provider = AArch64Provider(Environment({}), machine="arm64", platform="darwin", sysctl=sysctl)
    report = run_builtin(provider)
    assert report.status == "ok"
    assert report.source == "sysctl hw.optional"
    assert report.detail == "Armv8.5-A (Apple M2, 8 processors)"
    assert report.features["version"] == versions_from("8.5a")
    assert asked == [("hw.optional", "machdep.cpu.brand_string", "hw.logicalcpu")]
    assert len(asked) == 1


def test_sysctl_failure_is_unavailable() -> None:
    def sysctl(names: Sequence[str]) -> str:
        raise ProviderUnavailable("cannot run sysctl: [Errno 2] No such file", "sysctl")

    provider = AArch64Provider(Environment({}), machine="arm64", platform="darwin", sysctl=sysctl)
    report = run_builtin(provider)
    assert report.status == "unavailable"
    assert report.source == "sysctl"


def test_windows_is_unavailable_with_a_way_out() -> None:
    provider = AArch64Provider(Environment({}), machine="ARM64", platform="win32")
    report = run_builtin(provider)
    assert report.status == "unavailable"
    assert "not implemented on Windows" in report.detail
    assert "WHEELWISE_CPUINFO" in report.detail
    assert "--system FILE" in report.detail


def test_this_machine() -> None:
    report = run_builtin(AArch64Provider(Environment({})))
    machine = _cpu.machine_name().lower()
    if machine not in aarch64.AARCH64_MACHINES or _cpu.host_platform() == "win32":
        assert report.status == "unavailable"
        return
    assert report.status == "ok", report.detail
    assert report.features["version"][-1] == "8a"
