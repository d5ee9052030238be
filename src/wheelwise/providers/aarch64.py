"""The ``aarch64`` provider: the Arm architecture version and CPU features.

The vocabulary matches the reference ``provider-variant-aarch64`` so that published
wheels select correctly:

* ``version``: ``"9.0a"``, ``"8.5a"``, ... ``"8.1a"``, ``"8a"`` (single-value),
  reported as the detected version followed by every earlier one.
* one feature per extension, with the single value ``"on"``, named as the Linux
  kernel's hwcaps (the ``Features`` line of ``/proc/cpuinfo``).

Unlike the reference, which asks archspec for the closest *named* core and reports
that model's version and feature list, this provider reads the CPU's own hwcaps and
derives the version from the Arm architecture's feature requirements (see
:data:`VERSION_RULES`); an unknown core therefore gets its real version rather than
the ``8a`` fallback.

Detection: Linux (and anything else with ``/proc/cpuinfo``) reads the ``Features``
of every processor and keeps the hwcaps they share; macOS reads ``sysctl
hw.optional`` (``hw.optional.arm.FEAT_*``); Windows is not supported. The file named
by ``WHEELWISE_CPUINFO`` replaces all of this on any OS: a Linux ``/proc/cpuinfo``
dump or a macOS ``sysctl`` dump describes the machine to simulate.
"""

from __future__ import annotations

from collections.abc import Sequence

from wheelwise.providers import _cpu
from wheelwise.providers.base import (
    FeatureConfig,
    Probe,
    ProviderUnavailable,
)

VERSION = "version"
VERSIONS = ("9.0a", "8.5a", "8.4a", "8.3a", "8.2a", "8.1a", "8a")
ON = "on"

# The reference's features, in its order; all are Linux hwcap names except two.
# The reference wrote "bti" "ecv" and "asimdrdm" "atomics" without commas between
# them, and Python joined each pair into one string. "btiecv" and "asimdrdmatomics"
# are therefore part of the published vocabulary (kept, so that metadata naming them
# stays valid) but no kernel reports them: they can never be detected. "bti",
# "ecv", "asimdrdm" and "atomics" themselves are not in the vocabulary.
FEATURES = (
    "sve2",
    "flagm2",
    "frint",
    "sb",
    "btiecv",
    "paca",
    "pacg",
    "ssbs",
    "asimdfhm",
    "bf16",
    "dcpodp",
    "dgh",
    "dit",
    "flagm",
    "i8mm",
    "ilrcpc",
    "jscvt",
    "rng",
    "sha3",
    "sha512",
    "svebf16",
    "svei8mm",
    "uscat",
    "asimddp",
    "lrcpc",
    "asimdhp",
    "dcpop",
    "fcma",
    "fphp",
    "sve",
    "asimdrdmatomics",
    "aes",
    "asimd",
    "cpuid",
    "crc32",
    "evtstrm",
    "fp",
    "pmull",
    "sha1",
    "sha2",
)
UNDETECTABLE = frozenset({"btiecv", "asimdrdmatomics"})

# How the version follows from the hwcaps. Each Arm architecture version makes some
# features mandatory (Arm Architecture Reference Manual for A-profile, DDI 0487,
# chapter A2, "Armv8.x architecture extensions" and "Armv9.0 architecture
# extensions"); version N is reported when the hwcaps of the features that version
# and every earlier one make mandatory are all present. Mandatory features without a
# hwcap (PAN, VHE, RAS, ...) cannot be checked and are assumed to come with the rest.
#
# * 8.1a: FEAT_LSE "atomics", FEAT_RDM "asimdrdm", FEAT_CRC32 "crc32" (optional in
#   8.0, mandatory from 8.1).
# * 8.2a: FEAT_DPB "dcpop" (DC CVAP). FEAT_FP16 ("fphp"/"asimdhp") stays optional.
# * 8.3a: FEAT_JSCVT "jscvt", FEAT_FCMA "fcma", FEAT_LRCPC "lrcpc". FEAT_PAuth is
#   mandatory too but not required here: Linux shows "paca"/"pacg" only when built
#   with pointer authentication support (the RHEL 8 Neoverse V1 fixture lacks them on
#   a core that has PAuth), and its common instructions are NOPs in the hint space.
# * 8.4a: FEAT_LSE2 "uscat", FEAT_LRCPC2 "ilrcpc", FEAT_FlagM "flagm", FEAT_DotProd
#   "asimddp", and FEAT_FHM "asimdfhm" when FEAT_FP16 is implemented. FEAT_DIT is
#   mandatory too but not required: it is a PSTATE bit that compiled code never
#   relies on, and hypervisors hide it (the Ubuntu 22.04 Neoverse N2 fixture).
# * 8.5a: FEAT_FlagM2 "flagm2", FEAT_FRINTTS "frint", FEAT_SB "sb", FEAT_DPB2
#   "dcpodp" and FEAT_BTI "bti". BTI is what tells an 8.5 core from Apple M1, which
#   has the other four but is an Armv8.4 core (as LLVM's apple-m1 and archspec agree).
#   On an SVE2 core BTI is not required: kernels and hypervisors hide "bti" (the RHEL
#   9 and Ubuntu 22.04 Neoverse N2/V2 fixtures lack it), and SVE2 came with Armv9.0,
#   which includes all of Armv8.5 (BTI too).
# * 9.0a: FEAT_SVE2 "sve2" (what compilers assume for -march=armv9-a).
#
# "8a" needs nothing beyond being AArch64.
_FP16 = frozenset({"fphp", "asimdhp"})


def _has_8_1(caps: frozenset[str]) -> bool:
    return {"atomics", "asimdrdm", "crc32"} <= caps


def _has_8_2(caps: frozenset[str]) -> bool:
    return "dcpop" in caps


def _has_8_3(caps: frozenset[str]) -> bool:
    return {"jscvt", "fcma", "lrcpc"} <= caps


def _has_8_4(caps: frozenset[str]) -> bool:
    fhm_ok = "asimdfhm" in caps or not (_FP16 & caps)
    return {"uscat", "ilrcpc", "flagm", "asimddp"} <= caps and fhm_ok


def _has_8_5(caps: frozenset[str]) -> bool:
    bti_ok = "bti" in caps or "sve2" in caps
    return {"flagm2", "frint", "sb", "dcpodp"} <= caps and bti_ok


def _has_9_0(caps: frozenset[str]) -> bool:
    return "sve2" in caps


# From 8.1a up; each version also needs every rule before it.
VERSION_RULES = (
    ("8.1a", _has_8_1),
    ("8.2a", _has_8_2),
    ("8.3a", _has_8_3),
    ("8.4a", _has_8_4),
    ("8.5a", _has_8_5),
    ("9.0a", _has_9_0),
)

AARCH64_MACHINES = frozenset({"aarch64", "arm64", "aarch64_be"})

# Linux hwcaps of 32-bit ARM (what a 32-bit process sees on an arm64 kernel).
_ARM32_CAPS = frozenset({"thumb", "vfp", "neon", "half", "fastmult", "edsp"})

# MIDR_EL1 implementer codes (Arm ARM, "MIDR_EL1, Main ID Register"), for the detail.
_IMPLEMENTERS = {
    "0x41": "Arm",
    "0x42": "Broadcom",
    "0x43": "Cavium",
    "0x46": "Fujitsu",
    "0x48": "HiSilicon",
    "0x4e": "NVIDIA",
    "0x50": "APM",
    "0x51": "Qualcomm",
    "0x53": "Samsung",
    "0x61": "Apple",
    "0x6d": "Microsoft",
    "0xc0": "Ampere",
}

# macOS: `sysctl hw.optional` answers 1 or 0 per key. macOS 12 and later have the
# hw.optional.arm.FEAT_* keys (named after the Arm ARM's features); the older
# hw.optional.* keys are all that macOS 11 has. This maps them to Linux hwcaps.
# "cpuid" and "evtstrm" are Linux kernel services, never reported on macOS.
# (neon_hpfp / AdvSIMD_HPFPCvt are half-precision *conversions*, part of Armv8.0,
# not FEAT_FP16 arithmetic, so they map to nothing.)
_DARWIN_KEYS: dict[str, tuple[str, ...]] = {
    "hw.optional.floatingpoint": ("fp",),
    "hw.optional.neon": ("asimd",),
    "hw.optional.AdvSIMD": ("asimd",),
    "hw.optional.neon_fp16": ("fphp", "asimdhp"),
    "hw.optional.armv8_1_atomics": ("atomics",),
    "hw.optional.armv8_crc32": ("crc32",),
    "hw.optional.armv8_2_fhm": ("asimdfhm",),
    "hw.optional.armv8_2_sha512": ("sha512",),
    "hw.optional.armv8_2_sha3": ("sha3",),
    "hw.optional.armv8_3_compnum": ("fcma",),
    "hw.optional.arm.FEAT_AES": ("aes",),
    "hw.optional.arm.FEAT_PMULL": ("pmull",),
    "hw.optional.arm.FEAT_SHA1": ("sha1",),
    "hw.optional.arm.FEAT_SHA256": ("sha2",),
    "hw.optional.arm.FEAT_SHA512": ("sha512",),
    "hw.optional.arm.FEAT_SHA3": ("sha3",),
    "hw.optional.arm.FEAT_CRC32": ("crc32",),
    "hw.optional.arm.FEAT_LSE": ("atomics",),
    "hw.optional.arm.FEAT_LSE2": ("uscat",),
    "hw.optional.arm.FEAT_RDM": ("asimdrdm",),
    "hw.optional.arm.FEAT_FP16": ("fphp", "asimdhp"),
    "hw.optional.arm.FEAT_FHM": ("asimdfhm",),
    "hw.optional.arm.FEAT_DotProd": ("asimddp",),
    "hw.optional.arm.FEAT_DPB": ("dcpop",),
    "hw.optional.arm.FEAT_DPB2": ("dcpodp",),
    "hw.optional.arm.FEAT_JSCVT": ("jscvt",),
    "hw.optional.arm.FEAT_FCMA": ("fcma",),
    "hw.optional.arm.FEAT_LRCPC": ("lrcpc",),
    "hw.optional.arm.FEAT_LRCPC2": ("ilrcpc",),
    "hw.optional.arm.FEAT_PAuth": ("paca", "pacg"),
    "hw.optional.arm.FEAT_FlagM": ("flagm",),
    "hw.optional.arm.FEAT_FlagM2": ("flagm2",),
    "hw.optional.arm.FEAT_FRINTTS": ("frint",),
    "hw.optional.arm.FEAT_SB": ("sb",),
    "hw.optional.arm.FEAT_SSBS": ("ssbs",),
    "hw.optional.arm.FEAT_DIT": ("dit",),
    "hw.optional.arm.FEAT_BTI": ("bti",),
    "hw.optional.arm.FEAT_BF16": ("bf16",),
    "hw.optional.arm.FEAT_I8MM": ("i8mm",),
    "hw.optional.arm.FEAT_ECV": ("ecv",),
}
_DARWIN_SYSCTLS = ("hw.optional", "machdep.cpu.brand_string", "hw.logicalcpu")

_ALL_CONFIGS = (
    FeatureConfig(VERSION, VERSIONS),
    *(FeatureConfig(name, (ON,)) for name in FEATURES),
)


class AArch64Provider(_cpu.CpuProvider):
    """Detects the Arm architecture version and features of this CPU."""

    namespace = "aarch64"
    machines = AARCH64_MACHINES
    cpu_name = "AArch64"
    darwin_sysctls = _DARWIN_SYSCTLS
    darwin_source = "sysctl hw.optional"
    # IsProcessorFeaturePresent() reports a handful of PF_ARM_* features but
    # not RDM, DPB, FCMA, LSE2, FlagM, ...: too few to establish a version.
    windows_reason = (
        "Arm version detection is not implemented on Windows (the OS reports too "
        "few CPU features); set WHEELWISE_CPUINFO to a Linux /proc/cpuinfo dump "
        "of this CPU, or pass --system FILE"
    )

    def get_all_configs(self) -> Sequence[FeatureConfig]:
        return _ALL_CONFIGS

    def probe_dump(self, text: str, source: str) -> Probe:
        return _probe_dump(text, source)


def version_of(caps: frozenset[str]) -> str:
    """The newest architecture version these hwcaps establish."""
    version = "8a"
    for candidate, rule in VERSION_RULES:
        if not rule(caps):
            break
        version = candidate
    return version


def configs_for(caps: frozenset[str]) -> tuple[FeatureConfig, ...]:
    """What a CPU with these Linux hwcaps supports, best first."""
    version = version_of(caps)
    configs = [FeatureConfig(VERSION, VERSIONS[VERSIONS.index(version) :])]
    configs += [
        FeatureConfig(name, (ON,)) for name in FEATURES if name in caps and name not in UNDETECTABLE
    ]
    return tuple(configs)


def _probe_dump(text: str, source: str) -> Probe:
    fields = _cpu.parse_fields(text)
    notes: list[str] = []
    if "Features" in fields:
        lines = fields["Features"]
        caps = frozenset(_cpu.common_words(lines))
        if "asimd" not in caps and caps & _ARM32_CAPS:
            raise ProviderUnavailable(
                f"{source} is a 32-bit ARM view of the CPU (no AArch64 hwcaps)", source
            )
        if len(set(lines)) > 1:
            notes.append("features differ between processors: using those all share")
        count = _cpu.processor_count(fields, "Features")
        implementers = _cpu.distinct(fields.get("CPU implementer", ()))
        parts = _cpu.distinct(fields.get("CPU part", ()))
        vendor = " + ".join(_IMPLEMENTERS.get(code.lower(), code) for code in implementers)
        model = f"{vendor or 'unknown implementer'} part {' + '.join(parts) or 'unknown'}"
    elif "machdep.cpu.features" not in fields and _is_darwin_arm(fields):
        caps = _darwin_caps(fields)
        model = _cpu.first(fields, "machdep.cpu.brand_string") or "unknown model"
        count = _cpu.sysctl_count(fields)
        if not any(key.startswith("hw.optional.arm.FEAT_") for key in fields):
            notes.append("no hw.optional.arm.FEAT_* keys (macOS 11): most features unknown")
    else:
        raise ProviderUnavailable(
            f"{source} describes no AArch64 CPU: it has no 'Features' line (Linux "
            "/proc/cpuinfo) and no hw.optional.arm64 (macOS sysctl)",
            source,
        )
    configs = configs_for(caps)
    version = configs[0].values[0]
    about = [model]
    if count:
        about.append(_cpu.plural(count, "processor"))
    detail = f"Armv{version[:-1]}-A ({', '.join(about)})"
    if notes:
        detail += "; " + "; ".join(notes)
    return Probe(configs, source, detail)


def _is_darwin_arm(fields: _cpu.Fields) -> bool:
    return _cpu.first(fields, "hw.optional.arm64") == "1" or any(
        key.startswith("hw.optional.arm.FEAT_") for key in fields
    )


def _darwin_caps(fields: _cpu.Fields) -> frozenset[str]:
    caps: set[str] = set()
    for key, hwcaps in _DARWIN_KEYS.items():
        if _cpu.first(fields, key) == "1":
            caps.update(hwcaps)
    return frozenset(caps)
