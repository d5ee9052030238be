"""Running the probes of ``wheelwise doctor``: all at once, each in its own thread,
each bounded by the context's timeout. A probe that raises or does not finish in
time becomes a finding of the ``doctor`` section, and the rest of the report stands:
``doctor`` is for broken machines, and must not break with them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wheelwise.doctor.context import DoctorContext
from wheelwise.doctor.findings import WARNING, DoctorReport, Finding

__all__ = ["Probe", "ProbeOutcome", "diagnose", "run_probe"]


@dataclass(frozen=True)
class ProbeOutcome:
    """What one probe found, and the facts it adds to sections (by section)."""

    findings: Sequence[Finding] = ()
    facts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


# A probe: a name (for messages) and the function that looks.
Probe = tuple[str, Callable[[DoctorContext], ProbeOutcome]]


class _Running:
    """One probe in its thread (a daemon: one that never returns is left behind)."""

    def __init__(self, probe: Probe, context: DoctorContext) -> None:
        self.name, self.look = probe
        self.outcome: ProbeOutcome | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self._run, args=(context,), name=f"doctor-{self.name}", daemon=True
        )
        self.thread.start()

    def _run(self, context: DoctorContext) -> None:
        try:
            self.outcome = self.look(context)
        except BaseException as exc:  # any failure of a probe is a finding
            self.error = exc

    def result(self, deadline: float, timeout: float) -> ProbeOutcome:
        self.thread.join(max(0.0, deadline - time.monotonic()))
        if self.thread.is_alive():
            return _failed(
                self.name,
                "probe-timeout",
                f"the {self.name} probe did not finish within {timeout:g} s",
                "a driver or file it reads is not answering; its part of the report is "
                "missing. Run `wheelwise doctor` again, or give it longer with "
                "WHEELWISE_DOCTOR_TIMEOUT=SECONDS",
            )
        if self.error is not None:
            reason = str(self.error).splitlines()[0] if str(self.error) else ""
            what = type(self.error).__name__ + (f": {reason}" if reason else "")
            return _failed(
                self.name,
                "probe-failed",
                f"the {self.name} probe failed ({what})",
                "its part of the report is missing; this is a bug in wheelwise doctor: "
                "please report it with this line",
            )
        assert self.outcome is not None
        return self.outcome


def _failed(name: str, code: str, what: str, why: str) -> ProbeOutcome:
    return ProbeOutcome(
        findings=(
            Finding(
                section="doctor",
                code=code,
                severity=WARNING,
                what=what,
                why=why,
                facts={"probe": name},
            ),
        )
    )


def run_probe(probe: Probe, context: DoctorContext) -> ProbeOutcome:
    """One probe, isolated and bounded by ``context.timeout``."""
    running = _Running(probe, context)
    return running.result(time.monotonic() + context.timeout, context.timeout)


def diagnose(probes: Sequence[Probe], context: DoctorContext) -> DoctorReport:
    """Every probe at once, each bounded by ``context.timeout`` from the start; the
    report of what they found."""
    started = time.monotonic()
    running = [_Running(probe, context) for probe in probes]
    findings: list[Finding] = []
    facts: dict[str, dict[str, Any]] = {}
    for probe in running:
        outcome = probe.result(started + context.timeout, context.timeout)
        findings.extend(outcome.findings)
        for section, values in outcome.facts.items():
            facts.setdefault(section, {}).update(values)
    return DoctorReport.collect(str(context.target.python), findings, facts)
