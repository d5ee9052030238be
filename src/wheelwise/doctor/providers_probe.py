"""The machine as the built-in providers see it (``wheelwise detect``), or as
``--system`` describes it: facts of the ``machine`` section, and a finding for each
provider that failed."""

from __future__ import annotations

from wheelwise.doctor.context import DoctorContext
from wheelwise.doctor.findings import WARNING, Finding
from wheelwise.doctor.runner import ProbeOutcome

__all__ = ["providers_probe"]


def providers_probe(context: DoctorContext) -> ProbeOutcome:
    detection = context.detection
    if detection is None:
        facts = {"source": "--system", "properties": context.supported.to_dict()}
        return ProbeOutcome(facts={"machine": facts})
    findings = [
        Finding(
            section="machine",
            code="provider-failed",
            severity=WARNING,
            what=f"the {namespace} provider failed: {report.detail}",
            why=f"variants of the {namespace} namespace count as unsupported here, so "
            "installs fall back to builds that do not need it",
            fix="wheelwise detect --refresh (and see the lines below for the cause)",
            facts={"namespace": namespace},
        )
        for namespace, report in detection.reports.items()
        if report.status == "error"
    ]
    facts = {
        "source": "detected",
        "providers": {ns: report.to_dict() for ns, report in detection.reports.items()},
    }
    return ProbeOutcome(findings=findings, facts={"machine": facts})
