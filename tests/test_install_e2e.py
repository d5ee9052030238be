"""``wheelwise install`` end to end: real servers, fresh venvs, simulated machines.

The demo wheelhouse holds ``gpukit`` 1.0 (a non-variant fallback and the variants
``null``, ``cu126``, ``cu128``, ``cu130`` and ``x86_64_v3``), ``app`` (which depends
on gpukit) and ``cudart`` (required by the CUDA builds of gpukit only, through a
variant marker). It is served by ``wheelwise index serve`` and, built into a static
site, by ``python -m http.server``; every install goes into a fresh virtual
environment through ``python -m wheelwise install --python VENV/bin/python``, with
the machine simulated by the providers' environment overrides.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuhouse import GATED, HASWELL, demo_house, machine
from indexkit import demo_wheel, http_server, uvicorn_thread, wheelwise_serve
from installkit import installed_build, make_venv, pip, run_python, site_packages
from variantkit import wheelwise
from wheelwise import __version__ as wheelwise_version
from wheelwise.publish.static import build_site


@pytest.fixture(scope="module")
def house(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("e2e") / "wheels"
    demo_house(directory)
    return directory


@pytest.fixture(scope="module")
def served(house: Path) -> Iterator[str]:
    with wheelwise_serve(house) as base:
        yield f"{base}/simple/"


@pytest.fixture(scope="module")
def static(house: Path) -> Iterator[str]:
    site = house.parent / "site"
    build_site(house, site)
    with http_server(site) as base:
        yield f"{base}/simple/"


def install(
    python: Path, index: str, cache: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    return wheelwise(["install", "--python", str(python), "--index-url", index, *args], cache, env)


def tree_hash(python: Path) -> str:
    site = next((python.parent.parent / "lib").glob("python3*/site-packages"))
    digest = hashlib.sha256()
    for path in sorted(site.rglob("*")):
        digest.update(str(path.relative_to(site)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


CASES = {
    "no-gpu-k10": (machine(), "'null'"),
    "haswell-no-gpu": (machine(HASWELL), "'x86_64_v3'"),
    "driver-12.8-sm-8.6": (machine(driver="12.8", gpus="8.6"), "'cu128'"),
    "driver-13.0-sm-9.0": (machine(driver="13.0", gpus="9.0"), "'cu130'"),
    "sm-6.1": (machine(driver="12.8", gpus="6.1"), "'cu126'"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("source", ["served", "static"])
def test_machine_gets_its_build(
    case: str, source: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    index: str = request.getfixturevalue(source)
    env, expected = CASES[case]
    python = make_venv(tmp_path / "venv")
    result = install(python, index, tmp_path / "cache", env, "-v", "app")
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "gpukit") == expected
    label = expected.strip("'")
    assert f"installed gpukit 1.0 (variant {label}" in result.stdout
    assert f"from {index}" in result.stdout  # -v: the source
    # The variant marker pulls in cudart for the CUDA builds only.
    has_cudart = run_python(python, "import cudart").returncode == 0
    assert has_cudart == label.startswith("cu")
    assert ("installed cudart 1.0" in result.stdout) == label.startswith("cu")
    dist_info = next(python.parent.parent.glob("lib/python3*/site-packages/gpukit-1.0.dist-info"))
    assert (dist_info / "INSTALLER").read_text().strip() == "wheelwise"
    assert (dist_info / "variant.json").is_file()


@pytest.mark.slow
def test_pip_sees_the_install_and_list_and_uninstall(served: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    cache = tmp_path / "cache"
    # Haswell, no GPU: no variant marker in the chosen wheel's metadata (pip cannot
    # parse variant markers, so `pip check` would warn about a CUDA build).
    result = install(python, served, cache, machine(HASWELL), "app", "cudart", "-q")
    assert result.returncode == 0, result.stderr
    listed = pip(python, "list", "--format=json")
    assert listed.returncode == 0, listed.stderr
    names = {d["name"]: d["version"] for d in json.loads(listed.stdout)}
    assert names == {"app": "1.0", "gpukit": "1.0", "cudart": "1.0"}
    checked = pip(python, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr

    listing = wheelwise(["list", "--python", str(python), "--json"], cache)
    assert listing.returncode == 0, listing.stderr
    rows = {row["name"]: row for row in json.loads(listing.stdout)}
    assert rows["gpukit"]["variant"] == "x86_64_v3"
    assert rows["app"]["variant"] is None
    assert rows["gpukit"]["installer"] == "wheelwise"

    # Installing again changes nothing.
    again = install(python, served, cache, machine(HASWELL), "app")
    assert again.returncode == 0, again.stderr
    assert "already installed gpukit 1.0 (variant x86_64_v3)" in again.stdout

    gone = wheelwise(["uninstall", "--python", str(python), "-y", "app", "not-there"], cache)
    assert gone.returncode == 0, gone.stderr
    assert "uninstalled app" in gone.stdout
    # As pip and uv: a name that is not installed is skipped, the rest removed.
    assert gone.stderr == (
        f"wheelwise: warning: skipped not-there: it is not installed in {python.parent.parent}\n"
    )
    quiet = wheelwise(["uninstall", "--python", str(python), "-y", "-q", "cudart"], cache)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == ""
    left = {
        row["name"]
        for row in json.loads(wheelwise(["list", "--python", str(python), "--json"], cache).stdout)
    }
    assert left == {"gpukit"}


@pytest.mark.slow
def test_dry_run_shows_rejected_labels_and_report(served: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    before = tree_hash(python)
    report = tmp_path / "report.json"
    result = install(
        python,
        served,
        tmp_path / "cache",
        machine(driver="12.8", gpus="8.6"),
        "app",
        "--dry-run",
        "--report",
        str(report),
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "cu128" in out
    assert "nvidia :: cuda_version_lower_bound :: 12.8" in out
    assert "cu130" in out  # rejected, with its reason
    assert "x86_64_v3" in out
    assert tree_hash(python) == before
    document = json.loads(report.read_text())
    assert document["version"] == "1"
    # Not pip: no pip_version (consumers read it as pip's); installer names wheelwise.
    assert "pip_version" not in document
    assert document["installer"]["name"] == "wheelwise"
    assert document["installer"]["version"] == wheelwise_version
    assert set(document["environment"]) >= {"python_version", "sys_platform"}
    items = {item["metadata"]["name"]: item for item in document["install"]}
    assert set(items) == {"app", "gpukit", "cudart"}
    gpukit = items["gpukit"]
    assert gpukit["variant"]["label"] == "cu128"
    assert "nvidia :: sm_arch :: 86_real" in gpukit["variant"]["properties"]
    assert gpukit["requested"] is False
    assert items["app"]["requested"] is True
    assert gpukit["metadata"]["requires_dist"] == GATED
    assert items["app"]["variant"] is None
    assert len(gpukit["download_info"]["archive_info"]["hashes"]["sha256"]) == 64
    assert gpukit["download_info"]["url"].endswith("gpukit-1.0-py3-none-any-cu128.whl")


@pytest.mark.slow
def test_no_variant_and_variant_choice(static: str, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    cache = tmp_path / "cache"
    env = machine(driver="13.0", gpus="9.0")
    result = install(python, static, cache, env, "gpukit", "--no-variant")
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "gpukit") == "None"
    result = install(python, static, cache, env, "gpukit", "--variant", "gpukit=cu126", "-U")
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "gpukit") == "'cu126'"
    bad = install(python, static, cache, machine(), "gpukit", "--variant", "gpukit=cu130", "-U")
    assert bad.returncode == 2
    assert "cu130" in bad.stderr
    assert "machine supports" in bad.stderr
    missing = install(python, static, cache, env, "nope")
    assert missing.returncode == 2
    assert f"no release of nope was found (nope requested); searched {static}" in missing.stderr


@pytest.mark.slow
def test_requirements_file_and_find_links(house: Path, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"# demo\n--find-links {house}\n\napp  # the app\n")
    result = wheelwise(
        [
            "install",
            "--python",
            str(python),
            "--index-url",
            str(tmp_path / "empty"),
            "-r",
            str(requirements),
        ],
        tmp_path / "cache",
        machine(HASWELL),
    )
    # The empty index folder does not exist: a clear error.
    assert result.returncode == 2
    assert "no such directory" in result.stderr
    (tmp_path / "empty").mkdir()
    result = wheelwise(
        [
            "install",
            "--python",
            str(python),
            "--index-url",
            str(tmp_path / "empty"),
            "-r",
            str(requirements),
            "-v",
        ],
        tmp_path / "cache",
        machine(HASWELL),
    )
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "gpukit") == "'x86_64_v3'"
    assert f"from {house}" in result.stdout
    # A find-links folder gives no hashes.
    strict = wheelwise(
        [
            "install",
            "--python",
            str(python),
            "--find-links",
            str(house),
            "--index-url",
            str(tmp_path / "empty"),
            "cudart",
            "--require-hashes",
        ],
        tmp_path / "cache",
        machine(HASWELL),
    )
    assert strict.returncode == 2
    # Hash-checking mode, as pip's: the requirement must be pinned and hashed.
    assert "'cudart' is not pinned to one version with ==" in strict.stderr
    requirements.write_text("--use-pep517\napp\n")
    bad = wheelwise(["install", "--python", str(python), "-r", str(requirements)], tmp_path)
    assert bad.returncode == 2
    assert "--use-pep517 is not supported" in bad.stderr


# -- hostile indexes --------------------------------------------------------------------


class Hostile:
    """An index serving one wheel ``plain``, with the wheel's answer set per test."""

    def __init__(self, wheel: Path) -> None:
        self.wheel = wheel.read_bytes()
        self.filename = wheel.name
        self.sha256 = hashlib.sha256(self.wheel).hexdigest()
        self.mode = "ok"
        self.release = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path: str = scope["path"]
        headers: list[tuple[bytes, bytes]] = []
        status, body = 200, b""
        if path == "/simple/plain/":
            digest = "0" * 64 if self.mode == "hash" else self.sha256
            meta = hashlib.sha256(self.metadata).hexdigest()
            body = (
                f'<a href="/files/{self.filename}#sha256={digest}" '
                f'data-dist-info-metadata="sha256={meta}">{self.filename}</a>'
            ).encode()
            headers.append((b"content-type", b"text/html"))
        elif path == f"/files/{self.filename}.metadata":
            body = self.metadata
        elif path == f"/files/{self.filename}":
            if self.mode == "500":
                status = 500
            elif self.mode == "truncated":
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [(b"content-length", str(len(self.wheel)).encode())],
                    }
                )
                await send({"type": "http.response.body", "body": self.wheel[:100]})
                return  # uvicorn closes the connection: the body is short
            elif self.mode == "hang":
                import anyio

                with anyio.move_on_after(20):
                    while not self.release.is_set():
                        await anyio.sleep(0.05)
                return
            else:
                body = self.wheel
        else:
            status = 404
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    @property
    def metadata(self) -> bytes:
        return b"Metadata-Version: 2.1\nName: plain\nVersion: 1.0\n"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hostile, str]]:
    folder = tmp_path_factory.mktemp("hostile")
    app = Hostile(demo_wheel(folder, "plain-1.0-py3-none-any.whl"))
    with uvicorn_thread(app) as base:
        try:
            yield app, f"{base}/simple/"
        finally:
            app.release.set()


@pytest.fixture(scope="module")
def victim(tmp_path_factory: pytest.TempPathFactory, served: str) -> Path:
    """A venv with gpukit installed: a failed install must leave it as it was."""
    folder = tmp_path_factory.mktemp("victim")
    python = make_venv(folder / "venv")
    result = install(python, served, folder / "cache", machine(), "gpukit")
    assert result.returncode == 0, result.stderr
    return python


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("hash", "sha256 mismatch"),
        ("truncated", "truncated body"),
        ("500", "HTTP 500"),
        ("hang", "timed out"),
    ],
)
def test_hostile_index_leaves_the_environment_unchanged(
    mode: str,
    message: str,
    hostile: tuple[Hostile, str],
    victim: Path,
    served: str,
    tmp_path: Path,
) -> None:
    app, index = hostile
    app.mode = mode
    before = tree_hash(victim)
    started = time.monotonic()
    result = install(
        victim,
        index,
        tmp_path / "cache",
        machine(),
        "plain",
        "gpukit",
        "--extra-index-url",
        served,
        "--timeout",
        "1",
        "-U",
    )
    assert time.monotonic() - started < 30
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "plain-1.0-py3-none-any.whl" in result.stderr
    assert tree_hash(victim) == before
    app.mode = "ok"


@pytest.mark.slow
def test_refresh_detects_the_machine_again(static: str, tmp_path: Path) -> None:
    """The providers' cache answers unless --refresh: a cache that (wrongly) says
    x86-64-v3 gets that build; --refresh detects the K10 again and gets null."""
    cache = tmp_path / "cache"
    env = machine()
    detected = wheelwise(["detect", "--json"], cache, env)
    assert detected.returncode == 0, detected.stderr
    cache_file = cache / "detect.cache"
    header, _, rest = cache_file.read_text().partition("\n")
    size = int(header.rpartition(" ")[2])
    document = json.loads(rest[size:])
    assert document["system"]["x86_64"]["level"] == ["v1"]
    document["system"]["x86_64"]["level"] = ["v3", "v2", "v1"]
    cache_file.write_text(f"{header}\n{rest[:size]}{json.dumps(document)}")
    python = make_venv(tmp_path / "venv")
    cached = install(python, static, cache, env, "gpukit", "--dry-run")
    assert cached.returncode == 0, cached.stderr
    assert "x86_64_v3" in cached.stdout.split("gpukit", 1)[1].split("\n")[0]
    refreshed = install(python, static, cache, env, "gpukit", "--refresh")
    assert refreshed.returncode == 0, refreshed.stderr
    assert "installed gpukit 1.0 (variant null" in refreshed.stdout
    assert installed_build(python, "gpukit") == "'null'"
    # The fresh answer is cached again.
    assert json.loads(cache_file.read_text().partition("\n")[2][size:])["system"]["x86_64"][
        "level"
    ] == ["v1"]


def test_the_index_from_the_environment_or_the_configuration(static: str, tmp_path: Path) -> None:
    """``WHEELWISE_INDEX_URL`` (as pip's ``PIP_INDEX_URL``), then ``[install]
    index-url`` of the configuration file, when no ``--index-url`` is given: a
    private index set once for every command."""
    python = make_venv(tmp_path / "venv")
    dry = ["install", "--python", str(python), "--dry-run", "-q", "--report", "-", "cudart"]
    config = tmp_path / "config.toml"
    env = {**machine(HASWELL), "WHEELWISE_CONFIG": str(config)}

    def planned(extra: dict[str, str], *args: str) -> list[str]:
        result = wheelwise([*dry, *args], tmp_path / "cache", {**env, **extra})
        assert result.returncode == 0, result.stderr
        return [item["metadata"]["name"] for item in json.loads(result.stdout)["install"]]

    assert planned({"WHEELWISE_INDEX_URL": static}) == ["cudart"]
    config.write_text(f'[install]\nindex-url = "{static}"\n')
    assert planned({}) == ["cudart"]
    # The command line wins: a folder that is no index finds nothing.
    (tmp_path / "empty").mkdir()
    lost = wheelwise([*dry, "-i", str(tmp_path / "empty")], tmp_path / "cache", env)
    assert lost.returncode == 2
    config.write_text("[install]\nindex-url = 3\n")
    bad = wheelwise(dry, tmp_path / "cache", env)
    assert bad.returncode == 2
    assert "[install] index-url must be a URL string" in bad.stderr


def test_upgrade_package_upgrades_that_one_only(tmp_path: Path) -> None:
    """``-P NAME`` (uv's): NAME to the newest that fits, every other installed
    version kept; ``-U``: every one to the newest, as uv's ``--upgrade``."""
    from indexkit import demo_wheel

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    for folder, version in ((old, "1.0"), (new, "1.0"), (new, "1.1")):
        demo_wheel(folder, f"alpha-{version}-py3-none-any.whl")
        demo_wheel(folder, f"beta-{version}-py3-none-any.whl", requires_dist=["alpha>=1"])
    python = make_venv(tmp_path / "venv")
    first = ["install", "--python", str(python), "--no-index", "-f", str(old), "beta"]
    assert wheelwise(first, tmp_path / "cache").returncode == 0
    args = ["install", "--python", str(python), "--no-index", "-f", str(new), "beta"]
    one = wheelwise([*args, "-P", "Beta"], tmp_path / "cache")
    assert one.returncode == 0, one.stderr
    assert "upgraded beta 1.0 -> 1.1" in one.stdout
    assert "already installed alpha 1.0" in one.stdout
    every = wheelwise([*args, "-U"], tmp_path / "cache")
    assert every.returncode == 0, every.stderr
    assert "upgraded alpha 1.0 -> 1.1" in every.stdout
    bad = wheelwise([*args, "-P", "not a name"], tmp_path / "cache")
    assert bad.returncode == 2
    assert "--upgrade-package 'not a name': not a project name" in bad.stderr


def test_check_and_the_warning_after_an_install_that_breaks_another(tmp_path: Path) -> None:
    """An install that replaces ``alpha`` which ``gamma`` pins: a warning line, as
    pip warns; ``wheelwise check`` lists it and exits 1, as pip check."""
    from indexkit import demo_wheel

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    demo_wheel(wheels, "alpha-1.0-py3-none-any.whl")
    demo_wheel(wheels, "alpha-1.1-py3-none-any.whl")
    demo_wheel(
        wheels,
        "gamma-1.0-py3-none-any.whl",
        requires_dist=["alpha==1.0", "zeta; python_version < '3'"],
    )
    python = make_venv(tmp_path / "venv")
    args = ["install", "--python", str(python), "--no-index", "-f", str(wheels)]
    assert wheelwise([*args, "gamma"], tmp_path / "cache").returncode == 0
    clean = wheelwise(["check", "--python", str(python)], tmp_path / "cache")
    assert (clean.returncode, clean.stdout) == (0, "no broken requirements found\n")
    upgraded = wheelwise([*args, "alpha==1.1"], tmp_path / "cache")
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stderr == (
        "wheelwise: warning: gamma 1.0 requires alpha==1.0, but alpha 1.1 is installed "
        "(wheelwise check lists every such requirement)\n"
    )
    broken = wheelwise(["check", "--python", str(python)], tmp_path / "cache")
    assert broken.returncode == 1
    assert broken.stdout == "gamma 1.0 requires alpha==1.0, but alpha 1.1 is installed\n"
    gone = wheelwise(["uninstall", "-y", "--python", str(python), "alpha"], tmp_path / "cache")
    assert gone.returncode == 0, gone.stderr
    missing = wheelwise(["check", "--python", str(python)], tmp_path / "cache")
    assert missing.stdout == "gamma 1.0 requires alpha==1.0, which is not installed\n"


def test_an_extra_the_release_does_not_provide_is_said(tmp_path: Path) -> None:
    from wheelfactory import make_wheel

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    metadata = (
        b"Metadata-Version: 2.1\nName: eps\nVersion: 1.0\nProvides-Extra: fancy\n"
        b"Requires-Dist: zeta; extra == 'fancy'\n"
    )
    make_wheel(
        wheels,
        "eps-1.0-py3-none-any.whl",
        record=True,
        extra_members={"eps-1.0.dist-info/METADATA": metadata},
    )
    python = make_venv(tmp_path / "venv")
    args = ["install", "--python", str(python), "--no-index", "-f", str(wheels), "eps[Nope]"]
    result = wheelwise(args, tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "wheelwise: warning: eps 1.0 has no extra 'nope': nothing was added for it\n"
    )


def test_uninstall_the_projects_a_requirements_file_names(tmp_path: Path) -> None:
    from indexkit import demo_wheel

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("alpha", "beta", "gamma"):
        demo_wheel(wheels, f"{name}-1.0-py3-none-any.whl")
    python = make_venv(tmp_path / "venv")
    args = ["install", "--python", str(python), "--no-index", "-f", str(wheels)]
    assert wheelwise([*args, "alpha", "beta", "gamma"], tmp_path / "cache").returncode == 0
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(
        f"Alpha==1.0 --hash=sha256:{'0' * 64}\nbeta#cpu ; python_version > '3'\n"
    )
    before = tree_hash(python)
    planned = wheelwise(
        ["uninstall", "--dry-run", "--python", str(python), "-r", str(requirements), "nope"],
        tmp_path / "cache",
    )
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.splitlines() == ["would uninstall alpha 1.0", "would uninstall beta 1.0"]
    assert "skipped nope: it is not installed" in planned.stderr
    assert tree_hash(python) == before
    removed = wheelwise(
        ["uninstall", "-y", "--python", str(python), "-r", str(requirements)], tmp_path / "cache"
    )
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.splitlines() == ["uninstalled alpha", "uninstalled beta"]
    nothing = wheelwise(["uninstall", "-y", "--python", str(python)], tmp_path / "cache")
    assert nothing.returncode == 2
    assert "nothing to uninstall: give NAME... or -r FILE" in nothing.stderr
    # A distribution the run cannot remove: the dry run says so, in the same line.
    (site_packages(python) / "gamma-1.0.dist-info" / "RECORD").unlink()
    argv = ["uninstall", "--python", str(python), "gamma"]
    planned = wheelwise([*argv, "--dry-run"], tmp_path / "cache")
    real = wheelwise([*argv, "-y"], tmp_path / "cache")
    assert planned.returncode == real.returncode == 2
    assert "cannot uninstall gamma 1.0: no readable RECORD" in planned.stderr
    assert planned.stderr == real.stderr
    assert planned.stdout == ""


@pytest.mark.parametrize(
    ("first", "kept"), [(["gpukit#x86_64_v3"], "'x86_64_v3'"), (["gpukit", "--no-variant"], "None")]
)
def test_a_kept_build_brings_its_own_dependencies(
    static: str, tmp_path: Path, first: list[str], kept: str
) -> None:
    """An installed build that is not the machine's best (chosen by label, or
    non-variant) stays when another package needs it, and its dependencies are its
    own: the CUDA builds' cudart is not installed for it. With -U, the machine's
    best build replaces it, cudart with it."""
    python = make_venv(tmp_path / "venv")
    cache = tmp_path / "cache"
    env = machine(cpu=HASWELL, driver="12.8", gpus="8.6")
    assert install(python, static, cache, env, *first).returncode == 0
    result = install(python, static, cache, env, "app")
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "gpukit") == kept
    names = sorted(p.name for p in site_packages(python).glob("*.dist-info"))
    assert names == ["app-1.0.dist-info", "gpukit-1.0.dist-info"]
    variant = " (variant x86_64_v3)" if kept != "None" else ""
    assert f"already installed gpukit 1.0{variant}\n" in result.stdout
    result = install(python, static, cache, env, "app", "-U")
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "gpukit") == "'cu128'"
    assert any(site_packages(python).glob("cudart-1.0.dist-info"))


@pytest.mark.parametrize(
    ("first", "then", "build", "cudart"),
    [
        (["gpukit", "--no-variant"], ["app", "gpukit#cu128"], "'cu128'", True),
        (["gpukit#x86_64_v3"], ["app", "--no-variant"], "None", False),
        (["gpukit#x86_64_v3"], ["app", "--variant", "gpukit=null"], "'null'", False),
    ],
    ids=["label", "no-variant", "variant-option"],
)
def test_a_build_asked_for_replaces_the_installed_one(
    static: str, tmp_path: Path, first: list[str], then: list[str], build: str, cudart: bool
) -> None:
    python = make_venv(tmp_path / "venv")
    cache = tmp_path / "cache"
    env = machine(cpu=HASWELL, driver="12.8", gpus="8.6")
    assert install(python, static, cache, env, *first).returncode == 0
    result = install(python, static, cache, env, *then)
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "gpukit") == build
    assert any(site_packages(python).glob("cudart-*.dist-info")) == cudart


def test_a_kept_build_the_machine_no_longer_runs_is_named_as_it_is(
    static: str, tmp_path: Path
) -> None:
    """The CUDA build installed, then the machine without its GPU: the build stays
    (no --upgrade), and the line names that build, not the one the machine would
    choose now."""
    python = make_venv(tmp_path / "venv")
    cache = tmp_path / "cache"
    gpu = machine(cpu=HASWELL, driver="12.8", gpus="8.6")
    assert install(python, static, cache, gpu, "gpukit").returncode == 0
    planned = install(python, static, cache, machine(cpu=HASWELL), "app", "--dry-run")
    assert planned.returncode == 0, planned.stderr
    (row,) = [line for line in planned.stdout.splitlines() if line.startswith("│ gpukit")]
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    assert cells[:4] == ["gpukit", "1.0 (installed)", "cu128", "-"]
    assert cells[-1] == "-"  # the labels the resolver passed over belong to another build
    result = install(python, static, cache, machine(cpu=HASWELL), "app")
    assert result.returncode == 0, result.stderr
    assert "already installed gpukit 1.0 (variant cu128)\n" in result.stdout
    assert installed_build(python, "gpukit") == "'cu128'"


@pytest.fixture(scope="module")
def conflicting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """gpukit 0.9 and 1.0, whose x86_64_v3 builds require dep<2 and whose cu128
    builds require nothing; dep 1.0 and 2.0."""
    from gpuhouse import CUDA, NAMESPACES, metadata_member, wheel

    root = tmp_path_factory.mktemp("kept-conflict")
    wheels = root / "wheels"
    wheels.mkdir()
    for version in ("0.9", "1.0"):
        wheel(wheels, f"gpukit-{version}-py3-none-any.whl")
        wheel(
            wheels,
            f"gpukit-{version}-py3-none-any-x86_64_v3.whl",
            "x86_64_v3",
            {"x86_64": {"level": ["v3"]}},
            namespaces=NAMESPACES,
            extra_members=metadata_member("gpukit", version, ["dep<2"]),
        )
        bound, archs = CUDA["cu128"]
        properties = {"nvidia": {"cuda_version_lower_bound": [bound], "sm_arch": archs}}
        wheel(
            wheels,
            f"gpukit-{version}-py3-none-any-cu128.whl",
            "cu128",
            properties,
            namespaces=NAMESPACES,
        )
    for version in ("1.0", "2.0"):
        wheel(wheels, f"dep-{version}-py3-none-any.whl")
    build_site(wheels, root / "site")
    with http_server(root / "site") as base:
        yield f"{base}/simple/"


@pytest.mark.parametrize("then", [["dep>=2", "gpukit"], ["dep>=2", "gpukit==1.0"]])
def test_a_kept_build_whose_dependencies_conflict_gives_way_to_another_build(
    conflicting: str, tmp_path: Path, then: list[str]
) -> None:
    """The installed x86_64_v3 build needs dep<2, dep>=2 is asked for: the machine's
    other build of the same version (cu128) replaces it, rather than a downgrade of
    gpukit or a conflict, and nothing is left broken."""
    python = make_venv(tmp_path / "venv")
    cache = tmp_path / "cache"
    env = machine(cpu=HASWELL, driver="12.8", gpus="8.6")
    assert install(python, conflicting, cache, env, "gpukit#x86_64_v3").returncode == 0
    result = install(python, conflicting, cache, env, *then)
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "gpukit") == "'cu128'"
    names = sorted(p.name for p in site_packages(python).glob("*.dist-info"))
    assert names == ["dep-2.0.dist-info", "gpukit-1.0.dist-info"]
    assert "warning" not in result.stderr
