"""``wheelwise install`` of packages published with PyTorch's real variant metadata
(2.8: pre-PEP, 2.9: v0.0.2 draft, 2.10: v0.0.3 draft), on simulated machines.

Each wheel carries the real document narrowed to its own label as ``variant.json``,
and the real document itself is the release's ``*-variants.json``, as PyTorch's
variant indexes publish them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from installkit import WHEEL, make_venv, run_python
from paths import DATA
from variantkit import wheelwise
from wheelfactory import make_wheel

REAL_WORLD = DATA / "corpus" / "real-world"
RELEASES = {
    "2.8.0": REAL_WORLD / "wheelnext-variant-repack_torch-2.8.0-variants.json",
    "2.9.0": REAL_WORLD / "wheelnext-variant-repack_torch-2.9.0-variants.json",
    "2.10.0": REAL_WORLD / "wheelnext-variant-repack_torch-2.10.0-variants.json",
}


def publish(house: Path, version: str) -> None:
    """faketorch *version*: one wheel per label of the real document, plus the
    document itself, verbatim, as the release's index-level metadata."""
    raw = RELEASES[version].read_bytes()
    doc = json.loads(raw)
    for label in doc["variants"]:
        own = {**doc, "variants": {label: doc["variants"][label]}}
        members = {
            "faketorch/__init__.py": f"BUILD = {label!r}\n".encode(),
            f"faketorch-{version}.dist-info/WHEEL": WHEEL,
        }
        make_wheel(
            house,
            f"faketorch-{version}-py3-none-any-{label}.whl",
            own,
            extra_members=members,
            record=True,
        )
    (house / f"faketorch-{version}-variants.json").write_bytes(raw)


@pytest.fixture(scope="module")
def house(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("house")
    for version in RELEASES:
        publish(folder, version)
    (folder / "no-index").mkdir()  # an empty index: everything comes from the folder
    return folder


def machine_env(cache: Path, driver: str = "none", gpus: str = "") -> dict[str, str]:
    """A CPU without ROCm, with this NVIDIA driver and these GPUs (none by default)."""
    return {
        "WHEELWISE_CONFIG": str(cache / "config.toml"),
        "WHEELWISE_CPUINFO": str(DATA / "cpuinfo" / "linux-scientific7-k10"),
        "WHEELWISE_AMD_ROCM": "none",
        "WHEELWISE_AMD_GFX": "none",
        "WHEELWISE_NVIDIA_DRIVER": driver,
        **({"WHEELWISE_NVIDIA_GPUS": gpus} if gpus else {}),
    }


def install(
    python: Path, house: Path, requirement: str, cache: Path, **machine: str
) -> subprocess.CompletedProcess[str]:
    """``wheelwise install`` from *house* only, on a CPU without a GPU or ROCm unless
    *machine* says otherwise."""
    env = {**machine_env(cache), **machine}
    args = ["install", "--python", str(python), "--find-links", str(house)]
    return wheelwise([*args, "--index-url", str(house / "no-index"), requirement], cache, env)


@pytest.mark.parametrize(
    ("requirement", "driver", "gpus", "expected"),
    [
        ("faketorch==2.8.0", "12.8", "8.6", "cu128"),
        ("faketorch==2.8.0", "none", "", "00000000"),
        ("faketorch==2.9.0", "13.0", "9.0", "cuda13.0"),
        ("faketorch==2.9.0", "12.8", "6.1", "cuda12.6"),
        ("faketorch==2.9.0", "12.8", "9.0", "cuda12.8"),
        ("faketorch==2.9.0", "none", "", "null"),
        ("faketorch==2.10.0", "12.9", "9.0", "cuda12.8"),
    ],
)
def test_install_picks_what_pytorch_intended(
    house: Path, tmp_path: Path, requirement: str, driver: str, gpus: str, expected: str
) -> None:
    python = make_venv(tmp_path / "venv")
    machine = {"WHEELWISE_NVIDIA_DRIVER": driver}
    if gpus:
        machine["WHEELWISE_NVIDIA_GPUS"] = gpus
    result = install(python, house, requirement, tmp_path / "cache", **machine)
    assert result.returncode == 0, result.stderr
    built = run_python(python, "import faketorch; print(faketorch.BUILD)")
    assert built.stdout.strip() == expected, result.stdout
    assert f"(variant {expected}" in result.stdout


@pytest.fixture(scope="module")
def torch_lock(house: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``pylock.toml`` of faketorch 2.9.0 (PyTorch's real 2.9 metadata), written
    on a CPU machine."""
    where = tmp_path_factory.mktemp("lock")
    args = ["lock", "--no-index", "--find-links", str(house), "faketorch==2.9.0"]
    result = wheelwise(args, where / "cache", {"WHEELWISE_NVIDIA_DRIVER": "none"}, cwd=where)
    assert result.returncode == 0, result.stderr
    return where / "pylock.toml"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("machine", "driver", "gpus", "expected"),
    [
        ("an H100 with a CUDA 13 driver", "13.0", "9.0", "cuda13.0"),
        # CUDA 13 builds leave out Pascal (sm_61): the 12.6 build is the one that runs.
        ("a GTX 1080 Ti with a CUDA 13 driver", "13.0", "6.1", "cuda12.6"),
        ("a GTX 1080 Ti with a CUDA 12.8 driver", "12.8", "6.1", "cuda12.6"),
        ("no GPU", "none", "", "null"),
    ],
)
def test_one_lock_installs_the_build_each_machine_needs(
    torch_lock: Path, tmp_path: Path, machine: str, driver: str, gpus: str, expected: str
) -> None:
    python = make_venv(tmp_path / "venv")
    args = ["install", "--python", str(python), "-r", str(torch_lock)]
    cache = tmp_path / "cache"
    result = wheelwise(args, cache, machine_env(cache, driver, gpus))
    assert result.returncode == 0, f"{machine}: {result.stderr}"
    built = run_python(python, "import faketorch; print(faketorch.BUILD)")
    assert built.stdout.strip() == expected, f"{machine}: {result.stdout}"
