"""Small wheels unpacked into the cache while downloads go on (`UnpackAhead`).

Real wheels, a real unpacked store on disk, and, for the whole install, a real index
on 127.0.0.1 and a real venv. The one seam is a store that holds its first publish
until told, to see what the background thread does with what is queued meanwhile.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from indexkit import uvicorn_thread
from installkit import make_venv
from wheelfactory import make_wheel
from wheelwise.cache.unpacked import UnpackedStore, UnpackedWheel, verify_entry
from wheelwise.fetch.verify import VerifiedWheel, verify_wheel
from wheelwise.install import fetch as fetch_module
from wheelwise.install import from_lock as from_lock_module
from wheelwise.install import transaction as transaction_module
from wheelwise.install.fetch import UnpackAhead
from wheelwise.install.from_lock import run_lock_install
from wheelwise.install.plan import InstallOptions, InstallOutcome, run_install
from wheelwise.lock import Package, PyLock, Wheel, read_pylock, write_pylock
from wheelwise.models.errors import InstallError
from wheelwise.publish.server import create_app
from wheelwise.resolve.lookahead import SMALL_WHEEL
from wheelwise.wheels.archive import InMemoryWheel

pytestmark = pytest.mark.usefixtures("no_proxies")

SLOW = "slow-1.0-py3-none-any.whl"


def _wheel(folder: Path, name: str, files: int = 1, *, bad: bool = False) -> InMemoryWheel:
    """A wheel *name* 1.0 with *files* modules, held in memory; *bad*: one member's
    bytes differ from its RECORD row."""
    members = {f"{name}/m{i}.py": f"VALUE = {i}\n".encode() * (i + 1) for i in range(files)}
    path = make_wheel(folder, f"{name}-1.0-py3-none-any.whl", extra_members=members, record=True)
    if bad:
        with zipfile.ZipFile(path) as archive:
            contents = {info: archive.read(info) for info in archive.infolist()}
        with zipfile.ZipFile(path, "w") as archive:
            for info, data in contents.items():
                if info.filename == f"{name}/m0.py":
                    data = b"VALUE = 'changed'\n"
                archive.writestr(info, data)
    return InMemoryWheel(path.name, path.read_bytes())


def _hashes(wheel: InMemoryWheel) -> dict[str, str]:
    return {"sha256": hashlib.sha256(wheel.data).hexdigest()}


def _store(tmp_path: Path) -> UnpackedStore:
    return UnpackedStore(tmp_path / "cache" / "unpacked", tmp_path / "cache" / "scratch")


def _leftovers(tmp_path: Path) -> list[Path]:
    scratch = tmp_path / "cache" / "scratch"
    return sorted(scratch.iterdir()) if scratch.exists() else []


def _ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "unpack-ahead"]


def _drained(ahead: UnpackAhead) -> None:
    """Wait until *ahead* has nothing queued or running (finish would drop what is
    queued)."""
    stop = threading.Event()
    for _ in range(3000):
        if not ahead.pending:
            return
        stop.wait(0.01)
    raise AssertionError("the queue did not drain")


def test_a_whole_wheel_comes_back_as_its_cache_entry(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, "small", files=3)
    verified = verify_wheel(wheel)
    ahead = UnpackAhead(_store(tmp_path))
    ahead.submit(wheel, verified, _hashes(wheel))
    _drained(ahead)
    ahead.finish()
    assert _ahead_threads() == []
    found = ahead.unpacked(wheel, verified)
    assert isinstance(found.source, UnpackedWheel)
    assert found.name == verified.name
    assert found.metadata == verified.metadata
    assert found.record == {}
    assert found.path.name == wheel.name
    entry = found.source
    assert verify_entry(entry) == []
    assert sorted(f.path for f in entry.files if not f.path.startswith("small-1.0")) == [
        "small/__init__.py",
        "small/m0.py",
        "small/m1.py",
        "small/m2.py",
    ]
    assert Path(entry.file_path("small/m2.py")).read_bytes() == b"VALUE = 2\n" * 3
    # The store finds it as any entry: an install links it.
    assert _store(tmp_path).lookup(_hashes(wheel), wheel.name) == entry
    assert _leftovers(tmp_path) == []


def test_a_wheel_without_a_hash_is_left_to_the_transaction(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, "nohash")
    verified = verify_wheel(wheel)
    ahead = UnpackAhead(_store(tmp_path))
    ahead.submit(wheel, verified, {})
    assert ahead.pending == 0
    ahead.finish()
    assert ahead.unpacked(wheel, verified) is verified
    assert not (tmp_path / "cache" / "unpacked").exists()


def test_downloads_that_all_end_at_once_begin_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small set is fetched while resolving: the fetch ends as its wheels are given.
    monkeypatch.setattr(fetch_module, "GRACE", 1.0)
    wheel = _wheel(tmp_path, "quick", files=30)
    verified = verify_wheel(wheel)
    ahead = UnpackAhead(_store(tmp_path))
    ahead.submit(wheel, verified, _hashes(wheel))
    threading.Event().wait(0.1)
    assert ahead.pending == 1
    ahead.finish()
    assert ahead.unpacked(wheel, verified) is verified
    assert not (tmp_path / "cache").exists()  # not even a scratch folder was made


@pytest.mark.usefixtures("no_new_threads")
def test_no_thread_to_be_had_leaves_every_wheel_to_the_transaction(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, "nothread")
    verified = verify_wheel(wheel)
    ahead = UnpackAhead(_store(tmp_path))
    ahead.submit(wheel, verified, _hashes(wheel))  # no error for the download thread
    assert ahead.pending == 0
    ahead.finish()
    assert ahead.unpacked(wheel, verified) is verified


def test_a_member_that_fails_its_record_is_left_to_the_transaction(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, "broken", files=2, bad=True)
    verified = verify_wheel(wheel)
    ahead = UnpackAhead(_store(tmp_path))
    ahead.submit(wheel, verified, _hashes(wheel))
    assert ahead.pending == 1
    _drained(ahead)
    ahead.finish()
    assert ahead.unpacked(wheel, verified) is verified
    assert list((tmp_path / "cache" / "unpacked").rglob("*.py")) == []
    assert _leftovers(tmp_path) == []


class _HeldStore(UnpackedStore):
    """The real store; its first publish waits for :attr:`release`, and the order of
    the publishes is noted."""

    def __init__(self, folder: Path, scratch: Path) -> None:
        super().__init__(folder, scratch)
        self.started = threading.Event()
        self.release = threading.Event()
        self.order: list[str] = []

    def publish(self, hashes, filename, build):  # type: ignore[no-untyped-def]
        self.order.append(filename.split("-")[0])
        if len(self.order) == 1:
            self.started.set()
            assert self.release.wait(30)
        return super().publish(hashes, filename, build)


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[_HeldStore, UnpackAhead, Callable[[str, int], None]]]:
    store = _HeldStore(tmp_path / "cache" / "unpacked", tmp_path / "cache" / "scratch")
    ahead = UnpackAhead(store)
    wheels: dict[str, tuple[InMemoryWheel, VerifiedWheel]] = {}

    def submit(name: str, files: int) -> None:
        wheel = _wheel(tmp_path, name, files)
        wheels[name] = (wheel, verify_wheel(wheel))
        ahead.submit(wheel, wheels[name][1], _hashes(wheel))

    ahead.wheels = wheels  # type: ignore[attr-defined]
    yield store, ahead, submit
    store.release.set()
    ahead.finish()


def test_the_wheel_with_the_most_to_write_goes_first(
    held: tuple[_HeldStore, UnpackAhead, Callable[[str, int], None]],
) -> None:
    store, ahead, submit = held
    submit("first", 1)
    assert store.started.wait(30)
    submit("small", 1)
    submit("big", 40)
    submit("middle", 10)
    assert ahead.pending == 4
    store.release.set()
    _drained(ahead)
    ahead.finish()
    assert store.order == ["first", "big", "middle", "small"]


def test_finishing_drops_the_queue_and_stops_the_wheel_being_unpacked(
    held: tuple[_HeldStore, UnpackAhead, Callable[[str, int], None]], tmp_path: Path
) -> None:
    store, ahead, submit = held
    submit("running", 50)
    assert store.started.wait(30)
    submit("queued", 5)
    finisher = threading.Thread(target=ahead.finish)
    finisher.start()
    finisher.join(0.2)
    assert finisher.is_alive()  # the thread is still in its wheel
    store.release.set()
    finisher.join(30)
    assert not finisher.is_alive()
    assert _ahead_threads() == []
    wheels = ahead.wheels  # type: ignore[attr-defined]
    for name in ("running", "queued"):
        assert ahead.unpacked(*wheels[name]) is wheels[name][1]
    assert store.order == ["running"]
    assert list((tmp_path / "cache" / "unpacked").rglob("*.py")) == []
    assert _leftovers(tmp_path) == []
    # Submitted after the end: ignored.
    submit("late", 1)
    assert store.order == ["running"]
    assert ahead.pending == 0
    assert _ahead_threads() == []


# -- a whole install ---------------------------------------------------------------


class _SlowWheel:
    """The site; the body of slow's wheel starts two seconds after its headers (its
    size, announced at once, is over what the resolver reads whole: it takes the
    metadata file instead, and does not wait for the wheel)."""

    def __init__(self, app: object) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, object], receive: object, send: Any) -> None:
        if scope["type"] != "http" or not str(scope["path"]).endswith(SLOW):
            await self.app(scope, receive, send)  # type: ignore[operator]
            return
        held = [True]

        async def slow_send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.body" and held:
                held.clear()
                await asyncio.sleep(2)
            await send(message)

        await self.app(scope, receive, slow_send)  # type: ignore[operator]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """top needs two, three and slow (small wheels, downloaded whole; slow's takes two
    seconds to come); bad's member fails its RECORD."""
    folder = tmp_path_factory.mktemp("ahead-index")
    make_wheel(
        folder,
        "top-1.0-py3-none-any.whl",
        extra_members={
            "top/__init__.py": b"",
            "top-1.0.dist-info/METADATA": (
                b"Metadata-Version: 2.1\nName: top\nVersion: 1.0\n"
                b"Requires-Dist: two\nRequires-Dist: three\nRequires-Dist: slow\n"
            ),
        },
        record=True,
    )
    _wheel(folder, "two", files=20)
    _wheel(folder, "three", files=3)
    slow = make_wheel(
        folder,
        SLOW,
        extra_members={
            "slow/__init__.py": b"",
            "slow/blob.bin": random.Random(0).randbytes(SMALL_WHEEL),
        },
        record=True,
    )
    assert slow.stat().st_size > SMALL_WHEEL
    _wheel(folder, "bad", files=2, bad=True)
    with uvicorn_thread(_SlowWheel(create_app(folder))) as base:
        yield base, folder


@pytest.fixture
def index(site: tuple[str, Path]) -> str:
    return f"{site[0]}/simple/"


def _spy_on_the_transaction(
    monkeypatch: pytest.MonkeyPatch, caller: ModuleType = transaction_module
) -> list[VerifiedWheel]:
    """The wheels given to ``install_wheels`` (as *caller* calls it) from now on."""
    given: list[VerifiedWheel] = []
    real = transaction_module.install_wheels

    def install_wheels(env, wheels, **kwargs):  # type: ignore[no-untyped-def]
        given.extend(wheels)
        return real(env, wheels, **kwargs)

    monkeypatch.setattr(caller, "install_wheels", install_wheels)
    return given


def _install(
    index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *requirements: str
) -> tuple[Callable[[], InstallOutcome], list[VerifiedWheel]]:
    """A run of ``install REQUIREMENTS`` into a new venv, and the wheels its
    transaction is given."""
    given = _spy_on_the_transaction(monkeypatch)
    python = make_venv(tmp_path / "venv")
    options = InstallOptions(
        requirements=list(requirements),
        index_url=index,
        python=python,
        cache_dir=tmp_path / "cache",
    )
    return lambda: run_install(options), given


def test_a_cold_install_hands_the_transaction_entries_unpacked_while_it_downloaded(
    index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, given = _install(index, tmp_path, monkeypatch, "top")
    outcome = run()
    assert outcome.report is not None
    assert sorted(d.name for d in outcome.report.installed) == ["slow", "three", "top", "two"]
    # Held in memory once downloaded, and unpacked while slow's download went on.
    sources = {w.name: type(w.source).__name__ for w in given if w.name != "slow"}
    assert sources == {"top": "UnpackedWheel", "two": "UnpackedWheel", "three": "UnpackedWheel"}
    site = next((tmp_path / "venv").glob("lib/python*/site-packages"))
    entry = next((tmp_path / "cache" / "unpacked").rglob("two/m19.py"))
    # Linked from the entry made ahead (the default link mode on one file system).
    assert (site / "two" / "m19.py").samefile(entry)
    assert _ahead_threads() == []


def test_a_wheel_that_fails_ahead_fails_the_install_as_before(
    index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bad comes while slow's download goes on: it is tried ahead, then again.
    run, given = _install(index, tmp_path, monkeypatch, "bad", "slow")
    with pytest.raises(InstallError, match=r"bad-1\.0-py3-none-any\.whl.*bad/m0\.py"):
        run()
    # The transaction was given the wheel itself, and unpacked (and refused) it.
    assert {w.name: type(w.source).__name__ for w in given}["bad"] == "InMemoryWheel"
    site = next((tmp_path / "venv").glob("lib/python*/site-packages"))
    assert not (site / "bad").exists()
    assert not (site / "slow").exists()
    assert list((tmp_path / "cache" / "unpacked").rglob("bad/*.py")) == []
    assert not any((tmp_path / "cache" / "scratch").iterdir())


def test_installing_a_lock_hands_the_transaction_entries_unpacked_while_it_downloaded(
    site: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, folder = site
    packages = []
    for name in ("two", "three", "slow"):
        path = folder / f"{name}-1.0-py3-none-any.whl"
        data = path.read_bytes()
        wheel = Wheel(
            url=f"{base}/files/{name}/{path.name}",
            size=len(data),
            hashes={"sha256": hashlib.sha256(data).hexdigest()},
        )
        packages.append(Package(name=name, version="1.0", wheels=(wheel,)))
    lock_path = tmp_path / "pylock.toml"
    lock_path.write_text(write_pylock(PyLock(created_by="wheelwise", packages=tuple(packages))))
    given = _spy_on_the_transaction(monkeypatch, from_lock_module)
    python = make_venv(tmp_path / "venv")
    options = InstallOptions(python=python, cache_dir=tmp_path / "cache")
    done = run_lock_install(read_pylock(lock_path.read_bytes()), lock_path, options)
    assert done.outcome.report is not None
    assert sorted(d.name for d in done.outcome.report.installed) == ["slow", "three", "two"]
    sources = {w.name: type(w.source).__name__ for w in given if w.name != "slow"}
    assert sources == {"two": "UnpackedWheel", "three": "UnpackedWheel"}
    site_packages = next((tmp_path / "venv").glob("lib/python*/site-packages"))
    entry = next((tmp_path / "cache" / "unpacked").rglob("two/m19.py"))
    assert (site_packages / "two" / "m19.py").samefile(entry)
    assert _ahead_threads() == []
