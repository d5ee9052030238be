"""Schema URLs and versions of variant metadata (PEP 825 "Variant metadata").

Two families exist in the wild:

* PEP 825: ``https://variants-schema.wheelnext.dev/peps/825/vX.Y.Z.json``;
* legacy drafts without ``peps/825``: PEP 817 drafts (``v0.0.x``) and variantlib
  0.2 (``v0.2.x``). These carry providers, static properties and feature/property
  priorities that PEP 825 dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wheelwise.variants.errors import InvalidMetadata, UnsupportedSchema

PEP825_SCHEMA_URL = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"
# Versions of the PEP 825 family this release knows key by key.
PEP825_MAJOR = 0
PEP825_KNOWN_MINOR = 1
LEGACY_MAJOR = 0

_URL_RE = re.compile(
    r"https?://[^/\s]+/(?:[^\s]*/)?v(?P<major>\d+)\.(?P<minor>\d+)\.(?P<patch>\d+)\.json"
)


@dataclass(frozen=True, order=True)
class SchemaVersion:
    major: int
    minor: int
    patch: int
    legacy: bool

    @classmethod
    def from_url(cls, url: object) -> SchemaVersion:
        if not isinstance(url, str):
            raise InvalidMetadata(f"'$schema' must be a URL string, got {url!r}")
        match = _URL_RE.fullmatch(url.strip())
        if match is None:
            raise InvalidMetadata(
                f"unrecognised '$schema' URL {url!r}: expected one ending in "
                "/vMAJOR.MINOR.PATCH.json, such as " + PEP825_SCHEMA_URL
            )
        legacy = "/peps/825/" not in url
        version = cls(int(match["major"]), int(match["minor"]), int(match["patch"]), legacy)
        supported_major = LEGACY_MAJOR if legacy else PEP825_MAJOR
        if version.major != supported_major:
            raise UnsupportedSchema(
                f"unsupported variant metadata schema version {version} ('$schema' {url}): "
                f"this wheelwise reads major version {supported_major} only; "
                "upgrade wheelwise to read it"
            )
        return version

    @property
    def is_newer_minor(self) -> bool:
        """A newer, backwards compatible PEP 825 minor: read what we know, ignore the rest."""
        return not self.legacy and self.minor > PEP825_KNOWN_MINOR

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


CANONICAL_SCHEMA = SchemaVersion.from_url(PEP825_SCHEMA_URL)
