"""``wheelwise install --user`` counts as installed what the interpreter imports, as
pip does: a distribution in the interpreter's own site satisfies a requirement; one
that does not is shadowed by the user site's new version, never removed; and one in
a virtual environment's own site, which comes before the user site, is never
replaced from there (the new version would not be imported).

The virtual environments here see the user site (``--system-site-packages``); the
user base is a scratch folder (``PYTHONUSERBASE``). Where the folder after the user
site matters, the interpreter's answer is given through the ``query`` seam of
:func:`~wheelwise.install.plan.run_install`, with one more site folder in it: the
base interpreter's own site-packages are not this test's to change.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from installkit import alpha_wheel, imported_from, pip, simple_wheel
from variantkit import wheelwise
from wheelwise.environment.installed import list_installed
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.install.plan import InstallOptions, run_install
from wheelwise.models.errors import EnvironmentQueryError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX user scheme")


def _base_python() -> Path:
    return Path(getattr(sys, "_base_executable", sys.executable)).resolve()


def _install(
    python: Path, wheels: Path, userbase: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``wheelwise install`` into *python* from *wheels* alone, with *userbase*."""
    found = ["install", "--python", str(python), "--no-index", "-f", str(wheels), *args]
    return wheelwise(found, userbase.parent / "cache", env={"PYTHONUSERBASE": str(userbase)})


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    alpha_wheel(folder, "1.0")
    simple_wheel(folder, "beta", "1.0")
    simple_wheel(folder, "beta", "2.0")
    return folder


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A virtual environment that sees the user site; its interpreter."""
    subprocess.run(
        [str(_base_python()), "-m", "venv", "--without-pip", "--system-site-packages",
         str(tmp_path / "venv")],
        check=True,
    )  # fmt: skip
    return tmp_path / "venv" / "bin" / "python"


@pytest.fixture
def userbase(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "userbase"
    previous = os.environ.get("PYTHONUSERBASE")
    os.environ["PYTHONUSERBASE"] = str(folder)  # for pip, and queries made in process
    try:
        yield folder
    finally:
        if previous is None:
            del os.environ["PYTHONUSERBASE"]
        else:
            os.environ["PYTHONUSERBASE"] = previous


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


@pytest.fixture
def with_beta(venv: Path, wheels: Path, userbase: Path) -> Path:
    """*venv* with beta 1.0 in its own site-packages."""
    placed = _install(venv, wheels, userbase, "beta==1.0")
    assert placed.returncode == 0, placed.stderr
    return venv


def test_the_environments_own_version_satisfies_user_as_with_pip(
    with_beta: Path, wheels: Path, userbase: Path
) -> None:
    venv = with_beta
    ours = _install(venv, wheels, userbase, "--user", "beta")
    assert ours.returncode == 0, ours.stderr
    assert _files(userbase) == []  # nothing installed: beta 1.0 is imported already
    theirs = pip(venv, "install", "--no-index", "-f", str(wheels), "--user", "beta")
    assert theirs.returncode == 0, theirs.stderr
    assert "Requirement already satisfied: beta" in theirs.stdout
    assert _files(userbase) == []


def test_replacing_the_environments_own_version_from_the_user_site_is_refused(
    with_beta: Path, wheels: Path, userbase: Path
) -> None:
    venv = with_beta
    ours = _install(venv, wheels, userbase, "--user", "beta==2.0")
    assert ours.returncode == 2
    site = venv.parent.parent / "lib" / "python{}.{}".format(*sys.version_info[:2])
    assert ours.stderr.splitlines() == [
        f"wheelwise: error: --user: beta 1.0 in {site / 'site-packages'} is imported before "
        "the user site, so the version installed there would not be; install beta "
        "without --user"
    ]
    assert _files(userbase) == []
    theirs = pip(venv, "install", "--no-index", "-f", str(wheels), "--user", "beta==2.0")
    assert theirs.returncode != 0
    assert "lack sys.path precedence to beta" in theirs.stderr
    assert _files(userbase) == []


def test_a_package_installed_nowhere_goes_to_the_user_site(
    venv: Path, wheels: Path, userbase: Path
) -> None:
    ours = _install(venv, wheels, userbase, "--user", "alpha")
    assert ours.returncode == 0, ours.stderr
    assert imported_from(venv, "alpha", userbase).startswith(str(userbase))


class _Answered:
    """A query already answered (``run_install``'s *query*)."""

    def __init__(self, env: TargetEnvironment) -> None:
        self.env = env

    def __enter__(self) -> _Answered:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def result(self) -> TargetEnvironment:
        return self.env


def test_the_interpreters_own_site_counts_and_is_shadowed_not_changed(
    tmp_path: Path, wheels: Path, userbase: Path
) -> None:
    # The base interpreter's answer, with one more site folder of its own: what
    # site.getsitepackages() lists there comes after the user site.
    base_site = tmp_path / "base-site"
    placed = _install(_base_python(), wheels, userbase, "--target", str(base_site), "beta==1.0")
    assert placed.returncode == 0, placed.stderr
    real = TargetEnvironment.from_python(_base_python())
    info = {**real.info, "site_packages": [*real.info["site_packages"], str(base_site)]}
    env = TargetEnvironment.from_info(info, python=real.python)
    assert env.in_user_site().sites_after[-1] == base_site

    def install(*requirements: str) -> None:
        run_install(
            InstallOptions(
                requirements=requirements,
                index_url=None,
                find_links=[str(wheels)],
                user=True,
                break_system_packages=True,  # a scratch user base, whatever the system
                cache_dir=tmp_path / "cache",
            ),
            query=_Answered(env),  # type: ignore[arg-type]
        )

    before = {p: p.stat().st_mtime_ns for p in base_site.rglob("*")}
    install("beta")  # satisfied by the version in the interpreter's own site
    assert _files(userbase) == []
    install("beta==2.0")  # installed in the user site, which is imported first
    user = env.in_user_site()
    assert [(d.name, str(d.version)) for d in list_installed(user)] == [("beta", "2.0")]
    assert {p: p.stat().st_mtime_ns for p in base_site.rglob("*")} == before


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)


@pytest.fixture(scope="module")
def base_info() -> dict[str, object]:
    return dict(TargetEnvironment.from_python(_base_python()).info)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(listed=_JSON)
def test_any_site_packages_answer_gives_folders_or_none(
    base_info: dict[str, object], listed: object
) -> None:
    """Whatever the interpreter's answer holds for ``site_packages`` (it is the target
    interpreter's JSON), ``--user`` gets folders to read, never the user site itself,
    and no exception."""
    env = TargetEnvironment.from_info({**base_info, "site_packages": listed}, python=_base_python())
    try:
        user = env.in_user_site()
    except EnvironmentQueryError:
        return  # a user site this interpreter does not see: one error line, as before
    assert all(isinstance(p, Path) for p in (*user.sites_before, *user.sites_after))
    assert not set(user.sites_after) & set(user.site_dirs)
