"""uv as a peer: the same index, the same simulated machines, the same wheels.

The corpus (:mod:`uvcorpus`) is published with ``wheelwise index build`` and served
on 127.0.0.1; for every machine, one environment per installer gets every package
at once, with ``uv pip install --preview-features wheel-variants`` and with
``wheelwise install``. Both must install the same wheel of every package, except
the differences docs/uv-differences.md describes, which are asserted exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import uvcorpus
from indexkit import installer_env, uv_executable
from installkit import site_packages
from paths import DATA
from uvcorpus import (
    ACCELERATOR_MACHINES,
    ACCELERATORS,
    ENABLE_IF_PACKAGE,
    INSTALLED_TOGETHER,
    MACHINES,
    PACKAGES,
)
from wheelwise.variants.schema import PEP850_SCHEMA_URL

# Every test here uses servers or peers that take seconds to start.
pytestmark = pytest.mark.slow

TOOLS = ("uv", "wheelwise")
# The machine the enable-if package is tried on.
ENABLE_IF_MACHINE = "cuda12.8_sm9.0"

# Documented differences (docs/uv-differences.md), by package.
PYTORCH_REQUIRES = "uvc_pytorch_requires"
PTX = "uvc_ptx"
DIFFERENT = {PYTORCH_REQUIRES, PTX}


@dataclass(frozen=True)
class Run:
    returncode: int
    output: str
    # Package -> installed label (None: the non-variant wheel).
    labels: Mapping[str, str | None]


@dataclass(frozen=True)
class Peer:
    index_url: str
    root: Path

    def venv(self, name: str) -> Path:
        path = self.root / "venvs" / name
        subprocess.run(
            [uv_executable(), "venv", "--no-config", "-q", "--python", sys.executable, str(path)],
            env=installer_env(self.root / "home"),
            check=True,
            capture_output=True,
        )
        return path / "bin" / "python"

    def install(self, tool: str, machine: str, packages: tuple[str, ...]) -> Run:
        python = self.venv(f"{tool}-{machine}-{len(packages)}")
        env = installer_env(self.root / "home") | uvcorpus.machine_env(machine)
        if tool == "uv":
            argv = [uv_executable(), "pip", "install", "--no-config"]
            argv += ["--preview-features", "wheel-variants"]
            argv += ["--cache-dir", str(self.root / f"uv-cache-{machine}")]
        else:
            # Nothing of this host: no detection cache, no configuration, no ROCm.
            env |= {
                "WHEELWISE_CACHE_DIR": str(self.root / f"wheelwise-cache-{machine}"),
                "WHEELWISE_CONFIG": str(self.root / "no-config.toml"),
                "WHEELWISE_AMD_ROCM": "none",
            }
            argv = [sys.executable, "-m", "wheelwise", "install"]
        argv += ["--python", str(python), "--index-url", self.index_url, *packages]
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        labels: dict[str, str | None] = {}
        if done.returncode == 0:
            for name in packages:
                labels[name] = uvcorpus.installed_label(site_packages(python), name)
        return Run(done.returncode, done.stdout + done.stderr, labels)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("uv-peer")
    wheels = uvcorpus.build_wheels(root)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "wheelwise",
            "index",
            "build",
            str(wheels),
            "-o",
            str(root / "site"),
        ],
        check=True,
        capture_output=True,
    )
    return root / "site"


@pytest.fixture(scope="module")
def peer(site: Path) -> Iterator[Peer]:
    with uvcorpus.static_server(site) as base:
        yield Peer(f"{base}/simple/", site.parent)


@pytest.fixture(scope="module")
def runs(peer: Peer) -> dict[tuple[str, str], Run]:
    """Every installer on every machine, all packages at once (4 at a time)."""
    jobs = [(tool, machine) for machine in MACHINES for tool in TOOLS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {job: pool.submit(peer.install, *job, INSTALLED_TOGETHER) for job in jobs}
        return {job: future.result() for job, future in futures.items()}


def labels(
    runs: Mapping[tuple[str, str], Run], tool: str, machine: str
) -> Mapping[str, str | None]:
    run = runs[(tool, machine)]
    assert run.returncode == 0, f"{tool} on {machine} failed:\n{run.output}"
    return run.labels


def test_corpus_is_published_as_pep850(site: Path) -> None:
    schema = json.loads((DATA / "pep-0850-variant-schema.json").read_text(encoding="utf-8"))
    validator = Draft202012Validator(schema)
    published = sorted(site.glob("files/*/*-variants.json"))
    assert len(PACKAGES) >= 20
    assert len(published) == sum(1 for p in PACKAGES if p.variants) + len(ACCELERATORS)
    for path in published:
        document = json.loads(path.read_text(encoding="utf-8"))
        validator.validate(document)
        assert document["$schema"] == PEP850_SCHEMA_URL, path.name
        assert set(document["providers"]) == set(document["default-priorities"]["namespace"])


@pytest.mark.parametrize("machine", list(MACHINES))
def test_same_wheel_as_uv(runs: Mapping[tuple[str, str], Run], machine: str) -> None:
    uv, ours = labels(runs, "uv", machine), labels(runs, "wheelwise", machine)
    assert set(uv) == set(ours) == set(INSTALLED_TOGETHER)
    same = {name: uv[name] for name in INSTALLED_TOGETHER if name not in DIFFERENT}
    assert {name: ours[name] for name in same} == same


# What both must choose, written out, so that agreeing on a wrong wheel fails too.
EXPECTED = {
    "uvc_torch_like": {
        "no_driver": None,
        "cuda11.8_sm7.0": None,
        "cuda12.4_sm9.0": None,
        "cuda12.6_sm8.0": "cu126",
        "cuda12.8_sm6.1": "cu126",
        "cuda12.8_sm9.0": "cu128",
        "cuda12.8_sm12.0": "cu128",
        "cuda12.9_sm8.6": "cu129",
        "cuda13.0_sm7.5": "cu130",
        "cuda13.0_sm10.0": "cu130",
    },
    # PyTorch 2.10's scheme: the ahead-of-time 'priority' namespace breaks the tie
    # between builds that share cuda_version_lower_bound 12.0.
    "uvc_priority": {
        "no_driver": "null",
        "cuda11.8_sm7.0": "null",
        "cuda12.4_sm9.0": "cuda12.8",
        "cuda12.6_sm8.0": "cuda12.8",
        "cuda12.8_sm6.1": "cuda12.6",
        "cuda12.8_sm9.0": "cuda12.8",
        "cuda12.8_sm12.0": "cuda12.8",
        "cuda12.9_sm8.6": "cuda12.8",
        "cuda13.0_sm7.5": "cuda13.0",
        "cuda13.0_sm10.0": "cuda13.0",
    },
    "uvc_sm_split": {
        "no_driver": None,
        "cuda11.8_sm7.0": None,
        "cuda12.4_sm9.0": None,
        "cuda12.6_sm8.0": None,
        "cuda12.8_sm6.1": None,
        "cuda12.8_sm9.0": "hopper",
        "cuda12.8_sm12.0": "blackwell",
        "cuda12.9_sm8.6": "ampere",
        "cuda13.0_sm7.5": None,
        "cuda13.0_sm10.0": "blackwell",
    },
}


@pytest.mark.parametrize("package", sorted(EXPECTED))
def test_expected_choices(runs: Mapping[tuple[str, str], Run], package: str) -> None:
    for tool in TOOLS:
        chosen = {machine: labels(runs, tool, machine)[package] for machine in MACHINES}
        assert chosen == EXPECTED[package], tool


def test_plain_and_null_packages(runs: Mapping[tuple[str, str], Run]) -> None:
    for tool in TOOLS:
        for machine in MACHINES:
            installed = labels(runs, tool, machine)
            assert installed["uvc_plain"] is None
            # The null variant wins over the non-variant wheel (PEP 825).
            assert installed["uvc_null_only"] == "null"
            # An optional provider nobody enabled: its properties are unsupported.
            assert installed["uvc_optional_gpu"] == "null"
            assert installed["uvc_priority_only"] == "p1"


# -- documented differences (docs/uv-differences.md) ------------------------------------


def _driver_at_least(machine: str, version: tuple[int, int]) -> bool:
    driver = MACHINES[machine][0]
    return driver != "none" and tuple(int(p) for p in driver.split(".")) >= version


def _gpu(machine: str) -> tuple[int, int] | None:
    gpu = MACHINES[machine][1]
    return None if gpu is None else (int(gpu.split(".")[0]), int(gpu.split(".")[1]))


def test_difference_version_of_a_reimplemented_provider(
    runs: Mapping[tuple[str, str], Run],
) -> None:
    """requires = nvidia-variant-provider>=0.0.2: uv reimplements 0.0.1, so it does not
    answer and nvidia properties count as unsupported; wheelwise's built-in provider
    answers for the namespace whatever version is required."""
    for machine in MACHINES:
        assert labels(runs, "uv", machine)[PYTORCH_REQUIRES] is None, machine
        gpu = _gpu(machine)
        cu126_fits = (
            _driver_at_least(machine, (12, 6))
            and gpu is not None
            and f"{gpu[0]}0_real" in uvcorpus.CU126[1].split(",")
        )
        expected = "cu126" if cu126_fits else None
        assert labels(runs, "wheelwise", machine)[PYTORCH_REQUIRES] == expected, machine
        # With a requirement uv's reimplementation meets, both agree.
        assert (
            labels(runs, "uv", machine)["uvc_cu12_only"]
            == labels(runs, "wheelwise", machine)["uvc_cu12_only"]
        )


def test_difference_ptx_forward_compatibility(runs: Mapping[tuple[str, str], Run]) -> None:
    """sm_arch 80_virtual (PTX for compute capability 8.0): uv supports it on GPUs of
    major 8 only; wheelwise on every GPU of capability 8.0 or more (PTX is JIT-compiled
    for newer GPUs)."""
    for machine in MACHINES:
        gpu = _gpu(machine)
        driver = MACHINES[machine][0] != "none"
        uv_expected = "ptx80" if driver and gpu is not None and gpu[0] == 8 else None
        ours_expected = "ptx80" if driver and gpu is not None and gpu >= (8, 0) else None
        assert labels(runs, "uv", machine)[PTX] == uv_expected, machine
        assert labels(runs, "wheelwise", machine)[PTX] == ours_expected, machine


def test_difference_enable_if(peer: Peer) -> None:
    """A provider with ``enable-if`` (PEP 817, PEP 850): uv 0.13.9 cannot read the
    metadata at all; wheelwise evaluates the marker (true on Linux) and selects."""
    packages = (ENABLE_IF_PACKAGE,)
    uv = peer.install("uv", ENABLE_IF_MACHINE, packages)
    assert uv.returncode != 0
    assert f"Failed to parse variant metadata `{ENABLE_IF_PACKAGE}-1.0-variants.json`" in uv.output
    assert "untagged enum ProviderKind" in uv.output
    ours = peer.install("wheelwise", ENABLE_IF_MACHINE, packages)
    assert ours.returncode == 0, ours.output
    expected = "cu126" if sys.platform.startswith("linux") else None
    assert ours.labels == {ENABLE_IF_PACKAGE: expected}


@pytest.fixture(scope="module")
def accelerator_runs(peer: Peer) -> dict[tuple[str, str], Run]:
    """Every installer on every machine with another accelerator, the accelerator
    packages at once."""
    jobs = [(tool, machine) for machine in ACCELERATOR_MACHINES for tool in TOOLS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {job: pool.submit(peer.install, *job, ACCELERATORS) for job in jobs}
        return {job: future.result() for job, future in futures.items()}


# What wheelwise chooses; uv 0.13.9 answers the tpu namespace the same way and skips
# the intel and ascend providers ("Skipping unsupported wheel variant provider"),
# so it installs their null variant everywhere.
ACCELERATOR_EXPECTED = {
    "no_accelerator": {"uvc_intel_xpu": "null", "uvc_ascend": "null", "uvc_tpu": "cpu"},
    "intel_a770": {"uvc_intel_xpu": "xpu", "uvc_ascend": "null", "uvc_tpu": "cpu"},
    "ascend_910b3": {"uvc_intel_xpu": "null", "uvc_ascend": "a2", "uvc_tpu": "cpu"},
    "tpu": {"uvc_intel_xpu": "null", "uvc_ascend": "null", "uvc_tpu": "tpu"},
}


@pytest.mark.parametrize("machine", list(ACCELERATOR_MACHINES))
def test_accelerators_against_uv(
    accelerator_runs: Mapping[tuple[str, str], Run], machine: str
) -> None:
    """tpu: the same wheel as uv, which answers that namespace itself. intel and ascend
    (a documented difference): wheelwise answers them built in, uv 0.13.9 runs no
    third-party provider and so installs null even on a machine with the device."""
    ours = labels(accelerator_runs, "wheelwise", machine)
    uv = labels(accelerator_runs, "uv", machine)
    assert dict(ours) == ACCELERATOR_EXPECTED[machine]
    assert uv["uvc_tpu"] == ours["uvc_tpu"]
    assert (uv["uvc_intel_xpu"], uv["uvc_ascend"]) == ("null", "null")
