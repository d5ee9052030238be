"""The unpacked-wheel store on its own: publishing whole or not at all, a second
publisher of the same wheel, lookups that find changed or damaged entries, and
``entry.json`` read from any bytes without a crash."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelwise import forked_map as fm
from wheelwise.cache import unpacked
from wheelwise.cache.unpacked import (
    ENTRY_FILE,
    EntryFile,
    UnpackedStore,
    changed_entries,
    parse_entry,
    verify_entries,
    verify_entry,
)
from wheelwise.open_folders import AVAILABLE

DIGEST = hashlib.sha256(b"the wheel").hexdigest()
HASHES = {"sha256": DIGEST}
NAME = "demo-1.0-py3-none-any.whl"


def _b64(data: bytes) -> str:
    from base64 import urlsafe_b64encode

    return urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def builder(members: dict[str, bytes]):  # type: ignore[no-untyped-def]
    def build(folder: Path) -> tuple[list[EntryFile], str]:
        files = []
        for path, data in members.items():
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            files.append(EntryFile(path, _b64(data), len(data), False, target.stat().st_mtime_ns))
        return files, "demo-1.0.dist-info"

    return build


MEMBERS = {"demo/__init__.py": b"X = 1\n", "demo-1.0.dist-info/METADATA": b"Name: demo\n"}


def store_at(tmp_path: Path) -> UnpackedStore:
    return UnpackedStore(tmp_path / "unpacked", tmp_path / "scratch")


def test_published_whole_then_found(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    assert store.lookup(HASHES, NAME) is None
    entry = store.publish(HASHES, NAME, builder(MEMBERS))
    assert entry.folder == tmp_path / "unpacked" / "sha256" / DIGEST[:2] / DIGEST
    found = store.lookup(HASHES, NAME)
    assert found == entry
    assert verify_entry(found) == []
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_failed_build_leaves_nothing(tmp_path: Path) -> None:
    store = store_at(tmp_path)

    def failing(folder: Path) -> tuple[list[EntryFile], str]:
        builder(MEMBERS)(folder)
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        store.publish(HASHES, NAME, failing)
    assert not (tmp_path / "unpacked").exists() or not list((tmp_path / "unpacked").rglob("*.py"))
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_second_publisher_uses_the_first_entry(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    first = store.publish(HASHES, NAME, builder(MEMBERS))
    second = store.publish(HASHES, NAME, builder(MEMBERS))
    assert second.folder == first.folder
    assert store.lookup(HASHES, NAME) is not None
    assert list((tmp_path / "scratch").iterdir()) == []


@pytest.mark.parametrize("open_folders", [True, False], ids=["open-folders", "whole-paths"])
@pytest.mark.parametrize("change", ["size", "time", "gone", "link", "folder", "entry", "name"])
def test_a_changed_entry_is_removed_on_lookup(
    tmp_path: Path, change: str, open_folders: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(unpacked, "OPEN_FOLDERS", open_folders and AVAILABLE)
    store = store_at(tmp_path)
    entry = store.publish(HASHES, NAME, builder(MEMBERS))
    member = Path(entry.file_path("demo/__init__.py"))
    name = NAME
    if change == "size":
        member.write_bytes(b"X = 22\n")
    elif change == "time":
        os.utime(member, ns=(0, 0))
    elif change == "gone":
        member.unlink()
    elif change == "link":  # the same size and time, through a link: not the file
        moved = tmp_path / "moved.py"
        member.rename(moved)
        member.symlink_to(moved)
    elif change == "folder":
        for path in member.parent.iterdir():
            path.unlink()
        member.parent.rmdir()
    elif change == "entry":
        (entry.folder / ENTRY_FILE).write_bytes(b"{not json")
    else:
        name = "other-1.0-py3-none-any.whl"
    assert store.lookup(HASHES, name) is None
    assert not entry.folder.exists()


def test_no_strong_hash_no_entry(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    assert store.path_for({"md5": "0" * 32}) is None
    with pytest.raises(OSError, match="no sha256"):
        store.publish({"md5": "0" * 32}, NAME, builder(MEMBERS))


def test_verify_finds_a_change_that_keeps_size_and_time(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    entry = store.publish(HASHES, NAME, builder(MEMBERS))
    member = Path(entry.file_path("demo/__init__.py"))
    info = member.stat()
    member.write_bytes(b"X = 2\n")
    os.utime(member, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert store.lookup(HASHES, NAME) is not None  # sizes and times only
    assert verify_entry(entry) == ["demo/__init__.py: changed since it was unpacked"]


@pytest.mark.skipif(sys.platform != "linux", reason="forks only on Linux")
def test_entries_are_verified_in_runs_over_several_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of a few files each, checked by forked workers, give each entry's
    problems in its files' order, as the entry checked alone does."""
    monkeypatch.setattr(fm, "STRATEGY", "fork")
    monkeypatch.setattr(fm, "cores", lambda: 3)
    monkeypatch.setattr(unpacked, "_VERIFY_FILES", 3)
    monkeypatch.setattr(unpacked, "_VERIFY_BYTES", 40)
    store = store_at(tmp_path)
    entries = []
    for number in range(3):
        members = {f"demo/m{i:02}.py": bytes([65 + i]) * (number * 7 + i) for i in range(20)}
        members[f"demo/big{number}.bin"] = b"x" * 100  # a run of its own
        digest = hashlib.sha256(f"wheel {number}".encode()).hexdigest()
        entries.append(store.publish({"sha256": digest}, NAME, builder(members)))
    changed = entries[1]
    # m18's run is bigger than m01's (runs go out biggest first): told in file order.
    for name in ("demo/m18.py", "demo/m01.py"):
        member = Path(changed.file_path(name))
        member.write_bytes(member.read_bytes().lower())
    Path(entries[2].file_path("demo/m09.py")).unlink()
    found = verify_entries(entries)
    assert found == [
        [],
        [
            "demo/m01.py: changed since it was unpacked",
            "demo/m18.py: changed since it was unpacked",
        ],
        ["demo/m09.py: No such file or directory"],
    ]
    monkeypatch.setattr(fm, "STRATEGY", "serial")
    assert found == [verify_entry(entry) for entry in entries]


ROW = st.lists(
    st.one_of(
        st.text(max_size=50),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.booleans(),
        st.none(),
    ),
    max_size=6,
)
DOCUMENT = st.fixed_dictionaries(
    {},
    optional={
        "format": st.one_of(st.just(1), st.integers(), st.text(max_size=3)),
        "wheel": st.one_of(st.just(NAME), st.text(max_size=40)),
        "dist_info": st.one_of(st.just("demo-1.0.dist-info"), st.text(max_size=40)),
        "files": st.one_of(st.lists(ROW, max_size=5), st.text(max_size=5)),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300), DOCUMENT.map(lambda d: json.dumps(d).encode())))
def test_any_entry_json_is_read_without_a_crash(data: bytes) -> None:
    folder = Path("/nonexistent/entry")
    entry = parse_entry(data, folder)
    if entry is None:
        return
    for item in entry.files:
        # Every path it gives stays inside the entry's files.
        full = os.path.normpath(entry.file_path(item.path))
        assert full.startswith(str(entry.root) + os.sep)
        assert len(item.sha256) == 43
        assert item.size >= 0


SHA = "A" * 43


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        ("demo/__init__.py", True),
        ("demo/.hidden/..x/x..", True),
        ("...", True),
        ("a\nb", True),
        ("../x", False),
        ("demo/../../x", False),
        ("demo/./x", False),
        ("demo/..", False),
        (".", False),
        ("/etc/passwd", False),
        ("demo//x", False),
        ("demo/", False),
        ("", False),
        ("demo\\..\\x", False),
        ("demo/\x00x", False),
    ],
)
def test_an_entry_path_that_could_leave_the_entry_is_refused(path: str, kept: bool) -> None:
    document = {"format": 1, "wheel": NAME, "dist_info": "demo-1.0.dist-info"}
    document["files"] = [["demo/ok.py", SHA, 1, False, 1], [path, SHA, 1, False, 1]]
    entry = parse_entry(json.dumps(document).encode(), Path("/nonexistent/entry"))
    assert (entry is not None) is kept


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.text(alphabet=["a", ".", "/", "\\", "\x00", "\n", "\u00e9"], max_size=8), max_size=5
    )
)
def test_paths_checked_all_at_once_are_checked_as_one_by_one(paths: list[str]) -> None:
    from wheelwise.cache.unpacked import _all_safe_members, _safe_member

    assert _all_safe_members(paths) == all(_safe_member(path) for path in paths)


@pytest.mark.parametrize(
    "row",
    [
        ["demo/x.py", SHA, True, False, 1],  # a size that is a boolean
        ["demo/x.py", SHA, -1, False, 1],
        ["demo/x.py", SHA, 1, 1, 1],  # an executable bit that is a number
        ["demo/x.py", SHA, 1, False, 1.5],
        ["demo/x.py", SHA[:-1], 1, False, 1],
        ["demo/x.py", SHA, 1, False],
        ["demo/x.py", SHA, 1, False, 1, None],
        [1, SHA, 1, False, 1],
        {"path": "demo/x.py"},
        "demo/x.py",
    ],
)
def test_a_row_of_the_wrong_shape_or_type_refuses_the_entry(row: object) -> None:
    document = {"format": 1, "wheel": NAME, "dist_info": "demo-1.0.dist-info"}
    document["files"] = [["demo/ok.py", SHA, 1, False, 1]]
    assert parse_entry(json.dumps(document).encode(), Path("/nonexistent/entry")) is not None
    document["files"] = [["demo/ok.py", SHA, 1, False, 1], row]
    assert parse_entry(json.dumps(document).encode(), Path("/nonexistent/entry")) is None


def test_the_hint_of_a_project_lists_its_two_latest_entries(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    folders = [store.path_for({"sha256": hashlib.sha256(bytes([n])).hexdigest()}) for n in range(3)]
    for folder in folders:
        assert folder is not None
        store.note_many_files("Demo_Pkg-1.0-py3-none-any.whl", folder)
    assert store.hinted_entries({"demo-pkg"}) == [folders[2], folders[1]]
    assert folders[1] is not None
    store.note_many_files("demo_pkg-1.0-py3-none-any.whl", folders[1])  # used again
    assert store.hinted_entries({"demo-pkg", "other"}) == [folders[1], folders[2]]
    assert store.hinted_entries({"../demo-pkg", ""}) == []


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_any_hint_names_entries_of_the_store_only(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    store = store_at(tmp_path_factory.mktemp("hint"))
    hint = store.folder / unpacked.MANY_FILES_FOLDER / "demo"
    hint.parent.mkdir(parents=True)
    hint.write_bytes(b"sha256/ab/ab" + b"c" * 62 + b"\n" + data)
    [first, *others] = store.hinted_entries({"demo"})
    assert first == store.folder / "sha256" / "ab" / ("ab" + "c" * 62)
    for entry in others:
        _, prefix, digest = entry.relative_to(store.folder).parts
        assert digest.startswith(prefix)
        assert set(digest) <= set("0123456789abcdef")


def test_a_fifo_for_a_hint_is_neither_read_nor_written(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    hint = store.folder / unpacked.MANY_FILES_FOLDER / "demo"
    hint.parent.mkdir(parents=True)
    os.mkfifo(hint)
    assert store.hinted_entries({"demo"}) == []
    folder = store.path_for(HASHES)
    assert folder is not None
    store.note_many_files(NAME, folder)  # returns: a hint only
    assert store.hinted_entries({"demo"}) == []


def test_the_size_bound_removes_the_least_recently_used_first(tmp_path: Path) -> None:
    from wheelwise.cache.cleanup import enforce_size
    from wheelwise.cache.usage import cache_usage

    store = store_at(tmp_path)
    folders = []
    for number in range(3):
        digest = hashlib.sha256(f"wheel {number}".encode()).hexdigest()
        members = {"demo/__init__.py": bytes([number]) * 10_000}
        entry = store.publish({"sha256": digest}, NAME, builder(members))
        os.utime(entry.folder / ENTRY_FILE, (1_000_000 * (3 - number),) * 2)  # 0 is newest
        folders.append(entry.folder)
    total = sum(item.bytes for item in cache_usage(tmp_path))
    assert enforce_size(tmp_path, total).files == 0  # within the bound: nothing goes
    removed = enforce_size(tmp_path, total - 1)
    assert removed.files == 2  # the oldest entry's two files
    assert [folder.exists() for folder in folders] == [True, True, False]
    assert sum(item.bytes for item in cache_usage(tmp_path)) <= total - 1
    enforce_size(tmp_path, 0)
    assert not any(folder.exists() for folder in folders)


@pytest.mark.parametrize("change", ["size", "time", "gone"])
@pytest.mark.parametrize("strategy", ["serial", "fork"])
def test_an_unchecked_lookup_leaves_the_comparison_to_changed_entries(
    tmp_path: Path, change: str, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import wheelwise.forked_map

    monkeypatch.setattr(wheelwise.forked_map, "STRATEGY", strategy)
    store = store_at(tmp_path)
    # Enough files for several runs of them, the changed one in the last.
    many = {f"demo/m{index:04}.py": b"X = 1\n" for index in range(600)}
    other = store.publish({"sha256": "1" * 64}, "other-1.0-py3-none-any.whl", builder(MEMBERS))
    entry = store.publish(HASHES, NAME, builder({**MEMBERS, **many}))
    member = Path(entry.file_path("demo/m0599.py"))
    if change == "size":
        member.write_bytes(b"X = 22\n")
    elif change == "time":
        os.utime(member, ns=(0, 0))
    else:
        member.unlink()
    found = store.lookup(HASHES, NAME, check=False)
    assert found is not None
    assert not found.checked
    assert found.folder.exists()
    assert [e.filename for e in changed_entries([other, found])] == [NAME]
    assert changed_entries([other]) == []
    # Built, or compared by a lookup, an entry is checked; read from entry.json, not.
    assert entry.checked
    looked_up = store.lookup({"sha256": "1" * 64}, "other-1.0-py3-none-any.whl")
    assert looked_up is not None
    assert looked_up.checked
    read = store.read_entry(entry.folder)
    assert read is not None
    assert not read.checked
    # A checked lookup still compares, and removes what changed.
    assert store.lookup(HASHES, NAME) is None
    assert not entry.folder.exists()


def test_a_project_with_many_files_is_noted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import wheelwise.cache.unpacked as unpacked

    store = store_at(tmp_path)
    assert store.with_many_files({"demo"}) == set()
    monkeypatch.setattr(unpacked, "MANY_FILES", 3)
    store.publish(HASHES, NAME, builder(MEMBERS))  # two files: not noted
    assert store.with_many_files({"demo"}) == set()
    other = {"sha256": hashlib.sha256(b"another").hexdigest()}
    many = {**MEMBERS, "demo/more.py": b""}
    store.publish(other, "Demo_Pkg-1.0-py3-none-any.whl", builder(many))
    assert store.with_many_files({"demo-pkg", "demo", "../demo-pkg", ""}) == {"demo-pkg"}
    # Not an entry: the store's entries are its hash folders only.
    assert all(folder.parent.parent.name == "sha256" for folder in store.entries())


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_file_name_gives_a_safe_project_name_or_none(filename: str) -> None:
    from wheelwise.cache.unpacked import _project_of

    name = _project_of(filename)
    assert name is None or (name and "/" not in name and ".." not in name and name == name.lower())
