"""``-r -`` and ``-c -``: a requirements file read from standard input, through the
real command line (``python -m wheelwise``), for ``install``, ``download``, ``lock``
and ``uninstall``.

uv reads ``-`` this way, its relative paths from the current folder; pip opens ``-``
as a file (``Could not open requirements file: ... '-'``) and reads ``-r /dev/stdin``
as a plain file. Every package comes from a ``--find-links`` folder: no network.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from indexkit import installer_env, uv_executable
from installkit import make_venv, site_packages
from wheelfactory import make_wheel

TIMEOUT = 120  # seconds: a hang (stdin read twice, a prompt) fails instead of waiting

pytestmark = pytest.mark.usefixtures("simulated_machine")


@pytest.fixture(scope="module")
def links(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alpha 1.0 and 2.0 (each needs beta), beta 1.0 and 2.0, gamma 1.0."""
    folder = tmp_path_factory.mktemp("links")
    for version in ("1.0", "2.0"):
        make_wheel(folder, f"alpha-{version}-py3-none-any.whl", requires_dist=["beta"], record=True)
        make_wheel(folder, f"beta-{version}-py3-none-any.whl", record=True)
    make_wheel(folder, "gamma-1.0-py3-none-any.whl", record=True)
    return folder


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty environment that dry runs resolve for (never installed into)."""
    return make_venv(tmp_path_factory.mktemp("dry") / "venv")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No user configuration, and no source but the ones a test gives."""
    home = tmp_path / "home"
    home.mkdir()
    found = installer_env(home)
    for name in ("INDEX_URL", "EXTRA_INDEX_URL", "FIND_LINKS", "EXCLUDE_NEWER"):
        found.pop(f"WHEELWISE_{name}", None)
    return found


def run(
    argv: Sequence[str | Path], stdin: str | None, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """*argv* with *stdin* as its standard input (None: ``/dev/null``)."""
    return subprocess.run(
        [str(part) for part in argv],
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=TIMEOUT,
        check=False,
    )


def wheelwise(
    args: Sequence[str | Path], stdin: str | None, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "wheelwise", *args], stdin, env, cwd)


def chosen(report: str) -> dict[str, str]:
    """{name: version} of an installation report (pip's format)."""
    return {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report)["install"]
    }


def dry_run(
    python: Path, links: Path, stdin: str | None, env: dict[str, str], cwd: Path, *args: str
) -> dict[str, str]:
    """What ``install --dry-run ARGS`` chooses, with *stdin* as standard input."""
    argv: list[str | Path] = ["install", "--python", python, "--dry-run", "--report", "-", "-q"]
    done = wheelwise([*argv, "--no-index", "-f", links, *args], stdin, env, cwd)
    assert done.returncode == 0, done.stderr
    return chosen(done.stdout)


def quiet_install(venv: Path, links: Path) -> list[str | Path]:
    """``install -q`` into *venv* from the *links* folder only."""
    return ["install", "--python", venv, "-q", "--no-index", "-f", links]


def stdin_dry_run(python: Path, links: Path) -> list[str | Path]:
    """``install --dry-run`` from the *links* folder only, ``-r -``."""
    return ["install", "--python", python, "--dry-run", "--no-index", "-f", links, "-r", "-"]


def one_error(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit status 2 and one ``wheelwise: error:`` line holding every needle."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    errors = [line for line in lines if line.startswith("wheelwise: error: ")]
    assert len(errors) == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def test_install_dry_run_reads_the_requirements_from_stdin(
    python: Path, links: Path, env: dict[str, str], tmp_path: Path
) -> None:
    found = dry_run(python, links, "alpha<2\n# a comment\ngamma\n", env, tmp_path, "-r", "-")
    assert found == {"alpha": "1.0", "beta": "2.0", "gamma": "1.0"}


def test_stdin_adds_to_requirements_and_files_given_with_it(
    python: Path, links: Path, env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "more.txt").write_text("gamma\n")
    found = dry_run(python, links, "beta<2\n", env, tmp_path, "alpha", "-r", "more.txt", "-r", "-")
    assert found == {"alpha": "2.0", "beta": "1.0", "gamma": "1.0"}


def test_install_from_stdin_installs(links: Path, env: dict[str, str], tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    argv: list[str | Path] = [
        *quiet_install(venv, links),
        "-r",
        "-",
    ]
    done = wheelwise(argv, "alpha==1.0\n", env, tmp_path)
    assert done.returncode == 0, done.stderr
    site = site_packages(venv)
    assert (site / "alpha-1.0.dist-info").is_dir()
    assert (site / "beta-2.0.dist-info").is_dir()


def test_constraints_from_stdin(
    python: Path, links: Path, env: dict[str, str], tmp_path: Path
) -> None:
    found = dry_run(python, links, "beta<2\nalpha<2\n", env, tmp_path, "alpha", "-c", "-")
    assert found == {"alpha": "1.0", "beta": "1.0"}


def test_relative_paths_in_stdin_are_from_the_current_folder(
    python: Path, links: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """``-r``, ``-c`` and ``--find-links`` lines of standard input name paths from the
    current folder (as uv reads them); the files they include keep reading theirs
    from their own folder."""
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "reqs.txt").write_text("alpha\n-c pins.txt\n")
    (work / "sub" / "pins.txt").write_text("alpha<2\n")
    (work / "beta-pins.txt").write_text("beta<2\n")
    (work / "wheels").symlink_to(links, target_is_directory=True)
    stdin = "-r sub/reqs.txt\n-c beta-pins.txt\n--find-links wheels\n"
    argv: list[str | Path] = [
        "install",
        "--python",
        python,
        "--dry-run",
        "--report",
        "-",
        "-q",
        "--no-index",
    ]
    done = wheelwise([*argv, "-r", "-"], stdin, env, work)
    assert done.returncode == 0, done.stderr
    assert chosen(done.stdout) == {"alpha": "1.0", "beta": "1.0"}


def test_errors_in_stdin_name_its_line(env: dict[str, str], tmp_path: Path) -> None:
    done = wheelwise(["install", "--dry-run", "-r", "-"], "alpha\n--bogus x\n", env, tmp_path)
    one_error(done, "<stdin>:2", "--bogus")


@pytest.mark.parametrize(
    "flags",
    [("-r", "-", "-r", "-"), ("-r", "-", "-c", "-"), ("-c", "-", "-c", "-")],
    ids=["r-r", "r-c", "c-c"],
)
@pytest.mark.parametrize("command", ["install", "download", "lock"])
def test_stdin_named_twice_is_one_error(
    command: str, flags: tuple[str, ...], env: dict[str, str], tmp_path: Path
) -> None:
    done = wheelwise([command, "alpha", *flags], "alpha\n", env, tmp_path)
    one_error(done, "standard input can be read only once")
    assert not done.stdout


def test_empty_stdin_gives_no_requirements_and_a_warning(
    python: Path, links: Path, env: dict[str, str], tmp_path: Path
) -> None:
    argv = stdin_dry_run(python, links)
    alone = wheelwise(argv, "", env, tmp_path)
    one_error(alone, "nothing to install")
    assert "wheelwise: warning: -r -: standard input is empty" in alone.stderr
    with_more = wheelwise([*argv, "--report", "-", "-q", "gamma"], "\n", env, tmp_path)
    assert with_more.returncode == 0, with_more.stderr
    assert "standard input is empty" in with_more.stderr
    assert chosen(with_more.stdout) == {"gamma": "1.0"}


def test_closed_stdin_is_one_error(env: dict[str, str], tmp_path: Path) -> None:
    """Started with standard input closed (``<&-``), as a service may be."""
    command = '"$0" -m wheelwise install --dry-run -r - <&-'
    done = run(["sh", "-c", command, sys.executable], None, env, tmp_path)
    one_error(done, "-r -: there is no standard input")


@pytest.mark.parametrize(
    "text",
    [
        'lock-version = "1.0"\ncreated-by = "x"\n',
        '[project]\nname = "app"\nversion = "1"\ndependencies = ["alpha"]\n',
    ],
    ids=["pylock", "pyproject"],
)
def test_a_lock_or_project_file_on_stdin_is_read_as_a_requirements_file(
    text: str, python: Path, links: Path, env: dict[str, str], tmp_path: Path
) -> None:
    argv = stdin_dry_run(python, links)
    one_error(wheelwise(argv, text, env, tmp_path), "invalid requirement")


def test_download_reads_stdin(links: Path, env: dict[str, str], tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    argv: list[str | Path] = [
        "download",
        "-q",
        "--no-index",
        "-f",
        links,
        "-d",
        dest,
        "-r",
        "-",
        "-c",
        "pins.txt",
    ]
    (tmp_path / "pins.txt").write_text("beta<2\n")
    done = wheelwise(argv, "alpha\n", env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in dest.iterdir()) == [
        "alpha-2.0-py3-none-any.whl",
        "beta-1.0-py3-none-any.whl",
    ]


def test_lock_reads_stdin(links: Path, env: dict[str, str], tmp_path: Path) -> None:
    from wheelwise.lock import read_pylock

    output = tmp_path / "pylock.toml"
    argv: list[str | Path] = ["lock", "--no-index", "-f", links, "-o", output, "-c", "-", "alpha"]
    done = wheelwise(argv, "alpha<2\n", env, tmp_path)
    assert done.returncode == 0, done.stderr
    locked = read_pylock(output.read_bytes(), source=str(output))
    assert {(p.name, p.version) for p in locked.packages} == {("alpha", "1.0"), ("beta", "2.0")}


def test_uninstall_reads_the_names_from_stdin(
    links: Path, env: dict[str, str], tmp_path: Path
) -> None:
    venv = make_venv(tmp_path / "venv")
    argv = [*quiet_install(venv, links), "alpha", "gamma"]
    assert wheelwise(argv, None, env, tmp_path).returncode == 0
    site = site_packages(venv)
    # Standard input holds the names: it cannot answer the question as well.
    asking = wheelwise(["uninstall", "--python", venv, "-r", "-"], "alpha\n", env, tmp_path)
    one_error(asking, "--yes")
    assert (site / "alpha-2.0.dist-info").is_dir()
    done = wheelwise(
        ["uninstall", "--python", venv, "-y", "-r", "-"], "alpha>=1\ngamma\n", env, tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == ["uninstalled alpha", "uninstalled gamma", ""]
    assert not (site / "alpha-2.0.dist-info").exists()
    assert not (site / "gamma-1.0.dist-info").exists()
    assert (site / "beta-2.0.dist-info").is_dir()


@pytest.mark.skipif(not Path("/dev/stdin").exists(), reason="pip reads stdin as /dev/stdin")
def test_same_choice_as_pip_and_uv(
    python: Path, links: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """The same standard input chooses the same set in wheelwise (``-r -``), pip
    (``-r /dev/stdin``: pip takes no ``-``) and uv (``uv pip compile -``). Its
    ``-c`` path is absolute: pip reads a relative one from /dev."""
    pins = tmp_path / "pins.txt"
    pins.write_text("beta<2\n")
    stdin = f"alpha\ngamma\n-c {pins}\n"
    ours = dry_run(python, links, stdin, env, tmp_path, "-r", "-")
    pip: list[str | Path] = [
        sys.executable,
        "-m",
        "pip",
        "--isolated",
        "--python",
        python,
        "install",
    ]
    pip += ["--dry-run", "--ignore-installed", "--report", "-", "--quiet", "--no-index"]
    by_pip = run([*pip, "-f", links, "-r", "/dev/stdin"], stdin, env, tmp_path)
    assert by_pip.returncode == 0, by_pip.stderr
    uv: list[str | Path] = [
        uv_executable(),
        "pip",
        "compile",
        "--python",
        python,
        "--no-index",
        "-f",
        links,
    ]
    uv += ["--no-header", "--no-annotate", "--offline", "--no-cache", "-"]
    by_uv = run(uv, stdin, env, tmp_path)
    assert by_uv.returncode == 0, by_uv.stderr
    pins_uv = dict(line.split("==") for line in by_uv.stdout.split())
    assert (
        ours
        == chosen(by_pip.stdout)
        == pins_uv
        == {
            "alpha": "2.0",
            "beta": "1.0",
            "gamma": "1.0",
        }
    )
