"""Atomic installs into real virtual environments (wheelwise.install.transaction)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock
import pytest

from installkit import LOCK_NAME, alpha_wheel, make_venv, pip, run_python, simple_wheel, tree_hash
from wheelwise.environment.installed import list_installed
from wheelwise.environment.interpreter import QUERY_SCRIPT, TargetEnvironment
from wheelwise.fetch.verify import verify_wheel
from wheelwise.install import parallel, unpack
from wheelwise.install.transaction import install_wheels, uninstall, would_uninstall
from wheelwise.models.errors import ExternallyManagedError, InstallError, LockTimeoutError
from wheelwise.wheels.archive import InMemoryWheel

pytestmark = [
    pytest.mark.interp,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout"),
]


@pytest.fixture
def env(tmp_path: Path) -> TargetEnvironment:
    return TargetEnvironment.from_python(make_venv(tmp_path / "venv"))


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    return tmp_path / "wheels"


def _version(env: TargetEnvironment, module: str = "alpha") -> str:
    proc = run_python(env.python, f"import {module}; print({module}.VERSION)")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_install_imports_script_data_installer(env: TargetEnvironment, wheels: Path) -> None:
    report = install_wheels(env, [alpha_wheel(wheels, "1.0")])
    assert [(d.name, d.version) for d in report.installed] == [("alpha", "1.0")]
    assert report.removed == []
    # No bytecode was written, no backup folder remains.
    assert not list(env.purelib.rglob("*.pyc"))
    assert not list(env.purelib.glob(".wheelwise-backup-*"))
    assert _version(env) == "1.0"
    script = env.scripts / "alpha-cli"
    assert script.read_text().startswith(f"#!{env.python}")
    out = subprocess.run([str(script)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "alpha 1.0"
    assert (env.data / "share/alpha/readme.txt").read_text() == "alpha 1.0\n"
    dist_info = env.purelib / "alpha-1.0.dist-info"
    assert (dist_info / "INSTALLER").read_bytes() == b"wheelwise\n"
    record = (dist_info / "RECORD").read_text()
    assert "alpha-1.0.dist-info/INSTALLER" in record
    assert "../../../bin/alpha-cli" in record


def test_upgrade_removes_old_files_and_keeps_variant_json(
    env: TargetEnvironment, wheels: Path
) -> None:
    install_wheels(env, [alpha_wheel(wheels, "1.0")])
    # Bytecode of the old version, as a run of the target would leave it.
    assert run_python(env.python, "import alpha.old_only").returncode == 0
    assert list((env.purelib / "alpha/__pycache__").glob("old_only.*.pyc"))
    report = install_wheels(env, [alpha_wheel(wheels, "2.0", label="v3")])
    assert [(d.name, d.version) for d in report.removed] == [("alpha", "1.0")]
    assert _version(env) == "2.0"
    assert not (env.purelib / "alpha/old_only.py").exists()
    assert not list((env.purelib / "alpha").rglob("old_only*"))
    assert not (env.purelib / "alpha-1.0.dist-info").exists()
    variant = json.loads((env.purelib / "alpha-2.0.dist-info/variant.json").read_bytes())
    assert list(variant["variants"]) == ["v3"]
    (dist,) = list_installed(env)
    assert (dist.name, dist.version, dist.installer, dist.variant) == (
        "alpha",
        "2.0",
        "wheelwise",
        "v3",
    )
    assert dist.location == env.purelib / "alpha-2.0.dist-info"
    # The report says what reading the environment back says (without reading it).
    assert report.installed == [dist]
    assert (env.data / "share/alpha/readme.txt").read_text() == "alpha 2.0\n"
    assert not list(env.purelib.glob(".wheelwise-backup-*"))


def test_removing_and_installing_in_one_transaction(env: TargetEnvironment, wheels: Path) -> None:
    """A name both removed and installed is removed once; the other removal and the
    new install happen together; the report names each distribution once."""
    install_wheels(env, [alpha_wheel(wheels, "1.0"), simple_wheel(wheels, "beta", "1.0")])
    report = install_wheels(env, [alpha_wheel(wheels / "new", "2.0")], remove=["Alpha", "beta"])
    assert sorted((d.name, d.version) for d in report.removed) == [
        ("alpha", "1.0"),
        ("beta", "1.0"),
    ]
    assert [(d.name, d.version) for d in report.installed] == [("alpha", "2.0")]
    assert [(d.name, d.version) for d in list_installed(env)] == [("alpha", "2.0")]
    with pytest.raises(InstallError, match="cannot remove beta: it is not installed"):
        install_wheels(env, [], remove=["beta"])


def test_a_verified_in_memory_wheel_can_be_installed_again(
    env: TargetEnvironment, wheels: Path
) -> None:
    """verify_wheel keeps an in-memory wheel's parsed zip for the unpacking, which
    closes it; installing the same VerifiedWheel later opens it again."""
    path = alpha_wheel(wheels, "1.0")
    verified = verify_wheel(InMemoryWheel(path.name, path.read_bytes()))
    assert verified.opened is not None
    install_wheels(env, [verified])
    assert _version(env) == "1.0"
    uninstall(env, ["alpha"])
    install_wheels(env, [verified])
    assert _version(env) == "1.0"
    assert verify_wheel(path).opened is None  # a file on disk is opened per use


@pytest.mark.slow
def test_pip_sees_installed_packages(env: TargetEnvironment, wheels: Path) -> None:
    install_wheels(
        env, [alpha_wheel(wheels, "2.0", label="v3"), simple_wheel(wheels, "beta", "0.5")]
    )
    listed = pip(env.python, "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert {(p["name"], p["version"]) for p in json.loads(listed.stdout)} >= {
        ("alpha", "2.0"),
        ("beta", "0.5"),
    }
    check = pip(env.python, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    show = pip(env.python, "show", "-f", "alpha")
    assert "alpha/__init__.py" in show.stdout


def test_bad_record_installs_nothing(env: TargetEnvironment, wheels: Path) -> None:
    install_wheels(env, [alpha_wheel(wheels, "1.0")])
    before = tree_hash(env.prefix)
    bad = simple_wheel(wheels / "bad", "beta", "1.0", record=False)
    with pytest.raises(InstallError, match=r"beta-1\.0-py3-none-any\.whl.*not listed in RECORD"):
        install_wheels(env, [alpha_wheel(wheels / "new", "2.0"), bad])
    assert tree_hash(env.prefix) == before
    assert _version(env) == "1.0"


def test_member_not_matching_record_is_caught_while_installing(
    env: TargetEnvironment, wheels: Path
) -> None:
    """Contents are checked as they are written: a tampered member (listed in RECORD,
    with the wrong hash) stops the install and everything is rolled back."""
    install_wheels(env, [alpha_wheel(wheels, "1.0")])
    before = tree_hash(env.prefix)
    good = simple_wheel(wheels / "tampered", "beta", "1.0")
    tampered = good.with_name("beta-1.0-py3-none-any.whl")
    with zipfile.ZipFile(good) as source:
        members = {info.filename: source.read(info) for info in source.infolist()}
    members["beta/__init__.py"] += b"# tampered\n"
    good.unlink()
    with zipfile.ZipFile(tampered, "w") as target:
        for name, data in members.items():
            target.writestr(name, data)
    with pytest.raises(InstallError, match=r"beta/__init__\.py.*does not match its RECORD"):
        install_wheels(env, [alpha_wheel(wheels / "new", "2.0"), tampered])
    assert tree_hash(env.prefix) == before
    assert _version(env) == "1.0"


@pytest.mark.parametrize("in_memory", [False, True], ids=["on-disk", "in-memory"])
def test_member_whose_local_header_names_another_file_is_refused(
    env: TargetEnvironment, wheels: Path, in_memory: bool
) -> None:
    """The zip's directory lists beta/__init__.py, but that member's own header names
    another file: the wheel passes the checks done before installing (they read the
    directory), the read of that member refuses it, and everything is rolled back."""
    install_wheels(env, [alpha_wheel(wheels, "1.0")])
    before = tree_hash(env.prefix)
    path = simple_wheel(wheels / "confused", "beta", "1.0")
    data = path.read_bytes()
    name = b"beta/__init__.py"
    assert data.count(name) == 2  # its local header, then its directory entry
    data = data.replace(name, b"beta/__init__.pz", 1)  # the local header comes first
    path.write_bytes(data)
    source = InMemoryWheel(path.name, data) if in_memory else path
    with pytest.raises(InstallError, match=r"beta-1\.0-py3-none-any\.whl failed.*names"):
        install_wheels(env, [alpha_wheel(wheels / "new", "2.0"), source])
    assert tree_hash(env.prefix) == before
    assert _version(env) == "1.0"


def test_an_archive_damaged_where_only_unpacking_reads_is_one_short_line(
    env: TargetEnvironment, wheels: Path
) -> None:
    """A local header whose name length is wrong: zipfile quotes the whole header it
    read in its message; the error keeps a short, one-line reason."""
    install_wheels(env, [alpha_wheel(wheels, "1.0")])
    before = tree_hash(env.prefix)
    path = simple_wheel(wheels / "damaged", "beta", "1.0")
    data = bytearray(path.read_bytes())
    at = data.find(b"beta/__init__.py") - 4  # the local header's name length
    data[at : at + 2] = (len(data) - at - 40).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(InstallError) as caught:
        install_wheels(env, [alpha_wheel(wheels / "new", "2.0"), path])
    message = str(caught.value)
    assert message.startswith("installing beta-1.0-py3-none-any.whl failed: the archive is damaged")
    assert message.endswith("re-download or rebuild it; the environment was restored")
    assert "\n" not in message
    assert len(message) < 500
    assert tree_hash(env.prefix) == before


def test_failure_midway_rolls_back_everything(
    env: TargetEnvironment, wheels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One wheel after the other, so that the injected failure comes after beta's files.
    monkeypatch.setattr(parallel, "STRATEGY", "serial")
    install_wheels(env, [alpha_wheel(wheels, "1.0")])
    run_python(env.python, "import alpha.old_only")  # leaves bytecode to back up
    before = tree_hash(env.prefix)
    original = unpack._JournalingDestination.write_file
    calls: list[str] = []

    def failing(self: Any, scheme: Any, path: Any, stream: Any, is_executable: bool) -> Any:
        calls.append(str(path))
        if str(path).startswith("alpha/"):
            raise OSError("disk full (injected)")
        return original(self, scheme, path, stream, is_executable)

    monkeypatch.setattr(unpack._JournalingDestination, "write_file", failing)
    with pytest.raises(InstallError, match="disk full"):
        install_wheels(
            env, [simple_wheel(wheels, "beta", "1.0"), alpha_wheel(wheels / "new", "2.0")]
        )
    assert any(c.startswith("beta") for c in calls)  # beta was written, then undone
    assert tree_hash(env.prefix) == before
    monkeypatch.undo()
    assert _version(env) == "1.0"
    assert [d.name for d in list_installed(env)] == ["alpha"]


def test_conflicting_file_rolls_back(env: TargetEnvironment, wheels: Path) -> None:
    stray = env.purelib / "beta" / "__init__.py"
    stray.parent.mkdir()
    stray.write_text("# not from a wheel\n")
    before = tree_hash(env.prefix)
    with pytest.raises(InstallError, match="already exists"):
        install_wheels(env, [alpha_wheel(wheels, "1.0"), simple_wheel(wheels, "beta", "1.0")])
    assert tree_hash(env.prefix) == before


def test_uninstall_and_remove(env: TargetEnvironment, wheels: Path) -> None:
    empty = tree_hash(env.prefix)
    install_wheels(env, [alpha_wheel(wheels, "1.0"), simple_wheel(wheels, "beta", "1.0")])
    report = install_wheels(env, [simple_wheel(wheels, "gamma", "1.0")], remove=["Beta"])
    assert [d.name for d in report.removed] == ["beta"]
    assert [d.name for d in list_installed(env)] == ["alpha", "gamma"]
    assert uninstall(env, ["ALPHA", "gamma"]) == ["alpha", "gamma"]
    assert list_installed(env) == []
    assert not (env.scripts / "alpha-cli").exists()
    assert tree_hash(env.prefix) == empty  # empty folders were pruned too
    with pytest.raises(InstallError, match="not installed"):
        uninstall(env, ["alpha"])
    assert uninstall(env, ["alpha"], missing_ok=True) == []


def test_uninstall_refuses_files_outside_the_environment(
    env: TargetEnvironment, wheels: Path, tmp_path: Path
) -> None:
    install_wheels(env, [simple_wheel(wheels, "beta", "1.0")])
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    record = env.purelib / "beta-1.0.dist-info" / "RECORD"
    record.write_text(record.read_text() + "../../../../precious.txt,,\n")
    before = tree_hash(env.prefix)
    with pytest.raises(InstallError, match="outside the environment"):
        would_uninstall(env, ["beta"])
    with pytest.raises(InstallError, match="outside the environment"):
        uninstall(env, ["beta"])
    assert outside.read_text() == "keep me"
    assert tree_hash(env.prefix) == before


def test_externally_managed_refused(tmp_path: Path, wheels: Path) -> None:
    python = make_venv(tmp_path / "venv")
    info = json.loads(
        subprocess.run([str(python), "-c", QUERY_SCRIPT], capture_output=True, check=True).stdout
    )
    stdlib = tmp_path / "stdlib"
    stdlib.mkdir()
    (stdlib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=use apt\n  or pipx\n")
    info["paths"]["stdlib"] = str(stdlib)
    info["base_prefix"] = info["prefix"]  # as if it were a system interpreter
    env = TargetEnvironment.from_info(info, python=python)
    assert env.is_externally_managed
    with pytest.raises(ExternallyManagedError, match=r"it says: use apt or pipx$") as refused:
        install_wheels(env, [simple_wheel(wheels, "beta", "1.0")])
    assert "\n" not in str(refused.value)  # one line, like every error
    assert list_installed(env) == []
    install_wheels(env, [simple_wheel(wheels, "beta", "1.0")], break_system_packages=True)
    with pytest.raises(ExternallyManagedError):
        uninstall(env, ["beta"])
    with pytest.raises(ExternallyManagedError):  # a dry run refuses as the run would
        would_uninstall(env, ["beta"])
    planned = would_uninstall(env, ["beta", "nope"], break_system_packages=True)
    assert [dist.name for dist in planned] == ["beta"]
    assert uninstall(env, ["beta"], break_system_packages=True) == ["beta"]


def test_concurrent_runs_wait_for_the_lock(env: TargetEnvironment, wheels: Path) -> None:
    lock = filelock.FileLock(str(env.prefix / LOCK_NAME), thread_local=False)
    lock.acquire()
    try:
        with pytest.raises(LockTimeoutError, match="another run holds the lock"):
            install_wheels(env, [simple_wheel(wheels, "beta", "1.0")], lock_timeout=0.2)
        assert list_installed(env) == []
        releaser = threading.Timer(0.4, lock.release)
        releaser.start()
        start = time.monotonic()
        install_wheels(env, [simple_wheel(wheels, "beta", "1.0")], lock_timeout=10)
        assert time.monotonic() - start >= 0.3
        releaser.join()
    finally:
        if lock.is_locked:
            lock.release()
    assert [d.name for d in list_installed(env)] == ["beta"]


def test_two_threads_install_serially(env: TargetEnvironment, wheels: Path) -> None:
    errors: list[BaseException] = []
    paths = [simple_wheel(wheels, f"pkg{i}", "1.0") for i in range(4)]

    def work(path: Path) -> None:
        try:
            install_wheels(env, [path], lock_timeout=30)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(p,)) for p in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [d.name for d in list_installed(env)] == ["pkg0", "pkg1", "pkg2", "pkg3"]


def test_duplicate_distributions_refused(env: TargetEnvironment, wheels: Path) -> None:
    with pytest.raises(InstallError, match="both alpha"):
        install_wheels(env, [alpha_wheel(wheels, "1.0"), alpha_wheel(wheels, "2.0")])


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """Ctrl-C handled as in a terminal, even where the tests run with it ignored (a
    background job): the transaction only defers an interrupt that would raise."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_during_commit(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Make Ctrl-C (a real SIGINT to this process) arrive as the next transaction
    starts deleting its backups; the backup folders it had, for the test to check."""
    from wheelwise.install import transaction

    backups: list[Path] = []
    commit = transaction._Transaction.commit

    def interrupted_commit(self: transaction._Transaction) -> None:
        backups.append(self.backup_root)
        os.kill(os.getpid(), signal.SIGINT)  # handled at once, by the deferring handler
        commit(self)

    monkeypatch.setattr(transaction._Transaction, "commit", interrupted_commit)
    return backups


@pytest.mark.usefixtures("sigint_raises")
def test_ctrl_c_while_deleting_backups_says_the_change_was_made(
    env: TargetEnvironment, wheels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Too late to undo: the upgrade is complete and the backups are gone, and the
    interrupt is reported (not ignored) with what was changed."""
    from wheelwise.install.transaction import InterruptedAfterCommit

    install_wheels(env, [alpha_wheel(wheels, "1.0")])
    backups = _ctrl_c_during_commit(monkeypatch)
    with pytest.raises(InterruptedAfterCommit) as caught:
        install_wheels(env, [alpha_wheel(wheels, "2.0")])
    report = caught.value.report
    assert [(d.name, d.version) for d in report.removed] == [("alpha", "1.0")]
    assert [(d.name, d.version) for d in report.installed] == [("alpha", "2.0")]
    assert _version(env) == "2.0"
    assert len(backups) == 1
    assert not backups[0].exists()
    assert not list(env.purelib.glob(".wheelwise-backup-*"))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("sigint_raises")
def test_cli_reports_ctrl_c_after_the_change_and_exits_130(
    env: TargetEnvironment, wheels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from wheelwise.cli.app import cli as main

    install_wheels(env, [simple_wheel(wheels, "beta", "1.0")])
    _ctrl_c_during_commit(monkeypatch)
    result = CliRunner().invoke(main, ["uninstall", "beta", "--python", str(env.python), "-y"])
    assert result.exit_code == 130, result.output
    assert "removed beta 1.0" in result.stdout
    assert "too late to undo" in result.stderr
    assert list_installed(env) == []


@pytest.mark.parametrize(
    "document", [b"[" * 100_000, b'{"variants": {"x": ' + b"9" * 5000 + b"}}"], ids=["deep", "big"]
)
def test_a_hostile_installed_variant_json_is_no_label(
    env: TargetEnvironment, wheels: Path, document: bytes
) -> None:
    install_wheels(env, [alpha_wheel(wheels, "1.0")])
    (env.purelib / "alpha-1.0.dist-info" / "variant.json").write_bytes(document)
    [alpha] = list_installed(env)
    assert (alpha.name, alpha.version, alpha.variant) == ("alpha", "1.0", None)
