"""``--torch-backend``: the projects of the PyTorch ecosystem from PyTorch's own
indexes (``https://download.pytorch.org/whl/BACKEND``), as uv's ``--torch-backend``
takes them, for the PyTorch releases that are not published as variant wheels.

BACKEND is ``cpu``, ``cuNNN``, ``rocmX.Y`` or ``xpu``; ``auto`` reads the machine's
detected variant properties (or ``--system``'s: a machine other than this one) and
gives every backend it can run, best first, then ``cpu``:

* NVIDIA (``nvidia :: cuda_version_lower_bound``, whose highest value is the CUDA
  version the driver supports): the CUDA backends up to that version, newest first;
  then, within its major version, the newer ones, which CUDA's minor-version
  compatibility lets run (uv lists them first: a release built for CUDA 12.9 runs on
  a CUDA 12.8 driver, except for code the driver must compile from PTX, which the
  backend of the driver's own version avoids);
* AMD (``amd :: gfx_arch``): the ROCm backends whose PyTorch builds hold kernels
  for one of the GPU architectures;
* Intel (``intel :: device_ip``, known Intel GPUs only): ``xpu``.

CUDA and ROCm are Linux's (CUDA Windows' too); elsewhere ``auto`` gives ``cpu``.
For each project in :data:`TORCH_PROJECTS`, the first of the backend indexes that
has the project is its only source (uv's ``first-index``); the other projects come
from the usual sources.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wheelwise.errors import WheelwiseError

__all__ = [
    "AUTO",
    "BACKENDS",
    "PYTORCH_INDEX",
    "TORCH_PROJECTS",
    "TorchBackendError",
    "backends_for",
    "parse_backend",
]

AUTO = "auto"
CPU = "cpu"
XPU = "xpu"
PYTORCH_INDEX = "https://download.pytorch.org/whl"

# The projects PyTorch's indexes serve for a backend, as uv routes them.
TORCH_PROJECTS = frozenset(
    {
        "torch",
        "torch-model-archiver",
        "torch-tb-profiler",
        "torcharrow",
        "torchaudio",
        "torchcsprng",
        "torchdata",
        "torchdistx",
        "torchserve",
        "torchtext",
        "torchvision",
        "triton",
        "pytorch-triton",
        "pytorch-triton-rocm",
        "pytorch-triton-xpu",
    }
)

# PyTorch's CUDA backends, newest first.
CUDA_BACKENDS = (
    (13, 2), (13, 0),
    (12, 9), (12, 8), (12, 6), (12, 5), (12, 4), (12, 3), (12, 2), (12, 1), (12, 0),
    (11, 8), (11, 7), (11, 6), (11, 5), (11, 4), (11, 3), (11, 2), (11, 1), (11, 0),
    (10, 2), (10, 1), (10, 0), (9, 2), (9, 1), (9, 0), (8, 0),
)  # fmt: skip

_CDNA = ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942")
_RDNA = ("gfx1030", "gfx1100")
# PyTorch's ROCm backends, newest first, and the GPU architectures their builds
# hold kernels for (the earlier ones, before ROCm 6.0, are taken by name only).
ROCM_BACKENDS: Mapping[str, frozenset[str]] = {
    "rocm7.2": frozenset({*_CDNA, "gfx950", *_RDNA, "gfx1101", "gfx1102", "gfx1150",
                          "gfx1151", "gfx1200", "gfx1201"}),
    "rocm7.1": frozenset({*_CDNA, "gfx950", *_RDNA, "gfx1101", "gfx1102", "gfx1200", "gfx1201"}),
    "rocm7.0": frozenset({*_CDNA, "gfx950", *_RDNA, "gfx1101", "gfx1102", "gfx1200", "gfx1201"}),
    "rocm6.4": frozenset({*_CDNA, *_RDNA, "gfx1101", "gfx1102", "gfx1200", "gfx1201"}),
    "rocm6.3": frozenset({*_CDNA, *_RDNA, "gfx1101", "gfx1102", "gfx1200", "gfx1201"}),
    "rocm6.2.4": frozenset({*_CDNA, *_RDNA, "gfx1101", "gfx1102", "gfx1200", "gfx1201"}),
    "rocm6.2": frozenset({*_CDNA, *_RDNA}),
    "rocm6.1": frozenset({*_CDNA, *_RDNA, "gfx1101"}),
    "rocm6.0": frozenset({*_CDNA, *_RDNA}),
    "rocm5.7": frozenset(), "rocm5.6": frozenset(), "rocm5.5": frozenset(),
    "rocm5.4.2": frozenset(), "rocm5.4": frozenset(), "rocm5.3": frozenset(),
    "rocm5.2": frozenset(), "rocm5.1.1": frozenset(), "rocm4.2": frozenset(),
    "rocm4.1": frozenset(), "rocm4.0.1": frozenset(),
}  # fmt: skip

BACKENDS = (
    CPU,
    *(f"cu{major}{minor}" for major, minor in CUDA_BACKENDS),
    *ROCM_BACKENDS,
    XPU,
)


class TorchBackendError(ValueError, WheelwiseError):
    """A ``--torch-backend`` value that names no backend."""


def parse_backend(text: str) -> str:
    """*text* as ``--torch-backend`` takes it: ``auto`` or one of :data:`BACKENDS`."""
    value = text.strip().lower()
    if value == AUTO or value in BACKENDS:
        return value
    raise TorchBackendError(
        f"{text!r} is no PyTorch backend: give auto, cpu, xpu, a CUDA one (cu130, cu128, "
        "cu126, ...) or a ROCm one (rocm7.2, rocm6.4, ...)"
    )


def backends_for(
    mode: str, supported: Mapping[str, Mapping[str, Sequence[str]]], sys_platform: str
) -> list[str]:
    """The backends *mode* gives, best first: itself, or for ``auto`` those the
    machine whose variant properties are *supported* (namespace -> feature ->
    values) can run, on *sys_platform* (``linux``, ``win32``, ...)."""
    if mode != AUTO:
        return [mode]
    nvidia = supported.get("nvidia", {})
    driver = _highest_version(nvidia.get("cuda_version_lower_bound", ()))
    if driver is not None and sys_platform in ("linux", "win32"):
        return [*_cuda_backends(driver), CPU]
    architectures = set(supported.get("amd", {}).get("gfx_arch", ()))
    if architectures and sys_platform == "linux":
        rocm = [name for name, known in ROCM_BACKENDS.items() if known & architectures]
        return [*rocm, CPU]
    if supported.get("intel", {}).get("device_ip") and sys_platform == "linux":
        return [XPU]
    return [CPU]


def _cuda_backends(driver: tuple[int, int]) -> list[str]:
    """The CUDA backends a driver of CUDA version *driver* runs: up to its version,
    newest first, then the newer minors of its major (minor-version compatibility
    from CUDA 11 on), oldest first."""
    major, _ = driver
    native = [cuda for cuda in CUDA_BACKENDS if cuda <= driver]
    compatible = [cuda for cuda in CUDA_BACKENDS if cuda > driver and cuda[0] == major >= 11]
    return [f"cu{a}{b}" for a, b in [*native, *reversed(compatible)]]


def _highest_version(values: Sequence[str]) -> tuple[int, int] | None:
    found: list[tuple[int, int]] = []
    for value in values:
        parts = value.split(".")
        if 1 <= len(parts) <= 2 and all(part.isdigit() for part in parts):
            found.append((int(parts[0]), int(parts[1]) if len(parts) == 2 else 0))
    return max(found) if found else None
