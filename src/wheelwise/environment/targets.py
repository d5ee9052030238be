"""The environments a lock is written for: an interpreter, or a Python version and a
platform named on the command line (``--python-version 3.12 --platform linux``).

A named target is a synthetic answer to the interpreter query
(:data:`~wheelwise.environment.interpreter.QUERY_SCRIPT`), so that its wheel tags come
from :func:`~wheelwise.environment.interpreter.compute_tags` exactly as a real
interpreter's would: a default (GIL, non-debug) CPython of that version on that
platform. Without ``--platform`` the platform is the base interpreter's; without
``--python-version`` the version is. Platforms are named as uv's
``--python-platform`` names them (``x86_64-manylinux_2_28``,
``aarch64-apple-darwin``, ``linux``, ...) or by a wheel platform tag as pip's
``--platform`` takes it (``manylinux_2_28_x86_64``, ``macosx_13_0_arm64``,
``win_amd64``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.tags import Tag

from wheelwise.environment.interpreter import TargetEnvironment, compute_tags
from wheelwise.errors import WheelwiseError

__all__ = [
    "LockEnvironment",
    "Platform",
    "TargetError",
    "lock_targets",
    "parse_platform",
    "parse_python_version",
]


class TargetError(ValueError, WheelwiseError):
    """A ``--python-version`` or ``--platform`` that names no target wheelwise knows."""


# uv's defaults: a glibc Linux target is manylinux_2_28, macOS is 13.0, musl is 1.2.
DEFAULT_GLIBC = (2, 28)
DEFAULT_MUSL = (1, 2)
DEFAULT_MACOS = (13, 0)
_ALIASES = {
    "linux": "x86_64-unknown-linux-gnu",
    "windows": "x86_64-pc-windows-msvc",
    "macos": "aarch64-apple-darwin",
}
_LINUX_ARCHS = ("x86_64", "aarch64", "i686", "ppc64le", "s390x", "armv7l", "riscv64")
_WINDOWS = {  # triple's arch -> (sysconfig platform, platform_machine)
    "x86_64": ("win-amd64", "AMD64"),
    "aarch64": ("win-arm64", "ARM64"),
    "i686": ("win32", "x86"),
}
_WINDOWS_TAGS = {"win_amd64": "x86_64", "win_arm64": "aarch64", "win32": "i686"}
_MAC_ARCHS = {"aarch64": "arm64", "arm64": "arm64", "x86_64": "x86_64"}
_ARCH = "|".join(_LINUX_ARCHS)
_TRIPLE_GNU = re.compile(rf"({_ARCH})-unknown-linux-gnu")
_TRIPLE_MUSL = re.compile(rf"({_ARCH})-unknown-linux-musl")
_TRIPLE_MANYLINUX = re.compile(rf"({_ARCH})-manylinux(?:2014|_2_([0-9]{{1,3}}))")
_TRIPLE_DARWIN = re.compile(r"(aarch64|x86_64)-apple-darwin")
_TRIPLE_WINDOWS = re.compile(r"(x86_64|aarch64|i686)-pc-windows-msvc")
_TAG_MANYLINUX = re.compile(rf"manylinux_([0-9]{{1,3}})_([0-9]{{1,3}})_({_ARCH})")
_TAG_LEGACY_MANYLINUX = re.compile(rf"(manylinux2014|manylinux2010|manylinux1)_({_ARCH})")
_TAG_MUSLLINUX = re.compile(rf"musllinux_([0-9]{{1,3}})_([0-9]{{1,3}})_({_ARCH})")
_TAG_LINUX = re.compile(rf"linux_({_ARCH})")
_TAG_MACOS = re.compile(r"macosx_([0-9]{1,2})_([0-9]{1,2})_(arm64|x86_64)")
_LEGACY_GLIBC = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}
_PYTHON_VERSION = re.compile(r"3\.([0-9]{1,2})(?:\.([0-9]{1,2}))?")
_PLATFORM_HINT = (
    "name it as uv's --python-platform does (linux, macos, windows, "
    "x86_64-manylinux_2_28, aarch64-unknown-linux-gnu, x86_64-unknown-linux-musl, "
    "aarch64-apple-darwin, x86_64-pc-windows-msvc) or by a wheel platform tag "
    "(manylinux_2_28_x86_64, musllinux_1_2_aarch64, macosx_13_0_arm64, win_amd64)"
)


@dataclass(frozen=True)
class Platform:
    """An operating system, architecture and C library (or macOS) version."""

    name: str  # as written on the command line, lower case
    system: str  # "linux", "macos" or "windows"
    arch: str  # the triple's spelling: x86_64, aarch64, i686, ...
    glibc: tuple[int, int] | None = None
    musl: tuple[int, int] | None = None
    macos: tuple[int, int] | None = None

    def query_answer(self) -> dict[str, Any]:
        """The platform part of an interpreter query's answer."""
        if self.system == "windows":
            platform, machine = _WINDOWS[self.arch]
            markers = {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt"}
            mac_version = ""
        elif self.system == "macos":
            machine = _MAC_ARCHS[self.arch]
            major, minor = self.macos or DEFAULT_MACOS
            platform = f"macosx-{major}.{minor}-{machine}"
            markers = {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix"}
            mac_version = f"{major}.{minor}"
        else:
            platform, machine = f"linux-{self.arch}", self.arch
            markers = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
            mac_version = ""
        markers |= {"platform_machine": machine, "platform_release": "", "platform_version": ""}
        return {
            "platform": platform,
            "mac_version": mac_version,
            "maxsize_64bit": self.arch not in ("i686", "armv7l"),
            "glibc": _dotted(self.glibc),
            "musl": _dotted(self.musl),
            "markers": markers,
        }


def _dotted(version: tuple[int, int] | None) -> str | None:
    return None if version is None else f"{version[0]}.{version[1]}"


def parse_platform(text: str) -> Platform:
    """The platform *text* names (see the module's docstring); TargetError if none."""
    name = text.strip().lower()
    triple = _ALIASES.get(name, name)
    if found := _TRIPLE_GNU.fullmatch(triple):
        return Platform(name, "linux", found[1], glibc=DEFAULT_GLIBC)
    if found := _TRIPLE_MUSL.fullmatch(triple):
        return Platform(name, "linux", found[1], musl=DEFAULT_MUSL)
    if found := _TRIPLE_MANYLINUX.fullmatch(triple):
        glibc = (2, int(found[2])) if found[2] is not None else _LEGACY_GLIBC["manylinux2014"]
        return Platform(name, "linux", found[1], glibc=glibc)
    if found := _TRIPLE_DARWIN.fullmatch(triple):
        return Platform(name, "macos", found[1], macos=DEFAULT_MACOS)
    if found := _TRIPLE_WINDOWS.fullmatch(triple):
        return Platform(name, "windows", found[1])
    if found := _TAG_MANYLINUX.fullmatch(name):
        return Platform(name, "linux", found[3], glibc=(int(found[1]), int(found[2])))
    if found := _TAG_LEGACY_MANYLINUX.fullmatch(name):
        return Platform(name, "linux", found[2], glibc=_LEGACY_GLIBC[found[1]])
    if found := _TAG_MUSLLINUX.fullmatch(name):
        return Platform(name, "linux", found[3], musl=(int(found[1]), int(found[2])))
    if found := _TAG_LINUX.fullmatch(name):
        return Platform(name, "linux", found[1])
    if found := _TAG_MACOS.fullmatch(name):
        arch = "aarch64" if found[3] == "arm64" else found[3]
        return Platform(name, "macos", arch, macos=(int(found[1]), int(found[2])))
    if name in _WINDOWS_TAGS:
        return Platform(name, "windows", _WINDOWS_TAGS[name])
    raise TargetError(f"--platform {text!r}: unknown platform; {_PLATFORM_HINT}")


def parse_python_version(text: str) -> str:
    """*text* checked as a CPython 3 version, ``3.12`` or ``3.12.4``; TargetError if not."""
    version = text.strip()
    if _PYTHON_VERSION.fullmatch(version) is None:
        raise TargetError(
            f"--python-version {text!r}: expected a Python 3 version such as 3.12 or 3.12.4"
        )
    return version


@dataclass(frozen=True)
class LockEnvironment:
    """One environment a lock is resolved for: its wheel tags (best first) and marker
    values, and how it was asked for (``python_version`` and ``platform`` as given;
    None for what comes from the interpreter)."""

    tags: tuple[Tag, ...]
    markers: Mapping[str, str]
    python_version: str | None = None
    platform: str | None = None

    @property
    def full_version(self) -> str:
        return self.markers["python_full_version"]

    @property
    def environment(self) -> str:
        """The marker that holds in this target: its Python minor version, its
        ``sys_platform`` and its ``platform_machine``."""
        major, minor = self.markers["python_version"].split(".")[:2]
        lower = self.python_version if self.python_version is not None else f"{major}.{minor}"
        return (
            f'python_full_version >= "{lower}" and '
            f'python_full_version < "{major}.{int(minor) + 1}" and '
            f'sys_platform == "{self.markers["sys_platform"]}" and '
            f'platform_machine == "{self.markers["platform_machine"]}"'
        )

    def describe(self) -> str:
        """``Python 3.12 on linux`` for messages."""
        where = self.platform if self.platform is not None else "this interpreter's platform"
        return f"Python {self.markers['python_version']} on {where}"

    def record(self) -> dict[str, str]:
        """How the target was asked for, as the lock's ``[tool.wheelwise]`` keeps it."""
        found = {"python-version": self.markers["python_version"]}
        if self.python_version is not None:
            found["python-version"] = self.python_version
        if self.platform is not None:
            found["platform"] = self.platform
        return found


def interpreter_target(environment: TargetEnvironment) -> LockEnvironment:
    """The target *environment*'s interpreter is: its own tags and markers."""
    return LockEnvironment(tuple(environment.tags), dict(environment.markers))


def synthetic_target(
    python_version: str | None, platform: Platform | None, base: Mapping[str, Any] | None
) -> LockEnvironment:
    """CPython *python_version* on *platform*; what is None comes from *base* (an
    interpreter query's answer), which must then be given."""
    if base is None and (python_version is None or platform is None):
        raise ValueError("a target without a version or platform needs a base interpreter")
    if python_version is None:
        assert base is not None
        version = [int(part) for part in base["version_info"][:3]]
        full = ".".join(str(part) for part in version)
    else:
        version = [int(part) for part in python_version.split(".")] + [0]
        full = ".".join(str(part) for part in version[:3])
    major, minor = version[:2]
    answer = platform.query_answer() if platform is not None else _platform_of(base)
    markers = {
        **answer["markers"],
        "implementation_name": "cpython",
        "implementation_version": full,
        "platform_python_implementation": "CPython",
        "python_full_version": full,
        "python_version": f"{major}.{minor}",
    }
    info = {
        **answer,
        "markers": markers,
        "version_info": version[:3],
        "implementation": "cpython",
        "has_refcount": False,
        "config": {
            "EXT_SUFFIX": None,
            "Py_DEBUG": 0,
            "Py_GIL_DISABLED": 0,
            "py_version_nodot": f"{major}{minor}",
        },
    }
    return LockEnvironment(
        tuple(compute_tags(info)),
        markers,
        python_version=python_version,
        platform=platform.name if platform is not None else None,
    )


def _platform_of(base: Mapping[str, Any] | None) -> dict[str, Any]:
    assert base is not None
    keys = ("sys_platform", "platform_system", "os_name", "platform_machine")
    markers = {key: str(base["markers"][key]) for key in keys}
    markers |= {"platform_release": "", "platform_version": ""}
    fields = ("platform", "mac_version", "maxsize_64bit", "glibc", "musl")
    return {**{key: base.get(key) for key in fields}, "markers": markers}


def lock_targets(
    python_versions: Sequence[str],
    platforms: Sequence[Platform],
    base: TargetEnvironment | None,
) -> list[LockEnvironment]:
    """Every combination of *python_versions* and *platforms* (what is not given comes
    from *base*); *base*'s own target when neither is given. Two targets whose
    markers cannot be told apart are a TargetError: a lock could not say which
    entry applies where."""
    if not python_versions and not platforms:
        if base is None:
            raise ValueError("no target: give a base interpreter")
        return [interpreter_target(base)]
    info = base.info if base is not None else None
    versions: list[str | None] = list(dict.fromkeys(python_versions)) or [None]
    named: list[Platform | None] = list(dict.fromkeys(platforms)) or [None]
    targets = [
        synthetic_target(version, platform, info) for version in versions for platform in named
    ]
    seen: dict[str, LockEnvironment] = {}
    for target in targets:
        twin = seen.setdefault(target.environment, target)
        if twin is not target:
            raise TargetError(
                f"{twin.describe()} and {target.describe()} have the same environment "
                f"markers ({target.environment}); a lock cannot tell them apart: lock "
                "them into separate files (-o)"
            )
    return targets
