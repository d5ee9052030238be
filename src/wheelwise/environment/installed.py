"""The one reader of installed distributions: the ``.dist-info`` folders of a target's
site folders, read for their name, version, installer and variant label.

Not importlib.metadata.distributions(path=...): it gives no public way to the
.dist-info folder, which uninstalling needs (RECORD, the folder moved to the backup,
variant.json beside it); it also yields .egg-info installs, which have no RECORD to
uninstall by; and it parses the whole METADATA, body included, of every
distribution, where an install reads the heads of the few it replaces.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from packaging.utils import canonicalize_name

from wheelwise.untrusted_json import loads_json
from wheelwise.wheels.core_metadata import CoreMetadataError, read_core_metadata

if TYPE_CHECKING:
    from wheelwise.environment.interpreter import TargetEnvironment

__all__ = ["InstalledDist", "find_installed", "list_installed", "read_dist"]


class InstalledDist(NamedTuple):
    """A distribution found in the target's site folders."""

    name: str
    """The normalized project name."""
    version: str
    installer: str | None
    variant: str | None
    """The variant label from ``variant.json``, or None for a non-variant install."""
    location: Path
    """The ``.dist-info`` folder."""


def read_dist(dist_info: Path) -> InstalledDist | None:
    try:
        raw = (dist_info / "METADATA").read_bytes()
    except OSError:
        return None
    try:
        metadata = read_core_metadata(raw, body=False)
    except CoreMetadataError:
        return None
    name, version = metadata.name, metadata.version
    if not name or not version:
        return None
    try:
        installer_name: str | None = (dist_info / "INSTALLER").read_text("utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        installer_name = None
    variant: str | None = None
    try:
        doc = loads_json((dist_info / "variant.json").read_bytes())
    except (OSError, ValueError):
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("variants"), dict) and doc["variants"]:
        labels = list(doc["variants"])
        variant = str(labels[0]) if len(labels) == 1 else None
    return InstalledDist(
        name=canonicalize_name(str(name)),
        version=str(version),
        installer=installer_name,
        variant=variant,
        location=dist_info,
    )


def list_installed(env: TargetEnvironment) -> list[InstalledDist]:
    """The distributions installed in *env*'s purelib and platlib, sorted by name."""
    found: dict[str, InstalledDist] = {}
    for site in env.site_dirs:
        try:
            entries = sorted(site.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".dist-info") and entry.is_dir():
                dist = read_dist(entry)
                if dist is not None:
                    found.setdefault(dist.name, dist)
    return sorted(found.values(), key=lambda d: d.name)


def find_installed(env: TargetEnvironment, names: Iterable[str]) -> dict[str, InstalledDist]:
    """The installed distributions among *names* (by normalized name), reading only
    dist-info folders named like them, and listing each site folder once (listing it
    once per wheel made an install quadratic in the environment's size)."""
    wanted = {canonicalize_name(name) for name in names}
    found: dict[str, InstalledDist] = {}
    for site in env.site_dirs:
        try:
            with os.scandir(site) as scan:
                candidates = sorted(
                    entry.path
                    for entry in scan
                    if entry.name.endswith(".dist-info")
                    and canonicalize_name(entry.name[: -len(".dist-info")].rsplit("-", 1)[0])
                    in wanted
                )
        except OSError:
            continue
        for path in candidates:
            entry = Path(path)
            if not entry.is_dir():
                continue
            dist = read_dist(entry)
            if dist is not None and dist.name in wanted and dist.name not in found:
                found[dist.name] = dist
    return found
