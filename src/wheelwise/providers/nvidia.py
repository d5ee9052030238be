"""The ``nvidia`` provider: CUDA driver version and GPU compute capabilities.

The vocabulary matches the reference ``nvidia-variant-provider`` so that published
wheels select correctly:

* ``cuda_version_lower_bound`` / ``cuda_version_upper_bound`` (single-value):
  ``"15.20"`` … ``"15.0"``, ``"15"``, … ``"11.0"``, ``"11"``.
* ``sm_arch`` (multi-value): ``"{major}{minor}_real"`` (SASS) and
  ``"{major}{minor}_virtual"`` (PTX) for compute capabilities 5.0 … 12.9.

Detection asks NVML (``libnvidia-ml``) first and the CUDA driver API (``libcuda``)
second, through :class:`NvidiaBackend` objects so that tests and simulations can
substitute any machine; environment variables override either answer before any
library is loaded. Unlike the reference, ``sm_arch`` covers *every* GPU: each
contributes the SASS targets it can run (same major, same or lower minor) and the
PTX targets it can JIT-compile (every architecture up to its own).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

from wheelwise.providers.base import (
    BuiltinProvider,
    Environment,
    FeatureConfig,
    Probe,
    ProviderUnavailable,
)

# Not `from typing import TYPE_CHECKING`: importing typing costs the detect path.
TYPE_CHECKING = False

# NvidiaBackend is a Protocol for the type checker only: importing typing at run
# time would slow the `wheelwise detect` path.
if TYPE_CHECKING:
    from typing import Any, Protocol

    class NvidiaBackend(Protocol):
        """One way of asking the machine (NVML, libcuda, a test fake).

        Both methods raise :class:`ProviderUnavailable` with a precise reason (library
        not found, initialisation failed with its error code and name, ...);
        ``compute_capabilities`` raises :class:`NoNvidiaGpu` when the driver reports
        zero GPUs. A backend may also expose ``skipped_gpus`` (a list of strings): GPUs
        left out of ``compute_capabilities()`` because their capability could not be
        read, for the report's detail.
        """

        name: str

        def driver_version(self) -> tuple[int, int]:
            """The CUDA driver API version, e.g. (12, 8)."""
            ...

        def compute_capabilities(self) -> list[tuple[int, int]]:
            """The compute capability of every GPU, in device order."""
            ...


LOWER_BOUND = "cuda_version_lower_bound"
UPPER_BOUND = "cuda_version_upper_bound"
SM_ARCH = "sm_arch"

DRIVER_VARIABLES = ("WHEELWISE_NVIDIA_DRIVER", "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION")
GPU_VARIABLES = ("WHEELWISE_NVIDIA_GPUS", "NV_VARIANT_PROVIDER_FORCE_SM_ARCH")

# The reference vocabulary: CUDA majors 15..11 with minors 20..0, then the bare major.
CUDA_MAJORS = range(15, 10, -1)
CUDA_MINORS = range(20, -1, -1)
# Compute capabilities 12.9 … 5.0; older GPUs cannot run any current CUDA build.
SM_MAJORS = range(12, 4, -1)
SM_MINORS = range(9, -1, -1)
MIN_CAPABILITY = (5, 0)
KERNEL_DEVICE_NODES = ("/dev/nvidiactl", "/dev/dxg")


def _cuda_versions() -> tuple[tuple[str, tuple[int, int]], ...]:
    """Every bound value with its sort key, best (highest) first; bare "M" sorts below "M.0"."""
    values: list[tuple[str, tuple[int, int]]] = []
    for major in CUDA_MAJORS:
        values += [(f"{major}.{minor}", (major, minor)) for minor in CUDA_MINORS]
        values.append((str(major), (major, -1)))
    return tuple(values)


CUDA_VERSIONS = _cuda_versions()
CUDA_VALUES = tuple(value for value, _ in CUDA_VERSIONS)
OLDEST_CUDA = (CUDA_MAJORS[-1], 0)
NEWEST_CUDA = (CUDA_MAJORS[0], CUDA_MINORS[0])
SM_CAPABILITIES = tuple((major, minor) for major in SM_MAJORS for minor in SM_MINORS)
SM_VALUES = tuple(f"{M}{m}_real" for M, m in SM_CAPABILITIES) + tuple(
    f"{M}{m}_virtual" for M, m in SM_CAPABILITIES
)
_KNOWN_SM = frozenset(SM_CAPABILITIES)
NEWEST_SM = SM_CAPABILITIES[0]


def format_version(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def lower_bounds(driver: tuple[int, int]) -> tuple[str, ...]:
    """Lower bounds a driver satisfies (every known version up to its own), best first."""
    return tuple(value for value, key in CUDA_VERSIONS if key <= driver)


def upper_bounds(driver: tuple[int, int]) -> tuple[str, ...]:
    """Upper bounds above the driver's version, in the reference order."""
    return tuple(value for value, key in CUDA_VERSIONS if key > driver)


def sm_arch_values(capabilities: Sequence[tuple[int, int]]) -> tuple[str, ...]:
    """``sm_arch`` values that run on at least one of *capabilities*, best first.

    SASS (``_real``) built for X.y runs on X.z for z >= y; PTX (``_virtual``) for
    X.y is JIT-compiled on any GPU of capability X.y or higher. All ``_real``
    values come first (a prebuilt binary beats a JIT), each group by architecture,
    highest first.
    """
    real: set[tuple[int, int]] = set()
    virtual: set[tuple[int, int]] = set()
    for major, minor in capabilities:
        real.update((major, k) for k in range(minor + 1) if (major, k) in _KNOWN_SM)
        virtual.update(cc for cc in SM_CAPABILITIES if cc <= (major, minor))
    return tuple(f"{M}{m}_real" for M, m in sorted(real, reverse=True)) + tuple(
        f"{M}{m}_virtual" for M, m in sorted(virtual, reverse=True)
    )


class NoNvidiaGpu(ProviderUnavailable):
    """The driver answered but reported no GPU."""


# ---------------------------------------------------------------------------------
# Real backends (ctypes). Libraries are loaded on first use, never at import.

_NVML_ERRORS = {
    1: "UNINITIALIZED",
    2: "INVALID_ARGUMENT",
    3: "NOT_SUPPORTED",
    4: "NO_PERMISSION",
    5: "ALREADY_INITIALIZED",
    6: "NOT_FOUND",
    7: "INSUFFICIENT_SIZE",
    8: "INSUFFICIENT_POWER",
    9: "DRIVER_NOT_LOADED",
    10: "TIMEOUT",
    11: "IRQ_ISSUE",
    12: "LIBRARY_NOT_FOUND",
    13: "FUNCTION_NOT_FOUND",
    14: "CORRUPTED_INFOROM",
    15: "GPU_IS_LOST",
    16: "RESET_REQUIRED",
    17: "OPERATING_SYSTEM",
    18: "LIB_RM_VERSION_MISMATCH",
    19: "IN_USE",
    20: "MEMORY",
    21: "NO_DATA",
    22: "VGPU_ECC_NOT_SUPPORTED",
    23: "INSUFFICIENT_RESOURCES",
    24: "FREQ_NOT_SUPPORTED",
    25: "ARGUMENT_VERSION_MISMATCH",
    26: "DEPRECATED",
    27: "NOT_READY",
    28: "GPU_NOT_FOUND",
    29: "INVALID_STATE",
    30: "RESET_TYPE_NOT_SUPPORTED",
    999: "UNKNOWN",
}
_CUDA_ERRORS = {
    1: "INVALID_VALUE",
    2: "OUT_OF_MEMORY",
    3: "NOT_INITIALIZED",
    4: "DEINITIALIZED",
    34: "STUB_LIBRARY",
    35: "INSUFFICIENT_DRIVER",
    36: "CALL_REQUIRES_NEWER_DRIVER",
    46: "DEVICE_UNAVAILABLE",
    100: "NO_DEVICE",
    101: "INVALID_DEVICE",
    102: "DEVICE_NOT_LICENSED",
    304: "OPERATING_SYSTEM",
    800: "NOT_PERMITTED",
    801: "NOT_SUPPORTED",
    802: "SYSTEM_NOT_READY",
    803: "SYSTEM_DRIVER_MISMATCH",
    804: "COMPAT_NOT_SUPPORTED_ON_DEVICE",
    999: "UNKNOWN",
}
CUDA_ERROR_NO_DEVICE = 100
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


def nvml_error(function: str, code: int) -> str:
    name = _NVML_ERRORS.get(code)
    return f"{function} failed: " + (f"NVML_ERROR_{name} ({code})" if name else f"error {code}")


def cuda_error(function: str, code: int) -> str:
    name = _CUDA_ERRORS.get(code)
    return f"{function} failed: " + (f"CUDA_ERROR_{name} ({code})" if name else f"error {code}")


def decode_driver_version(value: int) -> tuple[int, int]:
    """NVML / CUDA encode versions as 1000 * major + 10 * minor (12080 is 12.8)."""
    return value // 1000, (value % 1000) // 10


class _Answer:
    """What one query of a library found; each part is a value or a failure."""

    def __init__(self) -> None:
        self.version: tuple[int, int] | None = None
        self.version_error = ""
        self.capabilities: list[tuple[int, int]] | None = None
        self.gpu_error = ""
        self.no_gpu = False
        self.skipped: list[str] = []


class _LibraryBackend:
    """Shared plumbing: load the library once, query once, answer both questions."""

    name = ""

    def __init__(self, library: str | None = None) -> None:
        self.library = library
        self.skipped_gpus: list[str] = []
        self._answer: _Answer | None = None

    def candidates(self) -> list[str]:
        raise NotImplementedError

    def query(self, lib: Any) -> _Answer:
        raise NotImplementedError

    def _load(self) -> Any:
        import ctypes

        candidates = [self.library] if self.library else self.candidates()
        errors = []
        for path in candidates:
            try:
                return ctypes.CDLL(path)
            except OSError as exc:
                errors.append(f"{path} ({exc})" if str(exc) and path not in str(exc) else str(exc))
        raise ProviderUnavailable(f"cannot load {'; '.join(errors)}", self.name)

    def _get(self) -> _Answer:
        if self._answer is None:
            self._answer = self.query(self._load())
            self.skipped_gpus = self._answer.skipped
        return self._answer

    def driver_version(self) -> tuple[int, int]:
        answer = self._get()
        if answer.version is None:
            raise ProviderUnavailable(answer.version_error, self.name)
        return answer.version

    def compute_capabilities(self) -> list[tuple[int, int]]:
        answer = self._get()
        if answer.capabilities is None:
            cls = NoNvidiaGpu if answer.no_gpu else ProviderUnavailable
            raise cls(answer.gpu_error, self.name)
        return list(answer.capabilities)


def _symbol(lib: Any, name: str, restype: Any, argtypes: list[Any]) -> Any:
    """A function of *lib* with its C signature, or None when the library lacks it."""
    try:
        function = getattr(lib, name)
    except AttributeError:
        return None
    function.restype = restype
    function.argtypes = argtypes
    return function


def _library_name(lib: Any) -> str:
    return os.path.basename(str(getattr(lib, "_name", "the library")))


def _require(lib: Any, name: str, restype: Any, argtypes: list[Any], backend: str) -> Any:
    function = _symbol(lib, name, restype, argtypes)
    if function is None:
        raise ProviderUnavailable(f"{_library_name(lib)} has no {name}()", backend)
    return function


def _failed(reason: str) -> _Answer:
    answer = _Answer()
    answer.version_error = answer.gpu_error = reason
    return answer


class NvmlBackend(_LibraryBackend):
    """NVML, the library behind nvidia-smi (what the reference provider uses)."""

    name = "NVML"

    def candidates(self) -> list[str]:
        if sys.platform == "win32":
            windir = os.environ.get("WINDIR", r"C:\Windows")
            program_files = os.environ.get("PROGRAMFILES", r"C:\Program Files")
            return [
                os.path.join(windir, "System32", "nvml.dll"),
                os.path.join(program_files, "NVIDIA Corporation", "NVSMI", "nvml.dll"),
            ]
        return ["libnvidia-ml.so.1"]

    def query(self, lib: Any) -> _Answer:
        import ctypes

        c_int, c_uint, c_void_p = ctypes.c_int, ctypes.c_uint, ctypes.c_void_p
        pointer = ctypes.POINTER
        try:
            init = _require(lib, "nvmlInit_v2", c_int, [], self.name)
            get_count = _require(lib, "nvmlDeviceGetCount_v2", c_int, [pointer(c_uint)], self.name)
            get_handle = _require(
                lib, "nvmlDeviceGetHandleByIndex_v2", c_int, [c_uint, pointer(c_void_p)], self.name
            )
            get_capability = _require(
                lib,
                "nvmlDeviceGetCudaComputeCapability",
                c_int,
                [c_void_p, pointer(c_int), pointer(c_int)],
                self.name,
            )
        except ProviderUnavailable as exc:
            return _failed(str(exc))
        get_versions = [
            (name, _symbol(lib, name, c_int, [pointer(c_int)]))
            for name in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion")
        ]
        shutdown = _symbol(lib, "nvmlShutdown", c_int, [])
        code = init()
        if code != 0:
            return _failed(nvml_error("nvmlInit_v2", code))
        try:
            answer = _Answer()
            errors = []
            for name, function in get_versions:
                version = c_int(0)
                if function is None:
                    errors.append(f"{_library_name(lib)} has no {name}()")
                    continue
                code = function(ctypes.byref(version))
                if code == 0 and version.value > 0:
                    answer.version = decode_driver_version(version.value)
                    break
                errors.append(
                    nvml_error(name, code) if code else f"{name} returned version {version.value}"
                )
            else:
                answer.version_error = "; ".join(errors)

            count = c_uint(0)
            code = get_count(ctypes.byref(count))
            if code != 0:
                answer.gpu_error = nvml_error("nvmlDeviceGetCount_v2", code)
                return answer
            if count.value == 0:
                answer.gpu_error, answer.no_gpu = "NVML reports 0 GPUs", True
                return answer
            capabilities = []
            for index in range(count.value):
                handle = c_void_p()
                code = get_handle(index, ctypes.byref(handle))
                if code != 0:
                    answer.skipped.append(
                        f"GPU {index}: {nvml_error('nvmlDeviceGetHandleByIndex_v2', code)}"
                    )
                    continue
                major, minor = c_int(0), c_int(0)
                code = get_capability(handle, ctypes.byref(major), ctypes.byref(minor))
                if code != 0:
                    answer.skipped.append(
                        f"GPU {index}: {nvml_error('nvmlDeviceGetCudaComputeCapability', code)}"
                    )
                    continue
                capabilities.append((major.value, minor.value))
            if capabilities:
                answer.capabilities = capabilities
            else:
                answer.gpu_error = (
                    f"no compute capability readable for any of {count.value} GPU(s): "
                    + "; ".join(answer.skipped)
                )
            return answer
        finally:
            if shutdown is not None:
                shutdown()  # its result changes nothing


class LibcudaBackend(_LibraryBackend):
    """The CUDA driver API (libcuda), for machines where NVML is missing or broken."""

    name = "libcuda"

    def candidates(self) -> list[str]:
        return ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1"]

    def query(self, lib: Any) -> _Answer:
        import ctypes

        c_int, c_uint = ctypes.c_int, ctypes.c_uint
        pointer = ctypes.POINTER
        try:
            cu_init = _require(lib, "cuInit", c_int, [c_uint], self.name)
            get_version = _require(lib, "cuDriverGetVersion", c_int, [pointer(c_int)], self.name)
            get_count = _require(lib, "cuDeviceGetCount", c_int, [pointer(c_int)], self.name)
            get_device = _require(lib, "cuDeviceGet", c_int, [pointer(c_int), c_int], self.name)
            get_attribute = _require(
                lib, "cuDeviceGetAttribute", c_int, [pointer(c_int), c_int, c_int], self.name
            )
        except ProviderUnavailable as exc:
            return _failed(str(exc))
        answer = _Answer()
        init_code = cu_init(0)
        if init_code not in (0, CUDA_ERROR_NO_DEVICE):
            return _failed(cuda_error("cuInit", init_code))
        # cuDriverGetVersion works without a device (and without cuInit).
        version = c_int(0)
        code = get_version(ctypes.byref(version))
        if code != 0:
            answer.version_error = cuda_error("cuDriverGetVersion", code)
        elif version.value <= 0:
            answer.version_error = f"cuDriverGetVersion returned version {version.value}"
        else:
            answer.version = decode_driver_version(version.value)
        if init_code == CUDA_ERROR_NO_DEVICE:
            answer.gpu_error, answer.no_gpu = cuda_error("cuInit", init_code), True
            return answer
        count = c_int(0)
        code = get_count(ctypes.byref(count))
        if code != 0:
            answer.gpu_error = cuda_error("cuDeviceGetCount", code)
            return answer
        if count.value <= 0:
            answer.gpu_error, answer.no_gpu = "libcuda reports 0 GPUs", True
            return answer
        capabilities = []
        for ordinal in range(count.value):
            device = c_int(0)
            code = get_device(ctypes.byref(device), ordinal)
            if code != 0:
                answer.skipped.append(f"GPU {ordinal}: {cuda_error('cuDeviceGet', code)}")
                continue
            values = []
            for attribute in (
                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            ):
                value = c_int(0)
                code = get_attribute(ctypes.byref(value), attribute, device.value)
                if code != 0:
                    answer.skipped.append(
                        f"GPU {ordinal}: {cuda_error('cuDeviceGetAttribute', code)}"
                    )
                    break
                values.append(value.value)
            else:
                capabilities.append((values[0], values[1]))
        if capabilities:
            answer.capabilities = capabilities
        else:
            answer.gpu_error = (
                f"no compute capability readable for any of {count.value} GPU(s): "
                + "; ".join(answer.skipped)
            )
        return answer


# ---------------------------------------------------------------------------------
# Environment overrides

_VERSION_RE = re.compile(r"(\d+)(?:\.(\d+))?(?:\.\d+)?")
_CAPABILITY_RE = re.compile(r"(\d+)\.(\d+)")
_NONE = "none"


def parse_driver(variable: str, text: str) -> tuple[int, int] | None:
    """``"12.8"`` / ``"13.0"`` / ``"12"`` (12.0) / ``"12.8.1"``; ``"none"`` gives None."""
    value = text.strip()
    if value.lower() == _NONE:
        return None
    match = _VERSION_RE.fullmatch(value)
    if not match:
        raise ProviderUnavailable(
            f"invalid {variable}={text!r}: expected a CUDA driver version MAJOR[.MINOR] "
            "(e.g. 12.8, 13.0 or 12) or 'none'",
            variable,
        )
    return int(match.group(1)), int(match.group(2) or 0)


def parse_gpus(variable: str, text: str) -> list[tuple[int, int]]:
    """``"8.6,9.0"``: compute capabilities, comma-separated; ``"none"`` gives []."""
    value = text.strip()
    if value.lower() == _NONE:
        return []
    capabilities = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        match = _CAPABILITY_RE.fullmatch(item)
        if not match:
            raise ProviderUnavailable(
                f"invalid {variable}={text!r}: expected compute capabilities MAJOR.MINOR, "
                f"comma-separated (e.g. 8.6 or 8.6,9.0) or 'none'; {item!r} is not one",
                variable,
            )
        capabilities.append((int(match.group(1)), int(match.group(2))))
    return capabilities


def _capability_list(capabilities: Sequence[tuple[int, int]]) -> str:
    return ", ".join(format_version(cc) for cc in capabilities)


def describe(driver: tuple[int, int], gpus: Sequence[tuple[int, int]]) -> str:
    """The start of a report's detail: ``"CUDA driver 12.8; GPUs: 8.6, 9.0"``."""
    return f"CUDA driver {format_version(driver)}; GPUs: {_capability_list(gpus)}"


_DESCRIPTION_RE = re.compile(r"CUDA driver (\d+)\.(\d+); GPUs: (\d+\.\d+(?:, \d+\.\d+)*)")


def parse_description(detail: str) -> tuple[tuple[int, int], list[tuple[int, int]]] | None:
    """The driver version and every GPU's compute capability (in device order) that
    :func:`describe` wrote at the start of *detail*; None for any other text."""
    match = _DESCRIPTION_RE.match(detail)
    if not match:
        return None
    gpus = [_CAPABILITY_RE.fullmatch(item) for item in match.group(3).split(", ")]
    return (int(match.group(1)), int(match.group(2))), [
        (int(cc.group(1)), int(cc.group(2))) for cc in gpus if cc
    ]


# ---------------------------------------------------------------------------------


class NvidiaProvider(BuiltinProvider):
    namespace = "nvidia"

    def __init__(
        self,
        env: Environment | None = None,
        backends: Sequence[NvidiaBackend] | None = None,
        proc_dir: str = "/proc/driver/nvidia",
        device_nodes: Sequence[str] = KERNEL_DEVICE_NODES,
    ) -> None:
        super().__init__(env)
        self._backends = backends
        self.proc_dir = proc_dir
        self.device_nodes = tuple(device_nodes)

    def backends(self) -> Sequence[NvidiaBackend]:
        if self._backends is None:
            self._check_kernel_driver()
            self._backends = (NvmlBackend(), LibcudaBackend())
        return self._backends

    def _check_kernel_driver(self) -> None:
        """On Linux, no kernel driver means no GPU: say so without loading libraries.

        Every NVIDIA setup shows one of these: /proc/driver/nvidia (bare metal and
        containers), /dev/nvidiactl, or /dev/dxg (WSL 2).
        """
        if not sys.platform.startswith("linux"):
            return
        paths = (self.proc_dir, *self.device_nodes)
        if not any(os.path.exists(path) for path in paths):
            raise ProviderUnavailable(
                f"no NVIDIA kernel driver (none of {', '.join(paths)} exists)", "kernel driver"
            )

    def get_all_configs(self) -> Sequence[FeatureConfig]:
        return (
            FeatureConfig(LOWER_BOUND, CUDA_VALUES),
            FeatureConfig(UPPER_BOUND, CUDA_VALUES),
            FeatureConfig(SM_ARCH, SM_VALUES, multi_value=True),
        )

    def probe(self) -> Probe:
        driver: tuple[int, int] | None = None
        gpus: list[tuple[int, int]] | None = None
        sources: list[str] = []
        driver_override = self.env.first_set(DRIVER_VARIABLES)
        if driver_override:
            variable, text = driver_override
            driver = parse_driver(variable, text)
            if driver is None:
                raise ProviderUnavailable(f"no NVIDIA driver ({variable}={text})", variable)
            sources.append(variable)
        gpu_override = self.env.first_set(GPU_VARIABLES)
        if gpu_override:
            variable, text = gpu_override
            gpus = parse_gpus(variable, text)
            if not gpus:
                what = (
                    f"NVIDIA driver {format_version(driver)} found but no"
                    if driver
                    else "no NVIDIA"
                )
                raise ProviderUnavailable(f"{what} GPU ({variable}={text})", variable)
            sources.append(variable)
        notes: list[str] = []
        if driver is None or gpus is None:
            driver, gpus, source, notes = self._ask_backends(driver, gpus)
            sources.append(source)
        return self._answer(driver, gpus, " + ".join(sources), notes)

    def _ask_backends(
        self, driver: tuple[int, int] | None, gpus: list[tuple[int, int]] | None
    ) -> tuple[tuple[int, int], list[tuple[int, int]], str, list[str]]:
        """Fill in what the overrides left open from the first backend that answers."""
        failures: list[str] = []
        # The driver version known when a backend reported no GPU, for the message.
        no_gpu_driver: tuple[int, int] | None = None
        backends = self.backends()
        for backend in backends:
            try:
                found_driver = driver if driver is not None else backend.driver_version()
            except ProviderUnavailable as exc:
                failures.append(f"{backend.name}: {exc}")
                continue
            try:
                found_gpus = gpus if gpus is not None else backend.compute_capabilities()
                if not found_gpus:
                    raise NoNvidiaGpu(f"{backend.name} reports 0 GPUs", backend.name)
            except NoNvidiaGpu as exc:
                no_gpu_driver = no_gpu_driver or found_driver
                failures.append(f"{backend.name}: {exc}")
                continue
            except ProviderUnavailable as exc:
                failures.append(f"{backend.name}: {exc}")
                continue
            skipped = getattr(backend, "skipped_gpus", None) if gpus is None else None
            notes = [f"skipped {item}" for item in skipped or () if isinstance(item, str)]
            return found_driver, list(found_gpus), backend.name, notes
        source = ", ".join(backend.name for backend in backends)
        details = "; ".join(failures)
        if no_gpu_driver is not None:
            raise ProviderUnavailable(
                f"NVIDIA driver {format_version(no_gpu_driver)} found but no GPU ({details})",
                source,
            )
        if driver is None:
            raise ProviderUnavailable(f"no usable NVIDIA driver: {details}", source)
        raise ProviderUnavailable(f"cannot list NVIDIA GPUs: {details}", source)

    def _answer(
        self,
        driver: tuple[int, int],
        gpus: list[tuple[int, int]],
        source: str,
        notes: list[str],
    ) -> Probe:
        version = format_version(driver)
        if driver < OLDEST_CUDA:
            raise ProviderUnavailable(
                f"CUDA driver {version} is older than {format_version(OLDEST_CUDA)}, "
                "the oldest version CUDA wheel variants describe",
                source,
            )
        usable = [cc for cc in gpus if cc >= MIN_CAPABILITY]
        too_old = [cc for cc in gpus if cc < MIN_CAPABILITY]
        if too_old:
            notes.append(
                f"ignored GPU(s) {_capability_list(too_old)}: compute capability below "
                f"{format_version(MIN_CAPABILITY)}"
            )
        if not usable:
            raise ProviderUnavailable(
                f"NVIDIA driver {version} found but no usable GPU: " + "; ".join(notes),
                source,
            )
        newer = sorted({cc for cc in usable if cc > NEWEST_SM})
        if newer:
            notes.append(
                f"GPU(s) {_capability_list(newer)} newer than the newest known architecture "
                f"{format_version(NEWEST_SM)}: only PTX (_virtual) builds apply to them"
            )
        if driver > NEWEST_CUDA:
            notes.append(
                f"driver newer than any known CUDA version ({format_version(NEWEST_CUDA)}): "
                "every known lower bound applies, no upper bound does"
            )
        configs = []
        lower = lower_bounds(driver)
        if lower:
            configs.append(FeatureConfig(LOWER_BOUND, lower))
        upper = upper_bounds(driver)
        if upper:
            configs.append(FeatureConfig(UPPER_BOUND, upper))
        configs.append(FeatureConfig(SM_ARCH, sm_arch_values(usable), multi_value=True))
        return Probe(tuple(configs), source, "; ".join([describe(driver, gpus), *notes]))
