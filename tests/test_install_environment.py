"""The target environment: querying an interpreter, its tags and marker environment."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging import tags
from packaging.markers import default_environment

from installkit import make_venv, run_python
from wheelwise.environment.interpreter import QUERY_SCRIPT, TargetEnvironment, compute_tags
from wheelwise.models.errors import EnvironmentQueryError


def _query(python: Path | str) -> dict[str, Any]:
    proc = subprocess.run([str(python), "-c", QUERY_SCRIPT], capture_output=True, check=True)
    info: dict[str, Any] = json.loads(proc.stdout)
    return info


def test_current_interpreter_matches_packaging() -> None:
    env = TargetEnvironment.from_python(sys.executable)
    assert env.tags == list(tags.sys_tags())
    assert env.markers == default_environment()
    assert env.version_info == tuple(sys.version_info[:3])
    assert env.implementation == sys.implementation.name
    assert not env.is_externally_managed  # a virtual environment
    assert env.script_kind == ("posix" if sys.platform != "win32" else env.script_kind)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the C library is asked on Linux")
def test_query_without_glibc_looks_for_musl() -> None:
    # Where the C library does not say it is glibc, the query looks for musl's loader
    # with what it imports only then; here none is found: neither is named.
    hidden = "import os\ndel os.confstr\n" + QUERY_SCRIPT
    proc = subprocess.run([sys.executable, "-c", hidden], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["glibc"] is None
    if not list(Path("/lib").glob("ld-musl-*.so.1")):
        assert info["musl"] is None


def test_venv_without_packaging(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    assert run_python(python, "import packaging").returncode != 0
    env = TargetEnvironment.from_python(python)
    venv = (tmp_path / "venv").resolve()
    assert env.prefix.resolve() == venv
    for path in (env.purelib, env.platlib, env.scripts, env.headers):
        assert path.resolve().is_relative_to(venv), path
    assert env.data.resolve() == venv
    assert env.purelib.is_dir()
    assert (
        env.headers
        == env.prefix / "include" / "site" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    )
    assert env.scheme("alpha")["headers"] == str(env.headers / "alpha")
    # Same base interpreter: same markers and tags as here.
    assert env.markers == default_environment()
    assert env.tags == list(tags.sys_tags())


def _linux_info(**changes: Any) -> dict[str, Any]:
    info = _query(sys.executable)
    info["markers"] = dict(info["markers"], platform_system="Linux", sys_platform="linux")
    info.update(
        platform="linux-x86_64", maxsize_64bit=True, glibc="2.28", musl=None, mac_version=""
    )
    info["version_info"] = [3, 12, 1]
    info["implementation"] = "cpython"
    info["config"] = {
        "EXT_SUFFIX": ".cpython-312-x86_64-linux-gnu.so",
        "Py_DEBUG": 0,
        "Py_GIL_DISABLED": 0,
        "py_version_nodot": "312",
    }
    info.update(changes)
    return info


def _platforms(info: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(t.platform for t in compute_tags(info) if t.platform != "any"))


def test_linux_glibc_tags() -> None:
    info = _linux_info()
    computed = compute_tags(info)
    plats = _platforms(info)
    assert plats[0] == "linux_x86_64"
    assert plats[1:4] == ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_26_x86_64"]
    assert "manylinux_2_29_x86_64" not in plats
    assert plats.index("manylinux2014_x86_64") == plats.index("manylinux_2_17_x86_64") + 1
    assert plats[-3:] == ["manylinux_2_6_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64"]
    assert "manylinux2010_x86_64" in plats
    assert not any(p.startswith("musllinux") for p in plats)
    assert computed[0] == tags.Tag("cp312", "cp312", "linux_x86_64")
    assert tags.Tag("cp312", "abi3", "manylinux_2_17_x86_64") in computed
    assert tags.Tag("cp38", "abi3", "manylinux1_x86_64") in computed
    assert tags.Tag("py3", "none", "any") in computed
    assert tags.Tag("cp312", "none", "any") in computed


def test_linux_aarch64_stops_at_2_17_and_musl() -> None:
    plats = _platforms(_linux_info(platform="linux-aarch64", glibc="2.31"))
    assert plats[-2:] == ["manylinux_2_17_aarch64", "manylinux2014_aarch64"]
    musl = _platforms(_linux_info(glibc=None, musl="1.2"))
    assert musl == [
        "linux_x86_64",
        "musllinux_1_2_x86_64",
        "musllinux_1_1_x86_64",
        "musllinux_1_0_x86_64",
    ]


def test_linux_32bit_interpreter_and_debug_abi() -> None:
    info = _linux_info(maxsize_64bit=False)
    info["config"] = dict(info["config"], Py_DEBUG=1)
    computed = compute_tags(info)
    assert _platforms(info)[:2] == ["linux_i686", "manylinux_2_28_i686"]
    assert computed[0] == tags.Tag("cp312", "cp312d", "linux_i686")
    assert tags.Tag("cp312", "cp312", "linux_i686") in computed


def test_free_threaded_abi() -> None:
    info = _linux_info(version_info=[3, 13, 0])
    info["config"] = dict(info["config"], Py_GIL_DISABLED=1, py_version_nodot="313")
    computed = compute_tags(info)
    assert computed[0] == tags.Tag("cp313", "cp313t", "linux_x86_64")
    assert tags.Tag("cp313", "abi3", "linux_x86_64") not in computed


def test_macos_and_windows_tags() -> None:
    info = _linux_info(platform="macosx-11.0-arm64", glibc=None, mac_version="14.2")
    info["markers"] = dict(
        info["markers"], platform_system="Darwin", sys_platform="darwin", platform_machine="arm64"
    )
    plats = _platforms(info)
    assert plats[:2] == ["macosx_14_0_arm64", "macosx_14_0_universal2"]
    assert "macosx_11_0_arm64" in plats
    assert "macosx_10_16_universal2" in plats
    win = _linux_info(platform="win-amd64", glibc=None)
    win["markers"] = dict(win["markers"], platform_system="Windows", sys_platform="win32")
    win["config"] = dict(win["config"], EXT_SUFFIX=".cp312-win_amd64.pyd")
    assert _platforms(win) == ["win_amd64"]
    assert TargetEnvironment.from_info(win, python=Path("python.exe")).script_kind == "win-amd64"


def test_pypy_tags() -> None:
    info = _linux_info(implementation="pypy", version_info=[3, 10, 14])
    info["config"] = dict(
        info["config"], EXT_SUFFIX=".pypy310-pp73-x86_64-linux-gnu.so", py_version_nodot="310"
    )
    computed = compute_tags(info)
    assert computed[0] == tags.Tag("pp310", "pypy310_pp73", "linux_x86_64")
    assert tags.Tag("pp3", "none", "any") in computed
    assert tags.Tag("py3", "none", "manylinux_2_17_x86_64") in computed


def test_externally_managed_system_interpreter(tmp_path: Path) -> None:
    info = _query(sys.executable)
    stdlib = tmp_path / "stdlib"
    stdlib.mkdir()
    (stdlib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=no\n")
    info["paths"]["stdlib"] = str(stdlib)
    assert not TargetEnvironment.from_info(info, python=Path(sys.executable)).is_externally_managed
    info["base_prefix"] = info["prefix"]
    env = TargetEnvironment.from_info(info, python=Path(sys.executable))
    assert env.externally_managed == "[externally-managed]\nError=no\n"


def test_query_errors(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentQueryError, match="no such Python"):
        TargetEnvironment.from_python(tmp_path / "missing" / "python")
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(EnvironmentQueryError, match=r"exit 3\): broken"):
        TargetEnvironment.from_python(broken)
    liar = tmp_path / "liar"
    liar.write_text("#!/bin/sh\necho not json\n")
    liar.chmod(0o755)
    with pytest.raises(EnvironmentQueryError, match="unreadable"):
        TargetEnvironment.from_python(liar)


def test_the_query_can_start_before_the_installer_loads() -> None:
    """`wheelwise install` starts the target's query before importing the installer
    (it answers while those modules load): the command's module and the environment
    module must not pull in the HTTP client, the resolver or the unpacker."""
    code = (
        "import sys\n"
        "import wheelwise.cli.install_cmd, wheelwise.environment.interpreter\n"
        "heavy = {'httpx', 'resolvelib', 'installer', 'filelock', 'wheelwise.install.plan'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_activated_environment_is_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from variantkit import wheelwise
    from wheelwise.environment.interpreter import default_python, find_python

    venv = tmp_path / "venv"
    python = make_venv(venv)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    assert default_python() == sys.executable
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    assert Path(default_python()) == python
    # A virtual environment's folder names its interpreter, as uv takes it.
    assert find_python(venv) == python
    with pytest.raises(EnvironmentQueryError, match="a folder without bin/python"):
        find_python(tmp_path)
    # The commands take it when no --python is given (as uv; pip uses its own).
    listed = wheelwise(["list", "--json"], tmp_path / "cache", {"VIRTUAL_ENV": str(venv)})
    assert listed.returncode == 0, listed.stderr
    assert [row["name"] for row in json.loads(listed.stdout)] == []
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "gone"))
    with pytest.raises(EnvironmentQueryError, match="no bin/python there"):
        default_python()
    stale = wheelwise(["list"], tmp_path / "cache", {"VIRTUAL_ENV": str(tmp_path / "gone")})
    assert stale.returncode == 2
    assert stale.stderr.count("\n") == 1, stale.stderr
    assert "VIRTUAL_ENV=" in stale.stderr
