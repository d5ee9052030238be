"""An install whose requirements are all met by what is installed reads no index (as
pip's "Requirement already satisfied" and uv's "Audited"): it works with the index
down. What the environment alone cannot answer is left to the resolver."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexkit import free_port
from installkit import alpha_wheel, make_venv, pip, run_python, simple_wheel
from variantkit import wheelwise
from wheelwise.environment.installed import InstalledDist
from wheelwise.environment.satisfied import installed_closure

LINUX = {
    "python_version": "3.12",
    "python_full_version": "3.12.1",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "implementation_name": "cpython",
    "os_name": "posix",
}


def _dist(
    site: Path,
    name: str,
    version: str,
    requires: tuple[str, ...] = (),
    extras: tuple[str, ...] = (),
    variant: str | None = None,
    variant_json: str = "{}",
) -> InstalledDist:
    folder = site / f"{name}-{version}.dist-info"
    folder.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Provides-Extra: {extra}" for extra in extras]
    lines += [f"Requires-Dist: {line}" for line in requires]
    (folder / "METADATA").write_text("\n".join(lines) + "\n\nThe description.\n")
    if variant is not None:
        (folder / "variant.json").write_text(variant_json)
    return InstalledDist(name, version, "wheelwise", variant, folder)


def _names(found: list[InstalledDist] | None) -> list[str] | None:
    return None if found is None else [dist.name for dist in found]


def test_the_whole_graph_installed_is_satisfied(tmp_path: Path) -> None:
    installed = {
        d.name: d
        for d in (
            _dist(tmp_path, "app", "1.0", ("lib>=2", "winonly; sys_platform == 'win32'")),
            _dist(tmp_path, "lib", "2.1", ("core", "docs-tool; extra == 'docs'"), ("docs",)),
            _dist(tmp_path, "core", "3.0rc1"),  # an installed pre-release counts
        )
    }
    assert _names(installed_closure(["app"], installed, LINUX)) == ["app", "lib", "core"]
    # An extra asked for adds what it needs: missing here.
    assert installed_closure(["lib[docs]"], installed, LINUX) is None
    assert installed_closure(["app==2"], installed, LINUX) is None  # another version
    assert installed_closure(["app", "absent"], installed, LINUX) is None
    # A requirement whose marker leaves it out here needs nothing.
    assert _names(installed_closure(["absent; python_version < '3'"], installed, LINUX)) == []


def test_extras_and_their_compound_markers(tmp_path: Path) -> None:
    requires = (
        "fast; extra == 'speed'",
        "gpu-lib; (sys_platform == 'linux' or sys_platform == 'win32') and extra == 'gpu'",
        "never; sys_platform == 'darwin' and extra == 'gpu'",
    )
    installed = {
        d.name: d
        for d in (
            _dist(tmp_path, "kit", "1.0", requires, ("speed", "gpu")),
            _dist(tmp_path, "gpu-lib", "1.0"),
        )
    }
    assert _names(installed_closure(["kit[gpu]"], installed, LINUX)) == ["kit", "gpu-lib"]
    assert installed_closure(["kit[speed]"], installed, LINUX) is None  # fast is missing
    assert installed_closure(["kit[nonesuch]"], installed, LINUX) is None  # not declared


def test_what_the_environment_cannot_answer_is_left_to_the_resolver(tmp_path: Path) -> None:
    installed = {
        d.name: d
        for d in (
            _dist(tmp_path, "marked", "1.0", ("dep; 'cuda' in variant_namespaces",)),
            _dist(tmp_path, "dep", "1.0"),
            _dist(tmp_path, "ext", "1.0", variant="torch29",
                  variant_json='{"variants": {"torch29": {"abi_dependency": {"torch": ["2.9"]}}}}'),
            _dist(tmp_path, "plain", "1.0", variant="cu128",
                  variant_json='{"variants": {"cu128": {"nvidia": {"sm": ["90"]}}}}'),
        )
    }  # fmt: skip
    assert installed_closure(["marked"], installed, LINUX) is None  # a variant marker
    assert installed_closure(["ext"], installed, LINUX) is None  # an abi_dependency build
    assert _names(installed_closure(["plain"], installed, LINUX)) == ["plain"]
    assert installed_closure(["not a requirement!"], installed, LINUX) is None
    assert installed_closure(["dep @ https://example.org/dep.whl"], installed, LINUX) is None
    (installed["dep"].location / "METADATA").unlink()
    assert installed_closure(["dep"], installed, LINUX) is None  # unreadable
    assert _names(installed_closure(["dep"], installed, LINUX, no_deps=True)) == ["dep"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_metadata_that_is_a_fifo_or_huge_is_left_to_the_resolver(tmp_path: Path) -> None:
    fifo = _dist(tmp_path, "fifo", "1.0")
    (fifo.location / "METADATA").unlink()
    os.mkfifo(fifo.location / "METADATA")  # read naively, this would block for ever
    huge = _dist(tmp_path, "huge", "1.0")
    (huge.location / "METADATA").write_bytes(b"Name: huge\n" + b"x" * (17 << 20))
    installed = {"fifo": fifo, "huge": huge}
    assert installed_closure(["fifo"], installed, LINUX) is None
    assert installed_closure(["huge"], installed, LINUX) is None


def test_no_deps_checks_the_requirements_given_only(tmp_path: Path) -> None:
    installed = {d.name: d for d in (_dist(tmp_path, "app", "1.0", ("missing",)),)}
    assert installed_closure(["app"], installed, LINUX) is None
    assert _names(installed_closure(["app"], installed, LINUX, no_deps=True)) == ["app"]


_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
_LINES = st.one_of(
    _TEXT,
    st.builds(
        lambda name, extra, marker: f"{name}; extra == '{extra}' {marker}",
        st.sampled_from(["dep", "app", "x"]),
        st.sampled_from(["a", "b", "c d"]),
        _TEXT,
    ),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    requires=st.lists(_LINES, max_size=6),
    wanted=st.lists(_LINES, min_size=1, max_size=3),
    version=st.one_of(_TEXT, st.sampled_from(["1.0", "2.0rc1", "1!3"])),
    data=st.binary(max_size=200),
)
def test_fuzzed_metadata_and_requirements_never_raise(
    tmp_path_factory: pytest.TempPathFactory,
    requires: list[str],
    wanted: list[str],
    version: str,
    data: bytes,
) -> None:
    site = tmp_path_factory.mktemp("site")
    app = _dist(site, "app", "1.0", tuple(line.replace("\n", " ") for line in requires))
    dep = InstalledDist("dep", version, None, None, site / "dep.dist-info")
    dep.location.mkdir()
    (dep.location / "METADATA").write_bytes(data)
    found = installed_closure(wanted, {"app": app, "dep": dep}, LINUX)
    assert found is None or {d.name for d in found} <= {"app", "dep"}


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return wheelwise(args, cache)


def test_an_installed_graph_needs_no_index_as_with_pip(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    alpha_wheel(wheels, "1.0")
    simple_wheel(wheels, "beta", "1.0")
    python = make_venv(tmp_path / "venv")
    cache = tmp_path / "cache"
    first = _cli("install", "--python", str(python), "--no-index", "-f", str(wheels),
                 "alpha", "beta", cache=cache)  # fmt: skip
    assert first.returncode == 0, first.stderr
    site = next((python.parent.parent / "lib").glob("python3*/site-packages"))
    before = sorted(p.name for p in site.iterdir())
    down = f"http://127.0.0.1:{free_port()}/simple/"  # nothing listens there
    again = _cli("install", "--python", str(python), "-i", down, "alpha", "beta>=1", cache=cache)
    assert again.returncode == 0, again.stderr
    assert sorted(again.stdout.splitlines()) == ["already installed alpha 1.0",
                                                 "already installed beta 1.0"]  # fmt: skip
    assert sorted(p.name for p in site.iterdir()) == before
    verbose = _cli("install", "-v", "--python", str(python), "-i", down, "beta", cache=cache)
    assert verbose.stdout.splitlines() == [
        f"already installed beta 1.0 (in {site})",
        "every requirement is met by what is installed: no index was read",
    ], verbose.stdout
    quiet = _cli("install", "-q", "--python", str(python), "-i", down, "alpha", cache=cache)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    # pip answers the same without its index.
    theirs = pip(python, "install", "--index-url", down, "--retries", "0", "alpha")
    assert theirs.returncode == 0, theirs.stderr
    assert "Requirement already satisfied: alpha" in theirs.stdout
    # What is not installed needs the index: the resolver asks it, and says it is down.
    missing = _cli("install", "--python", str(python), "-i", down, "beta==2", cache=cache)
    assert missing.returncode == 2
    assert "cannot connect" in missing.stderr
    upgrade = _cli("install", "-U", "--python", str(python), "-i", down, "beta", cache=cache)
    assert upgrade.returncode == 2  # --upgrade always asks


# What resolving and installing load: an install that finds everything installed loads
# none of it (the modules behind bench/noop.py's figure).
RESOLVING_MODULES = (
    "filelock",
    "wheelwise.client.index_client",
    "wheelwise.fetch.download",
    "wheelwise.install.transaction",
    "wheelwise.resolve.decide",
    "wheelwise.resolve.lookahead",
)


def test_an_install_answered_by_what_is_installed_loads_no_resolver(tmp_path: Path) -> None:
    """`packaging` is installed in this interpreter's environment: the install ends
    there without loading the index client, the resolver or the transaction; a
    dry run of the same (which shows the resolver's plan) loads them."""
    code = f"""
import dataclasses, sys
from pathlib import Path
from wheelwise.install.plan import InstallOptions, run_install
options = InstallOptions(
    requirements=["packaging"], index_url="http://127.0.0.1:{free_port()}/simple/",
    python=Path(sys.executable), cache_dir=Path({str(tmp_path)!r}), retries=0,
)
outcome = run_install(options)
print([dist.name for dist in outcome.satisfied])
print([m for m in {RESOLVING_MODULES!r} if m in sys.modules])
try:
    run_install(dataclasses.replace(options, dry_run=True))
except Exception as exc:  # the index is down: the resolver says so
    print(type(exc).__name__)
print([m for m in {RESOLVING_MODULES!r} if m in sys.modules])
"""
    result = run_python(Path(sys.executable), code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "['packaging']",
        "[]",
        "SourceError",
        str(list(RESOLVING_MODULES)),
    ]
