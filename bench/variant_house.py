"""A torch-like set of variant wheels for the lock benchmark, generated deterministically.

* ``faketorch`` 2.9.0: a non-variant (CPU) wheel, the ``null`` variant and two CUDA
  variants, ``cu126`` and ``cu130`` (``nvidia :: cuda_version_lower_bound`` and
  ``nvidia :: sm_arch``); the CUDA builds carry 4 MiB of incompressible payload (a
  fake kernel library), the CPU builds 2 MiB, and only the CUDA builds require
  ``fakecublas`` (``Requires-Dist: fakecublas; "nvidia" in variant_namespaces``);
* ``fakecublas`` 13.0.1: 3 MiB of payload, reached only through that variant marker;
* ``fakesimd`` 1.2.0: a non-variant wheel and ``x86_64 :: level`` variants v2, v3, v4;
* plain dependencies of faketorch with many small modules, as sympy, networkx, fsspec
  and filelock are: ``fakesympy``, ``fakenetworkx``, ``fakefsspec``, ``fakefilelock``.

Each wheel's top module says which build it is (``BUILD = 'cu130'``, ``BUILD = None``
for a non-variant wheel). ``H100`` is the system document of an H100 (compute
capability 9.0) with a CUDA 13 driver on an x86-64-v3 CPU: wheelwise installs
``cu130``, ``fakecublas`` and ``x86_64_v3`` there; an installer that does not choose
variants from a lock installs the non-variant builds and no ``fakecublas``.
"""

from __future__ import annotations

import ast
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from index_build import write_wheel

SCHEMA = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"
PEP850_SCHEMA = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
# The reference plugins, as uv 0.13.9 needs them named to answer for a namespace with
# its own reimplementation: ``requires`` must admit version 0.0.1 and ``plugin-api``
# name the reference's object (docs/uv-differences.md).
PROVIDERS = {
    "nvidia": {
        "requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
        "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
    },
    "x86_64": {
        "requires": ["x86-64-variant-provider>=0.0.1,<1.0.0"],
        "plugin-api": "x86_64_variant_provider",
    },
}
MiB = 1024 * 1024
Properties = dict[str, dict[str, list[str]]]

GATED = 'fakecublas; "nvidia" in variant_namespaces'
REQUIREMENTS = ["faketorch", "fakesimd"]


@dataclass(frozen=True)
class Build:
    """One wheel of a release: non-variant when *label* is None."""

    label: str | None
    properties: Properties = field(default_factory=dict)
    payload: int = 0  # bytes of incompressible data in a fake native library
    gated: bool = False  # requires GATED


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    namespace: str | None  # its variant metadata's default namespace priority
    builds: tuple[Build, ...]
    modules: int  # small Python modules besides __init__.py
    requires: tuple[str, ...] = ()


# label -> (cuda_version_lower_bound, sm_arch)
CUDA_BUILDS = {
    "cu126": ("12.6", ["80_real", "90_real"]),
    "cu130": ("13.0", ["90_real", "100_real"]),
}
CUDA_PAYLOAD = 4 * MiB
CPU_PAYLOAD = 2 * MiB
PROJECTS = (
    Project(
        "faketorch",
        "2.9.0",
        "nvidia",
        (
            Build(None, payload=CPU_PAYLOAD),
            Build("null", payload=CPU_PAYLOAD),
            *(
                Build(
                    label,
                    {"nvidia": {"cuda_version_lower_bound": [cuda], "sm_arch": archs}},
                    CUDA_PAYLOAD,
                    gated=True,
                )
                for label, (cuda, archs) in CUDA_BUILDS.items()
            ),
        ),
        modules=120,
        requires=("fakefilelock", "fakefsspec", "fakenetworkx", "fakesympy"),
    ),
    Project("fakecublas", "13.0.1", None, (Build(None, payload=3 * MiB),), modules=4),
    Project(
        "fakesimd",
        "1.2.0",
        "x86_64",
        (
            Build(None, payload=MiB // 4),
            *(
                Build(f"x86_64_{level}", {"x86_64": {"level": [level]}}, MiB // 4)
                for level in ("v2", "v3", "v4")
            ),
        ),
        modules=10,
    ),
    Project("fakesympy", "1.14.0", None, (Build(None),), modules=300),
    Project("fakenetworkx", "3.5", None, (Build(None),), modules=150),
    Project("fakefsspec", "2025.9.0", None, (Build(None),), modules=40),
    Project("fakefilelock", "3.19.1", None, (Build(None),), modules=3),
)

# What `nvidia` reports for an H100 with a CUDA 13 driver, and `x86_64` for a v3 CPU
# (fewer values than the providers list: those the wheels above could ask for).
H100: dict[str, Any] = {
    "system": {
        "nvidia": {
            "cuda_version_lower_bound": ["13.0", "13", *(f"12.{m}" for m in range(9, -1, -1))],
            "sm_arch": ["90_real", *(f"{arch}_virtual" for arch in range(90, 49, -1))],
        },
        "x86_64": {"level": ["v3", "v2", "v1"]},
    }
}
# Top module's BUILD on the H100, for wheelwise (variants chosen) and for an
# installer that takes the non-variant wheels.
VARIANT_BUILDS: dict[str, str | None] = {"faketorch": "cu130", "fakesimd": "x86_64_v3"}
PLAIN_BUILDS: dict[str, str | None] = {"faketorch": None, "fakesimd": None}
DISTRIBUTIONS = {project.name for project in PROJECTS}
WITHOUT_GATED = DISTRIBUTIONS - {"fakecublas"}


def module_text(name: str, index: int) -> bytes:
    body = "".join(f"def f{j}(x):\n    return x * {j} + {index}\n\n" for j in range(40))
    return f'"""{name} module {index}."""\n\n{body}'.encode()


def variant_json(project: Project, build: Build, *, providers: bool = False) -> bytes | None:
    """The build's ``variant.json``: PEP 825 0.1.1, or with *providers* a PEP 850
    document naming the reference plugin of the project's namespace."""
    if build.label is None:
        return None
    document: dict[str, Any] = {
        "$schema": PEP850_SCHEMA if providers else SCHEMA,
        "default-priorities": {"namespace": [project.namespace]},
    }
    if providers and project.namespace is not None:
        document["providers"] = {project.namespace: PROVIDERS[project.namespace]}
    document["variants"] = {build.label: build.properties}
    return json.dumps(document, indent=2).encode()


def write_house(
    directory: Path, seed: int = 751, *, providers: bool = False, gated: str = GATED
) -> list[Path]:
    """Every wheel of PROJECTS into *directory* (the same bytes for the same seed).

    *providers*: PEP 850 documents with the reference plugins (see
    :func:`variant_json`); *gated*: the CUDA builds' extra ``Requires-Dist``, a
    variant marker by default."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    wheels = []
    for project in PROJECTS:
        name = project.name
        modules = {f"{name}/m{i:03d}.py": module_text(name, i) for i in range(project.modules)}
        for build in project.builds:
            files = {f"{name}/__init__.py": f"BUILD = {build.label!r}\n".encode(), **modules}
            if build.payload:
                files[f"{name}/lib/lib{name}.so"] = rng.randbytes(build.payload)
            requires = [*project.requires, *([gated] if build.gated else [])]
            wheels.append(
                write_wheel(
                    directory,
                    name,
                    project.version,
                    build.label,
                    variant_json(project, build, providers=providers),
                    requires=requires,
                    files=files,
                    deflate=True,
                )
            )
    return wheels


def builds(site_packages: Path) -> dict[str, str | None]:
    """BUILD of each variant project installed in *site_packages*."""
    found: dict[str, str | None] = {}
    for name in VARIANT_BUILDS:
        init = site_packages / name / "__init__.py"
        if init.exists():
            value = ast.literal_eval(init.read_text().strip().removeprefix("BUILD = "))
            found[name] = value if isinstance(value, str) else None
    return found
