"""The environment wheels are installed into, described from its Python executable.

:meth:`TargetEnvironment.from_python` runs the target interpreter once with a
small stdlib-only script (the target need not have ``packaging``) that reports its
install scheme paths, version, implementation, marker environment, platform and C
library. The supported wheel tags are then computed in *this* process with
``packaging.tags``' public generators, fed with the target's values.

Approximations of the tag list (compared with ``packaging.tags.sys_tags()`` run in
the target itself):

- Linux: ``linux_{arch}``, then ``manylinux_2_X_{arch}`` from the target's glibc
  minor down to 2.17 (2.5 on x86_64/i686) with the legacy ``manylinux2014`` /
  ``manylinux2010`` / ``manylinux1`` aliases, then ``musllinux_1_X_{arch}`` on musl.
  The ELF checks packaging applies to i686 and armv7l interpreters and the
  ``_manylinux`` compatibility module hooks are not consulted; manylinux tags are only
  produced for the architectures packaging allows them on.
- macOS: ``packaging.tags.mac_platforms()`` with the target's macOS version and
  architecture (this includes ``universal2``).
- Other platforms: the target's own ``sysconfig.get_platform()`` tag only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging import tags as ptags

from wheelwise.models.errors import EnvironmentQueryError

if TYPE_CHECKING:
    from installer.scripts import LauncherKind

__all__ = [
    "DEFAULT_QUERY_TIMEOUT",
    "QUERY_SCRIPT",
    "TIMEOUT_VARIABLE",
    "PendingEnvironment",
    "TargetEnvironment",
    "compute_tags",
    "default_python",
    "environment_of",
    "find_python",
    "query_timeout",
    "refuse_externally_managed",
]

# How long the target interpreter may take to answer: a cold start on a slow disk
# takes seconds, a wrapper that never answers must not hang the command.
DEFAULT_QUERY_TIMEOUT = 30.0
TIMEOUT_VARIABLE = "WHEELWISE_PYTHON_TIMEOUT"

# Runs in the target interpreter: stdlib only, Python 3.8+ syntax.
QUERY_SCRIPT = r"""
import json, os, platform, site, sys, sysconfig

def full_version(info):
    version = "%d.%d.%d" % (info.major, info.minor, info.micro)
    if info.releaselevel != "final":
        version += info.releaselevel[0] + str(info.serial)
    return version

markers = {
    "implementation_name": sys.implementation.name,
    "implementation_version": full_version(sys.implementation.version),
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
}
paths = sysconfig.get_paths()
in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
if in_venv:
    headers = os.path.join(sys.prefix, "include", "site",
                           "python%d.%d" % sys.version_info[:2])
else:
    headers = paths["include"]
glibc = None
musl = None
if sys.platform.startswith("linux"):
    try:
        value = os.confstr("CS_GNU_LIBC_VERSION")
        if value:
            glibc = value.split()[1]
    except (AttributeError, OSError, ValueError, IndexError):
        pass
    if glibc is None:
        # Only here: these imports are a third of the query's start-up.
        import glob, re, subprocess
        for loader in sorted(glob.glob("/lib/ld-musl-*.so.1")):
            try:
                out = subprocess.run([loader], stderr=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL).stderr.decode()
            except OSError:
                continue
            match = re.search(r"Version (\d+)\.(\d+)", out)
            if match:
                musl = match.group(1) + "." + match.group(2)
                break

def config(name):
    value = sysconfig.get_config_var(name)
    return value if isinstance(value, (int, str)) or value is None else str(value)

def prefix_scheme():
    # pip's --prefix: the preferred "prefix" scheme, every base the placeholder.
    preferred = getattr(sysconfig, "get_preferred_scheme", None)
    name = preferred("prefix") if preferred else os.name + "_prefix"
    base = "@BASE@"
    try:
        found = sysconfig.get_paths(scheme=name, vars={
            "base": base, "platbase": base, "installed_base": base,
            "installed_platbase": base})
    except KeyError:
        return None
    return dict((key, found[key]) for key in
                ("purelib", "platlib", "scripts", "data", "include"))

def user_site_enabled():
    # As site.py decides it for a normal run (this one is isolated: -I).
    if os.environ.get("PYTHONNOUSERSITE"):
        return False
    if not in_venv:
        return True
    try:
        with open(os.path.join(sys.prefix, "pyvenv.cfg")) as cfg:
            for line in cfg:
                key, _, value = line.partition("=")
                if key.strip().lower() == "include-system-site-packages":
                    return value.strip().lower() == "true"
    except OSError:
        pass
    return False

def site_packages():
    # The site folders a normal run imports from, besides the user site (this run
    # is isolated, but reads pyvenv.cfg as any other does).
    found = getattr(site, "getsitepackages", None)
    return list(found()) if found else []

def user_scheme():
    # pip's --user: the preferred "user" scheme ($PYTHONUSERBASE is read whatever
    # -I says), and whether a normal run sees the user site.
    preferred = getattr(sysconfig, "get_preferred_scheme", None)
    name = preferred("user") if preferred else os.name + "_user"
    try:
        found = sysconfig.get_paths(scheme=name)
    except KeyError:
        return None
    paths = dict((key, found[key]) for key in
                 ("purelib", "platlib", "scripts", "data", "include"))
    paths["enabled"] = user_site_enabled()
    return paths

print(json.dumps({
    "executable": sys.executable,
    "prefix": sys.prefix,
    "base_prefix": getattr(sys, "base_prefix", sys.prefix),
    "paths": {
        "purelib": paths["purelib"],
        "platlib": paths["platlib"],
        "scripts": paths["scripts"],
        "data": paths["data"],
        "headers": headers,
        "stdlib": paths["stdlib"],
    },
    "prefix_scheme": prefix_scheme(),
    "user_scheme": user_scheme(),
    "site_packages": site_packages(),
    "version_info": list(sys.version_info[:3]),
    "implementation": sys.implementation.name,
    "markers": markers,
    "platform": sysconfig.get_platform(),
    "mac_version": platform.mac_ver()[0],
    "maxsize_64bit": sys.maxsize > 2 ** 32,
    "glibc": glibc,
    "musl": musl,
    "has_refcount": hasattr(sys, "gettotalrefcount"),
    "config": {name: config(name) for name in (
        "EXT_SUFFIX", "Py_DEBUG", "Py_GIL_DISABLED", "py_version_nodot")},
}))
"""

# packaging's manylinux architectures (see packaging._manylinux).
_MANYLINUX_ARCHS = frozenset(
    {"x86_64", "aarch64", "ppc64", "ppc64le", "s390x", "loongarch64", "riscv64", "i686", "armv7l"}
)
_LEGACY_MANYLINUX = {(2, 17): "manylinux2014", (2, 12): "manylinux2010", (2, 5): "manylinux1"}


def _normalize(value: str) -> str:
    return value.replace(".", "_").replace("-", "_").replace(" ", "_")


def _version_tuple(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    parts = text.split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None


def _linux_platforms(info: Mapping[str, Any]) -> list[str]:
    linux = _normalize(str(info["platform"]))
    if not linux.startswith("linux_"):
        return [linux]
    if not info["maxsize_64bit"]:
        linux = {"linux_x86_64": "linux_i686", "linux_aarch64": "linux_armv8l"}.get(linux, linux)
    arch = linux.split("_", 1)[1]
    archs = ["armv8l", "armv7l"] if arch == "armv8l" else [arch]
    platforms = [f"linux_{a}" for a in archs]
    glibc = _version_tuple(info.get("glibc"))
    if glibc is not None and any(a in _MANYLINUX_ARCHS for a in archs):
        oldest = 5 if set(archs) & {"x86_64", "i686"} else 17
        for a in archs:
            # glibc 2.x only: a glibc 3 would also list every 2.x minor (packaging
            # assumes 50 as the last one).
            maxima = [glibc] + [(major, 50) for major in range(glibc[0] - 1, 1, -1)]
            for major, top in maxima:
                bottom = oldest if major == 2 else 0
                for minor in range(top, bottom - 1, -1):
                    platforms.append(f"manylinux_{major}_{minor}_{a}")
                    legacy = _LEGACY_MANYLINUX.get((major, minor))
                    if legacy:
                        platforms.append(f"{legacy}_{a}")
    musl = _version_tuple(info.get("musl"))
    if musl is not None:
        for a in archs:
            platforms.extend(f"musllinux_{musl[0]}_{m}_{a}" for m in range(musl[1], -1, -1))
    return platforms


def _platforms(info: Mapping[str, Any]) -> list[str]:
    system = info["markers"]["platform_system"]
    if system == "Linux":
        return _linux_platforms(info)
    if system == "Darwin":
        version = _version_tuple(info.get("mac_version"))
        machine = str(info["markers"]["platform_machine"])
        if version is not None:
            arch = machine
            if arch == "i386" and info["maxsize_64bit"]:
                arch = "x86_64"
            elif arch == "x86_64" and not info["maxsize_64bit"]:
                arch = "i386"
            return list(ptags.mac_platforms(version, arch))
    return [_normalize(str(info["platform"]))]


def _cpython_abis(info: Mapping[str, Any]) -> list[str]:
    major, minor = info["version_info"][:2]
    config = info["config"]
    ext_suffix = str(config.get("EXT_SUFFIX") or "")
    debug = ""
    with_debug = config.get("Py_DEBUG")
    if with_debug or (
        with_debug is None and (info.get("has_refcount") or ext_suffix.startswith("_d."))
    ):
        debug = "d"
    threading = "t" if (major, minor) >= (3, 13) and config.get("Py_GIL_DISABLED") else ""
    abis = [f"cp{major}{minor}{threading}{debug}"]
    if debug:
        abis.append(f"cp{major}{minor}{threading}")
    return abis


def _generic_abis(info: Mapping[str, Any]) -> list[str]:
    ext_suffix = str(info["config"].get("EXT_SUFFIX") or "")
    parts = ext_suffix.split(".")
    if len(parts) < 3:
        return []
    soabi = parts[1]
    if soabi.startswith("cpython"):
        pieces = soabi.split("-")
        abi = "cp" + pieces[1] if len(pieces) > 1 else soabi
    elif soabi.startswith("cp"):
        abi = soabi.split("-")[0]
    elif soabi.startswith("pypy"):
        abi = "-".join(soabi.split("-")[:2])
    elif soabi.startswith("graalpy"):
        abi = "-".join(soabi.split("-")[:3])
    else:
        abi = soabi
    return [_normalize(abi)] if abi else []


def compute_tags(info: Mapping[str, Any]) -> list[ptags.Tag]:
    """The wheel tags the interpreter described by *info* (the query's answer) supports."""
    platforms = _platforms(info)
    major, minor = info["version_info"][:2]
    name = str(info["implementation"])
    short = ptags.INTERPRETER_SHORT_NAMES.get(name) or name
    nodot = info["config"].get("py_version_nodot") or f"{major}{minor}"
    result: list[ptags.Tag] = []
    if short == "cp":
        result.extend(
            ptags.cpython_tags((major, minor), abis=_cpython_abis(info), platforms=platforms)
        )
        interpreter: str | None = f"cp{nodot}"
    else:
        result.extend(
            ptags.generic_tags(f"{short}{nodot}", abis=_generic_abis(info), platforms=platforms)
        )
        interpreter = "pp3" if short == "pp" else None
    result.extend(ptags.compatible_tags((major, minor), interpreter, platforms))
    return result


@dataclass(frozen=True)
class TargetEnvironment:
    """Where wheels get installed: one Python interpreter's install scheme and tags."""

    python: Path
    prefix: Path
    purelib: Path
    platlib: Path
    scripts: Path
    data: Path
    headers: Path
    stdlib: Path
    version_info: tuple[int, int, int]
    implementation: str
    markers: dict[str, str]
    platform: str
    tags: list[ptags.Tag] = field(repr=False)
    externally_managed: str | None = None
    """The text of the PEP 668 ``EXTERNALLY-MANAGED`` file, when there is one."""
    info: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The query's answer it was built from: a lock's targets for another Python
    version keep this interpreter's platform (see ``environment.targets``)."""
    sites_before: tuple[Path, ...] = ()
    """Site folders the interpreter imports from before this target's, never changed
    here (``--user`` in a virtual environment that sees the user site: its own)."""
    sites_after: tuple[Path, ...] = ()
    """Site folders it imports from after this target's, never changed here (for
    ``--user``, the interpreter's own site-packages)."""

    @classmethod
    def from_python(
        cls, python: str | os.PathLike[str], *, timeout: float | None = None
    ) -> TargetEnvironment:
        """Query the interpreter at *python* (for example ``VENV/bin/python``)."""
        return cls.start_query(python, timeout=timeout).result()

    @classmethod
    def start_query(
        cls, python: str | os.PathLike[str], *, timeout: float | None = None
    ) -> PendingEnvironment:
        """Start querying *python* and return at once; ``result()`` waits for the
        answer (the interpreter starts while the caller does other work).

        *python* is found as :func:`find_python` says; *timeout* defaults to
        :func:`query_timeout`."""
        return PendingEnvironment(python, timeout)

    @classmethod
    def from_info(cls, info: Mapping[str, Any], *, python: Path) -> TargetEnvironment:
        """Build from the query script's answer (a dictionary)."""
        paths = {key: Path(value) for key, value in info["paths"].items()}
        marker_file = paths["stdlib"] / "EXTERNALLY-MANAGED"
        externally_managed: str | None = None
        # A virtual environment is never externally managed (PEP 668).
        if info["prefix"] == info["base_prefix"] and marker_file.is_file():
            try:
                externally_managed = marker_file.read_text(encoding="utf-8", errors="replace")
            except OSError:
                externally_managed = ""
        major, minor, micro = (int(part) for part in info["version_info"][:3])
        return cls(
            python=python,
            prefix=Path(info["prefix"]),
            purelib=paths["purelib"],
            platlib=paths["platlib"],
            scripts=paths["scripts"],
            data=paths["data"],
            headers=paths["headers"],
            stdlib=paths["stdlib"],
            version_info=(major, minor, micro),
            implementation=str(info["implementation"]),
            markers={str(k): str(v) for k, v in info["markers"].items()},
            platform=str(info["platform"]),
            tags=compute_tags(info),
            externally_managed=externally_managed,
            info=info,
        )

    @classmethod
    def current(cls) -> TargetEnvironment:
        """The environment a command works on when none is named
        (:func:`default_python`)."""
        return cls.from_python(default_python())

    def in_folder(self, folder: Path) -> TargetEnvironment:
        """This interpreter's packages installed into *folder* as pip's ``--target``
        lays them out (its ``home`` scheme, then the library folder's contents moved
        to the top): packages at the top of *folder*, scripts in ``bin``
        (``Scripts`` on Windows), headers in ``include/python``, data files in
        *folder* itself. A folder of one's own is never externally managed."""
        folder = Path(os.path.abspath(folder))  # noqa: PTH100 - keep links as given
        scripts = "Scripts" if self.markers.get("sys_platform") == "win32" else "bin"
        return dataclasses.replace(
            self,
            prefix=folder,
            purelib=folder,
            platlib=folder,
            scripts=folder / scripts,
            data=folder,
            headers=folder / "include" / "python",
            externally_managed=None,
        )

    def in_prefix(self, folder: Path) -> TargetEnvironment:
        """This interpreter's install scheme with *folder* as its prefix (pip's
        ``--prefix``: ``FOLDER/lib/pythonX.Y/site-packages``, ``FOLDER/bin``...), as
        the interpreter's own ``sysconfig`` gives it. Raises EnvironmentQueryError
        where it gives none."""
        scheme = self.info.get("prefix_scheme")
        if not isinstance(scheme, dict):
            raise EnvironmentQueryError(
                f"{self.python} gives no install scheme for a prefix (sysconfig)"
            )
        base = os.path.abspath(folder)  # noqa: PTH100 - keep links as given
        return self._with_scheme(
            scheme, Path(base), lambda text: text.replace("@BASE@", base), managed=False
        )

    def in_user_site(self) -> TargetEnvironment:
        """This interpreter's user scheme (pip's ``--user``: ``~/.local`` on Linux,
        or ``$PYTHONUSERBASE``), PEP 668 still applying, with the other site folders
        the interpreter imports from as :attr:`sites_before` and :attr:`sites_after`.
        Raises EnvironmentQueryError where the interpreter does not look there (a
        virtual environment, ``-s``)."""
        scheme = self.info.get("user_scheme")
        if not isinstance(scheme, dict):
            raise EnvironmentQueryError(f"{self.python} gives no user install scheme (sysconfig)")
        if not scheme.get("enabled"):
            where = (
                "this virtual environment"
                if self.info.get("prefix") != self.info.get("base_prefix")
                else "this interpreter (user site-packages are off)"
            )
            raise EnvironmentQueryError(
                f"--user: user site-packages are not visible in {where} ({self.python}); "
                "install without --user"
            )
        user = self._with_scheme(scheme, Path(str(scheme["data"])), str, managed=True)
        # What a normal run imports besides the user site counts as installed, as
        # pip counts it: a virtual environment's own site comes first, the base
        # interpreter's after (site.py's order).
        own = tuple(self.site_dirs)
        listed = self.info.get("site_packages")
        others = [Path(str(p)) for p in listed] if isinstance(listed, list) else []
        in_venv = self.info.get("prefix") != self.info.get("base_prefix")
        before = own if in_venv else ()
        after = [p for p in (others if in_venv else [*own, *others]) if p not in before]
        return dataclasses.replace(
            user,
            sites_before=before,
            sites_after=tuple(p for p in dict.fromkeys(after) if p not in user.site_dirs),
        )

    def _with_scheme(
        self,
        scheme: Mapping[str, object],
        prefix: Path,
        rewrite: Callable[[str], str],
        *,
        managed: bool,
    ) -> TargetEnvironment:
        """This interpreter installing by *scheme* (a query's ``sysconfig`` paths,
        each passed through *rewrite*) under *prefix*; PEP 668 kept if *managed*."""

        def path(key: str) -> Path:
            return Path(rewrite(str(scheme[key])))

        return dataclasses.replace(
            self,
            prefix=prefix,
            purelib=path("purelib"),
            platlib=path("platlib"),
            scripts=path("scripts"),
            data=path("data"),
            headers=path("include"),
            externally_managed=self.externally_managed if managed else None,
        )

    @property
    def is_externally_managed(self) -> bool:
        return self.externally_managed is not None

    @property
    def packages_at_root(self) -> bool:
        """Whether packages sit at the top of :attr:`prefix` (pip's ``--target``):
        a file of wheelwise's own there would sit among them."""
        return self.purelib == self.prefix

    @property
    def script_kind(self) -> LauncherKind:
        """installer's launcher kind for this target."""
        if self.markers.get("sys_platform") != "win32":
            return "posix"
        plat = self.platform.lower()
        if "arm64" in plat:
            return "win-arm64"
        if "arm" in plat:
            return "win-arm"
        if "amd64" in plat or "x86_64" in plat:
            return "win-amd64"
        return "win-ia32"

    def scheme(self, distribution: str) -> dict[str, str]:
        """installer's scheme dictionary (headers go in a per-distribution folder)."""
        return {
            "purelib": str(self.purelib),
            "platlib": str(self.platlib),
            "scripts": str(self.scripts),
            "data": str(self.data),
            "headers": str(self.headers / distribution),
        }

    @property
    def scheme_roots(self) -> list[Path]:
        """Folders installed files may live in."""
        return [self.purelib, self.platlib, self.scripts, self.data, self.headers]

    @property
    def site_dirs(self) -> list[Path]:
        """purelib and platlib, once each."""
        return list(dict.fromkeys([self.purelib, self.platlib]))


# Where a virtual environment keeps its interpreter (POSIX, then Windows).
_VENV_PYTHONS = ("bin/python", "bin/python3", "Scripts/python.exe")


def _venv_python(folder: Path) -> Path | None:
    return next((folder / name for name in _VENV_PYTHONS if (folder / name).is_file()), None)


def default_python() -> str:
    """The interpreter a command works on when none is named: that of the activated
    virtual environment (``$VIRTUAL_ENV``, as uv takes it), else the running one (as
    pip). Raises :class:`EnvironmentQueryError` for a ``$VIRTUAL_ENV`` that holds no
    interpreter."""
    active = os.environ.get("VIRTUAL_ENV", "").strip()
    if not active:
        return sys.executable
    found = _venv_python(Path(active))
    if found is None:
        raise EnvironmentQueryError(
            f"VIRTUAL_ENV={active}: no bin/python there; activate an existing virtual "
            "environment, or give --python"
        )
    return str(found)


def find_python(python: str | os.PathLike[str]) -> Path:
    """The interpreter *python* names, as an absolute path.

    A path with a directory separator (``./python``, ``venv/bin/python``) or the name
    of an existing file is that file, never a ``PATH`` lookup; a virtual
    environment's folder (``.venv``) is its interpreter, as uv takes it; only a bare
    name that is no file here (``python3.12``) is looked up on ``PATH``, as a shell
    would. Raises :class:`EnvironmentQueryError` when there is no such interpreter."""
    text = os.fspath(python)
    separators = [os.sep] + ([os.altsep] if os.altsep else [])
    if any(sep in text for sep in separators) or os.path.lexists(text):
        given = Path(text)  # made absolute: a relative name must not reach PATH
        if not given.exists():
            raise EnvironmentQueryError(f"{text}: no such Python executable")
        if given.is_dir():
            inside = _venv_python(given)
            if inside is None:
                raise EnvironmentQueryError(
                    f"{text}: a folder without bin/python; give an interpreter, or a "
                    "virtual environment's folder"
                )
            given = inside
        return given if given.is_absolute() else Path.cwd() / given
    found = shutil.which(text)
    if found is None:
        raise EnvironmentQueryError(
            f"{text}: no such Python executable (no file of that name here, and none on PATH)"
        )
    return Path(found)


def query_timeout() -> float:
    """Seconds to wait for the target interpreter's answer: ``$WHEELWISE_PYTHON_TIMEOUT``,
    or :data:`DEFAULT_QUERY_TIMEOUT`."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_QUERY_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise EnvironmentQueryError(
            f"{TIMEOUT_VARIABLE}={text!r}: expected a positive number of seconds"
        )
    return value


class PendingEnvironment:
    """A query of a target interpreter that is running; see
    :meth:`TargetEnvironment.start_query`."""

    def __init__(self, python: str | os.PathLike[str], timeout: float | None = None) -> None:
        self.executable = Path(python)
        self.timeout = DEFAULT_QUERY_TIMEOUT if timeout is None else timeout
        self._error: EnvironmentQueryError | None = None
        self._process: subprocess.Popen[bytes] | None = None
        try:
            self.executable = find_python(python)
            self.timeout = query_timeout() if timeout is None else timeout
        except EnvironmentQueryError as exc:
            self._error = exc
            return
        try:
            self._process = subprocess.Popen(
                [str(self.executable), "-I", "-c", QUERY_SCRIPT],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # Its own process group: a stuck interpreter is stopped with every
                # child it started (a shell wrapper's `sleep` would hold the pipes).
                start_new_session=os.name == "posix",
            )
        except OSError as exc:
            self._error = EnvironmentQueryError(
                f"{self.executable}: cannot run the interpreter: {exc}"
            )

    def __enter__(self) -> PendingEnvironment:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the query if its answer was never taken (no process is left behind)."""
        process = self._process
        if process is not None and process.returncode is None:
            self._stop(process)

    @staticmethod
    def _stop(process: subprocess.Popen[bytes]) -> None:
        """Kill the interpreter and its process group; do not wait for its pipes."""
        try:
            if os.name == "posix":
                os.killpg(process.pid, signal.SIGKILL)
            else:  # pragma: no cover - Windows
                process.kill()
        except OSError:
            pass  # already gone
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        process.wait()

    def result(self) -> TargetEnvironment:
        """The environment; raises :class:`EnvironmentQueryError` when the query failed."""
        if self._error is not None:
            raise self._error
        assert self._process is not None
        executable = self.executable
        try:
            stdout, stderr = self._process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._stop(self._process)
            raise EnvironmentQueryError(
                f"{executable}: the interpreter did not answer in {self.timeout:g} s "
                f"(set {TIMEOUT_VARIABLE} to wait longer)"
            ) from None
        if self._process.returncode != 0:
            detail = stderr.decode(errors="replace").strip().splitlines()[-1:]
            raise EnvironmentQueryError(
                f"{executable}: querying the interpreter failed (exit {self._process.returncode})"
                + (f": {detail[0]}" if detail else "")
            )
        return environment_of(stdout, executable)


def environment_of(answer: bytes, executable: Path) -> TargetEnvironment:
    """The environment the query's *answer* (from *executable*) describes. Raises
    EnvironmentQueryError for one that is not JSON, or JSON of another shape (not a
    Python that ran the query script)."""
    try:
        info = json.loads(answer)
    except ValueError:
        raise EnvironmentQueryError(f"{executable}: unreadable answer to the query") from None
    try:
        return TargetEnvironment.from_info(info, python=executable)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise EnvironmentQueryError(
            f"{executable}: an answer to the query without what it asks "
            f"({type(exc).__name__}: {exc}); is it a Python interpreter?"
        ) from None


def refuse_externally_managed(env: TargetEnvironment, *, override: str) -> None:
    """Raise ExternallyManagedError when *env* is externally managed (PEP 668): the
    one check of every path that changes an environment. *override* names how the
    caller overrides it (the command's option, or the library's argument); the
    message gives the file's own ``Error``, on one line, when it has one."""
    if not env.is_externally_managed:
        return
    from wheelwise.models.errors import ExternallyManagedError  # only when refusing

    detail = _managed_error(env.externally_managed or "")
    raise ExternallyManagedError(
        f"{env.prefix} is externally managed (PEP 668: {env.stdlib / 'EXTERNALLY-MANAGED'}); "
        f"use a virtual environment, or pass {override} to override"
        + (f"; it says: {detail}" if detail else "")
    )


def _managed_error(marker: str) -> str:
    """The ``Error`` of an ``EXTERNALLY-MANAGED`` file (PEP 668), on one line."""
    import configparser  # only when refusing

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(marker)
        message = parser.get("externally-managed", "Error", fallback="")
    except configparser.Error:
        message = ""
    return " ".join((message or marker).split())
