"""Unpacking several wheels at once (wheelwise.install.parallel): every strategy
installs the same thing, and a failure anywhere, even a worker process killed
mid-way, leaves the environment exactly as it was."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time
import zipfile
from base64 import urlsafe_b64encode
from collections.abc import Callable
from pathlib import Path

import pytest

from installkit import WHEEL, make_venv, run_python, simple_wheel, tampered_wheel, tree_hash
from wheelfactory import make_wheel
from wheelwise.environment.installed import list_installed
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.install import parallel
from wheelwise.install.transaction import install_wheels
from wheelwise.install.unpack import Journal
from wheelwise.models.errors import InstallError
from wheelwise.wheels.archive import InMemoryWheel

pytestmark = [
    pytest.mark.interp,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout"),
]

STRATEGIES = ["serial", "threads", "fork"]


def _b64(data: bytes) -> str:
    return urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def gamma_wheel(directory: Path) -> Path:
    """``gamma``: a member larger than the read-whole limit (it streams), a script in
    ``.data/scripts`` with a ``#!python`` shebang and the executable bit, a data file
    and a console script."""
    dist_info = "gamma-1.0.dist-info"
    big = random.Random(825).randbytes(5 << 20)
    members: list[tuple[str, bytes, int]] = [
        ("gamma/__init__.py", b"VERSION = '1.0'\ndef main():\n    print('gamma main')\n", 0o644),
        ("gamma/blob.bin", big, 0o644),
        ("gamma-1.0.data/scripts/gamma-tool", b"#!python\nprint('gamma tool')\n", 0o755),
        ("gamma-1.0.data/data/share/gamma/notes.txt", b"notes\n", 0o644),
        (f"{dist_info}/METADATA", b"Metadata-Version: 2.1\nName: gamma\nVersion: 1.0\n", 0o644),
        (f"{dist_info}/WHEEL", WHEEL, 0o644),
        (f"{dist_info}/entry_points.txt", b"[console_scripts]\ngamma = gamma:main\n", 0o644),
    ]
    record = "".join(f"{name},sha256={_b64(data)},{len(data)}\n" for name, data, _ in members)
    members.append((f"{dist_info}/RECORD", (record + f"{dist_info}/RECORD,,\n").encode(), 0o644))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "gamma-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return path


@pytest.fixture
def env(tmp_path: Path) -> TargetEnvironment:
    return TargetEnvironment.from_python(make_venv(tmp_path / "venv"))


@pytest.fixture(params=STRATEGIES)
def strategy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(parallel, "STRATEGY", request.param)
    monkeypatch.setattr(parallel, "cores", lambda: 3)  # children even on a 1-core runner
    return str(request.param)


def _wheels(directory: Path) -> list[Path | InMemoryWheel]:
    """gamma and delta held in memory (as small downloads are), the others on disk."""
    gamma = gamma_wheel(directory)
    delta = simple_wheel(directory, "delta", "1.0")
    return [
        InMemoryWheel(gamma.name, gamma.read_bytes()),
        InMemoryWheel(delta.name, delta.read_bytes()),
        *(simple_wheel(directory, name, "1.0") for name in ("epsilon", "zeta", "eta")),
    ]


@pytest.mark.slow
def test_every_strategy_installs_the_same(
    env: TargetEnvironment, tmp_path: Path, strategy: str
) -> None:
    report = install_wheels(env, _wheels(tmp_path / "wheels"))
    assert sorted(d.name for d in report.installed) == ["delta", "epsilon", "eta", "gamma", "zeta"]
    assert [d.name for d in list_installed(env)] == ["delta", "epsilon", "eta", "gamma", "zeta"]
    code = "import gamma, delta, epsilon, zeta, eta, pathlib; print(len(pathlib.Path("
    code += "gamma.__file__).with_name('blob.bin').read_bytes()))"
    proc = run_python(env.python, code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(5 << 20)
    tool = env.scripts / "gamma-tool"
    assert tool.read_text().splitlines()[0] == f"#!{env.python}"
    assert os.access(tool, os.X_OK)
    assert os.access(env.scripts / "gamma", os.X_OK)
    assert (env.prefix / "share" / "gamma" / "notes.txt").read_text() == "notes\n"
    # The installed RECORD matches what is on disk, file by file.
    dist_info = env.purelib / "gamma-1.0.dist-info"
    assert (dist_info / "INSTALLER").read_text() == "wheelwise\n"
    for line in (dist_info / "RECORD").read_text().splitlines():
        name, digest, size = line.rsplit(",", 2)
        if not digest:
            continue
        data = (env.purelib / name).resolve().read_bytes()
        assert digest == f"sha256={_b64(data)}", name
        assert int(size) == len(data), name


def test_a_module_two_wheels_ship_is_the_first_ones_and_told(
    env: TargetEnvironment, tmp_path: Path, strategy: str
) -> None:
    first = simple_wheel(tmp_path / "a", "theta", "1.0")
    # Another distribution shipping the same module with other bytes: found from their
    # RECORDs before anything is placed, placed by the first only, whatever the workers.
    clash = make_wheel(
        tmp_path,
        "iota-1.0-py3-none-any.whl",
        extra_members={"theta/__init__.py": b"CLASH = True\n", "iota-1.0.dist-info/WHEEL": WHEEL},
        record=True,
    )
    others = [simple_wheel(tmp_path / "c", name, "1.0") for name in ("kappa", "lambda_")]
    told: list[str] = []
    install_wheels(env, [first, *others, clash], warn=told.append)
    assert told == [
        "theta 1.0 and iota 1.0 both install theta/__init__.py, with different contents; "
        "theta's were installed (pip and uv let either replace the other): install only "
        "one of them"
    ]
    assert (env.purelib / "theta" / "__init__.py").read_text() == "VERSION = '1.0'\n"


def test_tampered_wheel_rolls_back(env: TargetEnvironment, tmp_path: Path, strategy: str) -> None:
    before = tree_hash(env.prefix)
    good = gamma_wheel(tmp_path / "good")
    tampered = tampered_wheel(tmp_path / "tampered", "mu", "1.0")
    others = [simple_wheel(tmp_path / "c", name, "1.0") for name in ("xi", "omicron")]
    with pytest.raises(InstallError, match=r"mu/__init__\.py.*does not match its RECORD"):
        install_wheels(env, [good, *others, tampered])
    assert tree_hash(env.prefix) == before


# -- the forked workers themselves, with tasks that know where they run ---------------


def _forked_run(tmp_path: Path, child_action: str) -> tuple[Journal, BaseException | None]:
    """Two tasks, two workers, one task each, through a journal file in *tmp_path*:
    this process starts its task, the child then creates a file in ``site`` and does
    *child_action* with it, and only then does this process's task end (or, for
    "interrupt", raise KeyboardInterrupt)."""
    from wheelwise.install.journal import WriteAhead, header

    started, done = tmp_path / "parent-started", tmp_path / "child-done"
    site = tmp_path / "site"
    site.mkdir()
    parent = os.getpid()

    def wait_for(marker: Path) -> None:
        deadline = time.monotonic() + 20
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)

    def task(journal: Journal) -> None:
        if os.getpid() == parent:
            started.touch()
            wait_for(done)
            if child_action == "interrupt":  # Ctrl-C, as this process sees it
                raise KeyboardInterrupt
            return
        wait_for(started)  # so that this process has taken the other task
        journal.create(str(site / "made-by-child.txt"), executable=False).close()
        done.touch()
        if child_action == "fail":
            raise InstallError("boom in the child")
        if child_action == "die":
            os.kill(os.getpid(), signal.SIGKILL)

    wal = WriteAhead.begin(
        tmp_path / "journal", header("install", site, [site], site / ".wheelwise-backup-x")
    )
    journal = Journal(wal)
    try:
        parallel._forked([task, task], [1, 1], journal)
    except BaseException as exc:  # returned for the test to inspect
        return journal, exc
    return journal, None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers are POSIX only")
@pytest.mark.parametrize("action", ["succeed", "fail", "die", "interrupt"])
def test_forked_worker_journals_files_and_reports_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    from wheelwise.install.journal import replay

    monkeypatch.setattr(parallel, "cores", lambda: 2)
    journal, error = _forked_run(tmp_path, action)
    made = tmp_path / "site" / "made-by-child.txt"
    # Whatever happened next, the child wrote the file down in the journal file
    # before making it: a rollback removes it.
    assert journal.wal is not None
    journal.wal.close()
    assert made.exists()
    assert replay(tmp_path / "journal")[1] == []
    assert not made.exists()
    if action == "succeed":
        assert error is None
    elif action == "interrupt":  # raised once the child is reaped and its files known
        assert isinstance(error, KeyboardInterrupt)
    elif action == "fail":
        assert isinstance(error, InstallError)
        assert str(error) == "boom in the child"
    else:
        assert isinstance(error, InstallError)
        assert "worker process unpacking wheels died (killed by signal 9)" in str(error)


def test_tampered_large_member_is_caught_while_streaming(
    env: TargetEnvironment, tmp_path: Path
) -> None:
    """A member too large to read whole is hashed as it streams to disk; a mismatch
    found at its end still stops the install and rolls everything back."""
    before = tree_hash(env.prefix)
    good = gamma_wheel(tmp_path / "good")
    tampered = tmp_path / good.name
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(tampered, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "gamma/blob.bin":
                data = data[:-1] + bytes([data[-1] ^ 1])  # same size, one bit off
            target.writestr(info, data)
    with pytest.raises(InstallError, match=r"gamma/blob\.bin.*does not match its RECORD"):
        install_wheels(env, [tampered])
    assert tree_hash(env.prefix) == before


_INTERRUPTED_INSTALL = """
import pathlib, signal, sys, time
# Ctrl-C raises here even when the tests run where it is ignored (a background job).
signal.signal(signal.SIGINT, signal.default_int_handler)
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.install.transaction import install_wheels
from wheelwise.install import parallel, transaction
parallel.STRATEGY = sys.argv[1]
parallel.cores = lambda: 2
marker = pathlib.Path(sys.argv[2])
original = transaction.unpack_wheel

def slow(wheel, *args, **kwargs):
    original(wheel, *args, **kwargs)
    marker.touch()  # a wheel is in: time for Ctrl-C
    time.sleep(0.3)

transaction.unpack_wheel = slow
env = TargetEnvironment.from_python(sys.argv[3])
install_wheels(env, [pathlib.Path(p) for p in sys.argv[4:]])
"""


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_ctrl_c_while_unpacking_rolls_everything_back(
    env: TargetEnvironment, tmp_path: Path, strategy: str
) -> None:
    """SIGINT to the installing process (only to it: forked workers learn through
    the shared stop flag) stops every worker at its next file and undoes them all."""
    before = tree_hash(env.prefix)
    wheels = [simple_wheel(tmp_path / "w", f"pkg{i}", "1.0") for i in range(6)]
    marker = tmp_path / "one-wheel-in"
    process = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED_INSTALL, strategy, str(marker), str(env.python)]
        + [str(w) for w in wheels],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "KeyboardInterrupt" in stderr
    assert tree_hash(env.prefix) == before


def test_wheels_placed_side_by_side_place_their_files_in_one_thread_each(
    tmp_path: Path, strategy: str
) -> None:
    """Each worker has a core: a placement inside it uses no threads of its own; a
    wheel placed alone may."""
    from wheelwise.install import unpack

    def task(index: int) -> Callable[[Journal], None]:
        def run(journal: Journal) -> None:
            # Written to a file: a forked worker's memory does not come back.
            (tmp_path / f"task{index}").write_text(str(journal.placing_threads))

        return run

    journal = Journal()
    parallel.run_tasks([task(0), task(1), task(2)], [3, 2, 1], journal)
    seen = {(tmp_path / f"task{index}").read_text() for index in range(3)}
    assert seen == {"1" if strategy != "serial" else str(unpack._LINK_THREADS)}
    assert journal.placing_threads == unpack._LINK_THREADS


@pytest.mark.skipif(sys.platform != "linux", reason="forks only on Linux")
@pytest.mark.parametrize(
    ("machine", "busy", "forking", "children"),
    [(2, 1, True, 0), (2, 1, False, 0), (3, 1, True, 1), (4, 1, True, 2)],
)
def test_cores_a_head_start_keeps_busy_get_no_child(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    forks: list[int],
    machine: int,
    busy: int,
    forking: bool,
    children: int,
) -> None:
    """While a head start's worker keeps a core busy, the other wheels get a child
    for each core but that one and this process's; with none to spare, they are
    placed here one after another, from one thread each (no pool of threads either,
    where no child could be forked)."""
    monkeypatch.setattr(parallel, "cores", lambda: machine)
    monkeypatch.setattr(parallel, "can_fork", lambda: forking)

    def task(index: int) -> Callable[[Journal], None]:
        def run(journal: Journal) -> None:
            here = f"{os.getpid()} {threading.get_ident()} {journal.placing_threads}"
            (tmp_path / f"task{index}").write_text(here)

        return run

    journal = Journal()
    threads = journal.placing_threads
    parallel.run_tasks([task(i) for i in range(6)], [6, 5, 4, 3, 2, 1], journal, busy=busy)
    seen = [(tmp_path / f"task{i}").read_text().split() for i in range(6)]
    assert len(forks) == children
    assert {threads for _, _, threads in seen} == {"1"}
    if not children:
        assert {(pid, thread) for pid, thread, _ in seen} == {
            (str(os.getpid()), str(threading.get_ident()))
        }
    assert journal.placing_threads == threads
