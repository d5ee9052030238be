"""``--compile-bytecode``: no bytecode by default; with it, the target interpreter
compiles the installed modules after the transaction, and a failure there is a
warning, not a failed install. Real venvs, real installs from a find-links folder."""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib.util
import marshal
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from installkit import WHEEL, make_venv, pip, site_packages
from variantkit import wheelwise
from wheelfactory import make_wheel
from wheelwise.environment.installed import find_installed
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.install.bytecode import compile_bytecode, python_files

pytestmark = pytest.mark.slow

CACHE_TAG = sys.implementation.cache_tag


def modules_wheel(directory: Path) -> Path:
    """``mods`` 1.0: a package, a top-level module, a data file and a module that is
    not Python 3 (as some wheels carry)."""
    directory.mkdir(parents=True, exist_ok=True)
    members = {
        "mods/__init__.py": b"VALUE = 1\n",
        "mods/inner.py": b"def f():\n    return 2\n",
        "mods/py2_leftover.py": b"print 'hello'\n",
        "mods/data.txt": b"not code\n",
        "mods_top.py": b"TOP = True\n",
        "mods-1.0.dist-info/WHEEL": WHEEL,
    }
    return make_wheel(directory, "mods-1.0-py3-none-any.whl", extra_members=members, record=True)


def logged_python(venv: Path) -> Path:
    """A ``python`` in *venv* that notes each command line in ``calls.log`` and runs
    the venv's interpreter; ``FAIL_COMPILE`` makes it fail a compile run."""
    script = venv / "bin" / "python-logged"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> "{venv}/calls.log"\n'
        'case "$*" in *compileall*) if [ -n "$FAIL_COMPILE" ]; then '
        'echo "disk says no" >&2; exit 3; fi;; esac\n'
        f'exec "{venv}/bin/python" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def install(python: Path, tmp: Path, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``wheelwise install mods`` from the find-links folder ``tmp/wheels``."""
    wheels = tmp / "wheels"
    if not wheels.exists():
        modules_wheel(wheels)
    (tmp / "empty").mkdir(exist_ok=True)
    args = ["install", "--python", str(python), "--index-url", str(tmp / "empty")]
    return wheelwise([*args, "--find-links", str(wheels), "-q", *extra, "mods"], tmp / "cache", env)


def pyc_files(site: Path) -> set[str]:
    return {str(p.relative_to(site)) for p in site.rglob("*.pyc")}


@pytest.mark.skipif(sys.platform == "win32", reason="the logging interpreter is a shell script")
def test_no_bytecode_by_default_and_the_target_compiles_it_when_asked(tmp_path: Path) -> None:
    plain_venv = tmp_path / "plain"
    site = site_packages(make_venv(plain_venv))
    assert install(plain_venv / "bin" / "python", tmp_path).returncode == 0
    assert pyc_files(site) == set()

    venv = tmp_path / "venv"
    site = site_packages(make_venv(venv))
    result = install(logged_python(venv), tmp_path, "--compile-bytecode")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # the Python 2 module is skipped without a word
    assert pyc_files(site) == {
        f"mods/__pycache__/__init__.{CACHE_TAG}.pyc",
        f"mods/__pycache__/inner.{CACHE_TAG}.pyc",
        f"__pycache__/mods_top.{CACHE_TAG}.pyc",
    }
    # The target interpreter compiled them, isolated from its environment variables.
    calls = (venv / "calls.log").read_text().splitlines()  # a -c script spans lines
    assert sum(call.startswith("-I -c import compileall") for call in calls) == 1
    # The bytecode is what the interpreter itself would write: importing keeps it.
    before = {p: p.stat().st_mtime_ns for p in site.rglob("*.pyc")}
    imported = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import mods.inner, mods_top"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    assert {p: p.stat().st_mtime_ns for p in site.rglob("*.pyc")} == before
    # RECORD lists no bytecode (as uv's installs), and uninstalling removes it all.
    record = (site / "mods-1.0.dist-info" / "RECORD").read_text()
    assert ".pyc" not in record
    removed = wheelwise(
        ["uninstall", "-y", "--python", str(venv / "bin" / "python"), "mods"], tmp_path / "cache"
    )
    assert removed.returncode == 0, removed.stderr
    assert pyc_files(site) == set()
    assert not (site / "mods").exists()


def test_pip_uninstalls_what_was_compiled(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = make_venv(venv)
    site = site_packages(python)
    env = {"WHEELWISE_COMPILE_BYTECODE": "1"}  # the variable, as the flag
    assert install(python, tmp_path, **env).returncode == 0
    assert len(pyc_files(site)) == 3
    result = pip(python, "uninstall", "-y", "mods")
    assert result.returncode == 0, result.stderr
    assert pyc_files(site) == set()


@pytest.mark.skipif(sys.platform == "win32", reason="the logging interpreter is a shell script")
def test_a_failed_compile_is_a_warning_and_the_install_stands(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    site = site_packages(make_venv(venv))
    result = install(logged_python(venv), tmp_path, "--compile-bytecode", FAIL_COMPILE="1")
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "wheelwise: warning: compiling the installed modules failed (disk says no); they "
        "are compiled on first import\n"
    )
    assert (site / "mods" / "inner.py").is_file()
    assert (site / "mods-1.0.dist-info" / "RECORD").is_file()


@pytest.mark.skipif(sys.platform == "win32", reason="the slow interpreter is a shell script")
def test_a_compile_past_its_time_is_stopped_with_a_warning(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = make_venv(venv)
    env = TargetEnvironment.from_python(python)
    (env.purelib / "slow_mod.py").write_text("X = 1\n")
    dist_info = env.purelib / "slow_mod-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: slow-mod\nVersion: 1.0\n")
    (dist_info / "RECORD").write_text("slow_mod.py,,\nslow_mod-1.0.dist-info/RECORD,,\n")
    slow = venv / "bin" / "python-slow"
    slow.write_text(f'#!/bin/sh\nexec "{python}" -c "import time; time.sleep(30)"\n')
    slow.chmod(slow.stat().st_mode | stat.S_IXUSR)
    dists = list(find_installed(env, ["slow-mod"]).values())
    assert python_files(env, dists) == [env.purelib / "slow_mod.py"]
    problem = compile_bytecode(dataclasses.replace(env, python=slow), dists, timeout=0.5)
    assert problem == (
        "compiling the installed modules took longer than 0.5 s and was stopped; they are "
        "compiled on first import"
    )
    assert not list(env.purelib.rglob("*.pyc"))


def test_only_the_site_folders_modules_are_compiled(tmp_path: Path) -> None:
    """A RECORD row outside the site folders (a script, a data file) is not compiled."""
    venv = tmp_path / "venv"
    env = TargetEnvironment.from_python(make_venv(venv))
    dist_info = env.purelib / "odd-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: odd\nVersion: 1.0\n")
    (env.purelib / "odd.py").write_text("X = 1\n")
    rows = ["odd.py,,", "../../../bin/odd-script.py,,", "odd-1.0.dist-info/RECORD,,"]
    (dist_info / "RECORD").write_text("\n".join(rows) + "\n")
    dists = list(find_installed(env, ["odd"]).values())
    assert len(dists) == 1
    assert python_files(env, dists) == [env.purelib / "odd.py"]


def test_installing_a_lock_compiles_too(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    modules_wheel(wheels)
    lock = tmp_path / "pylock.toml"
    locked = wheelwise(
        ["lock", "--no-index", "--find-links", str(wheels), "mods", "-o", str(lock)],
        tmp_path / "cache",
    )
    assert locked.returncode == 0, locked.stderr
    python = make_venv(tmp_path / "venv")
    site = site_packages(python)
    synced = wheelwise(
        ["sync", "--python", str(python), "--compile-bytecode", "-q", str(lock)], tmp_path / "cache"
    )
    assert synced.returncode == 0, synced.stderr
    assert len(pyc_files(site)) == 3


@pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")
def test_a_run_killed_while_compiling_leaves_whole_bytecode_and_nothing_to_recover(
    tmp_path: Path,
) -> None:
    """SIGKILL to wheelwise and its compiling child once the first ``.pyc`` is
    written: the install was committed, each ``.pyc`` left is whole, there is
    nothing to recover, and uninstalling leaves nothing behind."""
    members = {f"many/m{i}.py": f"X = {i}\n".encode() * 200 for i in range(1500)}
    members["many/__init__.py"] = b""
    members["many-1.0.dist-info/WHEEL"] = WHEEL
    (tmp_path / "wheels").mkdir()
    make_wheel(tmp_path / "wheels", "many-1.0-py3-none-any.whl", extra_members=members, record=True)
    (tmp_path / "empty").mkdir()
    python = make_venv(tmp_path / "venv")
    site = site_packages(python)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WHEELWISE_")} | {
        "WHEELWISE_CACHE_DIR": str(tmp_path / "cache")
    }
    args = ["install", "-q", "--compile-bytecode", "--python", str(python)]
    args += ["--index-url", str(tmp_path / "empty"), "--find-links", str(tmp_path / "wheels")]
    process = subprocess.Popen(
        [sys.executable, "-m", "wheelwise", *args, "many"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not any((site / "many" / "__pycache__").glob("*.pyc")):
        assert process.poll() is None, "the install ended before it compiled anything"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    written = list(site.rglob("*.pyc"))
    assert written  # (almost always a part of the 1,501: the kill comes within 10 ms)
    for pyc in written:
        data = pyc.read_bytes()
        assert data[:4] == importlib.util.MAGIC_NUMBER, pyc
        marshal.loads(data[16:])
    recovered = wheelwise(["recover", "--python", str(python)], tmp_path / "cache")
    assert recovered.stdout.startswith("nothing to recover in "), recovered.stdout
    assert len(list((site / "many").glob("m*.py"))) == 1500
    # A kill between writing a .pyc's temporary file and renaming it leaves that
    # file (Python never reads it); uninstalling removes it with the module.
    removed = wheelwise(["uninstall", "-y", "--python", str(python), "many"], tmp_path / "cache")
    assert removed.returncode == 0, removed.stderr
    assert not (site / "many").exists()


_NAME = st.lists(st.sampled_from(["a", "b", ".", "pyc", "cpython-311", "1"]), max_size=9).map(
    "".join
)


@settings(max_examples=500, deadline=None)
@example(names={"a.c.pyc", "a.c.pyc.12", "a.pyc", "ab.c.pyc", "a.c.pyo", "a..pyc"}, stem="a")
@given(
    st.sets(_NAME.filter(lambda name: name not in ("", ".", "..")), max_size=6), _NAME.filter(bool)
)
def test_a_modules_bytecode_is_found_by_name_as_glob_finds_it(
    tmp_path_factory: pytest.TempPathFactory, names: set[str], stem: str
) -> None:
    """What an uninstall removes with STEM.py: ``STEM.*.pyc`` and ``STEM.*.pyc.*``,
    as glob's patterns say, and nothing else of the folder."""
    from wheelwise.environment.dist_files import FolderListings

    cache = tmp_path_factory.mktemp("pycache")
    for name in names:
        (cache / name).write_bytes(b"")
    expected = set(fnmatch.filter(names, f"{stem}.*.pyc")) | set(
        fnmatch.filter(names, f"{stem}.*.pyc.*")
    )
    assert set(FolderListings().bytecode_of(str(cache), stem)) == expected
