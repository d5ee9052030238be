"""A file two distributions both install (every ``nvidia-*-cu12`` wheel of CUDA 12
ships its own empty ``nvidia/__init__.py``; ``opencv-python`` and
``opencv-python-headless`` both install ``cv2/``): shared where the bytes are the
same, in one install or one after another, in every way files are placed; where
they differ, the first wheel's in one install, the later install's over an
installed one (put back by a rollback), each told. pip and uv install the same
sets, and their RECORDs list the same files."""

from __future__ import annotations

import csv
import importlib.metadata
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded
from indexkit import installer_env, uv_executable, wheelwise_serve
from installkit import (
    make_venv,
    nvidia_wheel,
    pip,
    run_python,
    simple_wheel,
    site_packages,
    tampered_wheel,
    tree_hash,
)
from variantkit import wheelwise
from wheelfactory import make_wheel
from wheelwise.environment import shared_files
from wheelwise.environment.dist_files import KeptRecords, owners_of
from wheelwise.environment.installed import InstalledDist
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.environment.shared_files import ComparingWriter, holds_bytes
from wheelwise.install import parallel
from wheelwise.install.transaction import install_wheels
from wheelwise.models.errors import InstallError

pytestmark = [
    pytest.mark.interp,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout"),
]

EMPTY = b""  # nvidia/__init__.py, in every CUDA 12 wheel


def record_paths(python: Path, name: str) -> set[str]:
    found = list(importlib.metadata.distributions(name=name, path=[str(site_packages(python))]))
    assert len(found) == 1, name
    return {str(path) for path in found[0].files or []}


def replaced_line(target: Path, owner: str, wheel: str) -> str:
    """The warning for *owner*'s file *target* that *wheel* replaced."""
    return (
        f"{target}, installed by {owner}, replaced by {wheel}'s, with other contents, as "
        f"pip and uv replace them; {owner.split()[0]}'s RECORD still lists them: install "
        "only one of the two"
    )


def imports(python: Path, *modules: str) -> list[str]:
    code = "; ".join(f"import nvidia.{m} as {m}" for m in modules)
    code += "; print(" + ", ".join(f"{m}.NAME" for m in modules) + ")"
    ran = run_python(python, code)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.split()


# -- comparing bytes ------------------------------------------------------------------


@bounded(200)
@given(st.binary(max_size=300), st.binary(max_size=300), st.integers(1, 64))
def test_a_file_holds_bytes_exactly_when_they_are_equal(
    existing: bytes, written: bytes, read: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "f")
        with open(path, "wb") as out:
            out.write(existing)
        with mock.patch.object(shared_files, "_READ", read):
            assert holds_bytes(path, written) == (existing == written)
            compared = ComparingWriter.at(path)
            for start in range(0, len(written), 7):
                compared.write(written[start : start + 7])
            assert compared.same() == (existing == written)
            compared.close()


def test_what_is_not_a_regular_file_holds_nothing(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")  # never waited on
    (tmp_path / "folder").mkdir()
    for name in ("fifo", "folder", "missing"):
        assert not holds_bytes(str(tmp_path / name), b"")
        assert not ComparingWriter.at(str(tmp_path / name)).same()
    (tmp_path / "real").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "real")  # --link-mode symlink's files
    assert holds_bytes(str(tmp_path / "link"), b"x")


# -- one transaction, every way of unpacking ---------------------------------------------


@pytest.fixture(params=["serial", "threads", "fork"])
def strategy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(parallel, "STRATEGY", request.param)
    monkeypatch.setattr(parallel, "cores", lambda: 3)  # children even on a 1-core runner
    return str(request.param)


_LISTED = st.lists(
    st.tuples(st.sampled_from(["a/x.py", "a/y.py", "b.py", "c/d/e"]), st.sampled_from("pq")),
    max_size=4,
    unique_by=lambda row: row[0],
)


@bounded(300)
@given(st.lists(_LISTED, max_size=5))
def test_each_path_is_placed_by_its_first_wheel_and_differences_told(
    wheels: list[list[tuple[str, str]]],
) -> None:
    listings = [
        (f"w{n}", [(path, f"sha256={digest}", 1) for path, digest in files])
        for n, files in enumerate(wheels)
    ]
    differing: dict[tuple[str, str], list[str]] = {}
    left = shared_files.left_to_earlier(listings, differing)
    first: dict[str, tuple[str, str]] = {}
    expected: dict[tuple[str, str], list[str]] = {}
    for (name, files), leaves in zip(listings, left, strict=True):
        for path, digest, _ in files:
            owner = first.setdefault(path, (name, digest))
            assert (path in leaves) == (owner[0] != name)
            if owner[1] != digest:
                expected.setdefault((owner[0], name), []).append(path)
        assert leaves <= {path for path, _, _ in files}
    assert differing == expected


@pytest.fixture
def env(tmp_path: Path) -> TargetEnvironment:
    return TargetEnvironment.from_python(make_venv(tmp_path / "venv"))


def test_wheels_of_one_install_share_a_file_with_the_same_bytes(
    env: TargetEnvironment, tmp_path: Path, strategy: str
) -> None:
    wheels = [
        nvidia_wheel(tmp_path / "w", name, "12.4")
        for name in ("nvidia_cublas_cu12", "nvidia_cudnn_cu12", "nvidia_nccl_cu12")
    ]
    wheels.append(simple_wheel(tmp_path / "w", "beta", "1.0"))
    install_wheels(env, wheels)
    assert imports(env.python, "cublas", "cudnn", "nccl") == ["cublas", "cudnn", "nccl"]
    for name in ("nvidia_cublas_cu12", "nvidia_cudnn_cu12", "nvidia_nccl_cu12"):
        assert "nvidia/__init__.py" in record_paths(env.python, name)
    assert (env.purelib / "nvidia" / "__init__.py").read_bytes() == EMPTY


def test_different_bytes_in_one_install_are_the_first_wheels_and_told(
    env: TargetEnvironment, tmp_path: Path, strategy: str
) -> None:
    wheels = [
        nvidia_wheel(tmp_path / "w", "nvidia_cublas_cu12", "12.4"),
        simple_wheel(tmp_path / "w", "beta", "1.0"),
        nvidia_wheel(tmp_path / "w", "nvidia_other_x", "1.0", b"# mine\n"),
    ]
    told: list[str] = []
    install_wheels(env, wheels, warn=told.append)
    assert told == [
        "nvidia-cublas-cu12 12.4 and nvidia-other-x 1.0 both install nvidia/__init__.py, "
        "with different contents; nvidia-cublas-cu12's were installed (pip and uv let "
        "either replace the other): install only one of them"
    ]
    assert (env.purelib / "nvidia" / "__init__.py").read_bytes() == EMPTY
    assert imports(env.python, "cublas", "other") == ["cublas", "other"]
    for name in ("nvidia_cublas_cu12", "nvidia_other_x"):
        assert "nvidia/__init__.py" in record_paths(env.python, name)


# -- one install after another ------------------------------------------------------------


def test_a_file_shared_with_an_installed_distribution_stays_while_one_lists_it(
    env: TargetEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "STRATEGY", "serial")  # cudnn placed, then mu fails
    install_wheels(env, [nvidia_wheel(tmp_path / "w", "nvidia_cublas_cu12", "12.4")])
    before = tree_hash(env.prefix)
    # cudnn shares the installed file; the tampered wheel after it undoes the install.
    bad = tampered_wheel(tmp_path / "tampered", "mu", "1.0")
    cudnn = nvidia_wheel(tmp_path / "w", "nvidia_cudnn_cu12", "9.1")
    with pytest.raises(InstallError, match="does not match its RECORD"):
        install_wheels(env, [cudnn, bad])
    assert tree_hash(env.prefix) == before
    install_wheels(env, [cudnn])
    assert imports(env.python, "cublas", "cudnn") == ["cublas", "cudnn"]
    assert "nvidia/__init__.py" in record_paths(env.python, "nvidia_cudnn_cu12")
    # An upgrade of one of them leaves the file the other lists where it is, shared
    # again by the new version; one with other bytes there names the other.
    inode = (env.purelib / "nvidia" / "__init__.py").stat().st_ino
    install_wheels(env, [nvidia_wheel(tmp_path / "w", "nvidia_cublas_cu12", "12.5")])
    assert (env.purelib / "nvidia" / "__init__.py").stat().st_ino == inode
    assert "nvidia/__init__.py" in record_paths(env.python, "nvidia_cublas_cu12")
    # An upgrade with other bytes there replaces the file cudnn lists, and says so.
    shared = env.purelib / "nvidia" / "__init__.py"
    changed = nvidia_wheel(tmp_path / "changed", "nvidia_cublas_cu12", "12.6", b"# x\n")
    told: list[str] = []
    install_wheels(env, [changed], warn=told.append)
    assert told == [replaced_line(shared, "nvidia-cudnn-cu12 9.1", "nvidia-cublas-cu12 12.6")]
    assert shared.read_bytes() == b"# x\n"
    assert "nvidia/__init__.py" in record_paths(env.python, "nvidia_cudnn_cu12")
    # Uninstalling one of them keeps the file the other lists (pip and uv remove it),
    # and its bytecode; the last one takes it.
    assert run_python(env.python, "import nvidia").returncode == 0  # writes its .pyc
    bytecode = list((env.purelib / "nvidia" / "__pycache__").glob("__init__.*.pyc"))
    assert bytecode
    install_wheels(env, [], remove=["nvidia-cublas-cu12"])
    assert shared.read_bytes() == b"# x\n"
    assert all(path.exists() for path in bytecode)
    assert not (env.purelib / "nvidia" / "cublas").exists()
    assert imports(env.python, "cudnn") == ["cudnn"]
    install_wheels(env, [], remove=["nvidia-cudnn-cu12"])
    assert not (env.purelib / "nvidia").exists()


def test_an_installed_file_replaced_is_put_back_by_a_rollback(
    env: TargetEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "STRATEGY", "serial")  # other-x placed, then mu fails
    install_wheels(env, [nvidia_wheel(tmp_path / "w", "nvidia_cublas_cu12", "12.4")])
    target = env.purelib / "nvidia" / "__init__.py"
    inode = target.stat().st_ino
    before = tree_hash(env.prefix)
    other = nvidia_wheel(tmp_path / "w", "nvidia_other_x", "1.0", b"# x\n")
    bad = tampered_wheel(tmp_path / "tampered", "mu", "1.0")
    with pytest.raises(InstallError, match="does not match its RECORD"):
        install_wheels(env, [other, bad])
    assert tree_hash(env.prefix) == before
    assert target.stat().st_ino == inode  # the very file, moved back
    told: list[str] = []
    install_wheels(env, [other], warn=told.append)
    assert told == [replaced_line(target, "nvidia-cublas-cu12 12.4", "nvidia-other-x 1.0")]
    assert target.read_bytes() == b"# x\n"


def test_a_stray_file_with_other_bytes_says_to_remove_it(
    env: TargetEnvironment, tmp_path: Path
) -> None:
    stray = env.purelib / "nvidia" / "__init__.py"
    stray.parent.mkdir()
    stray.write_text("# left by hand\n")
    before = tree_hash(env.prefix)
    with pytest.raises(InstallError) as raised:
        install_wheels(env, [nvidia_wheel(tmp_path / "w", "nvidia_cublas_cu12", "12.4")])
    assert str(raised.value) == (
        f"{stray} already exists with other contents, and no installed distribution lists "
        "it; wheelwise replaces no such file: remove it, then install again"
    )
    assert tree_hash(env.prefix) == before


def test_files_placed_by_their_scheme_are_compared_as_they_are_written(
    env: TargetEnvironment, tmp_path: Path
) -> None:
    """A ``.data/purelib`` member is found there only as it is written: a small one
    read whole, a large one (over 4 MiB) compared as it streams."""
    big = bytes(range(256)) * (5 << 12)
    for folder in ("a", "bad", "good"):
        (tmp_path / folder).mkdir()
    owner = make_wheel(
        tmp_path / "a",
        "owner-1.0-py3-none-any.whl",
        extra_members={"nvidia/__init__.py": EMPTY, "nvidia/big.bin": big},
        record=True,
    )
    install_wheels(env, [owner])

    def data_wheel(folder: str, blob: bytes) -> Path:
        return make_wheel(
            tmp_path / folder,
            "user-1.0-py3-none-any.whl",
            extra_members={
                "user-1.0.data/purelib/nvidia/__init__.py": EMPTY,
                "user-1.0.data/purelib/nvidia/big.bin": blob,
            },
            record=True,
        )

    before = tree_hash(env.prefix)
    for changed in (big[:-1] + b"!", big + b"!"):
        with pytest.raises(InstallError, match=r"big\.bin is already installed by owner 1\.0"):
            install_wheels(env, [data_wheel("bad", changed)])
        assert tree_hash(env.prefix) == before
    install_wheels(env, [data_wheel("good", big)])
    assert (env.purelib / "nvidia" / "big.bin").read_bytes() == big
    assert "nvidia/big.bin" in record_paths(env.python, "user")


# -- the command line, through the cache, against pip and uv ------------------------------


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    wheels = tmp_path_factory.mktemp("nvidia-wheels")
    for name in ("nvidia_cublas_cu12", "nvidia_cudnn_cu12"):
        nvidia_wheel(wheels, name, "12.4")
    with wheelwise_serve(wheels) as base:
        yield f"{base}/simple/"


NAMES = ["nvidia-cublas-cu12", "nvidia-cudnn-cu12"]


def installed_files(python: Path) -> dict[str, set[str]]:
    return {name: record_paths(python, name.replace("-", "_")) for name in NAMES}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["hardlink", "copy", "symlink"])
def test_the_command_line_installs_what_pip_and_uv_install(
    tmp_path: Path, index: str, mode: str
) -> None:
    cache = tmp_path / "cache"
    together = make_venv(tmp_path / "together")
    argv = ["install", "-q", "--index-url", index, "--link-mode", mode]
    done = wheelwise([*argv, "--python", str(together), *NAMES], cache)
    assert done.returncode == 0, done.stderr
    # One after the other, from the entries the first install left in the cache.
    apart = make_venv(tmp_path / "apart")
    for name in NAMES:
        done = wheelwise([*argv, "--python", str(apart), name], cache)
        assert done.returncode == 0, done.stderr
    by_pip = make_venv(tmp_path / "pip")
    assert (
        pip(by_pip, "install", "-q", "--no-compile", "--index-url", index, *NAMES).returncode == 0
    )
    by_uv = make_venv(tmp_path / "uv")
    uv = [uv_executable(), "pip", "install", "--no-config", "--python", str(by_uv)]
    ran = subprocess.run(
        [*uv, "--index-url", index, *NAMES],
        env=installer_env(tmp_path), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    for python in (together, apart):
        assert imports(python, "cublas", "cudnn") == ["cublas", "cudnn"]
        ours = installed_files(python)
        for peer in (by_pip, by_uv):
            theirs = installed_files(peer)
            for name in NAMES:  # INSTALLER and REQUESTED differ by installer
                assert {p for p in ours[name] if "dist-info" not in p} == {
                    p for p in theirs[name] if "dist-info" not in p
                }, name
    report = wheelwise(["list", "--python", str(apart), "--format", "json"], cache)
    assert [row["name"] for row in json.loads(report.stdout)] == NAMES


def cv_wheel(directory: Path, name: str, library: bytes) -> Path:
    """*name*: an opencv-like wheel, ``cv2/`` with a library of its own build."""
    directory.mkdir(parents=True, exist_ok=True)
    members = {
        "cv2/__init__.py": b"from .load import NAME\n",
        "cv2/load.py": b"NAME = 'cv2'\n",
        "cv2/cv2.abi3.so": library,
        f"{name}.libs/libextra.so": name.encode(),
    }
    filename = f"{name}-5.1-py3-none-any.whl"
    return make_wheel(directory, filename, extra_members=members, record=True)


@pytest.mark.slow
def test_two_builds_of_one_package_install_as_with_pip_and_uv(tmp_path: Path) -> None:
    """opencv-python and opencv-python-headless: two projects require one each, and
    they share ``cv2/`` with some files of other bytes. pip and uv install both, one
    replacing the other's files without a word; wheelwise too, the first in the
    install's order placing them, and it says so."""
    wheels = tmp_path / "wheels"
    cv_wheel(wheels, "cvlike", b"\x7fELF gui")
    cv_wheel(wheels, "cvlike_headless", b"\x7fELF headless")
    names = ["cvlike", "cvlike-headless"]
    ours = make_venv(tmp_path / "ours")
    argv = ["install", "--no-index", "-f", str(wheels), "--python", str(ours), *names]
    done = wheelwise(argv, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert (
        "wheelwise: warning: cvlike 5.1 and cvlike-headless 5.1 both install cv2/cv2.abi3.so, "
        "with different contents; cvlike's were installed (pip and uv let either replace "
        "the other): install only one of them"
    ) in done.stderr.splitlines()
    by_pip = make_venv(tmp_path / "pip")
    assert (
        pip(
            by_pip, "install", "-q", "--no-compile", "--no-index", "-f", str(wheels), *names
        ).returncode
        == 0
    )
    by_uv = make_venv(tmp_path / "uv")
    uv = [uv_executable(), "pip", "install", "--no-config", "--python", str(by_uv)]
    ran = subprocess.run(
        [*uv, "--no-index", "-f", str(wheels), *names],
        env=installer_env(tmp_path), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    for python in (ours, by_pip, by_uv):
        library = site_packages(python) / "cv2" / "cv2.abi3.so"
        assert library.read_bytes() in (b"\x7fELF gui", b"\x7fELF headless")
        assert run_python(python, "import cv2; print(cv2.NAME)").stdout.strip() == "cv2"
    for name in ("cvlike", "cvlike_headless"):
        files = [
            {p for p in record_paths(py, name) if "dist-info" not in p}
            for py in (ours, by_pip, by_uv)
        ]
        assert files[0] == files[1] == files[2], name
    # One after the other: the second install replaces the first's files, and says so.
    apart = make_venv(tmp_path / "apart")
    for name in names:
        argv = ["install", "--no-index", "-f", str(wheels), "--python", str(apart), name]
        done = wheelwise(argv, tmp_path / "cache")
        assert done.returncode == 0, done.stderr
    library = site_packages(apart) / "cv2" / "cv2.abi3.so"
    assert library.read_bytes() == b"\x7fELF headless"
    assert (
        f"wheelwise: warning: {library}, installed by cvlike 5.1, replaced by cvlike-headless "
        "5.1's, with other contents, as pip and uv replace them; cvlike's RECORD still lists "
        "them: install only one of the two"
    ) in done.stderr.splitlines()
    # Uninstalling one leaves cv2 whole for the other.
    done = wheelwise(["uninstall", "-y", "--python", str(apart), "cvlike-headless"], tmp_path / "c")
    assert done.returncode == 0, done.stderr
    assert run_python(apart, "import cv2; print(cv2.NAME)").stdout.strip() == "cv2"
    assert not (site_packages(apart) / "cvlike_headless.libs").exists()


_POOL = ["nvidia/__init__.py", "nvidia/a,b.py", "six.py", "sixth/x.py", "cv2/cv2.so", "cv2.py"]


@bounded(100)
@given(st.lists(st.lists(st.sampled_from(_POOL), unique=True), min_size=1, max_size=3))
def test_the_owners_of_files_are_those_whose_record_lists_them(
    tmp_path_factory: pytest.TempPathFactory, records: list[list[str]]
) -> None:
    """Whatever the RECORDs list (quoted rows, names that start alike), the owners
    found through the top-level names are those a full read of every RECORD finds."""
    site = tmp_path_factory.mktemp("site")
    dists = []
    for n, rows in enumerate(records):
        folder = site / f"d{n}-1.0.dist-info"
        folder.mkdir()
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows([(row, "", "") for row in rows])
        (folder / "RECORD").write_text(text.getvalue())
        dists.append(InstalledDist(f"d{n}", "1.0", None, None, folder))
    paths = [os.path.join(site, path) for path in _POOL]
    expected: dict[str, InstalledDist] = {}
    for dist, rows in zip(dists, records, strict=True):
        for row in rows:
            expected.setdefault(os.path.join(site, row), dist)
    assert owners_of(dists, paths) == expected
    assert KeptRecords(lambda: dists).shared(paths) == set(expected)
