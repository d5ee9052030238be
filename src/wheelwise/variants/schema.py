"""Schema URLs and versions of variant metadata, one per format era.

Every era that real wheels and indexes carry is read:

* PEP 825: ``https://variants-schema.wheelnext.dev/peps/825/vX.Y.Z.json``, the only
  format written;
* PEP 850 (providers): ``.../peps/850/vX.Y.Z.json``, PEP 825 plus the ``providers``
  block (what uv reads);
* variantlib 0.2: ``.../v0.2.x.json``;
* PEP 817 drafts: ``.../v0.0.1.json`` to ``.../v0.0.3.json``;
* before any version: the bare ``https://variants-schema.wheelnext.dev/`` (PyTorch
  2.8's indexes) or no ``$schema`` at all (uv's prototype fixtures).

All but PEP 825 may carry providers, static properties and feature/property
priorities; they are the *legacy* eras.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wheelwise.variants.errors import InvalidMetadata, UnsupportedSchema

PEP825_SCHEMA_URL = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"
PEP850_SCHEMA_URL = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
# Versions of the PEP 825 family this release knows key by key.
PEP825_MAJOR = 0
PEP825_KNOWN_MINOR = 1
LEGACY_MAJOR = 0

_URL_RE = re.compile(
    r"https?://[^/\s]+/(?:[^\s]*/)?v(?P<major>\d+)\.(?P<minor>\d+)\.(?P<patch>\d+)\.json"
)
# The pre-PEP era named the schema site itself, with no version.
_UNVERSIONED_RE = re.compile(r"https?://[^/\s]+/?")


@dataclass(frozen=True, order=True)
class SchemaVersion:
    major: int
    minor: int
    patch: int
    legacy: bool
    # The URL as written (None: the document had no '$schema'); not part of equality.
    url: str | None = field(default=None, compare=False)

    @classmethod
    def from_url(cls, url: object) -> SchemaVersion:
        if not isinstance(url, str):
            raise InvalidMetadata(f"'$schema' must be a URL string, got {url!r}")
        if _UNVERSIONED_RE.fullmatch(url.strip()):
            return cls(0, 0, 0, legacy=True, url=url)
        match = _URL_RE.fullmatch(url.strip())
        if match is None:
            raise InvalidMetadata(
                f"unrecognised '$schema' URL {url!r}: expected one ending in "
                "/vMAJOR.MINOR.PATCH.json, such as " + PEP825_SCHEMA_URL
            )
        legacy = "/peps/825/" not in url
        version = cls(
            int(match["major"]), int(match["minor"]), int(match["patch"]), legacy, url=url
        )
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

    @property
    def era(self) -> str:
        """Which format family the document belongs to, for messages and docs."""
        if not self.legacy:
            return "PEP 825"
        if self.url is not None and "/peps/850/" in self.url:
            return "PEP 850"
        if (self.major, self.minor) == (0, 0) and self.patch == 0:
            return "pre-PEP (no schema version)"
        if (self.major, self.minor) == (0, 0):
            return "PEP 817 draft"
        return "variantlib"

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


CANONICAL_SCHEMA = SchemaVersion.from_url(PEP825_SCHEMA_URL)
# Documents without '$schema' (uv's prototype) and the bare schema site (PyTorch 2.8).
UNVERSIONED_SCHEMA = SchemaVersion(0, 0, 0, legacy=True)
