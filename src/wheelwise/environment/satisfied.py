"""Whether what is installed already satisfies an install's requirements, read from
the environment alone: no index, no resolver.

An install without ``--upgrade`` keeps every installed version that fits (its build
too: see :mod:`wheelwise.resolve.decide`), so when each requirement, and each
requirement of what satisfies it, down the whole graph, is met by an installed
distribution, the resolver could only answer "already installed" for all of them.
:func:`installed_closure` finds that out from the ``.dist-info`` folders, as pip
("Requirement already satisfied") and uv ("Audited") do, so that such an install
reads no index page and works without the network.

Anything it cannot decide on its own is left to the resolver (the answer is None): a
requirement that does not parse, a missing or unreadable distribution, an extra the
distribution does not declare, a marker on a variant property (it needs the machine's
answer), or a build with ``abi_dependency`` properties (it must match what its
dependency's version is now).
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Mapping, Sequence

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.environment.installed import InstalledDist, read_installed_metadata
from wheelwise.untrusted_json import UntrustedDocumentError, loads_json
from wheelwise.userfiles import read_regular_file
from wheelwise.variants.markers import VARIANT_MARKERS
from wheelwise.wheels.core_metadata import CoreMetadata, CoreMetadataError, read_core_metadata

__all__ = ["installed_closure", "unmet_requirements"]

# A requirement whose whole marker is ``extra == "NAME"``: needed for that extra only.
_ONLY_EXTRA = re.compile(r"""; *extra *== *(["'])([A-Za-z0-9._-]+)\1 *$""")
# An installed METADATA or variant.json over this (or not a regular file: a FIFO
# would block) is the resolver's to read, not this shortcut's.
_MAX_BYTES = 16 << 20
_MARKER_ERRORS = (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName)


class _Undecided(Exception):
    """Left to the resolver."""


def installed_closure(
    requirements: Sequence[str],
    installed: Mapping[str, InstalledDist],
    environment: Mapping[str, str],
    *,
    no_deps: bool = False,
) -> list[InstalledDist] | None:
    """The installed distributions that satisfy *requirements* and, unless *no_deps*,
    everything they require (markers read with *environment*), in the order they
    were reached; None when one is not satisfied, or the question is the resolver's
    (see the module's docstring)."""
    try:
        return _closure(requirements, installed, environment, no_deps)
    except _Undecided:
        return None


def _closure(
    requirements: Sequence[str],
    installed: Mapping[str, InstalledDist],
    environment: Mapping[str, str],
    no_deps: bool,
) -> list[InstalledDist]:
    reached: dict[str, InstalledDist] = {}
    read: dict[str, CoreMetadata] = {}
    done: set[tuple[str, str]] = set()  # (name, extra) whose requirements were taken
    pending = deque((text, "") for text in requirements)
    while pending:
        text, extra = pending.popleft()
        requirement = _applies(text, environment, extra)
        if requirement is None:
            continue
        name = canonicalize_name(requirement.name)
        dist = installed.get(name)
        if dist is None or not _fits(dist, requirement):
            raise _Undecided
        reached.setdefault(name, dist)
        if no_deps:
            continue
        metadata = read.get(name) or read.setdefault(name, _metadata(dist))
        provided = {canonicalize_name(e) for e in metadata.values("Provides-Extra")}
        for one in ["", *sorted(canonicalize_name(e) for e in requirement.extras)]:
            if one and one not in provided:
                raise _Undecided  # the resolver says what becomes of it
            if (name, one) not in done:
                done.add((name, one))
                pending.extend((dependency, one) for dependency in metadata.requires_dist)
    return list(reached.values())


def _applies(text: str, environment: Mapping[str, str], extra: str) -> Requirement | None:
    """*text* parsed, or None when its marker leaves it out here."""
    only = _ONLY_EXTRA.search(text)
    if only is not None and canonicalize_name(only.group(2)) != extra:
        return None  # most lines of a METADATA: not parsed for nothing
    requirement = _parsed(text)
    if requirement is None or requirement.url:
        raise _Undecided
    marker = requirement.marker
    if marker is None:
        return requirement
    # packaging refuses these names today (the parse above fails); should it read
    # them one day, their values still need the machine's answer.
    if any(name in str(marker) for name in VARIANT_MARKERS):
        raise _Undecided
    try:
        applies = marker.evaluate({**environment, "extra": extra})
    except _MARKER_ERRORS:
        raise _Undecided from None
    return requirement if applies else None


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Requirement | None:
    """*text* parsed, once (an extra's lines are read again for each extra asked
    for); None when it does not parse. Shared: never changed."""
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _fits(dist: InstalledDist, requirement: Requirement) -> bool:
    """Whether *dist* satisfies *requirement*'s range (pre-releases count, as pip
    counts an installed one) and can be kept as it is."""
    try:
        version = Version(dist.version)
    except InvalidVersion:
        raise _Undecided from None
    if not requirement.specifier.contains(version, prereleases=True):
        return False
    if dist.variant is not None:
        from wheelwise.variants import abi_dependency  # variant modules load for variants only

        try:
            document = loads_json(
                read_regular_file(dist.location / "variant.json", limit=_MAX_BYTES)
            )
        except (OSError, UntrustedDocumentError):
            raise _Undecided from None
        variants = document.get("variants") if isinstance(document, dict) else None
        properties = variants.get(dist.variant) if isinstance(variants, dict) else None
        if not isinstance(properties, dict) or abi_dependency.NAMESPACE in properties:
            raise _Undecided  # its build must match what its dependency is now
    return True


def _metadata(dist: InstalledDist) -> CoreMetadata:
    try:
        data = read_installed_metadata(dist.location, _MAX_BYTES)
        return read_core_metadata(data, body=False)
    except (OSError, CoreMetadataError):
        raise _Undecided from None


def unmet_requirements(
    installed: Mapping[str, InstalledDist],
    environment: Mapping[str, str],
    *,
    names: Sequence[str] | None = None,
) -> list[str]:
    """What ``pip check`` reports: each requirement of an installed distribution
    (not of its extras; markers read with *environment*) that no installed
    distribution meets, as a line; only of those that require one of *names*, when
    given. What this cannot decide alone (a marker on a variant property, metadata
    that does not read) is left out."""
    problems = []
    for dist in sorted(installed.values(), key=lambda one: one.name):
        try:
            metadata = _metadata(dist)
        except _Undecided:
            continue
        for text in metadata.requires_dist:
            try:
                requirement = _applies(text, environment, "")
            except _Undecided:
                continue
            if requirement is None:
                continue
            name = canonicalize_name(requirement.name)
            if names is not None and name not in names:
                continue
            wanted = f"{requirement.name}{requirement.specifier}"
            other = installed.get(name)
            if other is None:
                problems.append(
                    f"{dist.name} {dist.version} requires {wanted}, which is not installed"
                )
                continue
            try:
                version = Version(other.version)
            except InvalidVersion:
                continue
            if not requirement.specifier.contains(version, prereleases=True):
                problems.append(
                    f"{dist.name} {dist.version} requires {wanted}, but {other.name} "
                    f"{other.version} is installed"
                )
    return problems
