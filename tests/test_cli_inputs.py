"""Hostile user inputs through the command line: special files, deep or huge JSON,
relative and unresponsive ``--python`` interpreters, control characters in errors.

Every refusal is one ``wheelwise: error:`` line and exit status 2, within a bounded
time (the subprocess timeout is the hang detector, never a wall-clock assert)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from installkit import alpha_wheel, make_venv
from paths import CORPUS
from wheelfactory import make_wheel

TEST_PACKAGE_JSON = CORPUS / "test-package" / "dist" / "test_package-0-variants.json"
HANG_LIMIT = 60  # seconds: far more than any refusal takes, far less than a hang

pytestmark = pytest.mark.usefixtures("simulated_machine")


def wheelwise(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "wheelwise", *map(str, args)],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=HANG_LIMIT,
        cwd=cwd,
        env=env,
        check=False,
    )


def assert_one_clean_error(proc: subprocess.CompletedProcess[bytes], *needles: str) -> str:
    """Exit 2, and stderr is exactly one line without control characters."""
    err = proc.stderr
    assert proc.returncode == 2, err
    assert err.startswith(b"wheelwise: error: "), err
    assert err.endswith(b"\n"), err
    assert err.count(b"\n") == 1, err
    body = err[:-1]
    assert not any(byte < 0x20 or byte == 0x7F for byte in body), err
    text = body.decode("utf-8")
    for needle in needles:
        assert needle in text, text
    return text


# -- special files ----------------------------------------------------------------


@pytest.fixture(params=["dev-zero", "fifo"])
def special(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A path named like a wheel that is no regular file: a link to /dev/zero
    (endless) or a FIFO (blocks its reader until a writer comes)."""
    path = tmp_path / "alpha-1.0-py3-none-any.whl"
    if request.param == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    return path


def _special_commands(special: Path, tmp_path: Path) -> list[list[str | Path]]:
    out = tmp_path / "out"
    return [
        ["select", special],
        ["select", TEST_PACKAGE_JSON, "--system", special],
        ["variant", "show", special],
        ["variant", "strip", special, "-o", out],
        ["variant", "make", special, "-p", "x86_64 :: level :: v1", "-o", out],
        ["variant", "make", "x-1-py3-none-any.whl", "--null", "--pyproject", special, "-o", out],
        ["install", "--dry-run", "-r", special],
        ["install", "--dry-run", "alpha", "-c", special],
        ["install", "--dry-run", "alpha", "--system", special],
    ]


@pytest.mark.slow
def test_special_files_are_refused(special: Path, tmp_path: Path) -> None:
    for command in _special_commands(special, tmp_path):
        proc = wheelwise(*command)
        assert_one_clean_error(proc, str(special), "not a regular file")


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["select", "/dev/zero"],
        ["select", TEST_PACKAGE_JSON, "--system", "/dev/zero"],
        ["install", "--dry-run", "-r", "/dev/zero"],
        ["install", "--dry-run", "alpha", "-c", "/dev/zero"],
    ],
)
def test_dev_zero_is_refused(command: list[str | Path]) -> None:
    if not os.path.exists("/dev/zero"):
        pytest.fail("/dev/zero is missing")
    assert_one_clean_error(wheelwise(*command), "/dev/zero", "not a regular file")


@pytest.mark.slow
def test_special_files_in_wheel_folders_are_left_out(special: Path, tmp_path: Path) -> None:
    """`index build` and `--find-links DIR` list regular files only: a FIFO or a
    device named like a wheel is passed over, never read; `index build` refuses a
    link that leaves the folder (here, to /dev/zero) rather than publish it."""
    site = tmp_path / "site"
    built = wheelwise("index", "build", special.parent, "-o", site)
    if special.is_symlink():
        assert_one_clean_error(built, special.name, "copy the file there instead")
        assert not site.exists()
    else:
        assert built.returncode == 0, built.stderr
        assert b"0 file(s)" in built.stdout
    venv = make_venv(tmp_path / "venv")
    (tmp_path / "empty-index").mkdir()
    proc = wheelwise(
        "install", "--python", venv, "--dry-run", "-i", (tmp_path / "empty-index").as_uri(),
        "-f", special.parent, "alpha",
    )  # fmt: skip
    assert_one_clean_error(proc, "alpha")


# -- JSON and TOML that parsers choke on -------------------------------------------

DEEP_JSON = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
HUGE_INT = b'{"variants": ' + b"9" * 10_000 + b"}"
DEEP_TOML = b"a = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"


@pytest.mark.parametrize(
    ("name", "data"),
    [("deep", DEEP_JSON), ("deep-object", DEEP_OBJECT), ("huge-int", HUGE_INT)],
)
def test_select_refuses_hostile_json(tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / f"{name}-variants.json"
    path.write_bytes(data)
    assert_one_clean_error(wheelwise("select", path), str(path))
    system = tmp_path / f"{name}-system.json"
    system.write_bytes(data)
    assert_one_clean_error(wheelwise("select", TEST_PACKAGE_JSON, "--system", system), str(system))


def test_system_refuses_deep_toml(tmp_path: Path) -> None:
    system = tmp_path / "system.toml"
    system.write_bytes(DEEP_TOML)
    assert_one_clean_error(wheelwise("select", TEST_PACKAGE_JSON, "--system", system), str(system))


@pytest.mark.parametrize("data", [DEEP_JSON, HUGE_INT])
def test_variant_show_refuses_hostile_variant_json(tmp_path: Path, data: bytes) -> None:
    wheel = make_wheel(tmp_path, "x-1-py3-none-any-00000000.whl", data)
    assert_one_clean_error(wheelwise("variant", "show", wheel), "x-1-py3-none-any-00000000.whl")


def test_corrupt_detect_cache_is_detected_again(tmp_path: Path) -> None:
    first = wheelwise("detect", "--json")
    assert first.returncode == 0, first.stderr
    from wheelwise.providers.cache import cache_path

    path = Path(cache_path())
    header, _, rest = path.read_text(encoding="utf-8").partition("\n")
    length = int(header.rpartition(" ")[2])
    for document in (DEEP_JSON, HUGE_INT):
        path.write_text(f"{header}\n{rest[:length]}{document.decode()}", encoding="utf-8")
        proc = wheelwise("detect")  # the table reads and parses the cached document
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == b"", proc.stderr


# -- --python ---------------------------------------------------------------------


def _decoy_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH finds a ``python`` that always fails first."""
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    script = decoy / "python"
    script.write_text("#!/bin/sh\necho decoy python was run >&2\nexit 3\n", encoding="utf-8")
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{decoy}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.mark.slow
def test_relative_python_is_that_file_not_a_path_lookup(tmp_path: Path) -> None:
    venv_python = make_venv(tmp_path / "venv")
    work = tmp_path / "work"
    work.mkdir()
    # A wrapper, not a link: a link outside the venv would not start the venv.
    wrapper = work / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{venv_python}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    links = tmp_path / "links"
    links.mkdir()
    alpha_wheel(links, "1.0")
    env = _decoy_path(tmp_path)
    index = tmp_path / "empty-index"
    index.mkdir()

    plan = wheelwise(
        "install", "--python", "./python", "--dry-run", "-f", links, "-i",
        index.as_uri(), "alpha", cwd=work, env=env,
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    assert b"alpha" in plan.stdout
    done = wheelwise("install", "--python", venv_python, "-q", "-f", links, "-i",
                     index.as_uri(), "alpha", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr

    listed = wheelwise("list", "--python", "./python", "--json", cwd=work, env=env)
    assert listed.returncode == 0, listed.stderr
    assert [d["name"] for d in json.loads(listed.stdout)] == ["alpha"]
    removed = wheelwise("uninstall", "-y", "alpha", "--python", "./python", cwd=work, env=env)
    assert removed.returncode == 0, removed.stderr
    assert b"uninstalled alpha" in removed.stdout


@pytest.mark.slow
def test_missing_python_is_named(tmp_path: Path) -> None:
    for command in (
        ["list"],
        ["freeze"],
        ["check"],
        ["uninstall", "-y", "alpha"],
        ["recover"],
        ["install", "--dry-run", "alpha"],
    ):
        proc = wheelwise(*command, "--python", "./no-such-python", cwd=tmp_path)
        assert_one_clean_error(proc, "no-such-python")


@pytest.mark.slow
def test_silent_python_times_out(tmp_path: Path) -> None:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\nsleep 1000\n", encoding="utf-8")
    script.chmod(0o755)
    env = {**os.environ, "WHEELWISE_PYTHON_TIMEOUT": "1"}
    for command in (
        ["list"],
        ["freeze"],
        ["check"],
        ["uninstall", "-y", "alpha"],
        ["recover"],
        ["install", "--dry-run", "alpha"],
    ):
        proc = wheelwise(*command, "--python", script, env=env)
        assert_one_clean_error(proc, str(script), "1 s", "WHEELWISE_PYTHON_TIMEOUT")


# -- errors are one line ----------------------------------------------------------

HOSTILE_KEY = "a\nb\x1b[31mc\x7f\r"


@pytest.mark.slow
def test_hostile_text_in_errors_is_escaped(tmp_path: Path) -> None:
    doc = {
        "$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",
        "default-priorities": {"namespace": ["x86_64"]},
        "variants": {HOSTILE_KEY: {"x86_64": {"level": ["v1"]}}},
    }
    variants = tmp_path / "x-variants.json"
    variants.write_text(json.dumps(doc), encoding="utf-8")
    system = tmp_path / "sys.json"
    system.write_text(json.dumps({HOSTILE_KEY: {"f": ["v"]}}), encoding="utf-8")
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("--bogus\x1b[31m-option x\n", encoding="utf-8")
    odd = tmp_path / "odd\nname\x1b.json"
    cases: list[list[str | Path]] = [
        ["select", variants],
        ["select", TEST_PACKAGE_JSON, "--system", system],
        ["select", odd],
        ["install", "--dry-run", "foo >= "],
        ["install", "--dry-run", "foo\n>= 1"],
        ["install", "--dry-run", "foo#bad\x1blabel"],
        ["install", "--dry-run", "-r", reqs],
        ["install", "--dry-run", "--variant", "x\x1b", "foo"],
        ["variant", "make", "x.whl", "-p", "a\nb :: c :: d", "-o", tmp_path],
    ]
    for command in cases:
        assert_one_clean_error(wheelwise(*command))


def test_requirement_error_keeps_the_first_line_and_the_requirement() -> None:
    text = assert_one_clean_error(wheelwise("install", "--dry-run", "foo >= "), "'foo >= '")
    assert "^" not in text


@pytest.mark.slow
def test_deeply_nested_marker_is_an_invalid_requirement(tmp_path: Path) -> None:
    requirement = "alpha ; " + "(" * 3000 + "python_version > '3'" + ")" * 3000
    reqs = tmp_path / "reqs.txt"
    reqs.write_text(requirement + "\n", encoding="utf-8")
    for command in (["install", "--dry-run", requirement], ["install", "--dry-run", "-r", reqs]):
        # Ours ("nested too deeply"), or packaging's own limit from 26.4 ("nested more
        # than 200 levels deep").
        assert_one_clean_error(wheelwise(*command), "invalid requirement", "nested")


@pytest.mark.slow
def test_corrupt_index_state_file_is_rebuilt(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    alpha_wheel(wheels, "1.0")
    site = tmp_path / "site"
    first = wheelwise("index", "build", wheels, "-o", site)
    assert first.returncode == 0, first.stderr
    for document in (DEEP_JSON, HUGE_INT):
        (site / ".wheelwise-index.json").write_bytes(document)
        again = wheelwise("index", "build", wheels, "-o", site)
        assert again.returncode == 0, again.stderr
        assert b"1 file(s) (1 read" in again.stdout


@pytest.mark.parametrize(
    "command",
    [
        ["install", "--bogus\x1b[31m-option"],
        ["frob\nnicate"],
        ["select"],
        ["install", "--timeout", "x\ny"],
    ],
)
def test_usage_errors_are_one_line(command: list[str]) -> None:
    text = assert_one_clean_error(wheelwise(*command))
    assert "--help" in text


def test_bare_python_name_without_such_file_is_looked_up_on_path(tmp_path: Path) -> None:
    venv_python = make_venv(tmp_path / "venv")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "venv-python"
    wrapper.write_text(f'#!/bin/sh\nexec "{venv_python}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    listed = wheelwise("list", "--python", "venv-python", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def test_regular_file_reader_caps_the_size(tmp_path: Path) -> None:
    from wheelwise.userfiles import NotARegularFile, read_regular_file

    path = tmp_path / "doc.json"
    path.write_bytes(b"12345")
    assert read_regular_file(path, limit=5) == b"12345"
    with pytest.raises(NotARegularFile, match="larger than 4 bytes"):
        read_regular_file(path, limit=4)
    with pytest.raises(NotARegularFile, match="directory"):
        read_regular_file(tmp_path)


def test_exact_reader_gives_the_bytes_only_at_the_size_expected(tmp_path: Path) -> None:
    from wheelwise.userfiles import NotARegularFile, read_regular_exactly

    path = tmp_path / "a.whl"
    data = os.urandom(3 << 20)  # more than one read may return
    path.write_bytes(data)
    assert read_regular_exactly(path, len(data)) == data
    assert read_regular_exactly(path, len(data) - 1) is None  # it grew
    assert read_regular_exactly(path, len(data) + 1) is None  # it shrank
    empty = tmp_path / "empty.whl"
    empty.write_bytes(b"")
    assert read_regular_exactly(empty, 0) == b""
    with pytest.raises(NotARegularFile, match="directory"):
        read_regular_exactly(tmp_path, 0)
    fifo = tmp_path / "fifo.whl"
    os.mkfifo(fifo)
    with pytest.raises(NotARegularFile, match="not a regular file"):
        read_regular_exactly(fifo, 0)  # refused at once: no writer is waited for


@pytest.mark.parametrize("fast", [True, False])
def test_detect_cache_that_is_no_regular_file_is_detected_again(tmp_path: Path, fast: bool) -> None:
    from wheelwise.providers.cache import cache_path

    path = Path(cache_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    proc = wheelwise("detect", "--json") if fast else wheelwise("detect")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    assert path.is_file()  # replaced by a fresh cache


def test_no_command_still_shows_the_help() -> None:
    proc = wheelwise()
    assert b"Commands:" in proc.stdout + proc.stderr
    assert b"wheelwise: error" not in proc.stderr


@pytest.mark.parametrize(
    ("option", "url", "says"),
    [
        ("--index-url", "http://[::1", "not a valid URL"),
        ("--extra-index-url", "http://h:port/", "not a valid URL"),
        ("--find-links", "http://[::1/x/", "not a valid URL"),
    ],
)
def test_a_source_that_is_no_valid_url_is_one_line(
    tmp_path: Path, option: str, url: str, says: str
) -> None:
    (tmp_path / "empty").mkdir()
    index = [] if option == "--index-url" else ["--index-url", str(tmp_path / "empty")]
    proc = wheelwise("install", "--dry-run", *index, option, url, "alpha")
    assert_one_clean_error(proc, url, says)


def test_a_requirements_file_source_with_a_nul_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    requirements = tmp_path / "r.txt"
    requirements.write_bytes(b"--find-links a\x00b\nalpha\n")
    proc = wheelwise("install", "--dry-run", "-i", tmp_path / "empty", "-r", requirements)
    assert_one_clean_error(proc, "a\\x00b: not a usable local path")
