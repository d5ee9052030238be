"""``wheelwise lock``: real indexes on 127.0.0.1, simulated machines, peers reading the lock.

The wheelhouse holds ``vtorch`` 2.0 (a non-variant wheel, ``null``, ``cu126`` and
``cu130``, whose CUDA builds require ``vcublas; "nvidia" in variant_namespaces``),
``vcublas`` (which requires ``vnvjit``), ``vcommon`` (required by every vtorch wheel),
and ``vnative``: 1.0 with CPython 3.12 wheels for Windows and macOS and a 3.13 one for
Linux, 2.0 with CPython 3.12 Linux wheels only, a non-variant one and an
``x86_64_v3`` variant whose ``vextra`` requirement has a variant marker (1.0 requires
``vextra`` plainly). It is served by ``wheelwise index serve``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import stat
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.markers import Marker
from packaging.tags import Tag

from gpuhouse import HASWELL, machine, metadata_member, wheel
from indexkit import free_port, installer_env, uv_executable, wheelwise_serve
from installkit import make_venv, run_python, site_packages
from paths import DRAFT_VARIANT_SCHEMA
from test_install_resolve import Index
from test_network_faults import serving
from variantkit import vpkg_wheel, wheelwise
from wheelwise.environment.targets import (
    TargetError,
    lock_targets,
    parse_platform,
    parse_python_version,
    synthetic_target,
)
from wheelwise.lock import PyLock, read_pylock
from wheelwise.resolve.resolver import NoCompatibleWheel, resolve
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.supported import SupportedProperties

_T = TypeVar("_T")
CPU = machine()
GPU = machine(HASWELL, "13.0", "9.0")
GATED_CUBLAS = 'vcublas; "nvidia" in variant_namespaces'
CUDA = {
    "cu126": {"nvidia": {"cuda_version_lower_bound": ["12.6"], "sm_arch": ["80_real", "90_real"]}},
    "cu130": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]}},
}
V3 = {"x86_64": {"level": ["v3"]}}
LINUX_312 = (
    'python_full_version >= "3.12" and python_full_version < "3.13" and '
    'sys_platform == "linux" and platform_machine == "x86_64"'
)


def gate(name: str) -> str:
    return f"'variant-needs-{name}' in dependency_groups"


def plain(directory: Path, filename: str, *requires: str) -> Path:
    name, version = filename.split("-")[:2]
    return wheel(directory, filename, extra_members=metadata_member(name, version, list(requires)))


def build_house(directory: Path) -> Path:
    directory.mkdir(parents=True)
    plain(directory, "vtorch-2.0-py3-none-any.whl", "vcommon")
    wheel(
        directory,
        "vtorch-2.0-py3-none-any-null.whl",
        "null",
        {},
        namespaces=["nvidia"],
        extra_members=metadata_member("vtorch", "2.0", ["vcommon"]),
    )
    for label, properties in CUDA.items():
        wheel(
            directory,
            f"vtorch-2.0-py3-none-any-{label}.whl",
            label,
            properties,
            namespaces=["nvidia"],
            extra_members=metadata_member("vtorch", "2.0", ["vcommon", GATED_CUBLAS]),
        )
    plain(directory, "vcublas-1.0-py3-none-any.whl", "vnvjit")
    plain(directory, "vnvjit-1.0-py3-none-any.whl")
    plain(directory, "vcommon-1.0-py3-none-any.whl")
    plain(directory, "vextra-1.0-py3-none-any.whl")
    for tags in ("cp312-cp312-win_amd64", "cp312-cp312-macosx_13_0_arm64"):
        plain(directory, f"vnative-1.0-{tags}.whl", "vextra")
    plain(directory, "vnative-1.0-cp313-cp313-manylinux_2_28_x86_64.whl", "vextra")
    plain(directory, "vnative-2.0-cp312-cp312-manylinux_2_28_x86_64.whl")
    wheel(
        directory,
        "vnative-2.0-cp312-cp312-manylinux_2_28_x86_64-x86_64_v3.whl",
        "x86_64_v3",
        V3,
        namespaces=["x86_64"],
        extra_members=metadata_member("vnative", "2.0", ['vextra; "x86_64" in variant_namespaces']),
    )
    return directory


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    house = build_house(tmp_path_factory.mktemp("lock") / "wheels")
    with wheelwise_serve(house) as base:
        yield f"{base}/simple/"


def lock(
    args: list[str], where: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``wheelwise lock ARGS`` in the folder *where*, on a CPU-only machine by default."""
    return wheelwise(["lock", *args], where.parent / f"cache-{where.name}", env or CPU, where)


def read(path: Path) -> PyLock:
    return read_pylock(path.read_bytes(), source=str(path))


def entries(locked: PyLock) -> dict[tuple[str, str | None], Any]:
    return {(p.name, p.version): p for p in locked.packages}


def wheel_names(package: Any) -> set[str]:
    return {w.filename for w in package.wheels}


def this_target() -> str:
    major, minor = sys.version_info[:2]
    return (
        f'python_full_version >= "{major}.{minor}" and '
        f'python_full_version < "{major}.{minor + 1}" and '
        f'sys_platform == "{sys.platform}" and platform_machine == "{platform.machine()}"'
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("wheelwise: error: "), lines[0]
    return lines[0]


# -- a plain lock -------------------------------------------------------------------


@pytest.mark.slow
def test_a_lock_is_valid_stable_and_names_the_served_files(served: str, tmp_path: Path) -> None:
    where = tmp_path / "work"
    where.mkdir()
    result = lock(["--index-url", served, "vcublas", "vcommon"], where)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "wrote pylock.toml: 3 packages for 1 target\n"
    path = where / "pylock.toml"
    first = path.read_bytes()
    locked = read(path)
    assert locked.created_by == "wheelwise"
    assert locked.environments == (this_target(),)
    assert (locked.extras, locked.dependency_groups, locked.default_groups) == ((), (), ())
    found = entries(locked)
    assert set(found) == {("vcommon", "1.0"), ("vcublas", "1.0"), ("vnvjit", "1.0")}
    assert [p.marker for p in locked.packages] == [None, None, None]
    assert found["vcublas", "1.0"].dependencies == ({"name": "vnvjit"},)
    for package in locked.packages:
        assert package.index == served
        (locked_wheel,) = package.wheels
        assert locked_wheel.url is not None
        with urllib.request.urlopen(locked_wheel.url) as answer:
            served_bytes = answer.read()
        assert locked_wheel.size == len(served_bytes)
        assert locked_wheel.hashes == {"sha256": hashlib.sha256(served_bytes).hexdigest()}
    tool = (locked.tool or {})["wheelwise"]
    assert tool["requirements"] == ["vcommon", "vcublas"]
    assert tool["index-urls"] == [served]
    assert tool["targets"] == [{"python-version": f"{sys.version_info[0]}.{sys.version_info[1]}"}]
    assert len(tool["inputs-hash"]) == 64

    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert sorted(p.name for p in where.iterdir()) == ["pylock.toml"]

    # Twice, with the lock there (its versions preferred), upgrading, to stdout: the same.
    for extra in ([], ["--upgrade"]):
        again = lock(["--index-url", served, *extra, "vcublas", "vcommon"], where)
        assert again.returncode == 0, again.stderr
        assert path.read_bytes() == first
    printed = lock(["--index-url", served, "-o", "-", "vcommon", "vcublas"], where)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.encode() == first


# -- variants -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_variant_project_is_locked_whole_on_a_cpu_machine(
    served: str, tmp_path: Path, variant_schema_validator: Any
) -> None:
    cpu, gpu = tmp_path / "cpu", tmp_path / "gpu"
    cpu.mkdir()
    gpu.mkdir()
    result = lock(["--index-url", served, "vtorch"], cpu, CPU)
    assert result.returncode == 0, result.stderr
    locked = read(cpu / "pylock.toml")
    found = entries(locked)
    assert set(found) == {
        ("vtorch", "2.0"),
        ("vcommon", "1.0"),
        ("vcublas", "1.0"),
        ("vnvjit", "1.0"),
    }
    vtorch = found["vtorch", "2.0"]
    assert wheel_names(vtorch) == {
        "vtorch-2.0-py3-none-any.whl",
        "vtorch-2.0-py3-none-any-null.whl",
        "vtorch-2.0-py3-none-any-cu126.whl",
        "vtorch-2.0-py3-none-any-cu130.whl",
    }
    assert vtorch.marker is None
    assert vtorch.dependencies == ({"name": "vcommon"}, {"name": "vcublas"})
    assert vtorch.variants_json is not None
    document = vtorch.variants_json.document
    variant_schema_validator.validate(document)
    assert document["variants"] == {"null": {}, **CUDA}
    assert document["default-priorities"] == {"namespace": ["nvidia"]}
    # Only CUDA builds need vcublas, and so vnvjit: both are variant-gated.
    assert found["vcublas", "1.0"].marker == gate("vcublas")
    assert found["vnvjit", "1.0"].marker == gate("vnvjit")
    assert found["vcommon", "1.0"].marker is None
    plain_env: dict[str, str | frozenset[str]] = {"dependency_groups": frozenset()}
    assert locked.package_for("vcublas", plain_env) is None
    cuda_env: dict[str, str | frozenset[str]] = {
        "dependency_groups": frozenset({"variant-needs-vcublas"})
    }
    assert locked.package_for("vcublas", cuda_env) is found["vcublas", "1.0"]

    # The machine makes no difference.
    again = lock(["--index-url", served, "vtorch"], gpu, GPU)
    assert again.returncode == 0, again.stderr
    assert (gpu / "pylock.toml").read_bytes() == (cpu / "pylock.toml").read_bytes()


def test_real_pytorch_variant_metadata_is_inlined_as_published(
    tmp_path: Path, variant_schema_validator: Any
) -> None:
    """PyTorch 2.9 publishes a PEP 817 draft document: the lock inlines it as
    published (its ``priority`` provider chooses among the CUDA builds, and PEP 825's
    format cannot hold it); a PEP 825 document is inlined as PEP 825 (above)."""
    import jsonschema

    from test_realworld_install import RELEASES, publish

    house = tmp_path / "house"
    house.mkdir()
    publish(house, "2.9.0")
    where = tmp_path / "work"
    where.mkdir()
    result = lock(["--no-index", "--find-links", str(house), "faketorch==2.9.0"], where)
    assert result.returncode == 0, result.stderr
    (faketorch,) = read(where / "pylock.toml").packages
    assert faketorch.index is None  # a find-links folder is no index
    published = json.loads(RELEASES["2.9.0"].read_bytes())
    assert faketorch.variants_json is not None
    document = faketorch.variants_json.document
    assert document == published  # every label is listed: nothing left out
    draft = json.loads(DRAFT_VARIANT_SCHEMA.read_bytes())
    jsonschema.validate(document, draft)  # the schema of the draft it follows
    labels = {w.filename.rsplit("-", 1)[1][:-4] for w in faketorch.wheels}
    assert labels == set(published["variants"])


# -- targets --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_named_target_gets_its_wheels_and_environment(served: str, tmp_path: Path) -> None:
    locks = {}
    for spelling in ("x86_64-manylinux_2_28", "manylinux_2_28_x86_64", "linux"):
        where = tmp_path / spelling
        where.mkdir()
        args = ["--index-url", served, "--python-version", "3.12", "--platform", spelling]
        result = lock([*args, "vnative"], where)
        assert result.returncode == 0, result.stderr
        locks[spelling] = locked = read(where / "pylock.toml")
        assert locked.environments == (LINUX_312,)
        assert locked.requires_python == ">=3.12"
        target = {"python-version": "3.12", "platform": spelling}
        assert (locked.tool or {})["wheelwise"]["targets"] == [target]
    first = locks["x86_64-manylinux_2_28"]
    assert all(other.packages == first.packages for other in locks.values())
    found = entries(first)
    assert set(found) == {("vnative", "2.0"), ("vextra", "1.0")}
    assert wheel_names(found["vnative", "2.0"]) == {
        "vnative-2.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "vnative-2.0-cp312-cp312-manylinux_2_28_x86_64-x86_64_v3.whl",
    }
    assert found["vextra", "1.0"].marker == gate("vextra")

    where = tmp_path / "py313"
    where.mkdir()
    result = lock(
        ["--index-url", served, "--python-version", "3.13", "--platform", "linux", "vnative"], where
    )
    assert result.returncode == 0, result.stderr
    assert wheel_names(entries(read(where / "pylock.toml"))["vnative", "1.0"]) == {
        "vnative-1.0-cp313-cp313-manylinux_2_28_x86_64.whl"
    }


@pytest.mark.slow
def test_a_python_version_alone_keeps_the_interpreters_platform(
    served: str, tmp_path: Path
) -> None:
    result = lock(["--index-url", served, "--python-version", "3.12", "vcommon"], tmp_path)
    assert result.returncode == 0, result.stderr
    locked = read(tmp_path / "pylock.toml")
    assert locked.environments == (
        'python_full_version >= "3.12" and python_full_version < "3.13" and '
        f'sys_platform == "{sys.platform}" and platform_machine == "{platform.machine()}"',
    )
    assert (locked.tool or {})["wheelwise"]["targets"] == [{"python-version": "3.12"}]


@pytest.mark.slow
def test_targets_that_choose_differently_get_markers(served: str, tmp_path: Path) -> None:
    platforms = ["linux", "windows", "macos"]
    args = ["--index-url", served, "--python-version", "3.12"]
    for name in platforms:
        args += ["--platform", name]
    result = lock([*args, "vnative"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "wrote pylock.toml: 3 packages for 3 targets\n"
    locked = read(tmp_path / "pylock.toml")
    targets = [synthetic_target("3.12", parse_platform(name), None) for name in platforms]
    linux, windows, macos = (t.environment for t in targets)
    assert locked.environments == tuple(sorted([linux, windows, macos]))
    found = entries(locked)
    assert found["vnative", "2.0"].marker == f"({linux})"
    assert found["vnative", "1.0"].marker == f"({windows}) or ({macos})"
    assert wheel_names(found["vnative", "1.0"]) == {
        "vnative-1.0-cp312-cp312-win_amd64.whl",
        "vnative-1.0-cp312-cp312-macosx_13_0_arm64.whl",
    }
    # vextra: variant-gated on Linux (2.0's x86_64_v3 build), required plainly elsewhere.
    assert found["vextra", "1.0"].marker == (
        f"(({linux}) and {gate('vextra')}) or ({windows}) or ({macos})"
    )
    for target, version in zip(targets, ["2.0", "1.0", "1.0"], strict=True):
        env: dict[str, str | frozenset[str]] = {**target.markers, "dependency_groups": frozenset()}
        chosen = locked.package_for("vnative", env)
        assert chosen is not None
        assert chosen.version == version
        extra = locked.package_for("vextra", env)
        assert (extra is None) == (target is targets[0])


def test_targets_that_cannot_be_told_apart_are_refused() -> None:
    same = [parse_platform("x86_64-manylinux_2_17"), parse_platform("x86_64-manylinux_2_28")]
    with pytest.raises(TargetError, match="cannot tell them apart"):
        lock_targets(["3.12"], same, None)
    glibc_and_musl = [parse_platform("linux"), parse_platform("x86_64-unknown-linux-musl")]
    with pytest.raises(TargetError, match="same environment markers"):
        lock_targets(["3.12"], glibc_and_musl, None)


PLATFORMS = {
    "linux": ("linux", "x86_64", "manylinux_2_28_x86_64"),
    "x86_64-unknown-linux-gnu": ("linux", "x86_64", "manylinux_2_28_x86_64"),
    "aarch64-manylinux_2_28": ("linux", "aarch64", "manylinux_2_28_aarch64"),
    "aarch64-unknown-linux-gnu": ("linux", "aarch64", "manylinux_2_28_aarch64"),
    "x86_64-manylinux2014": ("linux", "x86_64", "manylinux_2_17_x86_64"),
    "x86_64-unknown-linux-musl": ("linux", "x86_64", "musllinux_1_2_x86_64"),
    "musllinux_1_1_aarch64": ("linux", "aarch64", "musllinux_1_1_aarch64"),
    "manylinux2014_x86_64": ("linux", "x86_64", "manylinux2014_x86_64"),
    "macos": ("darwin", "arm64", "macosx_13_0_arm64"),
    "x86_64-apple-darwin": ("darwin", "x86_64", "macosx_13_0_x86_64"),
    "macosx_14_0_arm64": ("darwin", "arm64", "macosx_14_0_arm64"),
    "windows": ("win32", "AMD64", "win_amd64"),
    "aarch64-pc-windows-msvc": ("win32", "ARM64", "win_arm64"),
    "win32": ("win32", "x86", "win32"),
}


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_platform_names_give_markers_and_tags(name: str) -> None:
    sys_platform, machine_name, tag = PLATFORMS[name]
    target = synthetic_target("3.12", parse_platform(name), None)
    assert target.markers["sys_platform"] == sys_platform
    assert target.markers["platform_machine"] == machine_name
    assert target.markers["python_full_version"] == "3.12.0"
    assert Tag("cp312", "cp312", tag) in target.tags
    assert Tag("py3", "none", "any") in target.tags
    assert Tag("cp313", "cp313", tag) not in target.tags


def parsed(parse: Callable[[str], _T], text: str) -> _T | None:
    """*parse*'s answer, or None when it refuses *text* with one line."""
    try:
        return parse(text)
    except TargetError as exc:
        message = str(exc)
    assert "\n" not in message
    return None


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.one_of(
        st.text(max_size=40),
        st.sampled_from(sorted(PLATFORMS)).map(lambda n: n.upper()),
        st.builds(
            "{}-manylinux_2_{}".format,
            st.sampled_from(["x86_64", "aarch64", "ppc64le", "armv7l", "sparc"]),
            st.integers(0, 2000),
        ),
        st.builds(
            "macosx_{}_{}_{}".format,
            st.integers(0, 200),
            st.integers(0, 200),
            st.sampled_from(["arm64", "x86_64", "universal2"]),
        ),
    ),
    st.one_of(st.text(max_size=12), st.from_regex(r"3\.[0-9]{1,2}(\.[0-9]{1,2})?", fullmatch=True)),
)
def test_fuzz_target_names(platform_text: str, version_text: str) -> None:
    """Any text is a target or one TargetError line; a target's tags and marker work."""
    named = parsed(parse_platform, platform_text)
    version = parsed(parse_python_version, version_text)
    if named is None or version is None:
        return
    target = synthetic_target(version, named, None)
    assert target.tags
    assert Marker(target.environment).evaluate(dict(target.markers))


# -- --check and upgrades -----------------------------------------------------------


@pytest.mark.slow
def test_check_upgrade_and_upgrade_package(tmp_path: Path) -> None:
    house = build_house(tmp_path / "wheels")
    where = tmp_path / "work"
    where.mkdir()
    path = where / "pylock.toml"
    with wheelwise_serve(house) as base:
        index = ["--index-url", f"{base}/simple/"]
        wanted = ["vcommon", "vnvjit"]

        def versions() -> dict[str, str | None]:
            return {p.name: p.version for p in read(path).packages}

        missing = lock([*index, "--check", *wanted], where)
        assert missing.returncode == 1
        assert "there is no lock yet" in missing.stderr
        assert not path.exists()
        assert lock([*index, *wanted], where).returncode == 0
        written = path.read_bytes()
        stamp = path.stat().st_mtime_ns
        ok = lock([*index, "--check", *wanted], where)
        assert ok.returncode == 0, ok.stderr
        assert ok.stderr == "wheelwise: pylock.toml is up to date\n"

        # Newer releases: the locked versions stay preferred, unless upgrading.
        plain(house, "vcommon-1.1-py3-none-any.whl")
        plain(house, "vnvjit-1.1-py3-none-any.whl")
        assert lock([*index, "--check", *wanted], where).returncode == 0
        stale = lock([*index, "--check", "--upgrade", *wanted], where)
        assert stale.returncode == 1
        (line,) = stale.stderr.splitlines()
        assert line == (
            "wheelwise: pylock.toml is out of date: the inputs are the same, but locking "
            "them again gives another lock; run the same wheelwise lock command without "
            "--check to update it"
        )
        assert lock([*index, *wanted], where).returncode == 0
        assert path.read_bytes() == written
        assert path.stat().st_mtime_ns == stamp
        assert lock([*index, "--upgrade-package", "VCommon", *wanted], where).returncode == 0
        assert versions() == {"vcommon": "1.1", "vnvjit": "1.0"}
        assert lock([*index, "--check", *wanted], where).returncode == 0
        assert lock([*index, "-U", *wanted], where).returncode == 0
        assert versions() == {"vcommon": "1.1", "vnvjit": "1.1"}

        # Other inputs.
        changed = lock([*index, "--check", *wanted, "vextra"], where)
        assert changed.returncode == 1
        assert "the inputs changed" in changed.stderr
        upgraded = path.read_bytes()
        # A new wheel of a locked release changes the lock too.
        wheel(house, "vnvjit-1.1-py3-none-any-null.whl", "null", {}, namespaces=["nvidia"])
        grown = lock([*index, "--check", *wanted], where)
        assert grown.returncode == 1
        assert "gives another lock" in grown.stderr
        assert path.read_bytes() == upgraded


# -- bad input -----------------------------------------------------------------------

BAD = {
    "missing requirements file": (["-r", "absent.txt"], "absent.txt: requirements file not found"),
    "no requirements": ([], "nothing to lock"),
    "no wheel for the target": (["vnative"], "no compatible wheel for vnative"),
    "no wheel for one of the targets": (
        [
            "--python-version",
            "3.12",
            "--platform",
            "linux",
            "--platform",
            "aarch64-manylinux_2_28",
            "vnative",
        ],
        "for Python 3.12 on aarch64-manylinux_2_28: no compatible wheel for vnative",
    ),
    "unknown platform": (["--platform", "solaris", "vcommon"], "--platform 'solaris'"),
    "bad python version": (["--python-version", "2.7", "vcommon"], "--python-version '2.7'"),
    "a variant label": (["vtorch#cu126"], "write 'vtorch'"),
    "check on stdout": (["--check", "-o", "-", "vcommon"], "--check compares with a lock file"),
    "unknown package": (["vnothing"], "no release of vnothing was found"),
    "no such interpreter": (["--python", "./nope", "vcommon"], "no such Python executable"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_exits_2_and_writes_nothing(served: str, tmp_path: Path, case: str) -> None:
    args, expected = BAD[case]
    where = tmp_path / "work"
    where.mkdir()
    result = lock(["--index-url", served, *args], where)
    assert result.returncode == 2, result.stderr
    assert expected in one_error_line(result)
    assert list(where.iterdir()) == []


@pytest.mark.slow
def test_a_broken_lock_stops_locking_unless_upgrading(served: str, tmp_path: Path) -> None:
    path = tmp_path / "pylock.toml"
    path.write_bytes(b"lock-version = [unclosed\n")
    result = lock(["--index-url", served, "vcommon"], tmp_path)
    assert result.returncode == 2
    line = one_error_line(result)
    assert line.startswith("wheelwise: error: pylock.toml: ")
    assert line.endswith("; nothing was written")
    assert path.read_bytes() == b"lock-version = [unclosed\n"
    checked = lock(["--index-url", served, "--check", "--upgrade", "vcommon"], tmp_path)
    assert checked.returncode == 1
    assert "it cannot be read" in checked.stderr
    assert lock(["--index-url", served, "--upgrade", "vcommon"], tmp_path).returncode == 0
    assert [p.name for p in read(path).packages] == ["vcommon"]


# -- an index without hashes, and one that fails --------------------------------------


def unhashed_site(site: Path) -> bytes:
    """A PEP 691 site whose one wheel (vpkg 1.0) comes without hash or size."""
    built = vpkg_wheel(site.parent / "built")
    (site / "files").mkdir(parents=True)
    shutil.copy(built, site / "files" / built.name)
    page = site / "simple" / "vpkg"
    page.mkdir(parents=True)
    entry = {"filename": built.name, "url": f"../../files/{built.name}", "hashes": {}}
    document = {"meta": {"api-version": "1.1"}, "name": "vpkg", "files": [entry]}
    (page / "index.json").write_text(json.dumps(document))
    return built.read_bytes()


def lock_from_faulty(
    site: Path, fault: str | None, target: str, where: Path
) -> subprocess.CompletedProcess[str]:
    """``wheelwise lock vpkg`` from *site* served with *fault* on its *target* files."""
    server = serving(site, fault, target)
    where.mkdir()
    try:
        return lock(["--index-url", f"{server.base}/simple/", "--retries", "0", "vpkg"], where)
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()


@pytest.mark.slow
@pytest.mark.parametrize("fault", [None, "truncated", "5xx", "reset"])
def test_a_wheel_without_hash_is_downloaded_and_hashed(tmp_path: Path, fault: str | None) -> None:
    data = unhashed_site(tmp_path / "site")
    where = tmp_path / "work"
    result = lock_from_faulty(tmp_path / "site", fault, "wheel", where)
    if fault is not None:
        assert result.returncode == 2, result.stderr
        assert "vpkg-1.0-py3-none-any.whl" in one_error_line(result)
        assert list(where.iterdir()) == []
        return
    assert result.returncode == 0, result.stderr
    (package,) = read(where / "pylock.toml").packages
    (locked_wheel,) = package.wheels
    assert locked_wheel.hashes == {"sha256": hashlib.sha256(data).hexdigest()}
    assert locked_wheel.size == len(data)


# -- the resolver's locking mode -------------------------------------------------------


def cuda_metadata() -> VariantMetadata:
    return VariantMetadata.build(["nvidia"], {"null": {}, **CUDA})


def resolve_every_wheel(index: Index, *requirements: str) -> Any:
    from test_install_resolve import ENV, TAGS

    def never(_metadata: VariantMetadata) -> SupportedProperties:
        raise AssertionError("a lock never asks what the machine supports")

    return resolve(
        requirements, index, supported=never, tags=TAGS, environment=ENV, every_wheel=True
    )


def test_every_wheel_lists_what_fits_and_unites_their_requirements() -> None:
    files = [
        "t-2.0-py3-none-any.whl",
        "t-2.0-py3-none-any-null.whl",
        "t-2.0-py3-none-any-cu126.whl",
        "t-2.0-py3-none-any-cu130.whl",
        "t-2.0-cp312-cp312-win_amd64-cu130.whl",  # not for these tags
        "t-2.0-py3-none-any-rocm.whl",  # a label the metadata lacks
    ]
    index = Index().add(
        "t",
        "2.0",
        files=files,
        metadata=cuda_metadata(),
        per_file={
            files[0]: ["common"],
            files[1]: ["common"],
            files[2]: [
                "common",
                'blas<2; "nvidia :: cuda_version_lower_bound :: 12.6" in variant_properties',
            ],
            files[3]: [
                "common",
                'blas>=1.5; variant_label == "cu130"',
                'jit; variant_label == "null"',
            ],
            files[4]: ["never"],
            files[5]: ["never"],
        },
    )
    index.add("common", "1.0").add("blas", "1.0").add("blas", "1.7").add("blas", "2.0")
    index.add("jit", "1.0")
    resolution = resolve_every_wheel(index, "t")
    package = resolution["t"]
    assert {str(w.file) for w in package.listed} == set(files[:4])
    assert package.requires == ("blas", "common")
    assert package.variant_gated == ("blas",)
    assert str(resolution["blas"].version) == "1.7"  # every listed wheel's range at once
    assert "never" not in resolution
    assert "jit" not in resolution


def test_every_wheel_without_usable_variant_metadata_lists_the_rest() -> None:
    files = ["t-1.0-py3-none-any.whl", "t-1.0-py3-none-any-cu126.whl"]
    index = Index().add("t", "1.0", files=files, metadata=None)
    assert {str(w.file) for w in resolve_every_wheel(index, "t")["t"].listed} == {files[0]}
    only_variants = Index().add("t", "1.0", files=files[1:], metadata=None)
    with pytest.raises(NoCompatibleWheel, match="no variant metadata for their labels"):
        resolve_every_wheel(only_variants, "t")


def test_a_dependency_required_plainly_too_is_not_gated() -> None:
    files = ["t-1.0-py3-none-any.whl", "t-1.0-py3-none-any-cu126.whl"]
    index = Index().add(
        "t",
        "1.0",
        files=files,
        metadata=cuda_metadata(),
        per_file={files[0]: ["blas"], files[1]: ['blas; "nvidia" in variant_namespaces']},
    )
    index.add("blas", "1.0")
    assert resolve_every_wheel(index, "t")["t"].variant_gated == ()


# -- peers ---------------------------------------------------------------------------


def peer_venv(tmp_path: Path, name: str) -> Path:
    return make_venv(tmp_path / name)


def installed(python: Path) -> set[str]:
    return {p.name.split("-")[0] for p in site_packages(python).glob("*.dist-info")}


@pytest.mark.slow
def test_uv_and_pip_read_a_wheelwise_lock(served: str, tmp_path: Path) -> None:
    """What uv 0.13.9 and pip 26 do with a lock (docs/lock.md, "Peers")."""
    variant_lock, plain_lock = tmp_path / "variant", tmp_path / "plain"
    variant_lock.mkdir()
    plain_lock.mkdir()
    assert lock(["--index-url", served, "vtorch"], variant_lock).returncode == 0
    assert lock(["--index-url", served, "vcommon"], plain_lock).returncode == 0
    nowhere = f"http://127.0.0.1:{free_port()}/simple/"
    home = tmp_path / "home"

    def uv(python: Path, folder: Path, *extra: str, env: dict[str, str] | None = None) -> Any:
        argv = [uv_executable(), "pip", "install", "--no-config", "--no-cache", *extra]
        argv += ["--python", str(python), "--index-url", nowhere]
        argv += ["-r", str(folder / "pylock.toml")]
        return subprocess.run(
            argv, env=installer_env(home) | (env or {}), capture_output=True, text=True, check=False
        )

    def pip(python: Path, folder: Path, *command: str) -> Any:
        argv = [sys.executable, "-m", "pip", "--python", str(python), *command, "--no-cache-dir"]
        argv += ["--index-url", nowhere, "-r", str(folder / "pylock.toml")]
        return subprocess.run(
            argv, env=installer_env(home), capture_output=True, text=True, check=False
        )

    # uv installs the non-variant build and leaves the variant-gated packages out,
    # with the wheel-variants preview and a CUDA 13 machine too.
    cuda13 = {
        "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "13.0",
        "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0",
    }
    for name, extra in (("uv", ()), ("uv-variants", ("--preview-features", "wheel-variants"))):
        python = peer_venv(tmp_path, name)
        done = uv(python, variant_lock, *extra, env=cuda13)
        assert done.returncode == 0, done.stderr
        assert installed(python) == {"vtorch", "vcommon"}
        build = run_python(python, "import vtorch; print(repr(vtorch.VARIANT))")
        assert build.stdout.strip() == "None"

    # pip 26 reads pylock.toml (as -r, by that file name), but refuses variant wheel names.
    python = peer_venv(tmp_path, "pip")
    for command in (("install",), ("lock", "-o", str(tmp_path / "pip-lock.toml"))):
        refused = pip(python, variant_lock, *command)
        assert refused.returncode == 1
        assert "Invalid pylock file" in refused.stderr
        assert "Invalid wheel filename 'vtorch-2.0-py3-none-any-cu126.whl'" in refused.stderr
    assert installed(python) == set()
    done = pip(python, plain_lock, "install")
    assert done.returncode == 0, done.stderr
    assert installed(python) == {"vcommon"}


@pytest.mark.slow
@pytest.mark.parametrize("target", ["metadata", "variants"])
@pytest.mark.parametrize("fault", [None, "truncated", "5xx", "hash"])
def test_a_failing_metadata_or_variants_file_writes_nothing(
    tmp_path: Path, fault: str | None, target: str
) -> None:
    """Locking reads every listed wheel's metadata and the release's variants file."""
    from test_network_faults import write_site

    write_site(tmp_path / "site")
    where = tmp_path / "work"
    result = lock_from_faulty(tmp_path / "site", fault, target, where)
    if fault is None:
        assert result.returncode == 0, result.stderr
        (package,) = read(where / "pylock.toml").packages
        assert len(package.wheels) == 3
        return
    assert result.returncode == 2, result.stderr
    assert "vpkg-1.0" in one_error_line(result)
    assert list(where.iterdir()) == []


@pytest.mark.slow
def test_a_release_from_two_sources_for_two_targets(tmp_path: Path) -> None:
    """The first source with a wheel for the target gives the release (PEP 825): here
    one per target, each with a variant; the lock keeps both and both labels."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    linux = "vmix-1.0-cp312-cp312-manylinux_2_28_x86_64"
    windows = "vmix-1.0-cp312-cp312-win_amd64"
    plain(first, f"{linux}.whl")
    wheel(first, f"{linux}-cu126.whl", "cu126", CUDA["cu126"], namespaces=["nvidia"])
    plain(second, f"{windows}.whl")
    wheel(second, f"{windows}-cu130.whl", "cu130", CUDA["cu130"], namespaces=["nvidia"])
    where = tmp_path / "work"
    where.mkdir()
    with wheelwise_serve(first) as one, wheelwise_serve(second) as two:
        args = ["--index-url", f"{one}/simple/", "--extra-index-url", f"{two}/simple/"]
        args += ["--python-version", "3.12", "--platform", "linux", "--platform", "windows"]
        result = lock([*args, "vmix"], where)
    assert result.returncode == 0, result.stderr
    (package,) = read(where / "pylock.toml").packages
    assert package.marker is None
    assert package.index is None  # two indexes: none is named
    assert wheel_names(package) == {
        f"{linux}.whl",
        f"{linux}-cu126.whl",
        f"{windows}.whl",
        f"{windows}-cu130.whl",
    }
    assert package.variants_json is not None
    assert package.variants_json.document["variants"] == CUDA


@pytest.mark.slow
def test_abi_dependency_builds_follow_the_locked_version(tmp_path: Path) -> None:
    """PEP 817 ``abi_dependency``: of a release's builds against other packages'
    versions, the lock keeps those built against the version it locks."""
    house = tmp_path / "wheels"
    house.mkdir()
    for version in ("2.7.0", "2.8.0", "2.9.0"):
        plain(house, f"vbase-{version}-py3-none-any.whl")
    for label, built_for in (("b28", "2.8"), ("b29", "2.9")):
        wheel(
            house,
            f"vext-1.0-py3-none-any-{label}.whl",
            label,
            {"abi_dependency": {"vbase": [built_for]}},
            namespaces=["abi_dependency"],
            extra_members=metadata_member("vext", "1.0", ["vbase"]),
        )
    with wheelwise_serve(house) as base:
        index = ["--index-url", f"{base}/simple/", "-o", "-"]
        chosen = {}
        for pin in ("vbase", "vbase==2.8.0"):
            result = lock([*index, "vext", pin], tmp_path)
            assert result.returncode == 0, result.stderr
            found = entries(read_pylock(result.stdout))
            (vext,) = (p for (name, _), p in found.items() if name == "vext")
            assert vext.variants_json is not None
            chosen[pin] = (wheel_names(vext), sorted(vext.variants_json.document["variants"]))
        refused = lock([*index, "vext", "vbase==2.7.0"], tmp_path)
    assert chosen == {
        "vbase": ({"vext-1.0-py3-none-any-b29.whl"}, ["b29"]),
        "vbase==2.8.0": ({"vext-1.0-py3-none-any-b28.whl"}, ["b28"]),
    }
    assert refused.returncode == 2
    assert one_error_line(refused) == (
        "wheelwise: error: no wheel of vext 1.0 is built against the versions locked for "
        "its abi_dependency packages (vbase 2.8, 2.9); pin those packages to a version one "
        "of its builds is for; nothing was written"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("machine_env", "build", "packages"),
    [
        (CPU, "'null'", {"vtorch", "vcommon"}),
        (GPU, "'cu130'", {"vtorch", "vcommon", "vcublas", "vnvjit"}),
    ],
    ids=["cpu", "cuda13"],
)
def test_wheelwise_installs_the_lock_it_wrote(
    served: str, tmp_path: Path, machine_env: dict[str, str], build: str, packages: set[str]
) -> None:
    """Locked on a CPU machine, installed on each: the CUDA build brings its gated
    packages in, the CPU build does not."""
    where = tmp_path / "work"
    where.mkdir()
    assert lock(["--index-url", served, "vtorch"], where, CPU).returncode == 0
    python = make_venv(tmp_path / "venv")
    args = ["install", "--python", str(python), "-r", str(where / "pylock.toml")]
    done = wheelwise(args, tmp_path / "install-cache", machine_env)
    assert done.returncode == 0, done.stderr
    assert installed(python) == packages
    built = run_python(python, "import vtorch; print(repr(vtorch.VARIANT))")
    assert built.stdout.strip() == build


@pytest.mark.slow
def test_wheelwise_installs_a_lock_written_by_uv_or_pip(served: str, tmp_path: Path) -> None:
    """``uv pip compile --format pylock.toml`` and ``pip lock`` write PEP 751 locks of a
    plain project and its dependency; ``wheelwise install -r`` installs exactly what
    each lists, from the lock alone."""
    home = tmp_path / "home"
    requirements = tmp_path / "requirements.in"
    requirements.write_text("vcublas\n")  # vcublas 1.0 and its dependency vnvjit 1.0
    uv_lock, pip_lock = tmp_path / "uv" / "pylock.toml", tmp_path / "pip" / "pylock.toml"
    uv_lock.parent.mkdir()
    pip_lock.parent.mkdir()
    written = subprocess.run(
        [
            uv_executable(), "pip", "compile", "--no-config", "--no-cache", "--quiet",
            "--index-url", served, "--format", "pylock.toml", "-o", str(uv_lock),
            str(requirements),
        ],
        env=installer_env(home), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    written = subprocess.run(
        [
            sys.executable, "-m", "pip", "lock", "--no-cache-dir", "--quiet", "--index-url",
            served, "-r", str(requirements), "-o", str(pip_lock),
        ],
        env=installer_env(home), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    for writer, path in (("uv", uv_lock), ("pip", pip_lock)):
        assert read(path).created_by == writer
        python = make_venv(tmp_path / f"venv-{writer}")
        args = ["install", "--python", str(python), "-r", str(path)]
        done = wheelwise(args, tmp_path / f"cache-{writer}", CPU)
        assert done.returncode == 0, f"{writer}: {done.stderr}"
        assert installed(python) == {"vcublas", "vnvjit"}, writer
