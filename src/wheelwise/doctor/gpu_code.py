"""The GPU code of the installed builds: the architectures a build has SASS and PTX
for. A variant build declares them (``nvidia :: sm_arch``: ``NN_real`` and
``NN_virtual``) with the CUDA toolkit that made it (``nvidia :: cuda_version_lower_bound``);
for any other package they are read from the fat binaries of its shared objects, all
of them together (:mod:`wheelwise.doctor.fatbin`).

SASS built for X.y runs on GPUs X.z with z >= y; PTX for X.y is JIT-compiled by the
driver on any GPU of capability X.y or higher (the rules the ``nvidia`` provider
applies when it lists what a machine supports)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from wheelwise.doctor.cuda_machine import Version, format_version, newest, parse_sm_arch
from wheelwise.doctor.distributions import InstalledDistribution, record_files
from wheelwise.doctor.fatbin import FatbinCode

__all__ = ["GpuBuild", "fatbin_builds", "gpu_builds"]

Code = Literal["sass", "ptx", "none"]


@dataclass(frozen=True)
class GpuBuild:
    dist: InstalledDistribution
    sass: frozenset[Version]
    ptx: frozenset[Version]
    toolkit: Version | None
    files: tuple[str, ...] = ()
    """The shared objects the code was read from (none: the variant declares it)."""

    @property
    def spec(self) -> str:
        label = f" (variant {self.dist.variant})" if self.dist.variant else ""
        return self.dist.spec + label

    @property
    def evidence(self) -> str:
        return "fat binaries" if self.files else "variant properties"

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
            "from": self.evidence,
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


def fatbin_builds(
    distributions: Iterable[InstalledDistribution], gpu_code: Mapping[str, FatbinCode]
) -> list[GpuBuild]:
    """The packages, other than variant builds that declare their code and the
    ``nvidia-*`` wheels, whose shared objects carry fat binaries (*gpu_code*, by path
    relative to the site folder): each with the code of all of them together."""
    if not gpu_code:
        return []
    tops = {path.split("/", 1)[0] for path in gpu_code}
    owners: dict[str, InstalledDistribution] = {}
    for dist in distributions:
        if dist.name.startswith("nvidia-") or dist.properties.get("nvidia", {}).get("sm_arch"):
            continue
        for path in record_files(dist):
            top = path.split("/", 1)[0]
            if top in tops:
                owners.setdefault(top, dist)
        if tops <= owners.keys():
            break
    grouped: dict[str, tuple[InstalledDistribution, list[str]]] = {}
    for path in sorted(gpu_code):
        owner = owners.get(path.split("/", 1)[0])
        if owner is not None:
            grouped.setdefault(owner.name, (owner, []))[1].append(path)
    return [
        GpuBuild(
            dist=dist,
            sass=frozenset().union(*(gpu_code[f].sass for f in files)),
            ptx=frozenset().union(*(gpu_code[f].ptx for f in files)),
            toolkit=None,
            files=tuple(files),
        )
        for dist, files in grouped.values()
    ]
