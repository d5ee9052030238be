"""``wheelwise lock`` as a library call: resolve once per target, build a ``PyLock``.

Each target (:mod:`wheelwise.environment.targets`) is resolved on its own with the
installer's resolver in its locking mode (``resolve(..., every_wheel=True)``): a
release lists every wheel that fits the target's tags (the non-variant wheel, the
``null`` variant and every variant, whatever this machine supports), and depends on
the union of those wheels' requirements, each read with every property of its
label. A package that only specifiers with variant markers bring in (every path
from a requested project to it crosses one) is *variant-gated*: its entry gets the
marker ``'variant-needs-NAME' in dependency_groups``, a group only a variant-aware
installer activates (docs/lock.md). Entries are one per chosen (name, version);
one chosen by some targets only gets the OR of their environment markers.

Nothing here reads or writes the lock file: the caller passes the versions to
prefer (:func:`locked_versions`) and writes :func:`~wheelwise.lock.write_pylock`'s
text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wheelwise.client.index_client import INDEX, IndexFile
from wheelwise.client.index_strategy import IndexStrategy
from wheelwise.environment.targets import LockEnvironment
from wheelwise.install.options import (
    InstallOptions,
    caches_for,
    finder_for,
    index_client,
    sources_for,
)
from wheelwise.lock import Package, PyLock, VariantsJson, Wheel
from wheelwise.models.errors import ResolveError
from wheelwise.publish.distfiles import sha256_file
from wheelwise.resolve.decide import resolve_with
from wheelwise.resolve.finder import IndexFinder, Link
from wheelwise.resolve.lock_selection import variant_group
from wheelwise.resolve.lookahead import Lookahead
from wheelwise.resolve.resolver import Resolution, ResolvedPackage
from wheelwise.resolve.selection import ListedWheel
from wheelwise.resolve.variant_requirement import VariantRequirementError, split_variant_label
from wheelwise.variants.markers import evaluate_marker, parse_requirement, variant_environment
from wheelwise.variants.merging import merge
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.supported import SupportedProperties

__all__ = [
    "CREATED_BY",
    "LockInputs",
    "lock_inputs",
    "locked_versions",
    "run_lock",
]

CREATED_BY = "wheelwise"
TOOL = "wheelwise"


@dataclass(frozen=True)
class LockInputs:
    """What a lock was made from, kept in ``[tool.wheelwise]`` so that ``lock
    --check`` can tell whether the inputs changed (``inputs-hash``)."""

    requirements: tuple[str, ...]
    constraints: tuple[str, ...]
    index_urls: tuple[str, ...]
    find_links: tuple[str, ...]
    targets: tuple[Mapping[str, str], ...]
    pre: bool
    index_strategy: IndexStrategy | None = None

    def document(self) -> dict[str, Any]:
        """The inputs, the order of the requirements and constraints left out (the
        sources keep theirs: it is their priority); the index strategy only where
        one was given (a lock made without one keeps its hash)."""
        document: dict[str, Any] = {
            "requirements": sorted(self.requirements),
            "constraints": sorted(self.constraints),
            "index-urls": list(self.index_urls),
            "find-links": list(self.find_links),
            "targets": [dict(sorted(target.items())) for target in self.targets],
            "pre": self.pre,
        }
        if self.index_strategy is not None:
            document["index-strategy"] = self.index_strategy
        return document

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON of :meth:`document`."""
        text = json.dumps(self.document(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def table(self) -> dict[str, Any]:
        return {**self.document(), "inputs-hash": self.digest}


def lock_inputs(options: InstallOptions, targets: Sequence[LockEnvironment]) -> LockInputs:
    """The inputs of a lock of *options*' requirements for *targets*."""
    return LockInputs(
        requirements=tuple(options.requirements),
        constraints=tuple(options.constraints),
        index_urls=tuple(u for u in (options.index_url, *options.extra_index_urls) if u),
        find_links=tuple(options.find_links),
        targets=tuple(target.record() for target in targets),
        pre=options.pre,
        index_strategy=options.index_strategy,
    )


def locked_versions(
    lock: PyLock, target: LockEnvironment, upgrading: Collection[str] = ()
) -> dict[str, str]:
    """The version *lock* holds for each package on *target* (the entry whose marker
    holds there, every variant-gated one included), except those *upgrading* names.
    Raises LockError when more than one entry of a name applies."""
    groups = frozenset(variant_group(p.name) for p in lock.packages)
    environment: dict[str, str | frozenset[str]] = {
        **target.markers,
        "extras": frozenset(),
        "dependency_groups": groups,
    }
    skipped = {canonicalize_name(name) for name in upgrading}
    versions: dict[str, str] = {}
    for name in dict.fromkeys(p.name for p in lock.packages):
        if canonicalize_name(name) in skipped:
            continue
        package = lock.package_for(name, environment)
        if package is not None and package.version is not None:
            versions[package.name] = package.version
    return versions


def run_lock(
    options: InstallOptions,
    targets: Sequence[LockEnvironment],
    preferences: Mapping[str, Mapping[str, str]] | None = None,
) -> PyLock:
    """Resolve *options*' requirements for each of *targets* and build the lock.

    Of *options*, what names the requirements, the sources and the network and cache
    settings is used (``pre`` too); what is about an install is not. *preferences*:
    per target (its ``environment`` marker), the versions to prefer, an existing
    lock's (:func:`locked_versions`). Raises ResolveError (a release none of whose
    wheels fits a target is one), SourceError and VariantRequirementError."""
    for text in options.requirements:
        found = split_variant_label(text)
        if found.label is not None:
            raise VariantRequirementError(
                f"{text!r}: a lock lists every variant of a package, and the installer "
                f"chooses one for the machine; write {found.requirement!r}"
            )
    sources = sources_for(options)
    cache_root, kept = caches_for(options)
    entries: dict[tuple[NormalizedName, Version], _Entry] = {}
    with index_client(options, cache_root, kept) as client:
        for position, target in enumerate(targets):
            with Lookahead(sources, client, strategy=options.index_strategy) as lookahead:
                finder = finder_for(
                    options,
                    sources,
                    client,
                    kept,
                    tags=target.tags,
                    python_version=target.full_version,
                )
                lookahead.serve(finder)  # a lock downloads no wheel ahead
                try:
                    preferred = (preferences or {}).get(target.environment, {})
                    resolution = _resolve(options, target, lookahead, preferred)
                    _collect(entries, position, target, resolution, finder, options)
                except ResolveError as exc:
                    if len(targets) == 1:
                        raise
                    raise ResolveError(f"for {target.describe()}: {exc}") from None
                finally:
                    finder.close()
    packages = [entry.package(name, targets) for (name, _), entry in entries.items()]
    return PyLock(
        created_by=CREATED_BY,
        environments=tuple(target.environment for target in targets),
        requires_python=_requires_python(targets),
        packages=tuple(packages),
        tool={TOOL: lock_inputs(options, targets).table()},
    )


def _resolve(
    options: InstallOptions,
    target: LockEnvironment,
    lookahead: Lookahead,
    preferred: Mapping[str, str],
) -> Resolution:
    """The decide stage's resolution (:func:`resolve_with`), in locking mode."""
    lookahead.want(sorted(_roots(options.requirements, target)))
    resolution = resolve_with(
        options.requirements,
        lookahead,
        supported=_never_asked,
        tags=target.tags,
        environment=target.markers,
        constraints=options.constraints,
        pre=options.pre,
        installed=preferred,
        every_wheel=True,
    )
    if options.warn is not None:
        for note in resolution.notes:
            options.warn(note)
    return resolution


def _never_asked(metadata: VariantMetadata) -> SupportedProperties:
    """A lock is the same on any machine: its resolution never asks what one supports."""
    return SupportedProperties()


def _roots(requirements: Sequence[str], target: LockEnvironment) -> set[NormalizedName]:
    """The requested projects whose markers hold on *target* (the resolver has
    checked every requirement already)."""
    names: set[NormalizedName] = set()
    environment = {**target.markers, "extra": ""}
    for text in requirements:
        parsed = parse_requirement(text)
        marker = parsed.marker
        if marker is None or evaluate_marker(marker, variant_environment(None), environment):
            names.add(canonicalize_name(parsed.name))
    return names


def _gated(resolution: Resolution, roots: Collection[NormalizedName]) -> set[NormalizedName]:
    """The packages no path from *roots* reaches without crossing a specifier with
    variant markers."""
    reached: set[NormalizedName] = set()
    pending = [name for name in roots if name in resolution]
    while pending:
        name = pending.pop()
        if name in reached:
            continue
        reached.add(name)
        package = resolution[name]
        pending += [c for c in package.requires if c not in package.variant_gated]
    return {package.name for package in resolution if package.name not in reached}


@dataclass
class _Entry:
    """One (name, version) of the lock, as the targets that chose it saw it."""

    version: Version
    targets: dict[int, bool] = field(default_factory=dict)  # position -> variant-gated
    files: dict[str, Wheel] = field(default_factory=dict)  # by file name
    requires_python: set[str | None] = field(default_factory=set)
    indexes: set[str | None] = field(default_factory=set)
    # The variant metadata of the release as each source it came from gives it.
    metadata: list[VariantMetadata] = field(default_factory=list)
    labels: set[str] = field(default_factory=set)
    requires: set[NormalizedName] = field(default_factory=set)

    def package(self, name: NormalizedName, targets: Sequence[LockEnvironment]) -> Package:
        variants_json = None
        if self.labels:
            # Listed variant wheels have their label's entry (selection.every_wheel).
            metadata = self.metadata[0] if len(self.metadata) == 1 else merge(self.metadata)
            kept = {label: metadata.variants[label] for label in sorted(self.labels)}
            variants_json = VariantsJson.from_metadata(metadata.with_variants(kept))
        (index,) = self.indexes if len(self.indexes) == 1 else (None,)
        (requires_python,) = self.requires_python if len(self.requires_python) == 1 else (None,)
        return Package(
            name=name,
            version=str(self.version),
            marker=self._marker(name, targets),
            requires_python=requires_python,
            dependencies=tuple({"name": child} for child in sorted(self.requires)),
            index=index,
            wheels=tuple(self.files.values()),
            variants_json=variants_json,
        )

    def _marker(self, name: NormalizedName, targets: Sequence[LockEnvironment]) -> str | None:
        gate = f"'{variant_group(name)}' in dependency_groups"
        gated = set(self.targets.values())
        if len(self.targets) == len(targets) and len(gated) == 1:
            return gate if gated == {True} else None
        clauses = []
        for position, only_gated in sorted(self.targets.items()):
            clause = f"({targets[position].environment})"
            clauses.append(f"({clause} and {gate})" if only_gated else clause)
        return " or ".join(clauses)


def _collect(
    entries: dict[tuple[NormalizedName, Version], _Entry],
    position: int,
    target: LockEnvironment,
    resolution: Resolution,
    finder: IndexFinder,
    options: InstallOptions,
) -> None:
    """Add *target*'s resolution to *entries*."""
    gated = _gated(resolution, _roots(options.requirements, target))
    for package in resolution:
        key = (package.name, package.version)
        entry = entries.setdefault(key, _Entry(package.version))
        entry.targets[position] = package.name in gated
        entry.requires.update(package.requires)
        builds = [listed for listed in package.listed if _abi_fits(listed, resolution)]
        if not builds:
            raise ResolveError(
                f"no wheel of {package.name} {package.version} is built against the "
                f"versions locked for its abi_dependency packages ({_abi_needs(package)}); "
                "pin those packages to a version one of its builds is for"
            )
        for listed in builds:
            link = listed.file.link
            assert isinstance(link, Link)
            label = listed.file.filename.variant_label
            if label is not None:
                entry.labels.add(label)
            entry.indexes.add(link.source.url if link.source.kind == INDEX else None)
            entry.requires_python.add(link.file.requires_python)
            if link.file.filename not in entry.files:
                entry.files[link.file.filename] = _wheel(link.file, finder)
        if any(listed.file.filename.is_variant for listed in package.listed):
            release = finder.release(package.name, package.version)
            metadata = release.variant_metadata() if release is not None else None
            if metadata is not None and metadata not in entry.metadata:
                entry.metadata.append(metadata)


def _abi_values(listed: ListedWheel) -> dict[NormalizedName, list[str]]:
    """The versions of other packages *listed* is built against (PEP 817
    ``abi_dependency``), by package."""
    from wheelwise.variants import abi_dependency

    found: dict[NormalizedName, list[str]] = {}
    for prop in listed.properties:
        if prop.namespace == abi_dependency.NAMESPACE:
            name = abi_dependency.package_name(prop.feature)
            found.setdefault(name, []).append(prop.value)
    return found


def _abi_fits(listed: ListedWheel, resolution: Resolution) -> bool:
    """Whether *listed* is built against the versions *resolution* chose (a build
    against a package the resolution does not hold fits)."""
    from wheelwise.variants.abi_dependency import matches

    return all(
        name not in resolution or any(matches(v, resolution[name].version) for v in values)
        for name, values in _abi_values(listed).items()
    )


def _abi_needs(package: ResolvedPackage) -> str:
    """``dep 2.8, 2.9``: the versions *package*'s builds are for, by package."""
    needs: dict[NormalizedName, set[str]] = {}
    for listed in package.listed:
        for name, values in _abi_values(listed).items():
            needs.setdefault(name, set()).update(values)
    return "; ".join(f"{name} {', '.join(sorted(values))}" for name, values in needs.items())


def _wheel(file: IndexFile, finder: IndexFinder) -> Wheel:
    """The lock's entry for *file*: its URL, size and sha256; a wheel whose source
    gives no sha256 is downloaded (checked against the hashes it does give) and
    hashed."""
    sha256 = file.hashes.get("sha256")
    size = file.size
    if sha256 is None:
        path = finder.wheel_path(file)
        sha256, size = sha256_file(path), path.stat().st_size
    return Wheel(url=file.url, size=size, hashes={"sha256": sha256.lower()})


def _requires_python(targets: Sequence[LockEnvironment]) -> str:
    """``>=`` the oldest target Python (the lock holds wheels for those only)."""
    oldest = min(tuple(int(p) for p in t.markers["python_version"].split(".")) for t in targets)
    return ">=" + ".".join(str(part) for part in oldest)
