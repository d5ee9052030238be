"""Installing from ``pylock.toml``: ``wheelwise install -r pylock.toml`` and ``wheelwise
sync``, end to end: wheels served over HTTP on 127.0.0.1, fresh venvs, machines
simulated with ``--system`` (and once with the providers' environment overrides).

The house: ``vtorch`` 2.0 (a non-variant CPU wheel, the ``null`` variant, ``cu126``
and ``cu130``; the CUDA builds require ``vcublas`` through a variant marker), the
variant-gated ``vcublas``, an ``app`` that requires vtorch, and plain ``alpha``,
``beta`` and ``extra``.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from indexkit import demo_wheel, uv_executable, uvicorn_thread
from installkit import WHEEL, installed_build, make_venv, tree_hash
from paths import DATA
from variantkit import SCHEMA, wheelwise
from wheelwise.lock import Package, PyLock, VariantsJson, Wheel, write_pylock

GATED = ['vcublas; "nvidia" in variant_namespaces']
ARCHS = ["80_real", "86_real", "90_real"]
CUDA = {
    "cu126": {"nvidia": {"cuda_version_lower_bound": ["12.6"], "sm_arch": ARCHS}},
    "cu130": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ARCHS}},
}
VARIANTS_JSON: dict[str, Any] = {
    "$schema": SCHEMA,
    "default-priorities": {"namespace": ["nvidia"]},
    "variants": {"null": {}, **CUDA},
}
MACHINES: dict[str, dict[str, Any]] = {
    "cuda13": {
        "nvidia": {
            "cuda_version_lower_bound": ["13.0", "12.9", "12.8", "12.7", "12.6"],
            "sm_arch": ["90_real", "90_virtual"],
        }
    },
    "driver-12.8": {
        "nvidia": {
            "cuda_version_lower_bound": ["12.8", "12.7", "12.6", "12.5"],
            "sm_arch": ["86_real", "86_virtual"],
        }
    },
    "cpu": {"x86_64": {"level": ["v1"]}},
}


def wheel(directory: Path, filename: str, label: str | None = None, **kwargs: Any) -> Path:
    """A wheel whose module says which build it is (``VARIANT``); a Tag in WHEEL."""
    name, version = filename.split("-")[:2]
    members = {f"{name}-{version}.dist-info/WHEEL": WHEEL}
    properties = CUDA.get(label or "", {}) if label is not None else None
    return demo_wheel(
        directory,
        filename,
        label,
        properties,
        namespaces=["nvidia"] if label is not None else None,
        extra_members=members,
        **kwargs,
    )


def build_house(directory: Path) -> dict[str, list[Path]]:
    directory.mkdir(parents=True)
    return {
        "vtorch": [
            wheel(directory, "vtorch-2.0-py3-none-any.whl"),
            wheel(directory, "vtorch-2.0-py3-none-any-null.whl", "null"),
            *(
                wheel(directory, f"vtorch-2.0-py3-none-any-{label}.whl", label, requires_dist=GATED)
                for label in CUDA
            ),
        ],
        "vcublas": [wheel(directory, "vcublas-1.0-py3-none-any.whl")],
        "app": [wheel(directory, "app-1.0-py3-none-any.whl", requires_dist=["vtorch"])],
        "alpha": [wheel(directory, "alpha-1.0-py3-none-any.whl")],
        "beta": [wheel(directory, "beta-2.0-py3-none-any.whl")],
        "extra": [wheel(directory, "extra-1.0-py3-none-any.whl")],
        "setuptools": [wheel(directory, "setuptools-80.0-py3-none-any.whl")],
        "old": [wheel(directory, "old-1.0-cp27-cp27mu-manylinux1_x86_64.whl")],
    }


class Files:
    """Serves wheel files at ``/files/NAME``; a file may be answered with other bytes
    (a lie) or a status; every path asked for is recorded."""

    def __init__(self, wheels: Sequence[Path]) -> None:
        self.files = {path.name: path.read_bytes() for path in wheels}
        self.lies: dict[str, bytes] = {}
        self.status: dict[str, int] = {}
        self.asked: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path: str = scope["path"]
        self.asked.append(path)
        name = path.removeprefix("/files/")
        body = self.lies.get(name, self.files.get(name))
        status = self.status.get(name, 200 if body is not None else 404)
        if status != 200:
            body = b""
        headers = [(b"content-length", str(len(body or b"")).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body or b""})


class House:
    def __init__(self, wheels: dict[str, list[Path]], files: Files, base: str) -> None:
        self.wheels = wheels
        self.files = files
        self.base = base

    def package(
        self,
        name: str,
        version: str,
        *,
        marker: str | None = None,
        only: Sequence[str] | None = None,
        **fields: Any,
    ) -> Package:
        """*name*'s entry listing its wheels (those named in *only*, if given) by URL."""
        listed = [w for w in self.wheels[name] if only is None or w.name in only]
        variant = any(w.stem.count("-") == 5 for w in listed)
        return Package(
            name=name,
            version=version,
            marker=marker,
            index=f"{self.base}/simple/",
            wheels=tuple(locked_wheel(w, url=f"{self.base}/files/{w.name}") for w in listed),
            variants_json=VariantsJson(VARIANTS_JSON) if variant else None,
            **fields,
        )

    def vtorch_lock(self) -> list[Package]:
        """app -> vtorch -> (CUDA builds only) vcublas, as `wheelwise lock` writes it."""
        return [
            self.package("app", "1.0"),
            self.package("vtorch", "2.0"),
            self.package("vcublas", "1.0", marker="'variant-needs-vcublas' in dependency_groups"),
        ]


def locked_wheel(wheel: Path, *, url: str | None = None, path: str | None = None) -> Wheel:
    data = wheel.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    return Wheel(url=url, path=path, size=len(data), hashes={"sha256": digest})


def write_lock(folder: Path, packages: Sequence[Package], name: str = "pylock.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lock = PyLock(created_by="wheelwise", packages=tuple(packages))
    path = folder / name
    path.write_text(write_pylock(lock), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def house(tmp_path_factory: pytest.TempPathFactory) -> Iterator[House]:
    wheels = build_house(tmp_path_factory.mktemp("lock") / "wheels")
    files = Files([w for group in wheels.values() for w in group])
    with uvicorn_thread(files) as base:
        yield House(wheels, files, base)


def system(tmp_path: Path, machine: str) -> Path:
    path = tmp_path / f"{machine}.json"
    path.write_text(json.dumps({"system": MACHINES[machine]}))
    return path


def run(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return wheelwise(list(args), tmp_path / "cache", env)


def install_lock(
    tmp_path: Path, python: Path, lock: Path, machine: str | None, *args: str, command: str = "-r"
) -> subprocess.CompletedProcess[str]:
    """``install -r LOCK`` (or ``sync LOCK`` with command="sync") into *python*."""
    head = ["install", "-r", str(lock)] if command == "-r" else ["sync", str(lock)]
    if machine is not None:
        head += ["--system", str(system(tmp_path, machine))]
    return run(tmp_path, *head, "--python", str(python), *args)


def installed(python: Path) -> dict[str, str | None]:
    """name -> variant label of each distribution in *python*'s environment."""
    result = wheelwise(["list", "--python", str(python), "--json"], python.parent)
    assert result.returncode == 0, result.stderr
    return {row["name"]: row["variant"] for row in json.loads(result.stdout)}


# -- what gets installed ---------------------------------------------------------------


@pytest.mark.slow
def test_plain_lock_installs_exactly_what_it_lists(house: House, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    beta = house.wheels["beta"][0]
    local = tmp_path / "project" / "wheels"
    local.mkdir(parents=True)
    (local / beta.name).write_bytes(beta.read_bytes())
    lock = write_lock(
        tmp_path / "project",
        [
            house.package("alpha", "1.0"),
            # A path is read relative to the lock file's folder.
            Package(
                name="beta", version="2.0", wheels=(locked_wheel(beta, path=f"wheels/{beta.name}"),)
            ),
        ],
    )
    result = install_lock(tmp_path, python, lock, "cpu", "-v")
    assert result.returncode == 0, result.stderr
    assert installed(python) == {"alpha": None, "beta": None}
    # -v says where each came from.
    assert f"installed alpha 1.0 (non-variant; from {lock})" in result.stdout
    assert f"installed beta 2.0 (non-variant; from {lock})" in result.stdout
    assert re.search(r"^changed 2 packages in \d+\.\d\d s$", result.stdout, re.M)
    assert not [path for path in house.files.asked if "/simple/" in path]  # no index page
    again = install_lock(tmp_path, python, lock, "cpu")
    assert again.returncode == 0, again.stderr
    assert "already installed alpha 1.0" in again.stdout
    # A newer minor lock-version is read, with a warning (PEP 751).
    lock.write_text(lock.read_text().replace('lock-version = "1.0"', 'lock-version = "1.1"'))
    newer = install_lock(tmp_path, python, lock, "cpu")
    assert newer.returncode == 0, newer.stderr
    assert newer.stderr.splitlines() == [
        f"wheelwise: warning: {lock}: lock-version 1.1 is newer than the 1.0 this wheelwise "
        "knows; keys it does not know are ignored"
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("machine", "build", "gated"),
    [("cuda13", "'cu130'", True), ("driver-12.8", "'cu126'", True), ("cpu", "'null'", False)],
)
def test_one_variant_lock_installs_each_machines_build(
    house: House, tmp_path: Path, machine: str, build: str, gated: bool
) -> None:
    python = make_venv(tmp_path / "venv")
    lock = write_lock(tmp_path, house.vtorch_lock())
    result = install_lock(tmp_path, python, lock, machine)
    assert result.returncode == 0, result.stderr
    assert installed_build(python, "vtorch") == build
    label = build.strip("'")
    expected = {"app": None, "vtorch": label}
    if gated:
        expected["vcublas"] = None
    assert installed(python) == expected
    assert f"installed vtorch 2.0 (variant {label}" in result.stdout
    assert ("installed vcublas 1.0" in result.stdout) == gated


@pytest.mark.slow
def test_machine_detected_by_the_providers(house: House, tmp_path: Path) -> None:
    """Without --system: an old CPU without a GPU (the providers' overrides) gets the
    null variant and no vcublas; an H100 with a CUDA 13 driver, cu130 and vcublas."""
    lock = write_lock(tmp_path, house.vtorch_lock())
    cpu = {
        "WHEELWISE_CPUINFO": str(DATA / "cpuinfo" / "linux-scientific7-k10"),
        "WHEELWISE_NVIDIA_DRIVER": "none",
        "WHEELWISE_AMD_ROCM": "none",
        "WHEELWISE_AMD_GFX": "none",
        "WHEELWISE_CONFIG": str(tmp_path / "config.toml"),
    }
    for env, build in [
        (cpu, "'null'"),
        ({**cpu, "WHEELWISE_NVIDIA_DRIVER": "13.0", "WHEELWISE_NVIDIA_GPUS": "9.0"}, "'cu130'"),
    ]:
        python = make_venv(tmp_path / f"venv-{build.strip(chr(39))}")
        result = run(tmp_path, "install", "-r", str(lock), "--python", str(python), env=env)
        assert result.returncode == 0, result.stderr
        assert installed_build(python, "vtorch") == build
        assert ("vcublas" in installed(python)) == (build == "'cu130'")


@pytest.mark.slow
def test_no_variant_and_variant_choice(house: House, tmp_path: Path) -> None:
    lock = write_lock(tmp_path, house.vtorch_lock())
    python = make_venv(tmp_path / "venv")
    plain = install_lock(tmp_path, python, lock, "cuda13", "--no-variant")
    assert plain.returncode == 0, plain.stderr
    assert installed_build(python, "vtorch") == "None"
    assert installed(python) == {"app": None, "vtorch": None}  # no variant, no vcublas
    chosen = install_lock(tmp_path, python, lock, "cuda13", "--variant", "vtorch=cu126")
    assert chosen.returncode == 0, chosen.stderr
    assert (
        installed_build(python, "vtorch") == "'cu126'"
    )  # the lock's build replaces the installed one
    assert installed(python) == {"app": None, "vtorch": "cu126", "vcublas": None}
    before = tree_hash(python.parent.parent)
    refused = install_lock(tmp_path, python, lock, "driver-12.8", "--variant", "vtorch=cu130")
    assert refused.returncode == 2
    assert "variant 'cu130' of vtorch 2.0 is not supported by this machine" in refused.stderr
    assert str(lock) in refused.stderr
    unknown = install_lock(tmp_path, python, lock, "cuda13", "--variant", "nope=cu130")
    assert unknown.returncode == 2
    assert f"--variant nope=cu130: {lock} installs no package nope" in unknown.stderr
    assert tree_hash(python.parent.parent) == before


@pytest.mark.slow
def test_sync_removes_what_the_lock_does_not_select(house: House, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    first = write_lock(
        tmp_path / "first",
        [
            house.package("alpha", "1.0"),
            house.package("extra", "1.0"),
            house.package("setuptools", "80.0"),
        ],
    )
    assert install_lock(tmp_path, python, first, "cpu").returncode == 0
    assert installed(python) == {"alpha": None, "extra": None, "setuptools": None}
    second = write_lock(tmp_path / "second", [house.package("alpha", "1.0"), *house.vtorch_lock()])
    dry = install_lock(tmp_path, python, second, "cuda13", "--dry-run", command="sync")
    assert dry.returncode == 0, dry.stderr
    assert "would uninstall extra 1.0" in dry.stdout
    assert "setuptools" not in dry.stdout
    assert installed(python) == {"alpha": None, "extra": None, "setuptools": None}
    result = install_lock(tmp_path, python, second, "cuda13", command="sync")
    assert result.returncode == 0, result.stderr
    assert "uninstalled extra 1.0" in result.stdout
    assert "already installed alpha 1.0" in result.stdout
    # The installer's tooling stays unless the lock lists it.
    assert installed(python) == {
        "alpha": None,
        "app": None,
        "setuptools": None,
        "vcublas": None,
        "vtorch": "cu130",
    }
    named = write_lock(tmp_path / "third", [house.package("beta", "2.0")], "pylock.dev.toml")
    tooling = write_lock(
        tmp_path / "third",
        [
            house.package("alpha", "1.0"),
            house.package("setuptools", "80.0", marker="sys_platform == 'nowhere'"),
        ],
    )
    result = install_lock(tmp_path, python, tooling, "cpu", command="sync")
    assert result.returncode == 0, result.stderr
    assert installed(python) == {"alpha": None}
    # A lock named pylock.NAME.toml is a lock for `install -r` too.
    result = install_lock(tmp_path, python, named, "cpu")
    assert result.returncode == 0, result.stderr
    assert installed(python) == {"alpha": None, "beta": None}


def test_sync_keeps_the_installer_it_runs_in() -> None:
    """Syncing the environment wheelwise runs in keeps wheelwise and what it needs
    (and pip), unless the lock lists them; in another environment only pip is kept."""
    from wheelwise.environment.installed import InstalledDist
    from wheelwise.environment.interpreter import TargetEnvironment
    from wheelwise.install.from_lock import _removals

    here = TargetEnvironment.current()
    found = {n: InstalledDist(n, "1.0", None, None, Path(n)) for n in ("alpha", "click", "pip")}
    found["wheelwise"] = InstalledDist("wheelwise", "1.0", None, None, Path("wheelwise"))
    empty = PyLock(created_by="x")
    assert [d.name for d in _removals(empty, (), found, here)] == ["alpha"]
    elsewhere = replace(here, prefix=here.prefix / "elsewhere")
    assert [d.name for d in _removals(empty, (), found, elsewhere)] == [
        "alpha",
        "click",
        "wheelwise",
    ]


@pytest.mark.slow
def test_dry_run_installs_nothing_and_reads_only_what_gates(house: House, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    before = tree_hash(python.parent.parent)
    plain = write_lock(tmp_path / "plain", [house.package("alpha", "1.0")])
    house.files.asked.clear()
    result = install_lock(tmp_path, python, plain, "cpu", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "alpha" in result.stdout
    assert house.files.asked == []  # nothing to settle: nothing downloaded
    lock = write_lock(tmp_path / "gated", house.vtorch_lock())
    report = tmp_path / "report.json"
    result = install_lock(tmp_path, python, lock, "cuda13", "--dry-run", "--report", str(report))
    assert result.returncode == 0, result.stderr
    assert "cu130" in result.stdout
    assert "vcublas" in result.stdout
    # The selected wheels' METADATA decided vcublas: downloaded into the cache.
    assert sorted(house.files.asked) == [
        "/files/app-1.0-py3-none-any.whl",
        "/files/vtorch-2.0-py3-none-any-cu130.whl",
    ]
    assert list((tmp_path / "cache" / "wheels").rglob("vtorch-2.0-py3-none-any-cu130.whl"))
    assert tree_hash(python.parent.parent) == before
    document = json.loads(report.read_text())
    items = {item["metadata"]["name"]: item for item in document["install"]}
    assert set(items) == {"app", "vtorch", "vcublas"}
    assert items["vtorch"]["variant"]["label"] == "cu130"
    assert "nvidia :: cuda_version_lower_bound :: 13.0" in items["vtorch"]["variant"]["properties"]
    assert items["vtorch"]["metadata"]["requires_dist"] == GATED
    assert items["vtorch"]["download_info"]["url"].endswith("-cu130.whl")


# -- what is refused ---------------------------------------------------------------------


def lock_text(house: House, packages: Sequence[Package]) -> str:
    return write_pylock(PyLock(created_by="wheelwise", packages=tuple(packages)))


def refusals(house: House) -> dict[str, tuple[str, str]]:
    """Each bad lock's text, and what its error line says (with the lock's path)."""
    vtorch = lock_text(house, [house.package("vtorch", "2.0")])
    alpha = house.package("alpha", "1.0")
    wrong_hash = replace(alpha, wheels=(replace(alpha.wheels[0], hashes={"sha256": "0" * 64}),))
    size = alpha.wheels[0].size or 0
    url = alpha.wheels[0].url
    wrong_size = replace(alpha, wheels=(replace(alpha.wheels[0], size=size + 1),))
    two = [
        replace(alpha, marker="sys_platform != 'nowhere'"),
        replace(alpha, marker="python_version > '3'"),
    ]
    zeros = "0" * 64
    missing = locked_wheel(house.wheels["alpha"][0], path="wheels/alpha-1.0-py3-none-any.whl")
    source_only = (
        'lock-version = "1.0"\ncreated-by = "x"\n[[packages]]\nname = "alpha"\n'
        f'version = "1.0"\nsdist = {{ url = "{house.base}/files/alpha-1.0.tar.gz", '
        f'hashes = {{ sha256 = "{zeros}" }} }}\n'
    )
    vcs = (
        'lock-version = "1.0"\ncreated-by = "x"\n[[packages]]\nname = "alpha"\n'
        'vcs = { type = "git", url = "https://example.test/alpha.git", commit-id = "abc" }\n'
    )
    return {
        "broken-toml": ("lock-version = \n", "pylock.toml must be UTF-8 encoded TOML"),
        "major": (
            lock_text(house, [alpha]).replace('lock-version = "1.0"', 'lock-version = "2.0"'),
            "unsupported lock-version '2.0'",
        ),
        "hash": (
            lock_text(house, [wrong_hash]),
            f"package alpha 1.0: alpha-1.0-py3-none-any.whl at {url}: sha256 mismatch: expected "
            f"{'0' * 64}, got ",
        ),
        "size": (
            lock_text(house, [wrong_size]),
            f"package alpha 1.0: alpha-1.0-py3-none-any.whl at {url}: size mismatch: the lock "
            f"gives {size + 1} bytes, the file has {size} bytes",
        ),
        "label": (
            re.sub(r"^cu126 = .*\n", "", vtorch, flags=re.MULTILINE),
            "variant label 'cu126' of 'vtorch-2.0-py3-none-any-cu126.whl' is missing from "
            "variants-json",
        ),
        "ambiguous": (lock_text(house, two), "2 entries for package 'alpha' apply"),
        "no-wheel-fits": (
            lock_text(house, [house.package("old", "1.0")]),
            "package old 1.0: no wheel it lists fits this target",
        ),
        "sdist-only": (
            source_only,
            "package alpha 1.0 is locked from an sdist only; wheelwise installs wheels only",
        ),
        "vcs": (
            vcs,
            "package alpha is locked from a git repository (vcs) only; wheelwise installs "
            "wheels only",
        ),
        "requires-python": (
            lock_text(house, [alpha]).replace(
                'created-by = "wheelwise"', 'requires-python = "<3"\ncreated-by = "wheelwise"'
            ),
            "requires-python '<3' does not allow the target's Python",
        ),
        "missing-path": (
            lock_text(house, [Package(name="alpha", version="1.0", wheels=(missing,))]),
            "package alpha 1.0: alpha-1.0-py3-none-any.whl at file://",
        ),
        "environments": (
            lock_text(house, [alpha]).replace(
                'created-by = "wheelwise"',
                'environments = ["sys_platform == \'nowhere\'"]\ncreated-by = "wheelwise"',
            ),
            "none of its environments holds for the target",
        ),
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        "broken-toml",
        "major",
        "hash",
        "size",
        "label",
        "ambiguous",
        "no-wheel-fits",
        "sdist-only",
        "vcs",
        "requires-python",
        "environments",
        "missing-path",
    ],
)
def test_bad_lock_is_one_error_line_and_changes_nothing(
    house: House, tmp_path: Path, case: str
) -> None:
    python = make_venv(tmp_path / "venv")
    keep = write_lock(tmp_path / "keep", [house.package("extra", "1.0")])
    assert install_lock(tmp_path, python, keep, "cpu").returncode == 0
    before = tree_hash(python.parent.parent)
    text, message = refusals(house)[case]
    lock = tmp_path / "bad" / "pylock.toml"
    lock.parent.mkdir()
    lock.write_text(text, encoding="utf-8")
    for command in ("-r", "sync"):
        result = install_lock(tmp_path, python, lock, "cuda13", command=command)
        assert result.returncode == 2, result.stdout + result.stderr
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith(f"wheelwise: error: {lock}"), lines[0]
        assert message in lines[0]
        assert tree_hash(python.parent.parent) == before


@pytest.mark.slow
def test_a_server_that_lies_or_fails_is_refused(house: House, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    before = tree_hash(python.parent.parent)
    lock = write_lock(tmp_path, [house.package("alpha", "1.0"), house.package("beta", "2.0")])
    name = "beta-2.0-py3-none-any.whl"
    genuine = house.files.files[name]
    # Same size, other bytes: the hash tells.
    house.files.lies[name] = bytes(reversed(genuine))
    try:
        lied = install_lock(tmp_path, python, lock, "cpu", "--retries", "0")
        house.files.lies[name] = genuine + b"more"
        longer = install_lock(tmp_path, python, lock, "cpu", "--retries", "0")
        del house.files.lies[name]
        house.files.status[name] = 500
        failing = install_lock(tmp_path, python, lock, "cpu", "--retries", "1")
    finally:
        house.files.lies.pop(name, None)
        house.files.status.pop(name, None)
    assert lied.returncode == 2
    url = f"{house.base}/files/{name}"
    assert f"package beta 2.0: {name} at {url}: sha256 mismatch" in lied.stderr
    assert longer.returncode == 2
    assert f"package beta 2.0: {name} at {url}: " in longer.stderr
    assert failing.returncode == 2
    assert "HTTP 500" in failing.stderr
    assert "(gave up after 2 tries)" in failing.stderr
    assert tree_hash(python.parent.parent) == before
    # Bytes that did not match were never kept in the cache.
    kept = list((tmp_path / "cache" / "wheels").rglob(name))
    assert all(path.read_bytes() == genuine for path in kept)
    fine = install_lock(tmp_path, python, lock, "cpu")
    assert fine.returncode == 0, fine.stderr
    assert installed(python) == {"alpha": None, "beta": None}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-U"], "-U/--upgrade cannot be used with a lock file"),
        (["-P", "alpha"], "-P/--upgrade-package cannot be used with a lock file"),
        (["--pre"], "--pre cannot be used with a lock file"),
        (["--index-url", "http://127.0.0.1:9/simple/"], "-i/--index-url cannot be used"),
        (["--find-links", "."], "-f/--find-links cannot be used"),
        (["--no-deps"], "--no-deps cannot be used"),
        (["alpha"], "a lock file is installed on its own"),
        (["-r", "requirements.txt"], "a lock file is installed on its own"),
    ],
)
def test_options_that_choose_are_refused_with_a_lock(
    house: House, tmp_path: Path, args: list[str], message: str
) -> None:
    python = make_venv(tmp_path / "venv")
    before = tree_hash(python.parent.parent)
    lock = write_lock(tmp_path, [house.package("alpha", "1.0")])
    result = install_lock(tmp_path, python, lock, "cpu", *args)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("wheelwise: error: ")
    assert message in line
    assert tree_hash(python.parent.parent) == before


@pytest.mark.slow
def test_a_sync_with_nothing_to_do_downloads_nothing(house: House, tmp_path: Path) -> None:
    """The gate is settled from the installed builds' own METADATA when the chosen
    builds are installed already (same version, same label)."""
    python = make_venv(tmp_path / "venv")
    lock = write_lock(tmp_path / "gated", house.vtorch_lock())
    first = install_lock(tmp_path, python, lock, "cuda13", command="sync")
    assert first.returncode == 0, first.stderr
    assert installed(python)["vcublas"] is None
    before = tree_hash(python.parent.parent)
    house.files.asked.clear()
    again = install_lock(tmp_path, python, lock, "cuda13", "--no-cache", command="sync")
    assert again.returncode == 0, again.stderr
    assert house.files.asked == []
    assert tree_hash(python.parent.parent) == before
    assert installed_build(python, "vtorch") == "'cu130'"


@pytest.mark.slow
def test_a_changed_unpacked_entry_is_made_again(house: House, tmp_path: Path) -> None:
    """A file of a wheel kept unpacked, edited in place through an environment that
    links it: the next install from the lock finds the change, drops the entry,
    fetches the wheel again and installs it unchanged."""
    lock = write_lock(tmp_path / "project", [house.package("alpha", "1.0")])
    first = make_venv(tmp_path / "one")
    assert install_lock(tmp_path, first, lock, "cpu").returncode == 0
    [edited] = list((tmp_path / "one").rglob("site-packages/alpha/*.py"))
    [cached] = list((tmp_path / "cache" / "unpacked").rglob(f"alpha/{edited.name}"))
    assert edited.samefile(cached)
    with edited.open("a") as stream:
        stream.write("# edited\n")
    second = make_venv(tmp_path / "two")
    result = install_lock(tmp_path, second, lock, "cpu")
    assert result.returncode == 0, result.stderr
    [fresh] = list((tmp_path / "two").rglob(f"site-packages/alpha/{edited.name}"))
    assert b"# edited" not in fresh.read_bytes()
    assert b"# edited" in edited.read_bytes()
    assert not fresh.samefile(edited)
    assert installed(second) == {"alpha": None}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {"alpha"}),
        (["--extra", "GPU"], {"alpha", "beta"}),
        (["--group", "dev"], {"alpha", "extra"}),
        (["--all-extras", "--group", "dev"], {"alpha", "beta", "extra"}),
    ],
)
def test_extras_and_groups_of_a_lock_as_uv_selects_them(
    house: House, tmp_path: Path, args: list[str], expected: set[str]
) -> None:
    """PEP 751's ``'gpu' in extras`` and ``'dev' in dependency_groups`` markers, for
    ``install -r``, ``sync`` and uv's ``pip install -r`` alike."""
    packages = (
        house.package("alpha", "1.0"),
        house.package("beta", "2.0", marker="'gpu' in extras"),
        house.package("extra", "1.0", marker="'dev' in dependency_groups"),
    )
    folder = tmp_path / "project"
    folder.mkdir()
    lock = folder / "pylock.toml"
    text = write_pylock(
        PyLock(
            created_by="wheelwise", packages=packages, extras=("gpu",), dependency_groups=("dev",)
        )
    )
    lock.write_text(text, encoding="utf-8")
    for command in ("-r", "sync"):
        python = make_venv(tmp_path / f"venv{command}")
        result = install_lock(tmp_path, python, lock, "cpu", *args, command=command)
        assert result.returncode == 0, result.stderr
        assert set(installed(python)) == expected, command
    theirs = make_venv(tmp_path / "uv")
    uv = subprocess.run(
        [uv_executable(), "pip", "install", "--python", str(theirs), "--no-cache",
         "-r", str(lock), *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert uv.returncode == 0, uv.stderr
    assert set(installed(theirs)) == expected


def test_an_extra_the_lock_does_not_declare(house: House, tmp_path: Path) -> None:
    lock = write_lock(tmp_path / "project", [house.package("alpha", "1.0")])
    python = make_venv(tmp_path / "venv")
    result = install_lock(tmp_path, python, lock, "cpu", "--extra", "gpu")
    assert result.returncode == 2
    assert f"{lock}: the lock has no extra 'gpu' (it has: none)" in result.stderr
    excluded = install_lock(tmp_path, python, lock, "cpu", "--exclude-newer", "7 days")
    assert excluded.returncode == 2
    assert "--exclude-newer cannot be used with a lock file" in excluded.stderr
    one = install_lock(tmp_path, python, lock, "cpu", "--exclude-newer-package", "alpha=7 days")
    assert one.returncode == 2
    assert "--exclude-newer-package cannot be used with a lock file" in one.stderr
    torch = install_lock(tmp_path, python, lock, "cpu", "--torch-backend", "cu128")
    assert torch.returncode == 2
    assert "--torch-backend cannot be used with a lock file" in torch.stderr
    editable = install_lock(tmp_path, python, lock, "cpu", "-e", str(tmp_path))
    assert editable.returncode == 2
    assert "-e/--editable cannot be used with a lock file" in editable.stderr
    assert installed(python) == {}
    # Set in the environment, it is a default for resolving, which a lock has done.
    head = ["install", "-r", str(lock), "--system", str(system(tmp_path, "cpu"))]
    quiet = run(tmp_path, *head, "--python", str(python), env={"WHEELWISE_EXCLUDE_NEWER": "7 days"})
    assert quiet.returncode == 0, quiet.stderr
    assert installed(python) == {"alpha": None}
