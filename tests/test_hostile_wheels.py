"""Damaged and crafted wheels through every command that reads wheels: one
``wheelwise: error:`` line naming the wheel (exit 2), never a traceback, nothing
written or installed; ``index serve`` answers an upload of one with 400."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from indexkit import http_server, uvicorn_thread
from installkit import make_venv, simple_wheel, tree_hash
from variantkit import (
    PROJECT,
    level,
    system_file,
    variants_document,
    vpkg_wheel,
    wheelwise,
    write_site,
)
from wheelfactory import make_wheel
from wheelwise.publish.server import create_app
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.errors import WheelError
from zipcraft import garble_member, patch_member

pytestmark = pytest.mark.interp

VARIANT_JSON = f"{PROJECT}-1.0.dist-info/variant.json"
MODULE = f"{PROJECT}/__init__.py"
TOKEN = "t0ken"

Damage = Callable[[Path, str], Path]
DAMAGES: dict[str, Damage] = {
    "corrupt-deflate": lambda path, member: garble_member(path, member),
    "utf8-flag-invalid-name": lambda path, member: patch_member(
        path, member, flags=0x800, name=b"\xff" + member.encode()[1:]
    ),
    "version-needed-6.7": lambda path, member: patch_member(path, member, version=67),
    "unknown-compression": lambda path, member: patch_member(path, member, method=99),
}


def damaged_variant_wheel(directory: Path, damage: str) -> Path:
    """``vpkg-1.0-...-v3.whl`` with its variant.json entry damaged (the member every
    reader of a variant wheel reads)."""
    return DAMAGES[damage](vpkg_wheel(directory, "1.0", "v3"), VARIANT_JSON)


def assert_refused(result: subprocess.CompletedProcess[str], wheel: str) -> str:
    """One error naming *wheel*, exit 2; the error (``index build`` lists its
    problems on the lines after the first)."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("wheelwise: error:")]
    assert len(errors) == 1, result.stderr
    message = result.stderr[result.stderr.index(errors[0]) :]
    assert wheel in message
    return message


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_variant_show(tmp_path: Path, damage: str) -> None:
    wheel = damaged_variant_wheel(tmp_path / "in", damage)
    line = assert_refused(wheelwise(["variant", "show", str(wheel)], tmp_path / "c"), wheel.name)
    assert "re-download or rebuild it" in line


@pytest.mark.parametrize("content", [b"", b"not a zip at all", b"PK\x03\x04 cut short"])
def test_variant_show_of_a_file_without_a_label_that_is_no_wheel(
    tmp_path: Path, content: bytes
) -> None:
    wheel = tmp_path / "nz-1.0-py3-none-any.whl"
    wheel.write_bytes(content)
    line = assert_refused(wheelwise(["variant", "show", str(wheel)], tmp_path / "c"), wheel.name)
    assert "not a valid wheel (zip) archive" in line


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_variant_make_and_strip(tmp_path: Path, damage: str) -> None:
    out = tmp_path / "out"
    plain = DAMAGES[damage](vpkg_wheel(tmp_path / "plain"), MODULE)
    make = ["variant", "make", str(plain), "-p", "x86_64 :: level :: v3", "-o", str(out)]
    assert_refused(wheelwise([*make, "--verify"], tmp_path / "c"), plain.name)
    if damage == "corrupt-deflate":
        # Copied as it is, with its RECORD row: the damage is still found.
        assert wheelwise(make, tmp_path / "c").returncode == 0
        [made] = out.iterdir()
        with WheelArchive(made) as archive, pytest.raises(WheelError, match=MODULE):
            archive.verify_record()
        made.unlink()
    else:
        assert_refused(wheelwise(make, tmp_path / "c"), plain.name)
    variant = damaged_variant_wheel(tmp_path / "variant", damage)
    strip = ["variant", "strip", str(variant), "-o", str(out)]
    assert_refused(wheelwise(strip, tmp_path / "c"), variant.name)
    assert not out.exists() or list(out.iterdir()) == []


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_index_build(tmp_path: Path, damage: str) -> None:
    wheels = tmp_path / "wheels"
    damaged_variant_wheel(wheels, damage)
    site = tmp_path / "site"
    result = wheelwise(["index", "build", str(wheels), "-o", str(site)], tmp_path / "c")
    assert "re-download or rebuild it" in assert_refused(result, "vpkg-1.0-py3-none-any-v3.whl")
    assert not site.exists()


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("venv") / "env")


def no_index(tmp_path: Path) -> tuple[str, str]:
    """An empty folder as the index: nothing comes from elsewhere."""
    (tmp_path / "no-index").mkdir(exist_ok=True)
    return "--index-url", str(tmp_path / "no-index")


def _install(
    tmp_path: Path, python: Path, *source: str, requirement: str = PROJECT
) -> subprocess.CompletedProcess[str]:
    system = system_file(tmp_path, ["v3"])
    argv = ["install", "--python", str(python), "--system", str(system), *source, requirement]
    return wheelwise(argv, tmp_path / "cache")


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_install_from_find_links(tmp_path: Path, venv: Path, damage: str) -> None:
    # A non-variant wheel: choosing it reads nothing from it, installing reads it all.
    wheel = DAMAGES[damage](vpkg_wheel(tmp_path / "links"), MODULE)
    before = tree_hash(venv.parent.parent)
    result = _install(tmp_path, venv, "--find-links", str(wheel.parent), *no_index(tmp_path))
    message = assert_refused(result, wheel.name)
    # The file the user gave, never a copy in the cache.
    assert str(tmp_path / "cache") not in message
    if damage == "corrupt-deflate":
        assert str(wheel) in message
    assert tree_hash(venv.parent.parent) == before


@pytest.mark.slow
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_install_from_an_index(tmp_path: Path, venv: Path, damage: str) -> None:
    wheel = damaged_variant_wheel(tmp_path / "wheels", damage)
    site = write_site(
        tmp_path / "site",
        [wheel],
        {"1.0": variants_document({"v3": level("v3")})},
        core_metadata=False,
    )
    before = tree_hash(venv.parent.parent)
    with http_server(site) as base:
        result = _install(tmp_path, venv, "--index-url", f"{base}/simple/")
    assert_refused(result, wheel.name)
    assert tree_hash(venv.parent.parent) == before


def test_install_refuses_an_unlisted_record_suffix(tmp_path: Path, venv: Path) -> None:
    """Only RECORD.jws and RECORD.p7s may be missing from RECORD."""
    links = tmp_path / "links"
    wheel = simple_wheel(links, "sneaky", "1.0")
    rebuilt = make_wheel(
        tmp_path,
        wheel.name,
        extra_members={"sneaky/__init__.py": b"X = 1\n"},
        record=True,
    )
    # RECORD.pth is not listed in RECORD: appended after RECORD was written.
    with zipfile.ZipFile(rebuilt, "a") as archive:
        archive.writestr("sneaky-1.0.dist-info/RECORD.pth", b"import os\n")
    shutil.copyfile(rebuilt, wheel)
    before = tree_hash(venv.parent.parent)
    result = _install(
        tmp_path, venv, "--find-links", str(links), *no_index(tmp_path), requirement="sneaky"
    )
    line = assert_refused(result, wheel.name)
    assert "'sneaky-1.0.dist-info/RECORD.pth' is not listed in RECORD" in line
    assert tree_hash(venv.parent.parent) == before


# -- index serve: uploads ------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, httpx.Client]]:
    directory = tmp_path / "served"
    directory.mkdir()
    app = create_app(directory, upload_token=TOKEN, recheck_interval=60)
    with uvicorn_thread(app) as base, httpx.Client(base_url=base) as client:
        yield directory, client


def post_wheel(client: httpx.Client, path: Path) -> httpx.Response:
    data = path.read_bytes()
    fields = {
        ":action": "file_upload",
        "name": PROJECT,
        "version": "1.0",
        "sha256_digest": hashlib.sha256(data).hexdigest(),
    }
    files = {"content": (path.name, data, "application/octet-stream")}
    return client.post("/legacy/", data=fields, files=files, auth=("__token__", TOKEN))


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_upload_is_refused(tmp_path: Path, served: tuple[Path, httpx.Client], damage: str) -> None:
    directory, client = served
    wheel = damaged_variant_wheel(tmp_path / "outbox", damage)
    response = post_wheel(client, wheel)
    assert response.status_code == 400, response.text
    assert wheel.name in response.text
    assert "re-download or rebuild it" in response.text
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_served_directory_with_a_damaged_wheel(tmp_path: Path, damage: str) -> None:
    """The damaged wheel's project cannot be served (500 naming it); the rest is."""
    directory = tmp_path / "served"
    wheel = damaged_variant_wheel(directory, damage)
    simple_wheel(directory, "fine", "1.0")
    app = create_app(directory, recheck_interval=60)
    with uvicorn_thread(app) as base, httpx.Client(base_url=base) as client:
        assert client.get("/simple/").status_code == 200
        assert client.get("/simple/fine/").status_code == 200
        page = client.get(f"/simple/{PROJECT}/")
        assert page.status_code == 500
        assert wheel.name in page.text
        assert "re-download or rebuild it" in page.text
