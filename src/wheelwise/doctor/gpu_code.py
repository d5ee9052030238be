"""The GPU code of the installed variant builds: the architectures a build has SASS
(``NN_real``) and PTX (``NN_virtual``) for, from its ``nvidia :: sm_arch`` property,
and the CUDA toolkit that made it (``nvidia :: cuda_version_lower_bound``).

SASS built for X.y runs on GPUs X.z with z >= y; PTX for X.y is JIT-compiled by the
driver on any GPU of capability X.y or higher (the rules the ``nvidia`` provider
applies when it lists what a machine supports)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from wheelwise.doctor.cuda_machine import Version, format_version, newest, parse_sm_arch
from wheelwise.doctor.distributions import InstalledDistribution

__all__ = ["GpuBuild", "gpu_builds"]

Code = Literal["sass", "ptx", "none"]


@dataclass(frozen=True)
class GpuBuild:
    dist: InstalledDistribution
    sass: frozenset[Version]
    ptx: frozenset[Version]
    toolkit: Version | None

    @property
    def spec(self) -> str:
        label = f" (variant {self.dist.variant})" if self.dist.variant else ""
        return self.dist.spec + label

    @property
    def architectures(self) -> list[str]:
        return [f"sm_{M}{m}" for M, m in sorted(self.sass)] + [
            f"compute_{M}{m}" for M, m in sorted(self.ptx)
        ]

    def code_for(self, gpu: Version) -> Code:
        if any(major == gpu[0] and minor <= gpu[1] for major, minor in self.sass):
            return "sass"
        if any(arch <= gpu for arch in self.ptx):
            return "ptx"
        return "none"

    def jit_source(self, gpu: Version) -> Version | None:
        """The newest PTX architecture the driver would JIT for *gpu*."""
        return max((arch for arch in self.ptx if arch <= gpu), default=None)

    def to_fact(self, gpus: Iterable[Version]) -> dict[str, object]:
        return {
            "name": self.dist.name,
            "version": self.dist.version,
            "variant": self.dist.variant,
            "toolkit": format_version(self.toolkit) if self.toolkit else None,
            "architectures": self.architectures,
            "gpus": {format_version(gpu): self.code_for(gpu) for gpu in gpus},
        }


def gpu_builds(distributions: Iterable[InstalledDistribution]) -> list[GpuBuild]:
    """The installed variant builds that say which GPU architectures they carry."""
    builds = []
    for dist in distributions:
        nvidia = dist.properties.get("nvidia", {})
        parsed = [p for p in map(parse_sm_arch, nvidia.get("sm_arch", ())) if p is not None]
        if not parsed:
            continue
        builds.append(
            GpuBuild(
                dist=dist,
                sass=frozenset(arch for arch, kind in parsed if kind == "real"),
                ptx=frozenset(arch for arch, kind in parsed if kind == "virtual"),
                toolkit=newest(nvidia.get("cuda_version_lower_bound", ())),
            )
        )
    return builds
