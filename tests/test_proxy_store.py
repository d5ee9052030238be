"""The proxy's store of built files: built once under threads and processes,
bounded by least recent use, and whole or absent after any kill."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wheelwise
from wheelwise.proxy.store import BuildStore, StoredFile

SOURCE = str(Path(wheelwise.__file__).resolve().parents[1])
LARGE = 1 << 30

Make = Callable[[Path], Mapping[str, str]]


class Maker:
    """A ``make`` that writes *content* and counts its calls."""

    def __init__(self, content: bytes, *, pause: float = 0.0) -> None:
        self.content = content
        self.pause = pause
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, folder: Path) -> Mapping[str, str]:
        with self._lock:
            self.calls += 1
        time.sleep(self.pause)
        (folder / "demo-1.0-py3-none-any.whl").write_bytes(self.content)
        return {"filename": "demo-1.0-py3-none-any.whl"}


def _never(folder: Path) -> Mapping[str, str]:
    raise AssertionError("an existing entry was built again")


def _check(found: StoredFile, content: bytes) -> None:
    assert found.path.read_bytes() == content
    assert found.sha256 == hashlib.sha256(content).hexdigest()
    assert found.size == len(content)
    assert found.info["filename"] == "demo-1.0-py3-none-any.whl"


def _sidecar(found: StoredFile) -> Path:
    return found.path.with_name(found.path.name + ".json")


def _published(directory: Path) -> set[str]:
    """The names of the files in *directory*'s entries, each with its sidecar."""
    files = {path.name for path in (directory / "entries").glob("*/*")}
    return {name for name in files if not name.endswith(".json") and f"{name}.json" in files}


def _scratch(directory: Path) -> list[Path]:
    return list((directory / "tmp").iterdir())


def _build_at_once(store: BuildStore, make: Make, callers: int) -> list[StoredFile | Exception]:
    """What each of *callers* threads, let go together, gets from ``build("k", make)``."""
    start = threading.Barrier(callers)
    outcomes: list[StoredFile | Exception] = []

    def ask() -> None:
        start.wait()
        try:
            outcomes.append(store.build("k", make))
        except Exception as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_a_built_entry_is_got_back(tmp_path: Path) -> None:
    store = BuildStore(tmp_path, max_bytes=LARGE)
    assert store.get("k") is None
    built = store.build("k", Maker(b"wheel bytes"))
    _check(built, b"wheel bytes")
    assert store.get("k") == built
    assert store.build("k", _never) == built
    assert built.path.is_relative_to(tmp_path / "entries")
    assert _scratch(tmp_path) == []


def test_a_new_store_on_the_folder_reuses_its_entries(tmp_path: Path) -> None:
    built = BuildStore(tmp_path, max_bytes=LARGE).build("k", Maker(b"wheel bytes"))
    again = BuildStore(tmp_path, max_bytes=LARGE)
    assert again.get("k") == built
    assert again.build("k", _never) == built


@pytest.mark.parametrize("key", ["../../etc/passwd", "a/b\\c\x00d", "\udcff", "", "x" * 10_000])
def test_any_key_names_a_file_inside_the_store(tmp_path: Path, key: str) -> None:
    store = BuildStore(tmp_path / "store", max_bytes=LARGE)
    built = store.build(key, Maker(b"x"))
    assert built.path.parent.parent == tmp_path / "store" / "entries"
    assert store.get(key) == built
    assert store.get(key + "!") is None


def test_threads_asking_at_once_build_once(tmp_path: Path) -> None:
    store = BuildStore(tmp_path, max_bytes=LARGE)
    make = Maker(b"built once", pause=0.2)
    results = _build_at_once(store, make, 16)
    assert make.calls == 1
    assert len(results) == 16
    first = results[0]
    assert isinstance(first, StoredFile)
    assert all(found == first for found in results)
    _check(first, b"built once")


PROCESS_SCRIPT = """
import json, os, sys, time
from pathlib import Path
from wheelwise.proxy.store import BuildStore

folder, key, arrivals, me, everyone = sys.argv[1:]

def make(scratch):
    with open(os.path.join(arrivals, "..", "calls"), "a") as calls:
        calls.write("call\\n")
    # Publish only once every process has asked, so that they all wait for this one.
    while len(os.listdir(arrivals)) < int(everyone):
        time.sleep(0.01)
    time.sleep(0.2)
    (scratch / "demo-1.0-py3-none-any.whl").write_bytes(b"built once" * 1000)
    return {"filename": "demo-1.0-py3-none-any.whl"}

Path(arrivals, me).touch()
found = BuildStore(Path(folder), max_bytes=1 << 30).build(key, make)
print(json.dumps([str(found.path), found.sha256, found.size, dict(found.info)]))
"""


def test_processes_asking_at_once_build_once(tmp_path: Path) -> None:
    script = tmp_path / "ask.py"
    script.write_text(PROCESS_SCRIPT, encoding="utf-8")
    arrivals = tmp_path / "arrivals"
    arrivals.mkdir()
    env = {**os.environ, "PYTHONPATH": SOURCE}
    command = [sys.executable, str(script), str(tmp_path / "store"), "k", str(arrivals)]
    children = [
        subprocess.Popen([*command, str(n), "4"], env=env, stdout=subprocess.PIPE, text=True)
        for n in range(4)
    ]
    answers = [child.communicate(timeout=120)[0] for child in children]
    assert [child.returncode for child in children] == [0, 0, 0, 0]
    assert (tmp_path / "calls").read_text() == "call\n"
    assert len({answer.strip() for answer in answers}) == 1
    path, digest, size, info = json.loads(answers[0])
    content = b"built once" * 1000
    assert Path(path).read_bytes() == content
    assert (digest, size) == (hashlib.sha256(content).hexdigest(), len(content))
    assert info == {"filename": "demo-1.0-py3-none-any.whl"}


class Broken(Exception):
    pass


def test_a_failing_make_publishes_nothing(tmp_path: Path) -> None:
    store = BuildStore(tmp_path, max_bytes=LARGE)

    def make(folder: Path) -> Mapping[str, str]:
        (folder / "half.whl").write_bytes(b"half")
        raise Broken("no")

    with pytest.raises(Broken):
        store.build("k", make)
    assert store.get("k") is None
    assert _published(tmp_path) == set()
    assert _scratch(tmp_path) == []
    _check(store.build("k", Maker(b"whole")), b"whole")


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda folder: {}, ValueError),
        (lambda folder: [(folder / n).write_bytes(b"") for n in "ab"] and {}, ValueError),
        (lambda folder: (folder / "d").mkdir() or {}, ValueError),
        (lambda folder: (folder / "f").write_bytes(b"") or {"n": 1}, TypeError),
    ],
    ids=["no-file", "two-files", "a-folder", "non-string-info"],
)
def test_a_make_breaking_its_contract_publishes_nothing(
    tmp_path: Path, make: Make, error: type[Exception]
) -> None:
    store = BuildStore(tmp_path, max_bytes=LARGE)
    with pytest.raises(error):
        store.build("k", make)
    assert _published(tmp_path) == set()
    assert _scratch(tmp_path) == []


def test_callers_waiting_on_a_failed_build_build_it_themselves(tmp_path: Path) -> None:
    """A failure goes to the caller whose ``make`` failed; each waiting caller then
    builds in turn, so the first success ends the retries."""
    store = BuildStore(tmp_path, max_bytes=LARGE)
    calls: list[int] = []

    def make(folder: Path) -> Mapping[str, str]:
        calls.append(len(calls))
        if len(calls) == 1:
            time.sleep(0.2)  # let the others queue behind this build
            raise Broken("first try")
        (folder / "demo-1.0-py3-none-any.whl").write_bytes(b"second try")
        return {"filename": "demo-1.0-py3-none-any.whl"}

    outcomes = _build_at_once(store, make, 8)
    failures = [outcome for outcome in outcomes if isinstance(outcome, Broken)]
    built = [outcome for outcome in outcomes if isinstance(outcome, StoredFile)]
    assert len(failures) == 1
    assert len(built) == 7
    assert calls == [0, 1]
    for found in built:
        _check(found, b"second try")


def test_a_make_that_always_fails_runs_once_per_caller_one_at_a_time(tmp_path: Path) -> None:
    store = BuildStore(tmp_path, max_bytes=LARGE)
    running = 0
    most = 0
    calls = 0
    guard = threading.Lock()

    def make(folder: Path) -> Mapping[str, str]:
        nonlocal running, most, calls
        with guard:
            running += 1
            calls += 1
            most = max(most, running)
        time.sleep(0.02)
        with guard:
            running -= 1
        raise Broken("always")

    failures = [
        outcome for outcome in _build_at_once(store, make, 6) if isinstance(outcome, Broken)
    ]
    assert len(failures) == 6
    assert calls == 6
    assert most == 1
    assert _published(tmp_path) == set()


KILL_SCRIPT = """
import os, pathlib, signal, sys, time
from pathlib import Path
from wheelwise.proxy.store import BuildStore

folder, key, moment = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
renames = 0
real_replace = pathlib.Path.replace

def replace(self, target):
    # moment "before-N" / "after-N": killed around the store's N-th rename.
    global renames
    renames += 1
    if moment == f"before-{renames}":
        os.kill(os.getpid(), signal.SIGKILL)
    result = real_replace(self, target)
    if moment == f"after-{renames}":
        os.kill(os.getpid(), signal.SIGKILL)
    return result

pathlib.Path.replace = replace

def make(scratch):
    with open(scratch / "demo-1.0-py3-none-any.whl", "wb") as stream:
        stream.write(b"half" * 1000)
        stream.flush()
        if moment == "make":
            (folder.parent / "ready").touch()
            time.sleep(3600)
        stream.write(b"rest" * 1000)
    return {"filename": "demo-1.0-py3-none-any.whl"}

BuildStore(folder, max_bytes=1 << 30).build(key, make)
"""
WHOLE = b"half" * 1000 + b"rest" * 1000


def _builder(tmp_path: Path, moment: str) -> subprocess.Popen[bytes]:
    script = tmp_path / "killed.py"
    script.write_text(KILL_SCRIPT, encoding="utf-8")
    command = [sys.executable, str(script), str(tmp_path / "store"), "k", moment]
    return subprocess.Popen(command, env={**os.environ, "PYTHONPATH": SOURCE})


def test_a_builder_killed_inside_make_leaves_no_entry(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    child = _builder(tmp_path, "make")
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists():
        assert child.poll() is None, "the builder ended before it was killed"
        assert time.monotonic() < deadline, "the builder never started"
        time.sleep(0.01)
    # The builder is alive: a store opened now leaves its folder alone.
    store = BuildStore(store_dir, max_bytes=LARGE)
    assert len(_scratch(store_dir)) == 1
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    assert store.get("k") is None
    assert len(_scratch(store_dir)) == 1
    make = Maker(WHOLE)
    _check(store.build("k", make), WHOLE)
    assert make.calls == 1
    assert _scratch(store_dir) == []


@pytest.mark.parametrize("moment", ["before-1", "after-1", "before-2", "after-2"])
def test_a_builder_killed_while_publishing_leaves_a_whole_entry_or_none(
    tmp_path: Path, moment: str
) -> None:
    store_dir = tmp_path / "store"
    child = _builder(tmp_path, moment)
    assert child.wait(timeout=120) == -signal.SIGKILL
    store = BuildStore(store_dir, max_bytes=LARGE)
    assert _scratch(store_dir) == []
    files = {path.name for path in (store_dir / "entries").glob("*/*")}
    assert {name for name in files if not name.endswith(".json")} == _published(store_dir)
    found = store.get("k")
    survived = moment == "after-2"
    assert (found is not None) == survived
    make = Maker(WHOLE)
    _check(store.build("k", make), WHOLE)
    assert make.calls == (0 if survived else 1)


def test_the_least_recently_used_entry_is_evicted(tmp_path: Path) -> None:
    store = BuildStore(tmp_path, max_bytes=100)
    a = store.build("a", Maker(b"a" * 40))
    store.build("b", Maker(b"b" * 40))
    store.build("c", Maker(b"c" * 40))
    assert store.get("a") is None
    assert not a.path.exists()
    assert store.get("b") is not None
    assert store.get("c") is not None


def test_reading_an_entry_spares_it(tmp_path: Path) -> None:
    store = BuildStore(tmp_path, max_bytes=100)
    store.build("a", Maker(b"a" * 40))
    store.build("b", Maker(b"b" * 40))
    assert store.get("a") is not None
    store.build("c", Maker(b"c" * 40))
    assert store.get("b") is None
    assert store.get("a") is not None
    assert store.get("c") is not None


@pytest.mark.parametrize("read_a", [False, True])
def test_recency_outlives_a_restart(tmp_path: Path, read_a: bool) -> None:
    first = BuildStore(tmp_path, max_bytes=100)
    a = first.build("a", Maker(b"a" * 40))
    b = first.build("b", Maker(b"b" * 40))
    now = time.time()
    os.utime(_sidecar(a), (now - 1000, now - 1000))
    os.utime(_sidecar(b), (now - 500, now - 500))
    if read_a:
        # A read after a long while marks the entry used on the disk too.
        assert BuildStore(tmp_path, max_bytes=100).get("a") is not None
    BuildStore(tmp_path, max_bytes=100).build("c", Maker(b"c" * 40))
    later = BuildStore(tmp_path, max_bytes=100)
    assert (later.get("a") is not None) == read_a
    assert (later.get("b") is not None) != read_a
    assert later.get("c") is not None


def test_an_entry_larger_than_the_bound_is_kept_until_the_next_build(tmp_path: Path) -> None:
    store = BuildStore(tmp_path, max_bytes=100)
    store.build("a", Maker(b"a" * 10))
    big = store.build("big", Maker(b"B" * 150))
    _check(big, b"B" * 150)
    assert store.get("a") is None
    store.build("c", Maker(b"c" * 10))
    assert store.get("big") is None
    assert store.get("c") is not None


def test_eviction_spares_a_reader_that_opened_the_file(tmp_path: Path) -> None:
    store = BuildStore(tmp_path, max_bytes=100)
    a = store.build("a", Maker(b"a" * 60))
    with a.path.open("rb") as stream:
        store.build("b", Maker(b"b" * 60))
        assert store.get("a") is None
        assert stream.read() == b"a" * 60


def _damage_sidecar(text: str) -> Callable[[StoredFile], object]:
    return lambda found: _sidecar(found).write_text(text)


DAMAGES: dict[str, Callable[[StoredFile], object]] = {
    "sidecar-missing": lambda found: _sidecar(found).unlink(),
    "file-missing": lambda found: found.path.unlink(),
    "file-longer": lambda found: found.path.write_bytes(b"x" * 41),
    "file-shorter": lambda found: found.path.write_bytes(b"x" * 39),
    "bad-json": _damage_sidecar('{"sha256": '),
    "not-an-object": _damage_sidecar("[1, 2]"),
    "size-wrong": _damage_sidecar('{"sha256": "00", "size": 41, "info": {}}'),
    "size-a-bool": _damage_sidecar('{"sha256": "00", "size": true, "info": {}}'),
    "info-not-strings": _damage_sidecar('{"sha256": "00", "size": 40, "info": {"a": 1}}'),
    "not-utf8": lambda found: _sidecar(found).write_bytes(b"\xff\xfe"),
    "huge": _damage_sidecar(" " * (1 << 21) + '{"sha256": "00", "size": 40, "info": {}}'),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_entry_is_built_again(tmp_path: Path, damage: str) -> None:
    store = BuildStore(tmp_path, max_bytes=LARGE)
    DAMAGES[damage](store.build("k", Maker(b"k" * 40)))
    assert store.get("k") is None
    assert BuildStore(tmp_path, max_bytes=LARGE).get("k") is None
    make = Maker(b"new" * 20)
    _check(store.build("k", make), b"new" * 20)
    assert make.calls == 1
    assert store.get("k") is not None


@pytest.mark.slow
@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    sidecar=st.binary(max_size=300)
    | st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=12,
    ).map(lambda doc: json.dumps(doc).encode())
)
def test_any_sidecar_reads_as_an_entry_of_the_file_or_as_none(sidecar: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = BuildStore(Path(folder), max_bytes=LARGE)
        built = store.build("k", Maker(b"k" * 40))
        _sidecar(built).write_bytes(sidecar)
        found = store.get("k")
        assert found is None or (found.size == 40 and found.path == built.path)


OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["build", "get"]), st.integers(0, 5), st.integers(0, 60)),
    max_size=30,
)


@pytest.mark.slow
@settings(max_examples=50, deadline=None, derandomize=True)
@given(operations=OPERATIONS)
def test_any_sequence_keeps_the_bound_and_the_digests(
    operations: list[tuple[str, int, int]],
) -> None:
    bound = 100
    model: OrderedDict[str, int] = OrderedDict()  # what should be there, oldest use first
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        store = BuildStore(directory, max_bytes=bound)
        for number, (operation, which, size) in enumerate(operations):
            key = f"key-{which}"
            if operation == "get":
                found = store.get(key)
                assert (found is not None) == (key in model)
            else:
                make = Maker(bytes([number % 256]) * size)
                found = store.build(key, make)
                assert make.calls == (0 if key in model else 1)
                if key not in model:
                    model[key] = size
                    for old in list(model):
                        if sum(model.values()) <= bound:
                            break
                        if old != key:
                            del model[old]
            if found is not None:
                model.move_to_end(key)
                assert found.sha256 == hashlib.sha256(found.path.read_bytes()).hexdigest()
                assert found.size == model[key]
            on_disk = _published(directory)
            files = [path for path in (directory / "entries").glob("*/*") if path.suffix != ".json"]
            total = sum(path.stat().st_size for path in files)
            assert total <= bound or len(on_disk) == 1
            assert on_disk == {hashlib.sha256(k.encode()).hexdigest() for k in model}
