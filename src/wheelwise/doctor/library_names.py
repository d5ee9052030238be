"""The CUDA and ROCm user-space libraries by file name: which names belong to them,
and what a name says of the SONAME and version (``libcudart.so.12.4.127``: the
``libcudart`` library, looked up as ``libcudart.so.12``, version 12.4.127).

Driver libraries (``libcuda``, ``libnvidia-ml``) are not among them: they come with
the driver, not with an environment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "LibraryName",
    "cuda_major_of_distribution",
    "cupy_build",
    "parse_library_name",
    "version_key",
]

# Name stems (before ".so") of the libraries doctor reports, lower-cased; a stem
# matches when it starts with one (libcudnn_ops, libcublasLt, libnpp_c...).
_PREFIXES = (
    "libcudart",
    "libcublas",
    "libcudnn",
    "libnccl",
    "libnvrtc",
    "libnvjitlink",
    "libcufft",
    "libcurand",
    "libcusolver",
    "libcusparse",
    "libcupti",
    "libnvtoolsext",
    "libcufile",
    "libnvjpeg",
    "libnpp",
    "libnvshmem",
    "libnvblas",
    "libcutensor",
    "libamdhip64",
    "libhiprtc",
    "libhipblas",
    "libhipfft",
    "libhiprand",
    "libhipsolver",
    "libhipsparse",
    "librocblas",
    "librocfft",
    "librocrand",
    "librocsolver",
    "librocsparse",
    "libmiopen",
    "librccl",
    "libhsa-runtime64",
    "libroctx64",
)
# auditwheel renames the libraries it bundles (libcudart-d0da41ae.so.11.0): private
# copies no other package looks up.
_BUNDLED = re.compile(r".*-[0-9a-f]{8}")
_DOTTED_NUMBERS = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9}){0,7}")
_NAME = re.compile(r"(?P<stem>[^/]+?)\.so(?P<suffix>(?:\.[0-9]+)*)")


@dataclass(frozen=True)
class LibraryName:
    """What a library file's name says."""

    stem: str
    """``libcudart``: the library, whatever its version."""
    version: tuple[int, ...]
    """The numbers after ``.so`` (``(12, 4, 127)``; ``()`` for ``libcudart.so``)."""

    @property
    def soname_guess(self) -> str | None:
        """The name the loader looks it up by, when the file has no ``DT_SONAME``:
        ``.so`` and the major version (None for a bare ``libcudart.so``)."""
        return f"{self.stem}.so.{self.version[0]}" if self.version else None


def parse_library_name(filename: str) -> LibraryName | None:
    """The CUDA/ROCm library *filename* names, or None for any other file."""
    match = _NAME.fullmatch(filename)
    if match is None:
        return None
    stem = match.group("stem")
    lowered = stem.lower()
    if not lowered.startswith(_PREFIXES) or _BUNDLED.fullmatch(lowered):
        return None
    suffix = match.group("suffix")
    try:
        version = tuple(int(part) for part in suffix.split(".")[1:]) if suffix else ()
    except ValueError:
        return None
    if len(version) > 6:
        return None
    return LibraryName(stem, version)


def version_key(text: str) -> tuple[int, ...] | None:
    """``"12.4.127"`` as ``(12, 4, 127)``; None when it is not dotted numbers."""
    if not _DOTTED_NUMBERS.fullmatch(text):
        return None
    return tuple(int(part) for part in text.split("."))


_CUDA_SUFFIX = re.compile(r"nvidia-.+-cu(?P<major>[0-9]{2,3})")
_CUPY = re.compile(r"cupy-(?:cuda(?P<digits>[0-9]{2,3})(?P<x>x?)|(?P<rocm>rocm-[0-9-]+))")


def cuda_major_of_distribution(name: str) -> int | None:
    """The CUDA major an ``nvidia-*-cuNN`` distribution is built for (from its
    normalized name); None for any other name."""
    match = _CUDA_SUFFIX.fullmatch(name)
    return int(match.group("major")) if match else None


def cupy_build(name: str) -> str | None:
    """What a CuPy binary distribution is built for: ``"CUDA 12"`` for
    ``cupy-cuda12x``, ``"CUDA 11"`` for ``cupy-cuda117``, ``"CUDA 10"`` for
    ``cupy-cuda102``, ``"ROCm 5-0"`` for ``cupy-rocm-5-0``; None for other names."""
    match = _CUPY.fullmatch(name)
    if match is None:
        return None
    if match.group("rocm"):
        return "ROCm " + match.group("rocm")[len("rocm-") :]
    digits = match.group("digits")
    # cupy-cuda12x names a major; cupy-cuda117 a major and a minor digit.
    major = digits if match.group("x") else digits[:-1]
    return f"CUDA {int(major)}"
