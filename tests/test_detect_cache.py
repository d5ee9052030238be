"""The detection cache, its fingerprint and the per-user cache directory."""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import platformdirs
import pytest

from wheelwise.cachedir import user_cache_dir
from wheelwise.providers import _cpu, cache, fingerprint
from wheelwise.providers.amd import AMDProvider
from wheelwise.providers.base import Environment
from wheelwise.providers.fingerprint import (
    OVERRIDE_VARIABLES,
    cpuinfo_identity,
    machine_fingerprint,
    pci_devices_of,
)
from wheelwise.providers.intel import IntelProvider
from wheelwise.providers.nvidia import NvidiaProvider
from wheelwise.userconfig import CONFIG_ENV, config_path

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz
cpu MHz\t\t: {mhz}
flags\t\t: fpu sse sse2 avx avx2
bogomips\t: {bogomips}

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz
cpu MHz\t\t: {mhz}
flags\t\t: fpu sse sse2 avx avx2
bogomips\t: {bogomips}
"""


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(tmp_path / "cache"))
    for name in OVERRIDE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_cache_dir_override(tmp_path: Path) -> None:
    assert user_cache_dir() == str(tmp_path / "cache")


def test_cache_dir_matches_platformdirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("WHEELWISE_CACHE_DIR")
    expected = platformdirs.user_cache_dir("wheelwise", appauthor=False)
    assert user_cache_dir() == expected
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert user_cache_dir() == platformdirs.user_cache_dir("wheelwise", appauthor=False)
        assert user_cache_dir() == str(tmp_path / "xdg" / "wheelwise")


def test_cpuinfo_identity_ignores_changing_lines() -> None:
    first = cpuinfo_identity(CPUINFO.format(mhz="800.000", bogomips="6800.00"))
    second = cpuinfo_identity(CPUINFO.format(mhz="3400.123", bogomips="6801.00"))
    assert first == second
    assert "flags\t\t: fpu sse sse2 avx avx2" in first
    assert first.count("flags") == 1  # identical processors collapse to one line
    assert "MHz" not in first


def test_fingerprint_follows_the_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO.format(mhz="800", bogomips="1"))
    monkeypatch.setenv("WHEELWISE_CPUINFO", str(cpuinfo))
    base = machine_fingerprint("1.0")
    cpuinfo.write_text(CPUINFO.format(mhz="2900", bogomips="2"))
    assert machine_fingerprint("1.0") == base  # only the clock changed
    cpuinfo.write_text(CPUINFO.format(mhz="800", bogomips="1").replace("avx2", "avx512f"))
    assert machine_fingerprint("1.0") != base  # another CPU
    cpuinfo.write_text(CPUINFO.format(mhz="800", bogomips="1"))
    assert machine_fingerprint("1.0") == base
    assert machine_fingerprint("1.1") != base  # another wheelwise
    monkeypatch.setenv("WHEELWISE_NVIDIA_DRIVER", "12.8")
    with_driver = machine_fingerprint("1.0")
    assert with_driver != base
    monkeypatch.setenv("WHEELWISE_NVIDIA_GPUS", "8.6")
    assert machine_fingerprint("1.0") not in (base, with_driver)


# The modules of the built-in providers; fingerprint.py must cover everything they read.
PROVIDER_MODULES = ("nvidia", "amd", "intel", "ascend", "tpu", "x86_64", "aarch64", "_cpu")
# Names of the variables the providers (and the libraries and tools they call) honour.
PROVIDER_VARIABLE = re.compile(
    r"(?:WHEELWISE|NV_VARIANT_PROVIDER|AMD_VARIANT_PROVIDER|INTEL_VARIANT_PROVIDER|ASCEND_VARIANT_PROVIDER|TPU_VARIANT_PROVIDER|ROCM|CUDA|ROCR|HIP)"
    r"_[A-Z0-9_]*"
)
UNAME_FIELDS = ("sysname", "nodename", "release", "version", "machine")
ENVIRONMENT_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
# Variables a provider module may name that do not change a detection answer.
NOT_PROVIDER_INPUTS = {
    "WHEELWISE_CACHE_DIR",  # where the cache lives
    "WHEELWISE_CONFIG",  # plugin configuration, not built-in detection
    "WINDIR",  # Windows folders that hold nvml.dll
    "PROGRAMFILES",
}


def _text(node: ast.AST) -> str:
    """The value of a string literal; "" for anything else."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _called(node: ast.Call | ast.Subscript) -> str:
    """``get`` for ``env.get(...)`` and ``getenv(...)``; ``environ`` for ``os.environ[...]``."""
    target = node.func if isinstance(node, ast.Call) else node.value
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def variables_named_by(module_name: str) -> set[str]:
    """Environment variables a provider module reads, found three ways: its
    ``*_VARIABLE(S)`` constants, string literals that look like provider variables, and
    literal names passed to ``.get()``/``getenv()`` or used as ``environ[...]`` keys."""
    module = importlib.import_module(f"wheelwise.providers.{module_name}")
    names: set[str] = set()
    for attribute, value in vars(module).items():
        if attribute.endswith("_VARIABLE") and isinstance(value, str):
            names.add(value)
        elif attribute.endswith("_VARIABLES") and isinstance(value, tuple):
            names.update(value)
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    in_fstrings = {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    for node in ast.walk(tree):
        if id(node) not in in_fstrings and PROVIDER_VARIABLE.fullmatch(_text(node)):
            names.add(_text(node))
        key = ""
        if isinstance(node, ast.Call) and node.args and _called(node) in ("get", "getenv"):
            key = _text(node.args[0])
        elif isinstance(node, ast.Subscript) and _called(node) in ("environ", "variables"):
            key = _text(node.slice)
        if ENVIRONMENT_NAME.fullmatch(key):
            names.add(key)
    return names


def test_fingerprint_covers_every_provider_variable() -> None:
    """A variable that changes a provider's answer but not the fingerprint would make
    the warm ``wheelwise detect`` path print a stale answer."""
    read = {name: module for module in PROVIDER_MODULES for name in variables_named_by(module)}
    # The scan works: it finds variables of every kind of provider.
    assert {"WHEELWISE_NVIDIA_DRIVER", "AMD_VARIANT_PROVIDER_FORCE_GFX_ARCH"} <= set(read)
    assert {"ROCM_PATH", _cpu.OVERRIDE_VARIABLE, "WINDIR"} <= set(read)
    missing = {
        name: module
        for name, module in read.items()
        if name not in OVERRIDE_VARIABLES and name not in NOT_PROVIDER_INPUTS
    }
    assert not missing, f"add to OVERRIDE_VARIABLES in fingerprint.py: {missing}"


def test_fingerprint_reads_what_the_providers_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The files and folders the built-in providers detect from on Linux, by default."""
    read: list[str] = []
    listed: list[str] = []
    nvidia = NvidiaProvider(Environment({}))
    amd = AMDProvider(Environment({}))
    intel = IntelProvider(Environment({}))

    def fake_read(path: str, limit: int = 0) -> str:
        read.append(path)
        return "0x8086" if path.endswith("vendor") else ""

    def fake_listdir(path: str) -> list[str]:
        listed.append(path)
        return ["1"] if path in (amd.kfd_nodes, intel.pci_devices) else []

    monkeypatch.setattr(fingerprint, "_read", fake_read)
    monkeypatch.setattr(fingerprint, "_listdir", fake_listdir)
    machine_fingerprint("1.0")
    assert _cpu.CPUINFO in read
    assert os.path.join(nvidia.proc_dir, "version") in read
    assert os.path.join(nvidia.proc_dir, "gpus") in listed
    assert amd._version_file() in read
    assert amd.kfd_nodes in listed
    assert os.path.join(amd.kfd_nodes, "1", "properties") in read
    assert intel.pci_devices in listed
    assert os.path.join(intel.pci_devices, "1", "vendor") in read
    assert os.path.join(intel.pci_devices, "1", "class") in read
    for node in (*nvidia.device_nodes, amd.kfd_device):
        assert os.path.dirname(node) in listed
        assert os.path.basename(node).startswith(fingerprint._DEVICE_PREFIXES)


def test_fingerprint_follows_a_sysctl_dump(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # WHEELWISE_CPUINFO may name a macOS sysctl dump: its feature lines count too.
    dump = tmp_path / "sysctl"
    text = (
        "machdep.cpu.brand_string: Apple M2\n"
        "hw.optional.arm64: 1\n"
        "hw.optional.arm.FEAT_BF16: 1\n"
        "hw.logicalcpu: 8\n"
    )
    dump.write_text(text)
    monkeypatch.setenv("WHEELWISE_CPUINFO", str(dump))
    base = machine_fingerprint("1.0")
    for changed in (
        text.replace("FEAT_BF16: 1", "FEAT_BF16: 0"),
        text.replace("Apple M2", "Apple M1"),
        text.replace("hw.logicalcpu: 8", "hw.logicalcpu: 10"),
        text + "machdep.cpu.features: FPU VME SSE SSE2\n",
        text + "sysctl.proc_translated: 1\n",
    ):
        dump.write_text(changed)
        assert machine_fingerprint("1.0") != base, changed
    dump.write_text(text)
    assert machine_fingerprint("1.0") == base


def test_fingerprint_follows_intel_display_controllers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    devices = tmp_path / "devices"

    def function(address: str, vendor: str, pci_class: str, device: str) -> None:
        folder = devices / address
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in (("vendor", vendor), ("class", pci_class), ("device", device)):
            (folder / name).write_text(value + "\n")

    function("0000:00:00.0", "0x8086", "0x060000", "0x0d57")  # a host bridge: no GPU
    function("0000:17:00.0", "0x10de", "0x030200", "0x2330")
    assert pci_devices_of(str(devices), ("0x8086",)) == []
    function("0000:03:00.0", "0x8086", "0x030000", "0x56a0")
    assert pci_devices_of(str(devices), ("0x8086",)) == ["0000:03:00.0 0x030000 0x56a0"]
    # The machine's fingerprint reads the same lines from the real folder.
    monkeypatch.setattr(fingerprint, "_PCI_DEVICES", str(devices))
    arc = machine_fingerprint("1.0")
    function("0000:03:00.0", "0x8086", "0x030000", "0x56a5")
    assert machine_fingerprint("1.0") != arc
    # An override replaces detection: the devices no longer count.
    monkeypatch.setenv("INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP", "12.55.8")
    forced = machine_fingerprint("1.0")
    function("0000:03:00.0", "0x8086", "0x030000", "0x56a0")
    assert machine_fingerprint("1.0") == forced


@pytest.mark.skipif(not hasattr(os, "uname"), reason="no os.uname")
def test_fingerprint_follows_the_machine_name(monkeypatch: pytest.MonkeyPatch) -> None:
    # The CPU providers ask uname whether they apply: an x86-64 Python under Rosetta 2
    # (or linux32) must not reuse the native interpreter's answer.
    real = os.uname()
    base = machine_fingerprint("1.0")

    def with_uname(**changes: str) -> str:
        fields = {**{name: getattr(real, name) for name in UNAME_FIELDS}, **changes}
        fake = os.uname_result([fields[name] for name in UNAME_FIELDS])
        monkeypatch.setattr(os, "uname", lambda: fake)
        return machine_fingerprint("1.0")

    assert with_uname(machine="i686") != base
    assert with_uname(release="0.0-other") != base  # macOS: sysctl keys come and go
    assert with_uname(nodename="another-host") == base  # the host name is no input


def test_store_and_load() -> None:
    assert cache.load("fp") is None
    cache.store("fp\nwith lines", '{"system": {}}\n')
    assert cache.load("fp\nwith lines") == '{"system": {}}\n'
    assert cache.load("fp\nwith line") is None
    assert cache.load("other") is None
    # No temporary files are left behind.
    assert os.listdir(os.path.dirname(cache.cache_path())) == ["detect.cache"]


def test_stale_entries_are_ignored() -> None:
    cache.store("fp", "{}")
    old = time.time() - cache.MAX_AGE_SECONDS - 60
    os.utime(cache.cache_path(), (old, old))
    assert cache.load("fp") is None


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"garbage",
        b"wheelwise-detect-cache 1 x\nfp{}",
        b"\xff\xfe\x00",
        b"other-header 1 2\nfp{}",
    ],
)
def test_damaged_cache_files_are_misses(content: bytes) -> None:
    Path(cache.cache_path()).parent.mkdir(parents=True)
    Path(cache.cache_path()).write_bytes(content)
    assert cache.load("fp") is None


def test_unwritable_cache_is_skipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(blocker / "cache"))
    cache.store("fp", "{}")  # must not raise
    assert cache.load("fp") is None


@pytest.mark.parametrize("warm", [False, True])
def test_detect_imports_neither_typing_nor_dataclasses(tmp_path: Path, warm: bool) -> None:
    """Start-up time is a feature (docs/architecture.md): the modules `wheelwise
    detect --json` runs, cold or warm, import neither (each costs milliseconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WHEELWISE_")}
    env["WHEELWISE_CACHE_DIR"] = str(tmp_path)
    argv = [sys.executable, "-X", "importtime", "-m", "wheelwise", "detect", "--json"]
    if warm:
        subprocess.run(argv, env=env, capture_output=True, check=True)
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert "typing" not in imported
    assert "dataclasses" not in imported


def test_config_path_matches_platformdirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    folder = platformdirs.user_config_dir("wheelwise", appauthor=False)
    assert config_path() == Path(folder) / "config.toml"
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        folder = platformdirs.user_config_dir("wheelwise", appauthor=False)
        assert config_path() == Path(folder) / "config.toml"
        assert config_path() == tmp_path / "xdg" / "wheelwise" / "config.toml"
        monkeypatch.setenv("XDG_CONFIG_HOME", "  ")  # blank: the default, as platformdirs
        folder = platformdirs.user_config_dir("wheelwise", appauthor=False)
        assert config_path() == Path(folder) / "config.toml"
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "mine.toml"))
    assert config_path() == tmp_path / "mine.toml"
