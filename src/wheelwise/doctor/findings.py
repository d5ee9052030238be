"""What ``wheelwise doctor`` reports: findings, grouped in sections, and the exit
status they give.

A finding says what was seen, why it matters and the command that fixes it; its
``facts`` carry the data behind it (versions, paths) for ``--json``. A section also
carries facts of its own (the machine as detected, the libraries found), so that a
healthy report still shows what was looked at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ERROR",
    "OK",
    "REPORT_FORMAT",
    "SECTIONS",
    "SEVERITIES",
    "WARNING",
    "DoctorReport",
    "Finding",
    "Severity",
]

Severity = Literal["ok", "warning", "error"]
OK: Severity = "ok"
WARNING: Severity = "warning"
ERROR: Severity = "error"
SEVERITIES: tuple[Severity, ...] = (OK, WARNING, ERROR)

# The sections of a report, in the order they are shown.
SECTIONS = (
    "machine",  # the providers' view, NVIDIA and AMD drivers and devices
    "libraries",  # CUDA / ROCm user-space libraries the target would load
    "compatibility",  # the CUDA rules: runtime vs driver, PTX, NVRTC, architectures
    "builds",  # installed variant wheels and known GPU packages
    "doctor",  # the probes themselves: one that failed or ran out of time
)

# The version of the --json document (docs/doctor.md describes it).
REPORT_FORMAT = 1

# Exit statuses: healthy, warnings only, at least one error.
_EXIT = {OK: 0, WARNING: 1, ERROR: 2}


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One thing ``doctor`` found. *code* names the kind of finding, stably (for
    scripts: ``driver-mismatch``, ``mixed-cuda-majors``...); *what* is one line;
    *why* says why it matters; *fix* is the command (or step) that fixes it, where
    there is one."""

    section: str
    code: str
    severity: Severity
    what: str
    why: str = ""
    fix: str = ""
    facts: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.section not in SECTIONS:
            raise ValueError(f"unknown section {self.section!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "code": self.code,
            "severity": self.severity,
            "what": self.what,
            "why": self.why,
            "fix": self.fix,
            "facts": dict(self.facts),
        }


@dataclass(frozen=True)
class DoctorReport:
    """Every finding, and each section's facts, for one target interpreter."""

    target: str
    findings: tuple[Finding, ...] = ()
    facts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def collect(
        cls,
        target: str,
        findings: Iterable[Finding],
        facts: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> DoctorReport:
        """The findings sorted by section (in :data:`SECTIONS` order), worst first."""
        rank = {severity: index for index, severity in enumerate(reversed(SEVERITIES))}
        ordered = sorted(
            findings, key=lambda f: (SECTIONS.index(f.section), rank[f.severity], f.code)
        )
        return cls(target, tuple(ordered), dict(facts or {}))

    @property
    def severity(self) -> Severity:
        """The worst severity found (``ok`` for a healthy target)."""
        worst = max((SEVERITIES.index(f.severity) for f in self.findings), default=0)
        return SEVERITIES[worst]

    @property
    def exit_code(self) -> int:
        """0 healthy, 1 warnings, 2 errors (for CI and container health checks)."""
        return _EXIT[self.severity]

    def in_section(self, section: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.section == section)

    def to_dict(self) -> dict[str, Any]:
        counts = dict.fromkeys(SEVERITIES, 0)
        for finding in self.findings:
            counts[finding.severity] += 1
        return {
            "format": REPORT_FORMAT,
            "target": self.target,
            "status": self.severity,
            "exit_code": self.exit_code,
            "counts": counts,
            "sections": {
                section: {
                    "facts": dict(self.facts.get(section, {})),
                    "findings": [f.to_dict() for f in self.in_section(section)],
                }
                for section in SECTIONS
            },
        }
