"""Building wheels from source: sdists from an index, local projects, archives.

Each build runs the project's PEP 517 backend (:func:`wheelwise.wheels.pep517.
build_plain_wheel`) for the *target* interpreter. In an isolated build environment
(the default), the build requirements are resolved and installed by wheelwise
itself, with the install's own sources, caches and machine: a project that builds
against torch gets the torch build that fits the target machine, as its install
would. With ``--no-build-isolation``, the backend runs in the target environment.

Wheels built from an sdist with a known sha256 are kept in the cache
(:mod:`wheelwise.cache.built_wheels`) under that hash, the target interpreter's tag
and the machine (``--system``, else "this machine"), and are not built again.
Local project folders are built every time, as pip does.

A build requirement that itself needs building is built the same way; a project
whose build needs itself (directly or not) is refused, naming the chain.
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.cache.built_wheels import BuiltWheels, built_key
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.policy.hashes import file_sha256
from wheelwise.variants.errors import InvalidWheelFilename
from wheelwise.variants.filenames import WheelFilename
from wheelwise.wheels.errors import BuildError
from wheelwise.wheels.pep517 import build_plain_wheel
from wheelwise.wheels.sdist import SourceArchiveError, unpack_source

__all__ = ["InstallRequirements", "SourceBuilder", "built_name", "copy_wheel"]

InstallRequirements = Callable[[str, Sequence[str], tuple[str, ...]], None]
"""Installs requirements into the environment of an interpreter (the build
environment's), for the builds of the projects named (outermost first): the
installer of the install that builds. Raises BuildError."""

# How deep build requirements may need builds of their own.
MAX_BUILD_DEPTH = 8


def built_name(wheel: Path) -> tuple[NormalizedName, Version]:
    """The project name and version of the wheel at *wheel* (built, or given as a
    file: a variant wheel's name too, ``pkg-1.0-py3-none-any-cu128.whl``)."""
    try:
        parsed = WheelFilename.parse(wheel.name)
        return parsed.name, parsed.version
    except (InvalidWheelFilename, InvalidVersion) as exc:
        raise BuildError(f"{wheel.name}: not a valid wheel name ({exc})") from None


class SourceBuilder:
    """Builds wheels for *env*, the install's target. Built files go into the folder
    *scratch* gives (the run's scratch, made when first asked for); wheels built from
    sdists with a known hash are kept in *store* (None: ``--no-cache``). *install*
    puts build requirements into an isolated build environment (with *isolation*);
    *machine* describes what the machine was taken to support (part of the cache
    key); *chain* names the projects whose builds this install serves. *told* hears
    one line as each build starts (a build may take minutes), *output* each line a
    backend prints."""

    def __init__(
        self,
        env: TargetEnvironment,
        scratch: Callable[[], Path],
        store: BuiltWheels | None,
        *,
        install: InstallRequirements,
        isolation: bool = True,
        machine: str = "this machine",
        chain: tuple[str, ...] = (),
        told: Callable[[str], None] | None = None,
        output: Callable[[str], None] | None = None,
        config_settings: Mapping[str, str | list[str]] | None = None,
    ) -> None:
        self.env = env
        self._scratch = scratch
        self.store = store
        self.install = install
        self.isolation = isolation
        self.machine = machine
        self.chain = chain
        # Hears "building ..." before each build, and each line a backend prints.
        self.told = told
        self.output = output
        # PEP 517's config_settings for every backend (-C KEY=VALUE): part of the key
        # of what is kept, as another build comes of them.
        self.config_settings = dict(config_settings or {})
        self._count = itertools.count(1)

    @property
    def folder(self) -> Path:
        """The run's scratch folder (made when first needed; absolute: backends run
        in the source folder)."""
        return self._scratch().absolute()

    def _new_folder(self, kind: str) -> Path:
        folder = self.folder / f"{kind}-{next(self._count)}"
        folder.mkdir(parents=True)
        return folder

    def _check_chain(self, name: str | None, where: str) -> None:
        chain = self.chain
        if len(chain) >= MAX_BUILD_DEPTH:
            raise BuildError(
                f"{where}: build requirements nest more than {MAX_BUILD_DEPTH} builds deep "
                f"({' -> '.join(chain)})"
            )
        if name is not None and canonicalize_name(name) in chain:
            raise BuildError(
                f"{where}: building it needs itself ({' -> '.join([*chain, name])}); install a "
                f"wheel of {name} first, or pass --only-binary {name}"
            )

    def sdist(
        self,
        archive: Path,
        *,
        origin: str,
        sha256: str | None = None,
        expect: tuple[NormalizedName, Version] | None = None,
    ) -> Path:
        """The wheel built from the source archive *archive* (as the user knows it:
        *origin*), kept in the cache by *sha256* (computed when not given). With
        *expect*, the wheel must be of that project and version."""
        self._check_chain(expect[0] if expect else None, origin)
        digest = sha256 or file_sha256(archive)
        settings = json.dumps(self.config_settings, sort_keys=True) if self.config_settings else ""
        key = built_key(digest, str(self.env.tags[0]), self.machine + settings)
        if self.store is not None:
            found = self.store.find(key)
            if found is not None:
                return self._checked(found, expect, origin)
        with tempfile.TemporaryDirectory(prefix="src-", dir=self.folder) as unpacked:
            try:
                tree = unpack_source(archive, Path(unpacked))
            except SourceArchiveError as exc:
                raise BuildError(str(exc).replace(str(archive), origin)) from None
            except OSError as exc:
                raise BuildError(
                    f"{origin}: cannot unpack it into {unpacked} ({exc.strerror or exc}); free "
                    "some space there, or set TMPDIR"
                ) from None
            built = self._build(tree, origin, editable=False, name=expect[0] if expect else None)
        built = self._checked(built, expect, origin)
        if self.store is not None:
            kept = self.store.keep(key, built)
            if kept is not None:
                return kept
        return built

    def tree(self, source_dir: Path, *, origin: str, editable: bool = False) -> Path:
        """The wheel (editable with *editable*) built from the project folder
        *source_dir*."""
        self._check_chain(None, origin)
        if not source_dir.is_dir():
            raise BuildError(f"{origin}: no such folder")
        return self._build(source_dir, origin, editable=editable, name=None)

    def _build(self, tree: Path, origin: str, *, editable: bool, name: str | None) -> Path:
        out = self._new_folder("wheel")
        if self.told is not None:
            self.told(f"building {'an editable wheel of ' if editable else ''}{origin}")
        chain = (*self.chain, canonicalize_name(name or tree.name))
        return build_plain_wheel(
            tree,
            out,
            isolation=self.isolation,
            python=str(self.env.python),
            install=lambda python, requirements: self.install(python, requirements, chain),
            editable=editable,
            name=origin,
            scratch=self.folder,
            output=self.output,
            config_settings=self.config_settings or None,
        )

    def _checked(
        self, wheel: Path, expect: tuple[NormalizedName, Version] | None, origin: str
    ) -> Path:
        if expect is not None:
            name, version = built_name(wheel)
            if (name, version) != expect:
                raise BuildError(
                    f"{origin}: the build gave {wheel.name}, not {expect[0]} {expect[1]} as the "
                    "file name says"
                )
        return wheel


def copy_wheel(wheel: Path, folder: Path) -> Path:
    """*wheel* copied into *folder* (where the install's local source lists it)."""
    target = folder / wheel.name
    if target.exists():
        raise BuildError(f"two sources give the same wheel {wheel.name}")
    shutil.copyfile(wheel, target)
    return target
