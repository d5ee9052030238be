"""``wheelwise list --outdated``: the newer releases an index on 127.0.0.1 offers
for a real venv, the same as ``pip list --outdated`` and ``uv pip list --outdated``
say, with the variant install would choose for a machine (``--system``); yanked
files (PEP 592) and local version labels on HTML and JSON pages; a folder of wheels
as the only source (``--no-index -f DIR``)."""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from buildkit import backend_wheel, project
from indexkit import (
    demo_sdist,
    demo_wheel,
    handler_served,
    http_server,
    installer_env,
    uv_executable,
)
from installkit import make_venv
from variantkit import system_file, wheelwise
from wheelwise.publish.static import build_site

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

V3 = {"x86_64": {"level": ["v3"]}}
JSON_PAGE = "application/vnd.pypi.simple.v1+json"
# Nothing listens there: a run that asks this index fails at once.
DOWN_INDEX = "http://127.0.0.1:9/simple/"


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
    return peer_outdated("pip", python, env, "--index-url", index)


def peer_outdated(
    tool: str, python: Path, env: dict[str, str], *sources: str
) -> list[dict[str, str]]:
    """``pip list --outdated`` or ``uv pip list --outdated`` (*tool*) of *python*'s
    environment as JSON, from the sources the options *sources* name."""
    if tool == "pip":
        argv = [sys.executable, "-m", "pip", "--python", str(python), "list", "-o"]
    else:
        argv = [uv_executable(), "pip", "list", "--outdated", "--no-config", "--no-cache"]
        argv += ["--python", str(python)]
    done = subprocess.run(
        [*argv, "--format", "json", *sources],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: list[dict[str, str]] = json.loads(done.stdout)
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
    uv = peer_outdated("uv", python, env, "--index-url", index)
    # Neither reads variant wheels: vpkg 2.0 is no release for them.
    plain = {name: entry for name, entry in ours.items() if name != "vpkg"}
    for answer in (pip, uv):
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


# -- yanked files and local version labels ---------------------------------------------

# The releases of each project on the index (oldest first), one wheel each.
MARKED_RELEASES = {
    "yankee": ("1.0", "2.0", "3.0"),
    "yankonly": ("1.0", "2.0"),
    "localpkg": ("1.0", "1.0+cu128"),
    "localnext": ("1.0", "1.0+cu128", "1.1+cpu"),
    "localheld": ("1.0", "1.0+cu128"),
    "localseg": ("1.0+cpu", "1.0+cu128", "1.0+cu130"),
}
# The release of each installed in the venv the tests read.
MARKED_INSTALLED = {
    "yankee": "1.0",
    "yankonly": "1.0",
    "localpkg": "1.0",
    "localnext": "1.0",
    "localheld": "1.0+cu128",
    "localseg": "1.0+cu128",
}
# PEP 592: the only file of each of these releases is yanked, with a reason or without.
YANKED: dict[str, bool | str] = {
    "yankee-3.0-py3-none-any.whl": "broken build",
    "yankonly-2.0-py3-none-any.whl": True,
}


def mark_yanked(site: Path) -> None:
    """Mark the files of ``YANKED`` yanked on *site*'s project pages: ``data-yanked``
    on the HTML pages, ``yanked`` on the JSON ones."""
    for page in (site / "simple").glob("*/index.html"):
        text = page.read_text(encoding="utf-8")
        for filename, reason in YANKED.items():
            value = reason if isinstance(reason, str) else ""
            text = text.replace(f'">{filename}</a>', f'" data-yanked="{value}">{filename}</a>')
        page.write_text(text, encoding="utf-8")
    for page in (site / "simple").glob("*/index.json"):
        document = json.loads(page.read_text(encoding="utf-8"))
        for entry in document["files"]:
            if entry["filename"] in YANKED:
                entry["yanked"] = YANKED[entry["filename"]]
        page.write_text(json.dumps(document), encoding="utf-8")


@pytest.fixture(scope="module")
def marked_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``wheels/`` (one wheel per release of ``MARKED_RELEASES``) and
    ``site/``, their static index with the files of ``YANKED`` marked yanked."""
    root = tmp_path_factory.mktemp("marked")
    wheels = root / "wheels"
    wheels.mkdir()
    for name, versions in MARKED_RELEASES.items():
        for version in versions:
            demo_wheel(wheels, f"{name}-{version}-py3-none-any.whl")
    build_site(wheels, root / "site")
    mark_yanked(root / "site")
    pages = (root / "site" / "simple" / "yankee" / "index.html").read_text(encoding="utf-8")
    assert 'data-yanked="broken build">yankee-3.0' in pages
    return root


class JsonPages(http.server.SimpleHTTPRequestHandler):
    """Serves a folder (``directory``) with each subfolder's ``index.json`` as its
    PEP 691 page."""

    def translate_path(self, path: str) -> str:
        local = super().translate_path(path)
        return os.path.join(local, "index.json") if os.path.isdir(local) else local

    def guess_type(self, path: str | os.PathLike[str]) -> str:
        if os.fspath(path).endswith("index.json"):
            return JSON_PAGE
        return super().guess_type(path)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module", params=["html", "json"])
def marked_index(request: pytest.FixtureRequest, marked_site: Path) -> Iterator[str]:
    """The simple index of ``marked_site`` on 127.0.0.1, as PEP 503 HTML pages or as
    PEP 691 JSON ones."""
    site = marked_site / "site"
    json_pages = functools.partial(JsonPages, directory=str(site))
    served = http_server(site) if request.param == "html" else handler_served(json_pages)
    with served as base:
        yield f"{base}/simple/"


@pytest.fixture(scope="module")
def marked_python(marked_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding the ``MARKED_INSTALLED`` releases; only read."""
    root = tmp_path_factory.mktemp("marked-venv")
    python = make_venv(root / "venv")
    # ===: ==1.0 would match 1.0+cu128 too (PEP 440), and take it as the newer.
    pins = [f"{name}==={version}" for name, version in MARKED_INSTALLED.items()]
    args = ["install", "--python", str(python), "--no-index", "-f", str(marked_site / "wheels")]
    done = wheelwise([*args, *pins], root / "cache")
    assert done.returncode == 0, done.stderr
    return python


@pytest.fixture(scope="module")
def marked_answers(
    marked_python: Path, marked_index: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, tuple[str, str, str]]]:
    """What wheelwise, pip and uv list as outdated in ``marked_python`` from
    ``marked_index``: tool -> name -> (version, latest version, latest file type)."""
    root = tmp_path_factory.mktemp("marked-answers")
    env = installer_env(root / "home")
    answers: dict[str, Sequence[Mapping[str, object]]] = {
        "wheelwise": outdated(marked_python, marked_index, root / "cache"),
        "pip": peer_outdated("pip", marked_python, env, "--index-url", marked_index),
        "uv": peer_outdated("uv", marked_python, env, "--index-url", marked_index),
    }
    return {
        tool: {
            str(e["name"]): (str(e["version"]), str(e["latest_version"]), str(e["latest_filetype"]))
            for e in answer
        }
        for tool, answer in answers.items()
    }


def test_a_release_whose_files_are_all_yanked_is_not_the_latest(
    marked_answers: dict[str, dict[str, tuple[str, str, str]]],
) -> None:
    """yankee 3.0 and yankonly 2.0 have only yanked files: yankee's latest is 2.0,
    and yankonly has no newer release. pip 26.3 and uv 0.13.9 list the same, from
    the HTML and the JSON pages: yankee 1.0 -> 2.0 (wheel), and no yankonly."""
    ours = marked_answers["wheelwise"]
    assert ours["yankee"] == ("1.0", "2.0", "wheel")
    assert "yankonly" not in ours
    for peer in ("pip", "uv"):
        theirs = marked_answers[peer]
        assert (theirs.get("yankee"), theirs.get("yankonly")) == (ours["yankee"], None), peer


def test_a_local_version_is_newer_than_its_public_one(
    marked_answers: dict[str, dict[str, tuple[str, str, str]]],
) -> None:
    """As pip's list -o orders versions (PEP 440): 1.0+cu128 is newer than 1.0, and
    local labels compare segment by segment (cu130 > cu128 > cpu). pip 26.3 and uv
    0.13.9 list the same: localpkg 1.0 -> 1.0+cu128, localnext 1.0 -> 1.1+cpu,
    localseg 1.0+cu128 -> 1.0+cu130, and no localheld (1.0+cu128, the newest)."""
    ours = marked_answers["wheelwise"]
    local = {name: ours.get(name) for name in MARKED_RELEASES if name.startswith("local")}
    assert local == {
        "localpkg": ("1.0", "1.0+cu128", "wheel"),
        "localnext": ("1.0", "1.1+cpu", "wheel"),
        "localheld": None,
        "localseg": ("1.0+cu128", "1.0+cu130", "wheel"),
    }
    for peer in ("pip", "uv"):
        theirs = marked_answers[peer]
        assert {name: theirs.get(name) for name in local} == local, peer


# -- a folder of wheels as the only source ---------------------------------------------


@pytest.mark.parametrize(
    ("wheels", "expected"),
    [
        (["alpha-1.0", "alpha-2.0", "alpha-3.0b1", "beta-1.0", "gamma-0.5"], {"alpha": "2.0"}),
        (["alpha-1.0", "beta-1.0", "gamma-0.5"], {}),
    ],
    ids=["newer", "none-newer"],
)
def test_no_index_with_a_folder_of_wheels(
    python: Path, tmp_path: Path, wheels: list[str], expected: dict[str, str]
) -> None:
    """``--no-index -f DIR``: the folder's newer wheel is the latest (its pre-release
    not counted), and nothing is listed when it holds none; the index given with -i
    is never asked. pip 26.3 and uv 0.13.9 list the same: alpha 1.0 -> 2.0 (wheel),
    and an empty list."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    for stem in wheels:
        demo_wheel(folder, f"{stem}-py3-none-any.whl")
    folder_only = ("--no-index", "--find-links", str(folder))
    ours = outdated(python, DOWN_INDEX, tmp_path / "cache", "--retries", "0", *folder_only)
    assert {str(e["name"]): str(e["latest_version"]) for e in ours} == expected
    assert all(e["latest_filetype"] == "wheel" for e in ours)
    env = installer_env(tmp_path / "home")
    for peer in ("pip", "uv"):
        theirs = peer_outdated(peer, python, env, "--index-url", DOWN_INDEX, *folder_only)
        assert {e["name"]: e["latest_version"] for e in theirs} == expected, peer
