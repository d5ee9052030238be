"""Installing what is not a wheel yet: sdists from an index, project folders, local
archives, ``file:`` URLs, ``git+file://`` URLs and editable installs, built with a
real PEP 517 backend (``tinybuild``, published on the index as a wheel) whose build
requirements wheelwise itself resolves and installs, into real venvs, from an index
served on 127.0.0.1.

The headline: a source-only package whose build needs a variant package gets, in
its build environment, the build of that package that fits the (simulated) GPU
machine, not the CPU one.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buildkit import backend_wheel, git_repository, project, sdist
from gpuhouse import demo_house, machine, wheel
from indexkit import http_server
from installkit import make_venv, pip, run_python, site_packages, tree_hash
from variantkit import wheelwise
from wheelwise.publish.static import build_site

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

GPU = machine(driver="13.0", gpus="9.0")  # gpukit's cu130 build fits


@pytest.fixture(scope="module")
def house(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gpukit in its builds, the tinybuild backend, and source-only packages:
    ``kernels`` (built against gpukit), ``plainsrc``, and ``needs-kernels`` (a wheel
    depending on kernels)."""
    root = tmp_path_factory.mktemp("sources")
    wheels = root / "wheels"
    demo_house(wheels)
    backend_wheel(wheels)
    trees = root / "trees"
    kernels = project(
        trees / "kernels", "kernels", "1.0", requires=["gpukit"], built_against="gpukit"
    )
    sdist(kernels, wheels, "kernels", "1.0")
    plain = project(trees / "plainsrc", "plainsrc", "0.5", dependencies=["cudart"])
    sdist(plain, wheels, "plainsrc", "0.5")
    wheel(wheels, "needs_kernels-1.0-py3-none-any.whl", requires_dist=["kernels>=1"])
    return wheels


@pytest.fixture(scope="module")
def index(house: Path) -> Iterator[str]:
    site = house.parent / "site"
    build_site(house, site)
    with http_server(site) as base:
        yield f"{base}/simple/"


def _install(
    python: Path, index: str, cache: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return wheelwise(
        ["install", "--python", str(python), "--index-url", index, *args],
        cache,
        {**machine(), **(env or {})},
    )


def _built_against(python: Path) -> str:
    result = run_python(python, "import kernels._built as b; print(b.BUILT_AGAINST)")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_an_sdist_is_built_against_the_variant_that_fits_the_machine(
    index: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    gpu = make_venv(tmp_path / "gpu")
    result = _install(gpu, index, cache, "needs-kernels", env=GPU)
    assert result.returncode == 0, result.stderr
    assert "installed kernels 1.0 (built from kernels-1.0.tar.gz)" in result.stdout
    assert result.stderr.startswith("building http://127.0.0.1:")
    assert _built_against(gpu) == "cu130"
    # The build environment's gpukit is not the target's: nothing else came along.
    names = {p.name.split("-")[0] for p in site_packages(gpu).glob("*.dist-info")}
    assert names == {"kernels", "needs_kernels"}

    # Another machine (no GPU) builds again, against the CPU build: the cache keys
    # by the machine only through --system, so this one gives its own file.
    cpu = make_venv(tmp_path / "cpu")
    system = tmp_path / "cpu.json"
    system.write_text(json.dumps({"system": {"x86_64": {"level": ["v1"]}}}))
    result = _install(cpu, index, cache, "kernels", "--system", str(system))
    assert result.returncode == 0, result.stderr
    assert _built_against(cpu) == "null"


def test_the_built_wheel_is_kept_by_the_sdists_hash(index: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = make_venv(tmp_path / "one")
    assert _install(first, index, cache, "plainsrc").returncode == 0
    built = list((cache / "built").glob("*/*/*.whl"))
    assert [path.name for path in built] == ["plainsrc-0.5-py3-none-any.whl"]
    # Built once: a second environment takes the kept wheel, even with the backend
    # gone from the index (no build environment is made).
    second = make_venv(tmp_path / "two")
    stamp = built[0].stat().st_mtime_ns
    result = _install(second, index, cache, "plainsrc", "--no-build-isolation")
    assert result.returncode == 0, result.stderr
    assert built[0].stat().st_mtime_ns == stamp
    assert run_python(second, "import plainsrc, cudart").returncode == 0
    # The built wheel is kept unpacked as a downloaded one is: both environments'
    # files are links to its entry's (the second unpacked nothing).
    module = next(path for path in site_packages(first).rglob("*.py") if "plainsrc" in str(path))
    twin = site_packages(second) / module.relative_to(site_packages(first))
    assert module.stat().st_ino == twin.stat().st_ino
    member = module.relative_to(site_packages(first))
    kept = list((cache / "unpacked").glob(f"sha256/*/*/files/{member}"))
    assert len(kept) == 1
    assert kept[0].stat().st_ino == twin.stat().st_ino
    # An installed file edited in place changes the entry too: the next install
    # finds it changed, and unpacks the kept wheel afresh.
    original = module.read_bytes()
    with module.open("ab") as edit:
        edit.write(b"# edited\n")
    third = make_venv(tmp_path / "three")
    result = _install(third, index, cache, "plainsrc", "--no-build-isolation")
    assert result.returncode == 0, result.stderr
    assert (site_packages(third) / member).read_bytes() == original
    assert (site_packages(third) / member).stat().st_ino != module.stat().st_ino


def test_only_binary_says_which_release_and_why(index: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    result = _install(python, index, tmp_path / "cache", "needs-kernels", "--only-binary", ":all:")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "kernels 1.0 has only a source distribution" in result.stderr
    assert "--only-binary :all:" in result.stderr
    assert tree_hash(site_packages(python)) == before
    # A name keeps that project from being built; --no-binary wins for a name.
    result = _install(
        python, index, tmp_path / "cache", "kernels", "--only-binary", ":all:",
        "--no-binary", "kernels", env=GPU,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_local_folder_sdist_file_url_and_git(index: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    python = make_venv(tmp_path / "venv")
    trees = tmp_path / "trees"
    folder = project(trees / "alpha-proj", "alpha-proj", "0.1", dependencies=["cudart"])
    archive = sdist(
        project(trees / "beta", "beta-proj", "0.2"), tmp_path / "dist", "beta-proj", "0.2"
    )
    url_tree = project(trees / "gamma", "gamma", "0.3")
    url_archive = sdist(url_tree, tmp_path / "dist", "gamma", "0.3")
    repo = project(trees / "delta", "delta", "0.4")
    commit = git_repository(repo)

    result = _install(
        python, index, cache,
        str(folder), str(archive), f"gamma @ {url_archive.as_uri()}", f"git+{repo.as_uri()}@v1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    site = site_packages(python)
    for module in ("alpha_proj", "beta_proj", "gamma", "delta", "cudart"):
        assert run_python(python, f"import {module}").returncode == 0, module

    def direct(name: str, version: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(
            (site / f"{name}-{version}.dist-info" / "direct_url.json").read_text()
        )
        return loaded

    assert direct("alpha_proj", "0.1") == {"url": folder.as_uri(), "dir_info": {}}
    beta = direct("beta_proj", "0.2")
    assert beta["url"] == archive.as_uri()
    assert set(beta["archive_info"]) == {"hash", "hashes"}
    assert direct("gamma", "0.3")["url"] == url_archive.as_uri()
    assert direct("delta", "0.4") == {
        "url": repo.as_uri(),
        "vcs_info": {"vcs": "git", "commit_id": commit, "requested_revision": "v1"},
    }
    # pip reads what was written, and uninstalls through wheelwise too.
    listed = pip(python, "list", "--format=json")
    assert {d["name"] for d in json.loads(listed.stdout)} >= {"alpha-proj", "delta"}
    # freeze writes them as pip freeze does: each installs the same thing again.
    frozen = wheelwise(["freeze", "--python", str(python)], cache)
    assert frozen.returncode == 0, frozen.stderr
    lines = frozen.stdout.splitlines()
    assert f"alpha-proj @ {folder.as_uri()}" in lines
    assert f"beta-proj @ {archive.as_uri()}" in lines
    assert f"delta @ git+{repo.as_uri()}@{commit}" in lines
    assert "cudart==1.0" in lines
    same = wheelwise(["list", "--format", "freeze", "--python", str(python)], cache)
    assert same.stdout == frozen.stdout
    removed = wheelwise(
        ["uninstall", "--python", str(python), "-y", "alpha-proj", "beta-proj", "gamma", "delta"],
        cache,
    )
    assert removed.returncode == 0, removed.stderr
    assert not list(site.glob("*_proj*"))
    assert not list(site.glob("delta*"))


def test_a_hash_in_a_direct_url_is_checked(index: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    python = make_venv(tmp_path / "venv")
    served = tmp_path / "served"
    (served / "simple").mkdir(parents=True)
    path = wheel(served, "hashed-1.0-py3-none-any.whl")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    before = tree_hash(site_packages(python))
    with http_server(served) as base:
        url = f"{base}/{path.name}"
        for given in (url, path.as_uri()):
            wrong = _install(python, index, cache, f"hashed @ {given}#sha256={'0' * 64}")
            assert wrong.returncode == 2, wrong.stderr
            assert wrong.stderr.count("\n") == 1, wrong.stderr
            assert f"sha256 mismatch: expected {'0' * 64}, got {digest}" in wrong.stderr
            assert tree_hash(site_packages(python)) == before
        bad = _install(python, index, cache, f"hashed @ {url}#sha256=abc")
        assert bad.returncode == 2
        assert "is not a sha256 digest (64 hexadecimal digits)" in bad.stderr
        right = _install(python, index, cache, f"hashed @ {url}#SHA256={digest.upper()}")
        assert right.returncode == 0, right.stderr
    recorded = json.loads(
        (site_packages(python) / "hashed-1.0.dist-info" / "direct_url.json").read_text()
    )
    assert recorded == {
        "url": url,
        "archive_info": {"hashes": {"sha256": digest}, "hash": f"sha256={digest}"},
    }


def test_config_settings_reach_the_backend(index: str, tmp_path: Path) -> None:
    """``-C KEY=VALUE`` (pip's and uv's): PEP 517 config_settings for the build, a
    key given twice a list; another setting is another build, kept apart."""
    cache = tmp_path / "cache"
    archive = sdist(project(tmp_path / "t" / "cfg", "cfg", "1.0"), tmp_path / "dist", "cfg", "1.0")
    python = make_venv(tmp_path / "venv")
    args = [str(archive), "-C", "mode=fast", "-C", "flag=a", "-C", "flag=b"]
    result = _install(python, index, cache, *args)
    assert result.returncode == 0, result.stderr
    shown = run_python(python, "import cfg._config as c; print(c.CONFIG)")
    assert shown.stdout.strip() == "{'mode': 'fast', 'flag': ['a', 'b']}"
    again = _install(python, index, cache, str(archive), "--reinstall", "-C", "mode=slow")
    assert again.returncode == 0, again.stderr
    assert "building" in again.stderr  # not the wheel kept for mode=fast
    shown = run_python(python, "import cfg._config as c; print(c.CONFIG)")
    assert shown.stdout.strip() == "{'mode': 'slow'}"
    bad = _install(python, index, cache, str(archive), "-C", "novalue")
    assert bad.returncode == 2
    assert "-C 'novalue': expected KEY=VALUE" in bad.stderr


def test_editable_install_lists_and_uninstalls(index: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    python = make_venv(tmp_path / "venv")
    tree = project(tmp_path / "editme", "editme", "1.0")
    result = _install(python, index, cache, "-e", str(tree))
    assert result.returncode == 0, result.stderr
    # The source folder is imported: a change shows without installing again.
    (tree / "src" / "editme" / "__init__.py").write_text("VERSION = 'changed'\n")
    shown = run_python(python, "import editme; print(editme.VERSION)")
    assert shown.stdout.strip() == "changed"
    site = site_packages(python)
    assert json.loads((site / "editme-1.0.dist-info" / "direct_url.json").read_text()) == {
        "url": tree.as_uri(),
        "dir_info": {"editable": True},
    }
    listed = json.loads(pip(python, "list", "--format=json").stdout)
    assert [row.get("editable_project_location") for row in listed if row["name"] == "editme"] == [
        str(tree)
    ]
    rows = json.loads(wheelwise(["list", "--python", str(python), "--json"], cache).stdout)
    assert [row["editable"] for row in rows if row["name"] == "editme"] == [str(tree)]
    pip_keys = wheelwise(["list", "--python", str(python), "--format", "json"], cache)
    assert [row["editable_project_location"] for row in json.loads(pip_keys.stdout)] == [str(tree)]
    frozen = wheelwise(["freeze", "--python", str(python)], cache)
    assert frozen.stdout.splitlines() == [f"-e {tree}"]
    removed = wheelwise(["uninstall", "--python", str(python), "-y", "editme"], cache)
    assert removed.returncode == 0, removed.stderr
    assert run_python(python, "import editme").returncode != 0


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        ("broken-archive", "damaged archive"),
        ("failing-build", "failed in build_wheel"),
        ("missing-backend", "is not available"),
        ("bad-toml", "pyproject.toml"),
        ("git-to-nothing", "git clone failed"),
        ("no-project", "does not appear to be a Python project"),
    ],
)
def test_bad_sources_give_one_line_and_change_nothing(
    index: str, tmp_path: Path, make: str, expected: str
) -> None:
    python = make_venv(tmp_path / "venv")
    assert _install(python, index, tmp_path / "cache", "cudart").returncode == 0
    before = tree_hash(site_packages(python))
    tree = project(tmp_path / "p", "p", "1.0", fail=make == "failing-build")
    if make == "broken-archive":
        target = tmp_path / "p-1.0.tar.gz"
        target.write_bytes(b"\x1f\x8b\x08\x00 this is not gzip data at all")
        requirement = str(target)
    elif make == "missing-backend":
        (tree / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["tinybuild"]\nbuild-backend = "nosuch.backend"\n'
        )
        requirement = str(tree)
    elif make == "bad-toml":
        (tree / "pyproject.toml").write_text("[build-system\nrequires = [\n")
        requirement = str(tree)
    elif make == "git-to-nothing":
        requirement = f"git+{(tmp_path / 'no-such-repo').as_uri()}"
    elif make == "no-project":
        empty = tmp_path / "empty"
        empty.mkdir()
        requirement = str(empty)
    else:
        requirement = str(tree)
    result = _install(python, index, tmp_path / "cache", requirement)
    assert result.returncode == 2, result.stdout + result.stderr
    # A build says it starts ("building SOURCE"); then one error line.
    lines = [line for line in result.stderr.splitlines() if not line.startswith("building ")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("wheelwise: error: ")
    assert expected in lines[0]
    quiet = _install(python, index, tmp_path / "cache", requirement, "-q")
    assert quiet.stderr.count("\n") == 1, quiet.stderr
    assert tree_hash(site_packages(python)) == before


def test_no_build_isolation_builds_in_the_target_environment(index: str, tmp_path: Path) -> None:
    """Without isolation the backend runs in the target environment: it must have
    the build requirements (one error line naming the backend when it does not)."""
    cache = tmp_path / "cache"
    python = make_venv(tmp_path / "venv")
    tree = project(tmp_path / "noiso", "noiso", "1.0")
    before = tree_hash(site_packages(python))
    missing = _install(python, index, cache, "--no-build-isolation", str(tree))
    assert missing.returncode == 2
    assert "build backend 'tinybuild' is not available" in missing.stderr
    assert tree_hash(site_packages(python)) == before
    assert _install(python, index, cache, "tinybuild").returncode == 0
    built = _install(python, index, cache, "--no-build-isolation", str(tree))
    assert built.returncode == 0, built.stderr
    assert run_python(python, "import noiso").returncode == 0


def test_a_cache_folder_named_with_a_colon_still_builds(index: str, tmp_path: Path) -> None:
    """venv refuses a folder whose path holds the PATH separator: the isolated build
    environment is then made in the system's temporary folder."""
    python = make_venv(tmp_path / "venv")
    result = _install(python, index, tmp_path / "cache:dir", "plainsrc")
    assert result.returncode == 0, result.stderr
    assert run_python(python, "import plainsrc").returncode == 0
