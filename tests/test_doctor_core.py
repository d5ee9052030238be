"""``wheelwise doctor``'s frame: findings, the exit status they give, the --json
document, and probes isolated from each other (one that raises or hangs is a
finding, and the others still report)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from wheelwise.doctor import (
    ERROR,
    OK,
    REPORT_FORMAT,
    WARNING,
    DoctorContext,
    DoctorReport,
    Finding,
    MachineRoots,
    ProbeOutcome,
    diagnose,
)
from wheelwise.doctor.context import probe_timeout
from wheelwise.doctor.findings import SECTIONS
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.variants.supported import SupportedProperties

TARGET = TargetEnvironment.current()


def context(timeout: float = 5.0) -> DoctorContext:
    return DoctorContext(target=TARGET, environ={}, system=SupportedProperties(), timeout=timeout)


def finding(severity: str, section: str = "machine", code: str = "x") -> Finding:
    return Finding(section=section, code=code, severity=severity, what=f"{code} {severity}")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("severities", "status", "code"),
    [((), OK, 0), ((OK,), OK, 0), ((OK, WARNING), WARNING, 1), ((WARNING, ERROR, OK), ERROR, 2)],
)
def test_the_worst_finding_gives_the_exit_status(
    severities: tuple[str, ...], status: str, code: int
) -> None:
    report = DoctorReport.collect(
        "py", [finding(s, code=f"c{i}") for i, s in enumerate(severities)]
    )
    assert (report.severity, report.exit_code) == (status, code)


def test_findings_are_ordered_by_section_then_worst_first() -> None:
    report = DoctorReport.collect(
        "py",
        [
            finding(OK, "builds", "b"),
            finding(WARNING, "machine", "m1"),
            finding(ERROR, "machine", "m2"),
            finding(ERROR, "libraries", "l"),
        ],
    )
    assert [f.code for f in report.findings] == ["m2", "m1", "l", "b"]


def test_an_unknown_section_or_severity_is_refused() -> None:
    with pytest.raises(ValueError, match="section"):
        Finding(section="nowhere", code="x", severity=OK, what="x")
    with pytest.raises(ValueError, match="severity"):
        finding("fatal")


def test_the_json_document_has_every_section_and_the_counts() -> None:
    report = DoctorReport.collect(
        "py", [finding(WARNING, "libraries")], {"machine": {"source": "--system"}}
    )
    document = report.to_dict()
    assert document["format"] == REPORT_FORMAT
    assert (document["status"], document["exit_code"]) == (WARNING, 1)
    assert document["counts"] == {OK: 0, WARNING: 1, ERROR: 0}
    assert list(document["sections"]) == list(SECTIONS)
    assert SECTIONS == ("machine", "libraries", "compatibility", "builds", "doctor")
    assert document["sections"]["machine"]["facts"] == {"source": "--system"}
    assert document["sections"]["libraries"]["findings"][0]["code"] == "x"
    json.dumps(document)  # plain data


def test_a_probe_that_raises_or_hangs_is_a_finding_and_the_others_report() -> None:
    release = threading.Event()

    def good(_: DoctorContext) -> ProbeOutcome:
        return ProbeOutcome([finding(ERROR, "compatibility", "real")], {"machine": {"a": 1}})

    def broken(_: DoctorContext) -> ProbeOutcome:
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    def hung(_: DoctorContext) -> ProbeOutcome:
        release.wait(30)
        return ProbeOutcome()

    try:
        report = diagnose([("good", good), ("broken", broken), ("hung", hung)], context(0.5))
    finally:
        release.set()
    codes = {(f.code, f.facts.get("probe")) for f in report.findings}
    assert ("real", None) in codes
    assert ("probe-failed", "broken") in codes
    assert ("probe-timeout", "hung") in codes
    failed = next(f for f in report.findings if f.code == "probe-failed")
    assert "OSError: libnvidia-ml.so.1" in failed.what
    assert report.facts == {"machine": {"a": 1}}
    assert report.exit_code == 2


def test_the_machine_root_prefixes_absolute_paths(tmp_path: Path) -> None:
    roots = MachineRoots.from_environment({"WHEELWISE_DOCTOR_ROOT": str(tmp_path)})
    assert roots.path("/proc/driver/nvidia/version") == tmp_path / "proc/driver/nvidia/version"
    assert MachineRoots.from_environment({}).path("/dev/kfd") == Path("/dev/kfd")


@pytest.mark.parametrize("value", ["soon", "0", "-1", "99999"])
def test_a_bad_timeout_is_a_clear_error(value: str) -> None:
    with pytest.raises(ValueError, match="WHEELWISE_DOCTOR_TIMEOUT"):
        probe_timeout({"WHEELWISE_DOCTOR_TIMEOUT": value})
    assert probe_timeout({}) == 10.0


@pytest.mark.slow
def test_the_command_reports_a_described_machine_and_exits_by_status(tmp_path: Path) -> None:
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"system": {"x86_64": {"level": ["v2", "v1"]}}}))
    done = subprocess.run(
        [sys.executable, "-m", "wheelwise", "doctor", "--json", "--system", str(system)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    document = json.loads(done.stdout)
    assert done.returncode == document["exit_code"]
    facts = document["sections"]["machine"]["facts"]
    assert facts["source"] == "--system"
    assert facts["properties"]["x86_64"] == {"level": ["v2", "v1"]}


def test_a_python_that_does_not_exist_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "wheelwise", "doctor", "--python", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"wheelwise: error: {tmp_path / 'nope'}: no such Python executable"
    ]
