"""Non-variant GPU builds known by name or local version: which runtime (CUDA, ROCm,
or none) an installed distribution was built for, and which version of it.

Publishers encode the build in the name or the version, never in metadata a tool
could read:

* PyTorch: a local version, ``torch 2.7.0+cu128`` (CUDA 12.8), ``+rocm6.2``, ``+cpu``
  (https://pytorch.org/get-started/previous-versions/); torchvision and torchaudio
  follow torch;
* CuPy: ``cupy-cuda12x`` (any CUDA 12), ``cupy-cuda117`` (CUDA 11.7, old releases),
  ``cupy-rocm-6-0`` (https://docs.cupy.dev/en/stable/install.html);
* JAX: the ``jax-cuda12-plugin`` / ``jax-cuda12-pjrt`` plugins, and ``jaxlib`` with a
  ``+cuda12.cudnn89`` local version in releases before the plugins;
* NVIDIA's CUDA libraries (``nvidia-cublas-cu12``), RAPIDS (``cudf-cu12``) and others:
  a ``-cuNN`` suffix names the CUDA major version. The libraries that ship with the
  CUDA toolkit carry its version (``nvidia-cuda-runtime-cu12 12.8.90`` is CUDA 12.8),
  and from CUDA 13 they drop the suffix (``nvidia-cuda-runtime 13.0.96``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CPU", "CUDA", "ROCM", "GpuBuild", "recognize"]

CUDA = "cuda"
ROCM = "rocm"
CPU = "cpu"

# Build families: which fix applies (see wheelwise.doctor.gpu_fit).
TORCH = "torch"
CUPY = "cupy"
JAX = "jax"
NVIDIA_LIBRARIES = "nvidia-libraries"
SUFFIXED = "suffixed"

TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio"})

# NVIDIA's wheels of CUDA toolkit components, whose version is the toolkit's own
# (the CUDA 12.8 runtime is 12.8.90; cuBLAS, cuFFT or cuDNN have versions of their
# own).
TOOLKIT_COMPONENTS = frozenset(
    {
        "nvidia-cuda-runtime",
        "nvidia-cuda-nvrtc",
        "nvidia-cuda-cupti",
        "nvidia-cuda-nvcc",
        "nvidia-cuda-cccl",
        "nvidia-cuda-nvvm",
        "nvidia-cuda-crt",
        "nvidia-cuda-sanitizer-api",
        "nvidia-cuda-opencl",
        "nvidia-nvjitlink",
        "nvidia-nvtx",
    }
)
# The first CUDA major whose library wheels have no -cuNN suffix.
UNSUFFIXED_FROM = 13

_TORCH_CUDA = re.compile(r"cu(\d{2,3})")
_TORCH_ROCM = re.compile(r"rocm(\d+)\.(\d+)(?:\.\d+)*")
_JAXLIB_CUDA = re.compile(r"cuda(\d+)(?:[._].*)?")
_JAX_PLUGIN = re.compile(r"jax-cuda(\d+)-(?:plugin|pjrt)")
_CUPY_CUDA_ANY = re.compile(r"cupy-cuda(\d+)x")
_CUPY_CUDA = re.compile(r"cupy-cuda(\d)(\d)|cupy-cuda(\d\d)(\d)")
_CUPY_ROCM = re.compile(r"cupy-rocm-(\d+)-(\d+)")
_SUFFIX = re.compile(r"(.+)-cu(\d{2})")
_RELEASE = re.compile(r"(\d+)\.(\d+)")


@dataclass(frozen=True)
class GpuBuild:
    """An installed distribution built for one runtime.

    *expects*: the runtime's (major, minor) version the build needs; minor is -1 when
    only the major is known (``cupy-cuda12x``); None for a CPU build."""

    name: str
    version: str
    runtime: str
    expects: tuple[int, int] | None
    family: str

    @property
    def expects_text(self) -> str:
        """``12.8``, ``12`` (major only), or an empty string (CPU)."""
        if self.expects is None:
            return ""
        major, minor = self.expects
        return f"{major}.{minor}" if minor >= 0 else str(major)

    @property
    def label(self) -> str:
        """``torch 2.7.0+cu128``."""
        return f"{self.name} {self.version}"


def recognize(name: str, version: str) -> GpuBuild | None:
    """The build *name* *version* (a normalized name) is, if its name or local version
    says; None for any other distribution."""
    found = _by_name(name, version) if name not in TORCH_FAMILY else None
    if found is None and "+" in version:
        found = _by_local_version(name, version)
    if found is None:
        return None
    runtime, expects, family = found
    return GpuBuild(name, version, runtime, expects, family)


_Found = tuple[str, tuple[int, int] | None, str]


def _by_local_version(name: str, version: str) -> _Found | None:
    local = version.partition("+")[2].lower()
    if name in TORCH_FAMILY:
        match = _TORCH_CUDA.fullmatch(local)
        if match:
            digits = match.group(1)
            return CUDA, (int(digits[:-1]), int(digits[-1])), TORCH
        match = _TORCH_ROCM.fullmatch(local)
        if match:
            return ROCM, (int(match.group(1)), int(match.group(2))), TORCH
        if local == CPU or local.startswith(CPU + "."):
            return CPU, None, TORCH
        return None
    if name == "jaxlib":
        match = _JAXLIB_CUDA.fullmatch(local)
        if match:
            return CUDA, (int(match.group(1)), -1), JAX
    return None


def _by_name(name: str, version: str) -> _Found | None:
    match = _JAX_PLUGIN.fullmatch(name)
    if match:
        return CUDA, (int(match.group(1)), -1), JAX
    if name.startswith("cupy-"):
        return _cupy(name)
    match = _SUFFIX.fullmatch(name)
    if match:
        base, major = match.group(1), int(match.group(2))
        if base.startswith("nvidia-"):
            return CUDA, (major, _toolkit_minor(base, major, version)), NVIDIA_LIBRARIES
        return CUDA, (major, -1), SUFFIXED
    if name in TOOLKIT_COMPONENTS:
        release = _release(version)
        if release is not None and release[0] >= UNSUFFIXED_FROM:
            return CUDA, release, NVIDIA_LIBRARIES
    return None


def _cupy(name: str) -> _Found | None:
    match = _CUPY_CUDA_ANY.fullmatch(name)
    if match:
        return CUDA, (int(match.group(1)), -1), CUPY
    match = _CUPY_CUDA.fullmatch(name)
    if match:
        major, minor = match.group(1, 2) if match.group(1) else match.group(3, 4)
        return CUDA, (int(major), int(minor)), CUPY
    match = _CUPY_ROCM.fullmatch(name)
    if match:
        return ROCM, (int(match.group(1)), int(match.group(2))), CUPY
    return None


def _toolkit_minor(base: str, major: int, version: str) -> int:
    """The CUDA minor version a toolkit component's own version gives; -1 when it
    does not (another library, or a version of another major)."""
    if base not in TOOLKIT_COMPONENTS:
        return -1
    release = _release(version)
    return release[1] if release is not None and release[0] == major else -1


def _release(version: str) -> tuple[int, int] | None:
    match = _RELEASE.match(version)
    return (int(match.group(1)), int(match.group(2))) if match else None
