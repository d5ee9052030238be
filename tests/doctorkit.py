"""Fake machines for ``wheelwise doctor``'s tests: hand-written ELF shared objects,
glibc loader caches, and machine trees (``WHEELWISE_DOCTOR_ROOT``) holding a
driver, GPUs, device nodes and library folders, every path written as the machine
names it."""

from __future__ import annotations

import json
import os
import platform
import struct
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from paths import DATA
from wheelwise.doctor.elf import ELF_MACHINES
from wheelwise.providers.fingerprint import OVERRIDE_VARIABLES

# The --json document's schema (docs/doctor.md, "The --json document").
REPORT_SCHEMA = jsonschema.Draft202012Validator(
    json.loads(
        (Path(__file__).resolve().parent.parent / "docs" / "doctor-report.schema.json").read_text()
    )
)

__all__ = [
    "H100_INFORMATION",
    "LIBDIR",
    "MACHINE",
    "OPEN",
    "OTHER_MACHINE",
    "PROPRIETARY",
    "FakeMachine",
    "build_elf",
    "build_ld_so_cache",
    "finding_codes",
    "run_doctor",
]

MACHINE = platform.machine()
if MACHINE.lower() not in ELF_MACHINES:
    MACHINE = "x86_64"  # the fake libraries then suit a loader of any machine
OTHER_MACHINE = "aarch64" if MACHINE.lower() not in ("aarch64", "arm64") else "x86_64"
LIBDIR = {
    "x86_64": "/usr/lib/x86_64-linux-gnu",
    "aarch64": "/usr/lib/aarch64-linux-gnu",
}.get(MACHINE, "/usr/lib64")

PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Tue Sep 23 09:15:21 UTC 2025\n"
    "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n"
)
OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  "
    "(dvs-builder@U22-I3-AF03-09-1)  Tue Sep 23 09:15:21 UTC 2025\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
)
H100_INFORMATION = (
    "Model: \t\t NVIDIA H100 80GB HBM3\n"
    "IRQ:   \t\t 145\n"
    "GPU UUID: \t GPU-5b1c3a4e-0000-0000-0000-000000000000\n"
    "Video BIOS: \t 96.00.99.00.01\n"
    "Bus Type: \t PCIe\n"
    "DMA Size: \t 52 bits\n"
    "DMA Mask: \t 0xfffffffffffff\n"
    "Bus Location: \t 0000:01:00.0\n"
    "Device Minor: \t 0\n"
    "GPU Excluded:\t No\n"
)
# A driver release for each CUDA version the provider overrides name in the tests
# (the newest CUDA version a driver supports comes with its release).
DRIVER_FOR_CUDA = {
    "11.0": "450.51.06",
    "12.4": "550.54.15",
    "12.8": "570.124.06",
    "13.0": "580.65.06",
}
# A GPU model of each compute capability the tests name.
GPU_MODELS = {
    "7.5": "Tesla T4",
    "8.0": "NVIDIA A100-SXM4-80GB",
    "8.6": "NVIDIA RTX A6000",
    "9.0": "NVIDIA H100 80GB HBM3",
    "12.0": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
}
_DT = {"NEEDED": 1, "STRTAB": 5, "STRSZ": 10, "SONAME": 14, "RPATH": 15, "RUNPATH": 29}


def build_elf(
    soname: str | None = None,
    needed: Sequence[str] = (),
    *,
    runpath: str | None = None,
    rpath: str | None = None,
    sections: Mapping[str, bytes] | None = None,
    machine: str = MACHINE,
) -> bytes:
    """A minimal shared object for *machine* (a ``platform.machine()`` name): the ELF
    header, a PT_LOAD mapping the whole file at address 0, a PT_DYNAMIC with its
    string table, and (with *sections*) a section table naming ``.dynstr``,
    ``.dynamic``, those sections and ``.shstrtab``."""
    bits, little, e_machine = ELF_MACHINES[machine]
    order = "<" if little else ">"
    w = "Q" if bits == 64 else "I"
    ehsize, phentsize, shentsize = (64, 56, 64) if bits == 64 else (52, 32, 40)
    strings = bytearray(b"\0")

    def add(text: str) -> int:
        offset = len(strings)
        strings.extend(text.encode() + b"\0")
        return offset

    entries = [(_DT["NEEDED"], add(name)) for name in needed]
    if soname is not None:
        entries.append((_DT["SONAME"], add(soname)))
    if runpath is not None:
        entries.append((_DT["RUNPATH"], add(runpath)))
    if rpath is not None:
        entries.append((_DT["RPATH"], add(rpath)))
    strtab = ehsize + 2 * phentsize
    dynamic = strtab + len(strings)
    dynamic += -dynamic % 8
    entries += [(_DT["STRTAB"], strtab), (_DT["STRSZ"], len(strings)), (0, 0)]
    dyn = b"".join(struct.pack(order + ("qQ" if bits == 64 else "iI"), t, v) for t, v in entries)
    body = bytearray(b"\0" * dynamic)
    body[strtab : strtab + len(strings)] = strings
    body += dyn
    shoff = shnum = shstrndx = 0
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
            entry = (name_offset, kind, 0, offset, offset, size, 0, 0, 1, 0)
            body += struct.pack(order + f"II{w}{w}{w}{w}II{w}{w}", *entry)
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
        e_machine,
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


def build_ld_so_cache(entries: Sequence[tuple[str, str]], *, big_endian: bool = False) -> bytes:
    """A glibc "new format" loader cache listing *entries* (name, path)."""
    order = ">" if big_endian else "<"
    strings = b""
    start = 48 + 24 * len(entries)
    records = b""
    for name, path in entries:
        key = start + len(strings)
        strings += name.encode() + b"\0"
        value = start + len(strings)
        strings += path.encode() + b"\0"
        records += struct.pack(order + "iIIIQ", 0x0303, key, value, 0, 0)
    header = b"glibc-ld.so.cache1.1" + struct.pack(
        order + "IIB3sI12s",
        len(entries),
        len(strings),
        3 if big_endian else 2,
        bytes(3),
        0,
        bytes(12),
    )
    return header + records + strings


class FakeMachine:
    """A machine tree under *root*: every path is written as the machine names it.
    *target*: the interpreter ``doctor`` checks there (None: the running one)."""

    def __init__(self, root: Path, target: Path | None = None) -> None:
        self.root = root
        self.target = target
        self.cache: list[tuple[str, str]] = []
        root.mkdir(parents=True, exist_ok=True)

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def write(self, absolute: str, content: str | bytes) -> Path:
        path = self.path(absolute)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return path

    def link(self, absolute: str, target: str) -> None:
        """A symbolic link at *absolute* to *target* (relative to its folder)."""
        path = self.path(absolute)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)

    def library(
        self,
        folder: str,
        file_name: str,
        soname: str,
        *,
        cached: bool = False,
        machine: str = MACHINE,
        sections: Mapping[str, bytes] | None = None,
    ) -> None:
        """A library *file_name* for *machine* in *folder*, with the link its SONAME
        names (when that differs), listed in the loader cache when *cached*."""
        self.write(f"{folder}/{file_name}", build_elf(soname, machine=machine, sections=sections))
        if file_name != soname:
            self.link(f"{folder}/{soname}", file_name)
        if cached:
            self.cache.append((soname, f"{folder}/{soname}"))

    def nvidia_kernel(self, version: str, text: str = PROPRIETARY) -> None:
        self.write("/proc/driver/nvidia/version", text.format(v=version))
        self.write("/sys/module/nvidia/version", version + "\n")

    def nvidia_gpu(
        self, address: str = "0000:01:00.0", information: str = H100_INFORMATION
    ) -> None:
        self.write(f"/proc/driver/nvidia/gpus/{address}/information", information)

    def pci(
        self, address: str, vendor: int, pci_class: int, driver: str | None, device: int = 0x2330
    ) -> None:
        folder = f"/sys/bus/pci/devices/{address}"
        self.write(f"{folder}/vendor", f"0x{vendor:04x}\n")
        self.write(f"{folder}/device", f"0x{device:04x}\n")
        self.write(f"{folder}/class", f"0x{pci_class:06x}\n")
        if driver:
            os.symlink(f"../../../bus/pci/drivers/{driver}", self.path(f"{folder}/driver"))

    def nodes(self, *names: str) -> None:
        for name in names:
            self.write(f"/dev/{name}", "")

    def driver_library(
        self,
        folder: str,
        library: str,
        version: str,
        *,
        cached: bool = True,
        machine: str = MACHINE,
    ) -> None:
        """``libcuda.so.VERSION`` (holding its version string) and the
        ``libcuda.so.1`` link to it, in *folder*; listed in the loader cache."""
        rodata = b"\0NVIDIA driver\0" + version.encode() + b"\0"
        file_name = f"{library.split('.so', 1)[0]}.so.{version}"
        self.library(
            folder, file_name, library, cached=cached, machine=machine, sections={".rodata": rodata}
        )

    def nvidia_user_driver(
        self, version: str, folder: str = LIBDIR, *, cached: bool = True
    ) -> None:
        for library in ("libcuda.so.1", "libnvidia-ml.so.1"):
            self.driver_library(folder, library, version, cached=cached)

    def healthy_nvidia(self, version: str = "580.95.05") -> None:
        self.nvidia_kernel(version)
        self.nvidia_gpu()
        self.pci("0000:01:00.0", 0x10DE, 0x030200, "nvidia")
        self.nodes("nvidiactl", "nvidia0", "nvidia-uvm")
        self.nvidia_user_driver(version)

    def nvidia_for(self, cuda: str, gpus: str) -> None:
        """A healthy NVIDIA machine as the provider overrides describe it: the driver
        release of CUDA version *cuda*, one GPU of each compute capability in *gpus*
        (``8.6,9.0``)."""
        version = DRIVER_FOR_CUDA[cuda]
        self.nvidia_kernel(version)
        for minor, capability in enumerate(gpus.split(",")):
            address = f"0000:{minor + 1:02x}:00.0"
            information = H100_INFORMATION.replace("0000:01:00.0", address)
            information = information.replace("NVIDIA H100 80GB HBM3", GPU_MODELS[capability])
            information = information.replace("Device Minor: \t 0", f"Device Minor: \t {minor}")
            self.nvidia_gpu(address, information)
            self.pci(address, 0x10DE, 0x030200, "nvidia")
            self.nodes(f"nvidia{minor}")
        self.nodes("nvidiactl", "nvidia-uvm")
        self.nvidia_user_driver(version)

    def wsl(self) -> None:
        self.write(
            "/proc/version",
            "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) "
            "(gcc (GCC) 11.2.0, GNU ld (GNU Binutils) 2.37) #1 SMP\n",
        )
        self.nodes("dxg")
        for library in ("libcuda.so.1", "libnvidia-ml.so.1"):
            self.write(f"/usr/lib/wsl/lib/{library}", build_elf(library, sections={}))

    def kfd_node(self, node: int, target_version: int) -> None:
        self.write(
            f"/sys/class/kfd/kfd/topology/nodes/{node}/properties",
            f"cpu_cores_count {0 if target_version else 16}\nsimd_count "
            f"{192 if target_version else 0}\ngfx_target_version {target_version}\n"
            "vendor_id 4098\ndevice_id 29772\n",
        )

    def finish(self) -> None:
        """Write the loader cache the scenario's libraries are listed in."""
        if self.cache:
            self.write("/etc/ld.so.cache", build_ld_so_cache(self.cache))


# Process variables that change what doctor finds: a test sets the ones it means.
_MACHINE_VARIABLES = (
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "CONDA_PREFIX",
    "CUDA_HOME",
    "CUDA_PATH",
    "ROCM_PATH",
    "KUBERNETES_SERVICE_HOST",
)


def run_doctor(
    machine: FakeMachine,
    env: Mapping[str, str] | None = None,
    *,
    as_json: bool = True,
    args: Sequence[str] = (),
) -> tuple[int, Any]:
    """The real command on *machine* (checking its target), the providers told (by
    their overrides) of no GPU unless *env* says otherwise; (exit status, document or
    text). No probe may fail."""
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("WHEELWISE_")
        and key not in OVERRIDE_VARIABLES
        and key not in _MACHINE_VARIABLES
    }
    environ.update(
        WHEELWISE_DOCTOR_ROOT=str(machine.root),
        WHEELWISE_CPUINFO=str(DATA / "cpuinfo" / "linux-scientific7-k10"),
        WHEELWISE_NVIDIA_DRIVER="none",
        WHEELWISE_AMD_ROCM="none",
        WHEELWISE_AMD_GFX="none",
        WHEELWISE_CACHE_DIR=str(machine.root.parent / "cache"),
        WHEELWISE_CONFIG=str(machine.root.parent / "config.toml"),
        COLUMNS="300",
    )
    environ.update(env or {})
    target = ["--python", str(machine.target)] if machine.target is not None else []
    json_flag = ["--json"] if as_json else []
    command = [sys.executable, "-m", "wheelwise", "doctor", *target, *json_flag, *args]
    done = subprocess.run(
        command, capture_output=True, text=True, env=environ, timeout=180, check=False
    )
    assert "Traceback" not in done.stderr, done.stderr
    if not as_json:
        return done.returncode, done.stdout
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"doctor printed no JSON (exit {done.returncode}): {done.stderr}")
    assert document["exit_code"] == done.returncode
    assert not document["sections"]["doctor"]["findings"], document["sections"]["doctor"]
    REPORT_SCHEMA.validate(document)  # the documented --json schema holds every section
    return done.returncode, document


def finding_codes(document: Mapping[str, Any]) -> dict[str, list[str]]:
    """Section -> the codes of its findings, for the sections that have any."""
    return {
        name: sorted(finding["code"] for finding in section["findings"])
        for name, section in document["sections"].items()
        if section["findings"]
    }
