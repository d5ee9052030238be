"""The ``amd`` provider: installed ROCm version and AMD GPU architectures.

The vocabulary follows the reference ``amd-variant-provider``: ``rocm_version``
(single-value, ``"6.4"``) and ``gfx_arch`` (multi-value, bare lower-case targets
such as ``"gfx90a"``), with a broader list of known values.

Detection reads ``$ROCM_PATH/.info/version`` (or ``/opt/rocm/.info/version``) and
lists GPU agents with ``rocminfo``, falling back to ``rocm_agent_enumerator -name``.
Every external command goes through one injectable runner (``run(argv, timeout)``)
so tests replay recorded outputs; environment variables override both answers.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence

from wheelwise.errors import WheelwiseError
from wheelwise.providers.base import (
    BuiltinProvider,
    Environment,
    FeatureConfig,
    Probe,
    ProviderUnavailable,
)

ROCM_VERSION = "rocm_version"
GFX_ARCH = "gfx_arch"

ROCM_VARIABLES = ("WHEELWISE_AMD_ROCM", "AMD_VARIANT_PROVIDER_FORCE_ROCM_VERSION")
GFX_VARIABLES = ("WHEELWISE_AMD_GFX", "AMD_VARIANT_PROVIDER_FORCE_GFX_ARCH")

# ROCm releases, newest first: 5.0-5.7 and 6.0-6.4 are complete series; the
# current major lists every minor it may reach so new point releases are known.
ROCM_VERSIONS = (
    *(f"7.{minor}" for minor in range(9, -1, -1)),
    *(f"6.{minor}" for minor in range(4, -1, -1)),
    *(f"5.{minor}" for minor in range(7, -1, -1)),
)
# GCN5 and newer LLVM AMDGPU targets that ROCm builds for (a superset of the
# reference list gfx900 … gfx1201), in the reference's ascending order.
GFX_TARGETS = (
    "gfx900",
    "gfx902",
    "gfx904",
    "gfx906",
    "gfx908",
    "gfx909",
    "gfx90a",
    "gfx90c",
    "gfx940",
    "gfx941",
    "gfx942",
    "gfx950",
    "gfx1010",
    "gfx1011",
    "gfx1012",
    "gfx1013",
    "gfx1030",
    "gfx1031",
    "gfx1032",
    "gfx1033",
    "gfx1034",
    "gfx1035",
    "gfx1036",
    "gfx1100",
    "gfx1101",
    "gfx1102",
    "gfx1103",
    "gfx1150",
    "gfx1151",
    "gfx1152",
    "gfx1153",
    "gfx1200",
    "gfx1201",
)
_KNOWN_GFX = frozenset(GFX_TARGETS)
_KNOWN_ROCM = frozenset(ROCM_VERSIONS)

COMMAND_TIMEOUT = 3.0
ROCMINFO = ("rocminfo",)
AGENT_ENUMERATOR = ("rocm_agent_enumerator", "-name")

# A processor name: "gfx" + digits + optional hex digits (gfx90a, gfx1100); the CPU
# agent is gfx000. Generic ISAs ("gfx9-4-generic") are not processors.
_GFX_RE = re.compile(r"gfx[0-9]+[0-9a-f]*")
_GENERIC_RE = re.compile(r"gfx[0-9a-f-]*-generic")
_VERSION_RE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(?:[-.+~_][0-9A-Za-z.+~_-]*)?")
_AGENT_RE = re.compile(r"^\s*Agent\s+\d+\s*$", re.MULTILINE)
_FIELD_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ()/_-]*?)\s*:\s*(.*?)\s*$")
_ISA_PREFIX = "amdgcn-amd-amdhsa--"
_NONE = "none"

Runner = Callable[[Sequence[str], float], str]


class CommandError(WheelwiseError):
    """A command could not run or failed; the message says why, without the command."""


def run_command(argv: Sequence[str], timeout: float, search: Sequence[str] = ()) -> str:
    """The real runner: run *argv* (looked up on PATH, then in *search*), return stdout.

    Raises :class:`CommandError` when the command is missing, times out or exits
    non-zero.
    """
    import shutil
    import subprocess

    program = shutil.which(argv[0])
    if program is None:
        for folder in search:
            program = shutil.which(argv[0], path=folder)
            if program is not None:
                break
    if program is None:
        raise CommandError("not found")
    try:
        result = subprocess.run(
            [program, *argv[1:]],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CommandError(f"timed out after {timeout:g} s") from None
    except OSError as exc:
        raise CommandError(f"cannot run: {exc}") from None
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).decode("utf-8", "replace").strip().splitlines()
        tail = f": {lines[-1].strip()[:200]}" if lines else ""
        raise CommandError(f"exited with status {result.returncode}{tail}")
    return result.stdout.decode("utf-8", "replace")


def normalize_target(text: str) -> str:
    """``"amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"`` → ``"gfx942"``."""
    text = text.strip().lower()
    if text.startswith(_ISA_PREFIX):
        text = text[len(_ISA_PREFIX) :]
    return text.split(":", 1)[0]


def _is_generic(target: str) -> bool:
    return bool(_GENERIC_RE.fullmatch(target))


def parse_rocminfo(text: str) -> list[str]:
    """GPU targets of ``rocminfo`` output, in agent order (duplicates kept).

    Each agent block starts with an ``Agent N`` line; a GPU agent has ``Device
    Type: GPU`` and its ``Name:`` is the processor (``gfx90a``). When the name is
    not a processor, the first non-generic ISA name of the block is used. Raises
    ValueError when the text lists no agents at all.
    """
    starts = [match.end() for match in _AGENT_RE.finditer(text)]
    if not starts:
        raise ValueError("no HSA agents listed")
    targets = []
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        name = device_type = None
        isas = []
        for line in text[start:end].splitlines():
            match = _FIELD_RE.match(line)
            if not match:
                continue
            key, value = match.group(1), match.group(2)
            if key == "Name":
                if name is None:
                    name = value
                elif value.lower().startswith(_ISA_PREFIX):
                    isas.append(normalize_target(value))
            elif key == "Device Type" and device_type is None:
                device_type = value
        if device_type != "GPU":
            continue
        candidates = [normalize_target(name or ""), *isas]
        found = [c for c in candidates if _GFX_RE.fullmatch(c) and c != "gfx000"]
        if not found:
            raise ValueError(f"GPU agent named {name!r} has no gfx processor name")
        targets.append(found[0])
    return targets


def parse_agent_enumerator(text: str) -> list[str]:
    """Targets printed by ``rocm_agent_enumerator -name``, one per line (CPU dropped)."""
    targets = []
    for line in text.splitlines():
        if not line.strip():
            continue
        target = normalize_target(line)
        if target == "gfx000" or _is_generic(target):
            continue
        if not _GFX_RE.fullmatch(target):
            raise ValueError(f"unexpected line {line.strip()[:80]!r}")
        targets.append(target)
    return targets


def parse_version_file(text: str) -> tuple[int, int]:
    """``"6.2.0-66"`` → (6, 2). Raises ValueError on anything else."""
    lines = text.strip().splitlines()
    match = _VERSION_RE.fullmatch(lines[0].strip()) if lines else None
    if not match:
        raise ValueError(f"unexpected content {text.strip()[:80]!r}")
    return int(match.group(1)), int(match.group(2))


def parse_rocm_override(variable: str, text: str) -> tuple[int, int] | None:
    """``"6.4"`` / ``"6.4.1"`` → (6, 4); ``"none"`` → None."""
    value = text.strip()
    if value.lower() == _NONE:
        return None
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", value)
    if not match:
        raise ProviderUnavailable(
            f"invalid {variable}={text!r}: expected a ROCm version MAJOR.MINOR[.PATCH] "
            "(e.g. 6.4 or 6.4.1) or 'none'",
            variable,
        )
    return int(match.group(1)), int(match.group(2))


def parse_gfx_override(variable: str, text: str) -> list[str]:
    """``"gfx90a,gfx942"`` (also separated by spaces or ';') → targets; ``"none"`` → []."""
    value = text.strip()
    if value.lower() == _NONE:
        return []
    targets = []
    for item in re.split(r"[,;\s]+", value):
        if not item:
            continue
        target = normalize_target(item)
        if not _GFX_RE.fullmatch(target) or target == "gfx000":
            raise ProviderUnavailable(
                f"invalid {variable}={text!r}: expected GPU targets such as gfx90a, "
                f"comma-separated (e.g. gfx90a,gfx942) or 'none'; {item!r} is not one",
                variable,
            )
        targets.append(target)
    return targets


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


class AMDProvider(BuiltinProvider):
    namespace = "amd"

    def __init__(
        self,
        env: Environment | None = None,
        run: Runner | None = None,
        kfd_nodes: str = "/sys/class/kfd/kfd/topology/nodes",
        kfd_device: str = "/dev/kfd",
    ) -> None:
        super().__init__(env)
        self._run = run
        self.kfd_nodes = kfd_nodes
        self.kfd_device = kfd_device

    @property
    def rocm_path(self) -> str:
        return self.env.get("ROCM_PATH") or "/opt/rocm"

    def run(self, argv: Sequence[str], timeout: float) -> str:
        if self._run is not None:
            return self._run(argv, timeout)
        bin_dir = os.path.join(self.rocm_path, "bin")
        return run_command(argv, timeout, search=(bin_dir,))

    def get_all_configs(self) -> Sequence[FeatureConfig]:
        return (
            FeatureConfig(ROCM_VERSION, ROCM_VERSIONS),
            FeatureConfig(GFX_ARCH, GFX_TARGETS, multi_value=True),
        )

    def probe(self) -> Probe:
        notes: list[str] = []
        sources: list[str] = []
        rocm: tuple[int, int] | None = None
        rocm_override = self.env.first_set(ROCM_VARIABLES)
        if rocm_override:
            variable, text = rocm_override
            rocm = parse_rocm_override(variable, text)
            if rocm is None:
                raise ProviderUnavailable(f"no ROCm ({variable}={text})", variable)
            rocm_source = variable
        else:
            rocm, rocm_source = self._read_version(notes)

        gfx_override = self.env.first_set(GFX_VARIABLES)
        if gfx_override:
            variable, text = gfx_override
            detected = parse_gfx_override(variable, text)
            if not detected:
                raise ProviderUnavailable(f"no AMD GPU ({variable}={text})", variable)
            gfx_source = variable
        else:
            detected, gfx_source = self._detect_gfx(rocm)
        sources.append(gfx_source)

        targets = _unique(detected)
        known = [target for target in targets if target in _KNOWN_GFX]
        unknown = [target for target in targets if target not in _KNOWN_GFX]
        if unknown:
            notes.append(f"unknown GPU architecture(s) {', '.join(unknown)} left out")
        if not known:
            raise ProviderUnavailable(
                f"AMD GPU(s) {', '.join(unknown)} found but none is a known architecture",
                gfx_source,
            )
        configs = [FeatureConfig(GFX_ARCH, tuple(known), multi_value=True)]
        version = f"{rocm[0]}.{rocm[1]}" if rocm else None
        if version is not None:
            if rocm_source:
                sources.append(rocm_source)
            if version in _KNOWN_ROCM:
                configs.append(FeatureConfig(ROCM_VERSION, (version,)))
            else:
                notes.append(f"ROCm {version} is not a known version: rocm_version left out")
        detail = f"GPUs: {', '.join(targets)}"
        if version is not None:
            detail = f"ROCm {version}; {detail}"
        return Probe(tuple(configs), " + ".join(sources), "; ".join([detail, *notes]))

    def _version_file(self) -> str:
        return os.path.join(self.rocm_path, ".info", "version")

    def _read_version(self, notes: list[str]) -> tuple[tuple[int, int] | None, str]:
        path = self._version_file()
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(256)
        except OSError:
            notes.append(f"ROCm version unknown ({path} not found)")
            return None, ""
        try:
            return parse_version_file(text), path
        except ValueError as exc:
            notes.append(f"ROCm version unknown ({path}: {exc})")
            return None, ""

    def _detect_gfx(self, rocm: tuple[int, int] | None) -> tuple[list[str], str]:
        if self._run is None and sys.platform.startswith("linux"):
            # ROCm talks to GPUs through /dev/kfd: without it no tool can list one,
            # and starting them costs more than the rest of detection.
            if not os.path.exists(self.kfd_device):
                found = f"ROCm {rocm[0]}.{rocm[1]} found but no" if rocm else "no"
                raise ProviderUnavailable(
                    f"{found} AMD GPU driver ({self.kfd_device} does not exist)", self.kfd_device
                )
        failures = []
        for argv, parse in (
            (ROCMINFO, parse_rocminfo),
            (AGENT_ENUMERATOR, parse_agent_enumerator),
        ):
            command = " ".join(argv)
            try:
                output = self.run(argv, COMMAND_TIMEOUT)
            except Exception as exc:  # any runner failure means "no answer"
                failures.append(f"{command}: {str(exc) or type(exc).__name__}")
                continue
            try:
                targets = parse(output)
            except ValueError as exc:
                failures.append(f"{command}: unexpected output ({exc})")
                continue
            if targets:
                return targets, argv[0]
            failures.append(f"{command}: no GPU agent listed")
        details = "; ".join(failures)
        found = f"ROCm {rocm[0]}.{rocm[1]} found but no" if rocm else "no"
        raise ProviderUnavailable(f"{found} AMD GPU: {details}", "rocminfo, rocm_agent_enumerator")
