"""Interrupted installs: SIGKILL at many points, Ctrl-C, failures, scratch folders.

``killdriver.py`` runs the real CLI and signals it at the N-th file-system step it
takes inside the target environment; the next wheelwise run must leave the
environment exactly as it was before, or exactly as a complete run leaves it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from base64 import urlsafe_b64encode
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buildkit import backend_wheel, project, sdist
from indexkit import wheelwise_serve
from installkit import (
    LOCK_NAME,
    alpha_wheel,
    make_venv,
    nvidia_wheel,
    run_python,
    simple_wheel,
    tree_hash,
)
from wheelwise.cache.unpacked import UnpackedStore, verify_entry
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.install.transaction import install_wheels
from wheelwise.models.errors import InstallError

pytestmark = [
    pytest.mark.interp,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and venv layout"),
]

DRIVER = Path(__file__).with_name("killdriver.py")
LEFTOVERS = (".wheelwise-backup-", ".wheelwise-journal")


@dataclass
class Bench:
    """A venv whose pristine copy is put back before every run, and the runner."""

    tmp: Path
    venv: Path
    python: Path
    pristine: Path
    wheels: Path
    cache: Path
    temp: Path

    def reset(self) -> None:
        shutil.rmtree(self.venv)
        shutil.copytree(self.pristine, self.venv, symlinks=True)
        if self.cold_cache or self.pristine_cache is not None:
            shutil.rmtree(self.cache, ignore_errors=True)
        if self.pristine_cache is not None:
            shutil.copytree(self.pristine_cache, self.cache, symlinks=True)

    strategy: str = "serial"
    # An index on 127.0.0.1 (hashes: wheels go through the unpacked cache) instead
    # of --find-links; kills land in the cache's unpacked wheels too.
    index: str | None = None
    # Start every run with an empty cache (entries are published during the run).
    cold_cache: bool = False
    # Unpack wheels into the cache as they download (see killdriver.py).
    stream: bool = False
    # Unpack whole wheels into the cache before the transaction (see killdriver.py).
    ahead: bool = False
    # Builds: kills land in the cache's built wheels and scratch folders too.
    building: bool = False
    # The cache every run starts with (copied, modification times kept).
    pristine_cache: Path | None = None
    # More folders whose changes are kill points (a --target run's journal in the cache).
    extra_roots: tuple[Path, ...] = ()
    # A head start places the first wheel pinned while the rest resolves (killdriver.py).
    head_start: bool = False

    def env(self) -> dict[str, str]:
        full = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("WHEELWISE_") and k.lower() not in ("http_proxy", "https_proxy")
        }
        full.update(WHEELWISE_CACHE_DIR=str(self.cache), TMPDIR=str(self.temp), NO_PROXY="*")
        full.update(KILL_STRATEGY=self.strategy)
        if self.stream:
            full.update(KILL_STREAM_UNPACK_FROM="0")
        if self.ahead:
            full.update(KILL_UNPACK_AHEAD="1")
        if self.head_start:
            full.update(KILL_HEAD_START="1")
        roots = list(self.extra_roots)
        if self.index is not None or self.building:
            roots += [self.cache / "unpacked", self.cache / "scratch", self.cache / "built"]
        if roots:
            full.update(KILL_EXTRA_ROOTS=os.pathsep.join(map(str, roots)))
        return full

    def install_args(self, *requirements: str) -> list[str]:
        if self.index is not None:
            source = ["--index-url", self.index]
        else:
            source = ["--index-url", str(self.tmp / "empty"), "--find-links", str(self.wheels)]
        return ["install", "--python", str(self.python), *source, "-q", *requirements]

    def driven(
        self, args: Sequence[str], step: int, sig: str = "SIGKILL"
    ) -> subprocess.CompletedProcess[str]:
        count = self.tmp / "count"
        count.unlink(missing_ok=True)  # written only by a run that ends
        argv = [sys.executable, str(DRIVER), str(self.venv), str(step), sig, str(count), "--"]
        return subprocess.run(
            [*argv, *args], capture_output=True, text=True, env=self.env(), timeout=120
        )

    def count(self, args: Sequence[str]) -> int:
        result = self.driven(args, 0)
        assert result.returncode == 0, result.stderr
        return self.steps_taken()

    def steps_taken(self) -> int:
        """The steps the last driven run took, had it ended."""
        return int((self.tmp / "count").read_text())

    def wheelwise(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "wheelwise", *args],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=120,
        )


def _bench(tmp_path: Path, *, with_alpha: bool) -> Bench:
    wheels = tmp_path / "wheels"
    alpha_wheel(wheels, "1.0")
    alpha_wheel(wheels, "2.0")
    simple_wheel(wheels, "beta", "1.0")
    (tmp_path / "empty").mkdir()
    (tmp_path / "temp").mkdir()
    venv = tmp_path / "venv"
    python = make_venv(venv)
    if with_alpha:
        install_wheels(TargetEnvironment.from_python(python), [wheels / _name("alpha", "1.0")])
        # Bytecode of the old version, as a run of the target leaves it.
        assert run_python(python, "import alpha.old_only").returncode == 0
        (venv / LOCK_NAME).unlink(missing_ok=True)
    pristine = tmp_path / "pristine"
    shutil.copytree(venv, pristine, symlinks=True)
    cache = tmp_path / "cache"
    return Bench(tmp_path, venv, python, pristine, wheels, cache, tmp_path / "temp")


def _name(project: str, version: str) -> str:
    return f"{project}-{version}-py3-none-any.whl"


def _leftovers(root: Path) -> list[str]:
    return sorted(str(path) for path in root.rglob("*") if path.name.startswith(LEFTOVERS))


def _purelib(venv: Path) -> Path:
    return next(venv.glob("lib/python*/site-packages"))


def _check_unpacked(cache: Path, step: int, pristine: Path | None = None) -> None:
    """Every entry in the unpacked cache is whole (published whole, or not at all);
    or, where the run began with a changed one (*pristine*: the cache it began
    with), that one still as it was, entry and files."""
    store = UnpackedStore(cache / "unpacked", cache / "scratch")
    for folder in store.entries():
        entry = store.read_entry(folder)
        assert entry is not None, f"a half-published entry {folder} (step {step})"
        problems = verify_entry(entry)
        if problems and pristine is not None:
            before = pristine / folder.relative_to(cache)
            assert tree_hash(folder) == tree_hash(before), f"{folder} (step {step})"
            continue
        assert problems == [], f"{folder} (step {step})"


def _check_built(cache: Path, step: int) -> None:
    """Every built wheel kept in the cache is whole: at most one wheel per entry (none
    when killed before it was renamed in, beside a ``.part-`` file), that opens."""
    for entry in (cache / "built").glob("*/*"):
        wheels = [p for p in entry.iterdir() if p.name.endswith(".whl")]
        assert len(wheels) <= 1, f"{entry} (step {step})"
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as archive:
                assert archive.testzip() is None, f"{wheel} (step {step})"


def _check_distributions(venv: Path) -> None:
    """Every distribution importlib.metadata finds is named and has all its files
    (those its RECORD lists; an .egg-info folder's, those its installed-files.txt
    lists, which this Python's importlib.metadata may not read)."""
    purelib = _purelib(venv)
    for dist in importlib.metadata.distributions(path=[str(purelib)]):
        assert dist.metadata["Name"], f"a distribution without a name in {purelib}"
        files = dist.files
        if files is None:
            assert dist.read_text("installed-files.txt"), f"{dist.metadata['Name']}: no files"
            continue
        for file in files:
            assert Path(str(file.locate())).exists(), f"{file} of {dist.metadata['Name']}"
    for egg_info in purelib.glob("*.egg-info"):
        for line in (egg_info / "installed-files.txt").read_text().split():
            assert (egg_info / line).exists(), f"{line} of {egg_info.name}"


def _kill_and_recover(
    bench: Bench, args: list[str], points: int, seed: int, operation: str = "install"
) -> None:
    bench.reset()
    before = tree_hash(bench.venv)
    steps = bench.count(args)
    after = tree_hash(bench.venv)
    assert before != after
    # KILL_MATRIX_POINTS=all kills at every step (docs/reliability.md); CI samples.
    wanted = os.environ.get("KILL_MATRIX_POINTS", str(points))
    count = steps if wanted == "all" else min(int(wanted), steps)
    chosen = sorted(random.Random(seed).sample(range(1, steps + 1), count))
    journal = bench.venv / ".wheelwise-journal"
    recoveries_killed = recoveries_tried = recoveries_short = not_reached = made_again = 0
    for index, step in enumerate(chosen):
        bench.reset()
        killed = bench.driven(args, step)
        if killed.returncode == 0 and bench.strategy != "fork" and bench.steps_taken() < step:
            # A wheel unpacked as it downloads is written as the network delivers it:
            # this run took fewer steps than the counting run and ended before the one
            # to kill. It must have finished the install whole.
            assert tree_hash(bench.venv) == after, f"step {step} of {steps}"
            assert not journal.exists()
            not_reached += 1
            continue
        if bench.head_start and killed.returncode == 0:
            # The head start's worker was killed (or this process ended before the
            # step): rolled back, then installed the usual way, whole.
            assert tree_hash(bench.venv) == after, f"step {step} of {steps}"
            assert not journal.exists()
            made_again += 1
            continue
        if bench.strategy == "fork" and killed.returncode == 2:  # a worker was killed
            assert "a worker process unpacking wheels died" in killed.stderr
            assert tree_hash(bench.venv) == before
        elif bench.strategy == "fork" and killed.returncode == 0:
            # Forked workers take wheels from one queue, whoever is free: this run
            # made fewer steps in this process than the counting run, and ended
            # before the one to kill. It must have finished the install whole.
            assert tree_hash(bench.venv) == after, f"step {step} of {steps}"
            assert not journal.exists()
            continue
        else:
            assert killed.returncode == -signal.SIGKILL, (step, killed.stderr)
        assert list(bench.temp.iterdir()) == [], f"scratch left in the temp dir (step {step})"
        _check_unpacked(bench.cache, step, bench.pristine_cache)
        _check_built(bench.cache, step)
        pending = journal.exists()
        if index % 3 == 2 and pending:
            # A kill while recovering is recovered by the run after it.
            recoveries_tried += 1
            rng = random.Random(seed + step)
            cut_at = rng.randint(1, 16)
            cut = bench.driven(["recover", "--python", str(bench.python)], cut_at)
            recoveries_killed += cut.returncode == -signal.SIGKILL
            # A run killed near its end leaves a recovery of a few steps (the rest of
            # a backup to delete): one that ended before its step to kill.
            recoveries_short += cut.returncode == 0 and bench.steps_taken() < cut_at
            pending = journal.exists()
        if index % 2 == 0:
            result = bench.wheelwise("recover", "--python", str(bench.python))
            assert result.returncode == 0, result.stderr
            state = tree_hash(bench.venv)
            assert state in (before, after), f"step {step} of {steps}: {result.stdout}"
            if pending:
                assert f"an interrupted {operation} in" in result.stdout
            else:
                assert "nothing to recover in" in result.stdout
        else:
            result = bench.wheelwise(*args)
            assert result.returncode == 0, (step, result.stderr)
            # Killed once it was done (or finished by this run's recovery): the
            # uninstall asked again finds nothing to remove, and says so.
            if "finished an interrupted uninstall" in result.stderr:
                assert f"skipped {args[-1]}: it is not installed" in result.stderr
            assert tree_hash(bench.venv) == after, f"step {step} of {steps}"
            if pending:
                assert "wheelwise: warning: " in result.stderr
                assert f"an interrupted {operation} in" in result.stderr
                assert f"in {_purelib(bench.venv)}" in result.stderr
        assert _leftovers(bench.venv) == [], f"step {step} of {steps}"
        _check_distributions(bench.venv)
    # Every recovery meant to be killed was, unless it ended before the step.
    assert recoveries_killed + recoveries_short == recoveries_tried
    # Only the last few steps of a run can be out of reach.
    assert not_reached <= max(2, len(chosen) // 20), f"{not_reached} of {len(chosen)} not reached"
    report = os.environ.get("KILL_MATRIX_REPORT")  # docs/reliability.md's table
    if report:
        row = {"args": args[0], "strategy": bench.strategy, "steps": steps, "killed": len(chosen)}
        row |= {"not_reached": not_reached}
        row |= {"index": bench.index is not None, "cold": bench.cold_cache, "stream": bench.stream}
        row |= {"ahead": bench.ahead, "head_start": bench.head_start, "made_again": made_again}
        row |= {"building": bench.building}
        row |= {"recoveries_killed": recoveries_killed, "recoveries_tried": recoveries_tried}
        with open(report, "a") as out:
            out.write(json.dumps(row) + "\n")


@pytest.mark.slow
def test_killed_fresh_installs_are_recovered_by_the_next_run(tmp_path: Path) -> None:
    bench = _bench(tmp_path, with_alpha=False)
    _kill_and_recover(bench, bench.install_args("alpha==1.0", "beta"), points=12, seed=1)


@pytest.mark.slow
def test_killed_upgrades_are_recovered_by_the_next_run(tmp_path: Path) -> None:
    bench = _bench(tmp_path, with_alpha=True)
    _kill_and_recover(bench, bench.install_args("alpha==2.0"), points=12, seed=2)


@pytest.mark.slow
def test_killed_installs_sharing_a_file_are_recovered(tmp_path: Path) -> None:
    """Every nvidia-*-cu12 wheel ships the same empty nvidia/__init__.py: cublas is
    installed, and one run installs cudnn (sharing the installed file) and nccl
    (sharing cudnn's, left to it); then one uninstalls cublas, the file staying; then
    one installs a wheel with other bytes there, which replaces the installed file."""
    bench = _bench(tmp_path, with_alpha=False)
    for name in ("nvidia_cublas_cu12", "nvidia_cudnn_cu12", "nvidia_nccl_cu12"):
        nvidia_wheel(bench.wheels, name, "12.4")
    env = TargetEnvironment.from_python(bench.python)
    install_wheels(env, [bench.wheels / _name("nvidia_cublas_cu12", "12.4")])
    (bench.venv / LOCK_NAME).unlink(missing_ok=True)
    shutil.rmtree(bench.pristine)
    shutil.copytree(bench.venv, bench.pristine, symlinks=True)
    args = bench.install_args("nvidia-cudnn-cu12", "nvidia-nccl-cu12")
    _kill_and_recover(bench, args, points=12, seed=14)
    # Then cudnn and nccl installed too, and cublas uninstalled: the shared file stays.
    install_wheels(
        env, [bench.wheels / _name(n, "12.4") for n in ("nvidia_cudnn_cu12", "nvidia_nccl_cu12")]
    )
    (bench.venv / LOCK_NAME).unlink(missing_ok=True)
    shutil.rmtree(bench.pristine)
    shutil.copytree(bench.venv, bench.pristine, symlinks=True)
    uninstall = ["uninstall", "-y", "--python", str(bench.python), "nvidia-cublas-cu12"]
    _kill_and_recover(bench, uninstall, points=4, seed=15, operation="uninstall")
    nvidia_wheel(bench.wheels, "nvidia_other_x", "1.0", b"# other\n")
    _kill_and_recover(bench, bench.install_args("nvidia-other-x"), points=4, seed=18)


def test_killed_replacements_of_an_egg_info_install_are_recovered(tmp_path: Path) -> None:
    """gamma 1.0 installed by an old ``setup.py install`` (an .egg-info folder with an
    installed-files.txt, no RECORD): one run replaces it with the wheel of 1.1, and
    one uninstalls it."""
    bench = _bench(tmp_path, with_alpha=False)
    site = _purelib(bench.venv)
    (site / "gamma" / "__pycache__").mkdir(parents=True)
    for module in ("__init__", "util"):
        (site / "gamma" / f"{module}.py").write_text(f"{module.upper()} = 1\n")
        (site / "gamma" / "__pycache__" / f"{module}.cpython-311.pyc").write_bytes(b"\0" * 16)
    egg_info = site / "gamma-1.0-py3.11.egg-info"
    egg_info.mkdir()
    (egg_info / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: gamma\nVersion: 1.0\n")
    listed = ["../gamma/__init__.py", "../gamma/util.py", "PKG-INFO", "installed-files.txt"]
    (egg_info / "installed-files.txt").write_text("\n".join(listed) + "\n")
    shutil.rmtree(bench.pristine)
    shutil.copytree(bench.venv, bench.pristine, symlinks=True)
    simple_wheel(bench.wheels, "gamma", "1.1")
    _kill_and_recover(bench, bench.install_args("gamma==1.1"), points=6, seed=16)
    uninstall = ["uninstall", "-y", "--python", str(bench.python), "gamma"]
    _kill_and_recover(bench, uninstall, points=4, seed=17, operation="uninstall")


@pytest.mark.slow
def test_killed_forked_installs_are_recovered_by_the_next_run(tmp_path: Path) -> None:
    """Wheels unpacked by forked workers: the parent or a worker is killed."""
    bench = _bench(tmp_path, with_alpha=True)
    bench.strategy = "fork"
    _kill_and_recover(bench, bench.install_args("alpha==2.0", "beta"), points=4, seed=3)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("cold", "stream", "ahead"),
    [(True, False, False), (True, True, False), (True, False, True), (False, False, False)],
    ids=["publishing", "streaming", "ahead", "linking"],
)
def test_killed_installs_through_the_unpacked_cache_are_recovered(
    tmp_path: Path, cold: bool, stream: bool, ahead: bool
) -> None:
    """Wheels from an index with hashes: unpacked into the cache (cold: killed while
    an entry is built or published, too; streaming: while it is unpacked as the
    wheel downloads; ahead: while the background thread unpacks it before the
    transaction), then hard-linked into the environment."""
    bench = _bench(tmp_path, with_alpha=True)
    with wheelwise_serve(bench.wheels) as base:
        bench.index = f"{base}/simple/"
        bench.cold_cache = cold
        bench.stream = stream
        bench.ahead = ahead
        args = bench.install_args("alpha==2.0", "beta")
        if not cold:  # every entry there before the counting run
            bench.reset()
            assert bench.wheelwise(*args).returncode == 0
        seed = (7 if stream else 8 if ahead else 5) if cold else 6
        _kill_and_recover(bench, args, points=8, seed=seed)
    assert list((bench.cache / "unpacked").rglob("entry.json"))
    # Streamed wheels were never written whole; the others are kept as files too.
    assert bool(list(bench.cache.rglob("*.whl"))) == (not stream)


@pytest.mark.slow
def test_killed_installs_with_a_head_start_are_recovered(tmp_path: Path) -> None:
    """beta (not installed, its entry in the cache) placed ahead by the head start's
    worker while alpha resolves and is upgraded: this process or the worker killed
    at any step (the worker dies with this process)."""
    bench = _bench(tmp_path, with_alpha=True)
    with wheelwise_serve(bench.wheels) as base:
        bench.index = f"{base}/simple/"
        bench.head_start = True
        args = bench.install_args("alpha==2.0", "beta")
        bench.reset()
        assert bench.wheelwise(*args).returncode == 0  # every entry there
        bench.pristine_cache = tmp_path / "pristine-cache"
        shutil.copytree(bench.cache, bench.pristine_cache, symlinks=True)
        _kill_and_recover(bench, args, points=8, seed=10)


@pytest.mark.slow
def test_killed_installs_that_find_a_changed_entry_are_recovered(tmp_path: Path) -> None:
    """Every run starts with alpha's cache entry changed (a file edited in place
    through a hard link): killed while the entry is removed, the wheel unpacked and
    published again, or while linking."""
    bench = _bench(tmp_path, with_alpha=True)
    with wheelwise_serve(bench.wheels) as base:
        bench.index = f"{base}/simple/"
        args = bench.install_args("alpha==2.0", "beta")
        bench.reset()
        assert bench.wheelwise(*args).returncode == 0
        [edited] = (bench.cache / "unpacked").rglob("alpha/__init__.py")
        with edited.open("a") as stream:
            stream.write("# edited in place\n")
        bench.pristine_cache = tmp_path / "pristine-cache"
        shutil.copytree(bench.cache, bench.pristine_cache, symlinks=True)
        _kill_and_recover(bench, args, points=8, seed=9)
    [fresh] = (bench.cache / "unpacked").rglob("alpha/__init__.py")
    assert b"# edited in place" not in fresh.read_bytes()


@pytest.mark.slow
def test_killed_builds_are_recovered(tmp_path: Path) -> None:
    """A project folder and an sdist, each built in an isolated environment whose
    build requirement wheelwise installs: killed while an sdist is unpacked, a build
    environment is made or filled, a built wheel is kept in the cache, or the
    install itself; no half-kept wheel, no leftover in the temporary folder."""
    bench = _bench(tmp_path, with_alpha=False)
    backend_wheel(bench.wheels)
    folder = project(tmp_path / "proj", "proj", "1.0", dependencies=["beta"])
    archive = sdist(
        project(tmp_path / "srcpkg", "srcpkg", "2.0"), tmp_path / "dist", "srcpkg", "2.0"
    )
    bench.building = True
    bench.cold_cache = True  # every run builds both
    args = bench.install_args(str(folder), str(archive))
    _kill_and_recover(bench, args, points=8, seed=8)


@pytest.mark.slow
def test_killed_target_installs_are_recovered_by_the_next_install(tmp_path: Path) -> None:
    """``--target DIR`` keeps its lock and journal in the cache, not among the
    packages: a kill at any step (the journal's writes in the cache included) is
    undone or finished by the next install into DIR, which says so, and leaves DIR
    as a complete run does, with nothing of wheelwise's own in it."""
    bench = _bench(tmp_path, with_alpha=False)
    target = bench.venv / "target"  # inside the folder the driver watches and resets
    bench.extra_roots = (bench.cache / "environments",)
    bench.cold_cache = True  # every run makes the journals' folder: the same steps
    args = [*bench.install_args("alpha==1.0", "beta"), "--target", str(target)]
    bench.reset()
    steps = bench.count(args)
    after = tree_hash(bench.venv)
    wanted = os.environ.get("KILL_MATRIX_POINTS", "8")
    count = steps if wanted == "all" else min(int(wanted), steps)
    for step in sorted(random.Random(9).sample(range(1, steps + 1), count)):
        bench.reset()
        killed = bench.driven(args, step)
        assert killed.returncode == -signal.SIGKILL, (step, killed.stderr)
        assert not (target / LOCK_NAME).exists()
        pending = list((bench.cache / "environments").glob("*.journal"))
        result = bench.wheelwise(*args)
        assert result.returncode == 0, (step, result.stderr)
        assert tree_hash(bench.venv) == after, f"step {step} of {steps}"
        if pending:
            assert "an interrupted install in" in result.stderr, step
        assert not [path.name for path in target.iterdir() if path.name.startswith(".")]
        assert not list((bench.cache / "environments").glob("*.journal"))
    report = os.environ.get("KILL_MATRIX_REPORT")  # docs/reliability.md's table
    if report:
        with open(report, "a") as out:
            out.write(json.dumps({"args": "install --target", "steps": steps, "killed": count}))
            out.write("\n")


def test_recover_target_replays_the_journal_of_a_killed_target_install(tmp_path: Path) -> None:
    """``wheelwise recover --target DIR`` finds the journal a killed ``--target``
    install left in the cache, and leaves DIR as before or as after that install."""
    bench = _bench(tmp_path, with_alpha=False)
    target = bench.venv / "target"
    bench.extra_roots = (bench.cache / "environments",)
    bench.cold_cache = True
    args = [*bench.install_args("alpha==1.0", "beta"), "--target", str(target)]
    bench.reset()
    target.mkdir()  # made before the transaction starts, and left as pip leaves it
    before = tree_hash(bench.venv)
    steps = bench.count(args)
    after = tree_hash(bench.venv)
    journals = bench.cache / "environments"
    for step in range(steps // 2, steps):  # the first kill that leaves a journal
        bench.reset()
        killed = bench.driven(args, step)
        assert killed.returncode == -signal.SIGKILL, (step, killed.stderr)
        if list(journals.glob("*.journal")):
            break
    else:
        pytest.fail("no kill left a journal")
    listed = bench.wheelwise("list", "--python", str(bench.python), "--target", str(target))
    assert listed.stderr.strip().endswith(
        f"run: wheelwise recover --python {bench.python} --target {target}"
    ), listed.stderr
    result = bench.wheelwise("recover", "--python", str(bench.python), "--target", str(target))
    assert result.returncode == 0, result.stderr
    assert "an interrupted install in" in result.stdout, result.stdout
    assert tree_hash(bench.venv) in (before, after), f"step {step} of {steps}"
    assert not list(journals.glob("*.journal"))
    again = bench.wheelwise("recover", "--python", str(bench.python), "--target", str(target))
    assert again.stdout.startswith(f"nothing to recover in {target}"), again.stdout


@pytest.mark.slow
def test_killed_uninstalls_are_recovered_by_the_next_run(tmp_path: Path) -> None:
    bench = _bench(tmp_path, with_alpha=True)
    args = ["uninstall", "-y", "--python", str(bench.python), "alpha"]
    _kill_and_recover(bench, args, points=4, seed=4, operation="uninstall")


def test_recover_with_nothing_to_do(tmp_path: Path) -> None:
    bench = _bench(tmp_path, with_alpha=False)
    before = tree_hash(bench.venv)
    result = bench.wheelwise("recover", "--python", str(bench.python))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("nothing to recover in ")
    assert tree_hash(bench.venv) == before


def test_ctrl_c_during_an_upgrade_restores_and_exits_130(tmp_path: Path) -> None:
    bench = _bench(tmp_path, with_alpha=True)
    args = bench.install_args("alpha==2.0")
    steps = bench.count(args)
    bench.reset()
    before = tree_hash(bench.venv)
    result = bench.driven(args, steps // 2, "SIGINT")
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"wheelwise: interrupted; {bench.python}'s environment was left as it was"
    )
    assert "Aborted" not in result.stderr
    assert tree_hash(bench.venv) == before
    assert _leftovers(bench.venv) == []


def test_a_failed_install_leaves_site_packages_byte_identical(tmp_path: Path) -> None:
    """Nothing at all is left in site-packages, not even a lock file."""
    env = TargetEnvironment.from_python(make_venv(tmp_path / "venv"))
    good = simple_wheel(tmp_path / "good", "beta", "1.0")
    members = _members(good)
    members["beta/__init__.py"] += b"# tampered\n"
    tampered = _wheel_of(members, tmp_path / "bad" / good.name)
    before = sorted(os.listdir(env.purelib)), tree_hash(env.purelib), tree_hash(env.scripts)
    whole_before = _files(env.prefix)
    with pytest.raises(InstallError, match="does not match its RECORD"):
        install_wheels(env, [tampered])
    assert not (env.purelib / LOCK_NAME).exists()
    after = sorted(os.listdir(env.purelib)), tree_hash(env.purelib), tree_hash(env.scripts)
    assert after == before
    # The whole environment: the one thing a run leaves is its empty lock file in the
    # root, kept (as uv keeps its .lock) because removing a lock file another run may
    # wait on would let two runs hold the lock (docs/reliability.md).
    added = set(_files(env.prefix).items()) - set(whole_before.items())
    assert added == {(LOCK_NAME, hashlib.sha256(b"").hexdigest())}
    assert set(whole_before.items()) <= set(_files(env.prefix).items())


def test_a_failed_upgrade_puts_the_old_folder_back_whole(tmp_path: Path) -> None:
    """beta 1.0's folder is moved out in one rename, 2.0's files go into a new
    folder at its place, one of them fails its RECORD check: the new folder goes
    and the old one comes back as it was."""
    env = TargetEnvironment.from_python(make_venv(tmp_path / "venv"))
    install_wheels(env, [simple_wheel(tmp_path / "one", "beta", "1.0")])
    newer = simple_wheel(tmp_path / "two", "beta", "2.0")
    members = {"beta/aaa.py": b"A = 1\n", **_members(newer)}  # placed before the tampered one
    record = members["beta-2.0.dist-info/RECORD"].decode()
    digest = hashlib.sha256(b"A = 1\n").digest()
    row = f"beta/aaa.py,sha256={urlsafe_b64encode(digest).decode().rstrip('=')},6\n"
    members["beta-2.0.dist-info/RECORD"] = (row + record).encode()
    members["beta/__init__.py"] += b"# tampered\n"
    tampered = _wheel_of(members, tmp_path / "bad" / newer.name)
    before = tree_hash(env.purelib)
    renamed: list[str] = []
    rename = os.rename

    def noted(source: str, target: str) -> None:
        renamed.append(str(source))
        rename(source, target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "rename", noted)
        with pytest.raises(InstallError, match="does not match its RECORD"):
            install_wheels(env, [tampered])
    assert str(env.purelib / "beta") in renamed  # out whole, and back
    assert tree_hash(env.purelib) == before
    assert (env.purelib / "beta" / "__init__.py").read_text() == "VERSION = '1.0'\n"


def _members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as source:
        return {info.filename: source.read(info) for info in source.infolist()}


def _wheel_of(members: dict[str, bytes], path: Path) -> Path:
    """A wheel at *path* holding *members*, in that order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as target:
        for name, data in members.items():
            target.writestr(name, data)
    return path


def _files(root: Path) -> dict[str, str]:
    """Every file under *root* (not following links) by path, with its sha256."""
    found = {}
    for current, _, names in os.walk(root):
        for name in names:
            path = Path(current, name)
            if not path.is_symlink():
                found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def test_the_lock_and_journal_go_to_the_cache_when_the_root_is_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wheelwise.install import journal

    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(tmp_path / "cache"))
    env = TargetEnvironment.from_python(make_venv(tmp_path / "venv"))
    monkeypatch.setattr(journal, "_writable", lambda folder: False)
    before = sorted(os.listdir(env.prefix))
    install_wheels(env, [simple_wheel(tmp_path / "wheels", "beta", "1.0")])
    assert sorted(os.listdir(env.prefix)) == before
    assert not (env.purelib / LOCK_NAME).exists()
    paths = journal.state_paths(env.prefix)
    assert paths.lock.parent == tmp_path / "cache" / "environments"
    assert paths.lock.exists()
    assert not paths.journal.exists()


def test_no_writable_place_for_the_lock_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wheelwise.install import journal

    env = TargetEnvironment.from_python(make_venv(tmp_path / "venv"))
    (tmp_path / "file").write_bytes(b"")
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(tmp_path / "file" / "cache"))
    monkeypatch.setattr(journal, "_writable", lambda folder: False)
    before = tree_hash(env.prefix)
    with pytest.raises(InstallError, match=r"cannot take the lock of .*nor the wheelwise cache"):
        install_wheels(env, [simple_wheel(tmp_path / "wheels", "beta", "1.0")])
    assert tree_hash(env.prefix) == before


def test_a_journal_naming_paths_outside_the_environment_touches_none(tmp_path: Path) -> None:
    from wheelwise.install.transaction import recover

    env = TargetEnvironment.from_python(make_venv(tmp_path / "venv"))
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep")
    header = {"operation": "install", "pid": 1, "started": "then", "target": str(env.purelib)}
    header |= {"roots": [str(env.purelib)], "backup": str(tmp_path)}
    lines = [header, ["file", str(outside)], ["file", f"{env.purelib}/../../../../outside.txt"]]
    journal = env.prefix / ".wheelwise-journal"
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (found,) = recover(env)
    assert found.describe().startswith(f"rolled back an interrupted install in {env.purelib}")
    assert outside.read_bytes() == b"keep"
    assert tmp_path.is_dir()
    assert not journal.exists()


@pytest.mark.parametrize("content", [b"", b"garbage\x00\xff\n", b'{"version": 1}\n["commit"]\n'])
def test_a_journal_without_a_header_is_said_to_be_one(tmp_path: Path, content: bytes) -> None:
    """No transaction writes such a journal (its header goes in whole, by rename):
    recovering says so, not "rolled back", and touches nothing else."""
    from wheelwise.install.transaction import recover

    env = TargetEnvironment.from_python(make_venv(tmp_path / "venv"))
    before = tree_hash(env.purelib)
    journal = env.prefix / ".wheelwise-journal"
    journal.write_bytes(content)
    (found,) = recover(env)
    assert found.describe() == f"removed {journal}: not a journal wheelwise wrote, nothing to undo"
    assert not journal.exists()
    assert tree_hash(env.purelib) == before


def test_a_file_older_than_the_journal_is_never_removed_as_created(tmp_path: Path) -> None:
    """A kill between the intent to create a file and finding that it already
    exists leaves an intent without its ``skip``: the file predates the run."""
    from wheelwise.install.transaction import recover

    env = TargetEnvironment.from_python(make_venv(tmp_path / "venv"))
    old, new = env.purelib / "clash.py", env.purelib / "made.py"
    old.write_bytes(b"someone else's")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    # A change time cannot be set back: the run starts 10 s from now instead, and
    # the file it made is dated then.
    started = time.time_ns() + 10_000_000_000
    new.write_bytes(b"ours")
    os.utime(new, ns=(started, started))
    header = {"operation": "install", "pid": 1, "started": "then", "target": str(env.purelib)}
    header |= {"roots": [str(env.purelib)], "backup": str(tmp_path), "started_ns": started}
    lines = [header, ["file", str(new)], ["file", str(old)]]
    (env.prefix / ".wheelwise-journal").write_text("".join(json.dumps(x) + "\n" for x in lines))
    recover(env)
    assert old.read_bytes() == b"someone else's"
    assert not new.exists()


def test_list_warns_of_an_interrupted_run_until_it_is_recovered(tmp_path: Path) -> None:
    from wheelwise.install.transaction import recover

    python = make_venv(tmp_path / "venv")
    env = TargetEnvironment.from_python(python)
    header = {"operation": "install", "pid": 1, "started": "then", "target": str(env.purelib)}
    header |= {"roots": [str(env.purelib)], "backup": str(tmp_path)}
    (env.prefix / ".wheelwise-journal").write_text(json.dumps(header) + "\n")
    argv = [sys.executable, "-m", "wheelwise", "list", "--python", str(python)]
    listed = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert listed.returncode == 0, listed.stderr
    [line] = listed.stderr.splitlines()
    assert line.startswith("wheelwise: warning: an install or uninstall in ")
    assert line.endswith(f"run: wheelwise recover --python {python}")
    recover(env)
    again = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert again.stderr == ""


def test_pruning_goes_on_past_folders_a_killed_run_already_removed(tmp_path: Path) -> None:
    """A run killed while pruning has removed the deepest folders only: replaying
    goes on up to the root (found by killing an uninstall at every step)."""
    from wheelwise.install.journal import prune

    root = tmp_path / "venv"
    (root / "share" / "alpha").mkdir(parents=True)
    (root / "share" / "alpha").rmdir()  # the killed run got this far
    prune([str(root / "share" / "alpha" / "readme.txt")], [str(root)])
    assert list(root.iterdir()) == []


def test_a_cache_dir_that_is_a_file_does_not_stop_installs(tmp_path: Path) -> None:
    """The cache is only a fallback for the lock and journal: a WHEELWISE_CACHE_DIR
    that names a file is no journal to recover, and installs go on without it."""
    bench = _bench(tmp_path, with_alpha=False)
    not_a_folder = tmp_path / "cache-file"
    not_a_folder.write_text("")
    env = {**bench.env(), "WHEELWISE_CACHE_DIR": str(not_a_folder)}
    result = subprocess.run(
        [sys.executable, "-m", "wheelwise", *bench.install_args("alpha==1.0")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert run_python(bench.python, "import alpha; print(alpha.VERSION)").stdout == "1.0\n"


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.slow
def test_scratch_folders_live_in_the_cache_and_stale_ones_are_cleared(tmp_path: Path) -> None:
    bench = _bench(tmp_path, with_alpha=False)
    args = bench.install_args("alpha==1.0", "beta")
    steps = bench.count(args)
    bench.reset()
    killed = bench.driven(args, steps // 2)
    assert killed.returncode == -signal.SIGKILL
    assert list(bench.temp.iterdir()) == []
    scratch = bench.cache / "scratch"
    left = sorted(path.name for path in scratch.iterdir())
    assert left, "the killed run's scratch folders should be in the cache"
    host = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
    dead = _dead_pid()
    stale = scratch / f"download-{dead}-{host}-abc"
    stale.mkdir()
    (stale / "half.whl").write_bytes(b"x")
    live = scratch / f"download-{os.getpid()}-{host}-def"
    live.mkdir()
    elsewhere = scratch / f"wheels-{dead}-{'0' * 8 if host != '0' * 8 else '1' * 8}-ghi"
    elsewhere.mkdir()  # another host's: its pid means nothing here
    result = bench.wheelwise(*args)
    assert result.returncode == 0, result.stderr
    remaining = sorted(path.name for path in scratch.iterdir())
    assert remaining == sorted([live.name, elsewhere.name])
    assert list(bench.temp.iterdir()) == []


# Two levels deep is as deep as a journal's header and records go.
_SCALAR = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_FLAT = _SCALAR | st.lists(_SCALAR, max_size=3) | st.dictionaries(st.text(max_size=4), _SCALAR)
_JSON = _FLAT | st.lists(_FLAT, max_size=3) | st.dictionaries(st.text(max_size=4), _FLAT)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=40),
            _JSON.map(lambda value: json.dumps(value).encode()),
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_reading_any_journal_never_fails(pieces: list[bytes], cut: bool) -> None:
    """A journal is read whole or in part (a kill may cut its last line): only
    a header object and lists of strings come out, and nothing raises."""
    from wheelwise.install import journal

    data = b"\n".join(pieces) + (b"" if cut else b"\n")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "j"
        path.write_bytes(data)
        read = journal._read(path)
    assert read is not None
    header, records = read
    assert isinstance(header, dict)
    assert all(record and all(isinstance(v, str) for v in record) for record in records)


# Paths of the parts that decide containment: names, ".", "..", doubled slashes.
_PATH = st.lists(st.sampled_from(["a", "b", "ab", "/", ".", ".."]), max_size=8).map("".join)


def _parts(path: str) -> tuple[bool, list[str]]:
    normal = os.path.normpath(path)
    return os.path.isabs(normal), [p for p in normal.split(os.sep) if p not in ("", ".")]


@pytest.mark.skipif(os.name == "nt", reason="POSIX paths")
@settings(max_examples=2000, deadline=None)
@given(_PATH.filter(bool), _PATH.filter(bool))
def test_a_path_is_inside_a_root_only_when_the_roots_parts_begin_it(path: str, root: str) -> None:
    """What journal replay and uninstall rely on: never inside when a part differs,
    and inside wherever os.path.commonpath says so."""
    from wheelwise.environment.dist_files import is_inside

    inside = is_inside(path, root)
    (absolute, parts), (root_absolute, root_parts) = _parts(path), _parts(root)
    if inside:
        assert absolute == root_absolute
        assert parts[: len(root_parts)] == root_parts
    base = os.path.normpath(root)
    try:
        common = os.path.commonpath([os.path.normpath(path), base]) == base
    except ValueError:
        common = False
    if common:
        assert inside


def test_pruning_removes_the_emptied_folders_once_each_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    from wheelwise.install import journal

    root = tmp_path / "site"
    for folder in ("pkg/sub/deep", "pkg/other", "kept/sub"):
        (root / folder).mkdir(parents=True)
    (root / "kept" / "stays.txt").write_text("")
    originals = [
        str(root / "pkg" / "sub" / "deep" / "a.py"),
        str(root / "pkg" / "sub" / "b.py"),
        str(root / "pkg" / "other" / "c.py"),
        str(root / "kept" / "sub" / "d.py"),
        str(root / "kept" / "e.py"),
    ]
    calls: list[str] = []
    rmdir = os.rmdir

    def counted(path: str) -> None:
        calls.append(path)
        rmdir(path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "rmdir", counted)
        journal.prune(originals, [str(root)])
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "kept",
        "kept/stays.txt",
    ]
    assert len(calls) == len(set(calls))  # each folder tried once
    assert str(root) not in calls  # never the root itself


def test_restoring_a_whole_folder_replaces_an_empty_one_made_at_its_place(
    tmp_path: Path,
) -> None:
    """A rollback finding an empty folder where a whole folder was moved out from
    (made again by another run meanwhile, say) puts the old one back."""
    from wheelwise.install import journal

    original, backup = tmp_path / "site" / "beta", tmp_path / "backup" / "0"
    (backup / "sub").mkdir(parents=True)
    (backup / "sub" / "mod.py").write_text("old\n")
    original.mkdir(parents=True)
    journal._restore(str(original), str(backup), moved=True)
    assert (original / "sub" / "mod.py").read_text() == "old\n"
    assert not backup.exists()
