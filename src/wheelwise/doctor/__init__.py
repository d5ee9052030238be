"""``wheelwise doctor``: why a GPU Python stack is broken, and whether the installed
builds still fit the machine.

Each probe (:mod:`wheelwise.doctor.probes`) looks at one thing and returns
:class:`~wheelwise.doctor.findings.Finding` objects; :func:`~wheelwise.doctor.runner.diagnose`
runs them isolated and time-limited, so that a probe that fails or hangs becomes a
finding of its own, and collects a :class:`~wheelwise.doctor.findings.DoctorReport`.
"""

from wheelwise.doctor.context import DoctorContext, MachineRoots
from wheelwise.doctor.findings import (
    ERROR,
    OK,
    REPORT_FORMAT,
    SEVERITIES,
    WARNING,
    DoctorReport,
    Finding,
    Severity,
)
from wheelwise.doctor.runner import Probe, ProbeOutcome, diagnose, run_probe

__all__ = [
    "ERROR",
    "OK",
    "REPORT_FORMAT",
    "SEVERITIES",
    "WARNING",
    "DoctorContext",
    "DoctorReport",
    "Finding",
    "MachineRoots",
    "Probe",
    "ProbeOutcome",
    "Severity",
    "diagnose",
    "run_probe",
]
