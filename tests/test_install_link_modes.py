"""Link modes: real installs from an index on 127.0.0.1 (hashes: every wheel goes
through the unpacked cache), each file of the environment checked against the
cache's: the same inode (hardlink), a link (symlink), or its own copy (copy, clone).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexkit import wheelwise_serve
from installkit import alpha_wheel, make_venv, run_python, site_packages
from variantkit import wheelwise
from wheelwise.cache.unpacked import UnpackedStore, verify_entry

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX links and modes"),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    wheels = tmp_path_factory.mktemp("wheels")
    alpha_wheel(wheels, "1.0")
    alpha_wheel(wheels, "2.0")
    with wheelwise_serve(wheels) as base:
        yield f"{base}/simple/"


def install(
    tmp_path: Path,
    index: str,
    cache: Path,
    *args: str,
    venv: str = "venv",
    env: dict[str, str] | None = None,
) -> tuple[Path, str]:
    python = make_venv(tmp_path / venv)
    argv = ["install", "-q", "--python", str(python), "--index-url", index, *args]
    result = wheelwise(argv, cache, env)
    assert result.returncode == 0, result.stderr
    return python, result.stderr


def cached_file(cache: Path, member: str) -> Path:
    [found] = [p for p in (cache / "unpacked").rglob(member) if "files" in p.parts]
    return found


def assert_own_copy(python: Path, cache: Path) -> None:
    """The environment's module is a file of its own, with the cache's content."""
    installed = site_packages(python) / "alpha" / "__init__.py"
    cached = cached_file(cache, "alpha/__init__.py")
    assert not os.path.samefile(installed, cached)
    assert installed.read_bytes() == cached.read_bytes()
    assert os.stat(installed).st_nlink == 1


def check_works(python: Path) -> None:
    ran = run_python(python, "import alpha; print(alpha.VERSION)")
    assert ran.stdout.strip() == "'1.0'" or ran.stdout.strip() == "1.0", ran.stderr
    script = python.parent / "alpha-cli"
    assert os.access(script, os.X_OK)


def test_hardlink_is_the_default_and_shares_the_cache_files(tmp_path: Path, index: str) -> None:
    cache = tmp_path / "cache"
    python, stderr = install(tmp_path, index, cache, "alpha==1.0")
    assert stderr == ""
    check_works(python)
    installed = site_packages(python) / "alpha" / "__init__.py"
    assert os.path.samefile(installed, cached_file(cache, "alpha/__init__.py"))
    data = site_packages(python) / ".." / ".." / ".." / "share" / "alpha" / "readme.txt"
    assert os.path.samefile(data, cached_file(cache, "readme.txt"))
    # The script gets this environment's interpreter: its own file.
    script = python.parent / "alpha-cli"
    assert os.lstat(script).st_nlink == 1
    # A second environment links the same files; nothing is unpacked again.
    other, _ = install(tmp_path, index, cache, "alpha==1.0", venv="other")
    assert os.path.samefile(site_packages(other) / "alpha" / "__init__.py", installed)
    assert os.stat(installed).st_nlink == 3  # the cache's, and two environments'
    # Uninstalling only unlinks: the cache and the other environment keep theirs.
    removed = wheelwise(["uninstall", "-y", "--python", str(python), "alpha"], cache)
    assert removed.returncode == 0, removed.stderr
    assert not installed.exists()
    check_works(other)
    store = UnpackedStore(cache / "unpacked", cache / "scratch")
    for folder in store.entries():
        entry = store.read_entry(folder)
        assert entry is not None
        assert verify_entry(entry) == []


def test_an_upgrade_replaces_linked_files(tmp_path: Path, index: str) -> None:
    cache = tmp_path / "cache"
    python, _ = install(tmp_path, index, cache, "alpha==1.0")
    old = cached_file(cache, "alpha/old_only.py")
    result = wheelwise(
        ["install", "--python", str(python), "--index-url", index, "alpha==2.0"], cache
    )
    assert result.returncode == 0, result.stderr
    assert not (site_packages(python) / "alpha" / "old_only.py").exists()
    assert old.read_bytes() == b"OLD = True\n"  # the 1.0 entry is untouched
    ran = run_python(python, "import alpha; print(alpha.VERSION)")
    assert ran.stdout.strip() == "2.0"
    # One line per change (the source with -v), then the count and the time.
    lines = result.stdout.splitlines()
    assert lines[0] == "upgraded alpha 1.0 -> 2.0"
    assert re.fullmatch(r"changed 1 package in \d+\.\d\d s", lines[1])
    back = wheelwise(
        ["install", "-v", "--python", str(python), "--index-url", index, "alpha==1.0"], cache
    )
    assert back.returncode == 0, back.stderr
    assert back.stdout.splitlines()[0] == (
        f"downgraded alpha 2.0 -> 1.0 (non-variant; from {index})"
    )


@pytest.mark.parametrize("how", ["flag", "env", "config"])
def test_copy_gives_files_of_their_own(tmp_path: Path, index: str, how: str) -> None:
    cache = tmp_path / "cache"
    args: list[str] = []
    env: dict[str, str] = {}
    if how == "flag":
        args = ["--link-mode", "copy"]
    elif how == "env":
        env["WHEELWISE_LINK_MODE"] = "copy"
    else:
        config = tmp_path / "config.toml"
        config.write_text('[install]\nlink-mode = "copy"\n')
        env["WHEELWISE_CONFIG"] = str(config)
    python, stderr = install(tmp_path, index, cache, *args, "alpha==1.0", env=env)
    assert stderr == ""
    check_works(python)
    assert_own_copy(python, cache)
    installed = site_packages(python) / "alpha" / "__init__.py"
    assert stat.S_IMODE(os.stat(installed).st_mode) & 0o600 == 0o600


def test_a_bad_configured_link_mode_is_one_error_line(tmp_path: Path, index: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[install]\nlink-mode = "teleport"\n')
    python = make_venv(tmp_path / "venv")
    argv = [sys.executable, "-m", "wheelwise", "install", "-q", "--python", str(python)]
    argv += ["--index-url", index, "alpha"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("WHEELWISE_")}
    env |= {"WHEELWISE_CONFIG": str(config), "WHEELWISE_CACHE_DIR": str(tmp_path / "cache")}

    result = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert "link-mode = 'teleport' is not one of hardlink, clone, copy, symlink" in line


def test_symlink_points_into_the_cache(tmp_path: Path, index: str) -> None:
    cache = tmp_path / "cache"
    python, _ = install(tmp_path, index, cache, "--link-mode", "symlink", "alpha==1.0")
    check_works(python)
    installed = site_packages(python) / "alpha" / "__init__.py"
    assert installed.is_symlink()
    assert Path(os.readlink(installed)) == cached_file(cache, "alpha/__init__.py")
    # RECORD lists it, so uninstalling removes the link, not what it points to.
    removed = wheelwise(["uninstall", "-y", "--python", str(python), "alpha"], cache)
    assert removed.returncode == 0, removed.stderr
    assert not os.path.lexists(installed)
    assert cached_file(cache, "alpha/__init__.py").is_file()


def _can_clone(folder: Path) -> str | None:
    """None when *folder*'s file system clones files; else why not."""
    source, target = folder / "clone-probe-a", folder / "clone-probe-b"
    source.write_bytes(b"x" * 4096)
    try:
        with source.open("rb") as src, target.open("wb") as dst:
            fcntl.ioctl(dst.fileno(), 0x40049409, src.fileno())
    except OSError as exc:
        return f"{folder}'s file system cannot clone files ({errno.errorcode[exc.errno or 0]})"
    finally:
        source.unlink()
        target.unlink(missing_ok=True)
    return None


def test_clone_gives_files_of_their_own_or_falls_back_to_copy(tmp_path: Path, index: str) -> None:
    cache = tmp_path / "cache"
    python, stderr = install(tmp_path, index, cache, "--link-mode", "clone", "alpha==1.0")
    assert stderr == ""  # a file system that cannot clone is no error: files are copied
    check_works(python)
    assert_own_copy(python, cache)


def test_clone_shares_the_blocks_where_the_file_system_can(tmp_path: Path, index: str) -> None:
    reason = _can_clone(tmp_path)
    if reason is not None:
        pytest.skip(reason)
    cache = tmp_path / "cache"
    python, _ = install(tmp_path, index, cache, "--link-mode", "clone", "alpha==1.0")
    installed = site_packages(python) / "alpha" / "__init__.py"
    filefrag = shutil.which("filefrag") or shutil.which("filefrag", path="/usr/sbin:/sbin")
    if filefrag is not None:  # the extent is the cache file's, shared (FIEMAP)
        extents = subprocess.run([filefrag, "-v", str(installed)], capture_output=True, text=True)
        assert "shared" in extents.stdout, extents.stdout
    # A write to the clone leaves the cache's file as it was.
    with installed.open("ab") as stream:
        stream.write(b"# edited\n")
    assert b"# edited" not in cached_file(cache, "alpha/__init__.py").read_bytes()


def test_a_cache_on_another_file_system_falls_back_to_copies(tmp_path: Path, index: str) -> None:
    """The cache on tmpfs (/dev/shm), the environment on disk: no hard link can
    cross; the default falls back without a word, an explicit hardlink says why."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no /dev/shm on another file system than the temporary folder")
    cache = Path(os.fspath(shm)) / f"wheelwise-test-{os.getpid()}-{tmp_path.name}"
    try:
        python, stderr = install(tmp_path, index, cache, "alpha==1.0")
        assert stderr == ""
        check_works(python)
        assert_own_copy(python, cache)
        other, stderr = install(
            tmp_path, index, cache, "--link-mode", "hardlink", "alpha==1.0", venv="other"
        )
        check_works(other)
        [line] = stderr.splitlines()
        assert "cannot hard-link from the cache" in line
        assert "different file systems" in line
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def test_cache_verify_finds_a_changed_file_and_removes_its_entry(
    tmp_path: Path, index: str
) -> None:
    cache = tmp_path / "cache"
    install(tmp_path, index, cache, "alpha==1.0")
    good = wheelwise(["cache", "verify"], cache)
    assert good.returncode == 0, good.stderr
    assert good.stdout.startswith("checked 1 unpacked wheel (")
    # Same size, same time: only reading it finds the change.
    cached = cached_file(cache, "alpha/__init__.py")
    info = os.stat(cached)
    data = cached.read_bytes()
    cached.write_bytes(data.replace(b"1.0", b"6.6"))
    os.utime(cached, ns=(info.st_atime_ns, info.st_mtime_ns))
    bad = wheelwise(["cache", "verify"], cache)
    assert bad.returncode == 1
    assert "damaged: alpha-1.0-py3-none-any.whl in " in bad.stdout
    assert "alpha/__init__.py: changed since it was unpacked" in bad.stdout
    assert "wheelwise cache verify --remove" in bad.stderr
    fixed = wheelwise(["cache", "verify", "--remove"], cache)
    assert fixed.returncode == 0
    assert "removed: alpha-1.0-py3-none-any.whl" in fixed.stdout
    assert not list((cache / "unpacked").rglob("entry.json"))
    # The next install unpacks it again, from the wheel the cache still holds.
    again, _ = install(tmp_path, index, cache, "alpha==1.0", venv="again")
    check_works(again)
    listed = json.loads(wheelwise(["cache", "info", "--json"], cache).stdout)
    kinds = {kind["name"]: kind for kind in listed["kinds"]}
    assert kinds["unpacked"]["files"] > 0
