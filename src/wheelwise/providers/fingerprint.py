"""A cheap description of everything built-in detection depends on.

If the fingerprint is unchanged, the cached detection result still holds. It is
built from small reads only (environment overrides, ``uname``, the stable lines
of /proc/cpuinfo, driver version files, device node names, the PCI ids of Intel
display controllers, Huawei NPUs and Google TPUs) and imports nothing but
``os``: the warm ``wheelwise detect`` path runs it before anything else. Built-in
providers keep no fingerprint code of their own: every input they read must be
covered here (``tests/test_detect_cache.py`` checks their environment variables).
"""

from __future__ import annotations

import os

# Every variable a built-in provider's answer depends on.
OVERRIDE_VARIABLES = (
    "WHEELWISE_CPUINFO",
    "WHEELWISE_NVIDIA_DRIVER",
    "WHEELWISE_NVIDIA_GPUS",
    "WHEELWISE_AMD_ROCM",
    "WHEELWISE_AMD_GFX",
    "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION",
    "NV_VARIANT_PROVIDER_FORCE_SM_ARCH",
    "AMD_VARIANT_PROVIDER_FORCE_ROCM_VERSION",
    "AMD_VARIANT_PROVIDER_FORCE_GFX_ARCH",
    "WHEELWISE_INTEL_DEVICE_IP",
    "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP",
    "WHEELWISE_ASCEND_NPU_TYPE",
    "ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE",
    "WHEELWISE_TPU_PRESENT",
    "TPU_VARIANT_PROVIDER_FORCE_PRESENT",
    "ROCM_PATH",
    # These change which GPUs the driver libraries report.
    "CUDA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
)
# Lines of a CPU dump that describe the CPU; the rest (MHz, bogomips) changes all the
# time. The first six are /proc/cpuinfo keys; WHEELWISE_CPUINFO may also name a macOS
# sysctl dump, which the CPU providers read through its machdep.cpu.*, hw.optional.*,
# hw.logicalcpu and sysctl.proc_translated (Rosetta 2) lines.
_CPUINFO_KEYS = (
    "vendor_id",
    "model name",
    "flags",
    "Features",
    "CPU implementer",
    "CPU part",
    "machdep.cpu.",
    "hw.optional.",
    "hw.logicalcpu",
    "sysctl.proc_translated",
)
_DEVICE_PREFIXES = ("nvidia", "dxg", "kfd", "davinci")
_PCI_DEVICES = "/sys/bus/pci/devices"
_INTEL = "0x8086"
# PCI vendor -> the variables that replace detection of its devices.
_PCI_VENDORS = {
    _INTEL: ("WHEELWISE_INTEL_DEVICE_IP", "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP"),
    "0x19e5": ("WHEELWISE_ASCEND_NPU_TYPE", "ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE"),
    "0x1ae0": ("WHEELWISE_TPU_PRESENT", "TPU_VARIANT_PROVIDER_FORCE_PRESENT"),
}


def _read(path: str, limit: int = 1 << 20) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def cpuinfo_identity(text: str) -> str:
    """The distinct descriptive lines of a cpuinfo dump, in first-seen order."""
    seen: dict[str, None] = {}
    for line in text.splitlines():
        if line.startswith(_CPUINFO_KEYS):
            seen[line] = None
    return "\n".join(seen)


def machine_fingerprint(version: str) -> str:
    """Everything the built-in providers' answers depend on, as one string."""
    env = os.environ
    parts = [f"wheelwise {version}"]
    if hasattr(os, "uname"):
        # The CPU providers decide from the machine name whether they apply (an x86-64
        # Python under Rosetta 2 or linux32 shares the cache of the native one), and
        # on macOS the CPU is read through sysctl, whose keys change with the release.
        uname = os.uname()
        parts.append(f"{uname.sysname} {uname.release} {uname.machine}")
    parts += [f"{name}={env.get(name, '')}" for name in OVERRIDE_VARIABLES]
    parts.append(cpuinfo_identity(_read(env.get("WHEELWISE_CPUINFO") or "/proc/cpuinfo")))
    parts.append(_read("/proc/driver/nvidia/version", 4096))
    parts.append(" ".join(_listdir("/proc/driver/nvidia/gpus")))
    rocm = env.get("ROCM_PATH") or "/opt/rocm"
    parts.append(_read(os.path.join(rocm, ".info", "version"), 256))
    parts.append(" ".join(d for d in _listdir("/dev") if d.startswith(_DEVICE_PREFIXES)))
    nodes = "/sys/class/kfd/kfd/topology/nodes"
    for node in _listdir(nodes):
        for line in _read(os.path.join(nodes, node, "properties"), 8192).splitlines():
            if line.startswith("gfx_target_version"):
                parts.append(f"{node} {line}")
    # Intel GPUs (intel), Huawei NPUs (ascend), Google TPUs (tpu): one scan of the
    # PCI devices, for the vendors no override answers for.
    vendors = tuple(
        vendor for vendor, names in _PCI_VENDORS.items() if not any(env.get(n) for n in names)
    )
    if vendors:
        parts += pci_devices_of(_PCI_DEVICES, vendors)
    return "\n".join(parts)


def pci_devices_of(folder: str, vendors: tuple[str, ...]) -> list[str]:
    """One line per device of one of *vendors* (``"0x19e5"``) in the sysfs PCI *folder*:
    its address, vendor and device id, and for Intel its class (the intel provider
    reads display controllers only)."""
    lines = []
    for address in _listdir(folder)[:4096]:
        device = os.path.join(folder, address)
        vendor = _read(os.path.join(device, "vendor"), 64).strip()
        if vendor not in vendors:
            continue
        pci_id = _read(os.path.join(device, "device"), 64).strip()
        if vendor == _INTEL:
            pci_class = _read(os.path.join(device, "class"), 64).strip()
            if pci_class.startswith("0x03"):
                lines.append(f"{address} {pci_class} {pci_id}")
        else:
            lines.append(f"{address} {vendor} {pci_id}")
    return lines
