"""Non-variant GPU builds (:mod:`wheelwise.doctor.gpu_packages`) against the machine:
the CUDA version each expects against the one the NVIDIA driver supports, and ROCm
builds against the AMD GPUs found.

NVIDIA's rules (https://docs.nvidia.com/deploy/cuda-compatibility/): a driver runs
everything built for its CUDA version or older; a build for a newer minor of the
same major runs through *minor version compatibility*, except PTX it must
JIT-compile and calls that need the newer driver; a build for a newer major does
not run at all.

Builds of one package family are judged together (torch with torchvision and
torchaudio of the same build; JAX's plugin with its PJRT part), and NVIDIA's CUDA
libraries only when no package that would bring them in is recognized: the finding
about torch is the one that matters, not fourteen about its libraries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from wheelwise.doctor.findings import ERROR, WARNING, Finding, Severity
from wheelwise.doctor.fix_commands import FixCommands
from wheelwise.doctor.gpu_packages import (
    CUDA,
    CUPY,
    JAX,
    NVIDIA_LIBRARIES,
    SUFFIXED,
    TORCH,
    GpuBuild,
)
from wheelwise.variants.supported import SupportedProperties

__all__ = ["MachineRuntimes", "judge_gpu_builds", "machine_runtimes"]

# The CUDA builds PyTorch publishes for each release
# (https://pytorch.org/get-started/previous-versions/), oldest CUDA first.
TORCH_CUDA_BUILDS: dict[str, tuple[str, ...]] = {
    "2.0": ("cu117", "cu118"),
    "2.1": ("cu118", "cu121"),
    "2.2": ("cu118", "cu121"),
    "2.3": ("cu118", "cu121"),
    "2.4": ("cu118", "cu121", "cu124"),
    "2.5": ("cu118", "cu121", "cu124"),
    "2.6": ("cu118", "cu124", "cu126"),
    "2.7": ("cu118", "cu126", "cu128"),
    "2.8": ("cu126", "cu128", "cu129"),
    "2.9": ("cu126", "cu128", "cu130"),
}
# For a release the table does not know: every CUDA build PyTorch has published.
TORCH_ANY_BUILDS = ("cu117", "cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130")
TORCH_INDEX = "https://download.pytorch.org/whl/"
# The CUDA majors CuPy and JAX publish builds for (cupy-cuda12x, jax[cuda12]).
CUPY_CUDA_MAJORS = (11, 12, 13)
JAX_CUDA_MAJORS = (12, 13)

_VERSION = re.compile(r"(\d+)(?:\.(\d+))?")
_SHOWN = 4


@dataclass(frozen=True)
class MachineRuntimes:
    """What the machine runs GPU builds with: the newest CUDA version the NVIDIA
    driver supports, and whether there is a ROCm-capable AMD GPU (with its ROCm
    version when known); the details say why not, when not."""

    cuda: tuple[int, int] | None
    amd: bool
    rocm: tuple[int, int] | None = None
    nvidia_detail: str = ""
    amd_detail: str = ""

    @property
    def cuda_text(self) -> str | None:
        return None if self.cuda is None else f"{self.cuda[0]}.{self.cuda[1]}"


def machine_runtimes(
    supported: SupportedProperties, details: Mapping[str, str] | None = None
) -> MachineRuntimes:
    """The runtimes *supported* (the machine's properties) gives; *details*: what
    each provider said, by namespace, to say why a runtime is missing."""
    from wheelwise.providers.amd import ROCM_VERSION
    from wheelwise.providers.nvidia import LOWER_BOUND

    details = details or {}
    # Lower bounds come best first: the first is the driver's own version.
    return MachineRuntimes(
        cuda=_newest(supported.values("nvidia", LOWER_BOUND)),
        amd="amd" in supported.namespaces,
        rocm=_newest(supported.values("amd", ROCM_VERSION)),
        nvidia_detail=details.get("nvidia") or "the machine description lists no nvidia support",
        amd_detail=details.get("amd") or "the machine description lists no amd support",
    )


def _newest(values: Sequence[str]) -> tuple[int, int] | None:
    for value in values:
        match = _VERSION.fullmatch(value)
        if match:
            return int(match.group(1)), int(match.group(2) or 0)
    return None


@dataclass(frozen=True)
class _Group:
    """Builds judged together, and what they expect (the newest of them)."""

    family: str
    runtime: str
    builds: tuple[GpuBuild, ...]

    @property
    def expects(self) -> tuple[int, int]:
        found = [b.expects for b in self.builds if b.expects is not None]
        return max(found) if found else (0, -1)

    @property
    def expects_text(self) -> str:
        major, minor = self.expects
        return f"{major}.{minor}" if minor >= 0 else str(major)

    @property
    def names(self) -> str:
        shown = ", ".join(b.label for b in self.builds[:_SHOWN])
        more = len(self.builds) - _SHOWN
        return shown + (f" and {more} more" if more > 0 else "")

    @property
    def verb(self) -> str:
        return "is" if len(self.builds) == 1 else "are"


def judge_gpu_builds(
    builds: Sequence[GpuBuild], machine: MachineRuntimes, commands: FixCommands
) -> list[Finding]:
    """A finding for each group of *builds* that does not fit *machine*."""
    findings: list[Finding] = []
    for group in _groups(builds):
        judge = _Judge(group, machine, commands)
        finding = judge.cuda() if group.runtime == CUDA else judge.rocm()
        if finding is not None:
            findings.append(finding)
    return findings


def _groups(builds: Sequence[GpuBuild]) -> list[_Group]:
    keyed: dict[tuple[str, str, object], list[GpuBuild]] = {}
    for build in builds:
        if build.expects is None:  # a CPU build: nothing to fit
            continue
        if build.family in (TORCH, JAX, NVIDIA_LIBRARIES):
            # torch's family shares one local version; JAX's parts and NVIDIA's
            # libraries one CUDA major.
            key: object = build.expects if build.family == TORCH else build.expects[0]
        else:
            key = build.name
        keyed.setdefault((build.family, build.runtime, key), []).append(build)
    # NVIDIA's own library wheels are judged by the compatibility section, from the
    # libcudart the target would load: judged here too, one problem would be two.
    return [
        _Group(family, runtime, tuple(found))
        for (family, runtime, _), found in keyed.items()
        if family != NVIDIA_LIBRARIES
    ]


@dataclass(frozen=True)
class _Judge:
    """One group of builds against the machine, and its fixes."""

    group: _Group
    machine: MachineRuntimes
    commands: FixCommands

    def finding(self, code: str, severity: Severity, what: str, why: str, fix: str) -> Finding:
        group = self.group
        return Finding(
            section="builds",
            code=code,
            severity=severity,
            what=what,
            why=why,
            fix=fix,
            facts={
                "packages": [{"name": b.name, "version": b.version} for b in group.builds],
                "runtime": group.runtime,
                "expects": group.expects_text,
                "driver_cuda": self.machine.cuda_text,
            },
        )

    def cuda(self) -> Finding | None:
        group, driver = self.group, self.machine.cuda
        needed = group.expects
        if driver is None:
            return self.finding(
                "cuda-build-without-driver",
                WARNING,
                f"{group.names} {group.verb} built for CUDA {group.expects_text}, but this "
                f"machine has no usable NVIDIA driver ({self.machine.nvidia_detail})",
                "its CUDA parts cannot run here: it runs on the CPU only, or fails to import them",
                self.replacement(None) or "install the NVIDIA driver",
            )
        update = f"update the NVIDIA driver to one for CUDA {group.expects_text} or newer"
        if needed[0] > driver[0]:
            return self.finding(
                "cuda-build-too-new",
                ERROR,
                f"{group.names} {group.verb} built for CUDA {group.expects_text}; the NVIDIA "
                f"driver supports CUDA {driver[0]}.{driver[1]}",
                f"a CUDA {needed[0]} build does not run on a driver for CUDA {driver[0]}: "
                'importing it or its first GPU call fails ("CUDA driver version is '
                'insufficient for CUDA runtime version")',
                _either(self.replacement(driver), update),
            )
        if needed[0] == driver[0] and needed[1] > driver[1]:
            # Only PyTorch publishes builds for several minors of one major.
            other = self.torch(driver) if group.family == TORCH else None
            return self.finding(
                "cuda-build-minor-newer",
                WARNING,
                f"{group.names} {group.verb} built for CUDA {group.expects_text}; the NVIDIA "
                f"driver supports CUDA {driver[0]}.{driver[1]}",
                "it runs through CUDA's minor version compatibility, except where it must "
                f"JIT-compile PTX built for CUDA {group.expects_text} or calls what only a "
                "newer driver has (cudaErrorCallRequiresNewerDriver)",
                _either(update, other),
            )
        return None

    def rocm(self) -> Finding | None:
        group = self.group
        if self.machine.amd:
            return None
        return self.finding(
            "rocm-build-without-rocm",
            WARNING,
            f"{group.names} {group.verb} built for ROCm {group.expects_text}, but this "
            f"machine has no ROCm-capable AMD GPU ({self.machine.amd_detail})",
            "its GPU parts cannot run here: it runs on the CPU only, or fails to import them",
            self.replacement(self.machine.cuda) or "install the AMD GPU driver and ROCm",
        )

    # -- fixes ---------------------------------------------------------------------

    def replacement(self, driver: tuple[int, int] | None) -> str | None:
        """The command that puts this group's build for a driver of CUDA *driver*
        (None: for no GPU) in its place; None when there is no such build."""
        family = self.group.family
        if family == TORCH:
            return self.torch(driver)
        if family == CUPY:
            return self.swap(driver, lambda major: f"cupy-cuda{major}x", CUPY_CUDA_MAJORS)
        if family == JAX:
            return self.jax(driver)
        if family == SUFFIXED:
            base = self.group.builds[0].name.rsplit("-cu", 1)[0]
            return self.swap(driver, lambda major: f"{base}-cu{major}")
        return self.libraries(driver)

    def torch(self, driver: tuple[int, int] | None) -> str | None:
        builds = self.group.builds
        torch = next((b for b in builds if b.name == "torch"), None)
        release = ".".join(torch.version.partition("+")[0].split(".")[:2]) if torch else ""
        known = TORCH_CUDA_BUILDS.get(release)
        tag = "cpu" if driver is None else _best_tag(known or TORCH_ANY_BUILDS, driver)
        if tag is None:
            return None
        # torchvision and torchaudio releases go with torch's: pinned only with it.
        pins = [
            f"{b.name}=={b.version.partition('+')[0]}" if known else b.name
            for b in sorted(builds, key=lambda b: b.name != "torch")
        ]
        return self.commands.pip_install(
            "--force-reinstall", *pins, "--index-url", TORCH_INDEX + tag
        )

    def jax(self, driver: tuple[int, int] | None) -> str | None:
        plugins = [b.name for b in self.group.builds if b.name != "jaxlib"]
        jaxlib = next((b for b in self.group.builds if b.name == "jaxlib"), None)
        remove = self.commands.pip_uninstall(*plugins) if plugins else None
        if driver is None:
            if jaxlib is None:
                return remove
            cpu = self.commands.pip_install(
                "--force-reinstall", f"jaxlib=={jaxlib.version.partition('+')[0]}"
            )
            return _then(remove, cpu)
        major = max((m for m in JAX_CUDA_MAJORS if m <= driver[0]), default=None)
        if major is None:
            return None
        return _then(remove, self.commands.pip_install("--upgrade", f"jax[cuda{major}]"))

    def swap(
        self,
        driver: tuple[int, int] | None,
        name_for: Callable[[int], str],
        majors: Sequence[int] | None = None,
    ) -> str | None:
        """Uninstall this build; install the one named for the driver's CUDA major."""
        remove = self.commands.pip_uninstall(self.group.builds[0].name)
        if driver is None:
            return remove
        if majors is not None and driver[0] not in majors:
            return None
        return _then(remove, self.commands.pip_install(name_for(driver[0])))

    def libraries(self, driver: tuple[int, int] | None) -> str:
        remove = self.commands.pip_uninstall(*(b.name for b in self.group.builds))
        wanted = "a CPU-only build" if driver is None else f"the CUDA {driver[0]} build"
        return f"install {wanted} of the package that installed them, then {remove}"


def _either(first: str | None, second: str | None) -> str:
    return ", or ".join(part for part in (first, second) if part)


def _then(first: str | None, second: str) -> str:
    return f"{first} && {second}" if first else second


def _best_tag(tags: Sequence[str], driver: tuple[int, int]) -> str | None:
    """The newest of PyTorch's CUDA build tags (``cu126``) that *driver* runs."""
    fitting = [tag for tag in tags if _tag_key(tag) <= driver]
    return max(fitting, key=_tag_key) if fitting else None


def _tag_key(tag: str) -> tuple[int, int]:
    digits = tag[2:]
    return int(digits[:-1]), int(digits[-1])
