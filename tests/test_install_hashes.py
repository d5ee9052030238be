"""Hash-checking mode (pip's and uv's ``--require-hashes``, or any ``--hash`` in a
requirements file, as ``pip-compile --generate-hashes`` writes them): real installs
into venvs from an index served on 127.0.0.1 (which gives each file's sha256) and
from a find-links folder (which gives none: the file itself is hashed)."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexkit import demo_wheel, http_server
from installkit import make_venv, site_packages, tree_hash
from variantkit import wheelwise
from wheelwise.publish.static import build_site

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

ZERO = "0" * 64


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hashes") / "wheels"
    folder.mkdir()
    demo_wheel(folder, "alpha-1.0-py3-none-any.whl")
    demo_wheel(folder, "beta-2.0-py3-none-any.whl", requires_dist=["alpha>=1"])
    return folder


@pytest.fixture(scope="module")
def index(wheels: Path) -> Iterator[str]:
    site = wheels.parent / "site"
    build_site(wheels, site)
    with http_server(site) as base:
        yield f"{base}/simple/"


def _sha256(wheels: Path, name: str) -> str:
    return hashlib.sha256((wheels / name).read_bytes()).hexdigest()


def _install(
    tmp_path: Path, source: list[str], lines: str, *args: str
) -> tuple[int, str, str, Path, str]:
    """An install of *lines* (a requirements file) into a new venv: its exit code,
    output and errors, the venv's python, and its site-packages' hash before."""
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(lines)
    result = wheelwise(
        ["install", "--python", str(python), *source, "-r", str(requirements), *args],
        tmp_path / "cache",
    )
    return result.returncode, result.stdout, result.stderr, python, before


def _pinned(wheels: Path, alpha: str | None = None) -> str:
    alpha = alpha or _sha256(wheels, "alpha-1.0-py3-none-any.whl")
    beta = _sha256(wheels, "beta-2.0-py3-none-any.whl")
    return (
        f"alpha==1.0 \\\n    --hash=sha256:{ZERO} \\\n    --hash=sha256:{alpha}\n"
        f"beta==2.0 \\\n    --hash=sha256:{beta}\n"
    )


def test_every_file_has_one_of_its_hashes(wheels: Path, index: str, tmp_path: Path) -> None:
    code, out, err, python, _ = _install(tmp_path, ["-i", index], _pinned(wheels))
    assert code == 0, err
    assert "installed alpha 1.0" in out
    assert (site_packages(python) / "beta-2.0.dist-info").is_dir()


@pytest.mark.parametrize("source", ["index", "find-links"])
def test_a_file_with_none_of_its_hashes_is_refused(
    wheels: Path, index: str, tmp_path: Path, source: str
) -> None:
    given = ["-i", index] if source == "index" else ["--no-index", "-f", str(wheels)]
    code, _, err, python, before = _install(tmp_path, given, _pinned(wheels, alpha="1" * 64))
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert "alpha-1.0-py3-none-any.whl" in err
    actual = _sha256(wheels, "alpha-1.0-py3-none-any.whl")
    assert f"sha256 mismatch: expected one of {ZERO}, {'1' * 64}, got {actual}" in err
    assert tree_hash(site_packages(python)) == before


def test_a_find_links_file_is_hashed_itself(wheels: Path, tmp_path: Path) -> None:
    code, _, err, python, _ = _install(tmp_path, ["--no-index", "-f", str(wheels)], _pinned(wheels))
    assert code == 0, err
    assert (site_packages(python) / "alpha-1.0.dist-info").is_dir()


@pytest.mark.parametrize(
    ("lines", "args", "message"),
    [
        # A dependency without hashes: all or nothing, as pip and uv.
        (f"beta==2.0 --hash=sha256:{ZERO}\n", (), "no --hash for alpha (hash-checking mode"),
        (f"beta>=2.0 --hash=sha256:{ZERO}\n", (), "'beta>=2.0' is not pinned to one version"),
        ("beta==2.0\n", ("--require-hashes",), "'beta==2.0' has no --hash"),
    ],
)
def test_what_hash_checking_needs(
    index: str, tmp_path: Path, lines: str, args: tuple[str, ...], message: str
) -> None:
    code, _, err, python, before = _install(tmp_path, ["-i", index], lines, *args)
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert message in err
    assert tree_hash(site_packages(python)) == before


def test_a_direct_reference_takes_its_hash_from_the_line(wheels: Path, tmp_path: Path) -> None:
    path = wheels / "alpha-1.0-py3-none-any.whl"
    right = _sha256(wheels, path.name)
    wrong = f"alpha @ {path.as_uri()} --hash=sha256:{ZERO}\n"
    code, _, err, _, _ = _install(tmp_path / "a", ["--no-index"], wrong)
    assert code == 2, err
    assert f"sha256 mismatch: expected {ZERO}, got {right}" in err
    code, out, err, _, _ = _install(
        tmp_path / "b", ["--no-index"], f"alpha @ {path.as_uri()} --hash=sha256:{right}\n"
    )
    assert code == 0, err
    assert "installed alpha 1.0" in out


def test_download_checks_the_hashes_too(wheels: Path, index: str, tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(_pinned(wheels, alpha="1" * 64))
    args = ["download", "-i", index, "-r", str(requirements), "-d", str(tmp_path / "out")]
    refused = wheelwise(args, tmp_path / "cache")
    assert refused.returncode == 2, refused.stderr
    assert "sha256 mismatch: expected one of" in refused.stderr
    requirements.write_text(_pinned(wheels))
    saved = wheelwise(args, tmp_path / "cache")
    assert saved.returncode == 0, saved.stderr
    assert sorted(path.name for path in (tmp_path / "out").glob("*.whl")) == [
        "alpha-1.0-py3-none-any.whl",
        "beta-2.0-py3-none-any.whl",
    ]


def test_a_lock_refuses_hashed_requirements(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"alpha==1.0 --hash=sha256:{ZERO}\n")
    result = wheelwise(["lock", "-r", str(requirements), "-o", "-"], tmp_path / "cache")
    assert result.returncode == 2
    assert "a lock records the hash of every file itself" in result.stderr
