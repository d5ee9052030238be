"""``wheelwise cache dir`` and ``cache info``: a real install from an index served on
127.0.0.1 fills the cache, and ``info`` counts what is on disk, kind by kind."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from indexkit import demo_wheels, wheelwise_serve
from installkit import alpha_wheel, make_venv, run_python, simple_wheel
from variantkit import wheelwise
from wheelwise.cache.usage import KINDS, cache_usage

pytestmark = pytest.mark.slow


def on_disk(folder: Path) -> tuple[int, int]:
    """(files, bytes) of the regular files and links under *folder*, links not followed."""
    files = size = 0
    for path in folder.rglob("*"):
        if path.is_symlink() or path.is_file():
            files += 1
            size += path.lstat().st_size if path.is_file() and not path.is_symlink() else 0
    return files, size


def test_dir_and_info_after_an_install(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert wheelwise(["cache", "dir"], cache).stdout == f"{cache}\n"
    empty = wheelwise(["cache", "info"], cache)
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout.splitlines()[0] == f"cache: {cache} (not created yet)"

    python = make_venv(tmp_path / "venv")
    with wheelwise_serve(demo_wheels_dir(tmp_path)) as base:
        args = ["install", "-q", "--python", str(python), "--index-url", f"{base}/simple/"]
        installed = wheelwise([*args, "demo_pkg"], cache)
    assert installed.returncode == 0, installed.stderr
    # Something outside the cache that a link in it points to is not counted.
    outside = tmp_path / "big.bin"
    outside.write_bytes(b"x" * 100_000)
    (cache / "wheels" / "link.bin").symlink_to(outside)

    result = wheelwise(["cache", "info", "--json"], cache)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["cache-dir"] == str(cache)
    kinds = {kind["name"]: kind for kind in document["kinds"]}
    assert list(kinds) == [kind.name for kind in KINDS]
    for name in ("wheels", "unpacked", "pages", "detection"):
        assert kinds[name]["files"] > 0, name
    for kind in document["kinds"]:
        path = Path(kind["path"])
        expected = (
            on_disk(path)
            if path.is_dir()
            else (int(path.exists()), path.stat().st_size if path.exists() else 0)
        )
        assert (kind["files"], kind["bytes"]) == expected, kind["name"]
        assert kind["unreadable"] == 0
    assert kinds["wheels"]["bytes"] < 100_000
    assert document["bytes"] == sum(kind["bytes"] for kind in document["kinds"])

    table = wheelwise(["cache", "info"], cache).stdout.splitlines()
    assert table[0] == f"cache: {cache}"
    assert [line.split()[0] for line in table[1:]] == [*(kind.name for kind in KINDS), "total"]


def demo_wheels_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "wheels"
    demo_wheels(folder)
    return folder


def test_a_kind_that_is_a_file_of_another_type_or_missing(tmp_path: Path) -> None:
    """A cache root holding odd things: a folder where a file is expected, a file
    where a folder is, a FIFO. Nothing is opened; every kind is answered."""
    (tmp_path / "detect.cache").mkdir()
    (tmp_path / "detect.cache" / "x").write_bytes(b"12345")
    (tmp_path / "wheels").write_bytes(b"not a folder")
    os.mkfifo(tmp_path / "scratch")
    usage = {item.kind.name: item for item in cache_usage(tmp_path)}
    assert (usage["detection"].files, usage["detection"].bytes) == (1, 5)
    assert (usage["wheels"].files, usage["wheels"].bytes) == (1, 12)
    assert (usage["scratch"].files, usage["scratch"].bytes) == (1, 0)
    assert not usage["metadata"].exists


def _fill(tmp_path: Path, cache: Path, *requirements: str) -> Path:
    """Install *requirements* (alpha, beta) from an index on 127.0.0.1 into a new venv."""
    wheels = tmp_path / "stack"
    if not wheels.exists():
        alpha_wheel(wheels, "1.0")
        simple_wheel(wheels, "beta", "1.0")
    python = make_venv(tmp_path / f"venv-{len(list(tmp_path.glob('venv-*')))}")
    with wheelwise_serve(wheels) as base:
        args = ["install", "-q", "--python", str(python), "--index-url", f"{base}/simple/"]
        result = wheelwise([*args, *requirements], cache)
    assert result.returncode == 0, result.stderr
    return python


def _kept(cache: Path, kind: str) -> list[str]:
    if kind == "unpacked":
        return sorted(p.parent.name for p in (cache / "unpacked").rglob("entry.json"))
    return sorted(p.name for p in (cache / kind).rglob("*.whl*") if p.is_file())


def test_clean_by_name_removes_only_that_project(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    python = _fill(tmp_path, cache, "alpha", "beta")
    assert len(_kept(cache, "unpacked")) == 2
    result = wheelwise(["cache", "clean", "Alpha"], cache)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("removed ")
    assert _kept(cache, "wheels") == ["beta-1.0-py3-none-any.whl"]
    assert len(_kept(cache, "unpacked")) == 1
    assert all("alpha" not in name for name in _kept(cache, "metadata"))
    # The environment keeps its hard-linked files; the next install unpacks again.
    ran = run_python(python, "import alpha; print(alpha.VERSION)")
    assert ran.stdout.strip() == "1.0", ran.stderr
    _fill(tmp_path, cache, "alpha")
    assert len(_kept(cache, "unpacked")) == 2
    # A name the cache holds nothing of (misspelt, say) is said so, and exits 0 as uv.
    missed = wheelwise(["cache", "clean", "alpah"], cache)
    assert missed.returncode == 0, missed.stderr
    assert missed.stdout.startswith("no cache entries found for alpah in ")
    assert len(_kept(cache, "unpacked")) == 2


def test_clean_keeps_journals_and_live_scratch(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _fill(tmp_path, cache, "alpha")
    journals = cache / "environments"
    journals.mkdir()
    (journals / "x.journal").write_text("{}")
    live = cache / "scratch" / f"download-{os.getpid()}-00000000-x"  # another host's: kept
    live.mkdir(parents=True)
    result = wheelwise(["cache", "clean"], cache)
    assert result.returncode == 0, result.stderr
    for kind in ("wheels", "unpacked", "metadata", "http"):
        assert not (cache / kind).exists(), kind
    assert (journals / "x.journal").exists()
    assert live.exists()
    info = json.loads(wheelwise(["cache", "info", "--json"], cache).stdout)
    assert {k["name"]: k["files"] for k in info["kinds"]}["unpacked"] == 0


def test_prune_drops_wheels_kept_unpacked_and_damaged_entries(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _fill(tmp_path, cache, "alpha", "beta")
    assert len(_kept(cache, "wheels")) == 2
    entries = sorted((cache / "unpacked").rglob("entry.json"))
    damaged = entries[0].parent
    damaged_wheel = json.loads(entries[0].read_text())["wheel"]
    next(damaged.rglob("__init__.py")).write_bytes(b"changed = True\n")
    result = wheelwise(["cache", "prune"], cache)
    assert result.returncode == 0, result.stderr
    # The wheel still kept unpacked goes; the damaged entry's wheel stays, to be
    # unpacked again.
    assert _kept(cache, "wheels") == [damaged_wheel]
    assert _kept(cache, "unpacked") == [entries[1].parent.name]
    python = _fill(tmp_path, cache, "alpha", "beta")
    ran = run_python(python, "import alpha, beta; print(alpha.VERSION, beta.VERSION)")
    assert ran.stdout.split() == ["1.0", "1.0"], ran.stderr
    assert wheelwise(["cache", "verify"], cache).returncode == 0


def test_max_cache_size_bounds_the_cache_after_an_install(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _fill(tmp_path, cache, "alpha", "beta")
    assert len(_kept(cache, "unpacked")) == 2
    # 1 byte: every unpacked wheel and wheel file goes once the install is done; the
    # environment keeps its files.
    python = make_venv(tmp_path / "bounded")
    with wheelwise_serve(tmp_path / "stack") as base:
        args = ["install", "-q", "--python", str(python), "--index-url", f"{base}/simple/"]
        result = wheelwise([*args, "--max-cache-size", "1", "alpha"], cache)
        assert result.returncode == 0, result.stderr
        assert _kept(cache, "unpacked") == []
        assert _kept(cache, "wheels") == []
        ran = run_python(python, "import alpha; print(alpha.VERSION)")
        assert ran.stdout.strip() == "1.0", ran.stderr
        bad = wheelwise([*args, "--max-cache-size", "lots", "alpha"], cache)
    assert bad.returncode == 2
    assert "--max-cache-size (WHEELWISE_MAX_CACHE_SIZE) 'lots': give a size such as" in bad.stderr


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[20]", "[cache] max-size must be a size such as"),
        ("-5", "[cache] max-size = '-5': give a size such as 500M or 20G"),
        ('"9' + "9" * 5000 + '"', "[cache] max-size = '999"),
    ],
)
def test_a_bad_configured_max_size_is_one_error_line(
    tmp_path: Path, value: str, message: str
) -> None:
    """Named where it was set (the file and the key), however long or odd it is."""
    config = tmp_path / "config.toml"
    config.write_text(f"[cache]\nmax-size = {value}\n")
    python = make_venv(tmp_path / "venv")
    args = ["install", "-q", "--python", str(python), "--index-url", str(tmp_path), "alpha"]
    result = wheelwise(args, tmp_path / "cache", {"WHEELWISE_CONFIG": str(config)})
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert message in line
    assert "config.toml" in line
    assert len(line) < 300


def test_built_wheels_are_kept_whole_cleaned_by_name_and_pruned(tmp_path: Path) -> None:
    """A built wheel is renamed into its entry; a copy a killed run left half done
    (``.part-PID-``, that process gone) is what ``prune`` removes, and ``clean NAME``
    removes that project's built wheels."""
    from wheelwise.cache.built_wheels import BuiltWheels, built_key

    store = BuiltWheels(tmp_path / "built")
    wheel = simple_wheel(tmp_path / "w", "beta", "1.0")
    key = built_key("ab" * 32, "cp311-cp311-linux_x86_64", "this machine")
    kept = store.keep(key, wheel)
    assert kept is not None
    assert store.find(key) == kept
    assert kept.read_bytes() == wheel.read_bytes()
    dead = kept.parent / ".part-999999999-x"  # no such process
    dead.write_bytes(b"half")
    mine = kept.parent / f".part-{os.getpid()}-y"
    mine.write_bytes(b"in progress")
    result = wheelwise(["cache", "prune"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert not dead.exists()
    assert mine.exists()
    assert store.find(key) == kept
    assert wheelwise(["cache", "clean", "beta"], tmp_path).returncode == 0
    assert store.find(key) is None


def test_prune_removes_the_temporary_files_killed_runs_left(tmp_path: Path) -> None:
    """``atomic_file``'s ``.tmp-`` files beside pages, wheels and metadata go once
    untouched for an hour, the detection cache's once its process is gone; a fresh
    one (a run may be writing it), a wheel's own ``.tmp-`` file in an unpacked entry
    and a link named like one stay."""
    from wheelwise.cache.cleanup import ABANDONED_AFTER

    cache = tmp_path / "cache"
    _fill(tmp_path, cache, "alpha")
    old = time.time() - ABANDONED_AFTER - 60
    wheel_folder = next((cache / "wheels").glob("*/*/*"))
    abandoned = [
        cache / "http" / ".tmp-page1",
        wheel_folder / ".tmp-wheel1",
        cache / "metadata" / "sha256" / "ab" / ("ab" * 32) / ".tmp-meta1",
        cache / ".tmp-root1",
        cache / "detect.cache.999999999.tmp",  # no such process
    ]
    fresh = [
        cache / "http" / ".tmp-page2",
        cache / f"detect.cache.{os.getpid()}.tmp",
    ]
    entry = next((cache / "unpacked").rglob("entry.json")).parent
    kept_old = [entry / ".tmp-of-the-wheel", cache / "environments" / ".tmp-journal"]
    for path in [*abandoned, *fresh, *kept_old]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half written")
    for path in [*abandoned, *kept_old]:
        os.utime(path, (old, old))
    link = cache / "http" / ".tmp-link"
    link.symlink_to(tmp_path / "elsewhere")
    os.utime(link, (old, old), follow_symlinks=False)

    result = wheelwise(["cache", "prune"], cache)
    assert result.returncode == 0, result.stderr
    assert [path for path in abandoned if path.exists()] == []
    assert all(path.exists() for path in [*fresh, *kept_old])
    assert link.is_symlink()
    # The wheel file went too (kept unpacked): 5 temporaries of 12 bytes, one wheel.
    assert result.stdout.startswith("removed 6 files (")
