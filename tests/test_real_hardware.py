"""What a real NVIDIA H200 machine detected, answered offline: its recorded ``detect``
documents (``tests/data/real-hardware/``) select what wheelwise selected on that
machine, in both formats, and its recorded ``doctor --json`` report holds the
documented schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from doctorkit import REPORT_SCHEMA
from paths import DATA
from wheelwise.cli.app import cli as main

H200 = DATA / "real-hardware" / "h200-driver580"
REAL_WORLD = DATA / "corpus" / "real-world"
ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = [H200 / "detect.json", H200 / "detect-uv.toml"]


def selected(document: Path, system: Path) -> str | None:
    result = CliRunner().invoke(main, ["select", str(document), "--json", "--system", str(system)])
    assert result.exit_code == 0, result.output
    label: str | None = json.loads(result.stdout)["selected"]
    return label


@pytest.mark.parametrize("system", SYSTEMS, ids=lambda p: p.suffix)
@pytest.mark.parametrize(
    ("torch", "expected"), [("2.8.0", "cu129"), ("2.9.0", "cuda13.0"), ("2.10.0", "cuda13.0")]
)
def test_pytorch_documents_select_what_the_h200_selected(
    system: Path, torch: str, expected: str
) -> None:
    document = REAL_WORLD / f"wheelnext-variant-repack_torch-{torch}-variants.json"
    assert selected(document, system) == expected


@pytest.mark.parametrize("system", SYSTEMS, ids=lambda p: p.suffix)
def test_the_demo_package_selects_its_cuda_13_build(tmp_path: Path, system: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "examples/build_demo_wheelhouse.py", str(tmp_path / "wheels"),
         "--site", str(site)],
        cwd=ROOT, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    document = site / "files" / "wheelwise-demo" / "wheelwise_demo-1.0-variants.json"
    assert selected(document, system) == "cu130"


def test_the_recorded_doctor_report_holds_the_documented_schema() -> None:
    report = json.loads((H200 / "doctor.json").read_text())
    REPORT_SCHEMA.validate(report)
    assert report["exit_code"] == 0
    assert report["counts"] == {"ok": 0, "warning": 0, "error": 0}


def test_the_recorded_machine_is_the_h200_it_names() -> None:
    detected = json.loads((H200 / "detect.json").read_text())
    text = json.dumps(detected)
    assert "CUDA driver 13.0; GPUs: 9.0" in text
    assert "x86-64-v4" in text
