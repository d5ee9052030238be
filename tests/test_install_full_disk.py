"""A full disk mid-unpack: the cache, or the target, on a 3 MiB tmpfs (mounted in a
user namespace: ``fulldisk_driver.py``) and a wheel of 4 MiB of files.

* cache full: the wheel cannot be kept unpacked; it is unpacked straight into the
  environment, with one warning, and no half entry or scratch folder is left;
* cache full under a wheel unpacked as it downloads (too big for memory, so it has
  nowhere else to go): one error line, nothing changed or half-published;
* target full: one error line, the environment exactly as it was, and the cache's
  entry whole (it was published before linking, streamed or not);
* ``variant make`` and ``variant strip`` into a full folder: one error line naming the
  output, and no temporary file left.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexkit import wheelwise_serve
from wheelfactory import make_wheel

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="tmpfs")]

DRIVER = Path(__file__).with_name("fulldisk_driver.py")
WHEEL_META = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _namespaces() -> str | None:
    """None when ``unshare -rm`` can mount a tmpfs here; else why not."""
    if shutil.which("unshare") is None:
        return "no unshare command"
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt || exit 3"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"cannot mount a tmpfs in a user namespace: {probe.stderr.strip()}"
    return None


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    reason = _namespaces()
    if reason is not None:
        pytest.skip(reason)
    wheels = tmp_path_factory.mktemp("wheels")
    members = {f"big/part{i}.bin": os.urandom(512 << 10) for i in range(8)}
    members["big/__init__.py"] = b"SIZE = 4\n"
    members["big-1.0.dist-info/WHEEL"] = WHEEL_META
    make_wheel(wheels, "big-1.0-py3-none-any.whl", extra_members=members, record=True)
    owner = {"big/__init__.py": b"OWNER = True\n", "bigowner-1.0.dist-info/WHEEL": WHEEL_META}
    make_wheel(wheels, "bigowner-1.0-py3-none-any.whl", extra_members=owner, record=True)
    with wheelwise_serve(wheels) as base:
        yield f"{base}/simple/"


def drive(
    tmp_path: Path,
    where: str,
    index: str,
    *,
    stream: bool = False,
    ahead: bool = False,
    head_start: bool = False,
    preinstall: str = "",
) -> dict[str, object]:
    flags = {"STREAM": stream, "AHEAD": ahead, "HEAD_START": head_start}
    result = subprocess.run(
        ["unshare", "-rm", sys.executable, str(DRIVER), where, str(tmp_path), index, "3m", "big"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={
            **os.environ,
            **{name: "1" if on else "0" for name, on in flags.items()},
            "PREINSTALL": preinstall,
        },
    )
    assert result.returncode == 0, result.stderr
    found: dict[str, object] = json.loads(result.stdout)
    return found


@pytest.mark.parametrize("ahead", [False, True], ids=["in-transaction", "ahead"])
def test_a_full_cache_installs_straight_into_the_environment(
    tmp_path: Path, index: str, ahead: bool
) -> None:
    """ahead: the cache fills while the background thread unpacks the wheel before
    the transaction; the transaction then tries, and warns, as always."""
    found = drive(tmp_path, "cache", index, ahead=ahead)
    assert found["returncode"] == 0, found["stderr"]
    [line] = str(found["stderr"]).splitlines()
    assert line.startswith("wheelwise: warning: cannot keep wheels unpacked in the cache ")
    assert "No space left on device" in line
    assert found["unchanged"] is False  # installed
    assert found["entries"] == []  # nothing half-published
    assert found["scratch"] == []


def test_a_full_cache_under_a_wheel_unpacked_as_it_downloads_is_one_error(
    tmp_path: Path, index: str
) -> None:
    """A wheel too big for memory has nowhere else to go: one error line, the
    environment unchanged, nothing half-published."""
    found = drive(tmp_path, "cache", index, stream=True)
    assert found["returncode"] != 0
    [line] = str(found["stderr"]).splitlines()
    assert line.startswith("wheelwise: error: http://127.0.0.1:")
    assert "big-1.0-py3-none-any.whl: cannot save it in " in line
    assert "No space left on device" in line
    assert "free some space there, or set WHEELWISE_CACHE_DIR" in line
    assert found["unchanged"] is True
    assert found["entries"] == []
    assert found["scratch"] == []


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_full_target_is_one_error_and_leaves_it_unchanged(
    tmp_path: Path, index: str, stream: bool
) -> None:
    found = drive(tmp_path, "target", index, stream=stream)
    assert found["returncode"] != 0
    [line] = str(found["stderr"]).splitlines()
    assert line.startswith("wheelwise: error: installing big-1.0-py3-none-any.whl failed: ")
    assert "no space left on the file system of " in line
    assert "free some space" in line
    assert found["unchanged"] is True
    assert found["entries"] == [True]  # published whole before linking
    assert found["scratch"] == []


def test_a_full_target_after_a_file_set_aside_puts_it_back(tmp_path: Path, index: str) -> None:
    """bigowner installed ships big/__init__.py with other bytes: the install of big
    moves it into the backup, then fills the disk; the rollback puts it back."""
    found = drive(tmp_path, "target", index, preinstall="bigowner")
    assert found["returncode"] != 0
    [line] = str(found["stderr"]).splitlines()
    assert line.startswith("wheelwise: error: installing big-1.0-py3-none-any.whl failed: ")
    assert "no space left on the file system of " in line
    assert found["unchanged"] is True
    assert found["scratch"] == []


def test_a_full_target_under_a_head_start_is_one_error_and_leaves_it_unchanged(
    tmp_path: Path, index: str
) -> None:
    """The wheel's entry in the cache (on another file system: copied, not linked),
    placed ahead by a head start that runs out of space: rolled back, then the
    install made again the usual way, which runs out of space too and says so once."""
    found = drive(tmp_path, "target", index, head_start=True)
    assert found["returncode"] != 0
    [line] = str(found["stderr"]).splitlines()
    assert line.startswith("wheelwise: error: installing big-1.0-py3-none-any.whl failed: ")
    assert "no space left on the file system of " in line
    assert found["unchanged"] is True
    assert found["entries"] == [True]
    log = (tmp_path / "head-start.log").read_text().splitlines()
    assert log == [
        "offered big-1.0-py3-none-any.whl",
        "opened",
        "adopted big-1.0-py3-none-any.whl",
        "compared beside the worker",
        "failed",
    ]


def test_a_full_target_folder_is_one_error_and_leaves_it_unchanged(
    tmp_path: Path, index: str
) -> None:
    """``--target`` a folder on the full file system: one error line, the folder as it
    was (empty, without a lock or journal of wheelwise's: those are in the cache)."""
    found = drive(tmp_path, "target-folder", index)
    assert found["returncode"] != 0
    [line] = str(found["stderr"]).splitlines()
    assert line.startswith("wheelwise: error: installing big-1.0-py3-none-any.whl failed: ")
    assert "no space left on the file system of " in line
    assert found["unchanged"] is True
    assert found["dot_files"] == []
    assert found["scratch"] == []


@pytest.mark.parametrize("command", ["make", "strip"])
def test_variant_tools_into_a_full_folder_are_one_error_and_leave_nothing(
    tmp_path: Path, command: str
) -> None:
    reason = _namespaces()
    if reason is not None:
        pytest.skip(reason)
    members = {f"big/part{i}.bin": os.urandom(256 << 10) for i in range(4)}
    wheel = make_wheel(tmp_path, "big-1.0-py3-none-any.whl", extra_members=members, record=True)
    wheelwise = [sys.executable, "-m", "wheelwise", "variant"]
    made = tmp_path / "made"
    subprocess.run(
        [*wheelwise, "make", "-p", "x86_64 :: level :: v3", "--label", "v3", "-o", made, wheel],
        check=True,
        capture_output=True,
    )
    args = ["make", "-p", "x86_64 :: level :: v3", str(wheel)]
    if command == "strip":
        args = ["strip", str(made / "big-1.0-py3-none-any-v3.whl")]
    small = tmp_path / "small"
    small.mkdir()
    # The tmpfs lives in the namespace: what is left on it is listed there.
    script = 'mount -t tmpfs -o size=256k tmpfs "$0" || exit 90; "$@"; s=$?; ls -A "$0"; exit $s'
    result = subprocess.run(
        [
            "unshare",
            "-rm",
            "sh",
            "-c",
            script,
            str(small),
            *wheelwise,
            *args[:1],
            "-o",
            str(small),
            *args[1:],
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"wheelwise: error: {small}/big-1.0-py3-none-any"), line
    assert line.endswith(
        ": cannot write it (No space left on device); free some space there, or write it elsewhere"
    ), line
    assert result.stdout == ""  # nothing left in the folder
