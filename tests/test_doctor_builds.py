"""``wheelwise doctor``'s builds section: installed variant wheels against the machine
as it is now (and against what an index offers today), and non-variant GPU builds
known by name (torch ``+cu128``, ``cupy-cuda12x``, NVIDIA's ``-cu12`` libraries)
against the NVIDIA driver.

Every scenario installs real wheels with ``wheelwise install`` into a fresh virtual
environment, then runs the real command (``python -m wheelwise doctor --json``) for a
machine simulated by the providers' overrides or ``--system``; every document is
validated against docs/doctor-report.schema.json.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from indexkit import free_port, http_server, uvicorn_thread
from installkit import WHEEL, make_venv, pip
from paths import CORPUS, DATA
from variantkit import wheelwise
from wheelfactory import make_wheel, variant_doc
from wheelwise.doctor.findings import SECTIONS, SEVERITIES
from wheelwise.doctor.fix_commands import FixCommands
from wheelwise.doctor.gpu_fit import MachineRuntimes, judge_gpu_builds
from wheelwise.doctor.gpu_packages import CPU, CUDA, ROCM, recognize
from wheelwise.doctor.installed_dists import installed_dists
from wheelwise.environment.installed import read_name_version
from wheelwise.publish.static import build_site

SCHEMA = Path(__file__).resolve().parent.parent / "docs" / "doctor-report.schema.json"
HASWELL = DATA / "cpuinfo" / "linux-rhel7-haswell"
NAMESPACES = ["nvidia", "x86_64"]
CUDA_BUILDS = {
    "cu126": ("12.6", ["80_real", "86_real", "90_real"]),
    "cu128": ("12.8", ["80_real", "86_real", "90_real", "100_real"]),
    "cu130": ("13.0", ["80_real", "86_real", "90_real", "100_real"]),
}
PLAIN = [f"plain{i}" for i in range(12)]


# -- wheels, machines, runs -------------------------------------------------------------


def wheel(
    directory: Path,
    name: str,
    version: str,
    label: str | None = None,
    properties: dict[str, dict[str, list[str]]] | None = None,
    namespaces: list[str] = NAMESPACES,
) -> Path:
    """A wheel of *name* (a distribution name, ``-`` allowed) with a full RECORD."""
    stem = name.replace("-", "_")
    directory.mkdir(parents=True, exist_ok=True)
    members = {
        f"{stem}/__init__.py": f"VARIANT = {label!r}\n".encode(),
        f"{stem}-{version}.dist-info/WHEEL": WHEEL,
    }
    document = None
    if label is not None:
        document = variant_doc(label, properties or {})
        document["default-priorities"]["namespace"] = namespaces
    suffix = f"-{label}" if label else ""
    filename = f"{stem}-{version}-py3-none-any{suffix}.whl"
    return make_wheel(directory, filename, document, extra_members=members, record=True)


@pytest.fixture(scope="module")
def house(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Variant wheels (gpukit: CUDA builds; cpukit: x86-64 levels), GPU builds known
    by name, and plain distributions."""
    directory = tmp_path_factory.mktemp("doctor") / "wheels"
    for label, (bound, archs) in CUDA_BUILDS.items():
        properties = {"nvidia": {"cuda_version_lower_bound": [bound], "sm_arch": archs}}
        wheel(directory, "gpukit", "1.0", label, properties)
    for level in ("v3", "v4"):
        wheel(directory, "cpukit", "1.0", f"x86_64_{level}", {"x86_64": {"level": [level]}})
    wheel(directory, "torch", "2.7.0+cu128")
    wheel(directory, "torchvision", "0.22.0+cu128")
    wheel(directory, "cupy-cuda12x", "13.3.0")
    wheel(directory, "nvidia-cuda-runtime-cu12", "12.8.90")
    wheel(directory, "nvidia-cublas-cu12", "12.8.4.1")
    for name in PLAIN:
        wheel(directory, name, "1.0")
    # Builds against a dependency's version (PEP 817 abi_dependency).
    for major in ("1", "2"):
        wheel(directory, "depkit", f"{major}.0")
        abi = {"abi_dependency": {"depkit": [major]}}
        wheel(directory, "abikit", "1.0", f"dep{major}", abi, ["abi_dependency"])
    return directory


@pytest.fixture(scope="module")
def index(house: Path) -> Iterator[str]:
    """*house*'s variant wheels as a static index served on 127.0.0.1."""
    variants = house.parent / "variants"
    variants.mkdir()
    for path in house.glob("*kit-*.whl"):
        (variants / path.name).write_bytes(path.read_bytes())
    site = house.parent / "site"
    build_site(variants, site)
    with http_server(site) as base:
        yield f"{base}/simple/"


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def machine(driver: str = "none", gpus: str = "9.0") -> dict[str, str]:
    """A Haswell CPU (x86-64-v3), no AMD GPU, and an NVIDIA driver for CUDA *driver*
    with GPUs of compute capability *gpus* (``none``: no NVIDIA driver)."""
    env = {
        "WHEELWISE_CPUINFO": str(HASWELL),
        "WHEELWISE_NVIDIA_DRIVER": driver,
        "WHEELWISE_AMD_ROCM": "none",
        "WHEELWISE_AMD_GFX": "none",
    }
    if driver != "none":
        env["WHEELWISE_NVIDIA_GPUS"] = gpus
    return env


class Scenario:
    """A fresh virtual environment, and the commands run against it."""

    def __init__(self, tmp_path: Path, house: Path, validator: Draft202012Validator) -> None:
        self.tmp = tmp_path
        self.house = house
        self.validator = validator
        self.python = make_venv(tmp_path / "venv")
        self.cache = tmp_path / "cache"
        # An empty machine tree: the other sections' probes find no GPU files.
        self.root = tmp_path / "root"
        self.root.mkdir()
        (tmp_path / "empty").mkdir()

    def install(self, env: dict[str, str], *requirements: str) -> None:
        args = ["install", "--python", str(self.python), "--index-url", str(self.tmp / "empty")]
        args += ["--find-links", str(self.house), "-q", *requirements]
        done = wheelwise(args, self.cache, env)
        assert done.returncode == 0, done.stderr

    def run(self, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        full = {**env, "WHEELWISE_DOCTOR_ROOT": str(self.root)}
        return wheelwise(["doctor", "--python", str(self.python), *args], self.cache, full)

    def doctor(self, env: dict[str, str], *args: str) -> dict[str, Any]:
        """The --json document (checked against the schema and the exit status)."""
        done = self.run(env, "--json", *args)
        assert done.returncode in (0, 1, 2), done.stderr
        document: dict[str, Any] = json.loads(done.stdout)
        errors = [error.message for error in self.validator.iter_errors(document)]
        assert errors == [], errors
        assert done.returncode == document["exit_code"]
        return document

    def fix(self, command: str) -> subprocess.CompletedProcess[str]:
        """Run a ``wheelwise ...`` fix as given (with this checkout's wheelwise)."""
        words = shlex.split(command)
        assert words[0] == "wheelwise", command
        return wheelwise(words[1:], self.cache, machine())


@pytest.fixture
def scenario(tmp_path: Path, house: Path, validator: Draft202012Validator) -> Scenario:
    return Scenario(tmp_path, house, validator)


def builds(document: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = document["sections"]["builds"]["findings"]
    return found


def only(document: dict[str, Any], code: str) -> dict[str, Any]:
    matching = [f for f in builds(document) if f["code"] == code]
    assert len(matching) == 1, builds(document)
    return matching[0]


def exit_status_follows(document: dict[str, Any], builds_worst: str) -> None:
    """The exit status is the builds section's worst severity, unless another
    section found worse."""
    others = [
        f["severity"]
        for name, section in document["sections"].items()
        if name != "builds"
        for f in section["findings"]
    ]
    ours = [f["severity"] for f in builds(document)]
    assert max(ours, key=SEVERITIES.index, default="ok") == builds_worst
    worst = max([*others, builds_worst], key=SEVERITIES.index)
    assert document["exit_code"] == SEVERITIES.index(worst)


# -- installed variant wheels ----------------------------------------------------------


@pytest.mark.slow
def test_a_variant_build_that_still_fits_is_ok(scenario: Scenario) -> None:
    scenario.install(machine("13.0"), "gpukit")
    document = scenario.doctor(machine("13.0"))
    exit_status_follows(document, "ok")
    fits = only(document, "variant-fits")
    assert fits["severity"] == "ok"
    assert fits["what"].startswith("gpukit 1.0, variant cu130, fits this machine (")
    assert "nvidia :: cuda_version_lower_bound :: 13.0" in fits["what"]
    assert fits["facts"]["label"] == "cu130"
    assert "nvidia :: cuda_version_lower_bound :: 13.0" in fits["facts"]["properties"]
    assert "nvidia :: sm_arch :: 90_real" in fits["facts"]["properties"]
    facts = document["sections"]["builds"]["facts"]
    assert facts["variant_wheels"] == [
        {"name": "gpukit", "version": "1.0", "label": "cu130", "status": "ok"}
    ]
    assert facts["driver_cuda"] == "13.0"


@pytest.mark.slow
@pytest.mark.parametrize("described", [False, True], ids=["detected", "system-file"])
def test_a_cu130_build_after_the_driver_went_back_to_12_8_is_an_error(
    scenario: Scenario, described: bool
) -> None:
    scenario.install(machine("13.0"), "gpukit")
    args: list[str] = []
    env = machine("12.8")
    if described:  # the same machine, described instead of detected
        system = scenario.tmp / "system.json"
        system.write_text(
            json.dumps(
                {
                    "system": {
                        "nvidia": {
                            "cuda_version_lower_bound": ["12.8", "12.6", "12"],
                            "sm_arch": ["90_real", "86_real", "80_real"],
                        }
                    }
                }
            )
        )
        args, env = ["--system", str(system)], machine()
    document = scenario.doctor(env, *args)
    exit_status_follows(document, "error")
    unfit = only(document, "variant-unfit")
    assert unfit["what"].startswith("gpukit 1.0, variant cu130, no longer fits this machine: ")
    assert "needs nvidia :: cuda_version_lower_bound :: 13.0; machine has 12.8" in unfit["what"]
    assert "fails at import" in unfit["why"]
    # Offline, the installed wheel knows only its own label: install chooses.
    assert unfit["fix"] == f"wheelwise install --python {scenario.python} --upgrade gpukit"
    assert document["sections"]["builds"]["facts"]["variant_wheels"][0]["status"] == "error"


@pytest.mark.slow
def test_the_fix_for_an_unfit_build_names_the_index_variant_and_works(
    scenario: Scenario, index: str
) -> None:
    scenario.install(machine("13.0"), "gpukit")
    document = scenario.doctor(machine("12.8"), "--index-url", index)
    unfit = only(document, "variant-unfit")
    assert unfit["fix"] == (
        f"wheelwise install --python {scenario.python} --upgrade --index-url {index} "
        "--variant gpukit=cu128 gpukit"
    )
    assert unfit["facts"]["index"]["label"] == "cu128"
    assert unfit["facts"]["index"]["wheel"] == "gpukit-1.0-py3-none-any-cu128.whl"
    fixed = wheelwise(shlex.split(unfit["fix"])[1:], scenario.cache, machine("12.8"))
    assert fixed.returncode == 0, fixed.stderr
    after = scenario.doctor(machine("12.8"), "--index-url", index)
    exit_status_follows(after, "ok")
    assert only(after, "variant-fits")["facts"]["label"] == "cu128"


@pytest.mark.slow
def test_a_better_variant_on_the_index_is_a_warning(scenario: Scenario, index: str) -> None:
    scenario.install(machine("12.6"), "gpukit")
    offline = scenario.doctor(machine("12.8"))
    exit_status_follows(offline, "ok")
    assert only(offline, "variant-fits")["facts"]["label"] == "cu126"

    document = scenario.doctor(machine("12.8"), "--index-url", index)
    exit_status_follows(document, "warning")
    better = only(document, "better-variant")
    assert better["what"] == (
        f"gpukit 1.0, variant cu126, fits this machine, but {index} offers a better "
        "build of it: cu128 (nvidia :: cuda_version_lower_bound :: 12.8)"
    )
    assert better["fix"] == (
        f"wheelwise install --python {scenario.python} --upgrade --index-url {index} "
        "--variant gpukit=cu128 gpukit"
    )
    assert better["facts"]["better_label"] == "cu128"


@pytest.mark.slow
def test_an_x86_64_variant_is_checked_against_the_cpu(scenario: Scenario, index: str) -> None:
    scenario.install(machine(), "cpukit")
    document = scenario.doctor(machine(), "--index-url", index)
    exit_status_follows(document, "ok")
    assert only(document, "variant-fits")["facts"]["label"] == "x86_64_v3"


@pytest.mark.slow
def test_a_build_against_a_dependency_follows_its_installed_version(
    scenario: Scenario, index: str
) -> None:
    scenario.install(machine(), "abikit", "depkit==1.0")
    assert only(scenario.doctor(machine()), "variant-fits")["facts"]["label"] == "dep1"
    # depkit moves to 2.0 under abikit's build for 1.x.
    moved = pip(scenario.python, "install", "--no-index", "--find-links", str(scenario.house),
                "--no-deps", "depkit==2.0")  # fmt: skip
    assert moved.returncode == 0, moved.stderr
    document = scenario.doctor(machine())
    exit_status_follows(document, "error")
    unfit = only(document, "variant-unfit")
    assert "needs abi_dependency :: depkit :: 1; machine has 2.0" in unfit["what"]
    # No --upgrade: install then matches the installed depkit 2.0 first.
    assert unfit["fix"] == f"wheelwise install --python {scenario.python} abikit"
    # The index's choice matches the installed depkit too.
    asked = only(scenario.doctor(machine(), "--index-url", index), "variant-unfit")
    assert asked["fix"] == (
        f"wheelwise install --python {scenario.python} --index-url {index} "
        "--variant abikit=dep2 abikit"
    )
    args = shlex.split(unfit["fix"])[1:]
    args += ["--index-url", str(scenario.tmp / "empty"), "--find-links", str(scenario.house)]
    fixed = wheelwise(args, scenario.cache, machine())
    assert fixed.returncode == 0, fixed.stderr
    after = scenario.doctor(machine())
    assert only(after, "variant-fits")["facts"]["label"] == "dep2"


@pytest.mark.slow
def test_a_namespace_only_a_plugin_answers_is_not_checked(scenario: Scenario) -> None:
    # variantlib's test package: its namespace installable_plugin has a plugin. It is
    # installed for a described machine (no plugin runs then); doctor runs none either.
    system = scenario.tmp / "system.json"
    system.write_text(json.dumps({"system": {"installable_plugin": {"feat1": ["val1c"]}}}))
    dist = CORPUS / "test-package" / "dist"
    args = ["install", "--python", str(scenario.python), "--index-url", str(scenario.tmp / "empty")]
    args += ["--find-links", str(dist), "--system", str(system), "--variant", "test-package=foo"]
    done = wheelwise([*args, "test-package"], scenario.cache, machine())
    assert done.returncode == 0, done.stderr
    fits = only(scenario.doctor(machine()), "variant-fits")
    assert fits["facts"]["unchecked"] == ["installable_plugin"]
    assert fits["what"].endswith(
        "(installable_plugin :: feat1 :: val1c); installable_plugin not checked: a "
        "third-party plugin answers it"
    )
    # A described machine answers every namespace, as it does for install.
    assert only(scenario.doctor(machine(), "--system", str(system)), "variant-fits")
    other = scenario.tmp / "other.json"
    other.write_text(json.dumps({"system": {"installable_plugin": {"feat1": ["val1a"]}}}))
    unfit = only(scenario.doctor(machine(), "--system", str(other)), "variant-unfit")
    assert "needs installable_plugin :: feat1 :: val1c; machine has val1a" in unfit["what"]


# -- the index: unreachable, or misbehaving ----------------------------------------------


# An index that never answers, answers 503, or serves a page that is not JSON.
GARBAGE = b'{"meta": {"api-version": "1.0"}, "files": [{"filename": 7'


def misbehaving(kind: str) -> Any:
    """An ASGI app: the index *kind* describes."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if kind == "hang":  # longer than the index may take, then nothing
            await asyncio.sleep(5)
            return
        status, body = (503, b"") if kind == "error" else (200, GARBAGE)
        headers = [(b"content-type", b"application/vnd.pypi.simple.v1+json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


@pytest.mark.slow
def test_an_unreachable_index_is_a_finding_not_a_crash(scenario: Scenario) -> None:
    scenario.install(machine("13.0"), "gpukit")
    url = f"http://127.0.0.1:{free_port()}/simple/"
    document = scenario.doctor(machine("13.0"), "--index-url", url)
    exit_status_follows(document, "warning")
    failed = only(document, "index-failed")
    assert failed["what"].startswith(f"could not ask {url} for better builds: ")
    assert "--index-url" in failed["fix"]
    # The installed build is still checked against the machine.
    assert only(document, "variant-fits")["facts"]["label"] == "cu130"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("hang", "no answer within"),
        ("error", "the server answered 503"),
        ("garbage", "not a valid PEP 691 project page"),
    ],
)
def test_a_misbehaving_index_is_a_finding_within_the_probe_time(
    scenario: Scenario, kind: str, said: str
) -> None:
    scenario.install(machine("12.8"), "gpukit")
    env = {**machine("12.8"), "WHEELWISE_DOCTOR_TIMEOUT": "3"}
    with uvicorn_thread(misbehaving(kind)) as base:
        document = scenario.doctor(env, "--index-url", f"{base}/simple/")
    failed = only(document, "index-failed")
    assert said in failed["what"]
    assert document["sections"]["doctor"]["findings"] == []  # the probe did not time out
    assert only(document, "variant-fits")["facts"]["label"] == "cu128"


# -- non-variant GPU builds ---------------------------------------------------------------


@pytest.mark.slow
def test_torch_cu128_against_a_12_2_and_an_11_8_driver(scenario: Scenario) -> None:
    scenario.install(
        machine(), "torch", "torchvision", "nvidia-cuda-runtime-cu12", "nvidia-cublas-cu12"
    )
    document = scenario.doctor(machine("12.2", "8.6"))
    exit_status_follows(document, "warning")
    newer = only(document, "cuda-build-minor-newer")
    assert newer["what"] == (
        "torch 2.7.0+cu128, torchvision 0.22.0+cu128 are built for CUDA 12.8; the NVIDIA "
        "driver supports CUDA 12.2"
    )
    assert "minor version compatibility" in newer["why"]
    assert newer["fix"].startswith("update the NVIDIA driver to one for CUDA 12.8 or newer")
    # NVIDIA's libraries come with torch: no finding of their own.
    assert [f["code"] for f in builds(document)] == ["cuda-build-minor-newer"]
    packages = document["sections"]["builds"]["facts"]["gpu_packages"]
    assert {"name": "nvidia-cuda-runtime-cu12", "version": "12.8.90", "runtime": CUDA,
            "expects": "12.8"} in packages  # fmt: skip

    old = scenario.doctor(machine("11.8", "8.6"))
    exit_status_follows(old, "error")
    too_new = only(old, "cuda-build-too-new")
    assert "the NVIDIA driver supports CUDA 11.8" in too_new["what"]
    assert "insufficient for CUDA runtime version" in too_new["why"]
    assert too_new["fix"] == (
        f"pip --python {scenario.python} install --force-reinstall torch==2.7.0 "
        "torchvision==0.22.0 --index-url https://download.pytorch.org/whl/cu118, or update "
        "the NVIDIA driver to one for CUDA 12.8 or newer"
    )

    fitting = scenario.doctor(machine("12.8", "8.6"))
    exit_status_follows(fitting, "ok")
    assert builds(fitting) == []


@pytest.mark.slow
def test_cupy_cuda12x_without_an_nvidia_driver_is_a_warning(scenario: Scenario) -> None:
    scenario.install(machine(), "cupy-cuda12x")
    document = scenario.doctor(machine())
    exit_status_follows(document, "warning")
    found = only(document, "cuda-build-without-driver")
    assert found["what"].startswith(
        "cupy-cuda12x 13.3.0 is built for CUDA 12, but this machine has no usable NVIDIA "
        "driver (no NVIDIA driver (WHEELWISE_NVIDIA_DRIVER=none))"
    )
    assert found["fix"] == f"pip --python {scenario.python} uninstall -y cupy-cuda12x"
    assert found["facts"]["packages"] == [{"name": "cupy-cuda12x", "version": "13.3.0"}]

    with_driver = scenario.doctor(machine("11.8", "8.6"))
    too_new = only(with_driver, "cuda-build-too-new")
    assert too_new["fix"].startswith(
        f"pip --python {scenario.python} uninstall -y cupy-cuda12x && "
        f"pip --python {scenario.python} install cupy-cuda11x, or update"
    )


@pytest.mark.slow
def test_a_healthy_cpu_only_environment(scenario: Scenario) -> None:
    scenario.install(machine(), "cpukit", *PLAIN)
    document = scenario.doctor(machine())
    exit_status_follows(document, "ok")
    assert [f["code"] for f in builds(document)] == ["variant-fits"]
    facts = document["sections"]["builds"]["facts"]
    assert facts["distributions"] == len(PLAIN) + 1
    assert facts["driver_cuda"] is None
    assert facts["gpu_packages"] == []
    assert facts["index_url"] is None


@pytest.mark.slow
def test_an_unusable_variant_json_is_a_warning(scenario: Scenario) -> None:
    scenario.install(machine(), "cpukit")
    site = next(scenario.python.parent.parent.glob("lib/python3*/site-packages"))
    (site / "cpukit-1.0.dist-info" / "variant.json").write_text('{"variants": 7}')
    document = scenario.doctor(machine())
    exit_status_follows(document, "warning")
    found = only(document, "variant-unreadable")
    assert found["what"].startswith("cpukit 1.0: its variant.json cannot be used: ")
    assert "variant.json" in found["facts"]["reason"]
    assert found["fix"] == f"wheelwise install --python {scenario.python} --upgrade cpukit"


@pytest.mark.slow
def test_the_report_shows_the_sections_and_the_exit_status(scenario: Scenario) -> None:
    scenario.install(machine("13.0"), "gpukit", "torch")
    done = scenario.run(machine("12.8"))
    assert done.returncode == 2, done.stderr
    out = done.stdout
    assert f"wheelwise doctor for {scenario.python}" in out
    assert "\nmachine\n" in out
    assert "\nbuilds\n" in out
    assert out.index("\nmachine\n") < out.index("\nbuilds\n")
    assert "gpukit" in out
    assert "cu130" in out
    assert "torch" in out
    assert "error gpukit 1.0, variant cu130, no longer fits this machine" in out
    assert f"fix: wheelwise install --python {scenario.python} --upgrade gpukit" in out
    assert out.rstrip().endswith("(exit 2)")


def test_the_schema_refuses_what_the_format_does_not_allow(
    validator: Draft202012Validator,
) -> None:
    sections: dict[str, Any] = {name: {"facts": {}, "findings": []} for name in SECTIONS}
    counts = {"ok": 0, "warning": 0, "error": 0}
    healthy: dict[str, Any] = {"format": 1, "target": "py", "status": "ok", "exit_code": 0}
    healthy |= {"counts": counts, "sections": sections}
    assert list(validator.iter_errors(healthy)) == []
    finding: dict[str, Any] = {"section": "builds", "code": "variant-fits", "severity": "ok"}
    finding["what"] = "x"
    finding |= {"why": "", "fix": "", "facts": {}}
    wrong = [
        {**healthy, "exit_code": 1},  # not the status's
        {**healthy, "sections": {k: v for k, v in sections.items() if k != "doctor"}},
        {**healthy, "sections": {**sections, "builds": {"facts": {}, "findings": [
            {**finding, "code": "no-such-code"}]}}},
        {**healthy, "sections": {**sections, "builds": {"facts": {}, "findings": [
            {**finding, "section": "machine"}]}}},
        {**healthy, "sections": {**sections, "builds": {"facts": {}, "findings": [
            finding]}}},  # variant-fits without its facts
    ]  # fmt: skip
    for document in wrong:
        assert list(validator.iter_errors(document)) != [], document


# -- recognizing and judging GPU builds ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "version", "runtime", "expects"),
    [
        ("torch", "2.7.0+cu128", CUDA, "12.8"),
        ("torch", "2.0.1+cu117", CUDA, "11.7"),
        ("torchaudio", "2.9.0+cu130", CUDA, "13.0"),
        ("torch", "2.5.1+rocm6.2", ROCM, "6.2"),
        ("torch", "2.5.1+rocm6.2.4", ROCM, "6.2"),
        ("torch", "2.7.0+cpu", CPU, ""),
        ("torch", "2.1.0+cpu.cxx11.abi", CPU, ""),
        ("cupy-cuda12x", "13.3.0", CUDA, "12"),
        ("cupy-cuda102", "9.6.0", CUDA, "10.2"),
        ("cupy-cuda117", "11.6.0", CUDA, "11.7"),
        ("cupy-rocm-6-0", "13.3.0", ROCM, "6.0"),
        ("jax-cuda12-plugin", "0.4.35", CUDA, "12"),
        ("jax-cuda13-pjrt", "0.7.2", CUDA, "13"),
        ("jaxlib", "0.4.13+cuda12.cudnn89", CUDA, "12"),
        ("nvidia-cuda-runtime-cu12", "12.8.90", CUDA, "12.8"),
        ("nvidia-cuda-runtime-cu11", "11.8.89", CUDA, "11.8"),
        ("nvidia-cublas-cu11", "11.11.3.6", CUDA, "11"),  # cuBLAS has versions of its own
        ("nvidia-cudnn-cu12", "9.10.2.21", CUDA, "12"),
        ("nvidia-cuda-runtime", "13.0.96", CUDA, "13.0"),
        ("cudf-cu12", "25.6.0", CUDA, "12"),
    ],
)
def test_builds_are_recognized_by_name_and_local_version(
    name: str, version: str, runtime: str, expects: str
) -> None:
    build = recognize(name, version)
    assert build is not None
    assert (build.runtime, build.expects_text) == (runtime, expects)


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("torch", "2.7.0"),  # from PyPI: its CUDA comes with NVIDIA's -cu12 libraries
        ("torch", "2.7.0+local"),
        ("numpy", "2.0.0+cu128"),
        ("jaxlib", "0.4.35"),
        ("nvidia-cuda-runtime", "12.8.90"),  # unsuffixed names start with CUDA 13
        ("cupy", "13.3.0"),
        ("nvidia-ml-py", "12.560.30"),
    ],
)
def test_other_distributions_are_not_gpu_builds(name: str, version: str) -> None:
    assert recognize(name, version) is None


@pytest.mark.slow
@settings(max_examples=300)
@given(
    st.from_regex(r"[a-z0-9][a-z0-9.-]{0,30}", fullmatch=True),
    st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,6}){0,3}(\+[a-z0-9.]{0,20})?", fullmatch=True),
)
def test_recognizing_never_fails(name: str, version: str) -> None:
    build = recognize(name, version)
    if build is not None:
        assert build.runtime in (CUDA, ROCM, CPU)
        assert (build.expects is None) == (build.runtime == CPU)


def judged(
    builds: list[tuple[str, str]], cuda: tuple[int, int] | None, amd: bool = False
) -> list[tuple[str, str, str]]:
    """(code, severity, fix) for each finding about *builds* on a machine with a
    driver for CUDA *cuda* (None: no driver) and an AMD GPU when *amd*."""
    found = [recognize(name, version) for name, version in builds]
    machine = MachineRuntimes(cuda=cuda, amd=amd, nvidia_detail="no driver")
    commands = FixCommands(Path(sys.executable), Path(sys.prefix))
    findings = judge_gpu_builds([b for b in found if b is not None], machine, commands)
    return [(f.code, f.severity, f.fix) for f in findings]


def test_each_family_gets_its_own_fix() -> None:
    jax = [("jax-cuda13-plugin", "0.7.2"), ("jax-cuda13-pjrt", "0.7.2")]
    assert judged(jax, (12, 8)) == [
        (
            "cuda-build-too-new",
            "error",
            "pip uninstall -y jax-cuda13-plugin jax-cuda13-pjrt && pip install --upgrade "
            "'jax[cuda12]', or update the NVIDIA driver to one for CUDA 13 or newer",
        )
    ]
    assert judged(jax, None)[0][2] == "pip uninstall -y jax-cuda13-plugin jax-cuda13-pjrt"
    assert judged([("torch", "2.5.1+rocm6.2")], (12, 8)) == [
        (
            "rocm-build-without-rocm",
            "warning",
            "pip install --force-reinstall torch==2.5.1 --index-url "
            "https://download.pytorch.org/whl/cu124",
        )
    ]
    assert judged([("torch", "2.5.1+rocm6.2")], (12, 8), amd=True) == []
    assert judged([("cudf-cu12", "25.6.0")], (11, 8))[0][2].startswith(
        "pip uninstall -y cudf-cu12 && pip install cudf-cu11, or update"
    )
    # NVIDIA's own library wheels are the compatibility section's (the libcudart that
    # loads, against the driver): not judged again here.
    libraries = [("nvidia-cuda-runtime-cu12", "12.8.90"), ("nvidia-cudnn-cu12", "9.1.0")]
    assert judged(libraries, (11, 8)) == []
    # A driver older than every CUDA build of this torch release: only the driver helps.
    assert judged([("torch", "2.9.0+cu130")], (11, 8))[0][2] == (
        "update the NVIDIA driver to one for CUDA 13.0 or newer"
    )
    # Older builds run on newer drivers.
    assert judged([("torch", "2.5.1+cu118"), ("cupy-cuda11x", "13.3.0")], (12, 8)) == []


# -- reading installed distributions ------------------------------------------------------


def test_installed_distributions_are_read_from_their_dist_info(tmp_path: Path) -> None:
    first, second = tmp_path / "purelib", tmp_path / "platlib"
    classifiers = "".join(f"Classifier: Topic :: Item {i}\n" for i in range(400))
    folders = {
        first / "Big_Pkg-1.0.dist-info": f"Name: Big_Pkg\n{classifiers}Version: 1.0\n\nBody",
        first / "shadow-1.0.dist-info": "Metadata-Version: 2.1\nName: shadow\nVersion: 1.0\n",
        second / "shadow-2.0.dist-info": "Metadata-Version: 2.1\nName: shadow\nVersion: 2.0\n",
        first / "broken-1.0.dist-info": "Metadata-Version: 2.1\nName: broken\n",
        first / "nometa-1.0.dist-info": None,
    }
    for folder, metadata in folders.items():
        folder.mkdir(parents=True)
        if metadata is not None:
            (folder / "METADATA").write_text(metadata)
    (first / "shadow-1.0.dist-info" / "variant.json").write_text("{}")
    found = installed_dists([first, second, tmp_path / "missing"])
    assert [(d.name, d.version, d.has_variant_json) for d in found] == [
        ("big-pkg", "1.0", False),  # its Version comes after 8 KiB of header
        ("shadow", "1.0", True),  # the first on the path, as imports find it
    ]


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        (b"Metadata-Version: 2.1\r\nName: a\r\nVersion: 1\r\n", ("a", "1")),
        (b"Summary: x\n  folded\nNAME:  b \nversion:2.0\n", ("b", "2.0")),
        (b"Name: a\n\nVersion: 1\n", None),  # Version in the body
        (b"", None),
    ],
)
def test_the_metadata_header_gives_name_and_version(
    metadata: bytes, expected: tuple[str, str] | None
) -> None:
    assert read_name_version(metadata) == expected


@settings(max_examples=300)
@given(st.binary(max_size=400))
def test_reading_any_metadata_never_fails(metadata: bytes) -> None:
    found = read_name_version(metadata)
    assert found is None or all(found)
