"""``--exclude-newer``: the moment it takes (``wheelwise.resolve.upload_cutoff``),
upload times read from JSON and HTML pages, and real installs into venvs from an
index on 127.0.0.1 whose links carry ``data-upload-time``, beside uv's installs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.utils import canonicalize_name

from indexkit import demo_wheel, http_server, uv_executable
from installkit import make_venv, site_packages
from variantkit import wheelwise
from wheelwise.client.simple_parse import parse_html_page, parse_json_page
from wheelwise.publish.static import build_site
from wheelwise.resolve.upload_cutoff import (
    CutoffError,
    UploadCutoffs,
    parse_cutoff,
    parse_project_cutoff,
    uploaded_before,
)

NOW = 1_750_000_000.0
JAN_2024 = 1_704_067_200.0  # 2024-01-01T00:00:00Z


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2024-01-01T00:00:00Z", JAN_2024),
        ("2024-01-01T01:30:00+01:30", JAN_2024),
        ("2024-01-01t00:00:00.250z", JAN_2024 + 0.25),
        ("7 days", NOW - 7 * 86400),
        ("1 week, 2 days", NOW - 9 * 86400),
        ("24h", NOW - 86400),
        ("P7D", NOW - 7 * 86400),
        ("PT36H", NOW - 36 * 3600),
        ("P1W", NOW - 7 * 86400),
    ],
)
def test_moments(text: str, moment: float) -> None:
    assert parse_cutoff(text, now=NOW) == moment


def test_a_date_is_the_whole_day_here() -> None:
    import datetime

    # uv's reading: uploads of that day count, up to the next midnight here.
    assert parse_cutoff("2024-01-01") == datetime.datetime(2024, 1, 2).astimezone().timestamp()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("yesterday", "is not a moment"),
        ("2024-13-01", "is not a valid date"),
        ("P", "is not a moment"),
        ("7 parsecs", "is not a moment"),
        ("9" * 400 + " days", r"'9{37}\.\.\.' is not a moment"),
    ],
)
def test_what_is_no_moment(text: str, message: str) -> None:
    with pytest.raises(CutoffError, match=message):
        parse_cutoff(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | st.from_regex(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}"))
def test_any_text_is_a_moment_or_one_line(text: str) -> None:
    try:
        assert isinstance(parse_cutoff(text, now=NOW), float)
    except CutoffError as exc:
        assert "\n" not in str(exc)  # noqa: PT017 - one line, whatever the text
    assert uploaded_before(text, JAN_2024) in (True, False)  # never raises


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("Six_X=2024-01-01T00:00:00Z", ("six-x", JAN_2024)),
        ("torch=7 days", ("torch", NOW - 7 * 86400)),
        ("torch=false", ("torch", None)),
    ],
)
def test_project_moments(text: str, parsed: tuple[str, float | None]) -> None:
    assert parse_project_cutoff(text, now=NOW) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("torch", "is not NAME=MOMENT"),
        ("=2024-01-01", "'' is not a project name"),
        ("-x-=2024-01-01", "'-x-' is not a project name"),
        ("torch=soon", "'soon' is not a moment"),
        ("torch=FALSE", "'FALSE' is not a moment"),  # uv takes lower-case false only
        (" torch =2024-01-01", "' torch ' is not a project name"),
    ],
)
def test_what_is_no_project_moment(text: str, message: str) -> None:
    with pytest.raises(CutoffError, match=message):
        parse_project_cutoff(text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=40) | st.from_regex(r"[a-zA-Z0-9_.-]{1,8}=.{0,20}", fullmatch=True))
def test_any_text_is_a_project_moment_or_one_line(text: str) -> None:
    try:
        name, moment = parse_project_cutoff(text, now=NOW)
    except CutoffError as exc:
        assert "\n" not in str(exc)  # noqa: PT017 - one line, whatever the text
        return
    assert name
    assert moment is None or isinstance(moment, float)


def test_a_projects_moment_comes_before_everyones() -> None:
    alpha, beta, gamma = (canonicalize_name(name) for name in ("alpha", "beta", "gamma"))
    cutoffs = UploadCutoffs(JAN_2024, {alpha: None, beta: NOW})
    assert (cutoffs.of(alpha), cutoffs.of(beta), cutoffs.of(gamma)) == (None, NOW, JAN_2024)
    assert cutoffs.option(alpha) == "--exclude-newer-package"
    assert cutoffs.option(gamma) == "--exclude-newer"


def test_upload_times_before_the_moment_only() -> None:
    assert uploaded_before("2023-12-31T23:59:59.999999Z", JAN_2024)
    assert not uploaded_before("2024-01-01T00:00:00Z", JAN_2024)
    assert not uploaded_before(None, JAN_2024)  # no time: nothing says it is old enough
    assert not uploaded_before("soon", JAN_2024)


def test_pages_give_the_upload_time() -> None:
    body = {
        "meta": {"api-version": "1.1"},
        "name": "alpha",
        "files": [
            {"filename": "alpha-1.0-py3-none-any.whl", "url": "a.whl", "hashes": {},
             "upload-time": "2024-01-01T00:00:00.000000Z"},
            {"filename": "alpha-2.0-py3-none-any.whl", "url": "b.whl", "hashes": {},
             "upload-time": 12},
        ],
    }  # fmt: skip
    first, second = parse_json_page(json.dumps(body).encode(), "http://x/simple/alpha/")
    assert first.upload_time == "2024-01-01T00:00:00.000000Z"
    assert second.upload_time is None  # not a string: as if not given
    html = b'<a href="a.whl" data-upload-time="2024-02-02T00:00:00Z">alpha-1.0-py3-none-any.whl</a>'
    (linked,) = parse_html_page(html, "http://x/simple/alpha/")
    assert linked.upload_time == "2024-02-02T00:00:00Z"


# -- real installs -------------------------------------------------------------------

UPLOADED = {
    "alpha-1.0-py3-none-any.whl": "2024-01-10T00:00:00Z",
    "alpha-2.0-py3-none-any.whl": "2024-06-10T12:00:00Z",
    "beta-1.0-py3-none-any.whl": "2024-01-10T00:00:00Z",
    # alpha 3.0: no upload time
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("exclude-newer")
    wheels = root / "wheels"
    wheels.mkdir()
    for version in ("1.0", "2.0", "3.0"):
        demo_wheel(wheels, f"alpha-{version}-py3-none-any.whl")
    demo_wheel(wheels, "beta-1.0-py3-none-any.whl", requires_dist=["alpha"])
    site = root / "site"
    build_site(wheels, site)
    for page in (site / "simple").glob("*/index.html"):
        text = page.read_text()
        for filename, moment in UPLOADED.items():
            text = re.sub(
                rf'(<a href="[^"]*/{re.escape(filename)}[^"]*")',
                rf'\1 data-upload-time="{moment}"',
                text,
            )
        page.write_text(text)
    with http_server(site) as base:
        yield f"{base}/simple/"


def _alpha_both_install(index: str, tmp_path: Path, flags: list[str]) -> tuple[str | None, ...]:
    """The alpha wheelwise installs with beta and *flags*, and the one uv installs
    (both in UTC: a date is a day here)."""
    ours = make_venv(tmp_path / "ours")
    zone = {"TZ": "UTC"}
    result = wheelwise(
        ["install", "--python", str(ours), "-i", index, *flags, "beta"], tmp_path / "cache", zone
    )
    assert result.returncode == 0, result.stderr
    theirs = make_venv(tmp_path / "theirs")
    uv = subprocess.run(
        [uv_executable(), "pip", "install", "--python", str(theirs), "--index-url", index,
         "--no-cache", *flags, "beta"],
        capture_output=True, text=True, check=False, env={**os.environ, **zone},
    )  # fmt: skip
    assert uv.returncode == 0, uv.stderr
    return _alpha(ours), _alpha(theirs)


def _alpha(python: Path) -> str | None:
    found = [p.name for p in site_packages(python).glob("alpha-*.dist-info")]
    return found[0].removesuffix(".dist-info").split("-")[1] if found else None


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        ("2024-03-01", "1.0"),
        ("2024-06-10", "2.0"),  # a date: the whole day, as uv reads it
        ("2024-06-10T00:00:00Z", "1.0"),
        ("2025-01-01T00:00:00Z", "2.0"),
        (None, "3.0"),
    ],
)
def test_install_takes_what_was_uploaded_before(
    index: str, tmp_path: Path, moment: str | None, expected: str
) -> None:
    flag = ["--exclude-newer", moment] if moment else []
    assert _alpha_both_install(index, tmp_path, flag) == (expected, expected)


def test_what_was_left_out_is_said(index: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    result = wheelwise(
        ["install", "--python", str(python), "-i", index, "--exclude-newer", "2024-03-01",
         "alpha>=2"],
        tmp_path / "cache",
    )  # fmt: skip
    assert result.returncode != 0
    assert "2 more releases left out by --exclude-newer" in result.stderr
    assert _alpha(python) is None


def test_the_environment_variable_and_a_bad_value(index: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    args = ["install", "--python", str(python), "-i", index, "alpha"]
    result = wheelwise(args, tmp_path / "cache", env={"WHEELWISE_EXCLUDE_NEWER": "2024-03-01"})
    assert result.returncode == 0, result.stderr
    assert _alpha(python) == "1.0"
    bad = wheelwise([*args, "--exclude-newer", "soon"], tmp_path / "cache")
    assert bad.returncode == 2
    assert "'soon' is not a moment" in bad.stderr


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--exclude-newer", "2024-03-01", "--exclude-newer-package", "alpha=2025-01-01"], "2.0"),
        (["--exclude-newer-package", "alpha=2024-03-01"], "1.0"),
        (["--exclude-newer", "2024-03-01", "--exclude-newer-package", "alpha=false"], "3.0"),
        (["--exclude-newer-package", "beta=2024-03-01"], "3.0"),
    ],
    ids=["later-for-one", "one-alone", "none-for-one", "another-project"],
)
def test_a_projects_own_moment_as_uv_takes_it(
    index: str, tmp_path: Path, flags: list[str], expected: str
) -> None:
    assert _alpha_both_install(index, tmp_path, flags) == (expected, expected)


def test_what_a_projects_moment_left_out_is_said(index: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    argv = ["install", "--python", str(python), "-i", index]
    result = wheelwise(
        [*argv, "--exclude-newer-package", "alpha=2024-03-01", "alpha>=2"], tmp_path / "cache"
    )
    assert result.returncode != 0
    assert "2 more releases left out by --exclude-newer-package" in result.stderr
    bad = wheelwise([*argv, "--exclude-newer-package", "alpha", "alpha"], tmp_path / "cache")
    assert bad.returncode == 2
    assert "'alpha' is not NAME=MOMENT (or NAME=false)" in bad.stderr
    assert _alpha(python) is None


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")
def test_lock_and_download_take_it_too(index: str, tmp_path: Path) -> None:
    locked = wheelwise(
        ["lock", "-i", index, "--exclude-newer", "2024-03-01", "-o", "-", "beta"],
        tmp_path / "cache",
    )
    assert locked.returncode == 0, locked.stderr
    assert re.search(r'name = "alpha"\nversion = "1.0"', locked.stdout)
    fetched = wheelwise(
        ["download", "-i", index, "--exclude-newer", "2024-03-01", "-d", str(tmp_path / "d"),
         "beta"],
        tmp_path / "cache",
    )  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [
        "alpha-1.0-py3-none-any.whl",
        "beta-1.0-py3-none-any.whl",
    ]


def test_find_links_and_direct_references_are_taken_as_uv_takes_them(tmp_path: Path) -> None:
    """Only an index gives upload times: the files of a find-links folder, and a
    wheel named by path, are not left out (uv installs them too)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for version in ("1.0", "2.0"):
        demo_wheel(wheels, f"alpha-{version}-py3-none-any.whl")
    local = demo_wheel(tmp_path, "gamma-1.0-py3-none-any.whl")
    flag = ["--exclude-newer", "2000-01-01"]
    for name, args in (("links", ["-f", str(wheels), "alpha"]), ("path", [str(local)])):
        ours = make_venv(tmp_path / f"ours-{name}")
        result = wheelwise(
            ["install", "--python", str(ours), "--no-index", *flag, *args], tmp_path / "cache"
        )
        assert result.returncode == 0, result.stderr
        theirs = make_venv(tmp_path / f"theirs-{name}")
        uv = subprocess.run(
            [uv_executable(), "pip", "install", "--python", str(theirs), "--no-index",
             "--no-cache", *flag, *args],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert uv.returncode == 0, uv.stderr
        found = {p.name for p in site_packages(ours).glob("*.dist-info")}
        assert found == {p.name for p in site_packages(theirs).glob("*.dist-info")}
        assert found == ({"alpha-2.0.dist-info"} if name == "links" else {"gamma-1.0.dist-info"})


@pytest.mark.parametrize(
    ("flags", "latest"),
    [
        ([], "3.0"),
        (["--exclude-newer", "2025-01-01T00:00:00Z"], "2.0"),
        (["--exclude-newer", "2024-03-01T00:00:00Z"], None),
        (["--exclude-newer-package", "alpha=2025-01-01T00:00:00Z"], "2.0"),
    ],
)
def test_list_outdated_takes_the_moments(
    index: str, tmp_path: Path, flags: list[str], latest: str | None
) -> None:
    """The same releases as an install sees (uv 0.13.9's pip list --outdated takes
    the options and lists alpha 3.0 whatever they say)."""
    python = make_venv(tmp_path / "venv")
    done = wheelwise(["install", "--python", str(python), "-i", index, "alpha==1.0"], tmp_path)
    assert done.returncode == 0, done.stderr
    ours = wheelwise(
        ["list", "--python", str(python), "-o", "--json", "-i", index, *flags], tmp_path
    )
    assert ours.returncode == 0, ours.stderr
    found = {e["name"]: e["latest_version"] for e in json.loads(ours.stdout)}
    assert found.get("alpha") == latest
