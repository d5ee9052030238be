"""Reading a core metadata file: a wheel's ``METADATA``, an index's PEP 658 file, an
installed ``.dist-info/METADATA``.

Every reader of these files goes through :func:`read_core_metadata`, built on
packaging's :func:`~packaging.metadata.parse_email`, and is as lenient as the
e-mail format it builds on: a field that is repeated where it may appear once, or
not valid UTF-8, is still read (the first value wins, undecodable bytes read as
Latin-1), because installed distributions and published wheels carry such files
and each caller decides what it needs. Only validation of what a field *means*
(a requirement, a version) is left to the caller.

(:mod:`wheelwise.fetch.core_metadata` compares two such files, PEP 658's served
copy and the wheel's own.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.metadata import RawMetadata, parse_email

from wheelwise.wheels.errors import WheelError

__all__ = ["CoreMetadata", "CoreMetadataError", "header_fields", "read_core_metadata"]

# packaging's field names -> the JSON form's (PEP 566: the e-mail header name in lower
# case with underscores), in the order the core metadata specification lists them.
_JSON_NAMES = {
    "metadata_version": "metadata_version",
    "name": "name",
    "version": "version",
    "dynamic": "dynamic",
    "platforms": "platform",
    "supported_platforms": "supported_platform",
    "summary": "summary",
    "description": "description",
    "description_content_type": "description_content_type",
    "keywords": "keywords",
    "home_page": "home_page",
    "download_url": "download_url",
    "author": "author",
    "author_email": "author_email",
    "maintainer": "maintainer",
    "maintainer_email": "maintainer_email",
    "license": "license",
    "license_expression": "license_expression",
    "license_files": "license_file",
    "classifiers": "classifier",
    "requires_dist": "requires_dist",
    "requires_python": "requires_python",
    "requires_external": "requires_external",
    "project_urls": "project_url",
    "provides_extra": "provides_extra",
    "provides_dist": "provides_dist",
    "obsoletes_dist": "obsoletes_dist",
    "import_names": "import_name",
    "import_namespaces": "import_namespace",
    "requires": "requires",
    "provides": "provides",
    "obsoletes": "obsoletes",
}
_RAW_NAMES = {json.replace("_", "-"): raw for raw, json in _JSON_NAMES.items()}
# Fields the JSON form writes as lists (the multiple-use ones).
_MULTIPLE_USE = frozenset(
    _JSON_NAMES[raw]
    for raw in (
        "dynamic",
        "platforms",
        "supported_platforms",
        "license_files",
        "classifiers",
        "requires_dist",
        "requires_external",
        "project_urls",
        "provides_extra",
        "provides_dist",
        "obsoletes_dist",
        "import_names",
        "import_namespaces",
        "requires",
        "provides",
        "obsoletes",
    )
)


class CoreMetadataError(WheelError):
    """The bytes cannot be read as a core metadata file at all."""


@dataclass(frozen=True)
class CoreMetadata:
    """One core metadata file: ``raw`` holds the fields packaging could read as the
    specification says, ``unparsed`` the rest by lower-case header name (unknown
    fields, repeated single-use ones, undecodable values)."""

    raw: RawMetadata
    unparsed: Mapping[str, list[str]]

    def values(self, field: str) -> list[str]:
        """Every value of the header *field* (``"Requires-Dist"``), stripped."""
        header = field.lower()
        raw_name = _RAW_NAMES.get(header)
        fields: Mapping[str, object] = self.raw
        value = fields.get(raw_name) if raw_name else None
        if value is None:
            value = self.unparsed.get(header, [])
        if isinstance(value, str):
            return [value.strip()]
        if isinstance(value, dict):  # Project-URL, as packaging maps it
            return [f"{label}, {url}" for label, url in value.items()]
        if isinstance(value, list):
            return [item.strip() for item in value if isinstance(item, str)]
        return []

    def first(self, field: str) -> str | None:
        """The first value of the header *field*, or None without one."""
        found = self.values(field)
        return found[0] if found else None

    @property
    def name(self) -> str | None:
        return self.first("Name") or None

    @property
    def version(self) -> str | None:
        return self.first("Version") or None

    @property
    def requires_dist(self) -> list[str]:
        return self.values("Requires-Dist")

    @property
    def body(self) -> str | None:
        """The description: the ``Description`` header, else the message body."""
        description = self.raw.get("description")
        if description is None:
            unparsed = [v for v in self.unparsed.get("description", []) if isinstance(v, str)]
            description = unparsed[0] if unparsed else None
        return description

    def to_json(self) -> dict[str, Any]:
        """The JSON form of the file (PEP 566): lower-case keys with underscores,
        multiple-use fields as lists, ``keywords`` split, the body as ``description``."""
        result: dict[str, Any] = {}
        fields = [(json, json.replace("_", "-")) for json in _JSON_NAMES.values()]
        known = {header for _, header in fields}
        fields += [(h.replace("-", "_"), h) for h in self.unparsed if h not in known]
        for json, header in fields:
            if json == "description":
                body = self.body
                if body is not None and body.strip():
                    result[json] = body
                continue
            values = self.values(header)
            if not values:
                continue
            if json == "keywords":
                result[json] = " ".join(values).replace(",", " ").split()
            elif json in _MULTIPLE_USE:
                result[json] = values
            else:
                result[json] = values[0]
        return result


def read_core_metadata(data: bytes, *, body: bool = True) -> CoreMetadata:
    """*data* read as a core metadata file; raises :class:`CoreMetadataError` only.

    ``body=False`` leaves out the body (the long description, most of the file), for
    the readers of fields: the e-mail parser would read it line by line."""
    try:
        raw, unparsed = parse_email(data if body else _header_block(data))
    # The e-mail parser reads any bytes; this guards against a packaging release
    # that refuses some, for one error type to handle.
    except (ValueError, LookupError, TypeError, AssertionError) as exc:
        raise CoreMetadataError(f"unreadable core metadata ({exc})") from None
    return CoreMetadata(raw, unparsed)


def _header_block(data: bytes) -> bytes:
    """*data* up to the empty line that ends its header block, as the e-mail parser
    finds it: the whole of *data* when a ``\r`` makes the line endings ambiguous."""
    if b"\r" in data:
        return data
    if data.startswith(b"\n"):
        return b""
    end = data.find(b"\n\n")
    return data if end < 0 else data[: end + 1]


def header_fields(metadata: bytes, wanted: frozenset[str]) -> dict[str, str]:
    """The first value of each field in *wanted* (lower-case names) in the header block
    of a core metadata file, unfolded; never raises.

    The fast reader for the callers that need two or three fields of many files
    (``index build`` reads every wheel of a folder of thousands, ``list`` and
    ``doctor`` every installed distribution): :func:`read_core_metadata` parses every
    field with the e-mail package.
    """
    found: dict[str, str] = {}
    current: str | None = None
    # The body (the long description) starts at the first empty line.
    header = metadata.split(b"\n\n", 1)[0].split(b"\r\n\r\n", 1)[0]
    # Lines end at CR, LF or CRLF only, as in e-mail headers (str.splitlines would also
    # split at form feeds and other separators inside a value).
    for raw in header.splitlines():
        line = raw.decode("utf-8", errors="replace")
        if not line:
            break
        if line[0] in " \t":
            if current is not None:
                found[current] = f"{found[current]} {line.strip()}".strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            break
        key = key.strip().lower()
        current = key if key in wanted and key not in found else None
        if current is not None:
            found[current] = value.strip()
    return found
