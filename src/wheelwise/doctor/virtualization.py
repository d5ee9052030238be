"""Where ``doctor`` runs: WSL 2 (the GPU driver lives in Windows; Linux sees it
through ``/dev/dxg`` and the libraries in ``/usr/lib/wsl/lib``) or a container (the
driver lives in the host's kernel; the container sees a GPU only when it is given
the device nodes). Both change what a healthy machine looks like."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wheelwise.doctor.context import DoctorContext, MachineRoots
from wheelwise.doctor.machine_files import read_text
from wheelwise.doctor.runner import ProbeOutcome

__all__ = [
    "WSL_LIBRARIES",
    "Platform",
    "cgroup_container",
    "is_wsl_kernel",
    "look_at_platform",
    "platform_probe",
]

WSL_LIBRARIES = "/usr/lib/wsl/lib"
WSL_GPU_DEVICE = "/dev/dxg"
# Files container engines leave in the container's root.
_ENGINE_FILES = (("/.dockerenv", "docker"), ("/run/.containerenv", "podman"))
# Words in /proc/1/cgroup that name the engine running process 1.
_CGROUP_WORDS = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("libpod", "podman"),
    ("containerd", "containerd"),
    ("lxc", "lxc"),
)


@dataclass(frozen=True)
class Platform:
    """WSL (and whether its GPU device is there) and the container engine, if any."""

    wsl: bool
    wsl_gpu_device: bool
    container: str | None

    def to_dict(self) -> dict[str, object]:
        return {"wsl": self.wsl, "wsl_gpu_device": self.wsl_gpu_device, "container": self.container}


def is_wsl_kernel(proc_version: str) -> bool:
    """Whether ``/proc/version`` names a WSL kernel (``5.15.153.1-microsoft-standard-WSL2``,
    ``4.4.0-19041-Microsoft``)."""
    return "microsoft" in proc_version.lower()


def cgroup_container(text: str) -> str | None:
    """The engine ``/proc/1/cgroup`` names (``docker``, ``kubernetes``...), or None."""
    paths = [line.split(":", 2)[-1] for line in text.splitlines() if line.count(":") >= 2]
    for path in paths:
        lowered = path.lower()
        for word, engine in _CGROUP_WORDS:
            if word in lowered:
                return engine
    return None


def look_at_platform(roots: MachineRoots, environ: Mapping[str, str]) -> Platform:
    wsl = (
        is_wsl_kernel(read_text(roots, "/proc/version") or "") or roots.path(WSL_LIBRARIES).is_dir()
    )
    container = next((engine for path, engine in _ENGINE_FILES if roots.path(path).exists()), None)
    if container is None and environ.get("KUBERNETES_SERVICE_HOST"):
        container = "kubernetes"
    if container is None:
        container = cgroup_container(read_text(roots, "/proc/1/cgroup") or "")
    return Platform(wsl, roots.path(WSL_GPU_DEVICE).exists(), container)


def platform_probe(context: DoctorContext) -> ProbeOutcome:
    """The platform, as facts of the machine section."""
    platform = look_at_platform(context.roots, context.environ)
    return ProbeOutcome(facts={"machine": {"platform": platform.to_dict()}})
