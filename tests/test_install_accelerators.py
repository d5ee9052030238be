"""PyTorch 2.10's published variant metadata, installed for real: on a simulated
Intel GPU machine (the intel provider's override variable) the ``xpu`` build is
installed with no third-party plugin trusted; on a machine without one, the CPU
(``null``) build; on an NVIDIA machine, the CUDA build. The wheels are small stand-ins
of torch 2.10.0, one per label, each carrying its label's slice of the real document,
in a find-links folder beside the real ``torch-2.10.0-variants.json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gpuhouse import machine
from installkit import installed_build, make_venv
from paths import DATA
from variantkit import wheelwise
from wheelfactory import make_wheel

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

DOCUMENT = DATA / "corpus" / "real-world" / "wheelnext-variant-repack_torch-2.10.0-variants.json"
LABELS = ("null", "cuda13.0", "xpu")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("torch-2.10")
    document = json.loads(DOCUMENT.read_bytes())
    for label in LABELS:
        own = {**document, "variants": {label: document["variants"][label]}}
        members = {"torch/__init__.py": f"VARIANT = {label!r}\n".encode()}
        name = f"torch-2.10.0-py3-none-any-{label}.whl"
        make_wheel(folder, name, own, extra_members=members, record=True)
    (folder / "torch-2.10.0-variants.json").write_bytes(DOCUMENT.read_bytes())
    return folder


@pytest.mark.parametrize(
    ("simulated", "expected"),
    [
        (machine(intel="12.55.8"), "'xpu'"),  # an Arc A770
        (machine(intel="12.60.7"), "'xpu'"),  # a Data Center GPU Max 1550
        (machine(), "'null'"),
        (machine(driver="13.0", gpus="9.0"), "'cuda13.0'"),
    ],
    ids=["arc-a770", "max-1550", "no-gpu", "h100"],
)
def test_the_torch_build_for_the_machine(
    wheels: Path, tmp_path: Path, simulated: dict[str, str], expected: str
) -> None:
    python = make_venv(tmp_path / "venv")
    argv = ["install", "--python", str(python), "--no-index", "-f", str(wheels), "torch"]
    result = wheelwise([*argv, "-v"], tmp_path / "cache", simulated)
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "torch") == expected
    # No plugin was needed, trusted or run.
    assert "plugin" not in result.stderr
    if expected == "'xpu'":
        assert "won by intel :: device_ip ::" in result.stdout


def test_without_an_intel_gpu_the_plan_says_why_xpu_is_rejected(
    wheels: Path, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv")
    argv = ["install", "--python", str(python), "--no-index", "-f", str(wheels), "torch"]
    result = wheelwise([*argv, "--dry-run"], tmp_path / "cache", machine())
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "xpu" in text
    assert "intel :: device_ip" in text
