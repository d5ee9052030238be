"""Backwards compatibility with real peers: pip, uv and twine against our index.

Installers that know nothing of wheel variants must ignore the variant wheels and
the ``*-variants.json`` files, exactly as PEP 825 intends: from an index holding
demo_pkg 1.0 (a non-variant wheel and two variant wheels) and 2.0 (variant wheels
only) they install 1.0's non-variant wheel. Each installer runs in a fresh virtual
environment, with no configuration, no cache and no index but ours, against the
live server (``wheelwise index serve`` in a subprocess) and the static site
(served by ``python -m http.server``).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from indexkit import (
    DEMO_NAMESPACES,
    demo_wheel,
    demo_wheels,
    http_server,
    install,
    installer_env,
    parse_anchors,
    wheelwise_serve,
)
from installkit import installed_build, make_venv, site_packages
from wheelwise.publish.negotiation import JSON_V1
from wheelwise.publish.static import build_site

TOKEN = "peer-token"
VARIANT_WHEELS = {
    "1.0": ["demo_pkg-1.0-py3-none-any-null.whl", "demo_pkg-1.0-py3-none-any-x86_64_v1.whl"],
    "2.0": ["demo_pkg-2.0-py3-none-any-null.whl", "demo_pkg-2.0-py3-none-any-x86_64_v1.whl"],
}


@pytest.fixture(scope="module")
def wheel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("peers") / "wheels"
    demo_wheels(directory)
    return directory


@pytest.fixture(scope="module")
def served(wheel_dir: Path) -> Iterator[str]:
    with wheelwise_serve(wheel_dir) as base:
        yield base


@pytest.fixture(scope="module")
def static(wheel_dir: Path) -> Iterator[str]:
    site = wheel_dir.parent / "site"
    build_site(wheel_dir, site)
    with http_server(site) as base:
        yield base


def assert_installed_non_variant(python: Path) -> None:
    dist_infos = list(site_packages(python).glob("demo_pkg-*.dist-info"))
    assert [d.name for d in dist_infos] == ["demo_pkg-1.0.dist-info"]
    assert not (dist_infos[0] / "variant.json").exists()
    assert installed_build(python, "demo_pkg") == "None"


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["pip", "uv"])
@pytest.mark.parametrize("source", ["served", "static"])
def test_installers_ignore_variant_wheels(
    installer: str, source: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    base: str = request.getfixturevalue(source)
    python = make_venv(tmp_path / "venv")
    result = install(installer, f"{base}/simple/", python, tmp_path, "demo_pkg")
    assert result.returncode == 0, result.stdout + result.stderr
    assert_installed_non_variant(python)


@pytest.mark.parametrize("source", ["served", "static"])
@pytest.mark.parametrize("accept", [None, JSON_V1])
def test_variants_json_is_listed_with_the_variant_wheels(
    source: str, accept: str | None, request: pytest.FixtureRequest
) -> None:
    base: str = request.getfixturevalue(source)
    headers = {"Accept": accept} if accept else {}
    url = f"{base}/simple/demo-pkg/" + ("index.json" if accept and source == "static" else "")
    response = httpx.get(url, headers=headers)
    assert response.status_code == 200
    if accept:
        names = [f["filename"] for f in response.json()["files"]]
        links = {f["filename"]: f["url"] for f in response.json()["files"]}
    else:
        anchors = parse_anchors(response.content)
        names = list(anchors)
        links = {name: str(attrs["href"]).partition("#")[0] for name, attrs in anchors.items()}
    for version, variant_wheels in VARIANT_WHEELS.items():
        assert set(variant_wheels) <= set(names)
        variants_json = f"demo_pkg-{version}-variants.json"
        assert variants_json in names
        document = httpx.get(httpx.URL(url).join(links[variants_json])).json()
        assert sorted(document["variants"]) == ["null", "x86_64_v1"]


def twine_upload(base: str, path: Path, home: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "twine", "upload", "--verbose", "--non-interactive"]
    argv += ["--disable-progress-bar", "--repository-url", f"{base}/legacy/"]
    argv += ["-u", "__token__", "-p", TOKEN, str(path)]
    return subprocess.run(
        argv, env=installer_env(home), capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
def test_twine_upload_then_install(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    demo_wheels(wheels)
    outbox = tmp_path / "outbox"
    outbox.mkdir()
    new = demo_wheel(outbox, "demo_pkg-3.0-py3-none-any.whl")
    variant = demo_wheel(
        outbox, "demo_pkg-3.0-py3-none-any-x86_64_v1.whl", "x86_64_v1", DEMO_NAMESPACES
    )
    conflicting = demo_wheel(
        outbox,
        "demo_pkg-1.0-py3-none-manylinux_2_28_x86_64-x86_64_v1.whl",
        "x86_64_v1",
        {"x86_64": {"level": ["v4"]}},
    )
    with wheelwise_serve(wheels, token=TOKEN) as base:
        for path in (new, variant):
            result = twine_upload(base, path, tmp_path)
            assert result.returncode == 0, result.stdout + result.stderr
            assert (wheels / path.name).read_bytes() == path.read_bytes()

        python = make_venv(tmp_path / "venv")
        result = install("pip", f"{base}/simple/", python, tmp_path, "demo_pkg==3.0")
        assert result.returncode == 0, result.stdout + result.stderr
        assert installed_build(python, "demo_pkg") == "None"
        document = httpx.get(f"{base}/files/demo-pkg/demo_pkg-3.0-variants.json").json()
        assert document["variants"] == {"x86_64_v1": {"x86_64": {"level": ["v1"]}}}

        result = twine_upload(base, conflicting, tmp_path)
        output = result.stdout + result.stderr
        assert result.returncode != 0
        assert "400 Bad Request" in output
        assert "label 'x86_64_v1' differs" in output
        assert not (wheels / conflicting.name).exists()

        # Wrong token: refused, nothing written.
        other = demo_wheel(outbox, "demo_pkg-5.0-py3-none-any.whl")
        bad = subprocess.run(
            [
                sys.executable,
                "-m",
                "twine",
                "upload",
                "--non-interactive",
                "--disable-progress-bar",
                "--repository-url",
                f"{base}/legacy/",
                "-u",
                "__token__",
                "-p",
                "nope",
                str(other),
            ],
            env=installer_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert bad.returncode != 0
        assert "401" in bad.stdout + bad.stderr
        assert not (wheels / other.name).exists()


def test_installed_wheel_is_the_published_file(served: str, wheel_dir: Path) -> None:
    """The hash pip checks is the file's: what the page says is what is served."""
    anchors = parse_anchors(httpx.get(f"{served}/simple/demo-pkg/").content)
    href = str(anchors["demo_pkg-1.0-py3-none-any.whl"]["href"])
    body = httpx.get(httpx.URL(f"{served}/simple/demo-pkg/").join(href)).content
    assert href.endswith("#sha256=" + hashlib.sha256(body).hexdigest())
    assert body == (wheel_dir / "demo_pkg-1.0-py3-none-any.whl").read_bytes()


@pytest.mark.slow
def test_server_prints_nothing_to_stdout(wheel_dir: Path, tmp_path: Path) -> None:
    output: list[bytes] = []
    with wheelwise_serve(wheel_dir, token=TOKEN, output=output) as base:
        assert httpx.get(f"{base}/simple/demo-pkg/").status_code == 200
        assert httpx.get(f"{base}/files/demo-pkg/missing.whl").status_code == 404
        rejected = httpx.post(
            f"{base}/legacy/",
            data={":action": "file_upload", "name": "demo-pkg", "version": "9.0"},
            files={"content": ("demo_pkg-9.0-py3-none-any.whl", b"junk")},
            auth=("__token__", TOKEN),
        )
        assert rejected.status_code == 400
    stdout, stderr = output
    assert stdout == b""
    assert b"Uvicorn running on http://127.0.0.1:" in stderr
