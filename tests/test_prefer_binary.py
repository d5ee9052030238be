"""``--prefer-binary``: a release with a wheel for the target is tried before a newer
one that would be built from its sdist, as pip's flag; real installs from a
find-links folder (sdists built by ``tinybuild``, a PEP 517 backend of the tests),
beside pip's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from buildkit import backend_wheel, project, sdist
from indexkit import demo_wheel
from installkit import make_venv, pip, site_packages
from variantkit import wheelwise


@pytest.fixture(scope="module")
def links(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prefer-binary")
    folder = root / "links"
    folder.mkdir()
    backend_wheel(folder)
    demo_wheel(folder, "alpha-1.0-py3-none-any.whl")
    sdist(project(root / "alpha-2.0", "alpha", "2.0"), folder, "alpha", "2.0")
    return folder


def _alpha(python: Path) -> str | None:
    found = [p.name for p in site_packages(python).glob("alpha-*.dist-info")]
    return found[0].removesuffix(".dist-info").split("-")[1] if found else None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["alpha"], "2.0"),  # the newest, built
        (["--prefer-binary", "alpha"], "1.0"),  # the wheel, older
        (["--prefer-binary", "alpha>=2"], "2.0"),  # built when no wheel fits
    ],
)
def test_as_pip_chooses(links: Path, tmp_path: Path, args: list[str], expected: str) -> None:
    ours = make_venv(tmp_path / "ours")
    result = wheelwise(
        ["install", "--python", str(ours), "--no-index", "-f", str(links), *args],
        tmp_path / "cache",
    )
    assert result.returncode == 0, result.stderr
    theirs = make_venv(tmp_path / "theirs")
    peer = pip(theirs, "install", "--no-cache-dir", "--no-index", "-f", str(links), *args)
    assert peer.returncode == 0, peer.stderr
    assert _alpha(ours) == expected == _alpha(theirs)


def test_a_requirements_file_may_say_it(links: Path, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("--prefer-binary\nalpha\n")
    result = wheelwise(
        ["install", "--python", str(python), "--no-index", "-f", str(links),
         "-r", str(requirements)],
        tmp_path / "cache",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert _alpha(python) == "1.0"


def test_an_installed_version_is_kept(links: Path, tmp_path: Path) -> None:
    """As pip: a built release already installed still meets the requirement;
    --prefer-binary does not trade it for an older wheel."""
    python = make_venv(tmp_path / "venv")
    args = ["install", "--python", str(python), "--no-index", "-f", str(links)]
    assert wheelwise([*args, "alpha==2.0"], tmp_path / "cache").returncode == 0
    # --dry-run asks the resolver, which a met requirement would not otherwise need.
    result = wheelwise([*args, "--prefer-binary", "--dry-run", "--report", "-", "alpha"],
                       tmp_path / "cache")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [item["metadata"]["version"] for item in json.loads(result.stdout)["install"]] == []
    assert _alpha(python) == "2.0"
