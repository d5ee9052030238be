"""Hostile and odd input at the command line, each given one error line (exit 2), no
traceback, no hang and nothing changed: numbers that are no clock's, host names no
resolver takes, links a page may not give, a FIFO named as a wheel, an interpreter
that answers the query with the wrong shape, wheels whose dist-info installer would
trip on, a wheel whose METADATA names another project; and a variant wheel given as
a file, which installs."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from indexkit import http_server
from installkit import make_venv, site_packages, tree_hash
from paths import DATA
from variantkit import wheelwise
from wheelfactory import make_wheel, variant_doc

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")


def _one_error(result: object, needle: str) -> None:
    code, err = result.returncode, result.stderr  # type: ignore[attr-defined]
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert err.startswith("wheelwise: error: "), err
    assert "Traceback" not in err
    assert needle in err, err


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0.01", "soon"])
@pytest.mark.parametrize("option", ["--timeout", "--request-deadline"])
def test_seconds_that_no_clock_reaches(tmp_path: Path, option: str, value: str) -> None:
    result = wheelwise(
        [
            "download",
            "--no-index",
            "-f",
            str(tmp_path),
            "-d",
            str(tmp_path / "d"),
            option,
            value,
            "x",
        ],
        tmp_path / "cache",
    )
    _one_error(result, f"Invalid value for '{option}'")
    env = {"WHEELWISE_REQUEST_DEADLINE": value}
    from_env = wheelwise(["download", "-f", str(tmp_path), "-d", str(tmp_path), "x"], tmp_path, env)
    _one_error(from_env, "Invalid value for '--request-deadline'")


@pytest.mark.parametrize("host", ["a..b", "xn--zz.invalid"])
def test_a_host_name_no_resolver_takes(tmp_path: Path, host: str) -> None:
    python = make_venv(tmp_path / "venv")
    result = wheelwise(
        ["install", "--python", str(python), "--dry-run", "-i", f"http://{host}/simple/", "ok"],
        tmp_path / "cache",
    )
    _one_error(result, f"'{host}' is not a valid host name")


def test_links_a_page_may_not_give(tmp_path: Path) -> None:
    """A server's page may link http(s) files only: ``x:name.whl`` is never read as
    a file of the current folder, ``file:`` never read from this machine, and a
    host name that cannot be one is skipped with the rest, with a warning each."""
    site = tmp_path / "site"
    (site / "simple" / "ok").mkdir(parents=True)
    name = "ok-1.0-py3-none-any.whl"
    work = tmp_path / "work"
    work.mkdir()
    local = make_wheel(work, name, record=True)
    os.link(local, work / f"x:{name}")
    links = [f"x:{name}", local.as_uri(), f"http://a..b/files/{name}"]
    (site / "simple" / "ok" / "index.html").write_text(
        "".join(f'<a href="{link}">{name}</a>\n' for link in links)
    )
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    with http_server(site) as base:
        result = wheelwise(
            ["install", "--python", str(python), "--no-deps", "-i", f"{base}/simple/", "ok"],
            tmp_path / "cache",
            cwd=work,
        )
    assert result.returncode == 2, result.stdout
    warnings = [line for line in result.stderr.splitlines() if "skipped the link" in line]
    assert len(warnings) == 3, result.stderr
    assert result.stderr.splitlines()[-1].startswith("wheelwise: error: no compatible wheel for ok")
    assert tree_hash(site_packages(python)) == before


def test_a_fifo_named_as_a_wheel(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    fifo = tmp_path / "fifo-1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    result = wheelwise(
        ["install", "--python", str(python), "--no-deps", "--no-index", str(fifo)],
        tmp_path / "cache",
    )
    _one_error(result, "not a regular file nor a folder")


@pytest.mark.parametrize("answer", ["{}", "[1, 2]", "null", '{"paths": 3}'])
def test_an_interpreter_that_answers_the_wrong_shape(tmp_path: Path, answer: str) -> None:
    fake = tmp_path / "fakepy"
    fake.write_text(f"#!/bin/sh\necho '{answer}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    result = wheelwise(["list", "--python", str(fake)], tmp_path / "cache")
    _one_error(result, "an answer to the query without what it asks")


WHEEL = b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"


@pytest.mark.parametrize(
    ("members", "needle"),
    [
        ({"WHEEL": None}, "no bad-1.0.dist-info/WHEEL: not a valid wheel"),
        ({"WHEEL": b"\xa0\xff"}, "WHEEL is not UTF-8 text"),
        ({"WHEEL": b"Wheel-Version: 9.0\n"}, "says Wheel-Version 9.0: only 1.x wheels install"),
        ({"entry_points.txt": b"[broken\n"}, "entry_points.txt cannot be read"),
        ({"METADATA": b"Metadata-Version: 2.1\nName: other\nVersion: 7\n"}, "Name: other"),
    ],
)
def test_wheels_installer_would_trip_on(
    tmp_path: Path, members: dict[str, bytes | None], needle: str
) -> None:
    dist_info = "bad-1.0.dist-info"
    extra = {f"{dist_info}/{name}": data for name, data in members.items() if data is not None}
    wheel = make_wheel(tmp_path, "bad-1.0-py3-none-any.whl", record=True, extra_members=extra)
    if members.get("WHEEL", WHEEL) is None:
        _drop_member(wheel, f"{dist_info}/WHEEL")
    python = make_venv(tmp_path / "venv")
    before = tree_hash(site_packages(python))
    result = wheelwise(
        ["install", "--python", str(python), "--no-deps", "--no-index", str(wheel)],
        tmp_path / "cache",
    )
    _one_error(result, needle)
    assert "refusing to install bad-1.0-py3-none-any.whl" in result.stderr
    assert tree_hash(site_packages(python)) == before


def _drop_member(wheel: Path, member: str) -> None:
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        kept = {name: archive.read(name) for name in archive.namelist() if name != member}
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in kept.items():
            if name.endswith("/RECORD"):
                data = b"".join(
                    line + b"\n"
                    for line in data.splitlines()
                    if not line.startswith(member.encode())
                )
            archive.writestr(name, data)


def test_a_file_that_is_no_wheel_is_named_as_given(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    notzip = tmp_path / "notzip-1.0-py3-none-any.whl"
    notzip.write_bytes(b"not a zip at all")
    result = wheelwise(
        ["install", "--python", str(python), "--no-index", "./notzip-1.0-py3-none-any.whl"],
        tmp_path / "cache",
        cwd=tmp_path,
    )
    _one_error(result, "./notzip-1.0-py3-none-any.whl: not a valid wheel (zip) archive")
    assert "scratch" not in result.stderr


def test_a_variant_wheel_given_as_a_file_installs(tmp_path: Path) -> None:
    document = variant_doc("x86_64_v1", {"x86_64": {"level": ["v1"]}})
    wheel = make_wheel(tmp_path, "demo-1.0-py3-none-any-x86_64_v1.whl", document, record=True)
    python = make_venv(tmp_path / "venv")
    result = wheelwise(
        ["install", "--python", str(python), "--no-deps", "--no-index", str(wheel)],
        tmp_path / "cache",
        {"WHEELWISE_CPUINFO": str(DATA / "cpuinfo" / "linux-scientific7-k10")},
    )
    assert result.returncode == 0, result.stderr
    assert "installed demo 1.0 (variant x86_64_v1" in result.stdout
    frozen = wheelwise(["freeze", "--python", str(python)], tmp_path / "cache")
    assert frozen.stdout == f"demo @ {wheel.as_uri()}  # variant x86_64_v1\n"
    # A reader that stops early (| head) gets no error line.
    reader = subprocess.Popen(
        [sys.executable, "-m", "wheelwise", "freeze", "--python", str(python)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None
    assert reader.stderr is not None
    reader.stdout.close()
    with reader.stderr:
        assert reader.stderr.read() == b""
    reader.wait(timeout=60)


def test_a_report_that_cannot_be_written_stops_the_install_first(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    wheel = make_wheel(tmp_path, "ok-1.0-py3-none-any.whl", record=True)
    before = tree_hash(site_packages(python))
    result = wheelwise(
        ["install", "--python", str(python), "--no-index", str(wheel), "--report",
         str(tmp_path / "missing" / "report.json")],
        tmp_path / "cache",
    )  # fmt: skip
    _one_error(result, f"no folder {tmp_path / 'missing'}")
    assert tree_hash(site_packages(python)) == before
