"""Installs setuptools and distutils made, which leave an ``.egg-info`` folder or file
and no ``RECORD`` (an old ``setup.py install``, a distribution's own packages, some
conda environments): ``list``, ``freeze``, ``show``, ``check``, the resolver and
``uninstall`` see them as pip 26.3 does, and each result is compared with pip's (and
uv's) on a copy of the same venv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded
from installkit import make_venv, pip, simple_wheel, site_packages, tree_hash
from variantkit import wheelwise
from wheelwise.environment.dist_files import removable_files
from wheelwise.environment.installed import (
    InstalledDist,
    metadata_locations,
    read_installed_metadata,
)
from wheelwise.models.errors import InstallError
from wheelwise.wheels.core_metadata import read_core_metadata

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

UV = [sys.executable, "-m", "uv"]


def egg_info(
    site: Path,
    name: str,
    version: str,
    *,
    top_level: str | None = None,
    installed_files: list[str] | None = None,
    requires: str | None = None,
) -> Path:
    """A setuptools ``NAME-VERSION-py3.X.egg-info`` folder in *site*."""
    folder = site / f"{name.replace('-', '_')}-{version}-py3.11.egg-info"
    folder.mkdir()
    (folder / "PKG-INFO").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {name} here\n\n"
        "A long description.\nRequires-Dist: not-a-header\n"
    )
    if top_level is not None:
        (folder / "top_level.txt").write_text(top_level)
    if installed_files is not None:
        (folder / "installed-files.txt").write_text("\n".join(installed_files) + "\n")
    if requires is not None:
        (folder / "requires.txt").write_text(requires)
    return folder


def package(site: Path, name: str) -> None:
    """A package *name* in *site* with a module and its bytecode."""
    (site / name / "__pycache__").mkdir(parents=True)
    (site / name / "__init__.py").write_text("X = 1\n")
    (site / name / "core.py").write_text("Y = 2\n")
    (site / name / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\0" * 16)


def distutils_file(site: Path, name: str, version: str) -> Path:
    """distutils' ``NAME-VERSION-py3.X.egg-info`` file, the core metadata itself."""
    path = site / f"{name}-{version}-py3.11.egg-info"
    path.write_text(f"Metadata-Version: 1.0\nName: {name}\nVersion: {version}\n")
    (site / f"{name}.py").write_text("Z = 3\n")
    return path


def files_under(root: Path) -> set[str]:
    return {str(path.relative_to(root)) for path in root.rglob("*")}


@pytest.fixture
def legacy_venv(tmp_path: Path) -> Path:
    """A venv holding ``foo`` (setuptools, top_level.txt, requires idna, and
    ``pytest`` for its extra), ``legacy`` (an old ``setup.py install`` by pip: an
    installed-files.txt), ``idna`` as a wheel would leave it, and ``bar`` (distutils)."""
    python = make_venv(tmp_path / "venv")
    site = site_packages(python)
    egg_info(site, "foo", "1.0", top_level="foo\n", requires="idna>=2\n\n[test]\npytest\n")
    package(site, "foo")
    listed = ["../legacy/__init__.py", "../legacy/core.py", "PKG-INFO", "installed-files.txt"]
    egg_info(site, "legacy-pkg", "3.1", installed_files=listed)
    package(site, "legacy")
    (site / "legacy" / "extra_not_listed.py").write_text("W = 4\n")
    distutils_file(site, "bar", "2.0")
    dist_info = site / "idna-3.4.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: idna\nVersion: 3.4\n\n")
    (dist_info / "RECORD").write_text(
        "idna-3.4.dist-info/METADATA,,\nidna-3.4.dist-info/RECORD,,\n"
    )
    return python


def test_list_and_freeze_show_them_as_pip_and_uv_do(legacy_venv: Path, tmp_path: Path) -> None:
    python = str(legacy_venv)
    done = wheelwise(["freeze", "--python", python], tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    theirs = pip(legacy_venv, "list", "--format", "freeze")
    assert theirs.returncode == 0, theirs.stderr
    uv = subprocess.run([*UV, "pip", "freeze", "--python", python], capture_output=True, text=True)
    assert done.stdout.splitlines() == ["bar==2.0", "foo==1.0", "idna==3.4", "legacy-pkg==3.1"]
    assert sorted(theirs.stdout.splitlines()) == done.stdout.splitlines()
    assert uv.stdout.splitlines() == done.stdout.splitlines()
    listed = wheelwise(["list", "--format", "json", "--python", python], tmp_path / "cache")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["legacy-pkg"]["version"] == "3.1"
    assert rows["legacy-pkg"]["installer"] is None


def test_show_and_check_read_requires_txt_as_pip_does(legacy_venv: Path, tmp_path: Path) -> None:
    python = str(legacy_venv)
    show = wheelwise(["show", "--python", python, "foo", "legacy-pkg", "-f"], tmp_path / "cache")
    assert show.returncode == 0, show.stderr
    theirs = pip(legacy_venv, "show", "foo", "legacy-pkg", "-f")
    assert show.stdout.splitlines() == theirs.stdout.splitlines()
    assert "Requires: idna" in show.stdout
    assert "  legacy/core.py" in show.stdout  # from installed-files.txt, as pip lists it
    # idna is there: nothing is broken; gone, foo's requirement is told, as by pip.
    assert wheelwise(["check", "--python", python], tmp_path / "cache").returncode == 0
    shutil.rmtree(site_packages(legacy_venv) / "idna-3.4.dist-info")
    check = wheelwise(["check", "--python", python], tmp_path / "cache")
    theirs = pip(legacy_venv, "check")
    assert check.returncode == 1
    assert check.stdout.strip() == "foo 1.0 requires idna>=2, which is not installed"
    assert theirs.stdout.strip() == "foo 1.0 requires idna, which is not installed."


def test_requires_txt_becomes_requires_dist(legacy_venv: Path) -> None:
    """The requirements in requires.txt, as importlib.metadata converts them, in the
    head; the body (with a line that looks like a field) stays the body."""
    site = site_packages(legacy_venv)
    data = read_installed_metadata(next(site.glob("foo-*.egg-info")))
    metadata = read_core_metadata(data, body=True)
    assert metadata.requires_dist == ["idna>=2", 'pytest; extra == "test"']
    assert data.endswith(b"A long description.\nRequires-Dist: not-a-header\n")


def uninstall_both(
    venv_python: Path, tmp_path: Path, name: str
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str], Path]:
    """*name* uninstalled by wheelwise in the venv and by pip in a copy of it."""
    venv = venv_python.parent.parent
    copy = tmp_path / "copy"
    shutil.copytree(venv, copy, symlinks=True)
    ours = wheelwise(["uninstall", "-y", "--python", str(venv_python), name], tmp_path / "cache")
    theirs = pip(copy / "bin" / "python", "uninstall", "-y", name)
    return ours, theirs, copy


@pytest.mark.parametrize("name", ["foo", "legacy-pkg"])
def test_uninstall_takes_what_pip_takes(legacy_venv: Path, tmp_path: Path, name: str) -> None:
    """foo by its top_level.txt (the package whole, bytecode too); legacy-pkg by its
    installed-files.txt (the file it does not list stays)."""
    ours, theirs, copy = uninstall_both(legacy_venv, tmp_path, name)
    assert ours.returncode == 0, ours.stderr
    assert theirs.returncode == 0, theirs.stderr
    site = site_packages(legacy_venv)
    left = files_under(site)
    assert left == files_under(site_packages(copy / "bin" / "python"))
    assert not any(".egg-info" in path and name.replace("-", "_") in path for path in left)
    if name == "legacy-pkg":
        assert "legacy/extra_not_listed.py" in left
        assert "legacy/core.py" not in left
    else:
        assert not any(path.startswith("foo") for path in left)
    assert not (legacy_venv.parent.parent / ".wheelwise-journal").exists()


def test_a_distutils_install_is_refused_as_pip_and_uv_refuse(
    legacy_venv: Path, tmp_path: Path
) -> None:
    before = tree_hash(legacy_venv.parent.parent)
    ours, theirs, _ = uninstall_both(legacy_venv, tmp_path, "bar")
    assert tree_hash(legacy_venv.parent.parent) == before
    uv = subprocess.run(
        [*UV, "pip", "uninstall", "--python", str(legacy_venv), "bar"],
        capture_output=True,
        text=True,
        env={**os.environ, "UV_NO_CONFIG": "1"},
    )
    assert ours.returncode == 2
    assert theirs.returncode != 0
    assert uv.returncode != 0
    site = site_packages(legacy_venv)
    assert ours.stderr.strip() == (
        "wheelwise: error: cannot uninstall bar 2.0: distutils installed it, and its "
        f"metadata file {site}/bar-2.0-py3.11.egg-info lists none of its files; remove "
        "them and that file by hand"
    )


@pytest.mark.parametrize(
    ("listing", "content", "said"),
    [
        ("installed-files.txt", "../../../../../etc/passwd\n", "outside the environment"),
        ("top_level.txt", "../../outside\n", "not a top-level name"),
        ("top_level.txt", "foo/core\n", "not a top-level name"),
        ("top_level.txt", "fo\0o\n", "with a NUL in it"),
        (None, "", "has neither installed-files.txt nor top_level.txt"),
    ],
)
def test_a_list_naming_the_wrong_files_is_refused(
    tmp_path: Path, listing: str | None, content: str, said: str
) -> None:
    python = make_venv(tmp_path / "venv")
    site = site_packages(python)
    folder = egg_info(site, "foo", "1.0")
    package(site, "foo")
    if listing is not None:
        (folder / listing).write_text(content)
    before = tree_hash(python.parent.parent)
    done = wheelwise(["uninstall", "-y", "--python", str(python), "foo"], tmp_path / "cache")
    assert done.returncode == 2
    assert said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert tree_hash(python.parent.parent) == before


def test_a_namespace_package_stays(tmp_path: Path) -> None:
    """A top-level name namespace_packages.txt names is shared with other projects:
    pip leaves it, and so does wheelwise."""
    python = make_venv(tmp_path / "venv")
    site = site_packages(python)
    folder = egg_info(site, "zope-event", "5.0", top_level="zope\n")
    (folder / "namespace_packages.txt").write_text("zope\n")
    (site / "zope" / "event").mkdir(parents=True)
    (site / "zope" / "event" / "__init__.py").write_text("")
    (site / "zope" / "interface").mkdir()
    (site / "zope" / "interface" / "__init__.py").write_text("")
    ours, theirs, copy = uninstall_both(python, tmp_path, "zope-event")
    assert ours.returncode == 0, ours.stderr
    assert theirs.returncode == 0, theirs.stderr
    assert files_under(site) == files_under(site_packages(copy / "bin" / "python"))
    assert (site / "zope" / "interface" / "__init__.py").exists()


def test_an_install_replaces_an_egg_info_install(legacy_venv: Path, tmp_path: Path) -> None:
    """foo 1.0 (setuptools) is kept for a requirement it meets, and replaced by the
    wheel of 1.1: its package and .egg-info go, the wheel's files come."""
    wheels = tmp_path / "wheels"
    simple_wheel(wheels, "foo", "1.1")
    simple_wheel(wheels, "idna", "3.4")
    args = ["install", "--python", str(legacy_venv), "--no-index", "-f", str(wheels)]
    kept = wheelwise([*args, "foo>=1.0"], tmp_path / "cache")
    assert kept.returncode == 0, kept.stderr
    site = site_packages(legacy_venv)
    assert next(site.glob("foo-1.0-*.egg-info")).is_dir()
    done = wheelwise([*args, "foo==1.1"], tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert "foo 1.0 -> 1.1" in done.stdout + done.stderr
    assert not list(site.glob("foo-*.egg-info"))
    assert (site / "foo" / "__init__.py").read_text() == "VERSION = '1.1'\n"
    assert not (site / "foo" / "core.py").exists()
    freeze = wheelwise(["freeze", "--python", str(legacy_venv)], tmp_path / "cache")
    assert "foo==1.1" in freeze.stdout.splitlines()


def test_a_distutils_install_in_the_way_is_refused_before_anything_changes(
    legacy_venv: Path, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    simple_wheel(wheels, "bar", "2.1")
    before = tree_hash(legacy_venv.parent.parent)
    args = ["install", "--python", str(legacy_venv), "--no-index", "-f", str(wheels), "bar==2.1"]
    done = wheelwise(args, tmp_path / "cache")
    assert done.returncode != 0
    assert "cannot uninstall bar 2.0: distutils installed it" in done.stderr
    assert tree_hash(legacy_venv.parent.parent) == before


def test_an_unreadable_egg_info_is_told(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    site = site_packages(python)
    (site / "nameless-1.0-py3.11.egg-info").mkdir()
    (site / "broken-1.0-py3.11.egg-info").write_text("Metadata-Version: 1.0\nName: broken\n")
    done = wheelwise(["list", "--python", str(python)], tmp_path / "cache")
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        f"wheelwise: warning: {site}/broken-1.0-py3.11.egg-info: left out: its content is "
        "missing, unreadable or gives no Name and Version; remove it and that project's "
        "files, then install that project again",
        f"wheelwise: warning: {site}/nameless-1.0-py3.11.egg-info: left out: its PKG-INFO is "
        "missing, unreadable or gives no Name and Version; remove it and that project's "
        "files, then install that project again",
    ]


def test_a_dist_info_comes_before_an_egg_info_of_the_same_name(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    egg_info(site, "foo", "0.9")
    dist_info = site / "foo-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: foo\nVersion: 1.0\n")
    found = metadata_locations([site], {"foo"})
    assert [(f.name, f.version, f.location.name) for f in found] == [
        ("foo", "1.0", "foo-1.0.dist-info")
    ]


_TEXT = st.text(st.characters(codec="utf-8"), max_size=60)


@bounded(150)
@given(
    pkg_info=st.binary(max_size=200),
    requires=_TEXT,
    top_level=st.none() | _TEXT,
    installed=st.none() | _TEXT,
    namespaces=st.none() | _TEXT,
)
def test_any_egg_info_reads_or_is_refused_never_crashes(
    tmp_path_factory: pytest.TempPathFactory,
    pkg_info: bytes,
    requires: str,
    top_level: str | None,
    installed: str | None,
    namespaces: str | None,
) -> None:
    """Whatever the lists hold: the metadata reads (or raises OSError), and the files
    to remove are inside the site folder, or the uninstall is refused."""
    site = tmp_path_factory.mktemp("site")
    package(site, "foo")
    folder = site / "foo-1.0.egg-info"
    folder.mkdir()
    (folder / "PKG-INFO").write_bytes(pkg_info)
    (folder / "requires.txt").write_text(requires, "utf-8")
    for name, content in (
        ("top_level.txt", top_level),
        ("installed-files.txt", installed),
        ("namespace_packages.txt", namespaces),
    ):
        if content is not None:
            (folder / name).write_text(content, "utf-8")
    read_installed_metadata(folder)
    metadata_locations([site])
    dist = InstalledDist("foo", "1.0", None, None, folder)
    refused: str | None
    try:
        found = removable_files(dist, [site])
    except InstallError as exc:
        refused = str(exc)
    else:
        refused = None
    if refused is not None:
        assert refused.startswith("cannot uninstall foo 1.0: ")
        assert "\n" not in refused
        return
    prefix = str(site) + os.sep
    assert all(path.startswith(prefix) for path in found.files)
    assert all(Path(path).is_file() or Path(path).is_symlink() for path in found.files)
    assert str(folder / "PKG-INFO") in found.files
