"""The distributions installed in a target as the builds section needs them: name,
version, metadata folder, and whether the folder keeps a ``variant.json`` (the
variant wheel's record, PEP 825), from the one reader of installed distributions
(:mod:`wheelwise.environment.installed`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from wheelwise.environment.installed import VARIANT_JSON, metadata_locations

__all__ = ["VARIANT_JSON", "InstalledDist", "installed_dists"]


class InstalledDist(NamedTuple):
    name: str
    """The normalized project name."""
    version: str
    location: Path
    """The ``.dist-info`` folder (an ``.egg-info`` folder or file for an install
    setuptools or distutils made)."""
    has_variant_json: bool


def installed_dists(site_dirs: Iterable[Path]) -> list[InstalledDist]:
    """The distributions in *site_dirs* (the first of each name, as imports find
    it), sorted by name; folders that cannot be read are left out."""
    return [
        InstalledDist(
            found.name, found.version, found.location, (found.location / VARIANT_JSON).is_file()
        )
        for found in metadata_locations(site_dirs)
    ]
