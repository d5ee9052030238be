"""Shared plumbing of the CPU providers (``x86_64`` and ``aarch64``).

Both read a text dump made of ``key : value`` lines: Linux ``/proc/cpuinfo``, or
``sysctl`` output on macOS (``machdep.cpu.features: FPU VME ...``). The file named by
``WHEELWISE_CPUINFO`` may be either kind, on any OS: that is how a test or a
simulation stands in for a machine. Imports stay at ``os``/``sys`` level because
this runs on the CLI's warm path; ``subprocess`` and ``platform`` load only when
they are needed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence

from wheelwise.providers.base import BuiltinProvider, Environment, Probe, ProviderUnavailable

CPUINFO = "/proc/cpuinfo"
OVERRIDE_VARIABLE = "WHEELWISE_CPUINFO"
# The most of a dump we read: /proc/cpuinfo of a 512-thread machine is about 1 MiB.
READ_LIMIT = 8 << 20
SYSCTL_TIMEOUT_S = 2.0

Fields = dict[str, list[str]]
# Runs ``sysctl NAME...`` and returns its standard output (``name: value`` lines).
Sysctl = Callable[[Sequence[str]], str]


def machine_name() -> str:
    """What ``platform.machine()`` says, without importing :mod:`platform` on POSIX."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform  # Windows only: slow to import

    return platform.machine()


def read_dump(path: str) -> str:
    """The text of *path*; :class:`ProviderUnavailable` (never OSError) when unreadable."""
    try:
        with open(path, "rb") as handle:  # noqa: PTH123 - no pathlib on the hot path
            data = handle.read(READ_LIMIT)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ProviderUnavailable(f"cannot read {path}: {reason}", path) from None
    return data.decode("utf-8", "replace")


def parse_fields(text: str) -> Fields:
    """Every ``key : value`` line, values of repeated keys in file order.

    Keys are stripped (cpuinfo pads them with tabs); lines without a colon are
    ignored, so garbage gives an empty mapping rather than an error.
    """
    fields: Fields = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields.setdefault(key.strip(), []).append(value.strip())
    return fields


def common_words(lines: Iterable[str]) -> set[str]:
    """The words that appear on every one of *lines* (empty when there are none)."""
    common: set[str] | None = None
    for line in lines:
        words = set(line.split())
        common = words if common is None else common & words
    return common or set()


def first(fields: Fields, *keys: str) -> str:
    """The first non-empty value of the first of *keys* that has one."""
    for key in keys:
        for value in fields.get(key, ()):
            if value:
                return value
    return ""


def distinct(values: Iterable[str]) -> list[str]:
    """*values* without repeats, in first-seen order, whitespace collapsed."""
    seen: dict[str, None] = {}
    for value in values:
        collapsed = " ".join(value.split())
        if collapsed:
            seen[collapsed] = None
    return list(seen)


def processor_count(fields: Fields, fallback_key: str) -> int:
    """How many processors a cpuinfo dump lists (``processor`` lines, else *fallback_key*)."""
    return len(fields.get("processor", ())) or len(fields.get(fallback_key, ()))


def sysctl_count(fields: Fields) -> int:
    """The logical CPU count in a sysctl dump, 0 when absent or malformed."""
    for key in ("hw.logicalcpu", "hw.ncpu", "machdep.cpu.thread_count"):
        value = first(fields, key)
        if value.isdigit():
            return int(value)
    return 0


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def run_sysctl(names: Sequence[str]) -> str:
    """``sysctl NAME...`` (``name: value`` lines) with a short timeout.

    Unknown names only print a warning on standard error, so the output of the
    known ones is used whatever the exit status.
    """
    import subprocess  # macOS only: slow to import

    executable = "/usr/sbin/sysctl" if os.path.exists("/usr/sbin/sysctl") else "sysctl"  # noqa: PTH110
    try:
        done = subprocess.run(
            [executable, *names],
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=SYSCTL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ProviderUnavailable(
            f"sysctl did not answer within {SYSCTL_TIMEOUT_S:g} s", "sysctl"
        ) from None
    except OSError as exc:
        raise ProviderUnavailable(f"cannot run sysctl: {exc}", "sysctl") from None
    return done.stdout


def host_platform() -> str:
    return sys.platform


class CpuProvider(BuiltinProvider):
    """What the x86-64 and AArch64 providers share: where the CPU description comes
    from (a simulated dump, /proc/cpuinfo, sysctl on macOS) and when they do not apply.

    Subclasses set the class attributes and implement :meth:`probe_dump`.
    """

    machines: frozenset[str]  # platform.machine() values of this architecture
    cpu_name: str  # "x86-64", "AArch64"
    darwin_sysctls: tuple[str, ...]
    darwin_source: str
    windows_reason: str

    def __init__(
        self,
        env: Environment | None = None,
        *,
        machine: str | None = None,
        platform: str | None = None,
        cpuinfo_path: str = CPUINFO,
        sysctl: Sysctl | None = None,
    ) -> None:
        """*machine* (``platform.machine()``), *platform* (``sys.platform``),
        *cpuinfo_path* and *sysctl* stand in for the machine in tests."""
        super().__init__(env)
        self._machine = machine
        self._platform = platform
        self._cpuinfo_path = cpuinfo_path
        self._sysctl = sysctl if sysctl is not None else run_sysctl

    def probe_dump(self, text: str, source: str) -> Probe:
        """Detection from a /proc/cpuinfo or sysctl dump."""
        raise NotImplementedError

    def probe(self) -> Probe:
        override = self.env.get(OVERRIDE_VARIABLE)
        if override is not None:
            # A simulated machine: the dump says what CPU it is, whatever runs us.
            return self.probe_dump(read_dump(override), override)
        machine = self._machine if self._machine is not None else machine_name()
        if machine.lower() not in self.machines:
            raise ProviderUnavailable(
                f"not an {self.cpu_name} CPU (machine is {machine})", "platform.machine()"
            )
        platform = self._platform if self._platform is not None else host_platform()
        if platform == "darwin":
            return self.probe_dump(self._sysctl(self.darwin_sysctls), self.darwin_source)
        if platform == "win32":
            raise ProviderUnavailable(self.windows_reason, "Windows")
        return self.probe_dump(read_dump(self._cpuinfo_path), self._cpuinfo_path)
