"""PyPI's selection rules, with pip and uv as peers: yanked releases (PEP 592),
pre-releases when no final release fits, and projects with source distributions only.

One PEP 691 index on 127.0.0.1 (JSON pages with ``yanked`` values, PEP 658 metadata,
real wheels and a real sdist) serves:

- ``yankee`` 1.0, and 2.0 whose only wheel is yanked ("broken build");
- ``prerel`` 1.0b1 and 1.0rc1 only;
- ``deppre`` 1.0, which depends on ``prerel>=0.5``;
- ``srconly`` 0.6.2, an sdist only (pip and wheelwise run with ``--only-binary
  :all:`` and uv with ``--no-build``: none builds it).

For every requirement, pip, uv and ``wheelwise install`` resolve it against one empty
environment (dry runs) and must pick the same versions, or all refuse; wheelwise also
installs the yanked pin and the pre-releases for real.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from indexkit import demo_sdist, installer_env, uv_executable
from installkit import WHEEL, make_venv, run_python
from variantkit import wheelwise
from wheelfactory import make_wheel

# Every test here uses servers or peers that take seconds to start.
pytestmark = pytest.mark.slow

JSON_PAGE = "application/vnd.pypi.simple.v1+json"
REASON = "broken build"
TOOLS = ("pip", "uv", "wheelwise")
# A machine with nothing to detect: these wheels are not variant wheels anyway.
NO_MACHINE = {
    "WHEELWISE_NVIDIA_DRIVER": "none",
    "WHEELWISE_AMD_ROCM": "none",
    "WHEELWISE_AMD_GFX": "none",
}
YANKED_NOTE = (
    f"wheelwise: warning: yankee 2.0 is yanked ({REASON}); installing it because it is "
    "pinned with == (PEP 592)"
)
PRE_NOTE = "wheelwise: warning: prerel 1.0rc1 is a pre-release"


# -- the index -------------------------------------------------------------------------


def project_wheel(directory: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A wheel of *name* whose module knows its version, with *requires* in METADATA."""
    dist_info = f"{name}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    metadata += [f"Requires-Dist: {r}" for r in requires]
    members = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n".encode(),
        f"{dist_info}/METADATA": ("\n".join(metadata) + "\n").encode(),
        f"{dist_info}/WHEEL": WHEEL,
    }
    return make_wheel(
        directory, f"{name}-{version}-py3-none-any.whl", extra_members=members, record=True
    )


def write_index(root: Path) -> Path:
    """The site: ``simple/{name}/index.json`` pages and ``files/``; its folder."""
    built = root / "built"
    built.mkdir()
    wheels = {
        "yankee": [project_wheel(built, "yankee", "1.0"), project_wheel(built, "yankee", "2.0")],
        "prerel": [
            project_wheel(built, "prerel", "1.0b1"),
            project_wheel(built, "prerel", "1.0rc1"),
        ],
        "deppre": [project_wheel(built, "deppre", "1.0", ("prerel>=0.5",))],
        "srconly": [demo_sdist(built, "srconly-0.6.2.tar.gz")],
    }
    yanked = {"yankee-2.0-py3-none-any.whl": REASON}
    site = root / "site"
    files = site / "files"
    files.mkdir(parents=True)
    for project, paths in wheels.items():
        entries = []
        for path in paths:
            data = path.read_bytes()
            (files / path.name).write_bytes(data)
            entry: dict[str, object] = {
                "filename": path.name,
                "url": f"../../files/{path.name}",
                "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                "size": len(data),
                "yanked": yanked.get(path.name, False),
            }
            if path.suffix == ".whl":
                with zipfile.ZipFile(path) as archive:
                    metadata = next(
                        archive.read(n)
                        for n in archive.namelist()
                        if n.endswith(".dist-info/METADATA")
                    )
                (files / f"{path.name}.metadata").write_bytes(metadata)
                entry["core-metadata"] = {"sha256": hashlib.sha256(metadata).hexdigest()}
            entries.append(entry)
        page = site / "simple" / project
        page.mkdir(parents=True)
        document = {"meta": {"api-version": "1.1"}, "name": project, "files": entries}
        (page / "index.json").write_text(json.dumps(document), encoding="utf-8")
    listing = {
        "meta": {"api-version": "1.1"},
        "projects": [{"name": project} for project in wheels],
    }
    (site / "simple" / "index.json").write_text(json.dumps(listing), encoding="utf-8")
    return site


class IndexServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, site: Path) -> None:
        super().__init__(("127.0.0.1", 0), PageHandler)
        self.site = site


class PageHandler(BaseHTTPRequestHandler):
    """Folders answer with their ``index.json`` as a PEP 691 page, files as bytes."""

    protocol_version = "HTTP/1.1"
    server: IndexServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        local = self.server.site / path.lstrip("/")
        kind = "application/octet-stream"
        if path.endswith("/"):
            local, kind = local / "index.json", JSON_PAGE
        found = ".." not in path.split("/") and local.is_file()
        body = local.read_bytes() if found else b"not found"
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", kind if found else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pypi-rules")


@pytest.fixture(scope="module")
def index_url(root: Path) -> Iterator[str]:
    server = IndexServer(write_index(root))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# -- the installers --------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One installer's answer to one requirement."""

    returncode: int
    # Project -> version it would install (empty when it refuses).
    versions: Mapping[str, str]
    stdout: str
    stderr: str

    def show(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def report_versions(stdout: str) -> dict[str, str]:
    """Name -> version of a pip-style installation report, all of *stdout* (wheelwise
    prints its plan on stderr then)."""
    document = json.loads(stdout)
    return {item["metadata"]["name"]: item["metadata"]["version"] for item in document["install"]}


def pip_dry_run(python: Path, index_url: str, home: Path, requirement: str) -> Outcome:
    argv = [sys.executable, "-m", "pip", "--python", str(python), "install", "--dry-run"]
    argv += ["--report", "-", "--quiet", "--no-cache-dir", "--only-binary=:all:"]
    argv += ["--index-url", index_url, requirement]
    done = subprocess.run(
        argv, env=installer_env(home), capture_output=True, text=True, timeout=120, check=False
    )
    versions = report_versions(done.stdout) if done.returncode == 0 else {}
    return Outcome(done.returncode, versions, done.stdout, done.stderr)


UV_WOULD_INSTALL = re.compile(r"^ \+ (\S+)==(\S+)$", re.MULTILINE)


def uv_dry_run(python: Path, index_url: str, home: Path, requirement: str) -> Outcome:
    argv = [uv_executable(), "pip", "install", "--dry-run", "--no-config", "--no-cache"]
    argv += ["--python", str(python), "--no-build", "--index-url", index_url, requirement]
    done = subprocess.run(
        argv, env=installer_env(home), capture_output=True, text=True, timeout=120, check=False
    )
    versions = dict(UV_WOULD_INSTALL.findall(done.stderr)) if done.returncode == 0 else {}
    return Outcome(done.returncode, versions, done.stdout, done.stderr)


def wheelwise_install(
    python: Path, index_url: str, cache: Path, requirement: str, *args: str
) -> subprocess.CompletedProcess[str]:
    argv = ["install", "--python", str(python), "--index-url", index_url, *args, requirement]
    return wheelwise(argv, cache, NO_MACHINE)


def wheelwise_dry_run(python: Path, index_url: str, cache: Path, requirement: str) -> Outcome:
    done = wheelwise_install(
        python,
        index_url,
        cache,
        requirement,
        "--dry-run",
        "--report",
        "-",
        "--only-binary",
        ":all:",
    )
    versions = report_versions(done.stdout) if done.returncode == 0 else {}
    return Outcome(done.returncode, versions, done.stdout, done.stderr)


# Requirement -> what pip, uv and wheelwise must all pick (None: all refuse).
CASES: dict[str, dict[str, str] | None] = {
    "yankee": {"yankee": "1.0"},
    "yankee==2.0": {"yankee": "2.0"},
    "yankee===2.0": {"yankee": "2.0"},
    "yankee>=2": None,
    "yankee==2.*": None,
    "prerel": {"prerel": "1.0rc1"},
    "deppre": {"deppre": "1.0", "prerel": "1.0rc1"},
    "srconly": None,
}


@pytest.fixture(scope="module")
def empty(root: Path) -> Path:
    """The environment every dry run resolves against: nothing installed."""
    return make_venv(root / "empty")


@pytest.fixture(scope="module")
def outcomes(root: Path, index_url: str, empty: Path) -> dict[tuple[str, str], Outcome]:
    """Every installer on every requirement (dry runs, four at a time)."""
    home, cache = root / "home", root / "wheelwise-cache"

    def run(tool: str, requirement: str) -> Outcome:
        if tool == "pip":
            return pip_dry_run(empty, index_url, home, requirement)
        if tool == "uv":
            return uv_dry_run(empty, index_url, home, requirement)
        return wheelwise_dry_run(empty, index_url, cache, requirement)

    jobs = [(tool, requirement) for requirement in CASES for tool in TOOLS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {job: pool.submit(run, *job) for job in jobs}
        return {job: future.result() for job, future in futures.items()}


# -- the same choices ------------------------------------------------------------------


@pytest.mark.parametrize("requirement", list(CASES))
def test_same_choice_as_pip_and_uv(
    outcomes: Mapping[tuple[str, str], Outcome], requirement: str
) -> None:
    expected = CASES[requirement]
    for tool in TOOLS:
        outcome = outcomes[(tool, requirement)]
        if expected is None:
            assert outcome.returncode != 0, f"{tool} {requirement}:\n{outcome.show()}"
        else:
            assert outcome.returncode == 0, f"{tool} {requirement}:\n{outcome.show()}"
            assert dict(outcome.versions) == expected, f"{tool} {requirement}:\n{outcome.show()}"


def test_a_pinned_yanked_release_is_reported_yanked(
    outcomes: Mapping[tuple[str, str], Outcome],
) -> None:
    """pip's report and wheelwise's both mark the pinned release ``is_yanked``."""
    for tool in ("pip", "wheelwise"):
        outcome = outcomes[(tool, "yankee==2.0")]
        document = json.loads(outcome.stdout)
        assert [item["is_yanked"] for item in document["install"]] == [True], outcome.show()


@pytest.mark.parametrize("requirement", ["yankee==2.0", "yankee===2.0"])
def test_a_yanked_pin_is_told_once(
    outcomes: Mapping[tuple[str, str], Outcome], requirement: str
) -> None:
    outcome = outcomes[("wheelwise", requirement)]
    assert outcome.stderr.splitlines().count(YANKED_NOTE) == 1, outcome.show()
    assert YANKED_NOTE not in outcome.stdout


@pytest.mark.parametrize("requirement", ["yankee", "srconly"])
def test_nothing_is_told_when_nothing_is_yanked_or_pre(
    outcomes: Mapping[tuple[str, str], Outcome], requirement: str
) -> None:
    outcome = outcomes[("wheelwise", requirement)]
    assert "warning" not in outcome.stderr, outcome.show()


@pytest.mark.parametrize("requirement", ["yankee>=2", "yankee==2.*"])
def test_a_yanked_release_out_of_a_pin_is_refused_with_how_to_pin(
    outcomes: Mapping[tuple[str, str], Outcome], requirement: str
) -> None:
    outcome = outcomes[("wheelwise", requirement)]
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1, outcome.show()
    assert lines[0].startswith("wheelwise: error: "), outcome.show()
    assert f"yanked ({REASON})" in lines[0]
    assert "pin it with ==2.0" in lines[0]
    assert "Traceback" not in outcome.stderr


@pytest.mark.parametrize("requirement", ["prerel", "deppre"])
def test_a_pre_release_is_told(
    outcomes: Mapping[tuple[str, str], Outcome], requirement: str
) -> None:
    outcome = outcomes[("wheelwise", requirement)]
    told = [line for line in outcome.stderr.splitlines() if line.startswith(PRE_NOTE)]
    assert len(told) == 1, outcome.show()
    assert "no final release of prerel fits" in told[0]


def test_source_distributions_only_say_so(outcomes: Mapping[tuple[str, str], Outcome]) -> None:
    outcome = outcomes[("wheelwise", "srconly")]
    assert outcome.returncode != 0, outcome.show()
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1, outcome.show()
    assert lines[0].startswith("wheelwise: error: "), outcome.show()
    assert "srconly 0.6.2 has only a source distribution" in lines[0]
    assert "it is not built, as --only-binary :all: is given" in lines[0]
    assert "Traceback" not in outcome.stderr
    # pip and uv refuse for the same reason: no wheel, and building is off.
    assert "srconly" in outcomes[("pip", "srconly")].stderr
    assert "srconly" in outcomes[("uv", "srconly")].stderr


# -- real installs ---------------------------------------------------------------------


def installed_versions(python: Path, *projects: str) -> dict[str, str]:
    """What each project's module says its version is, imported in *python*."""
    code = "; ".join(f"import {p}; print({p!r}, {p}.VERSION)" for p in projects)
    result = run_python(python, code)
    assert result.returncode == 0, result.stderr
    return dict(line.split() for line in result.stdout.splitlines())


@pytest.mark.parametrize(
    ("requirement", "expected", "note"),
    [
        ("yankee==2.0", {"yankee": "2.0"}, YANKED_NOTE),
        ("prerel", {"prerel": "1.0rc1"}, PRE_NOTE),
        ("deppre", {"deppre": "1.0", "prerel": "1.0rc1"}, PRE_NOTE),
    ],
    ids=["yankee==2.0", "prerel", "deppre"],
)
def test_installed_for_real_and_told_once(
    index_url: str, tmp_path: Path, requirement: str, expected: dict[str, str], note: str
) -> None:
    python = make_venv(tmp_path / "venv")
    done = wheelwise_install(python, index_url, tmp_path / "cache", requirement)
    assert done.returncode == 0, done.stderr
    assert installed_versions(python, *expected) == expected
    told = [line for line in done.stderr.splitlines() if line.startswith(note)]
    assert len(told) == 1, done.stderr
    assert note not in done.stdout


def test_the_human_plan_tells_a_yanked_pin_once(index_url: str, empty: Path, root: Path) -> None:
    done = wheelwise_install(empty, index_url, root / "plan-cache", "yankee==2.0", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert (done.stdout + done.stderr).count("is yanked") == 1, done.stdout + done.stderr
    assert done.stderr.splitlines().count(YANKED_NOTE) == 1
    assert re.search(r"yankee\s*│\s*2\.0\s", done.stdout), done.stdout
