"""``wheelwise doctor``'s libraries and compatibility sections: the CUDA libraries a
target would load and the copy that wins, CUDA majors mixed, and the CUDA rules
between driver, runtime and the builds' GPU code.

Scenarios run the real command against real virtual environments holding fake
``nvidia-*`` wheels whose libraries are small hand-written ELF files, on a fake
machine (:mod:`doctorkit`) whose NVIDIA driver and GPUs are the ones the provider's
overrides describe, with toolkits under ``/usr/local`` and a loader cache. Each
scenario checks every finding the report holds and the exit status. The fat binary
reader and the name parsers have unit and fuzz tests (the ELF reader's are in
test_doctor_machine.py).
"""

from __future__ import annotations

import contextlib
import json
import struct
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doctorkit import MACHINE, OTHER_MACHINE, FakeMachine, build_elf, finding_codes, run_doctor
from installkit import make_venv, pip
from wheelfactory import make_wheel, variant_doc
from wheelwise.doctor.context import DoctorContext
from wheelwise.doctor.cuda_machine import cuda_machine, parse_cuda_version, parse_sm_arch
from wheelwise.doctor.distributions import installed_distributions
from wheelwise.doctor.fatbin import FatbinError, parse_fatbin
from wheelwise.doctor.gpu_code import gpu_builds
from wheelwise.doctor.library_names import (
    cuda_major_of_distribution,
    cupy_build,
    parse_library_name,
    version_key,
)
from wheelwise.doctor.loader import split_library_path
from wheelwise.doctor.path_fixes import without_entries
from wheelwise.doctor.search_path import split_preload
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.install.transaction import install_wheels
from wheelwise.variants.supported import SupportedProperties

# -- hand-written libraries and fat binaries ------------------------------------------------------


def library(soname: str, *needed: str, machine: str = MACHINE) -> bytes:
    return build_elf(soname, needed, machine=machine)


def fatbin_bytes(*containers: Sequence[tuple[int, int]], payload: int = 5) -> bytes:
    """A ``.nv_fatbin`` section: containers of (kind, arch) entries (kind 1 PTX, 2
    cubin), each entry a 64-byte header and *payload* bytes padded to 8."""
    data = bytearray()
    for entries in containers:
        body = bytearray()
        for kind, arch in entries:
            padded = payload + (-payload % 8)
            header = struct.pack("<HHIQ12xI", kind, 0x0101, 64, padded, arch)
            body += (
                header + b"\0" * (64 - len(header)) + b"\xaa" * payload + b"\0" * (padded - payload)
            )
        data += struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body
        data += b"\0" * (-len(data) % 8)
    return bytes(data)


# -- fake environments, machines and the command ------------------------------------------------


def wheel(
    directory: Path,
    name: str,
    version: str,
    files: Mapping[str, bytes],
    *,
    requires: Sequence[str] = (),
    label: str | None = None,
    nvidia: Mapping[str, list[str]] | None = None,
) -> Path:
    """A wheel of *files*; with *label*, a variant wheel with these nvidia properties."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = name.replace("-", "_")
    filename = f"{stem}-{version}-py3-none-any{'-' + label if label else ''}.whl"
    doc = variant_doc(label, {"nvidia": dict(nvidia or {})}) if label else None
    members = dict(files)
    members[f"{stem}-{version}.dist-info/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    return make_wheel(
        directory, filename, doc, extra_members=members, record=True, requires_dist=requires
    )


def cuda_wheel(directory: Path, name: str, version: str, *sonames: str, folder: str = "") -> Path:
    """An ``nvidia-*`` wheel with one library file per SONAME under nvidia/FOLDER/lib."""
    component = folder or name.removeprefix("nvidia-").rsplit("-cu", 1)[0].replace("-", "_")
    files = {f"nvidia/{component}/lib/{soname}": library(soname) for soname in sonames}
    return wheel(directory, name, version, files)


def torch_wheel(
    directory: Path,
    *,
    needs: Sequence[str] = ("libcudart.so.12",),
    requires: Sequence[str] = (),
    label: str | None = None,
    sm_arch: Sequence[str] = (),
    cuda: str | None = None,
) -> Path:
    """``torch`` with an extension module that needs *needs*; a variant build when
    *label* is given."""
    nvidia: dict[str, list[str]] = {"sm_arch": list(sm_arch)}
    if cuda:
        nvidia["cuda_version_lower_bound"] = [cuda]
    files = {"torch/_C.cpython-3-x86_64-linux-gnu.so": build_elf(None, needs)}
    return wheel(directory, "torch", "2.8.0", files, requires=requires, label=label, nvidia=nvidia)


def environment(tmp_path: Path, *wheels: Path) -> Path:
    """A fresh venv with *wheels* installed (by wheelwise); its Python."""
    python = make_venv(tmp_path / "venv")
    if wheels:
        install_wheels(TargetEnvironment.from_python(python), list(wheels))
    return python


@pytest.fixture
def fake(tmp_path: Path) -> FakeMachine:
    return FakeMachine(tmp_path / "root")


def doctor(
    python: Path,
    machine: FakeMachine,
    *,
    driver: str = "12.8",
    gpus: str = "8.6",
    env: Mapping[str, str] | None = None,
    as_json: bool = True,
) -> tuple[int, Any]:
    """``wheelwise doctor --python PYTHON --json`` on *machine*, made the healthy
    NVIDIA machine the provider's overrides describe (a driver for CUDA *driver*, a
    GPU of each compute capability in *gpus*): its exit status and document."""
    machine.target = python
    machine.nvidia_for(driver, gpus)
    machine.finish()
    overrides = {"WHEELWISE_NVIDIA_DRIVER": driver, "WHEELWISE_NVIDIA_GPUS": gpus}
    return run_doctor(machine, {**overrides, **(env or {})}, as_json=as_json)


def findings(document: Mapping[str, Any], section: str) -> dict[str, dict[str, Any]]:
    return {f["code"]: f for f in document["sections"][section]["findings"]}


def the_finding(
    document: Mapping[str, Any], section: str, code: str, severity: str
) -> dict[str, Any]:
    """The finding *code* of *section*, checked to have *severity*."""
    found = findings(document, section)
    assert code in found, f"no {code} in {section}: {sorted(found)}"
    assert found[code]["severity"] == severity
    return found[code]


def expect(
    document: Mapping[str, Any],
    section: str,
    code: str,
    severity: str,
    *,
    what: Sequence[str],
    why: Sequence[str] = (),
    fix: str = "",
) -> dict[str, Any]:
    """The finding *code* of *section*: of *severity*, its line holding each of *what*,
    its reason each of *why*, and its fix starting with *fix*."""
    finding = the_finding(document, section, code, severity)
    for text in what:
        assert text in finding["what"]
    for text in why:
        assert text in finding["why"]
    assert finding["fix"].startswith(fix)
    return finding


def copies(document: Mapping[str, Any], soname: str) -> list[dict[str, Any]]:
    return [
        c for c in document["sections"]["libraries"]["facts"]["libraries"] if c["soname"] == soname
    ]


def winner(document: Mapping[str, Any], soname: str) -> dict[str, Any]:
    (won,) = [c for c in copies(document, soname) if c["winner"]]
    return won


TARGET = TargetEnvironment.current()
CU12_RUNTIME = ("nvidia-cuda-runtime-cu12", "12.4.127", "libcudart.so.12")


# -- scenarios ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_healthy_cu12_stack_is_reported_and_exits_0(tmp_path: Path, fake: FakeMachine) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        cuda_wheel(wheels, *CU12_RUNTIME),
        cuda_wheel(
            wheels, "nvidia-cublas-cu12", "12.4.5.8", "libcublas.so.12", "libcublasLt.so.12"
        ),
        cuda_wheel(wheels, "nvidia-cuda-nvrtc-cu12", "12.4.127", "libnvrtc.so.12"),
        torch_wheel(
            wheels,
            needs=("libcudart.so.12", "libcublas.so.12"),
            requires=("nvidia-cuda-runtime-cu12==12.4.127", "nvidia-cublas-cu12==12.4.5.8"),
            label="cu124",
            sm_arch=("80_real", "86_real", "90_real", "90_virtual"),
            cuda="12.4",
        ),
    )
    fake.write("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
    fake.write(
        "/etc/ld.so.conf.d/cuda.conf",
        "# toolkits\n/usr/local/cuda-12.2/lib64\n/usr/local/cuda-11.8/lib64\n",
    )
    # An older toolkit the loader finds through its cache: the wheels' copies win, by design.
    fake.library(
        "/usr/local/cuda-12.2/lib64", "libcudart.so.12.2.140", "libcudart.so.12", cached=True
    )
    # A toolkit ld.so.conf lists but ldconfig has not cached: the loader does not see it.
    fake.library("/usr/local/cuda-11.8/lib64", "libcudart.so.11.8.89", "libcudart.so.11.0")

    code, document = doctor(python, fake, driver="12.8", gpus="8.6")

    # The builds section says the variant installed still fits.
    expected = {"builds": ["variant-fits"]}
    assert (code, finding_codes(document)) == (0, expected), json.dumps(document["sections"])
    facts = document["sections"]["libraries"]["facts"]
    won = winner(document, "libcudart.so.12")
    assert won["version"] == "12.4.127"
    assert won["version_from"] == "wheel"
    assert won["provider"] == "nvidia-cuda-runtime-cu12 12.4.127"
    assert won["searched"] == "environment"
    assert "/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12" in won["path"]
    system = [c for c in copies(document, "libcudart.so.12") if not c["winner"]]
    assert [(c["version"], c["searched"], c["kind"]) for c in system] == [
        ("12.2.140", "ld.so.cache", "CUDA toolkit")
    ]
    (unsearched,) = copies(document, "libcudart.so.11.0")
    assert unsearched["searched"] is None
    assert unsearched["version"] == "11.8.89"
    assert "/usr/local/cuda-11.8/lib64" in facts["not_searched"]
    assert facts["ld.so.cache"] == "read"
    assert {
        "path": "/usr/local/cuda-12.2/lib64",
        "kind": "CUDA toolkit",
        "searched": "ld.so.cache",
    } in facts["search_order"]
    assert winner(document, "libcublas.so.12")["version"] == "12.4.5.8"
    assert facts["needed"]["libcublas.so.12"] == ["torch/_C.cpython-3-x86_64-linux-gnu.so"]
    assert facts["LD_PRELOAD"] is None
    assert "LD_PRELOAD first" in facts["rule"]
    compatibility = document["sections"]["compatibility"]
    assert compatibility["facts"]["driver_cuda"] == "12.8"
    assert compatibility["facts"]["gpus"] == ["8.6"]
    assert [r["version"] for r in compatibility["facts"]["runtime"]] == ["12.4.127"]
    (build,) = compatibility["facts"]["builds"]
    assert build["name"] == "torch"
    assert build["gpus"] == {"8.6": "sass"}
    nvidia = document["sections"]["machine"]["facts"]["nvidia"]
    assert nvidia["kernel_module"]["version"] == "570.124.06"
    assert nvidia["user_mode_driver"]["libcuda.so.1"]["version"] == "570.124.06"


@pytest.mark.slow
def test_wheels_of_two_cuda_majors_are_an_error_with_the_uninstall(
    tmp_path: Path, fake: FakeMachine
) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        cuda_wheel(wheels, "nvidia-cublas-cu11", "11.11.3.6", "libcublas.so.11"),
        cuda_wheel(wheels, "nvidia-cuda-runtime-cu11", "11.8.89", "libcudart.so.11.0"),
        cuda_wheel(wheels, "nvidia-cublas-cu12", "12.4.5.8", "libcublas.so.12"),
        cuda_wheel(wheels, *CU12_RUNTIME),
        torch_wheel(wheels, requires=("nvidia-cublas-cu12", "nvidia-cuda-runtime-cu12")),
    )

    code, document = doctor(python, fake)

    assert (code, finding_codes(document)) == (2, {"libraries": ["mixed-cuda-majors"]})
    finding = expect(
        document,
        "libraries",
        "mixed-cuda-majors",
        "error",
        what=["CUDA 11: nvidia-cublas-cu11 11.11.3.6", "CUDA 12: nvidia-cublas-cu12 12.4.5.8"],
        why=["torch 2.8.0 require the CUDA 12 ones"],
    )
    assert finding["fix"] == "pip uninstall nvidia-cublas-cu11 nvidia-cuda-runtime-cu11"


@pytest.mark.slow
def test_cuda_13_wheels_are_told_apart_by_their_folder(tmp_path: Path, fake: FakeMachine) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        cuda_wheel(wheels, "nvidia-cuda-runtime", "13.0.96", "libcudart.so.13", folder="cu13"),
        cuda_wheel(wheels, "nvidia-cublas-cu12", "12.4.5.8", "libcublas.so.12"),
    )

    code, document = doctor(python, fake, driver="13.0")

    assert (code, finding_codes(document)) == (2, {"libraries": ["mixed-cuda-majors"]})
    finding = expect(
        document,
        "libraries",
        "mixed-cuda-majors",
        "error",
        what=["CUDA 12: nvidia-cublas-cu12 12.4.5.8; CUDA 13: nvidia-cuda-runtime 13.0.96"],
    )
    assert finding["fix"] == "pip uninstall nvidia-cublas-cu12"


@pytest.mark.slow
def test_cupy_for_cuda_11_and_12_together_is_an_error(tmp_path: Path, fake: FakeMachine) -> None:
    python = make_venv(tmp_path / "venv")
    for name in ("cupy-cuda11x", "cupy-cuda12x"):
        built = wheel(
            tmp_path / "wheels",
            name,
            "13.3.0",
            {"cupy/__init__.py": f"BUILD = {name!r}\n".encode()},
        )
        done = pip(python, "install", "--no-deps", "--no-index", str(built))
        assert done.returncode == 0, done.stderr

    code, document = doctor(python, fake, driver="12.8")

    assert (code, finding_codes(document)) == (2, {"libraries": ["mixed-cupy-builds"]})
    expect(
        document,
        "libraries",
        "mixed-cupy-builds",
        "error",
        what=["cupy-cuda11x 13.3.0 (CUDA 11) and cupy-cuda12x 13.3.0 (CUDA 12)"],
        why=["overwrote"],
        fix="pip uninstall -y cupy-cuda11x cupy-cuda12x && pip install cupy-cuda12x==13.3.0",
    )


def test_ld_preload_shadowing_the_wheels_runtime_is_a_warning(
    tmp_path: Path, fake: FakeMachine
) -> None:
    wheels = tmp_path / "wheels"
    python = environment(tmp_path, cuda_wheel(wheels, *CU12_RUNTIME), torch_wheel(wheels))
    preload = "/opt/cuda-12.1/lib64/libcudart.so.12.1.105"
    fake.write(preload, library("libcudart.so.12"))

    code, document = doctor(python, fake, env={"LD_PRELOAD": preload})

    assert (code, finding_codes(document)) == (1, {"libraries": ["library-shadowed"]})
    site = TargetEnvironment.from_python(python).purelib
    finding = expect(
        document,
        "libraries",
        "library-shadowed",
        "warning",
        what=[
            f"libcudart.so.12 12.1.105 from LD_PRELOAD ({preload}) wins over the environment's "
            f"own copy: {site}/nvidia/cuda_runtime/lib/libcudart.so.12, "
            "nvidia-cuda-runtime-cu12 12.4.127 (nvidia wheel) (12.4.127)"
        ],
        why=["run with 12.1.105 instead"],
    )
    assert finding["fix"] == "unset LD_PRELOAD"
    facts = document["sections"]["libraries"]["facts"]
    assert facts["LD_PRELOAD"] == preload
    assert winner(document, "libcudart.so.12")["searched"] == "LD_PRELOAD"


def test_ld_library_path_shadowing_names_the_folder_to_drop(
    tmp_path: Path, fake: FakeMachine
) -> None:
    wheels = tmp_path / "wheels"
    python = environment(tmp_path, cuda_wheel(wheels, *CU12_RUNTIME), torch_wheel(wheels))
    fake.library("/usr/local/cuda-12.6/lib64", "libcudart.so.12.6.77", "libcudart.so.12")
    # A copy for another machine, first on the path: the loader passes it over.
    fake.library("/opt/other", "libcudart.so.12.1.105", "libcudart.so.12", machine=OTHER_MACHINE)

    code, document = doctor(
        python, fake, env={"LD_LIBRARY_PATH": "/opt/other:/usr/local/cuda-12.6/lib64"}
    )

    assert (code, finding_codes(document)) == (1, {"libraries": ["library-shadowed"]})
    finding = expect(
        document,
        "libraries",
        "library-shadowed",
        "warning",
        what=["libcudart.so.12 12.6.77 from LD_LIBRARY_PATH"],
    )
    assert finding["fix"] == "export LD_LIBRARY_PATH=/opt/other"
    assert document["sections"]["libraries"]["facts"]["search_order"][0] == {
        "path": "/opt/other",
        "kind": "folder",
        "searched": "LD_LIBRARY_PATH",
    }
    assert not [c for c in copies(document, "libcudart.so.12") if c["path"].startswith("/opt/")]


def test_jax_loads_the_wheel_copy_by_path_before_ld_library_path(
    tmp_path: Path, fake: FakeMachine
) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        cuda_wheel(wheels, *CU12_RUNTIME),
        wheel(wheels, "jax-cuda12-plugin", "0.7.2", {"jax_plugins/__init__.py": b""}),
    )
    fake.library("/usr/local/cuda-12.6/lib64", "libcudart.so.12.6.77", "libcudart.so.12")

    code, document = doctor(python, fake, env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.6/lib64"})

    assert (code, finding_codes(document)) == (0, {})
    won = winner(document, "libcudart.so.12")
    assert (won["searched"], won["version"]) == ("JAX", "12.4.127")
    facts = document["sections"]["libraries"]["facts"]
    assert facts["frameworks_loading_by_path"] == ["jax-cuda12-plugin 0.7.2"]


def test_a_runtime_newer_minor_than_the_driver_warns_of_minor_version_compatibility(
    tmp_path: Path, fake: FakeMachine
) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        cuda_wheel(wheels, "nvidia-cuda-runtime-cu12", "12.8.90", "libcudart.so.12"),
        torch_wheel(wheels, requires=("nvidia-cuda-runtime-cu12==12.8.90",)),
    )

    code, document = doctor(python, fake, driver="12.4")

    assert (code, finding_codes(document)) == (1, {"compatibility": ["runtime-newer-than-driver"]})
    finding = expect(
        document,
        "compatibility",
        "runtime-newer-than-driver",
        "warning",
        what=["the CUDA runtime 12.8.90 (", "is newer than the driver's CUDA 12.4"],
        why=["minor-version compatibility", "PTX"],
    )
    assert finding["fix"] == (
        "upgrade the NVIDIA driver to one for CUDA 12.8 or later, or reinstall the builds "
        "for CUDA 12.4: wheelwise install --upgrade torch (or choose one: --variant torch=LABEL)"
    )


def test_a_runtime_of_a_newer_major_than_the_driver_is_an_error(
    tmp_path: Path, fake: FakeMachine
) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        # CUDA 13's wheels have no -cuNN suffix and share nvidia/cu13/lib.
        cuda_wheel(wheels, "nvidia-cuda-runtime", "13.0.96", "libcudart.so.13", folder="cu13"),
        torch_wheel(wheels, needs=("libcudart.so.13",), requires=("nvidia-cuda-runtime==13.0.96",)),
    )

    code, document = doctor(python, fake, driver="12.8")

    assert (code, finding_codes(document)) == (2, {"compatibility": ["driver-too-old-for-runtime"]})
    finding = expect(
        document,
        "compatibility",
        "driver-too-old-for-runtime",
        "error",
        what=[
            "the CUDA runtime 13.0.96",
            "needs a driver for CUDA 13; this driver supports CUDA 12.8",
        ],
        why=["cudaErrorInsufficientDriver"],
        fix="upgrade the NVIDIA driver to one for CUDA 13.0 or later",
    )
    assert "wheelwise install --upgrade torch" in finding["fix"]


def test_nvrtc_11_1_on_the_library_path_warns(tmp_path: Path, fake: FakeMachine) -> None:
    wheels = tmp_path / "wheels"
    python = environment(tmp_path, torch_wheel(wheels, needs=("libnvrtc.so.11.1",)))
    fake.library("/usr/local/cuda-11.1/lib64", "libnvrtc.so.11.1", "libnvrtc.so.11.1")

    code, document = doctor(
        python, fake, driver="11.0", env={"LD_LIBRARY_PATH": "/usr/local/cuda-11.1/lib64"}
    )

    assert (code, finding_codes(document)) == (1, {"compatibility": ["nvrtc-without-minor-compat"]})
    finding = expect(
        document,
        "compatibility",
        "nvrtc-without-minor-compat",
        "warning",
        what=[
            "NVRTC 11.1 (/usr/local/cuda-11.1/lib64/libnvrtc.so.11.1, CUDA toolkit) is older "
            "than CUDA 11.2"
        ],
        why=["needs a driver for CUDA 11.1 or newer (this one supports CUDA 11.0)"],
    )
    assert finding["fix"] == "unset LD_LIBRARY_PATH and pip install nvidia-cuda-nvrtc-cu11"


@pytest.mark.slow
def test_a_ptx_only_build_with_an_older_driver_than_its_toolkit_is_an_error(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    torch = torch_wheel(
        wheels, label="cu128", sm_arch=("80_real", "90_real", "90_virtual"), cuda="12.8"
    )
    python = environment(tmp_path, torch)

    code, document = doctor(python, FakeMachine(tmp_path / "old"), driver="12.4", gpus="12.0")

    # The builds section says the same from the variant's side: cu128 no longer fits.
    expected = {"compatibility": ["ptx-needs-newer-driver"], "builds": ["variant-unfit"]}
    assert (code, finding_codes(document)) == (2, expected)
    expect(
        document,
        "compatibility",
        "ptx-needs-newer-driver",
        "error",
        what=[
            "torch 2.8.0 (variant cu128) has only PTX (compute_90) for the GPU's sm_120, made "
            "by CUDA 12.8; this driver supports CUDA 12.4"
        ],
        why=["CUDA_ERROR_UNSUPPORTED_PTX_VERSION"],
        fix="upgrade the NVIDIA driver to one for CUDA 12.8 or later, or wheelwise install "
        "--upgrade torch (a build with SASS for sm_120)",
    )

    # With a driver as new as the toolkit, the PTX is JIT-compiled: worth saying, not wrong.
    code, document = doctor(python, FakeMachine(tmp_path / "new"), driver="12.8", gpus="12.0")
    expected = {"compatibility": ["ptx-jit-only"], "builds": ["variant-fits"]}
    assert (code, finding_codes(document)) == (0, expected)
    expect(document, "compatibility", "ptx-jit-only", "ok", what=["through PTX JIT"])


def gpu_kernels_wheel(directory: Path) -> Path:
    """``gpukernels``, a package whose extension carries a fat binary: SASS for sm_80
    and sm_86, PTX for compute_80."""
    kernels = build_elf(
        None,
        ["libcudart.so.12"],
        sections={".nv_fatbin": fatbin_bytes([(2, 80), (2, 86)], [(1, 80)])},
    )
    return wheel(directory, "gpukernels", "1.0", {"gpukernels/_ops.so": kernels})


@pytest.mark.parametrize(
    ("source", "what"),
    [
        (
            "variant properties",
            "torch 2.8.0 (variant cu118) has no code for the GPU's architecture sm_75: its "
            "variant properties name sm_80, sm_86",
        ),
        (
            "fat binaries",
            "gpukernels 1.0 has no code for the GPU's architecture sm_75: its fat binaries "
            "name sm_80, sm_86, compute_80",
        ),
    ],
)
def test_a_gpu_no_installed_build_has_code_for_is_an_error(
    tmp_path: Path, fake: FakeMachine, source: str, what: str
) -> None:
    wheels = tmp_path / "wheels"
    if source == "variant properties":
        built = torch_wheel(wheels, label="cu118", sm_arch=("80_real", "86_real"), cuda="11.8")
    else:
        built = gpu_kernels_wheel(wheels)
    python = environment(tmp_path, built)

    code, document = doctor(python, fake, driver="12.8", gpus="7.5")

    expected = {"compatibility": ["no-code-for-gpu"]}
    if source == "variant properties":  # a variant wheel: the builds section agrees
        expected["builds"] = ["variant-unfit"]
    assert (code, finding_codes(document)) == (2, expected)
    package = what.split()[0]
    expect(
        document,
        "compatibility",
        "no-code-for-gpu",
        "error",
        what=[what],
        why=["no kernel image is available"],
        fix=f"wheelwise install --upgrade {package}",
    )
    (build,) = document["sections"]["compatibility"]["facts"]["builds"]
    assert build["from"] == source


def test_ptx_in_a_fat_binary_is_jit_compiled_for_newer_gpus(
    tmp_path: Path, fake: FakeMachine
) -> None:
    python = environment(tmp_path, gpu_kernels_wheel(tmp_path / "wheels"))

    code, document = doctor(python, fake, driver="12.8", gpus="8.6,9.0")

    assert (code, finding_codes(document)) == (0, {"compatibility": ["ptx-jit-only"]})
    expect(
        document,
        "compatibility",
        "ptx-jit-only",
        "ok",
        what=["gpukernels 1.0 runs on the GPU's sm_90 through PTX JIT (compute_80"],
    )
    (build,) = document["sections"]["compatibility"]["facts"]["builds"]
    assert build["gpus"] == {"8.6": "sass", "9.0": "ptx"}
    assert len(document["sections"]["machine"]["facts"]["nvidia"]["gpus"]) == 2


def test_two_runtime_majors_in_one_process_are_an_error(tmp_path: Path, fake: FakeMachine) -> None:
    wheels = tmp_path / "wheels"
    python = environment(tmp_path, cuda_wheel(wheels, *CU12_RUNTIME), torch_wheel(wheels))
    preload = "/usr/local/cuda-11.8/lib64/libcudart.so.11.0"
    fake.write(preload, library("libcudart.so.11.0"))

    code, document = doctor(python, fake, env={"LD_PRELOAD": f"{preload} libfoo.so"})

    assert (code, finding_codes(document)) == (2, {"libraries": ["mixed-runtime-majors"]})
    finding = expect(
        document,
        "libraries",
        "mixed-runtime-majors",
        "error",
        what=[
            f"libcudart.so.11.0 (LD_PRELOAD {preload})",
            "libcudart.so.12 (needed by torch/_C.cpython-3-x86_64-linux-gnu.so)",
        ],
        why=["two copies of the library"],
    )
    assert finding["fix"] == "export LD_PRELOAD=libfoo.so"


def test_the_command_renders_the_libraries_table(tmp_path: Path, fake: FakeMachine) -> None:
    wheels = tmp_path / "wheels"
    python = environment(tmp_path, cuda_wheel(wheels, *CU12_RUNTIME))

    code, text = doctor(python, fake, env={"LD_LIBRARY_PATH": "/opt/nothing"}, as_json=False)

    assert code == 0
    assert "LD_LIBRARY_PATH=/opt/nothing" in text
    line = next(x for x in text.splitlines() if x.strip().startswith("libcudart.so.12"))
    assert "12.4.127" in line
    assert "nvidia-cuda-runtime-cu12 12.4.127" in line
    assert "loads it" in line
    assert "site-packages/nvidia/cuda_runtime/lib" in line
    assert "NVIDIA kernel module 570.124.06 (proprietary)" in text
    assert "driver: CUDA 12.8; GPUs: 8.6; runtime in use: libcudart.so.12 12.4.127" in text


# -- the fat binary reader ---------------------------------------------------------------------


def test_the_fat_binary_reader_lists_sass_and_ptx() -> None:
    data = fatbin_bytes([(2, 80), (2, 90), (1, 90)], [(2, 120)], payload=3)
    code = parse_fatbin(data + b"\0" * 24)
    assert code.sass == {(8, 0), (9, 0), (12, 0)}
    assert code.ptx == {(9, 0)}
    assert parse_fatbin(b"") == parse_fatbin(b"\0" * 40)
    assert not parse_fatbin(b"").sass


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not a fat binary at all", "no fat binary header"),
        (struct.pack("<IHHQ", 0xBA55ED50, 2, 16, 0), "version"),
        (struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 64), "past the section"),
        (fatbin_bytes([(2, 80)])[:-8], "past"),
        (fatbin_bytes([(2, 5)]), "does not fit"),
    ],
)
def test_the_fat_binary_reader_refuses_what_does_not_fit(data: bytes, message: str) -> None:
    with pytest.raises(FatbinError, match=message):
        parse_fatbin(data)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_fuzz_any_bytes_give_fat_binary_code_or_an_error(data: bytes) -> None:
    with contextlib.suppress(FatbinError):
        parse_fatbin(data)


_FATBIN = fatbin_bytes([(2, 80), (1, 80)], [(2, 90)])


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(_FATBIN) - 1), st.integers(0, 255)), max_size=8))
def test_fuzz_damaged_fat_binaries_give_code_or_an_error(changes: list[tuple[int, int]]) -> None:
    data = bytearray(_FATBIN)
    for offset, value in changes:
        data[offset] = value
    try:
        code = parse_fatbin(bytes(data))
    except FatbinError:
        return
    assert all(10 <= 10 * major + minor < 1000 for major, minor in code.sass | code.ptx)


def test_a_described_machine_gives_the_driver_and_one_gpu_per_architecture_family() -> None:
    system = SupportedProperties(
        {
            "nvidia": {
                "cuda_version_lower_bound": ("12.8", "12.7", "12", "11.8"),
                "sm_arch": ("90_real", "86_real", "85_real", "80_real", "90_virtual"),
            }
        }
    )
    machine = cuda_machine(DoctorContext(target=TARGET, environ={}, system=system))
    assert machine.driver == (12, 8)
    assert machine.gpus == ((8, 6), (9, 0))
    nothing = cuda_machine(DoctorContext(target=TARGET, environ={}, system=SupportedProperties()))
    assert (nothing.driver, nothing.gpus) == (None, ())


def sited(site: Path) -> TargetEnvironment:
    """This interpreter's environment, with *site* as its site folder."""
    return replace(TARGET, purelib=site, platlib=site)


# -- names, versions, search paths --------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "stem", "version", "soname"),
    [
        ("libcudart.so.12.4.127", "libcudart", (12, 4, 127), "libcudart.so.12"),
        ("libcublasLt.so.12", "libcublasLt", (12,), "libcublasLt.so.12"),
        ("libcudnn_ops.so.9.1.0", "libcudnn_ops", (9, 1, 0), "libcudnn_ops.so.9"),
        ("libnvrtc-builtins.so.12.4", "libnvrtc-builtins", (12, 4), "libnvrtc-builtins.so.12"),
        ("libnvJitLink.so.12", "libnvJitLink", (12,), "libnvJitLink.so.12"),
        ("libamdhip64.so.6", "libamdhip64", (6,), "libamdhip64.so.6"),
        ("libcudart.so", "libcudart", (), None),
    ],
)
def test_library_file_names_give_the_library_and_version(
    filename: str, stem: str, version: tuple[int, ...], soname: str | None
) -> None:
    name = parse_library_name(filename)
    assert name is not None
    assert (name.stem, name.version, name.soname_guess) == (stem, version, soname)


@pytest.mark.parametrize(
    "filename",
    [
        "libcudart_static.a",
        "libcuda.so.1",
        "libnvidia-ml.so.1",
        "libc.so.6",
        "libcudart-d0da41ae.so.11.0",
        "libcudart.so.12.x",
        "_C.cpython-312-x86_64-linux-gnu.so",
    ],
)
def test_other_files_are_not_cuda_libraries(filename: str) -> None:
    assert parse_library_name(filename) is None


def test_distribution_names_give_their_cuda_build() -> None:
    assert cuda_major_of_distribution("nvidia-cublas-cu12") == 12
    assert cuda_major_of_distribution("nvidia-cudnn-cu11") == 11
    assert cuda_major_of_distribution("nvidia-cuda-runtime") is None
    assert cuda_major_of_distribution("torch") is None
    assert [
        cupy_build(n) for n in ("cupy-cuda11x", "cupy-cuda12x", "cupy-cuda117", "cupy-cuda102")
    ] == [
        "CUDA 11",
        "CUDA 12",
        "CUDA 11",
        "CUDA 10",
    ]
    assert cupy_build("cupy-rocm-5-0") == "ROCm 5-0"
    assert cupy_build("cupy") is None
    assert cupy_build("cupyx") is None


def test_versions_and_architectures_parse_or_give_none() -> None:
    assert version_key("12.4.127") == (12, 4, 127)
    assert version_key("12") == (12,)
    assert version_key("12.x") is None
    assert version_key("") is None
    assert parse_cuda_version("12.8") == (12, 8)
    assert parse_cuda_version("12") is None
    assert parse_sm_arch("86_real") == ((8, 6), "real")
    assert parse_sm_arch("120_virtual") == ((12, 0), "virtual")
    assert parse_sm_arch("90a_real") is None


@settings(max_examples=300)
@given(st.text(max_size=60))
def test_fuzz_names_parse_or_give_none(text: str) -> None:
    name = parse_library_name(text)
    if name is not None:
        assert text.startswith(name.stem)
    version_key(text)
    parse_cuda_version(text)
    parse_sm_arch(text)
    cupy_build(text)
    cuda_major_of_distribution(text)


def test_preload_and_library_path_split_as_glibc_does() -> None:
    assert split_preload("/a/libx.so liby.so:/b/libz.so  ") == [
        "/a/libx.so",
        "liby.so",
        "/b/libz.so",
    ]
    assert split_library_path("/a::/b;/c") == ["/a", "/b", "/c"]
    assert without_entries("LD_PRELOAD", "/a/x.so /b/y.so", ["/a/x.so"], split_preload) == (
        "export LD_PRELOAD=/b/y.so"
    )
    assert without_entries("LD_LIBRARY_PATH", "/a/", ["/a"], split_library_path) == (
        "unset LD_LIBRARY_PATH"
    )


@pytest.mark.slow
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.binary(max_size=200))
def test_fuzz_damaged_dist_info_is_read_leniently(variant_json: bytes, metadata: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        site = Path(folder)
        dist_info = site / "x-1.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_bytes(b"Name: x\nVersion: 1\n" + metadata)
        (dist_info / "variant.json").write_bytes(variant_json)
        (dist_info / "RECORD").write_bytes(variant_json)
        (dist,) = installed_distributions(sited(site))
        assert dist.name == "x"
        gpu_builds([dist])


def test_variant_builds_give_their_gpu_code(tmp_path: Path) -> None:
    dist_info = tmp_path / "torch-2.8.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Name: torch\nVersion: 2.8.0\nRequires-Dist: numpy\n")
    properties = {
        "sm_arch": ["80_real", "90_real", "90_virtual"],
        "cuda_version_lower_bound": ["12.8"],
    }
    (dist_info / "variant.json").write_text(
        json.dumps(variant_doc("cu128", {"nvidia": properties}))
    )
    (build,) = gpu_builds(installed_distributions(sited(tmp_path)))
    assert build.toolkit == (12, 8)
    assert [build.code_for(gpu) for gpu in ((8, 0), (8, 6), (9, 0), (12, 0), (7, 5))] == [
        "sass",
        "sass",
        "sass",
        "ptx",
        "none",
    ]
    assert build.dist.requires == frozenset({"numpy"})
