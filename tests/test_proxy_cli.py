"""``wheelwise proxy``'s options: mistakes are one-line errors before anything listens;
a ``file://`` upstream (a static site on disk) is served too."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuhouse import demo_house
from indexkit import uvicorn_thread
from variantkit import wheelwise
from wheelwise.cli.errors import InputError
from wheelwise.cli.options import parse_size
from wheelwise.proxy.run import ProxyOptions, build_app
from wheelwise.publish.static import build_site
from wheelwise.variants.supported import SupportedProperties

JSON_PAGE = "application/vnd.pypi.simple.v1+json"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--upstream", "ftp://x/simple/"], "give the http(s):// URL of a simple index"),
        (["--upstream", "http://x/", "--profile", "H100=a.json"], "--profile 'H100=a.json'"),
        (["--upstream", "http://x/", "--profile", "h100"], "give NAME=FILE"),
        (["--upstream", "http://x/", "--max-cache-size", "lots"], "such as 500M or 20G"),
        (["--upstream", "http://x/", "--system", "missing.json"], "missing.json"),
    ],
)
def test_mistakes_are_one_line_errors(args: list[str], message: str, tmp_path: Path) -> None:
    result = wheelwise(["proxy", *args], tmp_path / "cache", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]


def test_a_profile_given_twice_is_refused(tmp_path: Path) -> None:
    system = tmp_path / "s.json"
    system.write_text('{"system": {"x86_64": {"level": ["v3"]}}}')
    args = ["--upstream", "http://x/", "--profile", f"a={system}", "--profile", f"a={system}"]
    result = wheelwise(["proxy", *args], tmp_path / "cache")
    assert result.returncode == 2
    assert "--profile 'a' is given twice" in result.stderr


@pytest.mark.parametrize(
    ("text", "size"),
    [("1048576", 1 << 20), ("500M", 500 << 20), ("20G", 20 << 30), ("2gib", 2 << 30)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30) | st.from_regex(r"\A[0-9٠-٩]{1,6000}[kKmMgGtT]?\Z"))
def test_any_size_text_is_bytes_or_one_input_error(text: str) -> None:
    """Whatever is given (non-ASCII digits, thousands of them): a byte count, or the
    one-line input error that names the option; never another exception."""
    try:
        size = parse_size(text)
    except InputError as exc:
        message = str(exc)
        assert message.startswith("--max-cache-size ")
        assert "\n" not in message
        assert len(message) < 200
    else:
        assert 0 <= size < 1 << 107
        assert text.strip()[:1].isascii()


def test_a_static_site_on_disk_is_an_upstream(tmp_path: Path) -> None:
    house = tmp_path / "wheels"
    demo_house(house)
    site = tmp_path / "site"
    build_site(house, site)
    haswell = SupportedProperties.from_dict({"x86_64": {"level": ["v3", "v2", "v1"]}})
    options = ProxyOptions(
        [(site / "simple").as_uri() + "/"], tmp_path / "cache", system=(haswell, "haswell.json")
    )
    with uvicorn_thread(build_app(options)) as base, httpx.Client(base_url=base) as client:
        names = client.get("/simple/", headers={"Accept": JSON_PAGE}).json()["projects"]
        files = client.get("/simple/gpukit/", headers={"Accept": JSON_PAGE}).json()["files"]
        wheel = client.get(httpx.URL(f"{base}/simple/gpukit/").join(files[0]["url"]))
    assert [n["name"] for n in names] == ["app", "cudart", "gpukit"]
    assert [f["_wheelwise"]["variant"] for f in files] == ["x86_64_v3"]
    assert wheel.status_code == 200
    assert wheel.headers["wheelwise-build"].startswith("variant x86_64_v3 of ")
