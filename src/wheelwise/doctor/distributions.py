"""The distributions installed in the target environment, as ``doctor`` needs them:
name, version, the names they require, their variant label and properties, and the
files their ``RECORD`` lists. Damaged metadata is skipped, never raised."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from wheelwise.doctor.installed_dists import installed_dists
from wheelwise.environment.installed import read_installed_metadata
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.untrusted_json import loads_json
from wheelwise.wheels.core_metadata import CoreMetadataError, read_core_metadata

__all__ = ["InstalledDistribution", "installed_distributions", "record_files"]

# A RECORD or variant.json larger than this is not read (a hostile or broken file).
MAX_METADATA_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class InstalledDistribution:
    name: str
    """The normalized project name."""
    version: str
    site: Path
    dist_info: Path
    requires: frozenset[str] = frozenset()
    """Normalized names of its ``Requires-Dist`` entries (markers not evaluated)."""
    variant: str | None = None
    """Its variant label, when its ``variant.json`` names exactly one."""
    properties: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    """The properties of that variant: ``{namespace: {feature: values}}``."""

    @property
    def spec(self) -> str:
        """``name version``, how messages name it."""
        return f"{self.name} {self.version}"


def installed_distributions(target: TargetEnvironment) -> tuple[InstalledDistribution, ...]:
    """Every distribution with a readable ``METADATA`` in the target's site folders
    (the first of a name wins, as on ``sys.path``), sorted by name."""
    found = []
    for installed in installed_dists(target.site_dirs):
        variant, properties = _variant(installed.location)
        found.append(
            InstalledDistribution(
                name=installed.name,
                version=installed.version,
                site=installed.location.parent,
                dist_info=installed.location,
                requires=_requires(installed.location),
                variant=variant,
                properties=properties,
            )
        )
    return tuple(found)


def _requires(dist_info: Path) -> frozenset[str]:
    try:
        raw = read_installed_metadata(dist_info, MAX_METADATA_BYTES)
        requires = read_core_metadata(raw, body=False).requires_dist
    except (OSError, CoreMetadataError):
        return frozenset()
    names = set()
    for value in requires:
        try:
            names.add(canonicalize_name(Requirement(value).name))
        except InvalidRequirement:
            continue
    return frozenset(names)


def _variant(dist_info: Path) -> tuple[str | None, dict[str, dict[str, tuple[str, ...]]]]:
    """The one label of ``variant.json`` and its properties, read leniently: doctor
    reports on what is installed, whichever draft wrote it."""
    path = dist_info / "variant.json"
    try:
        if path.stat().st_size > MAX_METADATA_BYTES:
            return None, {}
        document = loads_json(path.read_bytes())
    except (OSError, ValueError):
        return None, {}
    variants = document.get("variants") if isinstance(document, dict) else None
    if not isinstance(variants, dict) or len(variants) != 1:
        return None, {}
    label, namespaces = next(iter(variants.items()))
    properties: dict[str, dict[str, tuple[str, ...]]] = {}
    if isinstance(namespaces, dict):
        for namespace, features in namespaces.items():
            if not isinstance(features, dict):
                continue
            properties[str(namespace)] = {
                str(feature): tuple(str(v) for v in values)
                for feature, values in features.items()
                if isinstance(values, list)
            }
    return str(label), properties


def record_files(dist: InstalledDistribution) -> tuple[str, ...]:
    """The paths its ``RECORD`` lists, relative to its site folder (empty when the
    file is missing, too large or unreadable)."""
    path = dist.dist_info / "RECORD"
    try:
        if path.stat().st_size > MAX_METADATA_BYTES:
            return ()
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return ()
    try:
        return tuple(row[0] for row in csv.reader(text.splitlines()) if row and row[0])
    except csv.Error:
        return ()
