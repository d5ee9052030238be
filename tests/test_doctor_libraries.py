"""``wheelwise doctor``'s libraries and compatibility sections: the CUDA libraries a
target would load and the copy that wins, CUDA majors mixed, and the CUDA rules
between driver, runtime and the builds' GPU code.

Scenarios run the real command against real virtual environments holding fake
``nvidia-*`` wheels whose libraries are small hand-written ELF files, a fake machine
root (``/usr/local/cuda``, ``/etc/ld.so.conf``) and the NVIDIA provider's overrides
for the driver and GPUs. The ELF reader and the name parsers have unit and fuzz tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from installkit import make_venv, pip
from paths import DATA
from wheelfactory import make_wheel, variant_doc
from wheelwise.doctor.context import DoctorContext, MachineRoots
from wheelwise.doctor.cuda_machine import cuda_machine, parse_cuda_version, parse_sm_arch
from wheelwise.doctor.distributions import installed_distributions
from wheelwise.doctor.elf import ElfError, is_elf, parse_elf, read_elf, read_needed, read_soname
from wheelwise.doctor.fatbin import FatbinError, parse_fatbin
from wheelwise.doctor.gpu_code import gpu_builds
from wheelwise.doctor.library_names import (
    cuda_major_of_distribution,
    cupy_build,
    parse_library_name,
    version_key,
)
from wheelwise.doctor.path_fixes import without_entries
from wheelwise.doctor.search_path import (
    ld_so_conf_folders,
    split_library_path,
    split_preload,
)
from wheelwise.install.environment import TargetEnvironment
from wheelwise.install.transaction import install_wheels
from wheelwise.providers.fingerprint import OVERRIDE_VARIABLES
from wheelwise.variants.supported import SupportedProperties

# -- hand-written ELF files ---------------------------------------------------------------------

DT = {"NEEDED": 1, "STRTAB": 5, "STRSZ": 10, "SONAME": 14, "RPATH": 15, "RUNPATH": 29}


def elf_bytes(
    soname: str | None = None,
    needed: Sequence[str] = (),
    *,
    runpath: str | None = None,
    rpath: str | None = None,
    sections: Mapping[str, bytes] | None = None,
    bits: int = 64,
    little: bool = True,
) -> bytes:
    """A minimal shared object: ELF header, a PT_LOAD mapping the whole file at address
    0, a PT_DYNAMIC with its string table, and (with *sections*) a section table
    naming ``.dynstr``, ``.dynamic``, those sections and ``.shstrtab``."""
    order = "<" if little else ">"
    w = "Q" if bits == 64 else "I"
    ehsize, phentsize = (64, 56) if bits == 64 else (52, 32)
    shentsize = 64 if bits == 64 else 40
    strings = bytearray(b"\0")

    def add(text: str) -> int:
        offset = len(strings)
        strings.extend(text.encode() + b"\0")
        return offset

    entries = [(DT["NEEDED"], add(name)) for name in needed]
    if soname is not None:
        entries.append((DT["SONAME"], add(soname)))
    if runpath is not None:
        entries.append((DT["RUNPATH"], add(runpath)))
    if rpath is not None:
        entries.append((DT["RPATH"], add(rpath)))
    strtab = ehsize + 2 * phentsize
    dynamic = strtab + len(strings)
    dynamic += -dynamic % 8
    entries += [(DT["STRTAB"], strtab), (DT["STRSZ"], len(strings)), (0, 0)]
    dyn = b"".join(struct.pack(order + ("qQ" if bits == 64 else "iI"), t, v) for t, v in entries)
    body = bytearray(b"\0" * dynamic)
    body[strtab : strtab + len(strings)] = strings
    body += dyn
    shoff = 0
    shnum = shstrndx = 0
    if sections is not None:
        names = bytearray(b"\0")
        table: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)]

        def name_of(text: str) -> int:
            offset = len(names)
            names.extend(text.encode() + b"\0")
            return offset

        table.append((name_of(".dynstr"), 3, strtab, len(strings)))
        table.append((name_of(".dynamic"), 6, dynamic, len(dyn)))
        for name, data in sections.items():
            table.append((name_of(name), 1, len(body), len(data)))
            body += data
        shstrtab_name = name_of(".shstrtab")
        table.append((shstrtab_name, 3, len(body), len(names)))
        body += names
        body += b"\0" * (-len(body) % 8)
        shoff, shnum, shstrndx = len(body), len(table), len(table) - 1
        for name_offset, kind, offset, size in table:
            body += struct.pack(
                order + f"II{w}{w}{w}{w}II{w}{w}",
                name_offset,
                kind,
                0,
                offset,
                offset,
                size,
                0,
                0,
                1,
                0,
            )
    total = len(body)
    if bits == 64:
        phdrs = struct.pack(order + "IIQQQQQQ", 1, 5, 0, 0, 0, total, total, 0x1000)
        phdrs += struct.pack(
            order + "IIQQQQQQ", 2, 6, dynamic, dynamic, dynamic, len(dyn), len(dyn), 8
        )
    else:
        phdrs = struct.pack(order + "IIIIIIII", 1, 0, 0, 0, total, total, 5, 0x1000)
        phdrs += struct.pack(
            order + "IIIIIIII", 2, dynamic, dynamic, dynamic, len(dyn), len(dyn), 6, 4
        )
    ident = b"\x7fELF" + bytes([2 if bits == 64 else 1, 1 if little else 2, 1]) + b"\0" * 9
    header = ident + struct.pack(
        order + f"HHI{w}{w}{w}IHHHHHH",
        3,
        62 if bits == 64 else 3,
        1,
        0,
        ehsize,
        shoff,
        0,
        ehsize,
        phentsize,
        2,
        shentsize,
        shnum,
        shstrndx,
    )
    body[: len(header) + len(phdrs)] = header + phdrs
    return bytes(body)


def library(soname: str, *needed: str) -> bytes:
    return elf_bytes(soname, needed)


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
    files = {"torch/_C.cpython-3-x86_64-linux-gnu.so": elf_bytes(None, needs)}
    return wheel(directory, "torch", "2.8.0", files, requires=requires, label=label, nvidia=nvidia)


def environment(tmp_path: Path, *wheels: Path) -> Path:
    """A fresh venv with *wheels* installed (by wheelwise); its Python."""
    python = make_venv(tmp_path / "venv")
    if wheels:
        install_wheels(TargetEnvironment.from_python(python), list(wheels))
    return python


def machine_file(root: Path, path: str, data: bytes = b"", *, link: str | None = None) -> None:
    """A file (or, with *link*, a relative symbolic link) at machine path *path*."""
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if link is not None:
        target.symlink_to(link)
    else:
        target.write_bytes(data)


def doctor(
    python: Path,
    root: Path,
    *,
    driver: str = "12.8",
    gpus: str = "8.6",
    env: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    """``wheelwise doctor --python PYTHON --json`` on a fake machine: its exit status
    and document."""
    full = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WHEELWISE_")
        and k not in OVERRIDE_VARIABLES
        and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH")
    }
    root.mkdir(parents=True, exist_ok=True)
    full.update(
        WHEELWISE_DOCTOR_ROOT=str(root),
        WHEELWISE_CACHE_DIR=str(root.parent / "cache"),
        WHEELWISE_CONFIG=str(root.parent / "config.toml"),
        WHEELWISE_CPUINFO=str(DATA / "cpuinfo" / "linux-scientific7-k10"),
        WHEELWISE_NVIDIA_DRIVER=driver,
        WHEELWISE_NVIDIA_GPUS=gpus,
        WHEELWISE_AMD_ROCM="none",
        WHEELWISE_AMD_GFX="none",
        **(env or {}),
    )
    done = subprocess.run(
        [sys.executable, "-m", "wheelwise", "doctor", "--python", str(python), "--json"],
        capture_output=True,
        text=True,
        env=full,
        timeout=180,
        check=False,
    )
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"doctor printed no JSON (exit {done.returncode}): {done.stderr}")
    assert done.returncode == document["exit_code"]
    return done.returncode, document


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


def test_a_healthy_cu12_stack_is_reported_and_exits_0(tmp_path: Path) -> None:
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
    root = tmp_path / "root"
    # An older toolkit on the default search path: the wheels' copies win, by design.
    machine_file(root, "/etc/ld.so.conf", b"include /etc/ld.so.conf.d/*.conf\n")
    machine_file(root, "/etc/ld.so.conf.d/cuda.conf", b"# toolkit\n/usr/local/cuda-12.2/lib64\n")
    machine_file(
        root, "/usr/local/cuda-12.2/lib64/libcudart.so.12.2.140", library("libcudart.so.12")
    )
    machine_file(root, "/usr/local/cuda-12.2/lib64/libcudart.so.12", link="libcudart.so.12.2.140")
    # A toolkit nothing searches.
    machine_file(
        root, "/usr/local/cuda-11.8/lib64/libcudart.so.11.8.89", library("libcudart.so.11.0")
    )
    machine_file(root, "/usr/local/cuda-11.8/lib64/libcudart.so.11.0", link="libcudart.so.11.8.89")

    code, document = doctor(python, root, driver="12.8", gpus="8.6")

    assert code == 0, json.dumps(document["sections"], indent=1)
    facts = document["sections"]["libraries"]["facts"]
    won = winner(document, "libcudart.so.12")
    assert won["version"] == "12.4.127"
    assert won["version_from"] == "wheel"
    assert won["provider"] == "nvidia-cuda-runtime-cu12 12.4.127"
    assert won["searched"] == "environment"
    assert "/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12" in won["path"]
    system = [c for c in copies(document, "libcudart.so.12") if not c["winner"]]
    assert [(c["version"], c["searched"], c["kind"]) for c in system] == [
        ("12.2.140", "ld.so.conf", "CUDA toolkit")
    ]
    (unsearched,) = copies(document, "libcudart.so.11.0")
    assert unsearched["searched"] is None
    assert unsearched["version"] == "11.8.89"
    assert "/usr/local/cuda-11.8/lib64" in facts["not_searched"]
    assert winner(document, "libcublas.so.12")["version"] == "12.4.5.8"
    assert facts["needed"]["libcublas.so.12"] == ["torch/_C.cpython-3-x86_64-linux-gnu.so"]
    assert facts["LD_PRELOAD"] is None
    assert "LD_PRELOAD first" in facts["rule"]
    compatibility = document["sections"]["compatibility"]
    assert compatibility["findings"] == []
    assert compatibility["facts"]["driver_cuda"] == "12.8"
    assert compatibility["facts"]["gpus"] == ["8.6"]
    assert [r["version"] for r in compatibility["facts"]["runtime"]] == ["12.4.127"]
    (build,) = compatibility["facts"]["builds"]
    assert build["name"] == "torch"
    assert build["gpus"] == {"8.6": "sass"}


def test_wheels_of_two_cuda_majors_are_an_error_with_the_uninstall(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        cuda_wheel(wheels, "nvidia-cublas-cu11", "11.11.3.6", "libcublas.so.11"),
        cuda_wheel(wheels, "nvidia-cuda-runtime-cu11", "11.8.89", "libcudart.so.11.0"),
        cuda_wheel(wheels, "nvidia-cublas-cu12", "12.4.5.8", "libcublas.so.12"),
        cuda_wheel(wheels, *CU12_RUNTIME),
        torch_wheel(wheels, requires=("nvidia-cublas-cu12", "nvidia-cuda-runtime-cu12")),
    )

    code, document = doctor(python, tmp_path / "root")

    assert code == 2
    finding = expect(
        document,
        "libraries",
        "mixed-cuda-majors",
        "error",
        what=["CUDA 11: nvidia-cublas-cu11 11.11.3.6", "CUDA 12: nvidia-cublas-cu12 12.4.5.8"],
        why=["torch 2.8.0 require the CUDA 12 ones"],
    )
    assert finding["fix"] == "pip uninstall nvidia-cublas-cu11 nvidia-cuda-runtime-cu11"


def test_cuda_13_wheels_are_told_apart_by_their_folder(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        cuda_wheel(wheels, "nvidia-cuda-runtime", "13.0.96", "libcudart.so.13", folder="cu13"),
        cuda_wheel(wheels, "nvidia-cublas-cu12", "12.4.5.8", "libcublas.so.12"),
    )

    code, document = doctor(python, tmp_path / "root", driver="13.0")

    assert code == 2
    finding = expect(
        document,
        "libraries",
        "mixed-cuda-majors",
        "error",
        what=["CUDA 12: nvidia-cublas-cu12 12.4.5.8; CUDA 13: nvidia-cuda-runtime 13.0.96"],
    )
    assert finding["fix"] == "pip uninstall nvidia-cublas-cu12"


def test_cupy_for_cuda_11_and_12_together_is_an_error(tmp_path: Path) -> None:
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

    code, document = doctor(python, tmp_path / "root", driver="12.8")

    assert code == 2
    expect(
        document,
        "libraries",
        "mixed-cupy-builds",
        "error",
        what=["cupy-cuda11x 13.3.0 (CUDA 11) and cupy-cuda12x 13.3.0 (CUDA 12)"],
        why=["overwrote"],
        fix="pip uninstall -y cupy-cuda11x cupy-cuda12x && pip install cupy-cuda12x==13.3.0",
    )


def test_ld_preload_shadowing_the_wheels_runtime_is_a_warning(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    python = environment(tmp_path, cuda_wheel(wheels, *CU12_RUNTIME), torch_wheel(wheels))
    root = tmp_path / "root"
    preload = "/opt/cuda-12.1/lib64/libcudart.so.12.1.105"
    machine_file(root, preload, library("libcudart.so.12"))

    code, document = doctor(python, root, env={"LD_PRELOAD": preload})

    assert code == 1
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


def test_ld_library_path_shadowing_names_the_folder_to_drop(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    python = environment(tmp_path, cuda_wheel(wheels, *CU12_RUNTIME), torch_wheel(wheels))
    root = tmp_path / "root"
    machine_file(
        root, "/usr/local/cuda-12.6/lib64/libcudart.so.12.6.77", library("libcudart.so.12")
    )
    machine_file(root, "/usr/local/cuda-12.6/lib64/libcudart.so.12", link="libcudart.so.12.6.77")

    code, document = doctor(
        python, root, env={"LD_LIBRARY_PATH": "/opt/other:/usr/local/cuda-12.6/lib64"}
    )

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
    assert code == 1


def test_jax_loads_the_wheel_copy_by_path_before_ld_library_path(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        cuda_wheel(wheels, *CU12_RUNTIME),
        wheel(wheels, "jax-cuda12-plugin", "0.7.2", {"jax_plugins/__init__.py": b""}),
    )
    root = tmp_path / "root"
    machine_file(
        root, "/usr/local/cuda-12.6/lib64/libcudart.so.12.6.77", library("libcudart.so.12")
    )
    machine_file(root, "/usr/local/cuda-12.6/lib64/libcudart.so.12", link="libcudart.so.12.6.77")

    code, document = doctor(python, root, env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.6/lib64"})

    won = winner(document, "libcudart.so.12")
    assert (won["searched"], won["version"]) == ("JAX", "12.4.127")
    facts = document["sections"]["libraries"]["facts"]
    assert facts["frameworks_loading_by_path"] == ["jax-cuda12-plugin 0.7.2"]
    assert findings(document, "libraries") == {}
    assert code == 0


def test_a_runtime_newer_minor_than_the_driver_warns_of_minor_version_compatibility(
    tmp_path: Path,
) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        cuda_wheel(wheels, "nvidia-cuda-runtime-cu12", "12.8.90", "libcudart.so.12"),
        torch_wheel(wheels, requires=("nvidia-cuda-runtime-cu12==12.8.90",)),
    )

    code, document = doctor(python, tmp_path / "root", driver="12.4")

    assert code == 1
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


def test_a_runtime_of_a_newer_major_than_the_driver_is_an_error(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    python = environment(
        tmp_path,
        # CUDA 13's wheels have no -cuNN suffix and share nvidia/cu13/lib.
        cuda_wheel(wheels, "nvidia-cuda-runtime", "13.0.96", "libcudart.so.13", folder="cu13"),
        torch_wheel(wheels, needs=("libcudart.so.13",), requires=("nvidia-cuda-runtime==13.0.96",)),
    )

    code, document = doctor(python, tmp_path / "root", driver="12.8")

    assert code == 2
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


def test_nvrtc_11_1_on_the_library_path_warns(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    python = environment(tmp_path, torch_wheel(wheels, needs=("libnvrtc.so.11.1",)))
    root = tmp_path / "root"
    machine_file(root, "/usr/local/cuda-11.1/lib64/libnvrtc.so.11.1", library("libnvrtc.so.11.1"))

    code, document = doctor(
        python, root, driver="11.0", env={"LD_LIBRARY_PATH": "/usr/local/cuda-11.1/lib64"}
    )

    assert code == 1
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


def test_a_ptx_only_build_with_an_older_driver_than_its_toolkit_is_an_error(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    torch = torch_wheel(
        wheels, label="cu128", sm_arch=("80_real", "90_real", "90_virtual"), cuda="12.8"
    )
    python = environment(tmp_path, torch)

    code, document = doctor(python, tmp_path / "root", driver="12.4", gpus="12.0")

    assert code == 2
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
    code, document = doctor(python, tmp_path / "root", driver="12.8", gpus="12.0")
    expect(document, "compatibility", "ptx-jit-only", "ok", what=["through PTX JIT"])
    assert code == 0


def gpu_kernels_wheel(directory: Path) -> Path:
    """``gpukernels``, a package whose extension carries a fat binary: SASS for sm_80
    and sm_86, PTX for compute_80."""
    kernels = elf_bytes(
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
    tmp_path: Path, source: str, what: str
) -> None:
    wheels = tmp_path / "wheels"
    if source == "variant properties":
        built = torch_wheel(wheels, label="cu118", sm_arch=("80_real", "86_real"), cuda="11.8")
    else:
        built = gpu_kernels_wheel(wheels)
    python = environment(tmp_path, built)

    code, document = doctor(python, tmp_path / "root", driver="12.8", gpus="7.5")

    assert code == 2
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


def test_ptx_in_a_fat_binary_is_jit_compiled_for_newer_gpus(tmp_path: Path) -> None:
    python = environment(tmp_path, gpu_kernels_wheel(tmp_path / "wheels"))

    code, document = doctor(python, tmp_path / "root", driver="12.8", gpus="8.6,9.0")

    assert code == 0
    expect(
        document,
        "compatibility",
        "ptx-jit-only",
        "ok",
        what=["gpukernels 1.0 runs on the GPU's sm_90 through PTX JIT (compute_80"],
    )
    (build,) = document["sections"]["compatibility"]["facts"]["builds"]
    assert build["gpus"] == {"8.6": "sass", "9.0": "ptx"}


def test_two_runtime_majors_in_one_process_are_an_error(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    python = environment(tmp_path, cuda_wheel(wheels, *CU12_RUNTIME), torch_wheel(wheels))
    root = tmp_path / "root"
    preload = "/usr/local/cuda-11.8/lib64/libcudart.so.11.0"
    machine_file(root, preload, library("libcudart.so.11.0"))

    code, document = doctor(python, root, env={"LD_PRELOAD": f"{preload} libfoo.so"})

    assert code == 2
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


def test_the_command_renders_the_libraries_table(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    python = environment(tmp_path, cuda_wheel(wheels, *CU12_RUNTIME))
    root = tmp_path / "root"
    root.mkdir()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("WHEELWISE_") and k != "LD_PRELOAD"
    }
    env.update(
        WHEELWISE_DOCTOR_ROOT=str(root),
        WHEELWISE_NVIDIA_DRIVER="12.8",
        WHEELWISE_NVIDIA_GPUS="8.6",
        LD_LIBRARY_PATH="/opt/nothing",
        COLUMNS="200",
    )
    done = subprocess.run(
        [sys.executable, "-m", "wheelwise", "doctor", "--python", str(python)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert "LD_LIBRARY_PATH=/opt/nothing" in done.stdout
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith("libcudart.so.12"))
    assert "12.4.127" in line
    assert "nvidia-cuda-runtime-cu12 12.4.127" in line
    assert "loads it" in line
    assert "site-packages/nvidia/cuda_runtime/lib" in line


# -- the ELF reader -----------------------------------------------------------------------------


@pytest.mark.parametrize(("bits", "little"), [(64, True), (64, False), (32, True), (32, False)])
def test_the_elf_reader_reads_the_dynamic_section(bits: int, little: bool) -> None:
    data = elf_bytes(
        "libcublas.so.12",
        ["libcublasLt.so.12", "libc.so.6"],
        runpath="$ORIGIN:$ORIGIN/../../nvidia/cublas/lib",
        rpath="/opt/lib",
        sections={".nv_fatbin": b"\x50\xed\x55\xba" + b"\0" * 12},
        bits=bits,
        little=little,
    )
    info = parse_elf(data, sections=True)
    assert (info.bits, info.little_endian, info.kind) == (bits, little, 3)
    assert info.soname == "libcublas.so.12"
    assert info.needed == ("libcublasLt.so.12", "libc.so.6")
    assert info.runpath == ("$ORIGIN", "$ORIGIN/../../nvidia/cublas/lib")
    assert info.rpath == ("/opt/lib",)
    fatbin = info.section(".nv_fatbin")
    assert fatbin is not None
    assert fatbin.size == 16
    assert data[fatbin.offset : fatbin.offset + 4] == b"\x50\xed\x55\xba"
    assert [s.name for s in info.sections] == ["", ".dynstr", ".dynamic", ".nv_fatbin", ".shstrtab"]
    assert parse_elf(data).sections == ()


def test_the_elf_reader_reads_files(tmp_path: Path) -> None:
    path = tmp_path / "libcudart.so.12.4.127"
    path.write_bytes(library("libcudart.so.12", "libdl.so.2"))
    assert read_soname(path) == "libcudart.so.12"
    assert read_needed(path) == ("libdl.so.2",)
    assert read_elf(path).needed == ("libdl.so.2",)
    assert is_elf(path)
    (tmp_path / "text.so").write_text("INPUT(libcudart.so.12)\n")
    assert not is_elf(tmp_path / "text.so")
    assert not is_elf(tmp_path / "missing.so")
    with pytest.raises(ElfError, match="bad magic"):
        read_elf(tmp_path / "text.so")
    with pytest.raises(FileNotFoundError):
        read_elf(tmp_path / "missing.so")
    assert read_soname(tmp_path / "libcudart.so.12.4.127") == "libcudart.so.12"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "truncated"),
        (b"\x7fELF", "truncated"),
        (b"MZ" + b"\0" * 100, "bad magic"),
        (b"\x7fELF\x03\x01" + b"\0" * 100, "class"),
        (b"\x7fELF\x02\x03" + b"\0" * 100, "encoding"),
    ],
)
def test_the_elf_reader_refuses_what_is_not_elf(data: bytes, message: str) -> None:
    with pytest.raises(ElfError, match=message):
        parse_elf(data)


def test_a_truncated_elf_file_is_an_elf_error() -> None:
    data = library("libcudart.so.12", "libdl.so.2")
    for size in range(0, len(data), 7):
        try:
            info = parse_elf(data[:size])
        except ElfError:
            continue
        assert info.needed in ((), ("libdl.so.2",))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_fuzz_any_bytes_give_an_elf_info_or_an_elf_error(data: bytes) -> None:
    with contextlib.suppress(ElfError):
        parse_elf(data, sections=True)


_VALID = elf_bytes("libx.so.1", ["liby.so.2"], runpath="$ORIGIN", sections={".nv_fatbin": b"x" * 8})


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(0, len(_VALID) - 1), st.integers(0, 255)), max_size=12),
    st.booleans(),
)
def test_fuzz_damaged_elf_files_give_an_elf_info_or_an_elf_error(
    changes: list[tuple[int, int]], big: bool
) -> None:
    data = bytearray(_VALID)
    for offset, value in changes:
        data[offset] = 0xFF if big else value
    try:
        info = parse_elf(bytes(data), sections=True)
    except ElfError:
        return
    assert len(info.needed) <= 4096
    assert len(info.sections) <= 65536


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


def test_ld_so_conf_includes_are_followed_under_the_root(tmp_path: Path) -> None:
    machine_file(tmp_path, "/etc/ld.so.conf", b"include ld.so.conf.d/*.conf\n/opt/first # note\n")
    machine_file(tmp_path, "/etc/ld.so.conf.d/a.conf", b"/usr/local/cuda/lib64\n\n# comment\n")
    # An include cycle, and a folder listed twice.
    machine_file(tmp_path, "/etc/ld.so.conf.d/b.conf", b"include /etc/ld.so.conf\n/opt/first\n")
    roots = MachineRoots(tmp_path)
    assert ld_so_conf_folders(roots) == ["/usr/local/cuda/lib64", "/opt/first"]
    assert ld_so_conf_folders(MachineRoots(tmp_path / "nowhere")) == []


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("/ab*.\n# include\t,=:")), max_size=120))
def test_fuzz_ld_so_conf_never_raises(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        machine_file(root, "/etc/ld.so.conf", text.encode())
        machine_file(root, "/etc/a.conf", text.encode())
        for found in ld_so_conf_folders(MachineRoots(root)):
            assert found.startswith("/")


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
