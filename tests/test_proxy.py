"""``wheelwise proxy`` in front of a wheelwise index: real pip and uv (no variant
support asked for) install the build each simulated machine should get, on the
simulated fleet of :mod:`proxykit` (profiles ``h100`` and ``haswell``, and the
proxy's own K10 without GPUs at ``/simple/``).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from gpuhouse import K10, machine
from indexkit import install, parse_anchors
from installkit import make_venv, pip
from proxykit import JSON_PAGE, build_of, installed, page, proxy_process
from variantkit import wheelwise

pytest_plugins = ["proxykit"]

PLAIN = "gpukit-1.0-py3-none-any.whl"
PROFILES = {"": "null", "/p/h100": "cu128", "/p/haswell": "x86_64_v3"}


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["pip", "uv"])
@pytest.mark.parametrize(("prefix", "build"), PROFILES.items())
def test_plain_installers_get_the_build_of_each_machine(
    proxy: str, installer: str, prefix: str, build: str, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv")
    result = install(installer, f"{proxy}{prefix}/simple/", python, tmp_path, "app")
    assert result.returncode == 0, result.stderr
    assert build_of(python) == build
    names = installed(python)
    # Only the CUDA builds need the CUDA runtime (a variant marker says so).
    assert ("cudart" in names) == build.startswith("cu")
    assert {"app", "gpukit"} <= names
    check = pip(python, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    site = next((python.parent.parent / "lib").glob("python3*/site-packages"))
    # The build is still known as a variant: variant.json is kept.
    variant = json.loads((site / "gpukit-1.0.dist-info" / "variant.json").read_text())
    assert list(variant["variants"]) == [build]


@pytest.mark.slow
def test_wheelwise_list_sees_the_build_installed_through_the_proxy(
    proxy: str, tmp_path: Path
) -> None:
    python = make_venv(tmp_path / "venv")
    result = install("pip", f"{proxy}/p/h100/simple/", python, tmp_path, "gpukit")
    assert result.returncode == 0, result.stderr
    listed = wheelwise(["list", "--python", str(python), "--json"], tmp_path / "cache")
    assert listed.returncode == 0, listed.stderr
    builds = {entry["name"]: entry for entry in json.loads(listed.stdout)}
    assert builds["gpukit"]["variant"] == "cu128"


def test_the_page_lists_one_plain_wheel_per_tag_and_says_why(proxy: str) -> None:
    for prefix, build in PROFILES.items():
        response = page(f"{proxy}{prefix}", "gpukit")
        assert response.status_code == 200
        files = response.json()["files"]
        assert [f["filename"] for f in files] == [PLAIN]
        note = files[0]["_wheelwise"]
        assert note["variant"] == build
        assert note["from"] == f"gpukit-1.0-py3-none-any-{build}.whl"
        assert build in note["why"]
        assert response.headers["vary"] == "Accept"
        assert (
            f"variant {build} of gpukit-1.0-py3-none-any-{build}.whl"
            in (response.headers["wheelwise-builds"])
        )
    html = httpx.get(f"{proxy}/p/h100/simple/gpukit/", timeout=30).text
    assert "<!-- " in html
    assert "variant: cu128" in html
    assert list(parse_anchors(html)) == [PLAIN]
    why = httpx.get(f"{proxy}/p/h100/why/gpukit/", timeout=30)
    assert why.status_code == 200
    assert "variant cu128" in why.text
    assert "cu130" in why.text


def test_releases_without_variants_pass_through_byte_for_byte(proxy: str, upstream: str) -> None:
    ours = page(proxy, "cudart").json()["files"]
    theirs = httpx.get(f"{upstream}cudart/", headers={"Accept": JSON_PAGE}).json()["files"]
    assert [f["filename"] for f in ours] == [f["filename"] for f in theirs]
    assert [f["hashes"] for f in ours] == [f["hashes"] for f in theirs]
    url = httpx.URL(f"{proxy}/simple/cudart/").join(ours[0]["url"])
    body = httpx.get(url, timeout=30).content
    upstream_body = httpx.get(httpx.URL(f"{upstream}cudart/").join(theirs[0]["url"])).content
    assert body == upstream_body


def test_rewritten_wheel_hashes_and_metadata_are_announced(proxy: str) -> None:
    base = f"{proxy}/p/h100"
    first = page(base, "gpukit").json()["files"][0]
    url = httpx.URL(f"{base}/simple/gpukit/").join(first["url"])
    wheel = httpx.get(url, timeout=60)
    assert wheel.status_code == 200
    assert wheel.headers["wheelwise-build"] == "variant cu128 of gpukit-1.0-py3-none-any-cu128.whl"
    # Once built, the page gives the wheel's hash, size and metadata hash.
    again = page(base, "gpukit").json()["files"][0]
    assert again["hashes"]["sha256"] == hashlib.sha256(wheel.content).hexdigest()
    assert again["size"] == len(wheel.content)
    metadata = httpx.get(f"{url}.metadata", timeout=30).content
    assert again["core-metadata"]["sha256"] == hashlib.sha256(metadata).hexdigest()
    with zipfile.ZipFile(io.BytesIO(wheel.content)) as archive:
        inside = archive.read("gpukit-1.0.dist-info/METADATA")
        assert "gpukit-1.0.dist-info/variant.json" in archive.namelist()
    assert metadata == inside
    assert b"Requires-Dist: cudart\n" in metadata
    assert b"variant_namespaces" not in metadata
    # The same URL names the same bytes: ranges and revalidation work on it.
    part = httpx.get(url, headers={"Range": "bytes=10-99"}, timeout=30)
    assert part.status_code == 206
    assert part.content == wheel.content[10:100]
    huge = httpx.get(url, headers={"Range": f"bytes=10-{'9' * 5000}"}, timeout=30)
    assert huge.status_code == 206
    assert huge.content == wheel.content[10:]
    # Asked again, once built (a first answer slower than the proxy's 2 s is streamed,
    # without the finished file's ETag).
    etag = httpx.get(url, timeout=30).headers["etag"]
    assert httpx.get(url, headers={"If-None-Match": etag}, timeout=30).status_code == 304
    assert "immutable" in wheel.headers["cache-control"]


def test_pages_revalidate_and_negotiate(proxy: str) -> None:
    first = page(proxy, "gpukit")
    etag = first.headers["etag"]
    assert page(proxy, "gpukit", **{"If-None-Match": etag}).status_code == 304
    assert "no-cache" in first.headers["cache-control"]
    html = page(proxy, "gpukit", Accept="text/html")
    assert html.headers["content-type"].startswith("text/html")
    assert html.headers["etag"] != etag
    refused = page(proxy, "gpukit", Accept="application/xml")
    assert refused.status_code == 406
    projects = httpx.get(f"{proxy}/simple/", headers={"Accept": JSON_PAGE}, timeout=30).json()
    assert [p["name"] for p in projects["projects"]] == ["app", "cudart", "gpukit"]


def test_unknown_projects_and_profiles_are_404s(proxy: str) -> None:
    missing = page(proxy, "nothing-here")
    assert missing.status_code == 404
    assert "nothing-here" in missing.text
    unknown = page(f"{proxy}/p/a100", "gpukit")
    assert unknown.status_code == 404
    assert "h100" in unknown.text  # the profiles there are


def test_concurrent_downloads_get_one_build(proxy: str) -> None:
    base = f"{proxy}/p/haswell"
    entry = page(base, "gpukit").json()["files"][0]
    url = str(httpx.URL(f"{base}/simple/gpukit/").join(entry["url"]))
    with ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(lambda _: httpx.get(url, timeout=60).content, range(8)))
    assert len(set(bodies)) == 1
    with zipfile.ZipFile(io.BytesIO(bodies[0])) as archive:
        assert archive.testzip() is None


@pytest.mark.slow
def test_a_restarted_proxy_reuses_the_wheels_it_built(
    root: Path, upstream: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with proxy_process([upstream], cache, env=machine(K10)) as base:
        entry = page(base, "gpukit").json()["files"][0]
        assert "sha256" not in entry["hashes"]  # nothing built yet
        url = httpx.URL(f"{base}/simple/gpukit/").join(entry["url"])
        built = httpx.get(url, timeout=60).content
    with proxy_process([upstream], cache, env=machine(K10)) as base:
        entry = page(base, "gpukit").json()["files"][0]
        assert entry["hashes"]["sha256"] == hashlib.sha256(built).hexdigest()
