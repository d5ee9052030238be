"""The static site served by Debian's nginx, with the configuration in docs/index.md: pip and uv
install from it, and the ``Accept`` mapping serves PEP 691 JSON to them.

nginx must be installed (.ci/run installs it): in CI (``CI`` set) a missing nginx
fails this test; elsewhere it is skipped.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from indexkit import (
    demo_wheels,
    free_port,
    install,
    running,
)
from installkit import installed_build, make_venv, site_packages
from wheelwise.publish.negotiation import JSON_V1
from wheelwise.publish.static import STATE_FILE, build_site

# The snippet of docs/index.md, inside a minimal nginx.conf whose every path is in tmp.
CONFIG = """\
daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
{user}
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    types {{
        text/html html;
        application/json json;
        text/plain metadata;
        application/octet-stream whl;
        application/gzip gz;
    }}
    default_type application/octet-stream;

    # PEP 691: JSON for clients that ask for it (pip, uv), HTML otherwise.
    map $http_accept $simple_index {{
        default index.html;
        "~application/vnd\\.pypi\\.simple\\.(v1|latest)\\+json" index.json;
    }}

    server {{
        listen 127.0.0.1:{port};
        root {site};
        location /simple/ {{
            index $simple_index;
            types {{
                text/html html;
                application/vnd.pypi.simple.v1+json json;
            }}
            add_header Vary Accept;
        }}
        location ~ /\\. {{ return 404; }}
    }}
}}
"""


def nginx_executable() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        message = "nginx is not installed (apt-get install nginx-light)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; .ci/run installs it before the tests")
        pytest.skip(message)
    return found


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    executable = nginx_executable()
    tmp = tmp_path_factory.mktemp("nginx")
    wheels = tmp / "wheels"
    demo_wheels(wheels)
    site = tmp / "site"
    build_site(wheels, site)
    port = free_port()
    # Workers run as "nobody" unless told otherwise when nginx starts as root.
    user = "user root;" if os.geteuid() == 0 else ""
    conf = tmp / "nginx.conf"
    conf.write_text(CONFIG.format(tmp=tmp, site=site, port=port, user=user))
    argv = [executable, "-p", str(tmp), "-c", str(conf), "-e", str(tmp / "error.log")]
    base = f"http://127.0.0.1:{port}"
    with running(argv, f"{base}/simple/"):
        yield base, site


@pytest.mark.slow
def test_pip_and_uv_install_from_nginx(nginx: tuple[str, Path], tmp_path: Path) -> None:
    base, _ = nginx
    for installer in ("pip", "uv"):
        python = make_venv(tmp_path / installer)
        result = install(installer, f"{base}/simple/", python, tmp_path, "demo_pkg")
        assert result.returncode == 0, result.stdout + result.stderr
        dist_info = site_packages(python) / "demo_pkg-1.0.dist-info"
        assert dist_info.is_dir()
        assert not (dist_info / "variant.json").exists()
        assert installed_build(python, "demo_pkg") == "None"


def test_accept_mapping(nginx: tuple[str, Path]) -> None:
    base, site = nginx
    html = httpx.get(f"{base}/simple/demo-pkg/")
    assert html.headers["content-type"].startswith("text/html")
    assert html.content == (site / "simple/demo-pkg/index.html").read_bytes()
    as_json = httpx.get(f"{base}/simple/demo-pkg/", headers={"Accept": JSON_V1})
    assert as_json.headers["content-type"] == JSON_V1
    assert as_json.headers["vary"] == "Accept"
    assert as_json.json()["name"] == "demo-pkg"
    redirect = httpx.get(f"{base}/simple/demo-pkg")
    assert redirect.status_code == 301


def test_files_and_state(nginx: tuple[str, Path]) -> None:
    base, site = nginx
    metadata = httpx.get(f"{base}/files/demo-pkg/demo_pkg-1.0-py3-none-any.whl.metadata")
    assert metadata.status_code == 200
    assert metadata.headers["content-type"].startswith("text/plain")
    variants = httpx.get(f"{base}/files/demo-pkg/demo_pkg-1.0-variants.json")
    assert variants.headers["content-type"] == "application/json"
    assert variants.content == (site / "files/demo-pkg/demo_pkg-1.0-variants.json").read_bytes()
    ranged = httpx.get(
        f"{base}/files/demo-pkg/demo_pkg-1.0-py3-none-any.whl", headers={"Range": "bytes=0-3"}
    )
    assert ranged.status_code == 206
    assert ranged.content == b"PK\x03\x04"
    assert httpx.get(f"{base}/{STATE_FILE}").status_code == 404
