"""A corpus of variant packages and simulated machines, for comparing installers.

Every package is version 1.0, pure Python (``py3-none-any``), made the way a
publisher makes it: a plain wheel turned into variant wheels by ``make_variant``
with the project's ``[variant]`` table (so the wheels carry its provider
information), plus, for some, the plain wheel as the non-variant fallback.

The NVIDIA packages mirror PyTorch's CUDA builds (``cuda_version_lower_bound``
and the ``sm_arch`` list of each build); a machine is a CUDA driver version and
one GPU's compute capability, given through the NVIDIA reference provider's
variables, which uv and wheelwise both honour.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from wheelfactory import make_wheel
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.pyproject import read_pyproject_variant
from wheelwise.wheels.make import make_variant

VERSION = "1.0"


def _provider(namespace: str, requires: str, plugin_api: str) -> str:
    """A ``[variant.providers.NAMESPACE]`` table naming a plugin."""
    return (
        f'[variant.providers.{namespace}]\nrequires = ["{requires}"]\nplugin-api = "{plugin_api}"\n'
    )


# uv 0.13.9 answers for a plugin it reimplements only when ``requires`` admits the
# version it reimplements (0.0.1) and ``plugin-api`` names the same object.
_NVIDIA = _provider(
    "nvidia",
    "nvidia-variant-provider>=0.0.1,<1.0.0",
    "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
)
_X86_64 = _provider("x86_64", "x86-64-variant-provider>=0.0.1,<1.0.0", "x86_64_variant_provider")
# Accelerators beside NVIDIA GPUs, with the plugins that PyTorch 2.10 (intel),
# the Huawei provider (ascend) and uv (tpu) name.
_INTEL = _provider(
    "intel",
    "intel-variant-provider>=0.0.3,<1.0.0",
    "intel_variant_provider.plugin:IntelVariantPlugin",
)
_ASCEND = _provider(
    "ascend",
    "huawei-ascend-variant-provider>=0.0.1,<1.0.0",
    "huawei_ascend_variant_provider.plugin:AscendVariantPlugin",
)
_TPU = _provider(
    "tpu", "tpu-variant-provider>=0.0.1,<1.0.0", "tpu_variant_provider.plugin:TpuVariantPlugin"
)
# PyTorch 2.10's tie-breaker between CUDA builds: an ahead-of-time namespace.
_PRIORITY = """\
[variant.providers.priority]
install-time = false

[variant.static-properties.priority]
order = ["1", "2", "3"]
"""


def _project(namespaces: Sequence[str], *blocks: str) -> str:
    listed = ", ".join(f'"{ns}"' for ns in namespaces)
    return f"[variant.default-priorities]\nnamespace = [{listed}]\n\n" + "\n".join(blocks)


NVIDIA_ONLY = _project(["nvidia"], _NVIDIA)
# The real PyTorch indexes' requirement: uv's reimplementation (0.0.1) is outside it.
NVIDIA_PYTORCH_REQUIRES = _project(["nvidia"], _NVIDIA.replace(">=0.0.1,<1.0.0", ">=0.0.2,<1.0.0"))
NVIDIA_ENABLE_IF = _project(
    ["nvidia"],
    _NVIDIA + "enable-if = \"platform_system == 'Linux' or platform_system == 'Windows'\"\n",
)
NVIDIA_OPTIONAL = _project(["nvidia"], _NVIDIA + "optional = true\n")
NVIDIA_PRIORITY = _project(["nvidia", "priority"], _NVIDIA, _PRIORITY)
PRIORITY_ONLY = _project(["priority"], _PRIORITY)
X86_64_ONLY = _project(["x86_64"], _X86_64)
INTEL_ONLY = _project(["intel"], _INTEL)
ASCEND_ONLY = _project(["ascend"], _ASCEND)
TPU_ONLY = _project(["tpu"], _TPU)
NVIDIA_X86_64 = _project(["nvidia", "x86_64"], _NVIDIA, _X86_64)
X86_64_NVIDIA = _project(["x86_64", "nvidia"], _X86_64, _NVIDIA)

NULL = "null"


def _sm(*archs: str) -> str:
    return ",".join(archs)


# PyTorch-like CUDA builds: (cuda_version_lower_bound, sm_arch values).
CU126 = ("12.6", _sm("50_real", "60_real", "70_real", "75_real", "80_real", "86_real", "90_real"))
CU128 = ("12.8", _sm("70_real", "75_real", "80_real", "86_real", "90_real", "100_real", "120_real"))
CU129 = ("12.9", _sm("75_real", "80_real", "86_real", "90_real", "100_real", "120_real"))
CU130 = ("13.0", _sm("75_real", "80_real", "86_real", "90_real", "100_real", "120_real"))


def cuda(build: tuple[str, str], *extra: str) -> tuple[str, ...]:
    lower, archs = build
    props = [f"nvidia :: cuda_version_lower_bound :: {lower}"]
    props += [f"nvidia :: sm_arch :: {arch}" for arch in archs.split(",")]
    return (*props, *extra)


# PyTorch 2.10's xpu build: the Intel GPU IPs it was compiled for.
XPU_IPS = ("12.55.8", "12.60.7", "12.71.4", "12.74.4", "20.1.0", "20.4.4", "30.0.4", "30.1.0")


def x86_64(level: str) -> str:
    return f"x86_64 :: level :: {level}"


def priority(order: str) -> str:
    return f"priority :: order :: {order}"


@dataclass(frozen=True)
class Package:
    name: str
    project: str
    # (label, properties); label None: the 8-hex hash label of the properties.
    variants: tuple[tuple[str | None, tuple[str, ...]], ...]
    # Also publish the plain wheel, the non-variant fallback.
    fallback: bool = True


PACKAGES: tuple[Package, ...] = (
    Package(
        "uvc_torch_like",
        NVIDIA_ONLY,
        (
            ("cu126", cuda(CU126)),
            ("cu128", cuda(CU128)),
            ("cu129", cuda(CU129)),
            ("cu130", cuda(CU130)),
        ),
    ),
    Package(
        "uvc_torch_like_null",
        NVIDIA_ONLY,
        (("cu126", cuda(CU126)), ("cu128", cuda(CU128)), ("cu130", cuda(CU130)), (NULL, ())),
        fallback=False,
    ),
    Package("uvc_cu12_only", NVIDIA_ONLY, (("cu126", cuda(CU126)), ("cu128", cuda(CU128)))),
    Package("uvc_cu13_only", NVIDIA_ONLY, (("cu130", cuda(CU130)), (NULL, ())), fallback=False),
    Package(
        "uvc_sm_split",
        NVIDIA_ONLY,
        (
            ("hopper", cuda(("12.8", "90_real"))),
            ("ampere", cuda(("12.8", _sm("80_real", "86_real")))),
            ("blackwell", cuda(("12.8", _sm("100_real", "120_real")))),
        ),
    ),
    Package(
        "uvc_old_drivers",
        NVIDIA_ONLY,
        (("cu118", cuda(("11.8", "70_real"))), ("cu120", cuda(("12.0", "70_real")))),
    ),
    Package(
        "uvc_lower_bound_only",
        NVIDIA_ONLY,
        (
            ("cu12", ("nvidia :: cuda_version_lower_bound :: 12.0",)),
            ("cu13", ("nvidia :: cuda_version_lower_bound :: 13.0",)),
        ),
    ),
    Package(
        "uvc_cuda_range",
        NVIDIA_ONLY,
        (
            (
                "cu12x",
                (
                    "nvidia :: cuda_version_lower_bound :: 12.0",
                    "nvidia :: cuda_version_upper_bound :: 13.0",
                ),
            ),
            ("cu13x", ("nvidia :: cuda_version_lower_bound :: 13.0",)),
        ),
    ),
    Package("uvc_sm_only", NVIDIA_ONLY, (("sm80", ("nvidia :: sm_arch :: 80_real",)),)),
    Package("uvc_hash_labels", NVIDIA_ONLY, ((None, cuda(CU126)), (None, cuda(CU130)))),
    Package(
        "uvc_priority",
        NVIDIA_PRIORITY,
        (
            ("cuda12.6", cuda(("12.0", CU126[1]), priority("3"))),
            ("cuda12.8", cuda(("12.0", CU128[1]), priority("2"))),
            ("cuda13.0", cuda(("13.0", CU130[1]), priority("1"))),
            (NULL, ()),
        ),
        fallback=False,
    ),
    Package(
        "uvc_priority_only", PRIORITY_ONLY, (("p1", (priority("1"),)), ("p3", (priority("3"),)))
    ),
    Package("uvc_null_only", NVIDIA_ONLY, ((NULL, ()),)),
    Package("uvc_plain", NVIDIA_ONLY, ()),
    Package(
        "uvc_x86_64_levels",
        X86_64_ONLY,
        tuple((f"x86_64_{level}", (x86_64(level),)) for level in ("v1", "v2", "v3", "v4")),
    ),
    Package(
        "uvc_x86_64_partial",
        X86_64_ONLY,
        (("x86_64_v2", (x86_64("v2"),)), ("x86_64_v3", (x86_64("v3"),)), (NULL, ())),
        fallback=False,
    ),
    Package(
        "uvc_gpu_then_cpu",
        NVIDIA_X86_64,
        (
            ("cu128_v3", cuda(CU128, x86_64("v3"))),
            ("cu128_v1", cuda(CU128, x86_64("v1"))),
            ("cpu_v3", (x86_64("v3"),)),
        ),
    ),
    Package(
        "uvc_cpu_then_gpu",
        X86_64_NVIDIA,
        (
            ("cu126_v3", cuda(CU126, x86_64("v3"))),
            ("cu130_v1", cuda(CU130, x86_64("v1"))),
            ("cpu_v2", (x86_64("v2"),)),
            (NULL, ()),
        ),
        fallback=False,
    ),
    Package(
        "uvc_optional_gpu", NVIDIA_OPTIONAL, (("cu126", cuda(CU126)), (NULL, ())), fallback=False
    ),
    Package("uvc_pytorch_requires", NVIDIA_PYTORCH_REQUIRES, (("cu126", cuda(CU126)),)),
    Package("uvc_ptx", NVIDIA_ONLY, (("ptx80", ("nvidia :: sm_arch :: 80_virtual",)),)),
    Package(
        "uvc_enable_if",
        NVIDIA_ENABLE_IF,
        (("cu126", cuda(CU126)), ("cu130", cuda(CU130))),
    ),
)

# Packages for accelerators other than NVIDIA GPUs, tried on ACCELERATOR_MACHINES.
ACCELERATOR_PACKAGES: tuple[Package, ...] = (
    Package(
        "uvc_intel_xpu",
        INTEL_ONLY,
        (("xpu", tuple(f"intel :: device_ip :: {ip}" for ip in XPU_IPS)), (NULL, ())),
        fallback=False,
    ),
    Package(
        "uvc_ascend",
        ASCEND_ONLY,
        (("a2", ("ascend :: npu_type :: 910b",)), (NULL, ())),
        fallback=False,
    ),
    Package(
        "uvc_tpu",
        TPU_ONLY,
        (("tpu", ("tpu :: present :: true",)), ("cpu", ("tpu :: present :: false",))),
    ),
)
ACCELERATORS = tuple(p.name for p in ACCELERATOR_PACKAGES)

# Packages every installer can read: installed together, per machine.
ENABLE_IF_PACKAGE = "uvc_enable_if"
INSTALLED_TOGETHER = tuple(p.name for p in PACKAGES if p.name != ENABLE_IF_PACKAGE)

# Machines: (CUDA driver version or "none", one GPU's compute capability).
MACHINES: Mapping[str, tuple[str, str | None]] = {
    "no_driver": ("none", None),
    "cuda11.8_sm7.0": ("11.8", "7.0"),
    "cuda12.4_sm9.0": ("12.4", "9.0"),
    "cuda12.6_sm8.0": ("12.6", "8.0"),
    "cuda12.8_sm6.1": ("12.8", "6.1"),
    "cuda12.8_sm9.0": ("12.8", "9.0"),
    "cuda12.8_sm12.0": ("12.8", "12.0"),
    "cuda12.9_sm8.6": ("12.9", "8.6"),
    "cuda13.0_sm7.5": ("13.0", "7.5"),
    "cuda13.0_sm10.0": ("13.0", "10.0"),
}


# Machines with another accelerator (and no NVIDIA driver), each simulated through the
# published provider's variable (uv's, for tpu): Arc A770, Ascend 910B3, a TPU host.
ACCELERATOR_MACHINES: Mapping[str, Mapping[str, str]] = {
    "no_accelerator": {},
    "intel_a770": {"INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP": "12.55.8"},
    "ascend_910b3": {"ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE": "910b"},
    "tpu": {"TPU_VARIANT_PROVIDER_FORCE_PRESENT": "1"},
}
# None of this host's accelerators: what an installer sees unless the machine says.
_NO_ACCELERATOR = {
    "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP": "none",
    "ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE": "none",
    "TPU_VARIANT_PROVIDER_FORCE_PRESENT": "0",
}


def machine_env(machine: str) -> dict[str, str]:
    """The reference providers' variables for *machine* (of MACHINES or
    ACCELERATOR_MACHINES)."""
    if machine in ACCELERATOR_MACHINES:
        return {"NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "none"} | (
            _NO_ACCELERATOR | dict(ACCELERATOR_MACHINES[machine])
        )
    driver, gpu = MACHINES[machine]
    env = {"NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": driver} | _NO_ACCELERATOR
    if gpu is not None:
        env["NV_VARIANT_PROVIDER_FORCE_SM_ARCH"] = gpu
    return env


def build_wheels(directory: Path) -> Path:
    """Write every package's wheels into ``directory/wheels``; return that folder."""
    plain_dir, wheels = directory / "plain", directory / "wheels"
    plain_dir.mkdir(parents=True)
    wheels.mkdir()
    for package in (*PACKAGES, *ACCELERATOR_PACKAGES):
        project = read_pyproject_variant(package.project, source=f"{package.name} pyproject")
        plain = make_wheel(
            plain_dir,
            f"{package.name}-{VERSION}-py3-none-any.whl",
            extra_members={f"{package.name}/__init__.py": b"BUILD = 'plain'\n"},
            record=True,
        )
        if package.fallback or not package.variants:
            (wheels / plain.name).write_bytes(plain.read_bytes())
        for label, properties in package.variants:
            make_variant(
                plain,
                wheels,
                properties=[VariantProperty.parse(p) for p in properties],
                label=label,
                null=label == NULL,
                project=project,
                validate=False,
            )
    return wheels


def installed_label(site_packages: Path, name: str) -> str | None:
    """The variant label of the installed *name* (None: its non-variant wheel);
    raises LookupError when it is not installed."""
    dist_info = site_packages / f"{name}-{VERSION}.dist-info"
    if not dist_info.is_dir():
        raise LookupError(f"{name} is not installed in {site_packages}")
    variant_json = dist_info / "variant.json"
    if not variant_json.is_file():
        return None
    labels: list[str] = list(json.loads(variant_json.read_text(encoding="utf-8"))["variants"])
    if len(labels) != 1:
        raise LookupError(f"{variant_json} lists {labels}, not one label")
    return labels[0]


@contextlib.contextmanager
def static_server(site: Path) -> Iterator[str]:
    """Serve *site* on 127.0.0.1 from a thread; yields the base URL.

    In-process and quiet: a server subprocess whose request log nobody reads
    blocks once the pipe is full, and installers open many connections at once.
    """

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        request_queue_size = 128
        daemon_threads = True

    server = Server(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
