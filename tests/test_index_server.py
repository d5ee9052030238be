"""``wheelwise index serve``: a real uvicorn server on 127.0.0.1, talked to with httpx."""

from __future__ import annotations

import hashlib
import http.client
import os
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexkit import demo_folder, demo_sdist, demo_wheel, demo_wheels, parse_anchors, uvicorn_thread
from wheelwise.publish.http import UNSATISFIABLE, ByteRange, none_match, parse_range
from wheelwise.publish.negotiation import HTML_V1, JSON_V1, TEXT_HTML, choose
from wheelwise.publish.server import create_app
from wheelwise.publish.static import build_site

PIP_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, "
    "text/html; q=0.01"
)
WHEEL = "demo_pkg-1.0-py3-none-any.whl"
WHEEL_URL = f"/files/demo-pkg/{WHEEL}"
TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def wheel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = demo_folder(tmp_path_factory.mktemp("served"))
    (directory / "secret.txt").write_text("not published")
    return directory


@pytest.fixture(scope="module")
def client(wheel_dir: Path) -> Iterator[httpx.Client]:
    with uvicorn_thread(create_app(wheel_dir)) as base, httpx.Client(base_url=base) as http:
        yield http


def raw_get(client: httpx.Client, path: str) -> int:
    """GET *path* exactly as written (httpx would normalize dot segments)."""
    url = urlsplit(str(client.base_url))
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


# -- content negotiation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, TEXT_HTML),
        ("", TEXT_HTML),
        ("*/*", TEXT_HTML),
        ("text/html", TEXT_HTML),
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", TEXT_HTML),
        (PIP_ACCEPT, JSON_V1),
        ("application/vnd.pypi.simple.v1+json", JSON_V1),
        ("application/vnd.pypi.simple.latest+json", JSON_V1),
        ("application/vnd.pypi.simple.v1+html", HTML_V1),
        ("application/vnd.pypi.simple.v1+json, text/html", JSON_V1),
        ("text/html;q=0.5, application/vnd.pypi.simple.v1+json;q=0.4", TEXT_HTML),
        ("application/vnd.pypi.simple.v1+json;q=0, */*;q=0.1", TEXT_HTML),
        ("application/*", JSON_V1),
        ("application/json", None),
        ("application/vnd.pypi.simple.v1+json;q=0", None),
        ("application/vnd.pypi.simple.v2+json", None),
        ("text/html;q=bogus", None),
    ],
)
def test_choose(accept: str | None, expected: str | None) -> None:
    assert choose(accept) == expected


@pytest.mark.parametrize(
    ("accept", "content_type"),
    [
        (None, "text/html; charset=utf-8"),
        (PIP_ACCEPT, JSON_V1),
        (HTML_V1, HTML_V1),
        ("text/html", "text/html; charset=utf-8"),
    ],
)
@pytest.mark.parametrize("path", ["/simple/", "/simple/demo-pkg/"])
def test_negotiated_pages(
    client: httpx.Client, path: str, accept: str | None, content_type: str
) -> None:
    headers = {"Accept": accept} if accept is not None else {}
    response = client.get(path, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == content_type
    assert response.headers["vary"] == "Accept"
    if content_type == JSON_V1:
        assert response.json()["meta"] == {"api-version": "1.1"}
    else:
        assert response.text.startswith("<!DOCTYPE html>")


def test_not_acceptable(client: httpx.Client) -> None:
    response = client.get("/simple/demo-pkg/", headers={"Accept": "application/json"})
    assert response.status_code == 406
    assert JSON_V1 in response.text


def test_format_parameter(client: httpx.Client) -> None:
    response = client.get("/simple/demo-pkg/", params={"format": JSON_V1})
    assert response.headers["content-type"] == JSON_V1
    assert client.get("/simple/", params={"format": "text/plain"}).status_code == 406


def test_pages_match_the_static_site(client: httpx.Client, wheel_dir: Path, tmp_path: Path) -> None:
    build_site(wheel_dir, tmp_path / "site")
    site = tmp_path / "site" / "simple"
    for path, page in [("/simple/", site), ("/simple/demo-pkg/", site / "demo-pkg")]:
        assert client.get(path).content == (page / "index.html").read_bytes()
        served = client.get(path, headers={"Accept": JSON_V1}).content
        assert served == (page / "index.json").read_bytes()


def test_project_page_contents(client: httpx.Client, wheel_dir: Path) -> None:
    anchors = parse_anchors(client.get("/simple/demo-pkg/").content)
    assert "demo_pkg-1.0-variants.json" in anchors
    assert "demo_pkg-2.0-variants.json" in anchors
    for name, attrs in anchors.items():
        href = attrs["href"]
        assert href is not None
        url, _, fragment = href.partition("#")
        body = client.get(httpx.URL("/simple/demo-pkg/").join(url)).content
        assert fragment == f"sha256={hashlib.sha256(body).hexdigest()}", name
        if name.endswith(".whl"):
            assert body == (wheel_dir / name).read_bytes()
            metadata = client.get(httpx.URL("/simple/demo-pkg/").join(url + ".metadata"))
            assert metadata.status_code == 200
            assert attrs["data-core-metadata"] == (
                f"sha256={hashlib.sha256(metadata.content).hexdigest()}"
            )
    other = client.get("/simple/other-project/").text
    assert 'data-requires-python="&lt;4,&gt;=3.9"' in other


def test_redirects_to_the_normalized_name(client: httpx.Client) -> None:
    for path in ["/simple/Demo_Pkg/", "/simple/demo.pkg", "/simple/demo-pkg"]:
        response = client.get(path, params={"format": JSON_V1})
        assert response.status_code == 301
        location = httpx.URL(response.headers["location"])
        assert location.path == "/simple/demo-pkg/"
        assert location.params["format"] == JSON_V1
    assert client.get("/simple/Demo_Pkg/", follow_redirects=True).status_code == 200


def test_unknown_project(client: httpx.Client) -> None:
    assert client.get("/simple/nothing-here/").status_code == 404
    assert client.get("/files/nothing-here/x.whl").status_code == 404


# -- caching, ranges, types ---------------------------------------------------------------


@pytest.mark.parametrize("path", ["/simple/", "/simple/demo-pkg/", WHEEL_URL])
def test_etag_and_not_modified(client: httpx.Client, path: str) -> None:
    first = client.get(path)
    etag = first.headers["etag"]
    assert etag.startswith('"')
    again = client.get(path, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    assert client.get(path, headers={"If-None-Match": f"W/{etag}"}).status_code == 304
    assert client.get(path, headers={"If-None-Match": '"other", *'}).status_code == 304
    assert client.get(path, headers={"If-None-Match": '"other"'}).status_code == 200


def test_etags_differ_per_representation(client: httpx.Client) -> None:
    html = client.get("/simple/demo-pkg/").headers["etag"]
    json_etag = client.get("/simple/demo-pkg/", headers={"Accept": JSON_V1}).headers["etag"]
    assert html != json_etag
    response = client.get("/simple/demo-pkg/", headers={"Accept": JSON_V1, "If-None-Match": html})
    assert response.status_code == 200


def test_file_etag_is_the_sha256(client: httpx.Client, wheel_dir: Path) -> None:
    digest = hashlib.sha256((wheel_dir / WHEEL).read_bytes()).hexdigest()
    assert client.get(WHEEL_URL).headers["etag"] == f'"{digest}"'


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        (WHEEL_URL, "application/octet-stream"),
        (WHEEL_URL + ".metadata", "text/plain; charset=utf-8"),
        ("/files/demo-pkg/demo_pkg-1.0-variants.json", "application/json"),
        ("/files/demo-pkg/demo_pkg-1.0.tar.gz", "application/gzip"),
    ],
)
def test_file_content_types(client: httpx.Client, path: str, content_type: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == content_type
    assert response.headers["accept-ranges"] == "bytes"
    assert int(response.headers["content-length"]) == len(response.content)


def test_variants_json_is_canonical(client: httpx.Client, variant_schema_validator: Any) -> None:
    document = client.get("/files/demo-pkg/demo_pkg-1.0-variants.json").json()
    variant_schema_validator.validate(document)
    assert document["variants"] == {"null": {}, "x86_64_v1": {"x86_64": {"level": ["v1"]}}}


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [("bytes=0-9", 0, 9), ("bytes=5-", 5, None), ("bytes=-7", -7, None), ("bytes=3-3", 3, 3)],
)
@pytest.mark.parametrize("path", [WHEEL_URL, WHEEL_URL + ".metadata"])
def test_ranges(client: httpx.Client, path: str, header: str, start: int, end: int | None) -> None:
    whole = client.get(path).content
    size = len(whole)
    response = client.get(path, headers={"Range": header})
    assert response.status_code == 206
    expected = whole[start : (end + 1 if end is not None else None)]
    assert response.content == expected
    first = start if start >= 0 else size + start
    assert response.headers["content-range"] == f"bytes {first}-{first + len(expected) - 1}/{size}"
    assert int(response.headers["content-length"]) == len(expected)


def test_range_past_the_end_is_unsatisfiable(client: httpx.Client, wheel_dir: Path) -> None:
    size = (wheel_dir / WHEEL).stat().st_size
    response = client.get(WHEEL_URL, headers={"Range": f"bytes={size}-"})
    assert response.status_code == 416
    assert response.headers["content-range"] == f"bytes */{size}"
    assert client.get(WHEEL_URL, headers={"Range": "bytes=-0"}).status_code == 416


def test_ranges_with_numbers_of_thousands_of_digits(client: httpx.Client) -> None:
    whole = client.get(WHEEL_URL).content
    huge = "9" * 5000
    tail = client.get(WHEEL_URL, headers={"Range": f"bytes=0-{huge}"})
    assert tail.status_code == 206
    assert tail.content == whole
    assert client.get(WHEEL_URL, headers={"Range": f"bytes={huge}-"}).status_code == 416
    assert client.get(WHEEL_URL, headers={"Range": f"bytes=-{huge}"}).content == whole


@pytest.mark.parametrize(
    "header", ["bytes=9-2", "items=0-1", "bytes=0-1,4-5", "bytes=a-b", "bytes=-", "garbage"]
)
def test_ignored_ranges_send_the_whole_file(client: httpx.Client, header: str) -> None:
    response = client.get(WHEEL_URL, headers={"Range": header})
    assert response.status_code == 200
    assert response.content == client.get(WHEEL_URL).content


def test_if_range(client: httpx.Client) -> None:
    etag = client.get(WHEEL_URL).headers["etag"]
    matching = client.get(WHEEL_URL, headers={"Range": "bytes=0-1", "If-Range": etag})
    assert matching.status_code == 206
    stale = client.get(WHEEL_URL, headers={"Range": "bytes=0-1", "If-Range": '"old"'})
    assert stale.status_code == 200


def test_head(client: httpx.Client) -> None:
    for path in [WHEEL_URL, "/simple/demo-pkg/"]:
        full = client.get(path)
        head = client.head(path)
        assert head.status_code == 200
        assert head.content == b""
        assert head.headers["content-length"] == str(len(full.content))
        assert head.headers["etag"] == full.headers["etag"]


def test_parse_range_unit() -> None:
    assert parse_range(None, 10) is None
    assert parse_range("bytes=0-100", 10) == ByteRange(0, 9)
    assert parse_range("bytes=-100", 10) == ByteRange(0, 9)
    assert none_match('W/"a"', '"a"')
    assert not none_match(None, '"a"')


# -- path traversal -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/files/../../etc/passwd",
        "/files/demo-pkg/../../../etc/passwd",
        "/files/demo-pkg/..%2F..%2F..%2Fetc%2Fpasswd",
        "/files/demo-pkg/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/files/%2e%2e/%2e%2e/etc/passwd",
        "/files/demo-pkg/..",
        "/files/demo-pkg/%2e%2e",
        "/files/demo-pkg/secret.txt",
        "/files/demo-pkg/.wheelwise-upload",
        "/files/other-project/demo_pkg-1.0-py3-none-any.whl",
        "/files/demo-pkg/%2Fetc%2Fpasswd",
        "/files/demo-pkg/..%5C..%5Csecret.txt",
        "//etc/passwd",
        "/simple/..%2F..%2Fetc%2Fpasswd/",
    ],
)
def test_no_path_traversal(client: httpx.Client, path: str) -> None:
    assert raw_get(client, path) == 404


# -- a directory that changes ---------------------------------------------------------


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[Path, httpx.Client]]:
    directory = tmp_path / "live"
    demo_wheels(directory)
    app = create_app(directory, upload_token=TOKEN, recheck_interval=60)
    with uvicorn_thread(app) as base, httpx.Client(base_url=base) as http:
        yield directory, http


def test_new_and_removed_files_show_up(live: tuple[Path, httpx.Client]) -> None:
    directory, client = live
    assert "demo_pkg-3.0-py3-none-any.whl" not in parse_anchors(
        client.get("/simple/demo-pkg/").content
    )
    demo_wheel(directory, "demo_pkg-3.0-py3-none-any.whl")
    assert "demo_pkg-3.0-py3-none-any.whl" in parse_anchors(client.get("/simple/demo-pkg/").content)
    assert client.get("/files/demo-pkg/demo_pkg-3.0-py3-none-any.whl").status_code == 200
    (directory / "demo_pkg-3.0-py3-none-any.whl").unlink()
    assert "demo_pkg-3.0-py3-none-any.whl" not in parse_anchors(
        client.get("/simple/demo-pkg/").content
    )
    assert client.get("/files/demo-pkg/demo_pkg-3.0-py3-none-any.whl").status_code == 404


def test_a_file_rewritten_in_place_is_rescanned(live: tuple[Path, httpx.Client]) -> None:
    directory, client = live
    path = directory / WHEEL
    old = client.get(WHEEL_URL).headers["etag"]
    stat = path.stat()
    demo_wheel(directory, WHEEL, requires_python=">=3.12")  # same name: the directory is unchanged
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    response = client.get(WHEEL_URL)
    assert response.content == path.read_bytes()
    assert response.headers["etag"] != old
    anchors = parse_anchors(client.get("/simple/demo-pkg/").content)
    assert anchors[WHEEL]["data-requires-python"] == ">=3.12"


def test_a_file_seen_half_written_is_read_again_when_finished(
    live: tuple[Path, httpx.Client], tmp_path: Path
) -> None:
    directory, client = live
    name = "demo_pkg-3.0-py3-none-any.whl"
    whole = demo_wheel(tmp_path, name).read_bytes()
    with open(directory / name, "wb") as partial:  # the directory changes here, once
        partial.write(whole[: len(whole) // 2])
        partial.flush()
        assert name not in parse_anchors(client.get("/simple/demo-pkg/").content)
        partial.write(whole[len(whole) // 2 :])
    assert name in parse_anchors(client.get("/simple/demo-pkg/").content)


def test_inconsistent_directory_fails_only_that_project(live: tuple[Path, httpx.Client]) -> None:
    directory, client = live
    demo_wheel(
        directory,
        "demo_pkg-1.0-py3-none-linux_x86_64-x86_64_v1.whl",
        "x86_64_v1",
        {"x86_64": {"level": ["v4"]}},
    )
    demo_wheel(directory, "fine-1.0-py3-none-any.whl")
    response = client.get("/simple/demo-pkg/")
    assert response.status_code == 500
    assert "label 'x86_64_v1'" in response.text
    assert client.get("/simple/fine/").status_code == 200


# -- uploads ------------------------------------------------------------------------------


def upload(
    client: httpx.Client,
    path: Path,
    *,
    auth: tuple[str, str] | None = ("__token__", TOKEN),
    url: str = "/legacy/",
    overrides: dict[str, str] | None = None,
) -> httpx.Response:
    data = path.read_bytes()
    name, version = path.name.split("-")[:2]
    fields = {
        ":action": "file_upload",
        "protocol_version": "1",
        "name": name.replace("_", "-"),
        "version": version,
        "filetype": "bdist_wheel",
        "pyversion": "py3",
        "metadata_version": "2.1",
        "sha256_digest": hashlib.sha256(data).hexdigest(),
        "blake2_256_digest": hashlib.blake2b(data, digest_size=32).hexdigest(),
    }
    fields.update(overrides or {})
    files = {"content": (path.name, data, "application/octet-stream")}
    return client.post(
        url, data=fields, files=files, auth=auth if auth is not None else httpx.USE_CLIENT_DEFAULT
    )


@pytest.fixture
def outbox(tmp_path: Path) -> Path:
    directory = tmp_path / "outbox"
    directory.mkdir()
    return directory


@pytest.mark.parametrize("url", ["/legacy/", "/legacy", "/"])
def test_upload(live: tuple[Path, httpx.Client], outbox: Path, url: str) -> None:
    directory, client = live
    wheel = demo_wheel(outbox, "demo_pkg-3.0-py3-none-any.whl")
    response = upload(client, wheel, url=url)
    assert response.status_code == 200, response.text
    assert (directory / wheel.name).read_bytes() == wheel.read_bytes()
    assert wheel.name in parse_anchors(client.get("/simple/demo-pkg/").content)
    assert not (directory / ".wheelwise-upload").exists()
    # The same file again is fine; other content under that name is not.
    assert upload(client, wheel, url=url).status_code == 200
    demo_wheel(outbox, wheel.name, requires_python=">=3.12")
    response = upload(client, wheel, url=url)
    assert response.status_code == 409
    assert "already exists with different content" in response.text


def test_upload_of_a_new_project_and_variant(live: tuple[Path, httpx.Client], outbox: Path) -> None:
    _, client = live
    assert upload(client, demo_wheel(outbox, "fresh-0.1-py3-none-any.whl")).status_code == 200
    variant = demo_wheel(
        outbox,
        "demo_pkg-1.0-py3-none-any-x86_64_v3.whl",
        "x86_64_v3",
        {"x86_64": {"level": ["v3"]}},
    )
    assert upload(client, variant).status_code == 200
    document = client.get("/files/demo-pkg/demo_pkg-1.0-variants.json").json()
    assert sorted(document["variants"]) == ["null", "x86_64_v1", "x86_64_v3"]
    assert client.get("/simple/fresh/").status_code == 200


def test_upload_without_a_configured_token(tmp_path: Path, outbox: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    with uvicorn_thread(create_app(directory)) as base, httpx.Client(base_url=base) as client:
        response = upload(client, demo_wheel(outbox, "pkg-1.0-py3-none-any.whl"))
    assert response.status_code == 403
    assert "--upload-token" in response.text
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        (None, "authentication required"),
        (("__token__", "wrong"), "invalid upload token"),
        (("alice", TOKEN), "unknown user 'alice'"),
    ],
)
def test_upload_credentials(
    live: tuple[Path, httpx.Client], outbox: Path, auth: tuple[str, str] | None, message: str
) -> None:
    directory, client = live
    wheel = demo_wheel(outbox, "demo_pkg-3.0-py3-none-any.whl")
    response = upload(client, wheel, auth=auth)
    assert response.status_code == 401
    assert message in response.text
    assert response.headers["www-authenticate"].startswith("Basic")
    assert not (directory / wheel.name).exists()


def test_upload_with_malformed_credentials(live: tuple[Path, httpx.Client], outbox: Path) -> None:
    _, client = live
    wheel = demo_wheel(outbox, "demo_pkg-3.0-py3-none-any.whl")
    data = {":action": "file_upload", "name": "demo-pkg", "version": "3.0"}
    files = {"content": (wheel.name, wheel.read_bytes())}
    response = client.post(
        "/legacy/", data=data, files=files, headers={"Authorization": "Basic !!!"}
    )
    assert response.status_code == 401


def _variant(outbox: Path, filename: str, label: str, level: str, **kwargs: Any) -> Path:
    return demo_wheel(outbox, filename, label, {"x86_64": {"level": [level]}}, **kwargs)


@pytest.mark.parametrize(
    ("make", "overrides", "message"),
    [
        (
            lambda o: _variant(
                o, "demo_pkg-1.0-py3-none-linux_x86_64-x86_64_v1.whl", "x86_64_v1", "v4"
            ),
            {},
            "label 'x86_64_v1' differs",
        ),
        (
            lambda o: _variant(
                o,
                "demo_pkg-1.0-py3-none-any-x86_64_v4.whl",
                "x86_64_v4",
                "v4",
                namespaces=["nvidia", "x86_64"],
            ),
            {},
            "default-priorities.namespace",
        ),
        (
            lambda o: demo_wheel(o, "demo_pkg-3.0-py3-none-any.whl"),
            {"sha256_digest": "0" * 64},
            "sha256_digest 0000",
        ),
        (
            lambda o: demo_wheel(o, "demo_pkg-3.0-py3-none-any.whl"),
            {"blake2_256_digest": "0" * 64},
            "blake2_256_digest",
        ),
        (
            lambda o: demo_wheel(o, "demo_pkg-3.0-py3-none-any.whl"),
            {"name": "other"},
            "name='other'",
        ),
        (
            lambda o: demo_wheel(o, "demo_pkg-3.0-py3-none-any.whl"),
            {"version": "3.1"},
            "version='3.1'",
        ),
        (
            lambda o: demo_wheel(o, "demo_pkg-3.0-py3-none-any.whl"),
            {":action": "submit"},
            "unsupported :action 'submit'",
        ),
        (
            lambda o: demo_wheel(
                o,
                "demo_pkg-3.0-py3-none-any.whl",
                extra_members={
                    "demo_pkg-3.0.dist-info/METADATA": b"Name: demo-pkg\nVersion: 3.1\n"
                },
            ),
            {},
            "METADATA says Name: demo-pkg, Version: 3.1",
        ),
        (
            lambda o: demo_wheel(o, "demo_pkg-3.0-py3-none-any-x86_64_v1.whl"),
            {},
            "has no *.dist-info/variant.json",
        ),
        (
            lambda o: _bad_record(o),
            {},
            "does not match its RECORD hash",
        ),
        (lambda o: _write(o, "demo_pkg-3.0-py3-none-any-BAD.whl"), {}, "invalid wheel filename"),
        (lambda o: _write(o, "demo_pkg-3.0.zip"), {}, "only wheels (.whl) and sdists"),
        (lambda o: _write(o, "demo_pkg-3.0-py3-none-any.whl"), {}, "not a valid wheel"),
    ],
)
def test_upload_validation(
    live: tuple[Path, httpx.Client],
    outbox: Path,
    make: Any,
    overrides: dict[str, str],
    message: str,
) -> None:
    directory, client = live
    before = sorted(p.name for p in directory.iterdir())
    response = upload(client, make(outbox), overrides=overrides)
    assert response.status_code == 400, response.text
    assert message in response.text
    assert sorted(p.name for p in directory.iterdir()) == before


def _write(outbox: Path, filename: str) -> Path:
    path = outbox / filename
    path.write_bytes(b"junk")
    return path


def _bad_record(outbox: Path) -> Path:
    """A wheel whose RECORD lists a wrong hash for its module."""
    path = demo_wheel(outbox, "demo_pkg-3.0-py3-none-any.whl")
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["demo_pkg/__init__.py"] = b"VARIANT = 'tampered'\n"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_upload_rejects_a_non_multipart_body(live: tuple[Path, httpx.Client]) -> None:
    _, client = live
    response = client.post("/legacy/", content=b"{}", auth=("__token__", TOKEN))
    assert response.status_code == 400
    response = client.post(
        "/legacy/",
        data={":action": "file_upload"},
        files={"other": ("x", b"1")},
        auth=("__token__", TOKEN),
    )
    assert response.status_code == 400
    assert "no 'content' file part" in response.text


def test_uploads_appear_atomically(live: tuple[Path, httpx.Client], outbox: Path) -> None:
    """While a big upload is received, the directory never holds a partial file."""
    directory, client = live
    payload = os.urandom(4 << 20)
    wheel = demo_wheel(
        outbox, "demo_pkg-4.0-py3-none-any.whl", extra_members={"demo_pkg/blob": payload}
    )
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        target = directory / wheel.name
        while not done.is_set():
            if target.exists():
                seen.add(target.stat().st_size)
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        assert upload(client, wheel).status_code == 200
    finally:
        done.set()
        watcher.join()
    assert seen <= {wheel.stat().st_size}


# -- the upload size limit --------------------------------------------------------------


def _multipart(path: Path, boundary: str) -> bytes:
    data = path.read_bytes()
    name, version = path.name.split("-")[:2]
    fields = {
        ":action": "file_upload",
        "name": name,
        "version": version,
        "sha256_digest": hashlib.sha256(data).hexdigest(),
    }
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
        for key, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="content"; '
        f'filename="{path.name}"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return b"".join(parts)


@pytest.fixture
def small_limit(tmp_path: Path) -> Iterator[tuple[Path, httpx.Client]]:
    directory = tmp_path / "limited"
    directory.mkdir()
    app = create_app(directory, upload_token=TOKEN, recheck_interval=60, max_upload_bytes=64 << 10)
    with uvicorn_thread(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        yield directory, http


@pytest.mark.parametrize("chunked", [True, False])
def test_upload_above_the_limit_is_refused(
    small_limit: tuple[Path, httpx.Client], outbox: Path, chunked: bool
) -> None:
    """The limit holds for the bytes received, with or without a Content-Length."""
    directory, client = small_limit
    noise = os.urandom(200 << 10)  # does not deflate: the wheel is > 200 KiB
    wheel = demo_wheel(outbox, "big-1.0-py3-none-any.whl", extra_members={"big/noise.bin": noise})
    body = _multipart(wheel, "wheelwise-test-boundary")
    headers = {"Content-Type": "multipart/form-data; boundary=wheelwise-test-boundary"}

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(body), 16 << 10):
            yield body[start : start + 16 << 10]

    response = client.post(
        "/legacy/",
        content=pieces() if chunked else body,
        headers=headers,
        auth=("__token__", TOKEN),
    )
    if chunked:
        assert response.request.headers.get("transfer-encoding") == "chunked"
        assert "content-length" not in response.request.headers
    assert response.status_code == 413, response.text
    assert f"larger than {64 << 10} bytes" in response.text
    assert list(directory.iterdir()) == []


def test_upload_below_the_limit_is_published(
    small_limit: tuple[Path, httpx.Client], outbox: Path
) -> None:
    directory, client = small_limit
    wheel = demo_wheel(outbox, "small-1.0-py3-none-any.whl")
    body = _multipart(wheel, "b0undary")
    response = client.post(
        "/legacy/",
        content=iter([body[:100], body[100:]]),
        headers={"Content-Type": "multipart/form-data; boundary=b0undary"},
        auth=("__token__", TOKEN),
    )
    assert response.status_code == 200, response.text
    assert (directory / wheel.name).read_bytes() == wheel.read_bytes()


# -- files that are not what they say ----------------------------------------------------


def test_unsafe_files_are_not_served(
    tmp_path: Path, outbox: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "served"
    demo_wheels(directory)
    (directory / "evil-1.0.tar.gz").symlink_to("/etc/passwd")
    demo_wheel(outbox, "outer-1.0-py3-none-any.whl")
    (directory / "outer-1.0-py3-none-any.whl").symlink_to(outbox / "outer-1.0-py3-none-any.whl")
    (directory / "fake-1.0.tar.gz").write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    demo_sdist(directory, "demo_pkg-1.0.tar.gz")
    with (
        caplog.at_level("WARNING"),
        uvicorn_thread(create_app(directory)) as base,
        httpx.Client(base_url=base) as client,
    ):
        listed = parse_anchors(client.get("/simple/").content)
        assert "demo-pkg" in listed
        assert not {"evil", "outer", "fake"} & set(listed)
        page = client.get("/simple/demo-pkg/")
        assert page.status_code == 200
        assert "demo_pkg-1.0.tar.gz" in parse_anchors(page.content)
        for url in (
            "/simple/evil/",
            "/files/evil/evil-1.0.tar.gz",
            "/files/outer/outer-1.0-py3-none-any.whl",
            "/files/fake/fake-1.0.tar.gz",
        ):
            assert client.get(url).status_code == 404, url
    warnings = "\n".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    for name in ("evil-1.0.tar.gz", "outer-1.0-py3-none-any.whl", "fake-1.0.tar.gz"):
        assert f"not serving {name}: " in warnings


@pytest.mark.parametrize(
    ("members", "message"),
    [
        (b"root:x:0:0:root:/root:/bin/bash\n", "not a gzip'd tar archive"),
        ({"other-3.0/PKG-INFO": b"x"}, "not under the top folder 'demo_pkg-3.0/'"),
        ({"demo_pkg-3.0/setup.py": b"x"}, "no demo_pkg-3.0/PKG-INFO"),
    ],
)
def test_upload_of_a_false_sdist_is_refused(
    live: tuple[Path, httpx.Client], outbox: Path, members: Any, message: str
) -> None:
    directory, client = live
    before = sorted(p.name for p in directory.iterdir())
    if isinstance(members, bytes):
        sdist = outbox / "demo_pkg-3.0.tar.gz"
        sdist.write_bytes(members)
    else:
        sdist = demo_sdist(outbox, "demo_pkg-3.0.tar.gz", members)
    response = upload(client, sdist, overrides={"filetype": "sdist", "version": "3.0"})
    assert response.status_code == 400, response.text
    assert message in response.text
    assert sorted(p.name for p in directory.iterdir()) == before


def test_upload_of_an_sdist(live: tuple[Path, httpx.Client], outbox: Path) -> None:
    directory, client = live
    sdist = demo_sdist(outbox, "demo_pkg-3.0.tar.gz")
    response = upload(client, sdist, overrides={"filetype": "sdist", "version": "3.0"})
    assert response.status_code == 200, response.text
    assert (directory / sdist.name).read_bytes() == sdist.read_bytes()


def test_parse_range_reads_numbers_of_any_length() -> None:
    huge = "9" * 5000
    assert parse_range(f"bytes=0-{huge}", 10) == ByteRange(0, 9)
    assert parse_range(f"bytes={huge}-", 10) == UNSATISFIABLE
    assert parse_range(f"bytes={huge}-{huge}", 10) == UNSATISFIABLE
    assert parse_range(f"bytes=-{huge}", 10) == ByteRange(0, 9)
    assert parse_range(f"bytes=3-{'0' * 5000}4", 10) == ByteRange(3, 4)


_NUMBERS = st.one_of(
    st.integers(0, 1 << 70).map(str),
    st.integers(20, 6000).map(lambda n: "9" * n),
    st.integers(1, 6000).map(lambda n: "0" * n + "1"),
    st.just(""),
)


@settings(max_examples=300, deadline=None)
@given(
    first=_NUMBERS,
    last=_NUMBERS,
    size=st.integers(0, 1 << 40),
    noise=st.text(max_size=30),
    where=st.integers(0, 3),
)
def test_headers_with_any_numbers_never_raise(
    first: str, last: str, size: int, noise: str, where: int
) -> None:
    """Range, If-None-Match and Accept as a client may send them: huge numbers,
    leading zeros, noise anywhere."""
    header = [f"bytes={first}-{last}", noise][0 if where else 1]
    found = parse_range(header, size)
    if isinstance(found, ByteRange):
        assert 0 <= found.start <= found.end < size
    none_match(f'"{first}", W/"{last}"{noise}', '"x"')
    choose(f"application/vnd.pypi.simple.v1+json;q=0.{first}, text/html;q={last}{noise}")
