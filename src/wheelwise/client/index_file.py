"""One file of a project as a source lists it (:class:`IndexFile`), shared by the page
readers (``simple_parse``) and the lazily read pages (``page_files``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    NormalizedName,
    canonicalize_name,
    parse_sdist_filename,
)
from packaging.version import InvalidVersion, Version

from wheelwise.variants.errors import InvalidWheelFilename
from wheelwise.variants.filenames import WheelFilename

__all__ = ["OTHER", "SDIST", "VARIANTS_JSON", "WHEEL", "IndexFile"]

_VARIANTS_JSON_RE = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)-variants\.json$")
_SDIST_SUFFIXES = (".tar.gz", ".zip")

WHEEL = "wheel"
SDIST = "sdist"
VARIANTS_JSON = "variants.json"
OTHER = "other"


@dataclass(frozen=True)
class IndexFile:
    """One file of a project, as a source lists it."""

    filename: str
    url: str
    hashes: Mapping[str, str] = field(default_factory=dict, hash=False)
    requires_python: str | None = None
    yanked: bool = False
    yanked_reason: str | None = None
    # PEP 658: the core metadata is served at url + ".metadata"; its hashes if given.
    core_metadata: bool = False
    core_metadata_hashes: Mapping[str, str] = field(default_factory=dict, hash=False)
    size: int | None = None
    # PEP 700's upload-time as the page gives it (read only for --exclude-newer).
    upload_time: str | None = None

    @cached_property
    def kind(self) -> str:
        """``wheel``, ``sdist``, ``variants.json`` or ``other``."""
        if self.filename.endswith(".whl"):
            return WHEEL if self.wheel is not None else OTHER
        if _VARIANTS_JSON_RE.match(self.filename):
            return VARIANTS_JSON
        if self.filename.endswith(_SDIST_SUFFIXES):
            return SDIST if self._sdist is not None else OTHER
        return OTHER

    @cached_property
    def wheel(self) -> WheelFilename | None:
        """The parsed wheel filename (None for anything else or an invalid name)."""
        if not self.filename.endswith(".whl"):
            return None
        try:
            return WheelFilename.parse(self.filename)
        except InvalidWheelFilename:
            return None

    @cached_property
    def _sdist(self) -> tuple[NormalizedName, Version] | None:
        try:
            return parse_sdist_filename(self.filename)
        except (InvalidSdistFilename, InvalidVersion):
            return None

    @cached_property
    def _name_version(self) -> tuple[NormalizedName, Version] | None:
        if self.wheel is not None:
            try:
                return self.wheel.name, self.wheel.version
            except InvalidVersion:
                return None
        match = _VARIANTS_JSON_RE.match(self.filename)
        if match:
            try:
                return canonicalize_name(match["name"]), Version(match["version"])
            except InvalidVersion:
                return None
        if self.filename.endswith(_SDIST_SUFFIXES):
            return self._sdist
        return None

    @property
    def project(self) -> NormalizedName | None:
        """The normalized project name the filename gives (None if it gives none)."""
        found = self._name_version
        return None if found is None else found[0]

    @property
    def version(self) -> Version | None:
        """The version the filename gives (None if it gives none)."""
        found = self._name_version
        return None if found is None else found[1]

    @property
    def is_variant_wheel(self) -> bool:
        return self.wheel is not None and self.wheel.is_variant

    @property
    def metadata_url(self) -> str:
        """Where PEP 658 serves this file's core metadata."""
        return self.url + ".metadata"

    def allows_python(self, python_version: str) -> bool:
        """Whether ``Requires-Python`` admits *python_version* (an unreadable
        specifier admits everything, as pip does)."""
        if not self.requires_python:
            return True
        return python_allowed(self.requires_python, python_version)


@functools.lru_cache(maxsize=1024)
def python_allowed(requires_python: str, python_version: str) -> bool:
    """Whether the ``Requires-Python`` range *requires_python* admits
    *python_version* (an unreadable one admits everything, as pip does). Once per
    pair: every file of a project usually repeats the same range."""
    try:
        specifier = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return True
    return specifier.contains(python_version, prereleases=True)
