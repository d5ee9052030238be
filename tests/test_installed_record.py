"""The installed RECORD: a wheel linked from the unpacked cache, or unpacked straight
in, gets byte for byte the RECORD installer's own destination writes, whatever its
files are called and wherever its ``.data`` folders go."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import sys
from pathlib import Path

import installer
import pytest
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile

from installkit import make_venv, site_packages
from wheelfactory import make_wheel
from wheelwise.cache.unpacked import UnpackedStore
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.fetch.verify import verify_wheel
from wheelwise.install.link import Placement
from wheelwise.install.transaction import install_wheels

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

_WHEEL = b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
# Names that csv must quote, or that sort differently as bytes and as text.
_ODD_NAMES = ("a,b.py", 'quo"te.py', "sp ace.py", "ünï.py", "Z.py", "_under.py")


def _wheel(directory: Path) -> Path:
    data = "odd-1.0.data"
    members = {f"odd/{name}": name.encode() for name in _ODD_NAMES}
    members |= {
        "odd-1.0.dist-info/WHEEL": _WHEEL,
        "odd-1.0.dist-info/entry_points.txt": b"[console_scripts]\nodd-cli = odd:main\n",
        f"{data}/scripts/odd-tool": b"#!python\nprint('tool')\n",
        f"{data}/data/share/odd/notes,1.txt": b"notes\n",
        f"{data}/headers/odd.h": b"/* odd */\n",
        "other/b.py": b"",
    }
    return make_wheel(directory, "odd-1.0-py3-none-any.whl", extra_members=members, record=True)


def _installed_record(tmp_path: Path, placement: Placement | None) -> bytes:
    """RECORD as installed into a new venv, always at the same path: scripts name
    its interpreter."""
    wheels = tmp_path / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir()
    wheel = _wheel(wheels)
    verified = verify_wheel(wheel)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    verified = dataclasses.replace(verified, hashes={"sha256": digest})
    shutil.rmtree(tmp_path / "venv", ignore_errors=True)
    env = TargetEnvironment.from_python(make_venv(tmp_path / "venv"))
    [installed] = install_wheels(env, [verified], placement=placement).installed
    return (installed.location / "RECORD").read_bytes()


def _installers_record(tmp_path: Path) -> bytes:
    """RECORD as installer's own destination writes it, into the same venv path."""
    wheels = tmp_path / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir()
    shutil.rmtree(tmp_path / "venv", ignore_errors=True)
    env = TargetEnvironment.from_python(make_venv(tmp_path / "venv"))
    destination = SchemeDictionaryDestination(
        env.scheme("odd"), interpreter=os.path.abspath(env.python), script_kind="posix"
    )
    with WheelFile.open(_wheel(wheels)) as source:
        installer.install(source, destination, additional_metadata={"INSTALLER": b"wheelwise\n"})
    [record] = (site_packages(env.python)).glob("odd-1.0.dist-info/RECORD")
    return record.read_bytes()


def test_a_linked_install_writes_the_record_installer_writes(tmp_path: Path) -> None:
    store = UnpackedStore(tmp_path / "cache" / "unpacked", tmp_path / "cache" / "scratch")
    expected = _installers_record(tmp_path)
    unpacked = _installed_record(tmp_path, None)
    linked = _installed_record(tmp_path, Placement(store))
    assert list(store.entries()), "the wheel went through the unpacked cache"
    assert unpacked == expected
    assert linked == expected
    text = linked.decode()
    # The rows the cache's files gave, and those written afresh, are all there.
    assert '"odd/a,b.py",sha256=' in text
    assert '"odd/quo""te.py",sha256=' in text
    assert "../../../bin/odd-tool,sha256=" in text
    assert "../../../include/" in text
    assert "odd-1.0.dist-info/INSTALLER,sha256=" in text
    assert text.endswith("\n")
    assert "odd-1.0.dist-info/RECORD,," in text
