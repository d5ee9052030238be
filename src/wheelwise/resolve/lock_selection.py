"""Choosing what a ``pylock.toml`` installs on a target, offline.

PEP 751 "Installation": the lock's ``requires-python`` and ``environments`` are
checked for the target, then each package's ``marker`` is evaluated with ``extras``
and ``dependency_groups`` (``default-groups`` plus the groups asked for); two
entries of one name that both apply are an error. Each package's wheel is chosen
among the wheels the lock lists, never among what an index offers: by the target's
tags, then, where variant wheels are listed, by ranking the inline
``[packages.variants-json]`` for the machine, with the selection ``install`` uses
(:func:`~wheelwise.resolve.selection.select_builds`).

Variant-gated packages (docs/lock.md): a package that the lock's resolution reached
only through dependency specifiers using variant markers is locked with the marker
``'variant-needs-<name>' in dependency_groups``. Such a group is activated by the
selected wheels' own ``Requires-Dist``, evaluated in the context of each wheel (PEP
825 "Evaluating variant markers"); the packages that then apply are selected too,
until nothing changes. The caller supplies the METADATA of the selected wheels (from
hash-verified downloads), asked for only while some entry could still be brought in
that way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from packaging.markers import Marker
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.lock import LockError, Package, PyLock, Wheel, wheel_files
from wheelwise.resolve.candidates import Release, WheelFile
from wheelwise.resolve.selection import Selection, TargetSpec, Unavailable, select_builds
from wheelwise.variants.markers import evaluate_marker, parse_requirement, variant_environment
from wheelwise.wheels.core_metadata import CoreMetadataError, read_core_metadata

__all__ = [
    "VARIANT_GROUP_PREFIX",
    "LockSelection",
    "LockTarget",
    "LockedChoice",
    "MetadataOf",
    "select_from_lock",
    "variant_group",
]

VARIANT_GROUP_PREFIX = "variant-needs-"


def variant_group(name: str) -> str:
    """The synthetic dependency group that selects the variant-gated package *name*:
    ``variant-needs-<normalized name>``."""
    return VARIANT_GROUP_PREFIX + canonicalize_name(name)


@dataclass(frozen=True)
class LockTarget:
    """What a lock is installed for: the target's marker values, what wheel
    selection needs (tags, the machine, ``--no-variant``, ``--variant``), and the
    extras and dependency groups asked for (``default-groups`` are added)."""

    markers: Mapping[str, str]
    spec: TargetSpec
    extras: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    @property
    def python(self) -> str:
        return self.markers.get("python_full_version") or self.markers.get("python_version", "")


@dataclass(frozen=True)
class LockedChoice:
    """One package of the lock that applies, with the wheel chosen for the target."""

    package: Package
    wheel: Wheel
    selection: Selection

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.package.name)

    @property
    def version(self) -> Version:
        return self.selection.file.filename.version

    @property
    def label(self) -> str | None:
        return self.selection.label

    @property
    def key(self) -> tuple[str, str]:
        return self.name, self.wheel.filename

    @property
    def properties(self) -> tuple[str, ...]:
        """Every property ``variants-json`` gives the chosen label (none for a
        non-variant wheel): what the wheel's own ``variant.json`` must say too."""
        variants_json = self.package.variants_json
        if self.label is None or variants_json is None:
            return ()
        return tuple(str(p) for p in variants_json.metadata.properties(self.label))

    def variant_markers(self) -> dict[str, str | frozenset[str]]:
        """The variant marker values of the chosen wheel (PEP 825)."""
        return variant_environment(self.label, self.selection.variant_properties)


class LockSelection(NamedTuple):
    """The packages a lock installs on the target, by name, and the dependency
    groups in effect once every variant-gated package was settled."""

    choices: tuple[LockedChoice, ...]
    groups: frozenset[str]


# The METADATA of each wheel chosen (same order), read from the verified wheel.
MetadataOf = Callable[[Sequence[LockedChoice]], Sequence[bytes]]


def select_from_lock(lock: PyLock, target: LockTarget, metadata_of: MetadataOf) -> LockSelection:
    """The packages *lock* installs on *target*, each with its wheel. Raises
    LockError (one line naming the lock file and the package) for a lock that does
    not fit the target, is ambiguous, or holds what wheelwise does not install."""
    _check_lock(lock, target)
    groups = frozenset(lock.default_groups) | target.groups
    activated: dict[tuple[str, str], frozenset[str]] = {}
    while True:
        packages = _applicable(lock, target, groups)
        locked = {
            name: Version(package.version)
            for name, package in packages.items()
            if package.version is not None
        }
        # One spec a round: building one ranks the target's tags again.
        spec = replace(target.spec, abi_preferred=locked)
        choices = [_choose(lock, package, target, spec, locked) for package in packages.values()]
        if not _gated_waiting(lock, target, groups, packages):
            break
        unread = [choice for choice in choices if choice.key not in activated]
        if unread:
            for choice, metadata in zip(unread, metadata_of(unread), strict=True):
                activated[choice.key] = _activated(lock, choice, metadata, target.markers)
        grown = groups.union(*(activated[choice.key] for choice in choices))
        if grown == groups:
            break
        groups = grown
    for name, label in target.spec.variant_choice.items():
        if name not in packages:
            raise LockError(
                f"--variant {name}={label}: {lock.source} installs no package {name} on "
                "this target; drop the option or name a package of the lock"
            )
    return LockSelection(tuple(choices), groups)


# -- the lock and its entries -----------------------------------------------------------


def _environment(target: LockTarget, groups: frozenset[str]) -> dict[str, str | frozenset[str]]:
    """Marker values for ``packages.marker`` and ``environments`` (PEP 751)."""
    return {**target.markers, "extras": target.extras, "dependency_groups": groups}


def _allows(specifiers: str, python: str) -> bool:
    try:
        return SpecifierSet(specifiers).contains(Version(python.rstrip("+")), prereleases=True)
    except InvalidVersion:
        return True  # an interpreter whose version packaging cannot read: not refused here


def _check_lock(lock: PyLock, target: LockTarget) -> None:
    python = target.python
    if lock.requires_python is not None and not _allows(lock.requires_python, python):
        raise LockError(
            f"{lock.source}: requires-python {lock.requires_python!r} does not allow the "
            f"target's Python {python}; install with a Python it allows, or lock again"
        )
    if lock.environments is None:
        return
    values = _environment(target, frozenset(lock.default_groups) | target.groups)
    for text in lock.environments:
        try:
            if Marker(text).evaluate(values, "lock_file"):
                return
        except (ValueError, KeyError) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise LockError(
                f"{lock.source}: environments: {text!r} cannot be evaluated ({reason}); "
                "fix the marker"
            ) from None
    machine = " ".join(target.markers.get(key, "?") for key in ("sys_platform", "platform_machine"))
    raise LockError(
        f"{lock.source}: none of its environments holds for the target (Python {python}, "
        f"{machine}): {'; '.join(lock.environments) or 'none listed'}; lock again for "
        "this Python and platform"
    )


def _applicable(
    lock: PyLock, target: LockTarget, groups: frozenset[str]
) -> dict[NormalizedName, Package]:
    """The one entry of each name whose marker holds (PEP 751 "Installation")."""
    values = _environment(target, groups)
    found: dict[NormalizedName, Package] = {}
    for name in dict.fromkeys(canonicalize_name(p.name) for p in lock.packages):
        package = lock.package_for(name, values)
        if package is None:
            continue
        if package.requires_python is not None and not _allows(
            package.requires_python, target.python
        ):
            raise LockError(
                f"{lock.source}: package {package.describe()} requires Python "
                f"{package.requires_python!r}, but the target's is {target.python}; install "
                "with a Python it allows, or lock again"
            )
        found[name] = package
    return found


def _choose(
    lock: PyLock,
    package: Package,
    target: LockTarget,
    spec: TargetSpec,
    locked: Mapping[NormalizedName, Version],
) -> LockedChoice:
    """*package*'s wheel for the target, from those the lock lists."""
    where = f"{lock.source}: package {package.describe()}"
    files = wheel_files(package, source=lock.source)
    metadata = package.variants_json.metadata if package.variants_json is not None else None
    for filename, wheel in files:
        label = filename.variant_label
        if label is not None and (metadata is None or label not in metadata.variants):
            raise LockError(
                f"{where}: the variant label {label!r} of {wheel.filename} is missing from "
                "[packages.variants-json]; lock it again"
            )
    version = Version(package.version) if package.version is not None else files[0][0].version
    release = Release(version, [WheelFile(filename, wheel) for filename, wheel in files], metadata)
    builds = select_builds(canonicalize_name(package.name), release, spec)
    if isinstance(builds, Unavailable):
        raise _unavailable(where, builds, target)
    for selection in builds:
        if _abi_fits(selection, locked):
            wheel = selection.file.link
            assert isinstance(wheel, Wheel)
            return LockedChoice(package, wheel, selection)
    needs = "; ".join(
        f"{s.label}: {', '.join(str(p) for p in s.abi)}" for s in builds if s.label is not None
    )
    raise LockError(
        f"{where}: each listed build fitting this machine is built against a version of a "
        f"dependency that the lock does not install ({needs}); lock it again"
    )


def _unavailable(where: str, unavailable: Unavailable, target: LockTarget) -> LockError:
    if unavailable.label is not None:  # --variant asked for what is not there
        return LockError(f"{where}: {unavailable.reason}")
    return LockError(
        f"{where}: no wheel it lists fits this target (Python {target.python}): "
        f"{unavailable.reason}; lock again for this machine, or install the package "
        "from an index"
    )


def _abi_fits(selection: Selection, locked: Mapping[NormalizedName, Version]) -> bool:
    """Whether each ``abi_dependency`` value of the build matches the locked version
    of its dependency (a build needing none always fits)."""
    if not selection.abi:
        return True
    from wheelwise.variants import abi_dependency as abi

    for prop in selection.abi:
        version = locked.get(abi.package_name(prop.feature))
        if version is None or not abi.matches(prop.value, version):
            return False
    return True


# -- variant-gated packages ---------------------------------------------------------------


def _gated_waiting(
    lock: PyLock,
    target: LockTarget,
    groups: frozenset[str],
    packages: Mapping[NormalizedName, Package],
) -> bool:
    """Whether an entry not selected would be with its own ``variant-needs-`` group:
    only then are the selected wheels' requirements worth reading."""
    for name in dict.fromkeys(canonicalize_name(p.name) for p in lock.packages):
        group = variant_group(name)
        if name in packages or group in groups:
            continue
        try:
            if lock.package_for(name, _environment(target, groups | {group})) is not None:
                return True
        except LockError:  # ambiguous with that group: reported if it is activated
            return True
    return False


def _requirements(metadata: bytes) -> tuple[list[str], list[str]]:
    """``Requires-Dist`` and ``Provides-Extra`` of a METADATA file."""
    try:
        fields = read_core_metadata(metadata, body=False)
    except CoreMetadataError:  # nothing to read: no requirement gates a group
        return [], []
    return fields.requires_dist, fields.values("Provides-Extra")


def _activated(
    lock: PyLock, choice: LockedChoice, metadata: bytes, markers: Mapping[str, str]
) -> frozenset[str]:
    """The ``variant-needs-`` groups of the requirements of *choice*'s wheel that hold
    in its variant context. Which extras of the package were asked for is not in the
    lock, so a requirement holds when it holds with no extra or with any extra the
    wheel provides: a gated entry is in the lock only because some such path needed it."""
    variant_markers = choice.variant_markers()
    requires, provided = _requirements(metadata)
    extras = ["", *(canonicalize_name(extra) for extra in provided)]
    groups: set[str] = set()
    for text in requires:
        try:
            requirement = parse_requirement(text)
            marker = requirement.marker
            holds = marker is None or any(
                evaluate_marker(marker, variant_markers, {**markers, "extra": extra})
                for extra in extras
            )
        except (ValueError, KeyError) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise LockError(
                f"{lock.source}: package {choice.package.describe()}: {choice.wheel.filename} "
                f"has a Requires-Dist that cannot be read, {text!r} ({reason}); the wheel's "
                "metadata is broken: report it to its publisher"
            ) from None
        if holds:
            groups.add(variant_group(requirement.name))
    return frozenset(groups)
