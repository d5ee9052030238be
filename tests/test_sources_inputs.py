"""The parsers of the build stage, on valid, hostile and random input: direct
references (:mod:`wheelwise.resolve.direct`), source archives
(:mod:`wheelwise.wheels.sdist`), ``--only-binary``/``--no-binary`` values
(:mod:`wheelwise.resolve.formats`) and installed ``direct_url.json`` files."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded, damaged
from wheelwise.environment.installed import InstalledDist, editable_location
from wheelwise.models.errors import ResolveError
from wheelwise.resolve.direct import ARCHIVE, DIRECTORY, GIT, WHEEL, parse_direct
from wheelwise.resolve.formats import ALL, FormatPolicy, format_names
from wheelwise.wheels.sdist import SourceArchiveError, unpack_source

# tarfile and zipfile differ between Python versions: run under every one (make test).
pytestmark = pytest.mark.interp

# -- direct references ---------------------------------------------------------------


def test_plain_requirements_are_not_references() -> None:
    for text in ("requests", "requests>=2", "torch#cu128", "foo[bar]==1; python_version>'3'"):
        assert parse_direct(text) is None


def test_reference_forms(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    found = parse_direct(f"{project}[Extra_One, two]")
    assert found is not None
    assert (found.kind, found.location, found.extras) == (
        DIRECTORY,
        str(project),
        frozenset({"extra-one", "two"}),
    )
    assert parse_direct(str(wheel)).kind == WHEEL  # type: ignore[union-attr]
    named = parse_direct(f"pkg @ {wheel.as_uri()} ; python_version >= '3'")
    assert named is not None
    assert (named.kind, named.name, named.location) == (WHEEL, "pkg", str(wheel))
    assert named.marker == 'python_version >= "3"'
    remote = parse_direct("Thing @ https://example.org/dl/thing-2.0.tar.gz")
    assert remote is not None
    assert (remote.kind, remote.name, remote.is_local) == (ARCHIVE, "thing", False)
    git = parse_direct("git+https://example.org/repo.git@v1.2#egg=Repo_Pkg&subdirectory=sub")
    assert git is not None
    assert (git.kind, git.location, git.revision, git.subdirectory, git.name) == (
        GIT,
        "https://example.org/repo.git",
        "v1.2",
        "sub",
        "repo-pkg",
    )
    editable = parse_direct(str(project), editable=True)
    assert editable is not None
    assert editable.editable
    hashed = parse_direct(f"pkg @ https://example.org/pkg-1.0-py3-none-any.whl#SHA256={'A' * 64}")
    assert hashed is not None
    assert hashed.hashes == (("sha256", "a" * 64),)
    assert hashed.location == "https://example.org/pkg-1.0-py3-none-any.whl"
    local = parse_direct(f"{wheel.as_uri()}#md5={'0' * 32}&egg=pkg")
    assert local is not None
    assert (local.location, local.hashes) == (str(wheel), (("md5", "0" * 32),))


@pytest.mark.parametrize(
    ("text", "editable", "message"),
    [
        ("./missing-folder", False, "no such file or folder"),
        ("ftp://example.org/x.tar.gz", False, "of scheme 'ftp' are not supported"),
        ("https://example.org/x.exe", False, "not a wheel or source archive"),
        ("git+https://example.org/r.git", True, "editable installs from git"),
        ("https://example.org/x-1.0.tar.gz", True, "needs a project folder"),
        ("file://otherhost/x.whl", False, "another host"),
        ("https://example.org/x-1.0.tar.gz#sha256=xyz", False, "not a sha256 digest"),
        ("https://example.org/x-1.0.tar.gz#sha512=" + "0" * 64, False, "128 hexadecimal"),
        ("file:///#sha256=" + "0" * 64, False, "a hash names a file"),
        ("ok @ http://[::1", False, "not a valid URL"),
        ("http://[::1/x-1.0-py3-none-any.whl", False, "not a valid URL"),
    ],
)
def test_reference_errors(text: str, editable: bool, message: str) -> None:
    with pytest.raises(ResolveError, match=message):
        parse_direct(text, editable=editable)


@bounded(300)
@given(st.text(max_size=80))
def test_fuzz_parse_direct_never_crashes(text: str) -> None:
    """Any text is a plain requirement (None), a reference, or one ResolveError."""
    try:
        found = parse_direct(text)
    except ResolveError as exc:
        assert "\n" not in str(exc).strip()  # noqa: PT017 - one line, whatever the text
        return
    if found is not None:
        assert found.kind in (DIRECTORY, WHEEL, ARCHIVE, GIT)


# -- source archives -----------------------------------------------------------------


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _file(name: str, data: bytes = b"x = 1\n", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def test_an_sdist_unpacks_to_its_top_folder(tmp_path: Path) -> None:
    archive = tmp_path / "pkg-1.0.tar.gz"
    archive.write_bytes(
        _tar([_file("pkg-1.0/PKG-INFO"), _file("pkg-1.0/run.sh", b"#!/bin/sh\n", 0o755)])
    )
    root = unpack_source(archive, tmp_path / "out")
    assert root == tmp_path / "out" / "pkg-1.0"
    assert (root / "PKG-INFO").read_bytes() == b"x = 1\n"
    assert (root / "run.sh").stat().st_mode & 0o100


@pytest.mark.parametrize(
    "member",
    [
        _file("../escape.py"),
        _file("/etc/escape.py"),
        _file("pkg-1.0/../../escape.py"),
    ],
)
def test_members_outside_the_tree_are_refused(tmp_path: Path, member: object) -> None:
    archive = tmp_path / "pkg-1.0.tar.gz"
    archive.write_bytes(_tar([member]))  # type: ignore[list-item]
    with pytest.raises(SourceArchiveError, match="outside the tree"):
        unpack_source(archive, tmp_path / "out")
    assert not (tmp_path / "escape.py").exists()


def test_links_and_devices_are_left_out(tmp_path: Path) -> None:
    """A symbolic link out of the tree, then a file written through it: the link is
    never made, so the file lands inside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = tmp_path / "pkg-1.0.tar.gz"
    archive.write_bytes(
        _tar(
            [
                _link("pkg-1.0/evil", str(outside)),
                _file("pkg-1.0/evil/pwned.py"),
                _link("pkg-1.0/hard", "/etc/passwd", tarfile.LNKTYPE),
            ]
        )
    )
    root = unpack_source(archive, tmp_path / "out")
    assert not list(outside.iterdir())
    assert not (root / "evil").is_symlink()
    assert not (root / "hard").exists()


def test_a_zip_unpacks_and_a_member_bigger_than_it_says_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("pkg-1.0/big.py", b"0" * 100_000)
    good = tmp_path / "good-1.0.zip"
    good.write_bytes(buffer.getvalue())
    assert (unpack_source(good, tmp_path / "good") / "big.py").stat().st_size == 100_000
    data = bytearray(buffer.getvalue())
    # Lower the size the central directory states (the local header keeps the truth).
    offset = data.rfind(b"PK\x01\x02")
    data[offset + 24 : offset + 28] = (10).to_bytes(4, "little")
    archive = tmp_path / "pkg-1.0.zip"
    archive.write_bytes(bytes(data))
    with pytest.raises(SourceArchiveError):
        unpack_source(archive, tmp_path / "out")


_VALID = _tar([_file("pkg-1.0/PKG-INFO"), _file("pkg-1.0/pkg/__init__.py")])


@bounded(150, function_fixtures=True)
@given(damaged(_VALID))
def test_fuzz_damaged_sdists_give_one_error(tmp_path: Path, data: bytes) -> None:
    archive = tmp_path / "pkg-1.0.tar.gz"
    archive.write_bytes(data)
    out = tmp_path / "out"
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    try:
        root = unpack_source(archive, out)
    except SourceArchiveError as exc:
        assert str(exc).startswith(str(archive))  # noqa: PT017 - names the archive
        return
    assert root.is_relative_to(out)
    for path in out.rglob("*"):
        assert path.resolve().is_relative_to(out.resolve())


# -- --only-binary / --no-binary -------------------------------------------------------


def test_format_names_and_policy() -> None:
    assert format_names([":all:", "Foo_Bar,baz"], "--only-binary") == {ALL, "foo-bar", "baz"}
    assert format_names(["foo", ":none:", "bar"], "--no-binary") == {"bar"}
    with pytest.raises(ResolveError, match="not a project name"):
        format_names(["not a name!"], "--only-binary")
    policy = FormatPolicy(only_binary=frozenset({ALL}), no_binary=frozenset({"kernels"}))
    assert not policy.builds("torch")
    assert policy.builds("kernels")
    assert not policy.takes_wheels("kernels")
    assert policy.takes_wheels("torch")
    everything_built = FormatPolicy(no_binary=frozenset({ALL}), only_binary=frozenset({"numpy"}))
    assert everything_built.takes_wheels("numpy")
    assert not everything_built.takes_wheels("six")
    assert everything_built.builds("six")
    assert not everything_built.builds("numpy")


@bounded(200)
@given(st.lists(st.text(max_size=20), max_size=4))
def test_fuzz_format_names(values: list[str]) -> None:
    try:
        names = format_names(values, "--no-binary")
    except ResolveError as exc:
        assert "--no-binary" in str(exc)  # noqa: PT017 - names the option
        return
    assert all(name == ALL or name == name.lower() for name in names)


# -- installed direct_url.json -----------------------------------------------------------


@bounded(200, function_fixtures=True)
@given(st.one_of(st.binary(max_size=200), st.just(b'{"url": "file:///p", "dir_info": {}}')))
def test_fuzz_editable_location_never_raises(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "direct_url.json").write_bytes(data)
    dist = InstalledDist("p", "1", None, None, tmp_path)
    found = editable_location(dist)
    assert found is None or isinstance(found, str)


def test_editable_location(tmp_path: Path) -> None:
    (tmp_path / "direct_url.json").write_text(
        '{"url": "file:///src/my%20proj", "dir_info": {"editable": true}}'
    )
    assert editable_location(InstalledDist("p", "1", None, None, tmp_path)) == "/src/my proj"
