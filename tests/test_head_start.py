"""Head starts (wheelwise.install.head_start): real installs from an index on
127.0.0.1 through the unpacked cache, each wheel worth one (headstartdriver.py):
taken over when the plan installs the wheel placed ahead, rolled back when the
resolution fails after it began, made again the usual way when it fails, and
rolled back with the changed cache entry it was placing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexkit import wheelwise_serve
from installkit import LOCK_NAME, alpha_wheel, make_venv, run_python, site_packages, tree_hash
from wheelfactory import make_wheel
from wheelwise.cache.unpacked import UnpackedStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="a head start forks (Linux)"),
]

DRIVER = Path(__file__).with_name("headstartdriver.py")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    wheels = tmp_path_factory.mktemp("wheels")
    alpha_wheel(wheels, "1.0")
    # many: 1,200 files, as a big wheel has (torch: 12,000).
    make_wheel(
        wheels,
        "many-1.0-py3-none-any.whl",
        extra_members={f"many/m{i}.py": b"" for i in range(1200)},
        record=True,
    )
    # gamma needs a project the index lacks: resolving fails after gamma is pinned.
    make_wheel(
        wheels,
        "gamma-1.0-py3-none-any.whl",
        extra_members={"gamma/__init__.py": b"G = 1\n"},
        record=True,
        requires_dist=["nowhere-to-be-found"],
    )
    with wheelwise_serve(wheels) as base:
        yield f"{base}/simple/"


def driven(
    tmp_path: Path,
    cache: Path,
    *args: str,
    fail: bool = False,
    real: bool = False,
    no_fork: bool = False,
    read_ahead: int | None = None,
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    log = tmp_path / "head-start.log"
    log.unlink(missing_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WHEELWISE_") and k.lower() not in ("http_proxy", "https_proxy")
    }
    env.update(WHEELWISE_CACHE_DIR=str(cache), NO_PROXY="*", HEAD_START_LOG=str(log))
    if fail:
        env["HEAD_START_FAIL"] = "1"
    if real:
        env["HEAD_START_REAL"] = "1"
    if no_fork:
        env["HEAD_START_NO_FORK"] = "1"
    if read_ahead is not None:
        env["HEAD_START_READ_AHEAD"] = str(read_ahead)
    result = subprocess.run(
        [sys.executable, str(DRIVER), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return result, log.read_text().splitlines() if log.exists() else []


def install_args(python: Path, index: str, *requirements: str) -> list[str]:
    return ["install", "-q", "--python", str(python), "--index-url", index, *requirements]


def warm_cache(tmp_path: Path, index: str, cache: Path, requirement: str) -> None:
    """The wheel unpacked in *cache* by a first install (which has nothing to start
    ahead: the entry is made during it)."""
    python = make_venv(tmp_path / "first")
    result, log = driven(tmp_path, cache, *install_args(python, index, *requirement.split()))
    assert result.returncode == 0, result.stderr
    assert "opened" not in log


def alpha_again(tmp_path: Path, index: str, **flags: bool) -> tuple[Path, Path, list[str]]:
    """alpha 1.0 installed into a new venv through the driver (*flags*), its entry in
    the cache already: the venv's interpreter, the cache, the head start's log."""
    cache = tmp_path / "cache"
    warm_cache(tmp_path, index, cache, "alpha==1.0")
    python = make_venv(tmp_path / "venv")
    result, log = driven(tmp_path, cache, *install_args(python, index, "alpha==1.0"), **flags)
    assert result.returncode == 0, result.stderr
    return python, cache, log


def assert_clean(venv: Path) -> None:
    """No journal, no backup folder left behind."""
    leftovers = [p.name for p in venv.rglob(".wheelwise-*") if p.name != LOCK_NAME]
    assert leftovers == []


def test_the_plan_takes_the_head_start_over(tmp_path: Path, index: str) -> None:
    python, cache, log = alpha_again(tmp_path, index)
    assert log == [
        "offered alpha-1.0-py3-none-any.whl",
        "opened",
        "adopted alpha-1.0-py3-none-any.whl",
        "compared beside the worker",
    ]
    ran = run_python(python, "import alpha; print(alpha.VERSION)")
    assert ran.stdout.strip() == "1.0", ran.stderr
    assert os.access(python.parent / "alpha-cli", os.X_OK)
    # Linked from the cache, and recorded as any install records it.
    installed = site_packages(python) / "alpha" / "__init__.py"
    [cached] = list((cache / "unpacked").rglob("alpha/__init__.py"))
    assert os.path.samefile(installed, cached)
    record = (site_packages(python) / "alpha-1.0.dist-info" / "RECORD").read_text()
    assert "alpha/__init__.py,sha256=" in record
    assert (site_packages(python) / "alpha-1.0.dist-info" / "INSTALLER").read_text() == (
        "wheelwise\n"
    )
    assert_clean(tmp_path / "venv")
    # The same environment as an install without a head start makes.
    plain = make_venv(tmp_path / "plain")
    without = subprocess.run(
        [sys.executable, "-m", "wheelwise", *install_args(plain, index, "alpha==1.0")],
        capture_output=True,
        text=True,
        env={**os.environ, "WHEELWISE_CACHE_DIR": str(cache), "NO_PROXY": "*"},
        check=False,
    )
    assert without.returncode == 0, without.stderr
    assert _files(site_packages(python)) == _files(site_packages(plain))


def _files(site: Path) -> dict[str, bytes]:
    """Each file under *site* (bytecode left out) and its content; RECORD's rows but
    the script's, which starts with its own environment's interpreter."""
    found = {
        str(p.relative_to(site)): p.read_bytes()
        for p in site.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    record = "alpha-1.0.dist-info/RECORD"
    rows = found[record].decode().splitlines()
    found[record] = "\n".join(row for row in rows if "/bin/" not in row).encode()
    return found


def test_a_resolution_failing_after_the_head_start_changes_nothing(
    tmp_path: Path, index: str
) -> None:
    cache = tmp_path / "cache"
    warm_cache(tmp_path, index, cache, "--no-deps gamma")
    python = make_venv(tmp_path / "venv")
    before = tree_hash(tmp_path / "venv")
    result, log = driven(tmp_path, cache, *install_args(python, index, "gamma"))
    assert result.returncode != 0
    assert "nowhere-to-be-found" in result.stderr
    assert log[:2] == ["offered gamma-1.0-py3-none-any.whl", "opened"]
    assert tree_hash(tmp_path / "venv") == before  # gamma's files were rolled back
    assert_clean(tmp_path / "venv")
    # The lock was let go: the next install takes it at once.
    again, _ = driven(tmp_path, cache, *install_args(python, index, "--no-deps", "gamma"))
    assert again.returncode == 0, again.stderr
    assert (site_packages(python) / "gamma" / "__init__.py").is_file()


def test_a_failed_head_start_is_rolled_back_and_installed_again(tmp_path: Path, index: str) -> None:
    python, _, log = alpha_again(tmp_path, index, fail=True)
    assert log == [
        "offered alpha-1.0-py3-none-any.whl",
        "opened",
        "adopted alpha-1.0-py3-none-any.whl",
        "compared beside the worker",
        "failed",
    ]
    ran = run_python(python, "import alpha; print(alpha.VERSION)")
    assert ran.stdout.strip() == "1.0", ran.stderr
    assert_clean(tmp_path / "venv")


def test_a_changed_entry_placed_ahead_is_rolled_back_and_fetched_again(
    tmp_path: Path, index: str
) -> None:
    cache = tmp_path / "cache"
    warm_cache(tmp_path, index, cache, "alpha==1.0")
    [edited] = (cache / "unpacked").rglob("alpha/__init__.py")
    with edited.open("a") as stream:  # edited in place through a hard link, say
        stream.write("EDITED = True\n")
    python = make_venv(tmp_path / "venv")
    result, log = driven(tmp_path, cache, *install_args(python, index, "alpha==1.0"))
    assert result.returncode == 0, result.stderr
    assert log[:3] == [
        "offered alpha-1.0-py3-none-any.whl",
        "opened",
        "adopted alpha-1.0-py3-none-any.whl",
    ]
    installed = (site_packages(python) / "alpha" / "__init__.py").read_text()
    assert "EDITED" not in installed
    assert_clean(tmp_path / "venv")


def hinted_alpha(tmp_path: Path, index: str) -> tuple[Path, list[str]]:
    """The cache with alpha 1.0's entry, noted as the one to read ahead for alpha
    (as a head start notes the entry it places); and its files, in the entry's order."""
    cache = tmp_path / "cache"
    warm_cache(tmp_path, index, cache, "alpha==1.0")
    [entry] = (cache / "unpacked").rglob("entry.json")
    store = UnpackedStore(cache / "unpacked", cache / "scratch")
    store.note_many_files("alpha-1.0-py3-none-any.whl", entry.parent)
    assert store.hinted_entries({"alpha"}) == [entry.parent]
    return cache, [row[0] for row in json.loads(entry.read_text())["files"]]


@pytest.mark.parametrize("read_ahead", [0, 2, 100])
def test_the_worker_compares_what_it_can_while_it_waits_and_the_install_the_rest(
    tmp_path: Path, index: str, read_ahead: int
) -> None:
    cache, files = hinted_alpha(tmp_path, index)
    python = make_venv(tmp_path / "venv")
    args = install_args(python, index, "alpha==1.0")
    result, log = driven(tmp_path, cache, *args, read_ahead=read_ahead)
    assert result.returncode == 0, result.stderr
    assert log == [
        "offered alpha-1.0-py3-none-any.whl",
        "opened",
        "adopted alpha-1.0-py3-none-any.whl",
        f"left {max(len(files) - read_ahead, 0)}",
        "compared beside the worker",
    ]
    ran = run_python(python, "import alpha; print(alpha.VERSION)")
    assert ran.stdout.strip() == "1.0", ran.stderr
    assert_clean(tmp_path / "venv")


@pytest.mark.parametrize("found_by", ["worker", "install"])
def test_a_changed_entry_is_found_by_the_worker_or_the_install_and_fetched_again(
    tmp_path: Path, index: str, found_by: str
) -> None:
    """The worker declines an entry it found changed while it waited; a change among
    the files it left is found by the install, which rolls the head start back."""
    cache, files = hinted_alpha(tmp_path, index)
    edited = files.index("alpha/__init__.py")
    [path] = (cache / "unpacked").rglob("alpha/__init__.py")
    with path.open("a") as stream:  # edited in place through a hard link, say
        stream.write("EDITED = True\n")
    python = make_venv(tmp_path / "venv")
    args = install_args(python, index, "alpha==1.0")
    read_ahead = len(files) if found_by == "worker" else edited
    result, log = driven(tmp_path, cache, *args, read_ahead=read_ahead)
    assert result.returncode == 0, result.stderr
    if found_by == "worker":
        assert log[:3] == ["offered alpha-1.0-py3-none-any.whl", "opened", "abandoned"]
    else:
        assert log[:4] == [
            "offered alpha-1.0-py3-none-any.whl",
            "opened",
            "adopted alpha-1.0-py3-none-any.whl",
            f"left {len(files) - edited}",
        ]
    installed = (site_packages(python) / "alpha" / "__init__.py").read_text()
    assert "EDITED" not in installed
    [fresh] = (cache / "unpacked").rglob("alpha/__init__.py")
    assert "EDITED" not in fresh.read_text()
    assert_clean(tmp_path / "venv")


def test_an_installed_project_gets_no_head_start(tmp_path: Path, index: str) -> None:
    """Its old files go first (the transaction moves them out), so nothing is
    placed ahead of that."""
    cache = tmp_path / "cache"
    warm_cache(tmp_path, index, cache, "alpha==1.0")
    python = make_venv(tmp_path / "venv")
    first, _ = driven(tmp_path, cache, *install_args(python, index, "alpha==1.0"))
    assert first.returncode == 0, first.stderr
    again, log = driven(tmp_path, cache, *install_args(python, index, "--reinstall", "alpha==1.0"))
    assert again.returncode == 0, again.stderr
    assert "opened" not in log


def test_a_project_with_many_files_gets_a_head_start_once_its_entry_is_kept(
    tmp_path: Path, index: str
) -> None:
    """As installs decide (no test hooks): a wheel of 1,200 files, once its entry is
    in the cache, is placed ahead when its project is asked for; alpha's few
    files never are."""
    cache = tmp_path / "cache"
    first = make_venv(tmp_path / "first")
    result, log = driven(tmp_path, cache, *install_args(first, index, "many", "alpha"), real=True)
    assert result.returncode == 0, result.stderr
    assert log == []  # nothing in the cache yet: no worker
    assert sorted(p.name for p in (cache / "unpacked" / "many-files").iterdir()) == ["many"]
    python = make_venv(tmp_path / "venv")
    result, log = driven(tmp_path, cache, *install_args(python, index, "many", "alpha"), real=True)
    assert result.returncode == 0, result.stderr
    # alpha may be offered first (pinned first), and is turned down: few files.
    assert log[-4:] == [
        "offered many-1.0-py3-none-any.whl",
        "opened",
        "adopted many-1.0-py3-none-any.whl",
        "compared beside the worker",
    ]
    assert len(list((site_packages(python) / "many").glob("m*.py"))) == 1200
    # Asked for alone, alpha gets no worker at all.
    other = make_venv(tmp_path / "other")
    result, log = driven(tmp_path, cache, *install_args(other, index, "alpha==1.0"), real=True)
    assert result.returncode == 0, result.stderr
    assert log == []


def test_no_worker_to_fork_is_no_head_start(tmp_path: Path, index: str) -> None:
    python, _, log = alpha_again(tmp_path, index, no_fork=True)
    assert log == []
    ran = run_python(python, "import alpha; print(alpha.VERSION)")
    assert ran.stdout.strip() == "1.0", ran.stderr
