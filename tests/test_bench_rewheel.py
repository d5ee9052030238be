"""bench/rewheel.py: wheels made from what this environment has installed (rich and what
it needs) are whole (wheelwise checks every member against the new RECORD) and put the
same files back."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from benchrun import ROOT

pytestmark = pytest.mark.bench


def test_wheels_of_rich_install_the_same_files(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "bench/rewheel.py", "rich", "-d", str(wheels), "--jobs", "2"],
        cwd=ROOT, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    names = {w.name.split("-")[0] for w in wheels.glob("*.whl")}
    assert names == {"rich", "markdown_it_py", "mdurl", "pygments"}
    assert not list(wheels.glob("*.part"))
    rich = next(wheels.glob("rich-*.whl"))
    assert rich.name == f"rich-{metadata.version('rich')}-py3-none-any.whl"
    with zipfile.ZipFile(rich) as archive:
        listed = archive.namelist()
    assert listed[-1].endswith(".dist-info/RECORD")
    assert not [n for n in listed if n.endswith((".pyc", "/INSTALLER", "/direct_url.json"))]

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    wheelwise = Path(sys.executable).parent / "wheelwise"
    subprocess.run(
        [str(wheelwise), "install", "-q", "--python", str(venv / "bin" / "python"),
         "--no-index", "--find-links", str(wheels), "rich"],
        check=True, timeout=120,
    )  # fmt: skip
    placed = next(venv.glob("lib/python*/site-packages/rich/console.py"))
    original = Path(str(metadata.distribution("rich").locate_file("rich/console.py")))
    assert placed.read_bytes() == original.read_bytes()
