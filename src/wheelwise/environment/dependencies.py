"""What an installed distribution requires here: its ``Requires-Dist`` lines that apply
in its environment (not an extra's; markers read with the environment's values, and
variant markers with its own build's properties), as ``show`` and ``tree`` read them.

A line that does not parse, a marker that cannot be read, or METADATA that cannot be
read counts as no requirement: these commands describe what is installed, and say
nothing rather than guess.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from wheelwise.environment.installed import MAX_INSTALLED_FILE, read_installed_metadata

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from wheelwise.environment.installed import InstalledDist
    from wheelwise.wheels.core_metadata import CoreMetadata

__all__ = ["MAX_INSTALLED_FILE", "VariantMarkers", "installed_metadata", "installed_requirements"]

VariantMarkers = Mapping[str, "str | frozenset[str]"]


def installed_metadata(dist: InstalledDist) -> CoreMetadata | None:
    """*dist*'s core metadata header fields (the body, a long description, is not
    read), or None when it cannot be read."""
    from wheelwise.wheels.core_metadata import CoreMetadataError, read_core_metadata

    try:
        data = read_installed_metadata(dist.location, MAX_INSTALLED_FILE)
        return read_core_metadata(data, body=False)
    except (OSError, CoreMetadataError):
        return None


def installed_requirements(
    dist: InstalledDist, metadata: CoreMetadata | None, markers: Mapping[str, str]
) -> list[Requirement]:
    """The requirements of *dist* (its *metadata*) that apply in an environment with
    *markers*, in the order its METADATA lists them."""
    if metadata is None:
        return []
    variant_markers: list[VariantMarkers] = []

    def variants() -> VariantMarkers:  # read once, for the first variant marker only
        if not variant_markers:
            variant_markers.append(_variant_markers(dist))
        return variant_markers[0]

    found = []
    for text in metadata.requires_dist:
        requirement = _requirement(text)
        if requirement is not None and _applies(requirement, markers, variants):
            found.append(requirement)
    return found


def _requirement(text: str) -> Requirement | None:
    """*text* parsed, variant markers allowed (a variant build's dependencies use
    them); None when it does not parse."""
    from packaging.requirements import InvalidRequirement

    from wheelwise.variants.markers import parse_requirement

    try:
        return parse_requirement(text)
    except InvalidRequirement:
        return None


def _applies(
    requirement: Requirement, markers: Mapping[str, str], variants: Callable[[], VariantMarkers]
) -> bool:
    """Whether *requirement* applies to the installed distribution: its marker read
    with the environment's markers, no extra, and the build's variant markers; one
    that cannot be read does not."""
    marker = requirement.marker
    if marker is None:
        return True
    from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName

    from wheelwise.variants.markers import evaluate_marker, uses_variant_markers

    variant_env = variants() if uses_variant_markers(marker) else {}
    try:
        return evaluate_marker(marker, variant_env, {**markers, "extra": ""})
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return False


def _variant_markers(dist: InstalledDist) -> VariantMarkers:
    """The variant markers of *dist*'s build: its label and the properties its
    variant.json gives that label (the build was installed because the machine has
    them all); none of them for a non-variant install or a document that does not
    read."""
    from wheelwise.untrusted_json import UntrustedDocumentError, loads_json
    from wheelwise.userfiles import read_regular_file
    from wheelwise.variants.errors import VariantError
    from wheelwise.variants.labels import iter_properties
    from wheelwise.variants.markers import variant_environment

    if dist.variant is None:
        return variant_environment(None)
    try:
        document = loads_json(
            read_regular_file(dist.location / "variant.json", limit=MAX_INSTALLED_FILE)
        )
        properties = document["variants"][dist.variant]
        return variant_environment(dist.variant, list(iter_properties(properties)))
    except (OSError, UntrustedDocumentError, VariantError, LookupError, TypeError, AttributeError):
        return variant_environment(dist.variant)
