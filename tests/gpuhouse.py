"""The GPU demo wheelhouse: ``gpukit`` 1.0 in many builds, and a simulated machine.

``gpukit`` 1.0 has a non-variant fallback and the variants ``null``, ``cu126``,
``cu128``, ``cu130`` and ``x86_64_v3``; ``app`` depends on gpukit; ``cudart`` is
required by the CUDA builds of gpukit only, through a variant marker. Each wheel's
module says which build it is (``gpukit.VARIANT``). :func:`machine` gives the
providers' environment overrides of a simulated machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexkit import demo_wheel
from installkit import WHEEL

DATA = Path(__file__).parent / "data" / "cpuinfo"
HASWELL = DATA / "linux-rhel7-haswell"
K10 = DATA / "linux-scientific7-k10"
NAMESPACES = ["nvidia", "x86_64"]


def sm(*archs: int) -> list[str]:
    return [f"{a}_real" for a in archs]


CUDA = {
    "cu126": ("12.6", sm(50, 60, 70, 75, 80, 86, 89, 90)),
    "cu128": ("12.8", sm(70, 75, 80, 86, 89, 90, 100, 120)),
    "cu130": ("13.0", sm(75, 80, 86, 89, 90, 100, 120)),
}


def metadata_member(name: str, version: str, requires: list[str]) -> dict[str, bytes]:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    return {f"{name}-{version}.dist-info/METADATA": ("\n".join(lines) + "\n").encode()}


GATED = ['cudart; "nvidia" in variant_namespaces']


def wheel(directory: Path, filename: str, *args: Any, **kwargs: Any) -> Path:
    """demo_wheel with a Tag line in WHEEL (``pip check`` wants one)."""
    name, version = filename.split("-")[:2]
    members = {f"{name}-{version}.dist-info/WHEEL": WHEEL, **kwargs.pop("extra_members", {})}
    return demo_wheel(directory, filename, *args, extra_members=members, **kwargs)


def demo_house(directory: Path) -> None:
    directory.mkdir(parents=True)
    wheel(directory, "gpukit-1.0-py3-none-any.whl")
    wheel(directory, "gpukit-1.0-py3-none-any-null.whl", "null", {}, namespaces=NAMESPACES)
    for label, (bound, archs) in CUDA.items():
        properties = {"nvidia": {"cuda_version_lower_bound": [bound], "sm_arch": archs}}
        wheel(
            directory,
            f"gpukit-1.0-py3-none-any-{label}.whl",
            label,
            properties,
            namespaces=NAMESPACES,
            extra_members=metadata_member("gpukit", "1.0", GATED),
        )
    wheel(
        directory,
        "gpukit-1.0-py3-none-any-x86_64_v3.whl",
        "x86_64_v3",
        {"x86_64": {"level": ["v3"]}},
        namespaces=NAMESPACES,
    )
    wheel(directory, "cudart-1.0-py3-none-any.whl")
    wheel(
        directory,
        "app-1.0-py3-none-any.whl",
        extra_members=metadata_member("app", "1.0", ["gpukit>=1.0"]),
    )


def machine(
    cpu: Path = K10, driver: str = "none", gpus: str | None = None, intel: str = "none"
) -> dict[str, str]:
    env = {
        "WHEELWISE_CPUINFO": str(cpu),
        "WHEELWISE_NVIDIA_DRIVER": driver,
        "WHEELWISE_AMD_ROCM": "none",
        "WHEELWISE_AMD_GFX": "none",
        "WHEELWISE_INTEL_DEVICE_IP": intel,
        "WHEELWISE_ASCEND_NPU_TYPE": "none",
        "WHEELWISE_TPU_PRESENT": "none",
    }
    if gpus is not None:
        env["WHEELWISE_NVIDIA_GPUS"] = gpus
    return env
