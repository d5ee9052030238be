"""Differential test: ``wheelwise install`` against pip (and uv where a set asks for it)
on real requirement sets of public projects (``data/recorded/sets.toml``), resolved
offline against a replay of the recorded part of PyPI (:mod:`recordedkit`).

Both resolve each set with a dry run into a fresh virtual environment and must choose
the same distributions and versions; and wheelwise's choice, written as installed
distributions, must meet the set from the environment alone, as an install that
finds everything installed reads it (:mod:`wheelwise.environment.satisfied`). Every
difference is listed, with its reason, in ``data/recorded/differences.toml``; an
undocumented difference fails, and so does a documented one that no longer occurs
(the list is kept true).
"""

from __future__ import annotations

import concurrent.futures
import functools
import http.server
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name

from indexkit import handler_served, installer_env, uv_executable
from installkit import make_venv
from recordedkit import load_differences, load_sets, replay_site
from wheelwise.environment.installed import InstalledDist
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.environment.satisfied import installed_closure

SETS = load_sets()
DIFFERENCES = load_differences()
TIMEOUT = 300


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The replay index served on 127.0.0.1 (its simple URL), and a home folder whose
    caches the installers share across sets.

    Served in a thread of this process, without an access log: ``indexkit.http_server``
    writes one to a pipe nobody reads while it runs, and stops answering once the pipe
    is full (a few hundred requests, less than one set of this test makes).
    """
    work = tmp_path_factory.mktemp("recorded-index")
    site = replay_site(work)
    home = tmp_path_factory.mktemp("installer-home")
    handler = functools.partial(_QuietFiles, directory=str(site))
    with handler_served(handler) as base:
        yield f"{base}/simple/", home


def _env(home: Path) -> dict[str, str]:
    env = installer_env(home)
    env["WHEELWISE_CACHE_DIR"] = str(home / "wheelwise-cache")
    return env


def _run(argv: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    done = subprocess.run(
        argv, input=stdin, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{argv[:4]} failed ({done.returncode}):\n{done.stderr[-4000:]}{done.stdout[-2000:]}"
        )
    return done.stdout


def _report(text: str) -> dict[str, str]:
    """{normalized name: version} of an installation report (pip's format, version 1)."""
    report = json.loads(text)
    return {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in report["install"]
    }


def resolve_pip(index: str, python: Path, home: Path, requirements: list[str]) -> dict[str, str]:
    argv = [sys.executable, "-m", "pip", "--isolated", "--python", str(python), "install"]
    argv += ["--dry-run", "--ignore-installed", "--report", "-", "--quiet"]
    argv += ["--index-url", index, *requirements]
    return _report(_run(argv, _env(home)))


def report_wheelwise(
    index: str, python: Path, home: Path, requirements: list[str]
) -> dict[str, Any]:
    """wheelwise's installation report of a dry run (pip's format, version 1)."""
    argv = [sys.executable, "-m", "wheelwise", "install", "--python", str(python)]
    argv += ["--index-url", index, "--dry-run", "--report", "-", "-q", *requirements]
    report: dict[str, Any] = json.loads(_run(argv, _env(home)))
    return report


def check_satisfied_alone(
    report: dict[str, Any], python: Path, requirements: list[str], site: Path
) -> None:
    """What the resolver chose, written as installed distributions (their METADATA
    from the report), meets the set from the environment alone
    (:func:`~wheelwise.environment.satisfied.installed_closure`, which then spares an
    install the index), reaching every chosen package; and without any one of them,
    it does not."""
    installed: dict[str, InstalledDist] = {}
    for item in report["install"]:
        metadata = item["metadata"]
        name, version = canonicalize_name(metadata["name"]), metadata["version"]
        folder = site / f"{name}-{version}.dist-info"
        folder.mkdir(parents=True)
        lines = ["Metadata-Version: 2.1", f"Name: {metadata['name']}", f"Version: {version}"]
        lines += [f"Provides-Extra: {extra}" for extra in metadata.get("provides_extra", [])]
        lines += [f"Requires-Dist: {line}" for line in metadata.get("requires_dist", [])]
        (folder / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
        installed[name] = InstalledDist(name, version, None, None, folder)
    markers = TargetEnvironment.from_python(python).markers
    found = installed_closure(requirements, installed, markers)
    assert found is not None, "the resolution, installed, does not meet the set"
    assert {dist.name for dist in found} == set(installed)
    needed = [
        name
        for name in installed
        if installed_closure(
            requirements, {k: v for k, v in installed.items() if k != name}, markers
        )
        is None
    ]
    assert needed == list(installed), sorted(set(installed) - set(needed))


def resolve_uv(index: str, python: Path, home: Path, requirements: list[str]) -> dict[str, str]:
    argv = [uv_executable(), "pip", "compile", "--no-config", "--python", str(python)]
    argv += ["--index-url", index, "--no-header", "--no-annotate", "--quiet", "-"]
    env = _env(home)
    env["UV_CACHE_DIR"] = str(home / "uv-cache")
    out = _run(argv, env, stdin="\n".join(requirements) + "\n")
    chosen: dict[str, str] = {}
    for line in out.splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, _, version = line.partition("==")
            chosen[canonicalize_name(name.split("[")[0])] = version.split(";")[0].strip()
    return chosen


def differences(one: dict[str, str], other: dict[str, str]) -> dict[str, tuple[str, str]]:
    """project -> (version in *one*, version in *other*), "" where it is not chosen."""
    return {
        name: (one.get(name, ""), other.get(name, ""))
        for name in sorted(set(one) | set(other))
        if one.get(name) != other.get(name)
    }


def check_documented(set_name: str, peer: str, found: dict[str, tuple[str, str]]) -> None:
    """Every difference of *found* is documented for the set, and every documented one
    occurs."""
    documented = {
        d["project"]: (d[peer], d["wheelwise"])
        for d in DIFFERENCES
        if d["set"] == set_name and peer in d
    }
    undocumented = {k: v for k, v in found.items() if documented.get(k) != v}
    stale = {k: v for k, v in documented.items() if found.get(k) != v}
    message = []
    if undocumented:
        lines = [
            f"  {k}: {peer} {a or '-'}, wheelwise {b or '-'}" for k, (a, b) in undocumented.items()
        ]
        message.append(f"undocumented differences from {peer}:\n" + "\n".join(lines))
    if stale:
        message.append(f"documented differences from {peer} that no longer occur: {sorted(stale)}")
    assert not message, f"set {set_name}: " + "\n".join(message)


def test_sets_are_well_formed() -> None:
    names = [s["name"] for s in SETS]
    assert len(names) == len(set(names)) >= 30
    assert "hydra-core" in names
    for entry in SETS:
        assert entry["source"].startswith("https://"), entry["name"]
        assert entry["requirements"], entry["name"]
    for difference in DIFFERENCES:
        assert difference["set"] in names, difference
        assert difference.get("reason"), difference


@pytest.mark.slow
@pytest.mark.parametrize("entry", SETS, ids=[s["name"] for s in SETS])
def test_same_choice_as_pip(
    entry: dict[str, Any], replay: tuple[str, Path], tmp_path: Path, no_proxies: None
) -> None:
    index, home = replay
    python = make_venv(tmp_path / "venv")
    requirements = list(entry["requirements"])
    resolvers: dict[str, Any] = {"pip": resolve_pip, "wheelwise": report_wheelwise}
    if entry.get("uv"):
        resolvers["uv"] = resolve_uv
    with concurrent.futures.ThreadPoolExecutor(len(resolvers)) as pool:
        futures = {
            name: pool.submit(resolve, index, python, home, requirements)
            for name, resolve in resolvers.items()
        }
        chosen = {name: future.result() for name, future in futures.items()}
    report = chosen["wheelwise"]
    chosen["wheelwise"] = _report(json.dumps(report))
    check_satisfied_alone(report, python, requirements, tmp_path / "site")
    assert chosen["pip"], "pip chose nothing"
    check_documented(entry["name"], "pip", differences(chosen["pip"], chosen["wheelwise"]))
    if "uv" in chosen:
        check_documented(entry["name"], "uv", differences(chosen["uv"], chosen["wheelwise"]))


@pytest.mark.slow
def test_replay_has_the_sdist_only_projects(replay: tuple[str, Path], no_proxies: None) -> None:
    """The projects the test must cover as sdists only are recorded that way."""
    index, _ = replay
    for project in ("antlr4-python3-runtime", "jieba", "langdetect", "docopt"):
        with urllib.request.urlopen(f"{index}{project}/index.json", timeout=10) as response:
            page = json.loads(response.read())
        names = [f["filename"] for f in page["files"]]
        assert names, project
        assert all(n.endswith(".tar.gz") for n in names), names
