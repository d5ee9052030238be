"""The ``x86_64`` provider: the x86-64 psABI level and instruction-set extensions.

The vocabulary matches the reference ``provider-variant-x86-64`` so that published
wheels select correctly:

* ``level``: ``"v4"``, ``"v3"``, ``"v2"``, ``"v1"`` (single-value), reported as the
  detected level followed by every lower one.
* one feature per extension, with the single value ``"on"``, named as Linux
  ``/proc/cpuinfo`` spells it (``sse4_1``, ``avx512_bf16``, ``sha_ni``, ...).

Unlike the reference, which asks archspec for the closest *named*
microarchitecture and then reports that model's feature list, this provider reads
the CPU's own flags: a feature is reported exactly when the CPU (every CPU, on
machines with several) has it, and the level is computed from the psABI's
definition. A v1-only CPU therefore reports ``level = v1`` (the reference reports
nothing there, although v1 builds run on it).

Detection: Linux (and anything else with ``/proc/cpuinfo``) reads the ``flags`` of
every processor and keeps the flags they share; macOS asks ``sysctl`` for
``machdep.cpu.*features``; Windows is not supported (see :meth:`probe`). The file
named by ``WHEELWISE_CPUINFO`` replaces all of this on any OS: a Linux
``/proc/cpuinfo`` dump or a macOS ``sysctl`` dump describes the machine to simulate.
"""

from __future__ import annotations

from collections.abc import Sequence

from wheelwise.providers import _cpu
from wheelwise.providers.base import (
    FeatureConfig,
    Probe,
    ProviderUnavailable,
)

LEVEL = "level"
LEVELS = ("v4", "v3", "v2", "v1")
ON = "on"

# The reference's extension features, in its order (best/newest first). Every name is
# a Linux /proc/cpuinfo flag except "sse3", which cpuinfo calls "pni" (see _SPELLING);
# "cppc", "ibrs_enhanced", "tsc_adjust" and "flush_l1d" are platform capabilities
# rather than instructions, but they are real cpuinfo flags and stay for compatibility.
EXTENSIONS = (
    "avx_vnni",
    "cppc",
    "ibrs_enhanced",
    "tsc_adjust",
    "flush_l1d",
    "movdir64b",
    "movdiri",
    "avx512_bf16",
    "avx512_bitalg",
    "avx512_vbmi2",
    "avx512_vnni",
    "avx512_vp2intersect",
    "avx512_vpopcntdq",
    "avx512ifma",
    "avx512vbmi",
    "rdpid",
    "sha_ni",
    "vaes",
    "vpclmulqdq",
    "clwb",
    "clzero",
    "avx512bw",
    "avx512cd",
    "avx512dq",
    "avx512f",
    "avx512vl",
    "clflushopt",
    "gfni",
    "rdseed",
    "xsavec",
    "xsaveopt",
    "adx",
    "avx2",
    "avx",
    "bmi2",
    "bmi1",
    "abm",
    "f16c",
    "fma",
    "movbe",
    "xsave",
    "rdrand",
    "aes",
    "pclmulqdq",
    "sse4a",
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
)
# Feature name -> cpuinfo flag, where they differ.
_SPELLING = {"sse3": "pni"}

# The x86-64 psABI levels, in cpuinfo spellings (SSE3 is "pni", LZCNT is "abm",
# LAHF/SAHF in 64-bit mode is "lahf_lm", CMPXCHG16B is "cx16"). The psABI's
# OSXSAVE is not a cpuinfo flag: Linux shows "xsave" only once it has enabled XSAVE
# (and drops avx/avx2/avx512* when the OS does not manage their register state), so
# "xsave" stands for it.
#
# v1 omits two things the psABI lists. SCE (SYSCALL/SYSRET) is architectural in
# 64-bit mode: a 64-bit kernel cannot run without it, yet Intel CPUs set its CPUID bit
# only when asked from 64-bit mode, so 32-bit views and some hypervisors hide the
# "syscall" flag; requiring it would demote working machines. OSFXSR is a kernel
# setting, not a CPU flag. Instead, "lm" (long mode) must be present on Linux dumps:
# without it the CPU cannot run x86-64 code at all.
_BASELINE = ("cmov", "cx8", "fpu", "fxsr", "mmx", "sse", "sse2")
_LEVEL_FLAGS = (
    ("v2", ("cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3")),
    ("v3", ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")),
    ("v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
)

X86_64_MACHINES = frozenset({"x86_64", "amd64", "x86-64"})

# macOS: `sysctl machdep.cpu.features` (CPUID leaf 1), `.extfeatures` (leaf
# 0x80000001) and `.leaf7_features` (leaf 7) list XNU's names for the CPUID bits
# (osfmk/i386/cpuid.c feature tables); this maps the ones we use to cpuinfo flags.
# XNU has no name for XSAVEOPT, XSAVEC, AVX512_VBMI2, AVX512_VP2INTERSECT, CPPC,
# IBRS_ENHANCED, CLZERO or SSE4A, so those are never reported on macOS.
_DARWIN_FLAGS = {
    # machdep.cpu.features
    "FPU": "fpu",
    "CX8": "cx8",
    "CMOV": "cmov",
    "MMX": "mmx",
    "FXSR": "fxsr",
    "SSE": "sse",
    "SSE2": "sse2",
    "SSE3": "pni",
    "PCLMULQDQ": "pclmulqdq",
    "SSSE3": "ssse3",
    "FMA": "fma",
    "CX16": "cx16",
    "SSE4.1": "sse4_1",
    "SSE4.2": "sse4_2",
    "MOVBE": "movbe",
    "POPCNT": "popcnt",
    "AES": "aes",
    "XSAVE": "xsave",  # counted only together with OSXSAVE, see _darwin_flags()
    "AVX1.0": "avx",
    "RDRAND": "rdrand",
    "F16C": "f16c",
    # machdep.cpu.extfeatures
    "SYSCALL": "syscall",
    "EM64T": "lm",
    "LAHF": "lahf_lm",
    "LZCNT": "abm",
    # machdep.cpu.leaf7_features
    "RDWRFSGS": "fsgsbase",
    "TSC_THREAD_OFFSET": "tsc_adjust",  # leaf 7 EBX bit 1, IA32_TSC_ADJUST
    "BMI1": "bmi1",
    "AVX2": "avx2",
    "BMI2": "bmi2",
    "AVX512F": "avx512f",
    "AVX512DQ": "avx512dq",
    "RDSEED": "rdseed",
    "ADX": "adx",
    "AVX512IFMA": "avx512ifma",
    "CLFSOPT": "clflushopt",
    "CLWB": "clwb",
    "AVX512CD": "avx512cd",
    "SHA": "sha_ni",
    "AVX512BW": "avx512bw",
    "AVX512VL": "avx512vl",
    "AVX512VBMI": "avx512vbmi",
    "GFNI": "gfni",
    "VAES": "vaes",
    "VPCLMULQDQ": "vpclmulqdq",
    "AVX512VNNI": "avx512_vnni",
    "AVX512BITALG": "avx512_bitalg",
    "AVX512VPOPCNTDQ": "avx512_vpopcntdq",
    "RDPID": "rdpid",
    "MOVDIRI": "movdiri",
    "MOVDIRI64B": "movdir64b",
    "L1DF": "flush_l1d",  # leaf 7 EDX bit 28, L1D_FLUSH
    # leaf 7 subleaf 1 (newer XNU)
    "AVXVNNI": "avx_vnni",
    "AVX512BF16": "avx512_bf16",
}
_DARWIN_SYSCTLS = (
    "machdep.cpu.brand_string",
    "machdep.cpu.features",
    "machdep.cpu.leaf7_features",
    "machdep.cpu.extfeatures",
    "hw.logicalcpu",
    "sysctl.proc_translated",  # 1 under Rosetta 2; unknown (a warning) on Intel Macs
)

_ALL_CONFIGS = (
    FeatureConfig(LEVEL, LEVELS),
    *(FeatureConfig(name, (ON,)) for name in EXTENSIONS),
)


class X86_64Provider(_cpu.CpuProvider):
    """Detects the x86-64 psABI level and extensions of this CPU."""

    namespace = "x86_64"
    machines = X86_64_MACHINES
    cpu_name = "x86-64"
    darwin_sysctls = _DARWIN_SYSCTLS
    darwin_source = "sysctl machdep.cpu"
    # IsProcessorFeaturePresent() has PF_* constants for SSE3, SSSE3, SSE4.1,
    # SSE4.2, AVX, AVX2 and AVX512F, but none for POPCNT, LAHF, BMI1/2, FMA,
    # LZCNT, MOVBE or AVX-512 BW/CD/DQ/VL: no level above v1 can be proven.
    windows_reason = (
        "x86-64 level detection is not implemented on Windows (the OS reports "
        "too few CPU features to establish a psABI level); set WHEELWISE_CPUINFO "
        "to a Linux /proc/cpuinfo dump of this CPU, or pass --system FILE"
    )

    def get_all_configs(self) -> Sequence[FeatureConfig]:
        return _ALL_CONFIGS

    def probe_dump(self, text: str, source: str) -> Probe:
        return _probe_dump(text, source)


def level_of(flags: set[str]) -> int:
    """The highest psABI level whose flags are all present (0: not x86-64 at all)."""
    if not all(flag in flags for flag in _BASELINE):
        return 0
    level = 1
    for _, required in _LEVEL_FLAGS:
        if not all(flag in flags for flag in required):
            break
        level += 1
    return level


def configs_for(flags: set[str]) -> tuple[FeatureConfig, ...]:
    """What a CPU with these cpuinfo *flags* supports, best first."""
    level = level_of(flags)
    if level == 0:
        return ()
    configs = [FeatureConfig(LEVEL, LEVELS[len(LEVELS) - level :])]
    configs += [
        FeatureConfig(name, (ON,)) for name in EXTENSIONS if _SPELLING.get(name, name) in flags
    ]
    return tuple(configs)


def _probe_dump(text: str, source: str) -> Probe:
    fields = _cpu.parse_fields(text)
    notes: list[str] = []
    if "flags" in fields:
        flag_lines = fields["flags"]
        flags = _cpu.common_words(flag_lines)
        models = _cpu.distinct(fields.get("model name", ()))
        model = " + ".join(models) if models else "unknown model"
        count = _cpu.processor_count(fields, "flags")
        if len(set(flag_lines)) > 1:
            notes.append("flags differ between processors: using those all share")
        if "lm" not in flags:
            raise ProviderUnavailable(
                f"not an x86-64 CPU: {source} has no 'lm' (long mode) flag", source
            )
    elif "machdep.cpu.features" in fields:
        flags = _darwin_flags(fields)
        model = _cpu.first(fields, "machdep.cpu.brand_string") or "unknown model"
        count = _cpu.sysctl_count(fields)
        if "machdep.cpu.extfeatures" not in fields:
            notes.append("no machdep.cpu.extfeatures: LAHF and LZCNT count as absent")
        if _cpu.first(fields, "sysctl.proc_translated") == "1":
            notes.append("under Rosetta 2")
    else:
        raise ProviderUnavailable(
            f"{source} describes no x86 CPU: it has no 'flags' line (Linux /proc/cpuinfo) "
            "and no machdep.cpu.features (macOS sysctl)",
            source,
        )
    missing = [flag for flag in _BASELINE if flag not in flags]
    if missing:
        raise ProviderUnavailable(f"not an x86-64 CPU: {source} lacks {' '.join(missing)}", source)
    configs = configs_for(flags)
    level = configs[0].values[0]
    about = [model]
    if count:
        about.append(_cpu.plural(count, "processor"))
    detail = f"x86-64-{level} ({', '.join(about)})"
    if notes:
        detail += "; " + "; ".join(notes)
    return Probe(configs, source, detail)


def _darwin_flags(fields: _cpu.Fields) -> set[str]:
    names: set[str] = set()
    for key in ("machdep.cpu.features", "machdep.cpu.extfeatures", "machdep.cpu.leaf7_features"):
        for value in fields.get(key, ()):
            names.update(value.upper().split())
    flags = {_DARWIN_FLAGS[name] for name in names if name in _DARWIN_FLAGS}
    if "OSXSAVE" not in names:
        # XSAVE is usable (and AVX state managed) only once the OS has enabled it.
        flags.discard("xsave")
    return flags
