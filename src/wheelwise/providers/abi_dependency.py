"""The ``abi_dependency`` namespace answered from installed distributions.

No provider plugin may claim this namespace (PEP 817). Outside a resolution
(``wheelwise select``) the versions of the distributions installed next to the
running interpreter answer it; ``wheelwise install`` puts the resolution's own
versions in its place, see :mod:`wheelwise.install.selection`.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable, Mapping

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.providers.base import ProviderReport
from wheelwise.variants.abi_dependency import NAMESPACE, supported_features
from wheelwise.variants.metadata import VariantMetadata

__all__ = ["abi_dependency_report", "installed_versions"]


def installed_versions(path: Iterable[str] | None = None) -> dict[str, Version]:
    """``{normalized name: version}`` of the distributions installed on *path* (default:
    ``sys.path``); a distribution with a broken name or version is left out."""
    found: dict[str, Version] = {}
    distributions = (
        importlib.metadata.distributions()
        if path is None
        else importlib.metadata.distributions(path=list(path))
    )
    for dist in distributions:
        name = dist.metadata["Name"]
        if not name:
            continue
        try:
            # The first one found wins, as for imports.
            found.setdefault(canonicalize_name(name), Version(dist.version))
        except InvalidVersion:
            continue
    return found


def abi_dependency_report(
    metadata: VariantMetadata, versions: Mapping[str, Version] | None = None
) -> ProviderReport:
    """The supported ``abi_dependency`` properties of *metadata* for *versions*
    (default: this interpreter's installed distributions)."""
    found = supported_features(metadata, installed_versions() if versions is None else versions)
    return ProviderReport(
        NAMESPACE,
        "ok",
        "installed distributions",
        "versions of the installed distributions the variants were built against",
        found,
    )
