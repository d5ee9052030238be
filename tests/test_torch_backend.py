"""``--torch-backend``: which PyTorch indexes a machine gets (the same sets uv 0.13.9
asks, read from its own log for the same machine), and real installs into venvs
from PyTorch-shaped indexes on 127.0.0.1 (``WHEELWISE_PYTORCH_INDEX``), beside a
main index that also has torch."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzkit import bounded
from indexkit import demo_wheel, http_server, uv_executable
from installkit import make_venv, site_packages
from variantkit import wheelwise
from wheelwise.publish.static import build_site
from wheelwise.resolve.torch_backend import (
    BACKENDS,
    ROCM_BACKENDS,
    TorchBackendError,
    backends_for,
    parse_backend,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")

# Linux kernel drivers and the CUDA version each one's driver API reports.
DRIVERS = [
    ("595.10", "13.2"),
    ("580.65.06", "13.0"),
    ("575.51.03", "12.9"),
    ("570.86.10", "12.8"),
    ("560.28.03", "12.6"),
    ("535.54.03", "12.2"),
    ("525.60.13", "12.0"),
    ("520.61.05", "11.8"),
    ("450.80.02", "11.0"),
    ("440.33", "10.2"),
    ("418.39", "10.1"),
    ("384.81", "9.0"),
]


def uv_asks(variable: str, value: str) -> set[str]:
    """The PyTorch backends uv's ``--torch-backend auto`` asks for torch on a machine
    its *variable* describes (offline: its log says what it would fetch)."""
    argv = [uv_executable(), "pip", "install", "--no-config", "--offline", "--no-cache"]
    argv += ["--dry-run", "-v", "--torch-backend", "auto", "--python", sys.executable, "torch"]
    done = subprocess.run(
        argv, env={"PATH": "/usr/bin:/bin", variable: value, "HOME": "/nonexistent"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    found = set(re.findall(r"https://download\.pytorch\.org/whl/([^/]+)/torch/", done.stderr))
    assert found, done.stderr
    return found


def cuda_machine(version: str) -> dict[str, dict[str, list[str]]]:
    return {"nvidia": {"cuda_version_lower_bound": [version]}}


@pytest.mark.parametrize(("driver", "cuda"), DRIVERS)
def test_a_cuda_machine_gets_the_backends_uv_asks_for(driver: str, cuda: str) -> None:
    ours = backends_for("auto", cuda_machine(cuda), "linux")
    assert set(ours) == uv_asks("UV_CUDA_DRIVER_VERSION", driver)
    assert ours[-1] == "cpu"


@pytest.mark.parametrize("architecture", sorted({a for v in ROCM_BACKENDS.values() for a in v}))
def test_an_amd_machine_gets_the_backends_uv_asks_for(architecture: str) -> None:
    ours = backends_for("auto", {"amd": {"gfx_arch": [architecture]}}, "linux")
    assert set(ours) == uv_asks("UV_AMD_GPU_ARCHITECTURE", architecture)


def test_the_drivers_own_cuda_version_comes_first() -> None:
    """Newest first up to the driver's version, then the newer minors its major runs
    (minor-version compatibility), oldest first, then the CPU build."""
    ours = backends_for("auto", cuda_machine("12.8"), "linux")
    assert ours[:3] == ["cu128", "cu126", "cu125"]
    assert ours[-2:] == ["cu129", "cpu"]
    assert "cu130" not in ours
    assert backends_for("auto", cuda_machine("13.0"), "linux")[:2] == ["cu130", "cu129"]
    assert backends_for("auto", cuda_machine("10.1"), "linux")[:2] == ["cu101", "cu100"]


def test_other_machines_and_systems() -> None:
    intel = {"intel": {"device_ip": ["12.55.8"]}}
    assert backends_for("auto", intel, "linux") == ["xpu"]
    assert backends_for("auto", {}, "linux") == ["cpu"]
    assert backends_for("auto", cuda_machine("12.8"), "darwin") == ["cpu"]
    assert backends_for("auto", {"amd": {"gfx_arch": ["gfx90a"]}}, "win32") == ["cpu"]
    assert backends_for("auto", {"amd": {"gfx_arch": ["gfx803"]}}, "linux") == ["cpu"]
    assert backends_for("cu126", cuda_machine("13.0"), "linux") == ["cu126"]


def test_backend_names() -> None:
    assert parse_backend(" CU128 ") == "cu128"
    assert parse_backend("rocm6.2.4") == "rocm6.2.4"
    assert parse_backend("auto") == "auto"
    with pytest.raises(TorchBackendError, match="'cu999' is no PyTorch backend"):
        parse_backend("cu999")
    uv_help = subprocess.run(
        [uv_executable(), "pip", "install", "--help"],
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "100", "HOME": "/nonexistent"},
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    listed = re.search(
        r"--torch-backend <TORCH_BACKEND>.*?possible values: ([^\]]+)\]", uv_help, re.S
    )
    assert listed is not None
    assert {v.strip() for v in listed.group(1).split(",")} == {"auto", *BACKENDS}


@bounded(300)
@given(st.text(max_size=20))
def test_any_text_is_a_backend_or_one_line(text: str) -> None:
    try:
        assert parse_backend(text) in {"auto", *BACKENDS}
    except TorchBackendError as exc:
        assert "\n" not in str(exc)  # noqa: PT017 - one line, whatever the text


# -- real installs -------------------------------------------------------------------

PYTORCH = {
    "cu130": "2.9.0+cu130",
    "cu129": "2.9.0+cu129",
    "cu128": "2.9.0+cu128",
    "cu126": "2.9.0+cu126",
    "rocm6.4": "2.9.0+rocm6.4",
    "xpu": "2.9.0+xpu",
    "cpu": "2.9.0+cpu",
}


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A main index (torch 2.9.0 and 3.0, which the PyTorch indexes do not have, and
    filelock) and PyTorch-shaped ones under one base: ``BASE/BACKEND/torch/``, each
    with its own torch build, which requires filelock."""
    root = tmp_path_factory.mktemp("torch-backend")
    main = root / "main"
    main.mkdir()
    for version in ("2.9.0", "3.0"):
        demo_wheel(main, f"torch-{version}-py3-none-any.whl", requires_dist=["filelock"])
    demo_wheel(main, "filelock-3.0-py3-none-any.whl")
    build_site(main, root / "main-site")
    served = root / "served"
    for backend, version in PYTORCH.items():
        wheels = root / f"{backend}-wheels"
        wheels.mkdir()
        demo_wheel(wheels, f"torch-{version}-py3-none-any.whl", requires_dist=["filelock"])
        build_site(wheels, root / backend)
        shutil.copytree(root / backend / "simple", served / "whl" / backend)
        shutil.copytree(root / backend / "files", served / "whl" / "files", dirs_exist_ok=True)
    shutil.copytree(root / "main-site", served / "main")
    with http_server(served) as base:
        yield f"{base}/main/simple/", f"{base}/whl"


def torch_installed(python: Path) -> str | None:
    found = [p.name for p in site_packages(python).glob("torch-*.dist-info")]
    return found[0].removesuffix(".dist-info").split("-")[1] if found else None


def install(
    indexes: tuple[str, str], tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    main, pytorch = indexes
    python = make_venv(tmp_path / "venv")
    argv = ["install", "--python", str(python), "-i", main, *args, "torch"]
    done = wheelwise(argv, tmp_path / "cache", {"WHEELWISE_PYTORCH_INDEX": pytorch, **(env or {})})
    return done, python


def system(tmp_path: Path, namespaces: dict[str, dict[str, list[str]]]) -> str:
    path = tmp_path / "system.json"
    path.write_text(json.dumps({"system": namespaces}))
    return str(path)


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        (cuda_machine("12.8"), "2.9.0+cu128"),
        (cuda_machine("13.0"), "2.9.0+cu130"),
        (cuda_machine("12.0"), "2.9.0+cu126"),  # no build for 12.0 here: the nearest newer
        ({"amd": {"gfx_arch": ["gfx90a"]}}, "2.9.0+rocm6.4"),
        ({"intel": {"device_ip": ["12.60.7"]}}, "2.9.0+xpu"),
        ({}, "2.9.0+cpu"),
    ],
    ids=["cuda-12.8", "cuda-13.0", "cuda-12.0", "gfx90a", "intel", "nothing"],
)
def test_auto_installs_the_build_of_the_machine_system_describes(
    indexes: tuple[str, str],
    tmp_path: Path,
    machine: dict[str, dict[str, list[str]]],
    expected: str,
) -> None:
    """The main index's newer torch 3.0 is not taken: torch comes from PyTorch's
    indexes only; filelock, from the main one."""
    done, python = install(
        indexes, tmp_path, "--torch-backend", "auto", "--system", system(tmp_path, machine)
    )
    assert done.returncode == 0, done.stderr
    assert torch_installed(python) == expected
    assert any(site_packages(python).glob("filelock-3.0.dist-info"))


def test_auto_reads_this_machines_detection(indexes: tuple[str, str], tmp_path: Path) -> None:
    """The NVIDIA provider's override stands for a CUDA 12.6 driver here."""
    overrides = {"WHEELWISE_NVIDIA_DRIVER": "12.6", "WHEELWISE_NVIDIA_GPUS": "9.0"}
    done, python = install(indexes, tmp_path, "--torch-backend", "auto", "--refresh", env=overrides)
    assert done.returncode == 0, done.stderr
    assert torch_installed(python) == "2.9.0+cu126"


def test_a_named_backend_and_the_environment_variable(
    indexes: tuple[str, str], tmp_path: Path
) -> None:
    done, python = install(indexes, tmp_path / "a", "--torch-backend", "cu129")
    assert done.returncode == 0, done.stderr
    assert torch_installed(python) == "2.9.0+cu129"
    done, python = install(indexes, tmp_path / "b", env={"WHEELWISE_TORCH_BACKEND": "cpu"})
    assert done.returncode == 0, done.stderr
    assert torch_installed(python) == "2.9.0+cpu"
    done, python = install(indexes, tmp_path / "c")
    assert done.returncode == 0, done.stderr
    assert torch_installed(python) == "3.0"  # without it: the main index, as before


def test_a_backend_without_the_project_and_a_bad_name(
    indexes: tuple[str, str], tmp_path: Path
) -> None:
    done, _ = install(indexes, tmp_path / "a", "--torch-backend", "cu118")
    assert done.returncode != 0
    assert "searched http://127.0.0.1" in done.stderr
    assert done.stderr.strip().endswith("/whl/cu118/")  # where torch was looked for
    assert "Traceback" not in done.stderr
    bad, _ = install(indexes, tmp_path / "b", "--torch-backend", "cuda12")
    assert bad.returncode == 2
    assert "'cuda12' is no PyTorch backend" in bad.stderr


def test_download_takes_it_for_another_machine(indexes: tuple[str, str], tmp_path: Path) -> None:
    main, pytorch = indexes
    machine = system(tmp_path, {"amd": {"gfx_arch": ["gfx942"]}})
    argv = ["download", "-i", main, "--torch-backend", "auto", "--system", machine, "torch"]
    done = wheelwise(
        [*argv, "-d", str(tmp_path / "d")], tmp_path / "cache", {"WHEELWISE_PYTORCH_INDEX": pytorch}
    )
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "d").iterdir())
    assert names == ["filelock-3.0-py3-none-any.whl", "torch-2.9.0+rocm6.4-py3-none-any.whl"]


def test_a_pytorch_index_that_is_down_is_one_line(indexes: tuple[str, str], tmp_path: Path) -> None:
    main, _ = indexes
    python = make_venv(tmp_path / "venv")
    argv = ["install", "--python", str(python), "-i", main, "--torch-backend", "cu128"]
    down = {"WHEELWISE_PYTORCH_INDEX": "http://127.0.0.1:9/whl"}
    done = wheelwise([*argv, "--retries", "0", "torch"], tmp_path / "cache", down)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "http://127.0.0.1:9/whl/cu128/torch/: cannot connect" in lines[0]
    assert torch_installed(python) is None


def test_a_strategy_leaves_the_pytorch_projects_to_their_indexes(
    indexes: tuple[str, str], tmp_path: Path
) -> None:
    """--index-strategy first-index with the main index as an extra one: torch still
    comes from the backend's index (its own route), filelock from the main index; a
    torch release the backend lacks names the backend's index, with no strategy
    advice (the strategy does not choose where torch comes from)."""
    main, pytorch = indexes
    python = make_venv(tmp_path / "venv")
    argv = ["install", "--python", str(python), "--index-url", str(tmp_path / "nothing")]
    argv += ["--extra-index-url", main, "--index-strategy", "first-index"]
    argv += ["--torch-backend", "cu128"]
    env = {"WHEELWISE_PYTORCH_INDEX": pytorch}
    (tmp_path / "nothing").mkdir()
    done = wheelwise([*argv, "torch"], tmp_path / "cache", env)
    assert done.returncode == 0, done.stderr
    assert torch_installed(python) == "2.9.0+cu128"
    assert any(site_packages(python).glob("filelock-3.0.dist-info"))
    missing = wheelwise([*argv, "torch==3.0"], tmp_path / "cache", env)
    assert missing.returncode != 0
    assert missing.stderr.strip().endswith("/whl/cu128/"), missing.stderr
    assert "--index-strategy" not in missing.stderr
