"""The distributions installed in a target, read from its ``.dist-info`` folders
directly: the name and version from the head of ``METADATA``, and whether the
folder keeps a ``variant.json`` (the variant wheel's record, PEP 825).

Only what the builds section needs is read, so that ``doctor`` stays fast on big
environments: no e-mail parser (the shared reader,
:mod:`wheelwise.wheels.core_metadata`, parses every field of a file that is mostly
its long description), no ``importlib.metadata`` scan (it parses each whole
``METADATA`` too, and names no ``.dist-info`` folder publicly), and none of the
install machinery that ``wheelwise list`` loads.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from packaging.utils import canonicalize_name

__all__ = ["InstalledDist", "installed_dists", "read_name_version"]

DIST_INFO = ".dist-info"
VARIANT_JSON = "variant.json"
# Name and Version come first in every METADATA written by a build backend.
_HEAD = 8192


class InstalledDist(NamedTuple):
    name: str
    """The normalized project name."""
    version: str
    location: Path
    """The ``.dist-info`` folder."""
    has_variant_json: bool


def installed_dists(site_dirs: Iterable[Path]) -> list[InstalledDist]:
    """The distributions in *site_dirs* (the first of each name, as imports find
    it), sorted by name; folders that cannot be read are left out."""
    found: dict[str, InstalledDist] = {}
    for site in site_dirs:
        try:
            with os.scandir(site) as scan:
                folders = sorted(e.path for e in scan if e.name.endswith(DIST_INFO) and e.is_dir())
        except OSError:
            continue
        for folder in folders:
            location = Path(folder)
            try:
                with (location / "METADATA").open("rb") as handle:
                    head = handle.read(_HEAD)
                    fields = read_name_version(head)
                    if fields is None and len(head) == _HEAD:
                        fields = read_name_version(head + handle.read())
            except OSError:
                continue
            if fields is None:
                continue
            name = canonicalize_name(fields[0])
            if name not in found:
                has_variant = (location / VARIANT_JSON).is_file()
                found[name] = InstalledDist(name, fields[1], location, has_variant)
    return sorted(found.values(), key=lambda dist: dist.name)


def read_name_version(metadata: bytes) -> tuple[str, str] | None:
    """``(Name, Version)`` from the header of a core metadata file (the first of
    each), or None when either is missing; never raises."""
    name = version = ""
    for raw in metadata.split(b"\n"):
        line = raw.rstrip(b"\r")
        if not line.strip():
            break  # the end of the header
        if line[:1] in (b" ", b"\t"):
            continue  # a folded line of a long field
        key, colon, value = line.partition(b":")
        if not colon:
            continue
        key = key.strip().lower()
        if key == b"name" and not name:
            name = value.strip().decode("utf-8", "replace")
        elif key == b"version" and not version:
            version = value.strip().decode("utf-8", "replace")
        if name and version:
            return name, version
    return None
