"""``--index-strategy``: what each of uv's three strategies picks from two indexes and
a find-links folder, against uv 0.13.9 on the same indexes (served on 127.0.0.1),
and the same rules through ``lock``, ``download`` and ``list --outdated``."""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded
from indexkit import (
    demo_wheel,
    free_port,
    handler_served,
    http_server,
    installer_env,
    uv_executable,
)
from installkit import make_venv, site_packages
from variantkit import wheelwise
from wheelwise.client.index_name import IndexNameError, index_location
from wheelwise.client.index_strategy import INDEX_STRATEGIES, find_links_first, ranked_indexes
from wheelwise.publish.static import build_site

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")


def test_uv_ranks_the_extra_indexes_first() -> None:
    assert ranked_indexes("main", ["x", "y"], None) == ["main", "x", "y"]
    for strategy in INDEX_STRATEGIES:
        assert ranked_indexes("main", ["x", "y"], strategy) == ["x", "y", "main"]
    assert ranked_indexes(None, ["x"], "first-index") == ["x"]
    assert not find_links_first(None)
    assert all(find_links_first(strategy) for strategy in INDEX_STRATEGIES)


# -- two indexes and a folder, and uv on them ----------------------------------------


class Sources:
    def __init__(self, main: str, extra: str, links: Path, python: Path) -> None:
        self.main, self.extra, self.links, self.python = main, extra, links, python


def _wheel(
    folder: Path, name: str, version: str, origin: str, tag: str = "any", requires: str = ""
) -> None:
    demo_wheel(
        folder,
        f"{name}-{version}-py3-none-{tag}.whl",
        extra_members={f"{name}/origin.txt": origin.encode()},
        requires_dist=[requires] if requires else [],
    )


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sources]:
    """``main`` (the --index-url): demo 1.0 and 1.5, onlymain, same 1.0, tagged 1.0;
    ``extra``: demo 0.5 and 0.7, same 1.0 (another file), tagged 1.0 for Windows
    only; a find-links folder: demo 0.1 and 1.2; and lonly, sv and sv2 in the folder
    and on the indexes."""
    root = tmp_path_factory.mktemp("index-strategy")
    main, extra, links = root / "main-wheels", root / "extra-wheels", root / "links"
    for folder in (main, extra, links):
        folder.mkdir()
    for version in ("1.0", "1.5"):
        _wheel(main, "demo", version, "main")
    _wheel(main, "onlymain", "1.0", "main")
    _wheel(main, "same", "1.0", "main")
    _wheel(main, "tagged", "1.0", "main")
    for version in ("0.5", "0.7"):
        _wheel(extra, "demo", version, "extra")
    _wheel(extra, "same", "1.0", "extra")
    _wheel(extra, "tagged", "1.0", "extra", tag="win_amd64")
    for version in ("0.1", "1.2"):
        _wheel(links, "demo", version, "links")
    # find-links files beside the indexes' (uv reads them with every index)
    _wheel(links, "lonly", "1.0", "links")
    _wheel(main, "lonly", "2.0", "main")
    _wheel(links, "sv", "1.0", "links")
    _wheel(extra, "sv", "1.0", "extra")
    _wheel(main, "sv", "1.0", "main")
    _wheel(links, "sv2", "1.0", "links")
    _wheel(extra, "sv2", "1.0", "extra", tag="win_amd64")
    _wheel(extra, "sv2", "0.5", "extra")
    # a pre-release only on the extra index, a final release on the main one
    _wheel(extra, "pre", "2.0b1", "extra")
    _wheel(main, "pre", "1.0", "main")
    # app (extra) needs dep2>=2, which only the main index has
    _wheel(extra, "app", "1.0", "extra", requires="dep2>=2")
    _wheel(extra, "dep2", "1.0", "extra")
    _wheel(main, "dep2", "2.0", "main")
    served = root / "served"
    build_site(main, served / "main")
    build_site(extra, served / "extra")
    python = make_venv(root / "venv")
    with http_server(served) as base:
        yield Sources(f"{base}/main/simple/", f"{base}/extra/simple/", links, python)


def uv_picks(sources: Sources, tmp_path: Path, args: list[str], requirement: str) -> str | None:
    """The version of the requirement's project uv 0.13.9 would install (None: no
    solution)."""
    argv = [uv_executable(), "pip", "install", "--no-config", "--no-cache", "--dry-run"]
    argv += ["--python", str(sources.python), *args, requirement]
    done = subprocess.run(
        argv, env=installer_env(tmp_path), capture_output=True, text=True, timeout=120, check=False
    )
    name = re.split(r"[<>=!~ ]", requirement)[0]
    found = re.search(rf"\+ {name}==(\S+)", done.stderr)
    if found is None:
        assert "No solution found" in done.stderr, done.stderr
        return None
    return found.group(1)


def ours(sources: Sources, tmp_path: Path, args: list[str], requirement: str) -> str | None:
    """The version ``wheelwise install --dry-run`` would install (None: an error)."""
    argv = ["install", "--dry-run", "-q", "--report", "-", "--python", str(sources.python)]
    done = wheelwise([*argv, *args, requirement], tmp_path / "cache")
    if done.returncode != 0:
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        return None
    name = re.split(r"[<>=!~ ]", requirement)[0]
    report = json.loads(done.stdout)
    (version,) = [
        e["metadata"]["version"] for e in report["install"] if e["metadata"]["name"] == name
    ]
    return str(version)


def index_args(sources: Sources, strategy: str | None, links: bool) -> list[str]:
    args = ["--index-url", sources.main, "--extra-index-url", sources.extra]
    args += ["--index-strategy", strategy] if strategy else []
    return args + (["--find-links", str(sources.links)] if links else [])


EXPECTED = {
    # (strategy, find-links): what demo, demo<0.7 and demo>0.9 install
    (None, False): ["1.5", "0.5", "1.5"],
    (None, True): ["1.5", "0.5", "1.5"],
    ("first-index", False): ["0.7", "0.5", None],
    ("first-index", True): ["1.2", "0.5", "1.2"],
    ("unsafe-first-match", False): ["0.7", "0.5", "1.5"],
    ("unsafe-first-match", True): ["1.2", "0.5", "1.2"],
    ("unsafe-best-match", False): ["1.5", "0.5", "1.5"],
    ("unsafe-best-match", True): ["1.5", "0.5", "1.5"],
}


@pytest.mark.parametrize(("strategy", "links"), list(EXPECTED), ids=str)
def test_each_strategy_picks_what_uv_picks(
    sources: Sources, tmp_path: Path, strategy: str | None, links: bool
) -> None:
    """Without a strategy, every index is read and the best version wins, as pip and
    uv's unsafe-best-match read them."""
    requirements = ["demo", "demo<0.7", "demo>0.9"]
    picked = [
        ours(sources, tmp_path, index_args(sources, strategy, links), r) for r in requirements
    ]
    assert picked == EXPECTED[strategy, links]
    uv_args = index_args(sources, strategy or "unsafe-best-match", links)
    assert [uv_picks(sources, tmp_path, uv_args, r) for r in requirements] == picked


def test_uvs_names_of_the_index_options(sources: Sources, tmp_path: Path) -> None:
    """--default-index and --index, as uv spells --index-url and --extra-index-url."""
    args = ["--default-index", sources.main, "--index", sources.extra]
    for strategy, expected in [("first-index", "0.7"), ("unsafe-best-match", "1.5")]:
        chosen = [*args, "--index-strategy", strategy]
        assert ours(sources, tmp_path, chosen, "demo") == expected
        assert uv_picks(sources, tmp_path, chosen, "demo") == expected


def test_uvs_named_indexes(sources: Sources, tmp_path: Path) -> None:
    """uv's NAME=URL: the name is dropped, as uv's pip interface uses only the URL."""
    args = ["--default-index", f"main={sources.main}"]
    args += ["--index", f"extra.x_Y-9={sources.extra}", "--index-strategy", "first-index"]
    assert ours(sources, tmp_path, args, "demo") == "0.7"
    assert uv_picks(sources, tmp_path, args, "demo") == "0.7"
    # A folder whose name holds an "=" stays whole where it exists (uv splits it and
    # warns that it will not in the future), and so does a URL's query.
    (tmp_path / "wheels").mkdir()
    _wheel(tmp_path / "wheels", "demo", "3.0", "folder")
    build_site(tmp_path / "wheels", tmp_path / "a=b")
    for value, expected in [("a=b/simple", "3.0"), (f"{sources.extra}?x=y", "0.7")]:
        argv = ["install", "--dry-run", "-q", "--report", "-", "--python", str(sources.python)]
        done = subprocess.run(
            [sys.executable, "-m", "wheelwise", *argv, "--default-index", value, "demo"],
            cwd=tmp_path, env={**os.environ, "WHEELWISE_CACHE_DIR": str(tmp_path / "c")},
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        (picked,) = json.loads(done.stdout)["install"]
        assert picked["metadata"]["version"] == expected


@pytest.mark.parametrize(
    ("value", "holds"), [("Bad Name=http://u:secret@h/simple/", "' '"), ("é=http://h/", "'é'")]
)
def test_a_name_uv_refuses_is_one_line_without_the_url(
    sources: Sources, tmp_path: Path, value: str, holds: str
) -> None:
    for option in ("--index", "--default-index"):
        argv = ["install", "--dry-run", "--python", str(sources.python), option, value, "demo"]
        done = wheelwise(argv, tmp_path / "cache")
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert f"holds {holds}" in line
        assert "http" not in line
        assert "secret" not in line
    # (uv's --index splits its value at spaces; its --default-index does not)
    uv = subprocess.run(
        [uv_executable(), "pip", "install", "--no-config", "--dry-run", "--python",
         str(sources.python), "--default-index", value, "demo"],
        env=installer_env(tmp_path), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert uv.returncode == 2, uv.stderr
    assert "Index names" in uv.stderr


@bounded(200)
@given(st.text(max_size=40))
def test_any_index_value_is_a_location_or_one_line(value: str) -> None:
    try:
        location = index_location(value)
    except IndexNameError as exc:
        message = str(exc)
    else:
        assert value.endswith(location)
        assert location == value or value[: -len(location) - 1].isascii()
        return
    assert "\n" not in message
    assert "(NAME=URL)" in message


def assert_picks(
    sources: Sources, tmp_path: Path, requirement: str, expected: list[str | None]
) -> None:
    """What *requirement* installs under first-index, unsafe-first-match,
    unsafe-best-match and no strategy (*expected*, in that order; None: an error),
    for wheelwise and for uv (unsafe-best-match standing for no strategy)."""
    for strategy, version in zip([*INDEX_STRATEGIES, None], expected, strict=True):
        args = index_args(sources, strategy, False)
        assert ours(sources, tmp_path, args, requirement) == version, strategy
        uv_args = index_args(sources, strategy or "unsafe-best-match", False)
        assert uv_picks(sources, tmp_path, uv_args, requirement) == version, strategy


def test_pre_releases_are_allowed_index_by_index_under_first_match(
    sources: Sources, tmp_path: Path
) -> None:
    """pre: 2.0b1 on the first-ranked index, 1.0 on the other. Under the first-index
    strategies only the first index's releases count for the pre-release rule."""
    assert_picks(sources, tmp_path, "pre", ["2.0b1", "2.0b1", "1.0", "1.0"])


def test_list_outdated_gives_what_an_upgrade_would_take(sources: Sources, tmp_path: Path) -> None:
    """pre 1.0 installed; under unsafe-first-match an upgrade takes the first index's
    2.0b1 (its only release), and list --outdated says so; pip's way lists nothing."""
    venv = make_venv(tmp_path / "venv")
    args = index_args(sources, None, False)
    done = wheelwise(["install", "-q", "--python", str(venv), *args, "pre==1.0"], tmp_path / "c")
    assert done.returncode == 0, done.stderr
    listing = ["list", "-o", "--format", "json", "--python", str(venv)]
    for strategy, latest in [("unsafe-first-match", ["2.0b1"]), (None, [])]:
        done = wheelwise([*listing, *index_args(sources, strategy, False)], tmp_path / "c")
        assert done.returncode == 0, done.stderr
        assert [row["latest_version"] for row in json.loads(done.stdout)] == latest
    upgrade = ["install", "-q", "-U", "--python", str(venv), "pre"]
    chosen = index_args(sources, "unsafe-first-match", False)
    done = wheelwise([*upgrade, *chosen, "--report", "-"], tmp_path / "c")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["install"][0]["metadata"]["version"] == "2.0b1"


def first_index_failure(sources: Sources, tmp_path: Path, requirement: str) -> str:
    """The one error line of a ``--dry-run`` install of *requirement* under
    first-index, which must fail."""
    argv = ["install", "--dry-run", "--python", str(sources.python)]
    argv += [*index_args(sources, "first-index", False), requirement]
    done = wheelwise(argv, tmp_path / "cache")
    assert done.returncode != 0
    return done.stderr.strip()


def test_first_index_says_which_index_it_read(sources: Sources, tmp_path: Path) -> None:
    line = first_index_failure(sources, tmp_path, "demo>0.9")
    assert f"searched {sources.extra.rstrip('/')}" in line
    assert sources.main.rstrip("/") not in line  # never asked
    assert "--index-strategy first-index reads only the first index that lists demo" in line


def test_a_project_the_first_index_lacks_comes_from_the_next(
    sources: Sources, tmp_path: Path
) -> None:
    for strategy in INDEX_STRATEGIES:
        args = index_args(sources, strategy, False)
        assert ours(sources, tmp_path, args, "onlymain") == "1.0"
        assert uv_picks(sources, tmp_path, args, "onlymain") == "1.0"


def test_first_match_never_looks_at_a_later_index_for_a_version(
    sources: Sources, tmp_path: Path
) -> None:
    """tagged 1.0 on the first-ranked index fits only Windows: under
    unsafe-first-match (and first-index) the main index's wheel of it is not looked
    at; unsafe-best-match and pip's way take it."""
    assert_picks(sources, tmp_path, "tagged==1.0", [None, None, "1.0", "1.0"])


def origin(python: Path, name: str) -> str:
    return (site_packages(python) / name / "origin.txt").read_text()


def installed_origins(tmp_path: Path, args: list[str], name: str) -> tuple[str, str]:
    """Where the file of *name* came from, installed by wheelwise and by uv into new
    venvs from the sources *args* name."""
    python = make_venv(tmp_path / "ours")
    done = wheelwise(["install", "-q", "--python", str(python), *args, name], tmp_path / "c")
    assert done.returncode == 0, done.stderr
    peer = make_venv(tmp_path / "uv")
    argv = [uv_executable(), "pip", "install", "--no-config", "--no-cache", "-q"]
    subprocess.run(
        [*argv, "--python", str(peer), *args, name],
        env=installer_env(tmp_path),
        check=True,
        capture_output=True,
        timeout=120,
    )
    return origin(python, name), origin(peer, name)


@pytest.mark.parametrize("strategy", INDEX_STRATEGIES)
def test_a_version_on_both_indexes_installs_the_first_ranked_file(
    sources: Sources, tmp_path: Path, strategy: str
) -> None:
    """Real installs of same 1.0, which both indexes have: with any strategy, the
    extra index's file, as uv installs it."""
    args = index_args(sources, strategy, False)
    assert installed_origins(tmp_path, args, "same") == ("extra", "extra")


def test_without_a_strategy_a_version_comes_from_the_first_source(
    sources: Sources, tmp_path: Path
) -> None:
    """Index priority (PEP 825's non-normative section): the --index-url's file. pip
    26.3 has no priority and takes the last index's file of a tie (here: extra)."""
    python = make_venv(tmp_path / "ours")
    args = index_args(sources, None, False)
    done = wheelwise(["install", "-q", "--python", str(python), *args, "same"], tmp_path / "c")
    assert done.returncode == 0, done.stderr
    assert origin(python, "same") == "main"


def test_find_links_files_go_with_every_index_and_come_first(
    sources: Sources, tmp_path: Path
) -> None:
    """lonly: 1.0 in the folder, 2.0 on the main index only: the folder's files are
    read with the main index, so 2.0 wins. sv2: 1.0 in the folder and a Windows-only
    1.0 on the extra index: the folder's 1.0 is taken, not the extra index's 0.5."""
    for strategy in INDEX_STRATEGIES:
        args = index_args(sources, strategy, True)
        for requirement, expected in [("lonly", "2.0"), ("sv2", "1.0")]:
            assert ours(sources, tmp_path, args, requirement) == expected, (strategy, requirement)
            assert uv_picks(sources, tmp_path, args, requirement) == expected, strategy


@pytest.mark.parametrize("strategy", INDEX_STRATEGIES)
def test_a_version_in_the_folder_is_taken_from_it(
    sources: Sources, tmp_path: Path, strategy: str
) -> None:
    """sv 1.0 is in the folder and on both indexes: with a strategy its file comes from
    the folder (uv takes find-links files over an index's), on real installs."""
    args = index_args(sources, strategy, True)
    assert installed_origins(tmp_path, args, "sv") == ("links", "links")


def test_other_errors_of_first_index_give_the_advice_too(sources: Sources, tmp_path: Path) -> None:
    """A conflict (dep2>=2 is on the main index only) and a release whose file does
    not fit (tagged), each with the advice; the strategy that reads every index
    installs both, as uv does."""
    first = index_args(sources, "first-index", False)
    for requirement, starts in [
        ("app", "wheelwise: error: the requirements conflict: dep2 (dep2>=2 required by app"),
        ("tagged", "wheelwise: error: no compatible wheel for tagged"),
    ]:
        line = first_index_failure(sources, tmp_path, requirement)
        assert line.startswith(starts), line
        name = "dep2" if requirement == "app" else requirement
        assert line.endswith(
            f"(--index-strategy first-index reads only the first index that lists {name}; "
            "--index-strategy unsafe-best-match reads every index)"
        ), line
        assert uv_picks(sources, tmp_path, first, requirement) is None
        best = index_args(sources, "unsafe-best-match", False)
        assert ours(sources, tmp_path, best, requirement) == "1.0"
        assert uv_picks(sources, tmp_path, best, requirement) == "1.0"


def test_no_advice_when_every_index_was_asked(sources: Sources, tmp_path: Path) -> None:
    """onlymain is on the last-ranked index: every index was asked, and the error
    names both, with no advice to read more."""
    line = first_index_failure(sources, tmp_path, "onlymain==5")
    assert f"searched {sources.extra}, {sources.main}" in line
    assert "--index-strategy" not in line


def test_first_index_does_not_ask_the_indexes_after_it(sources: Sources, tmp_path: Path) -> None:
    """The --index-url is a port nothing listens on: pip's way fails on it, first-index
    never asks it once the extra index lists the project."""
    dead = f"http://127.0.0.1:{free_port()}/simple/"
    args = ["--index-url", dead, "--extra-index-url", sources.extra, "--retries", "0"]
    assert ours(sources, tmp_path, [*args, "--index-strategy", "first-index"], "demo") == "0.7"
    assert ours(sources, tmp_path, args, "demo") is None


class Forbidden(http.server.BaseHTTPRequestHandler):
    """An index that refuses every request (credentials missing)."""

    def do_GET(self) -> None:
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_refusing_index_is_passed_over_only_by_the_unsafe_strategies(
    sources: Sources, tmp_path: Path
) -> None:
    """An extra index answering 403: the unsafe strategies install from the main
    index with a warning, as uv does; first-index and the default stop there."""
    with handler_served(Forbidden) as base:
        args = ["--index-url", sources.main, "--extra-index-url", f"{base}/simple/"]
        for strategy, expected in [
            ("unsafe-best-match", "1.5"),
            ("unsafe-first-match", "1.5"),
            ("first-index", None),
            (None, None),
        ]:
            chosen = [*args, "--index-strategy", strategy] if strategy else args
            assert ours(sources, tmp_path, chosen, "demo") == expected, strategy
            if strategy is not None:
                assert uv_picks(sources, tmp_path, chosen, "demo") == expected, strategy
        argv = ["install", "--dry-run", "-q", "--python", str(sources.python)]
        done = wheelwise(
            [*argv, *args, "--index-strategy", "unsafe-best-match", "demo", "onlymain"],
            tmp_path / "c",
        )
        assert done.returncode == 0, done.stderr
        warned = "answered 403; this index is passed over under --index-strategy unsafe-best-match"
        assert done.stderr.count(warned) == 1, done.stderr


def test_the_variable_the_configuration_and_a_bad_value(sources: Sources, tmp_path: Path) -> None:
    args = index_args(sources, None, False)
    env = {"WHEELWISE_INDEX_STRATEGY": "first-index"}
    argv = ["install", "--dry-run", "-q", "--report", "-", "--python", str(sources.python)]
    done = wheelwise([*argv, *args, "demo"], tmp_path / "cache", env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["install"][0]["metadata"]["version"] == "0.7"
    config = tmp_path / "config.toml"
    config.write_text('[install]\nindex-strategy = "unsafe-first-match"\n')
    done = wheelwise(
        [*argv, *args, "demo>0.9"], tmp_path / "cache", {"WHEELWISE_CONFIG": str(config)}
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["install"][0]["metadata"]["version"] == "1.5"
    config.write_text("[install]\nindex-strategy = 3\n")
    done = wheelwise([*argv, *args, "demo"], tmp_path / "cache", {"WHEELWISE_CONFIG": str(config)})
    assert done.returncode == 2
    assert "[install] index-strategy = 3 is not one of first-index" in done.stderr
    done = wheelwise([*argv, *args, "--index-strategy", "best", "demo"], tmp_path / "cache")
    assert done.returncode == 2
    assert "'best' is not one of 'first-index', 'unsafe-first-match'" in done.stderr


def test_download_lock_and_list_outdated_follow_it(sources: Sources, tmp_path: Path) -> None:
    args = index_args(sources, "first-index", False)
    done = wheelwise(["download", *args, "demo", "-d", str(tmp_path / "d")], tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["demo-0.7-py3-none-any.whl"]
    lock = tmp_path / "pylock.toml"
    done = wheelwise(["lock", *args, "demo", "-o", str(lock)], tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    text = lock.read_text()
    assert 'version = "0.7"' in text
    assert 'index-strategy = "first-index"' in text
    # a lock made without a strategy records none, so its inputs hash is unchanged
    plain = tmp_path / "plain.toml"
    done = wheelwise(
        ["lock", *index_args(sources, None, False), "demo", "-o", str(plain)], tmp_path / "cache"
    )
    assert done.returncode == 0, done.stderr
    assert "index-strategy" not in plain.read_text()
    assert 'version = "1.5"' in plain.read_text()
    # --check with other inputs is stale (exit 1), even where they no longer resolve:
    # demo>0.9 is only on the index first-index does not ask for demo
    plain_check = ["lock", *index_args(sources, None, False), "--check", "-o", str(plain)]
    assert wheelwise([*plain_check, "demo"], tmp_path / "cache").returncode == 0
    stale = wheelwise([*plain_check, "--index-strategy", "first-index", "demo>0.9"], tmp_path)
    assert stale.returncode == 1, stale.stderr
    assert "the inputs changed" in stale.stderr
    # installing a lock takes no strategy: the lock has chosen
    venv = make_venv(tmp_path / "locked")
    refused = wheelwise(
        ["install", "--python", str(venv), "-r", str(lock), "--index-strategy", "first-index"],
        tmp_path / "cache",
    )
    assert refused.returncode == 2
    assert "--index-strategy cannot be used with a lock file" in refused.stderr
    # list --outdated: demo 0.1 installed; the newest release each strategy would take
    venv = make_venv(tmp_path / "listed")
    done = wheelwise(
        [
            "install",
            "-q",
            "--python",
            str(venv),
            "--no-index",
            "-f",
            str(sources.links),
            "demo==0.1",
        ],
        tmp_path / "cache",
    )
    assert done.returncode == 0, done.stderr
    for strategy, latest in [("first-index", "0.7"), ("unsafe-first-match", "0.7"), (None, "1.5")]:
        listing = ["list", "-o", "--format", "json", "--python", str(venv)]
        done = wheelwise([*listing, *index_args(sources, strategy, False)], tmp_path / "cache")
        assert done.returncode == 0, done.stderr
        assert [row["latest_version"] for row in json.loads(done.stdout)] == [latest], strategy


_VALUES = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=30),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.booleans(),
    st.lists(st.text(st.characters(exclude_categories=["Cs"]), max_size=5), max_size=3),
)


@bounded(200)
@given(_VALUES)
def test_any_configured_value_is_a_strategy_or_one_line(value: object) -> None:
    """``[install] index-strategy`` read from a real configuration file (JSON's
    spelling of these values is TOML's)."""
    from wheelwise.cli.errors import InputError
    from wheelwise.cli.install_cmd import chosen_index_strategy

    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "config.toml"
        config.write_text(f"[install]\nindex-strategy = {json.dumps(value)}\n")
        with mock.patch.dict(os.environ, {"WHEELWISE_CONFIG": str(config)}):
            try:
                assert chosen_index_strategy(None) in INDEX_STRATEGIES
                assert value in INDEX_STRATEGIES
            except InputError as exc:
                assert value not in INDEX_STRATEGIES
                assert "\n" not in str(exc)  # noqa: PT017 - one line, whatever the value
