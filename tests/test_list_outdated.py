"""``wheelwise list --outdated``: the newer releases an index on 127.0.0.1 offers
for a real venv, the same as ``pip list --outdated`` and ``uv pip list --outdated``
say, with the variant install would choose for a machine (``--system``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from buildkit import backend_wheel, project
from indexkit import demo_sdist, demo_wheel, http_server, installer_env, uv_executable
from installkit import make_venv
from variantkit import system_file, wheelwise
from wheelwise.publish.static import build_site

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

V3 = {"x86_64": {"level": ["v3"]}}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """alpha 1.0, 2.0 and 3.0b1; beta 1.0 only; gamma 1.0, and 2.0 as an sdist only;
    delta 1.0, and 2.0 for a Python that does not exist yet; vpkg 1.0, and 2.0 as
    an x86-64-v3 build and a null one."""
    root = tmp_path_factory.mktemp("outdated")
    wheels = root / "wheels"
    wheels.mkdir()
    for version in ("1.0", "2.0", "3.0b1"):
        demo_wheel(wheels, f"alpha-{version}-py3-none-any.whl")
    demo_wheel(wheels, "beta-1.0-py3-none-any.whl")
    demo_wheel(wheels, "gamma-1.0-py3-none-any.whl")
    demo_sdist(wheels, "gamma-2.0.tar.gz")
    demo_wheel(wheels, "delta-1.0-py3-none-any.whl")
    demo_wheel(wheels, "delta-2.0-py3-none-any.whl", requires_python=">=4")
    demo_wheel(wheels, "vpkg-1.0-py3-none-any.whl")
    demo_wheel(wheels, "vpkg-2.0-py3-none-any-x86_64_v3.whl", "x86_64_v3", V3)
    demo_wheel(wheels, "vpkg-2.0-py3-none-any-null.whl", "null", {})
    backend_wheel(wheels)  # the build backend of the editable project below
    site = root / "site"
    build_site(wheels, site)
    with http_server(site) as base:
        yield f"{base}/simple/"


@pytest.fixture(scope="module")
def python(index: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding the oldest release of each project; only read."""
    root = tmp_path_factory.mktemp("venv")
    python = make_venv(root / "venv")
    args = ["install", "--python", str(python), "-i", index]
    pins = ["alpha==1.0", "beta", "gamma==1.0", "delta==1.0", "vpkg==1.0"]
    done = wheelwise([*args, *pins], root / "cache")
    assert done.returncode == 0, done.stderr
    return python


def outdated(python: Path, index: str, cache: Path, *args: str) -> list[dict[str, object]]:
    done = wheelwise(["list", "--python", str(python), "-o", "--json", "-i", index, *args], cache)
    assert done.returncode == 0, done.stderr
    found: list[dict[str, object]] = json.loads(done.stdout)
    return found


def pip_outdated(python: Path, index: str, env: dict[str, str]) -> list[dict[str, str]]:
    """``pip list --outdated --format json`` of *python*'s environment."""
    argv = [sys.executable, "-m", "pip", "--python", str(python), "list", "-o"]
    pip = subprocess.run(
        [*argv, "--format", "json", "--index-url", index],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    found: list[dict[str, str]] = json.loads(pip.stdout)
    return found


def test_newer_releases_as_pip_and_uv_list_them(python: Path, index: str, tmp_path: Path) -> None:
    """gamma's newer release is an sdist (pip and uv list it), delta's does not fit
    this Python, beta has none, and alpha's pre-release is not counted."""
    ours = {
        entry["name"]: (entry["version"], entry["latest_version"], entry["latest_filetype"])
        for entry in outdated(python, index, tmp_path / "cache")
    }
    env = installer_env(tmp_path / "home")
    pip = pip_outdated(python, index, env)
    uv = subprocess.run(
        [uv_executable(), "pip", "list", "--outdated", "--format", "json", "--no-config",
         "--python", str(python), "--index-url", index, "--no-cache"],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert uv.returncode == 0, uv.stderr
    # Neither reads variant wheels: vpkg 2.0 is no release for them.
    plain = {name: entry for name, entry in ours.items() if name != "vpkg"}
    for answer in (pip, json.loads(uv.stdout)):
        theirs = {
            e["name"]: (e["version"], e["latest_version"], e["latest_filetype"])
            for e in answer
            if e["name"] in {"alpha", "beta", "gamma", "delta", "vpkg"}
        }
        assert plain == theirs
    assert ours["vpkg"] == ("1.0", "2.0", "wheel")
    assert ours["alpha"] == ("1.0", "2.0", "wheel")
    assert ours["gamma"] == ("1.0", "2.0", "sdist")
    assert "delta" not in ours
    assert "beta" not in ours


def test_pre_counts_pre_releases(python: Path, index: str, tmp_path: Path) -> None:
    found = {e["name"]: e["latest_version"] for e in outdated(python, index, tmp_path, "--pre")}
    assert found["alpha"] == "3.0b1"


@pytest.mark.parametrize(("levels", "label"), [(["v3"], "x86_64_v3"), (["v1"], "null")])
def test_the_variant_install_would_choose(
    python: Path, index: str, tmp_path: Path, levels: list[str], label: str
) -> None:
    system = system_file(tmp_path, levels)
    found = {e["name"]: e for e in outdated(python, index, tmp_path, "--system", str(system))}
    assert found["vpkg"]["latest_version"] == "2.0"
    assert found["vpkg"]["latest_variant"] == label
    assert found["vpkg"]["variant"] is None


def test_the_table_names_the_latest_and_its_variant(
    python: Path, index: str, tmp_path: Path
) -> None:
    system = system_file(tmp_path, ["v3"])
    argv = ["list", "--python", str(python), "-o", "-i", index, "--system", str(system)]
    done = wheelwise(argv, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    rows = [line.split("│")[1:-1] for line in done.stdout.splitlines() if line.startswith("│")]
    cells = {row[0].strip(): [cell.strip() for cell in row] for row in rows}
    assert cells["vpkg"] == ["vpkg", "1.0", "-", "2.0", "x86_64_v3", "wheel"]
    assert cells["alpha"] == ["alpha", "1.0", "-", "2.0", "-", "wheel"]


def test_freeze_format_and_an_index_that_is_down_are_one_line(python: Path, tmp_path: Path) -> None:
    argv = ["list", "--python", str(python), "-o"]
    freeze = wheelwise([*argv, "--format", "freeze"], tmp_path / "cache")
    assert freeze.returncode == 2
    assert "--format freeze cannot be used with --outdated" in freeze.stderr
    down = wheelwise([*argv, "-i", "http://127.0.0.1:9/simple/", "--retries", "0"], tmp_path)
    assert down.returncode == 2
    lines = down.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "cannot connect" in lines[0]
    assert "Traceback" not in down.stderr


def test_without_outdated_the_index_is_not_asked(python: Path, tmp_path: Path) -> None:
    """A plain list reads the environment only: an index that is down changes nothing."""
    done = wheelwise(["list", "--python", str(python), "-i", "http://127.0.0.1:9/"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "vpkg" in done.stdout


def test_an_editable_project_has_its_folder_as_pip_and_uv_give_it(
    index: str, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv")
    tree = project(tmp_path / "alpha-src", "alpha", "0.5")
    args = ["install", "--python", str(python), "-i", index, "-e", str(tree)]
    done = wheelwise(args, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    (ours,) = outdated(python, index, tmp_path / "cache")
    assert ours["editable_project_location"] == str(tree)
    env = installer_env(tmp_path / "home")
    pip = pip_outdated(python, index, env)
    (theirs,) = [e for e in pip if e["name"] == "alpha"]
    keys = ("version", "latest_version", "latest_filetype", "editable_project_location")
    assert {k: ours[k] for k in keys} == {k: theirs[k] for k in keys}
    table = wheelwise(["list", "--python", str(python), "-o", "-i", index], tmp_path / "cache")
    assert "editable project location" in table.stdout
    assert str(tree) in table.stdout
