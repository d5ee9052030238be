"""The ``abi_dependency`` namespace answered from installed distributions.

No provider plugin may claim this namespace (PEP 817). Outside a resolution
(``wheelwise select``) the versions of the distributions installed next to the
running interpreter answer it; ``wheelwise install`` puts the resolution's own
versions in its place, see :mod:`wheelwise.resolve.selection`.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import sys
from collections.abc import Iterable, Mapping

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.providers.base import ProviderReport
from wheelwise.variants.abi_dependency import (
    NAMESPACE,
    package_name,
    supported_features,
    used_features,
)
from wheelwise.variants.metadata import VariantMetadata

__all__ = ["abi_dependency_report", "installed_versions"]


def installed_versions(
    names: Iterable[str], path: Iterable[str] | None = None
) -> dict[str, Version]:
    """``{normalized name: version}`` of those of *names* installed on *path*
    (default: ``sys.path``). Only the named distributions are looked up, which reads
    a few metadata folders instead of every installed distribution's."""
    search = sys.path if path is None else list(path)
    found: dict[str, Version] = {}
    for name in names:
        # The first one found is the one imported; a broken version matches nothing.
        for dist in importlib.metadata.distributions(name=name, path=search):
            with contextlib.suppress(InvalidVersion):
                found[canonicalize_name(name)] = Version(dist.version)
            break
    return found


def abi_dependency_report(
    metadata: VariantMetadata, versions: Mapping[str, Version] | None = None
) -> ProviderReport:
    """The supported ``abi_dependency`` properties of *metadata* for *versions*
    (default: this interpreter's installed distributions)."""
    if versions is None:
        versions = installed_versions(package_name(f) for f in used_features(metadata))
    found = supported_features(metadata, versions)
    return ProviderReport(
        NAMESPACE,
        "ok",
        "installed distributions",
        "versions of the installed distributions the variants were built against",
        found,
    )
