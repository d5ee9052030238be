"""The first stage of an install: decide what to install, and change nothing.

:func:`decide` resolves the requirements for the target and picks each package's
wheel; the answer is a :class:`Plan`, a plain value that ``--dry-run`` shows,
``--report`` writes, and the fetch stage (:mod:`wheelwise.install.fetch`) works
from. Nothing here writes to the target, and nothing here depends on a wheel
fetched ahead for its answer: the :class:`~wheelwise.resolve.lookahead.Lookahead`
only answers sooner what the finder would answer. The lock command resolves
through :func:`resolve_with` too, once per target.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import NormalizedName, canonicalize_name

from wheelwise.client.index_client import IndexFile, IndexSource
from wheelwise.client.index_file import SDIST
from wheelwise.environment.installed import InstalledDist
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.models.errors import ResolveError
from wheelwise.resolve.finder import link_of, source_label
from wheelwise.resolve.lookahead import Lookahead
from wheelwise.resolve.resolver import (
    PackageNotFound,
    Resolution,
    ResolvedPackage,
    resolve,
    upgrades,
)
from wheelwise.resolve.selection import SupportedFor

__all__ = ["Plan", "PlannedPackage", "decide", "resolve_with"]


@dataclass(frozen=True)
class PlannedPackage:
    """One resolved package, with where it comes from and whether it gets installed."""

    package: ResolvedPackage
    file: IndexFile
    source: IndexSource
    requested: bool
    # Already installed at this version (and variant): left alone.
    skipped: bool
    properties: tuple[str, ...]
    metadata: bytes = field(repr=False)
    # Where the variant metadata that chose the wheel came from (its URL, or
    # finder.WHEELS_METADATA); None for a wheel chosen without any.
    variant_source: str | None = None
    # The sdist the wheel was built from (``file`` is then the built wheel).
    built_from: IndexFile | None = None
    # PEP 610's direct_url.json for a package given as a direct reference.
    direct_url: str | None = None
    # The variant label of the build installed now (where one is), which a skipped
    # package keeps whatever build the resolver chose.
    installed_variant: str | None = None

    @property
    def name(self) -> NormalizedName:
        return self.package.name


@dataclass(frozen=True)
class Plan:
    """What an install would do: the target, each package of the resolution (those
    already installed marked ``skipped``), and the notes of the resolution."""

    environment: TargetEnvironment
    packages: tuple[PlannedPackage, ...]
    notes: tuple[str, ...] = ()

    @property
    def to_install(self) -> list[PlannedPackage]:
        return [p for p in self.packages if not p.skipped]


def resolve_with(requirements: Iterable[str], lookahead: Lookahead, **options: Any) -> Resolution:
    """:func:`~wheelwise.resolve.resolver.resolve` over *lookahead* (the finder it
    serves, with what it fetched ahead), which hears the resolver's hints. A
    project found nowhere says where it was looked for. Once resolution ends,
    nothing more is fetched ahead of it."""
    try:
        return resolve(requirements, lookahead, hints=lookahead, **options)
    except ResolveError as exc:
        finder = lookahead.finder
        advice = next(filter(None, map(finder.strategy_advice, exc.projects)), "")
        if isinstance(exc, PackageNotFound):
            searched = ", ".join(source_label(s) for s in finder.sources_of(exc.name))
            raise PackageNotFound(f"{exc}; searched {searched}{advice}", exc.name) from None
        if advice:
            exc.advise(advice)
        raise
    finally:
        lookahead.end_resolution()


def decide(
    requirements: Sequence[str],
    env: TargetEnvironment,
    installed: Mapping[str, InstalledDist],
    lookahead: Lookahead,
    *,
    supported: SupportedFor,
    requested: Iterable[str],
    constraints: Sequence[str] = (),
    pre: bool = False,
    upgrade: bool | Collection[str] = False,
    no_deps: bool = False,
    no_variant: bool = False,
    variant_choice: Mapping[str, str] | None = None,
    reinstall: bool | Collection[str] = False,
    direct_urls: Mapping[str, str] | None = None,
) -> Plan:
    """The plan for installing *requirements* into *env*, where *installed* is what
    is there already: resolved over *lookahead* (see :func:`resolve_with`; the
    keyword arguments are the resolver's), each package marked ``skipped`` when that
    build is installed already, unless *reinstall* is True or names it (normalized
    names). *requested* names the projects asked for by name. *direct_urls*: the
    ``direct_url.json`` text of each project given as a direct reference (by
    normalized name), installed again every time, as pip does."""
    finder = lookahead.finder
    # What is kept as installed needs no download (and an sdist no build) to be read.
    lookahead.keep_installed(
        dist
        for name, dist in installed.items()
        if not _installed_again(name, reinstall, direct_urls)
    )
    resolution = resolve_with(
        requirements,
        lookahead,
        tags=env.tags,
        environment=env.markers,
        supported=supported,
        constraints=constraints,
        pre=pre,
        upgrade=upgrade,
        installed={name: dist.version for name, dist in installed.items()},
        installed_labels={
            name: dist.variant
            for name, dist in installed.items()
            if not _installed_again(name, reinstall, direct_urls)
        },
        no_deps=no_deps,
        no_variant=no_variant,
        variant_choice=variant_choice,
    )
    asked = set(requested)
    chosen = {canonicalize_name(name) for name in variant_choice or {}}
    packages: list[PlannedPackage] = []
    for package in resolution:
        link = link_of(package.file)
        current = installed.get(package.name)
        # An abi_dependency build must match its dependency's resolved version:
        # another installed build of the same version is replaced, even without -U;
        # so is one where a build was asked for (NAME#LABEL, --no-variant), and one
        # whose own dependencies did not fit.
        keep_variant = (
            not upgrades(upgrade, package.name)
            and not package.abi
            and not package.replaces_kept
            and package.name not in chosen
            and not (no_variant and current is not None and current.variant is not None)
        )
        direct_url = (direct_urls or {}).get(package.name)
        skipped = (
            current is not None
            and package.is_installed
            and (keep_variant or current.variant == package.label)
            and not _installed_again(package.name, reinstall, direct_urls)
        )
        release = finder.release(package.name, package.version)
        metadata = release.variant_metadata() if release is not None else None
        properties: tuple[str, ...] = ()
        variant_source = None
        if metadata is not None and package.label in metadata.variants:
            properties = tuple(str(p) for p in metadata.properties(package.label))
            assert release is not None
            variant_source = release.variant_source
        built = finder.built_from(link.file) if link.file.kind == SDIST else None
        packages.append(
            PlannedPackage(
                package=package,
                file=built if built is not None else link.file,
                source=link.source,
                requested=package.name in asked,
                skipped=skipped,
                properties=properties,
                metadata=lookahead.core_metadata(package.file),
                variant_source=variant_source,
                built_from=link.file if built is not None else None,
                direct_url=direct_url,
                installed_variant=current.variant if current is not None else None,
            )
        )
    return Plan(env, tuple(packages), tuple(resolution.notes))


def _installed_again(
    name: str, reinstall: bool | Collection[str], direct_urls: Mapping[str, str] | None
) -> bool:
    """Whether *name* is installed again even at its installed version: *reinstall*
    is True or names it, or it is given as a direct reference (as pip does)."""
    return (
        reinstall is True
        or (reinstall is not False and name in reinstall)
        or name in (direct_urls or {})
    )
