"""The NVIDIA side of the machine as the providers give it: the CUDA version the
driver supports and the GPUs' compute capabilities (from ``wheelwise detect``, or the
``--system`` file)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from wheelwise.doctor.context import DoctorContext

__all__ = ["CudaMachine", "cuda_machine", "parse_capability", "parse_cuda_version", "parse_sm_arch"]

Version = tuple[int, int]
_DOTTED = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})")
_SM = re.compile(r"([0-9]{1,3})([0-9])_(real|virtual)")
_GPUS = re.compile(r"GPUs: ([0-9][0-9., ]*)")


@dataclass(frozen=True)
class CudaMachine:
    driver: Version | None
    """The newest CUDA version the driver supports (``nvidia :: cuda_version_lower_bound``)."""
    gpus: tuple[Version, ...]
    """Compute capabilities, one per GPU model (8.6, 9.0...)."""

    def to_fact(self) -> dict[str, object]:
        return {
            "driver_cuda": format_version(self.driver) if self.driver else None,
            "gpus": [format_version(gpu) for gpu in self.gpus],
        }


def format_version(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def parse_cuda_version(text: str) -> Version | None:
    """``"12.8"`` as (12, 8); None for anything else (a bare ``"12"`` included)."""
    match = _DOTTED.fullmatch(text.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def parse_capability(text: str) -> Version | None:
    return parse_cuda_version(text)


def parse_sm_arch(value: str) -> tuple[Version, str] | None:
    """``"86_real"`` as ((8, 6), "real"); ``"120_virtual"`` as ((12, 0), "virtual")."""
    match = _SM.fullmatch(value.strip())
    if match is None:
        return None
    return (int(match.group(1)), int(match.group(2))), match.group(3)


def newest(values: Iterable[str]) -> Version | None:
    """The highest ``MAJOR.MINOR`` among *values*."""
    return max((v for v in map(parse_cuda_version, values) if v is not None), default=None)


def cuda_machine(context: DoctorContext) -> CudaMachine:
    nvidia = context.supported.namespaces.get("nvidia", {})
    driver = newest(nvidia.get("cuda_version_lower_bound", ()))
    gpus: list[Version] = []
    detection = context.detection
    report = detection.reports.get("nvidia") if detection is not None else None
    if report is not None and report.status == "ok":
        match = _GPUS.search(report.detail)
        if match:
            found = (parse_capability(part) for part in match.group(1).split(","))
            gpus = [gpu for gpu in found if gpu is not None]
    if not gpus:
        # A described machine lists what it runs, not its GPUs: per architecture
        # family, the highest SASS target stands for the GPU.
        best: dict[int, int] = {}
        for value in nvidia.get("sm_arch", ()):
            parsed = parse_sm_arch(value)
            if parsed is not None and parsed[1] == "real":
                (major, minor), _ = parsed
                best[major] = max(best.get(major, minor), minor)
        gpus = list(best.items())
    return CudaMachine(driver, tuple(sorted(set(gpus))))
