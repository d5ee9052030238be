"""The resolver core of ``wheelwise install``, on top of resolvelib.

A candidate is one release of a package with the wheel chosen for the target
(:func:`~wheelwise.resolve.selection.select_wheel`): a release without a usable
wheel is never a candidate. Dependencies are the chosen wheel's ``Requires-Dist``
lines whose markers hold for the target environment, the requested extras and
the variant markers of that wheel (PEP 825 "Evaluating variant markers").
Extras follow resolvelib's example: ``name[extra]`` is its own identifier whose
candidates depend on ``name`` pinned to the same version.

A release whose variants use ``abi_dependency`` (PEP 817) gives one candidate per
build (:func:`~wheelwise.resolve.selection.select_builds`), and a build depends on
what its properties imply: ``abi_dependency :: torch :: 2.9`` adds ``torch==2.9.*``.
So the resolver picks the build that fits the dependency's version, and backtracks
to another build, another release or a non-variant wheel when none does. Builds
matching an installed version (without ``upgrade``) or an exact pin (``==``) among
the requirements and constraints are tried first; an installed version is
preferred, not fixed, as for any dependency.
"""

from __future__ import annotations

import collections
import functools
import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as PackagingRequirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, sys_tags
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version
from resolvelib import AbstractProvider, BaseReporter, ResolutionImpossible, Resolver
from resolvelib import ResolutionTooDeep as _TooDeep
from resolvelib.structs import RequirementInformation

from wheelwise.models.errors import NoCompatibleWheel, ResolveError, VariantChoiceError
from wheelwise.resolve.candidates import (
    Finder,
    Hints,
    ReleaseFiles,
    Requirement,
    WheelFile,
    identifier,
)
from wheelwise.resolve.formats import wheels_only_advice
from wheelwise.resolve.selection import (
    ListedWheel,
    Selection,
    SupportedFor,
    TargetSpec,
    Unavailable,
    select_builds,
)
from wheelwise.resolve.version_window import window
from wheelwise.variants.markers import (
    evaluate_marker,
    parse_requirement,
    uses_variant_markers,
    variant_environment,
)

if TYPE_CHECKING:  # rankings and properties exist only for releases with variant wheels
    from wheelwise.variants.metadata import VariantMetadata
    from wheelwise.variants.ordering import Ranking
    from wheelwise.variants.properties import VariantProperty

__all__ = [
    "AbiMatch",
    "NoCompatibleWheel",
    "PackageNotFound",
    "Resolution",
    "ResolutionConflict",
    "ResolveError",
    "ResolvedPackage",
    "VariantChoiceError",
    "resolve",
]

MAX_ROUNDS = 2000
# Candidates whose metadata is fetched ahead once the resolver passes over the first
# of a project: at first, and at most (it grows with the candidates passed over).
LOOK_AHEAD = 8
MAX_LOOK_AHEAD = 64
# Versions a conflict message lists per project.
SHOWN_VERSIONS = 10
# What a wheel whose own METADATA leaves out the target's Python requires: no
# project has this name, so nothing satisfies it, and the resolver goes on to the
# next candidate (an index's Requires-Python leaves such files out before).
_PYTHON = NormalizedName("<requires-python>")


class PackageNotFound(ResolveError):
    """The source knows no release of a required package (*name*, when one)."""

    def __init__(self, message: str, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.projects = (name,) if name else ()


class ResolutionConflict(ResolveError):
    """The requirements cannot all be met by the available releases (of *projects*)."""

    def __init__(self, message: str, projects: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.projects = tuple(projects)


class AbiMatch(NamedTuple):
    """An ``abi_dependency`` property of the chosen build and the dependency's
    version in the resolution (None with ``no_deps`` when it is not installed)."""

    property: VariantProperty
    name: NormalizedName
    version: Version | None

    def __str__(self) -> str:
        found = "not installed" if self.version is None else f"{self.name} {self.version}"
        return f"{self.property} ({found})"


@dataclass(frozen=True)
class ResolvedPackage:
    """One package of the resolution: what the installer would install, and why."""

    name: NormalizedName
    version: Version
    file: WheelFile
    # The variant label of the chosen wheel (None: a non-variant wheel).
    label: str | None
    # The property that put the chosen variant first (RankedVariant.best[0]).
    won_by: VariantProperty | None
    # Labels of this release the machine does not support, with the reasons.
    rejected: Mapping[str, str]
    extras: frozenset[str] = frozenset()
    # The version already installed (from the ``installed`` input), if any.
    installed: Version | None = None
    # Packages this one depends on in the resolution (its chosen dependencies).
    requires: tuple[NormalizedName, ...] = ()
    ranking: Ranking | None = field(default=None, compare=False, repr=False)
    # The chosen build's abi_dependency properties and the versions they matched.
    abi: tuple[AbiMatch, ...] = ()
    # Locking (``every_wheel``): every wheel of the release that fits the tags, and
    # those of ``requires`` required only through specifiers with variant markers.
    listed: tuple[ListedWheel, ...] = ()
    variant_gated: tuple[NormalizedName, ...] = ()
    # The installed build of this version was tried first, and its dependencies did
    # not fit: this build replaces it.
    replaces_kept: bool = False

    @property
    def is_installed(self) -> bool:
        """Whether exactly this version is already installed."""
        return self.installed == self.version


@dataclass(frozen=True)
class Resolution:
    """The resolved packages, dependencies before their dependents."""

    packages: Mapping[NormalizedName, ResolvedPackage]
    # What the user should hear about the choices: a yanked release installed
    # because it is pinned, a pre-release because nothing else fits.
    notes: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[ResolvedPackage]:
        return iter(self.packages.values())

    def __len__(self) -> int:
        return len(self.packages)

    def __getitem__(self, name: str) -> ResolvedPackage:
        return self.packages[canonicalize_name(name)]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and canonicalize_name(name) in self.packages


@dataclass(frozen=True)
class Candidate:
    """One release of a package, with the wheel chosen for the target."""

    name: NormalizedName
    version: Version
    extras: frozenset[str]
    selection: Selection = field(compare=False)
    # The abi_dependency values of the build (one candidate per build of a release).
    abi: tuple[VariantProperty, ...] = ()
    # The variant label (None: non-variant) where a release offers more than one
    # build without abi_dependency values (an installed build kept, then the
    # machine's best); empty otherwise.
    build: tuple[str | None, ...] = ()
    # Offered after the installed build (whose dependencies did not fit).
    after_kept: bool = field(default=False, compare=False)

    @property
    def identifier(self) -> str:
        return identifier(self.name, self.extras)

    def __str__(self) -> str:
        build = f" (variant {self.selection.label})" if self.abi or self.build else ""
        return f"{self.identifier} {self.version}{build}"


def resolve(
    requirements: Iterable[str],
    finder: Finder,
    *,
    supported: SupportedFor,
    tags: Sequence[Tag] | None = None,
    environment: Mapping[str, str] | None = None,
    constraints: Iterable[str] = (),
    pre: bool = False,
    upgrade: bool | Collection[str] = False,
    installed: Mapping[str, str | Version] | None = None,
    installed_labels: Mapping[str, str | None] | None = None,
    no_deps: bool = False,
    no_variant: bool = False,
    variant_choice: Mapping[str, str] | None = None,
    max_rounds: int = MAX_ROUNDS,
    every_wheel: bool = False,
    hints: Hints | None = None,
) -> Resolution:
    """Resolve *requirements* (PEP 508 strings) into one wheel per package.

    *supported* gives the machine's properties for a release's variant metadata;
    *tags* (best first) and *environment* (marker values) describe the target
    Python and default to this interpreter's. *constraints* narrow versions
    without adding packages. Without *upgrade* (True, or the normalized names it
    applies to), an *installed* version that meets the requirements is preferred,
    and where it is chosen, the installed build (its variant label from
    *installed_labels*, None for a non-variant wheel) before the machine's best, when
    the machine supports it: it is the build that stays, and its dependencies count.
    *variant_choice* picks a variant by label per package. Raises
    :class:`ResolveError` subclasses with readable messages.

    With *every_wheel* (locking), each release's candidate lists every wheel that
    fits *tags*, whatever *supported* says (it is not asked), and depends on the
    union of their requirements, each wheel's read with every property of its
    variant label (``ResolvedPackage.listed`` and ``variant_gated``).

    *hints*, if given, hears what the resolver will probably ask for next.
    """
    env: dict[str, str] = dict(default_environment())  # type: ignore[arg-type]
    env.update(environment or {})
    roots = [r for text in requirements if (r := _root(text, env)) is not None]
    constraint_map = _constraints(constraints, env)
    installed_versions = _installed(installed or {})
    target = TargetSpec(
        tags=list(tags) if tags is not None else list(sys_tags()),
        supported=supported,
        no_variant=no_variant,
        variant_choice={canonicalize_name(k): v for k, v in (variant_choice or {}).items()},
        abi_preferred=_abi_preferred(roots, constraint_map, installed_versions, upgrade),
        every_wheel=every_wheel,
        kept_builds=_kept_builds(installed_versions, installed_labels or {}, upgrade),
    )
    provider = _Provider(
        finder,
        target,
        env,
        constraints=constraint_map,
        pre=pre,
        upgrade=upgrade,
        installed=installed_versions,
        no_deps=no_deps,
        hints=hints,
    )
    provider._prefetch(roots)
    resolver: Resolver[Requirement, Candidate, str] = Resolver(provider, BaseReporter())
    try:
        result = resolver.resolve(roots, max_rounds=max_rounds)
    except ResolutionImpossible as exc:
        raise provider.explain(exc.causes) from None
    except _TooDeep as exc:
        raise ResolutionConflict(
            f"resolution did not finish after {max_rounds} rounds of backtracking"
        ) from exc
    resolution = _resolution(result.mapping, result.graph, provider.installed, provider.gated)
    return Resolution(resolution.packages, provider.notes(resolution))


# -- inputs --------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> PackagingRequirement:
    """:func:`parse_requirement`, once per text: each dependency line is read for its
    name and range, then again for its marker, and many lines repeat across
    candidates. The result is shared: never modify it."""
    return parse_requirement(text)


def _requirement(text: str, where: str) -> Requirement:
    try:
        parsed = _parsed(text)
    except InvalidRequirement as exc:
        raise ResolveError(f"invalid requirement {text!r} ({where}): {exc}") from None
    if parsed.url:
        raise ResolveError(
            f"{text!r} ({where}): direct URL requirements are not supported; install from an index"
        )
    return Requirement(
        canonicalize_name(parsed.name),
        frozenset(canonicalize_name(e) for e in parsed.extras),
        parsed.specifier,
        text.strip(),
    )


def _root(text: str, env: Mapping[str, str]) -> Requirement | None:
    parsed = _requirement(text, "requested")
    marker = _parsed(text).marker
    if marker is not None and not evaluate_marker(
        marker, variant_environment(None), {**env, "extra": ""}
    ):
        return None
    return parsed


def _constraints(texts: Iterable[str], env: Mapping[str, str]) -> dict[str, SpecifierSet]:
    found: dict[str, SpecifierSet] = {}
    for text in texts:
        constraint = _root(text, env)
        if constraint is not None:
            found[constraint.name] = found.get(constraint.name, SpecifierSet()) & (
                constraint.specifier
            )
    return found


def _exact_pin(specifier: SpecifierSet) -> Version | None:
    """The version an ``==`` specifier (no wildcard) pins, if any."""
    for spec in specifier:
        if spec.operator in ("==", "===") and not spec.version.endswith(".*"):
            try:
                return Version(spec.version)
            except InvalidVersion:
                return None
    return None


def upgrades(upgrade: bool | Collection[str], name: str) -> bool:
    """Whether *upgrade* (True, False, or the normalized names ``-P`` gives) asks for
    the newest release of *name* rather than the installed one."""
    return upgrade is True or (upgrade is not False and name in upgrade)


def _abi_preferred(
    roots: Iterable[Requirement],
    constraints: Mapping[str, SpecifierSet],
    installed: Mapping[str, Version],
    upgrade: bool | Collection[str],
) -> dict[NormalizedName, Version]:
    """Versions abi_dependency builds should match first: what is installed (unless
    upgrading), overridden by exact pins among the requirements and constraints."""
    preferred = {
        name: v
        for name, v in ((canonicalize_name(k), v) for k, v in installed.items())
        if not upgrades(upgrade, name)
    }
    pins = [(canonicalize_name(name), spec) for name, spec in constraints.items()]
    pins += [(root.name, root.specifier) for root in roots]
    for name, specifier in pins:
        version = _exact_pin(specifier)
        if version is not None:
            preferred[name] = version
    return preferred


def _kept_builds(
    installed: Mapping[str, Version],
    labels: Mapping[str, str | None],
    upgrade: bool | Collection[str],
) -> dict[NormalizedName, tuple[Version, str | None]]:
    """The installed builds kept where their version is chosen: those *labels* names,
    unless upgrading."""
    named = {canonicalize_name(name): label for name, label in labels.items()}
    return {
        name: (version, named[name])
        for name, version in ((canonicalize_name(k), v) for k, v in installed.items())
        if name in named and not upgrades(upgrade, name)
    }


def _installed(installed: Mapping[str, str | Version]) -> dict[str, Version]:
    versions: dict[str, Version] = {}
    for name, version in installed.items():
        try:
            versions[canonicalize_name(name)] = Version(str(version))
        except InvalidVersion:
            continue  # a dist with a broken version is never "already satisfied"
    return versions


# -- the provider --------------------------------------------------------------------


class _Provider(AbstractProvider[Requirement, Candidate, str]):
    def __init__(
        self,
        finder: Finder,
        target: TargetSpec,
        env: Mapping[str, str],
        *,
        constraints: Mapping[str, SpecifierSet],
        pre: bool,
        upgrade: bool | Collection[str],
        installed: Mapping[str, Version],
        no_deps: bool,
        hints: Hints | None = None,
    ) -> None:
        self.finder = finder
        self.target = target
        self.env = env
        self.constraints = constraints
        self.pre = pre
        self.upgrade = upgrade
        self.installed = installed
        self.no_deps = no_deps
        self.hints = hints
        self._releases: dict[str, list[ReleaseFiles]] = {}
        # Their versions oldest first, for bisection (see version_window).
        self._ascending: dict[str, list[Version]] = {}
        self._builds: dict[tuple[str, Version, bool], tuple[Selection, ...] | Unavailable] = {}
        # Names whose pre-releases were allowed because no final release fits.
        self.pre_fallback: set[NormalizedName] = set()
        # Projects whose releases the resolver works back through (see _looking_ahead).
        self.working_back: set[str] = set()
        # Extras asked of a release whose metadata does not provide them.
        self.unknown_extras: set[tuple[NormalizedName, Version, str]] = set()
        # Yanked releases offered because they are pinned, with the yank reasons.
        self.yanked_pins: dict[tuple[NormalizedName, Version], str | None] = {}
        # Locking: per candidate (identifier, version), each dependency's name and
        # whether only specifiers with variant markers required it.
        self.gated: dict[tuple[str, Version], dict[NormalizedName, bool]] = {}
        # Who asked for what: each dependency's name, the candidates that required it
        # and how (to tell which releases were passed over, see notes).
        self.dependents: dict[NormalizedName, list[_Asked]] = {}
        # unsafe-first-match: the index group of each release, by name and version.
        self._ranks: dict[tuple[NormalizedName, Version], int] = {}

    # -- data ----------------------------------------------------------------------

    def releases(self, name: NormalizedName) -> list[ReleaseFiles]:
        """Releases of *name*, newest first."""
        found = self._releases.get(name)
        if found is None:
            found = sorted(self.finder.versions(name), key=lambda r: r.version, reverse=True)
            self._releases[name] = found
            self._ascending[name] = [r.version for r in reversed(found)]
        return found

    def in_range(
        self, name: NormalizedName, specifiers: Sequence[SpecifierSet]
    ) -> list[ReleaseFiles]:
        """The releases of *name* that *specifiers* may match (a bound found by
        bisection: each still needs checking), newest first."""
        releases = self.releases(name)
        start, stop = window(self._ascending[name], specifiers)
        count = len(releases)
        return releases[count - stop : count - start]

    def builds(
        self, name: NormalizedName, release: ReleaseFiles
    ) -> tuple[Selection, ...] | Unavailable:
        """The wheels of *release* to try, best first: one, or one per abi_dependency
        build, or the installed build kept and then the machine's best."""
        key = (name, release.version, isinstance(release, _YankedRelease))
        found = self._builds.get(key)
        if found is None:
            found = self._builds[key] = select_builds(name, release, self.target)
        return found

    def specifiers(self, name: str, requirements: Sequence[Requirement]) -> list[SpecifierSet]:
        """The ranges of *requirements* on *name*, and its constraint."""
        specifiers = [r.specifier for r in requirements]
        if name in self.constraints:
            specifiers.append(self.constraints[name])
        return specifiers

    def allow_pre(self, name: NormalizedName, specifiers: Sequence[SpecifierSet]) -> bool:
        """Whether pre-releases of *name* may be chosen: with ``pre``, when a range
        names one, or (as pip and uv do) when no final release is in every range;
        the last case is remembered, to be told."""
        if self.pre or any(s.prereleases for s in specifiers):
            return True
        releases = self.in_range(name, specifiers)
        if any(not r.version.is_prerelease and _within(r.version, specifiers) for r in releases):
            return False
        self.pre_fallback.add(name)
        return True

    def _rank(
        self, name: NormalizedName, rank: Callable[[ReleaseFiles], int], release: ReleaseFiles
    ) -> int:
        """*rank* of *name*'s *release*, once per release (find_matches sorts the same
        releases again for each requirement on the project)."""
        key = (name, release.version)
        found = self._ranks.get(key)
        if found is None:
            found = self._ranks[key] = rank(release)
        return found

    def _pre_in_group(
        self,
        name: NormalizedName,
        specifiers: Sequence[SpecifierSet],
        releases: Sequence[ReleaseFiles],
        rank: Callable[[ReleaseFiles], int],
        group: int,
    ) -> bool:
        """Under ``unsafe-first-match``, whether the pre-releases of index *group* may
        be chosen: as :meth:`allow_pre`, but with the final releases of that index
        only (uv decides index by index)."""
        if self.pre or any(s.prereleases for s in specifiers):
            return True
        for other in releases:
            version = other.version
            if not version.is_prerelease and _within(version, specifiers) and rank(other) == group:
                return False
        self.pre_fallback.add(name)
        return True

    def allowed(
        self, name: NormalizedName, version: Version, requirements: Sequence[Requirement]
    ) -> bool:
        """Whether *version* meets every requirement and constraint (pre-release rule too)."""
        specifiers = self.specifiers(name, requirements)
        if version.is_prerelease and not self.allow_pre(name, specifiers):
            return False
        return _within(version, specifiers)

    def notes(self, resolution: Resolution) -> tuple[str, ...]:
        """What to tell about the chosen releases (see Resolution.notes)."""
        notes = []
        for name, version, extra in sorted(self.unknown_extras):
            if name in resolution and resolution[name].version == version:
                notes.append(f"{name} {version} has no extra {extra!r}: nothing was added for it")
        for package in resolution:
            if (package.name, package.version) in self.yanked_pins:
                reason = self.yanked_pins[(package.name, package.version)]
                because = f" ({reason})" if reason else ""
                notes.append(
                    f"{package.name} {package.version} is yanked{because}; installing it "
                    "because it is pinned with == (PEP 592)"
                )
            if package.version.is_prerelease and package.name in self.pre_fallback:
                notes.append(
                    f"{package.name} {package.version} is a pre-release: no final release "
                    f"of {package.name} fits the requirements, so pre-releases are allowed "
                    "for it (as with --pre)"
                )
        return tuple(notes + self._passed_over(resolution))

    def _passed_over(self, resolution: Resolution) -> list[str]:
        """Newer releases the resolution did not take because a dependency of theirs
        has source distributions only there: one line per project, its newest such
        release (pip and uv build the dependency and take the newer release)."""
        chosen = {package.name: package.version for package in resolution}
        skipped: dict[NormalizedName, tuple[Version, Requirement, Version]] = {}
        for name, asked in self.dependents.items():
            for parent, version, requirement in asked:
                final = chosen.get(parent)
                if final is None or final >= version:
                    continue
                if parent in skipped and skipped[parent][0] >= version:
                    continue
                specifiers = [requirement.specifier]
                if any(_within(r.version, specifiers) for r in self.in_range(name, specifiers)):
                    continue  # wheels there: passed over for another reason
                sources = self._sources_only(name, specifiers)
                if sources:
                    skipped[parent] = (version, requirement, max(sources))
        return [
            f"{parent} {version} was passed over: it needs {requirement.text}, and "
            f"{requirement.name} has source distributions only there (newest {source}): "
            f"{self._not_built(requirement.name, source)}; {parent} {chosen[parent]} is "
            "installed"
            for parent, (version, requirement, source) in sorted(skipped.items())
        ]

    def usable(
        self, name: NormalizedName, release: ReleaseFiles, specifiers: Sequence[SpecifierSet]
    ) -> ReleaseFiles | None:
        """*release*, or when all its wheels are yanked, those wheels if a range pins
        its version with ``==`` or ``===`` (PEP 592); None when neither."""
        if release.files or not getattr(release, "yanked_files", ()):
            return release
        if any(_exact_pin(s) == release.version for s in specifiers):
            yanked = _YankedRelease(release)
            self.yanked_pins[(name, release.version)] = yanked.reason
            return yanked
        return None

    # -- resolvelib ----------------------------------------------------------------

    def identify(self, requirement_or_candidate: Requirement | Candidate) -> str:
        return requirement_or_candidate.identifier

    def get_preference(
        self,
        identifier: str,
        resolutions: Mapping[str, Candidate],
        candidates: Mapping[str, Iterator[Candidate]],
        information: Mapping[str, Iterator[RequirementInformation[Requirement, Candidate]]],
        backtrack_causes: Sequence[RequirementInformation[Requirement, Candidate]],
    ) -> Any:
        causes = {info.requirement.name for info in backtrack_causes}
        pinned = any(
            any(s.operator in ("==", "===") for s in info.requirement.specifier)
            for info in information[identifier]
        )
        return (identifier.partition("[")[0] not in causes, not pinned, identifier)

    def find_matches(
        self,
        identifier: str,
        requirements: Mapping[str, Iterator[Requirement]],
        incompatibilities: Mapping[str, Iterator[Candidate]],
    ) -> Callable[[], Iterator[Candidate]]:
        """Candidates best first, chosen lazily: a release's wheel (and its variant
        metadata) is only looked at when the resolver gets that far."""
        reqs = list(requirements[identifier])
        name = reqs[0].name
        if name == _PYTHON:
            return lambda: iter(())
        extras = frozenset().union(*(r.extras for r in reqs))
        excluded = {(c.version, c.abi, c.build) for c in incompatibilities[identifier]}
        # name[extra] pins name to its own build where a release offers several.
        wanted_builds = {r.build for r in reqs if r.build}
        specifiers = self.specifiers(name, reqs)
        releases = self.in_range(name, specifiers)
        # unsafe-first-match (a Finder's, optional): each index's releases, newest
        # first, before the next index's.
        rank = getattr(self.finder, "index_rank", None)
        if not getattr(self.finder, "exhausts_indexes_in_order", False):
            rank = None
        if rank is not None:
            releases = sorted(releases, key=functools.partial(self._rank, name, rank))
        current = self.installed.get(name)
        kept = None  # the installed version, tried first, where it is not upgraded
        if not upgrades(self.upgrade, name) and current is not None:
            kept = current
            first = [r for r in releases if r.version == current]
            releases = first + [r for r in releases if r.version != current]

        # --prefer-binary (a Finder's, optional): releases to be built come last.
        from_source = getattr(self.finder, "built_from_source", None)

        def of(release: ReleaseFiles) -> Iterator[Candidate]:
            builds = self.builds(name, release)
            if isinstance(builds, Unavailable):
                return
            several = len(builds) > 1 and not any(build.abi for build in builds)
            for position, build in enumerate(builds):
                label: tuple[str | None, ...] = (build.label,) if several else ()
                if wanted_builds and label not in wanted_builds:
                    continue
                if (release.version, build.abi, label) not in excluded:
                    after_kept = several and position > 0
                    yield Candidate(
                        name, release.version, extras, build, build.abi, label, after_kept
                    )

        def candidates() -> Iterator[Candidate]:
            # Lazily: a release is checked only when the resolver gets that far.
            pre: bool | None = None  # decided at the first pre-release met
            pre_by_group: dict[int, bool] = {}  # unsafe-first-match: index by index
            deferred: list[ReleaseFiles] = []
            for found in releases:
                if not _within(found.version, specifiers):
                    continue
                if found.version.is_prerelease:
                    if rank is not None:
                        group = self._rank(name, rank, found)
                        if group not in pre_by_group:
                            ranked = functools.partial(self._rank, name, rank)
                            pre_by_group[group] = self._pre_in_group(
                                name, specifiers, releases, ranked, group
                            )
                        if not pre_by_group[group]:
                            continue
                    else:
                        if pre is None:
                            pre = self.allow_pre(name, specifiers)
                        if not pre:
                            continue
                release = self.usable(name, found, specifiers)
                if release is None:
                    continue
                if from_source is not None and found.version != kept and from_source(found):
                    deferred.append(release)
                    continue
                yield from of(release)
            for release in deferred:
                yield from of(release)

        return functools.partial(self._looking_ahead, identifier, candidates)

    def _looking_ahead(
        self, identifier: str, candidates: Callable[[], Iterator[Candidate]]
    ) -> Iterator[Candidate]:
        """*candidates*, and once the resolver asks for a second one (it is working
        back through this project's releases, as when a newer release needs a
        dependency the other requirements rule out), the metadata of the next ones
        is fetched in the background: the resolver would otherwise wait for them
        one round trip at a time. Pins of such a project download nothing early:
        most are given up."""
        found = candidates()
        if self.hints is None:
            yield from found
            return
        ahead: collections.deque[Candidate] = collections.deque()
        given = 0
        while True:
            if given >= 1:
                self.working_back.add(identifier)
                wanted = min(max(LOOK_AHEAD, given), MAX_LOOK_AHEAD)
                fresh = list(itertools.islice(found, max(0, wanted - len(ahead))))
                ahead.extend(fresh)
                self.hints.will_read([candidate.selection.file for candidate in fresh])
            if not ahead:
                following = next(found, None)
                if following is None:
                    return
                ahead.append(following)
            given += 1
            yield ahead.popleft()

    def is_satisfied_by(self, requirement: Requirement, candidate: Candidate) -> bool:
        if requirement.build and requirement.build != candidate.build:
            return False
        return requirement.specifier.contains(candidate.version, prereleases=True)

    def get_dependencies(self, candidate: Candidate) -> list[Requirement]:
        if (
            self.hints is not None
            and self.installed.get(candidate.name) != candidate.version
            and candidate.identifier not in self.working_back
        ):
            # Most pins stand: its wheel may start downloading.
            self.hints.pinned(candidate.selection.file)
        deps: list[Requirement] = []
        if candidate.extras:
            # name[extra] needs name itself, at the same version.
            pin = f"=={candidate.version}"
            deps.append(
                Requirement(
                    candidate.name,
                    frozenset(),
                    SpecifierSet(pin),
                    candidate.name + pin,
                    candidate.build,
                )
            )
        if self.no_deps:
            return deps
        selection = candidate.selection
        deps += _abi_requirements(candidate)
        if selection.listed:
            deps += self._listed_dependencies(candidate)
            self._prefetch(deps)
            return deps
        variant_env = variant_environment(selection.label, selection.variant_properties)
        extras = sorted(candidate.extras) or [""]
        where = f"required by {candidate.name} {candidate.version}"
        for text in self.finder.dependencies(selection.file):
            requirement = _requirement(text, where)
            marker = _parsed(text).marker
            if marker is None or any(
                evaluate_marker(marker, variant_env, {**self.env, "extra": extra})
                for extra in extras
            ):
                deps.append(requirement)
        self._prefetch(deps)
        missing = getattr(self.finder, "missing_extras", None)  # optional: a Finder's
        if candidate.extras and missing is not None:
            for extra in sorted(missing(selection.file, frozenset(candidate.extras))):
                self.unknown_extras.add((candidate.name, candidate.version, extra))
        excluded = getattr(self.finder, "python_excluded", None)  # optional: a Finder's
        needs = excluded(selection.file) if excluded is not None else None
        if needs is not None:
            deps.append(Requirement(_PYTHON, frozenset(), SpecifierSet(), needs))
        for dep in deps:
            if dep.name != candidate.name:
                self.dependents.setdefault(dep.name, []).append(
                    (candidate.name, candidate.version, dep)
                )
        return deps

    def _listed_dependencies(self, candidate: Candidate) -> list[Requirement]:
        """Locking: the union of the requirements of every wheel the candidate lists,
        each read in its own variant context (all its label's properties), and which
        of them only specifiers with variant markers add (in ``self.gated``)."""
        listed = candidate.selection.listed
        if self.hints is not None:
            self.hints.will_read([wheel.file for wheel in listed])
        extras = sorted(candidate.extras) or [""]
        where = f"required by {candidate.name} {candidate.version}"
        deps: list[Requirement] = []
        added: set[str] = set()
        gated = self.gated.setdefault((candidate.identifier, candidate.version), {})
        for wheel in listed:
            variant_env = variant_environment(wheel.file.filename.variant_label, wheel.properties)
            for text in self.finder.dependencies(wheel.file):
                if text in added:
                    continue
                requirement = _requirement(text, where)
                marker = _parsed(text).marker
                if marker is not None and not any(
                    evaluate_marker(marker, variant_env, {**self.env, "extra": extra})
                    for extra in extras
                ):
                    continue
                added.add(text)
                deps.append(requirement)
                only_variant = marker is not None and uses_variant_markers(marker)
                gated[requirement.name] = gated.get(requirement.name, True) and only_variant
        return deps

    def _prefetch(self, requirements: Iterable[Requirement]) -> None:
        if self.hints is not None:
            self.hints.will_ask(
                (r.name, r.specifier & self.constraints.get(r.name, SpecifierSet()))
                for r in requirements
            )

    # -- errors --------------------------------------------------------------------

    def explain(
        self, causes: Iterable[RequirementInformation[Requirement, Candidate]]
    ) -> ResolveError:
        """The most useful error for a failed resolution."""
        by_name: dict[NormalizedName, list[RequirementInformation[Requirement, Candidate]]] = {}
        for info in causes:
            by_name.setdefault(info.requirement.name, []).append(info)
        if _PYTHON in by_name:
            return self._python_too_old(by_name[_PYTHON])
        for name, infos in by_name.items():
            releases = self.releases(name)
            reqs = [info.requirement for info in infos]
            if not releases:
                return PackageNotFound(self._no_wheels(name, reqs, infos), name)
            specifiers = self.specifiers(name, reqs)
            allowed = [r for r in releases if self.allowed(name, r.version, reqs)]
            reasons: dict[Version, Unavailable] = {}
            yanked = set()
            for found in allowed:
                release = self.usable(name, found, specifiers)
                if release is None:
                    yanked.add(found.version)
                chosen = _yanked(found) if release is None else self.builds(name, release)
                if isinstance(chosen, Unavailable):
                    reasons[found.version] = chosen
            if allowed and len(reasons) == len(allowed):
                for unavailable in reasons.values():
                    if unavailable.label is not None:
                        return VariantChoiceError(name, unavailable.label, unavailable.reason)
                return NoCompatibleWheel(
                    name,
                    {v: u.reason for v, u in reasons.items()},
                    about_sources=len(yanked) < len(reasons),
                )
            if not allowed:
                sources_only = self._sources_only(name, specifiers)
                if sources_only:
                    return NoCompatibleWheel(name, sources_only)
        clashes = []
        for name, infos in by_name.items():
            versions = _listed([str(r.version) for r in self.releases(name)])
            origins = _origins(infos)
            if name in self.constraints:
                origins += f"; constraint {name}{self.constraints[name]}"
            clashes.append(f"{name} ({origins}); available: {versions}{self._hidden(name)}")
        alone = [info for infos in by_name.values() for info in infos]
        if (
            len(alone) == 1
            and alone[0].parent is None
            and alone[0].requirement.name not in self.constraints
        ):
            # One requirement, asked for, and no release in its range: nothing conflicts.
            return PackageNotFound(f"no release of {clashes[0]}", alone[0].requirement.name)
        return ResolutionConflict(f"the requirements conflict: {'; '.join(clashes)}", list(by_name))

    def _python_too_old(
        self, infos: Iterable[RequirementInformation[Requirement, Candidate]]
    ) -> ResolveError:
        """Every candidate left needs another Python than the target's (by its own
        METADATA): which, and what they need."""
        needs = {
            f"{info.parent.name} {info.parent.version} requires Python {info.requirement.text}"
            for info in infos
            if info.parent is not None
        }
        python = self.env.get("python_full_version", "?")
        return ResolutionConflict(
            f"no release fits the target's Python {python}: {'; '.join(sorted(needs))} "
            "(in its METADATA); use another Python (--python), or pin a release that "
            "supports this one"
        )

    def _hidden(self, name: NormalizedName) -> str:
        """What --exclude-newer (or --exclude-newer-package) left out of *name*'s
        releases, if anything."""
        found = getattr(self.finder, "hidden_versions", {}).get(name)  # a Finder's
        if not found or not found[0]:
            return ""
        hidden, option = found
        return (
            f" ({hidden} more release{'s' if hidden != 1 else ''} left out by "
            f"{option}: uploaded after its moment, or with no upload time)"
        )

    def _sources_only(
        self, name: NormalizedName, specifiers: Sequence[SpecifierSet]
    ) -> dict[Version, str]:
        """The versions in range that have source distributions only, newest first
        (at most a few), with what to do about the newest: one reason, which the
        error gives once for them all."""
        listed = getattr(self.finder, "source_only_versions", None)  # optional: a Finder's
        versions = [v for v in (listed(name) if listed else ()) if _within(v, specifiers)]
        newest = sorted(versions, reverse=True)[:3]
        return dict.fromkeys(newest, self._not_built(name, newest[0])) if newest else {}

    def _not_built(self, name: NormalizedName, version: Version) -> str:
        """Why *name* *version*, which has source distributions only, is not built."""
        reason = getattr(self.finder, "not_built_reason", None)  # optional: a Finder's
        return reason(name, version) if reason else wheels_only_advice(name, version)

    def _no_wheels(
        self,
        name: NormalizedName,
        reqs: Sequence[Requirement],
        infos: Iterable[RequirementInformation[Requirement, Candidate]],
    ) -> str:
        """Why no release of *name* has a wheel: none found at all, or sources only."""
        listed = getattr(self.finder, "source_only_versions", None)
        versions = sorted(listed(name) if listed else (), reverse=True)
        if not versions:
            return f"no release of {name} was found ({_origins(infos)}){self._hidden(name)}"
        specifiers = self.specifiers(name, reqs)
        newest = next((v for v in versions if _within(v, specifiers)), versions[0])
        which = (
            f"{name} {newest} has only a source distribution"
            if len(versions) == 1
            else f"{name} has source distributions only ({len(versions)} releases, the "
            f"newest {versions[0]})"
        )
        return f"{which}; {self._not_built(name, newest)} ({_origins(infos)})"


# A dependency asked for: by which candidate (name, version), with which requirement.
_Asked = tuple[NormalizedName, Version, Requirement]


def _listed(versions: Sequence[str]) -> str:
    """The newest of *versions* (newest first), and how many more: a project may
    have thousands."""
    shown = ", ".join(versions[:SHOWN_VERSIONS])
    more = len(versions) - SHOWN_VERSIONS
    return f"{shown} and {more} older" if more > 0 else shown


def _within(version: Version, specifiers: Iterable[SpecifierSet]) -> bool:
    return all(s.contains(version, prereleases=True) for s in specifiers)


def _yanked(release: ReleaseFiles) -> Unavailable:
    """Why a release whose wheels are all yanked is not used."""
    reason = _YankedRelease(release).reason
    because = f" ({reason})" if reason else ""
    return Unavailable(f"yanked{because}; pin it with =={release.version} to install it anyway")


@dataclass(frozen=True)
class _YankedRelease:
    """A release whose wheels are all yanked, offering those wheels (it is pinned)."""

    release: ReleaseFiles

    @property
    def version(self) -> Version:
        return self.release.version

    @property
    def files(self) -> Sequence[WheelFile]:
        files: Sequence[WheelFile] = getattr(self.release, "yanked_files", ())
        return files

    @property
    def reason(self) -> str | None:
        """The reason the index gives for yanking it, if any."""
        for file in self.files:
            reason = getattr(file.link, "yanked_reason", None)  # the source's own handle
            if reason is None:
                reason = getattr(getattr(file.link, "file", None), "yanked_reason", None)
            if isinstance(reason, str) and reason:
                return reason
        return None

    @property
    def variant_metadata_problem(self) -> str | None:
        problem: str | None = getattr(self.release, "variant_metadata_problem", None)
        return problem

    def variant_metadata(self) -> VariantMetadata | None:
        return self.release.variant_metadata()


def _abi_requirements(candidate: Candidate) -> list[Requirement]:
    """What the build's abi_dependency properties imply: ``torch==2.9.*`` for
    ``abi_dependency :: torch :: 2.9``."""
    if not candidate.abi:
        return []
    from wheelwise.variants.abi_dependency import package_name, specifier

    requirements = []
    for prop in candidate.abi:
        name, spec = package_name(prop.feature), specifier(prop.value)
        requirements.append(
            Requirement(name, frozenset(), SpecifierSet(str(spec)), f"{name}{spec} ({prop})")
        )
    return requirements


def _origins(infos: Iterable[RequirementInformation[Requirement, Candidate]]) -> str:
    parts = []
    for info in infos:
        who = "requested" if info.parent is None else f"required by {info.parent}"
        parts.append(f"{info.requirement} {who}")
    return "; ".join(dict.fromkeys(parts))


# -- the result ----------------------------------------------------------------------


def _resolution(
    mapping: Mapping[str, Candidate],
    graph: Any,
    installed: Mapping[str, Version],
    gated: Mapping[tuple[str, Version], Mapping[NormalizedName, bool]] | None = None,
) -> Resolution:
    """Base packages only, extras folded in, dependencies before dependents.
    *gated*: see ``_Provider.gated``."""
    # name[extra] always depends on name itself, so every name has a base candidate.
    bases = {c.name: c for c in mapping.values() if not c.extras}
    extras: dict[NormalizedName, set[str]] = {}
    requires: dict[NormalizedName, set[NormalizedName]] = {}
    # A dependency is variant-gated when no candidate of the name requires it
    # otherwise.
    ungated: dict[NormalizedName, set[NormalizedName]] = {}
    for candidate in mapping.values():
        extras.setdefault(candidate.name, set()).update(candidate.extras)
        children = requires.setdefault(candidate.name, set())
        edges = (gated or {}).get((candidate.identifier, candidate.version), {})
        for child in graph.iter_children(candidate.identifier):
            child_name = mapping[child].name
            if child_name != candidate.name:
                children.add(child_name)
                if not edges.get(child_name, False):
                    ungated.setdefault(candidate.name, set()).add(child_name)
    packages: dict[NormalizedName, ResolvedPackage] = {}

    def visit(name: NormalizedName, path: set[NormalizedName]) -> None:
        if name in packages or name in path:
            return  # done, or a cycle: its members go in the order first met
        path.add(name)
        for dep in sorted(requires[name]):
            visit(dep, path)
        path.discard(name)
        chosen = bases[name].selection
        abi = []
        for prop in chosen.abi:
            dep = canonicalize_name(prop.feature)
            found = bases[dep].version if dep in bases else installed.get(dep)
            abi.append(AbiMatch(prop, dep, found))
        packages[name] = ResolvedPackage(
            replaces_kept=bases[name].after_kept,
            name=name,
            version=bases[name].version,
            file=chosen.file,
            label=chosen.label,
            won_by=chosen.won_by,
            rejected=dict(chosen.ranking.rejected) if chosen.ranking is not None else {},
            extras=frozenset(extras[name]),
            installed=installed.get(name),
            requires=tuple(sorted(requires[name])),
            ranking=chosen.ranking,
            abi=tuple(abi),
            listed=chosen.listed,
            variant_gated=tuple(sorted(requires[name] - ungated.get(name, set()))),
        )

    for name in sorted(bases):
        visit(name, set())
    return Resolution(packages)
