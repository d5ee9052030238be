"""Record the part of PyPI that pip, wheelwise and uv consult for the requirement sets
of ``tests/data/recorded/sets.toml``, for the offline differential test
(``tests/test_differential_pip.py``, replayed by ``tests/recordedkit.py``).

Run it online, from the repository root, with the project's virtual environment::

    .venv/bin/python tools/record_index.py            # every set
    .venv/bin/python tools/record_index.py --only hydra-core --keep  # add to the record

How it works: a recording proxy on 127.0.0.1 stands in front of https://pypi.org/simple/
(PEP 691 JSON pages, whose file URLs it rewrites so that files and their PEP 658
``.metadata`` files are fetched through it too). For every set, pip and wheelwise
(and uv for the sets marked ``uv = true``) resolve the set with a dry run against the
proxy, into a fresh virtual environment made with ``uv venv``. Every project page and
every ``.metadata`` file either installer fetches is recorded. Each sdist an installer
downloads is then built into a wheel (``pip wheel --no-deps`` against PyPI) and the
METADATA of that wheel is recorded as the metadata of its release.

What it writes: ``tests/data/recorded/index.json.gz``, a gzip'd JSON document::

    {"format": 1,
     "projects": {NAME: {VERSION: {"files": [FILENAME, ...],
                                   "requires_python": SPECIFIER or null,
                                   "metadata": CORE METADATA TEXT}}}}

Only what matters on CPython 3.11, Linux x86_64 (manylinux) is kept: sdists and the
wheels whose tags fit that platform (``py3-none-any``, ``cp311`` manylinux x86_64,
``abi3`` up to cp311), no yanked file, and only the releases whose metadata was
recorded (a release no installer consulted is left out). Metadata is kept to its
header fields (the description body and ``Description`` field are dropped).

With ``--keep`` the releases already in the output file are kept and the new record is
merged into them (to record one more set without recording all of them again).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import gzip
import hashlib
import http.server
import io
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from indexkit import handler_served, installer_env

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "recorded"
UPSTREAM = "https://pypi.org/simple/"
JSON_PAGE = "application/vnd.pypi.simple.v1+json"
BIN = Path(sys.executable).parent


# -- platform -----------------------------------------------------------------

_PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(45, 16, -1)]
_PLATFORMS += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
_PLATFORMS += ["linux_x86_64"]
SUPPORTED: frozenset[Tag] = frozenset(
    [
        *cpython_tags((3, 11), ["cp311"], _PLATFORMS),
        *compatible_tags((3, 11), "cp311", _PLATFORMS),
    ]
)


def file_version(filename: str) -> tuple[str, Version] | None:
    """(normalized project, version) of a wheel or sdist name, None for any other file
    or one that does not fit CPython 3.11 on manylinux x86_64."""
    try:
        if filename.endswith(".whl"):
            name, version, _, tags = parse_wheel_filename(filename)
            if SUPPORTED.isdisjoint(tags):
                return None
            return name, version
        for suffix in (".tar.gz", ".zip"):
            if filename.endswith(suffix):
                name, _, version_text = filename.removesuffix(suffix).rpartition("-")
                if not name:
                    return None
                return canonicalize_name(name), Version(version_text)
    except (ValueError, InvalidVersion):
        return None
    return None


def header_block(metadata: str) -> str:
    """The header fields of a METADATA text, without the description (body or field)."""
    lines: list[str] = []
    skipping = False
    for line in metadata.replace("\r\n", "\n").split("\n"):
        if not line.strip():
            break
        if line[0] in " \t":
            if not skipping:
                lines.append(line)
            continue
        skipping = line.lower().startswith("description:")
        if not skipping:
            lines.append(line)
    return "\n".join(lines) + "\n"


# -- the recording proxy --------------------------------------------------------


class RangeFile(io.RawIOBase):
    """A remote file read by HTTP range requests, in blocks (enough for zipfile to
    read a wheel's central directory and one member without the whole wheel)."""

    BLOCK = 256 * 1024

    def __init__(self, client: httpx.Client, url: str) -> None:
        self.client, self.url, self.position = client, url, 0
        head = client.head(url)
        head.raise_for_status()
        self.size = int(head.headers["Content-Length"])
        self.blocks: dict[int, bytes] = {}

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.position, 2: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def _block(self, index: int) -> bytes:
        if index not in self.blocks:
            start = index * self.BLOCK
            end = min(self.size, start + self.BLOCK) - 1
            response = self.client.get(self.url, headers={"Range": f"bytes={start}-{end}"})
            if response.status_code != 206:
                raise OSError(f"{self.url}: no ranges ({response.status_code})")
            self.blocks[index] = response.content
        return self.blocks[index]

    def read(self, size: int = -1) -> bytes:
        end = self.size if size is None or size < 0 else min(self.size, self.position + size)
        chunks = []
        while self.position < end:
            index, offset = divmod(self.position, self.BLOCK)
            data = self._block(index)[offset : offset + end - self.position]
            if not data:
                break
            chunks.append(data)
            self.position += len(data)
        return b"".join(chunks)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def wheel_metadata(client: httpx.Client, url: str) -> bytes:
    """The ``*.dist-info/METADATA`` of the wheel at *url*, read by ranges: what PyPI
    serves as the wheel's ``.metadata`` file (PEP 658)."""
    with zipfile.ZipFile(RangeFile(client, url)) as archive:
        for member in archive.namelist():
            if member.count("/") == 1 and member.endswith(".dist-info/METADATA"):
                return archive.read(member)
    raise OSError(f"{url}: no .dist-info/METADATA")


class Recorder:
    """What went through the proxy: project pages, .metadata files, sdist downloads."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self.client = httpx.Client(follow_redirects=True, timeout=120)
        self.lock = threading.Lock()
        self.pages: dict[str, dict[str, Any]] = {}
        self.metadata: dict[str, str] = {}
        self.sdists: dict[str, str] = {}
        self.upstream: dict[str, str] = {}

    def _cached_get(self, url: str, accept: str) -> tuple[int, bytes]:
        key = hashlib.sha256(f"{accept} {url}".encode()).hexdigest()
        path = self.cache / key
        if path.exists():
            return 200, path.read_bytes()
        response = self.client.get(url, headers={"Accept": accept})
        if response.status_code != 200:
            return response.status_code, response.content
        tmp = path.with_suffix(f".{threading.get_ident()}")
        tmp.write_bytes(response.content)
        tmp.replace(path)
        return 200, response.content

    def _metadata(self, url: str) -> tuple[int, bytes]:
        """The .metadata file of the wheel at *url*: upstream's where it has one."""
        status, body = self._cached_get(url + ".metadata", "*/*")
        if status == 200:
            return status, body
        path = self.cache / hashlib.sha256(f"metadata {url}".encode()).hexdigest()
        if path.exists():
            return 200, path.read_bytes()
        try:
            body = wheel_metadata(self.client, url)
        except (OSError, zipfile.BadZipFile, httpx.HTTPError) as exc:
            return 502, str(exc).encode()
        tmp = path.with_suffix(f".{threading.get_ident()}")
        tmp.write_bytes(body)
        tmp.replace(path)
        return 200, body

    def page(self, project: str, base: str) -> tuple[int, bytes]:
        status, body = self._cached_get(f"{UPSTREAM}{project}/", JSON_PAGE)
        if status != 200:
            return status, body
        page = json.loads(body)
        name = canonicalize_name(page.get("name", project))
        with self.lock:
            self.pages[name] = page
            for entry in page["files"]:
                self.upstream[entry["filename"]] = entry["url"]
        rewritten = dict(page)
        # The upstream may not serve .metadata files (PEP 658): the proxy does, for
        # every wheel, reading METADATA out of the wheel by ranges.
        rewritten["files"] = [
            {
                **entry,
                "url": f"{base}/files/{name}/{entry['filename']}",
                **({"core-metadata": True} if entry["filename"].endswith(".whl") else {}),
            }
            for entry in page["files"]
        ]
        return 200, json.dumps(rewritten).encode()

    def touch(self, filename: str) -> None:
        """Record the metadata of a wheel a client reads otherwise than through its
        .metadata file (a HEAD request, ranges of it)."""
        if filename.endswith(".whl") and filename not in self.metadata:
            self.file(filename + ".metadata")

    def forward(self, filename: str, method: str, headers: dict[str, str]) -> httpx.Response:
        """*method* on the upstream file, uncached (HEAD, or a GET of ranges)."""
        with self.lock:
            url = self.upstream.get(filename)
        if url is None:
            return httpx.Response(404, content=b"not listed")
        self.touch(filename)
        return self.client.request(method, url, headers=headers)

    def file(self, filename: str) -> tuple[int, bytes]:
        metadata = filename.endswith(".metadata")
        target = filename.removesuffix(".metadata") if metadata else filename
        with self.lock:
            url = self.upstream.get(target)
        if url is None:
            return 404, b"not listed on any page fetched so far"
        if metadata:
            status, body = self._metadata(url)
        else:
            status, body = self._cached_get(url, "*/*")
        if status != 200:
            return status, body
        with self.lock:
            if metadata:
                self.metadata[target] = body.decode("utf-8", "replace")
            elif not target.endswith(".whl"):
                self.sdists[target] = url
        return 200, body


def make_handler(recorder: Recorder) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _forward(self, method: str) -> bool:
            """HEAD, or a GET of ranges: passed on to the upstream file as it is."""
            parts = [unquote(p) for p in urlsplit(self.path).path.split("/") if p]
            if len(parts) != 3 or parts[0] != "files" or parts[2].endswith(".metadata"):
                return False
            if method == "GET" and "Range" not in self.headers:
                return False
            headers = {"Accept-Encoding": "identity"}
            if "Range" in self.headers:
                headers["Range"] = self.headers["Range"]
            response = recorder.forward(parts[2], method, headers)
            self.send_response(response.status_code)
            for key in ("Content-Type", "Content-Length", "Content-Range", "Accept-Ranges"):
                if key in response.headers:
                    self.send_header(key, response.headers[key])
            if "Content-Length" not in response.headers:
                self.send_header("Content-Length", str(len(response.content)))
            self.end_headers()
            if method == "GET":
                self.wfile.write(response.content)
            return True

        def do_HEAD(self) -> None:
            if not self._forward("HEAD"):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        def do_GET(self) -> None:
            if self._forward("GET"):
                return
            base = f"http://{self.headers.get('Host', '127.0.0.1')}"
            parts = [unquote(p) for p in urlsplit(self.path).path.split("/") if p]
            content_type = "application/octet-stream"
            try:
                if len(parts) == 2 and parts[0] == "simple":
                    status, body = recorder.page(canonicalize_name(parts[1]), base)
                    content_type = JSON_PAGE
                elif len(parts) == 3 and parts[0] == "files":
                    status, body = recorder.file(parts[2])
                    if status == 200 and not parts[2].endswith(".metadata"):
                        recorder.touch(parts[2])
                else:
                    status, body = 404, b"not found"
            except httpx.HTTPError as exc:
                status, body = 502, str(exc).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def proxy(recorder: Recorder) -> contextlib.AbstractContextManager[str]:
    """The recording proxy on 127.0.0.1 in a thread; its base URL."""
    return handler_served(make_handler(recorder))


def clean_env(home: Path) -> dict[str, str]:
    """The tests' installer environment (no user or site configuration), with
    wheelwise's cache in *home* too."""
    env = installer_env(home)
    env["WHEELWISE_CACHE_DIR"] = str(home / "wheelwise-cache")
    return env


def run(argv: list[str], env: dict[str, str], timeout: float = 1200) -> tuple[int, str, str]:
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"
    return done.returncode, done.stdout, done.stderr


def report_versions(text: str) -> dict[str, str]:
    report = json.loads(text)
    return {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in report["install"]
    }


def record_set(entry: dict[str, Any], base: str, scratch: Path) -> dict[str, Any]:
    """Resolve one set with each installer through the proxy; what each chose."""
    name = entry["name"]
    folder = scratch / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = clean_env(folder / "home")
    venv = folder / "venv"
    subprocess.run(
        [str(BIN / "uv"), "venv", "--no-config", "-q", "--python", sys.executable, str(venv)],
        check=True,
        env=env,
    )
    python = str(venv / "bin" / "python")
    index = f"{base}/simple/"
    requirements = list(entry["requirements"])
    outcome: dict[str, Any] = {"name": name}
    pip_argv = [sys.executable, "-m", "pip", "--isolated", "--python", python, "install"]
    pip_argv += ["--dry-run", "--ignore-installed", "--report", "-", "--quiet", "--no-cache-dir"]
    pip_argv += ["--index-url", index, *requirements]
    ww_argv = [sys.executable, "-m", "wheelwise", "install", "--python", python]
    ww_argv += ["--index-url", index, "--dry-run", "--report", "-", "-q", *requirements]
    jobs = {"pip": pip_argv, "wheelwise": ww_argv}
    if entry.get("uv"):
        jobs["uv"] = [str(BIN / "uv"), "pip", "compile", "--no-config", "--no-cache"]
        jobs["uv"] += ["--python", python, "--index-url", index, "--no-header", "--no-annotate"]
        jobs["uv"] += ["-"]
    for installer, argv in jobs.items():
        if installer == "uv":
            done = subprocess.run(
                argv,
                input="\n".join(requirements) + "\n",
                env=env,
                capture_output=True,
                text=True,
                timeout=1200,
                check=False,
            )
            code, out, err = done.returncode, done.stdout, done.stderr
        else:
            code, out, err = run(argv, env)
        if code != 0:
            outcome[installer] = {"error": (err or out)[-3000:]}
            continue
        if installer == "uv":
            chosen = {}
            for line in out.splitlines():
                if "==" in line and not line.startswith("#"):
                    n, _, v = line.strip().partition("==")
                    chosen[canonicalize_name(n)] = v.split(";")[0].strip()
        else:
            chosen = report_versions(out)
        outcome[installer] = chosen
    shutil.rmtree(folder, ignore_errors=True)
    return outcome


def built_metadata(filename: str, url: str, scratch: Path) -> str | None:
    """METADATA of the wheel built from the sdist at *url* (built against PyPI)."""
    folder = scratch / "builds" / filename
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = clean_env(folder / "home")
    argv = [sys.executable, "-m", "pip", "--isolated", "wheel", "--no-deps", "--quiet"]
    argv += ["--no-cache-dir", "--index-url", UPSTREAM, "-w", str(folder / "out"), url]
    code, out, err = run(argv, env, timeout=1800)
    if code != 0:
        print(f"  ! building {filename} failed:\n{(err or out)[-2000:]}", file=sys.stderr)
        return None
    for wheel in (folder / "out").glob("*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if member.count("/") == 1 and member.endswith(".dist-info/METADATA"):
                    text = archive.read(member).decode("utf-8", "replace")
                    shutil.rmtree(folder, ignore_errors=True)
                    return text
    return None


# -- the record -------------------------------------------------------------------


def assemble(recorder: Recorder, built: dict[str, str]) -> dict[str, dict[str, Any]]:
    """project -> version -> {files, requires_python, metadata}: the kept releases."""
    projects: dict[str, dict[str, Any]] = {}
    for name, page in sorted(recorder.pages.items()):
        releases: dict[Version, dict[str, Any]] = {}
        for entry in page["files"]:
            if entry.get("yanked"):
                continue
            found = file_version(entry["filename"])
            if found is None:
                continue
            release = releases.setdefault(
                found[1], {"files": [], "requires_python": None, "metadata": None}
            )
            release["files"].append(entry["filename"])
            if entry.get("requires-python"):
                release["requires_python"] = entry["requires-python"]
            text = recorder.metadata.get(entry["filename"]) or built.get(entry["filename"])
            if text is not None and (
                release["metadata"] is None or entry["filename"].endswith(".whl")
            ):
                release["metadata"] = header_block(text)
        kept = {
            str(version): {**release, "files": sorted(release["files"])}
            for version, release in sorted(releases.items())
            if release["metadata"] is not None
        }
        if kept:
            projects[name] = kept
    return projects


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=Path, default=DATA / "sets.toml")
    parser.add_argument("--out", type=Path, default=DATA / "index.json.gz")
    parser.add_argument("--only", action="append", default=[], help="record this set only")
    parser.add_argument("--keep", action="store_true", help="merge into the existing record")
    parser.add_argument("--jobs", type=int, default=4, help="sets recorded at once")
    parser.add_argument("--scratch", type=Path, help="work folder (default: a temporary one)")
    args = parser.parse_args()

    sets = tomllib.loads(args.sets.read_text(encoding="utf-8"))["set"]
    if args.only:
        sets = [s for s in sets if s["name"] in args.only]
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="record-index-"))
    (scratch / "http").mkdir(parents=True, exist_ok=True)
    recorder = Recorder(scratch / "http")
    failed: list[str] = []
    with proxy(recorder) as base, concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        print(f"recording proxy at {base}/simple/ (scratch: {scratch})")
        for outcome in pool.map(lambda s: record_set(s, base, scratch), sets):
            name = outcome["name"]
            errors = {
                k: v["error"] for k, v in outcome.items() if isinstance(v, dict) and "error" in v
            }
            if errors:
                failed.append(name)
                for installer, error in errors.items():
                    print(f"  ! {name}: {installer} failed:\n{error}", file=sys.stderr)
                continue
            pip, ww = outcome["pip"], outcome["wheelwise"]
            same = "same" if pip == ww else "DIFFERENT"
            print(f"{name}: pip chose {len(pip)} distributions; wheelwise: {same}")
            if pip != ww:
                for key in sorted(set(pip) | set(ww)):
                    if pip.get(key) != ww.get(key):
                        print(f"    {key}: pip {pip.get(key)}, wheelwise {ww.get(key)}")
            if "uv" in outcome and outcome["uv"] != pip:
                print(f"    uv differs from pip: {outcome['uv']}")
        print(f"building {len(recorder.sdists)} sdists for their metadata")
        built: dict[str, str] = {}
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as builders:
            items = sorted(recorder.sdists.items())
            texts = builders.map(lambda item: built_metadata(*item, scratch), items)
            for (filename, _), text in zip(items, texts, strict=True):
                if text is not None:
                    built[filename] = text

    projects = assemble(recorder, built)
    if args.keep and args.out.exists():
        with gzip.open(args.out, "rt", encoding="utf-8") as stream:
            old = json.load(stream)["projects"]
        for name, releases in projects.items():
            old.setdefault(name, {}).update(releases)
        projects = {
            name: dict(sorted(old[name].items(), key=lambda kv: Version(kv[0])))
            for name in sorted(old)
        }
    document = {"format": 1, "projects": projects}
    data = json.dumps(document, indent=None, sort_keys=False, separators=(",", ":"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(args.out, "wb", mtime=0, compresslevel=9) as stream:
        stream.write(data.encode())
    releases = sum(len(r) for r in projects.values())
    print(
        f"wrote {args.out}: {len(projects)} projects, {releases} releases, "
        f"{args.out.stat().st_size} bytes"
    )
    if failed:
        print(f"sets that failed to record (drop them from {args.sets}): {', '.join(failed)}")
    if not args.scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
