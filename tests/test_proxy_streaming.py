"""The proxy sends a large wheel while it still fetches (and rewrites) it.

Behind a slow upstream, a client whose read timeout is shorter than the upstream's
transfer still gets its wheel: unmodified pip, with ``--timeout`` well below the time
the upstream takes and no retries, installs the rewritten CUDA build of a 12 MB
``gpukit`` and the passed-through ``cudart`` (as large) through the proxy. A body
that fails its hash check once complete cuts the responses that were sent while it
arrived, keeps nothing, and the next request gets the right bytes. The pieces: the
local-member reader (fuzzed) and the prefix the rewrite offers, which is always the
beginning of the wheel the rewrite makes.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import random
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuhouse import CUDA, GATED, HASWELL, K10, NAMESPACES, machine, metadata_member, wheel
from indexkit import uvicorn_thread
from installkit import make_venv, pip, run_python
from proxykit import detect_json, proxy_process
from throttlekit import Throttled
from wheelwise.proxy.stream import Growing, PrefixRewrite
from wheelwise.publish.server import create_app as index_app
from wheelwise.variants.markers import variant_environment
from wheelwise.variants.properties import VariantProperty
from wheelwise.wheels.plain import make_plain_wheel, plain_metadata
from wheelwise.wheels.zip_stream import LocalMembers, MemberBytes

PAYLOAD = 12 << 20
# The upstream takes PAYLOAD / RATE = 8 s per wheel; pip waits at most TIMEOUT.
RATE = 3 << 19
TIMEOUT = "4"


def big_house(directory: Path) -> None:
    """gpukit 1.0 (a fallback and its cu128 build) and cudart, each with a payload
    of PAYLOAD random bytes (deflate cannot shrink them)."""
    directory.mkdir(parents=True)
    payload = random.Random(7).randbytes(PAYLOAD)
    bound, archs = CUDA["cu128"]
    properties = {"nvidia": {"cuda_version_lower_bound": [bound], "sm_arch": archs}}
    wheel(directory, "gpukit-1.0-py3-none-any.whl")
    wheel(
        directory,
        "gpukit-1.0-py3-none-any-cu128.whl",
        "cu128",
        properties,
        namespaces=NAMESPACES,
        extra_members={**metadata_member("gpukit", "1.0", GATED), "gpukit/kernels.bin": payload},
    )
    wheel(directory, "cudart-1.0-py3-none-any.whl", extra_members={"cudart/lib.bin": payload})


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Throttled, str]]:
    root = tmp_path_factory.mktemp("streaming")
    big_house(root / "wheels")
    throttled = Throttled(index_app(root / "wheels"), RATE)
    h100 = detect_json(root / "h100.json", machine(HASWELL, "12.8", "9.0"), root / "c1")
    with uvicorn_thread(throttled) as upstream:
        profile = ["--profile", f"h100={h100}"]
        with proxy_process(
            [f"{upstream}/simple/"], root / "cache", *profile, env=machine(K10)
        ) as base:
            yield root, throttled, f"{base}/p/h100"


def store_files(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("entries/*/*") if not p.name.endswith(".json"))


def test_pip_with_a_short_timeout_installs_large_wheels_from_a_slow_upstream(
    fleet: tuple[Path, Throttled, str], tmp_path: Path
) -> None:
    root, _, base = fleet
    python = make_venv(tmp_path / "venv")
    result = pip(
        python, "install", "--index-url", f"{base}/simple/", "--timeout", TIMEOUT,
        "--retries", "0", "--no-cache-dir", "gpukit",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    probe = run_python(python, "import gpukit, cudart; print(gpukit.VARIANT)")
    assert probe.stdout.strip() == "cu128", probe.stderr
    # The rewrite's METADATA settled the variant marker: cudart came with it.
    assert "cudart" in result.stdout
    # What was streamed is what the store kept: the same bytes the next client gets.
    files = store_files(root / "cache")
    assert len(files) == 2
    for stored in files:
        again = httpx.get(_file_url(base, stored), timeout=60)
        assert hashlib.sha256(again.content).hexdigest() == _sidecar_sha(stored)


def _sidecar_sha(stored: Path) -> str:
    import json

    return str(json.loads(stored.with_name(stored.name + ".json").read_text())["sha256"])


def _file_url(base: str, stored: Path) -> str:
    page = httpx.get(
        f"{base}/simple/gpukit/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    ).json()
    cudart = httpx.get(
        f"{base}/simple/cudart/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    ).json()
    sha = _sidecar_sha(stored)
    for listing, project in ((page, "gpukit"), (cudart, "cudart")):
        for file in listing["files"]:
            if file["hashes"].get("sha256") == sha:
                return str(httpx.URL(f"{base}/simple/{project}/").join(file["url"]))
    raise AssertionError(f"no link with sha256 {sha}")


def test_a_body_that_fails_its_check_cuts_the_streamed_response(tmp_path: Path) -> None:
    big_house(tmp_path / "wheels")
    throttled = Throttled(index_app(tmp_path / "wheels"), RATE * 2, corrupt=True)
    log: list[bytes] = []
    with (
        uvicorn_thread(throttled) as upstream,
        proxy_process(
            [f"{upstream}/simple/"], tmp_path / "cache", env=machine(K10), output=log
        ) as base,
    ):
        listing = httpx.get(
            f"{base}/simple/cudart/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
        ).json()
        url = str(httpx.URL(f"{base}/simple/cudart/").join(listing["files"][0]["url"]))
        received = 0
        status = 0
        with pytest.raises(httpx.HTTPError), httpx.stream("GET", url, timeout=30) as response:  # noqa: PT012 - the cut comes mid-body
            status = response.status_code
            for chunk in response.iter_bytes():
                received += len(chunk)
        assert status == 200
        assert 0 < received < PAYLOAD
        assert store_files(tmp_path / "cache") == []
        throttled.corrupt = False
        good = httpx.get(url, timeout=60)
        assert good.status_code == 200
        expected = (tmp_path / "wheels" / "cudart-1.0-py3-none-any.whl").read_bytes()
        assert good.content == expected
    # The proxy says why, in one line.
    text = b"".join(log).decode()
    assert "Traceback" not in text
    [cut] = [line for line in text.splitlines() if "cut the response" in line]
    assert cut.startswith(
        "WARNING:  cut the response sending cudart-1.0-py3-none-any.whl: upstream:"
    )
    assert "sha256 is" in cut


# -- the pieces ------------------------------------------------------------------------


def _zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _pieces(data: bytes, cuts: list[int]) -> Iterator[bytes]:
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        yield data[start:cut]
        start = max(start, cut)
    yield data[start:]


_NAMES = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00/\\"), min_size=1, max_size=12
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    members=st.dictionaries(_NAMES, st.binary(max_size=3000), min_size=1, max_size=6),
    method=st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]),
    cuts=st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=8),
)
def test_local_members_are_read_whatever_the_pieces(
    members: dict[str, bytes], method: int, cuts: list[int]
) -> None:
    data = _zip(members, method)
    reader = LocalMembers()
    seen: dict[str, bytearray] = {}
    offsets: dict[str, int] = {}
    current = ""
    for piece in _pieces(data, cuts):
        for found in reader.feed(piece):
            if isinstance(found, MemberBytes):
                seen[current] += found.data
            else:
                current = found.filename
                seen[current] = bytearray()
                offsets[current] = found.header_offset
    assert reader.stopped == "the local members end"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            compressed = data[info.header_offset :]
            assert bytes(seen[info.filename]) in compressed
            assert len(seen[info.filename]) == info.compress_size
            assert offsets[info.filename] == info.header_offset
        # What follows the members: the central directory, from its first byte.
        assert reader.offset == archive.start_dir
        assert data.startswith(reader.leftover(), reader.offset)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=4000), cuts=st.lists(st.integers(0, 5000), max_size=5))
def test_local_members_never_raise_on_any_bytes(data: bytes, cuts: list[int]) -> None:
    reader = LocalMembers()
    for piece in _pieces(b"PK\x03\x04" + data, cuts):
        reader.feed(piece)


def _variant_wheel(directory: Path) -> Path:
    directory.mkdir(parents=True)
    bound, archs = CUDA["cu128"]
    properties = {"nvidia": {"cuda_version_lower_bound": [bound], "sm_arch": archs}}
    return wheel(
        directory,
        "gpukit-1.0-py3-none-any-cu128.whl",
        "cu128",
        properties,
        namespaces=NAMESPACES,
        extra_members={
            **metadata_member("gpukit", "1.0", GATED),
            **{f"gpukit/m{i}.py": os.urandom(200) * 20 for i in range(20)},
        },
    )


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(0, 1 << 17), max_size=12))
def test_the_prefix_offered_is_always_the_beginning_of_the_plain_wheel(
    tmp_path: Path, cuts: list[int]
) -> None:
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    source = _variant_wheel(folder / "in")
    properties = (VariantProperty.parse("nvidia :: cuda_version_lower_bound :: 12.8"),)
    plain = make_plain_wheel(source, folder / "whole", variant_environment("cu128", properties))
    final = plain.path.read_bytes()
    growing = Growing()
    target = folder / "out.whl"
    settle = functools.partial(plain_metadata, variant_env=variant_environment("cu128", properties))
    prefix = PrefixRewrite(target, growing, settle)
    prefix.started(source)
    offered = 0
    for piece in _pieces(source.read_bytes(), cuts):
        prefix.received(piece)
        offered = growing.progress().available
        assert target.read_bytes()[:offered] == final[:offered]
    # Every member but RECORD was offered while the upstream arrived.
    with zipfile.ZipFile(plain.path) as archive:
        record = archive.getinfo("gpukit-1.0.dist-info/RECORD").header_offset
    assert offered == record
    prefix.finish(plain.path)
    prefix.close()
    assert target.read_bytes() == final
    assert growing.progress().generation == 0


def test_an_offered_prefix_that_is_not_the_beginning_restarts(tmp_path: Path) -> None:
    source = _variant_wheel(tmp_path / "in")
    other = tmp_path / "other.whl"
    other.write_bytes(_zip({"gpukit/__init__.py": b"other", "gpukit-1.0.dist-info/RECORD": b""}))
    growing = Growing()
    target = tmp_path / "out.whl"
    prefix = PrefixRewrite(target, growing, lambda metadata: metadata)
    prefix.started(source)
    prefix.received(source.read_bytes())
    assert growing.progress().available > 0
    prefix.finish(other)
    prefix.close()
    assert target.read_bytes() == other.read_bytes()
    assert growing.progress().generation == 1
