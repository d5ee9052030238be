"""The one reader of installed distributions: the ``.dist-info`` folders of a target's
site folders, and the ``.egg-info`` folders and files that setuptools and distutils
installs leave there (install, list, uninstall, sync and doctor all read them here).

Each one's name and version come from the head of its core metadata
(:func:`~wheelwise.wheels.core_metadata.header_fields`: big environments have
hundreds, and the rest of the file is a long description). Not
importlib.metadata.distributions(path=...): it gives no public way to the
metadata folder, which uninstalling needs (RECORD, the folder moved to the backup,
variant.json beside it), and it parses the whole METADATA, body included, of every
distribution.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from packaging.utils import canonicalize_name

from wheelwise.untrusted_json import loads_json
from wheelwise.wheels.core_metadata import header_fields

if TYPE_CHECKING:
    from wheelwise.environment.interpreter import TargetEnvironment

__all__ = [
    "EGG_INFO",
    "MAX_INSTALLED_FILE",
    "InstalledDist",
    "MetadataLocation",
    "editable_location",
    "find_installed",
    "importable_installed",
    "is_egg_info",
    "list_installed",
    "metadata_file",
    "metadata_locations",
    "read_installed_metadata",
    "read_metadata",
    "read_name_version",
]

DIST_INFO = ".dist-info"
# setuptools' metadata folder (``NAME-VERSION-pyX.Y.egg-info``, the name's "-" written
# "_"), or distutils' single file of the same name holding the core metadata itself.
EGG_INFO = ".egg-info"
# An installed file read for what is installed (METADATA, RECORD, variant.json) is
# at most this big: torch's RECORD, the largest there is, is a few MB.
MAX_INSTALLED_FILE = 64 << 20
VARIANT_JSON = "variant.json"
# Name and Version come first in every METADATA written by a build backend.
_HEAD = 8192
_NAME_AND_VERSION = frozenset({"name", "version"})


class MetadataLocation(NamedTuple):
    """A ``.dist-info`` folder whose ``METADATA`` names a distribution, or an
    ``.egg-info`` folder or file whose ``PKG-INFO`` does."""

    name: str
    """The normalized project name."""
    version: str
    location: Path
    """The ``.dist-info`` or ``.egg-info`` folder, or the ``.egg-info`` file."""


class InstalledDist(NamedTuple):
    """A distribution found in the target's site folders."""

    name: str
    """The normalized project name."""
    version: str
    installer: str | None
    variant: str | None
    """The variant label from ``variant.json``, or None for a non-variant install."""
    location: Path
    """The ``.dist-info`` folder; for an install setuptools or distutils made, the
    ``.egg-info`` folder or file (:func:`is_egg_info`)."""


# direct_url.json is a few hundred bytes; more is not one.
_DIRECT_URL_MAX = 64 << 10


def _direct_url(dist: InstalledDist) -> dict[str, object] | None:
    """*dist*'s PEP 610 ``direct_url.json`` (an object with a string ``url``), if it
    has one that reads; never raises."""
    try:
        with (dist.location / "direct_url.json").open("rb") as handle:
            data = loads_json(handle.read(_DIRECT_URL_MAX + 1)[:_DIRECT_URL_MAX])
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        return None
    return data


def direct_reference(dist: InstalledDist) -> str | None:
    """Where *dist* was installed from when it was given as a direct reference, as
    ``pip freeze`` writes it (``name @ URL``, a VCS URL with its commit), else None;
    editable installs are :func:`editable_location`'s. Never raises."""
    data = _direct_url(dist)
    if data is None or editable_location(dist) is not None:
        return None
    url = str(data["url"])
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        commit = vcs.get("commit_id")
        url = f"{vcs['vcs']}+{url}" + (f"@{commit}" if isinstance(commit, str) else "")
        subdirectory = data.get("subdirectory")
        if isinstance(subdirectory, str):
            url += f"#subdirectory={subdirectory}"
    return f"{dist.name} @ {url}"


def editable_location(dist: InstalledDist) -> str | None:
    """The project folder of an editable install (PEP 610 ``direct_url.json`` with
    ``dir_info.editable``, a ``file:`` URL), else None; never raises."""
    from urllib.parse import unquote, urlsplit

    data = _direct_url(dist)
    if data is None:
        return None
    info, url = data.get("dir_info"), data.get("url")
    if not isinstance(info, dict) or info.get("editable") is not True or not isinstance(url, str):
        return None
    parts = urlsplit(url)
    return unquote(parts.path) if parts.scheme == "file" else None


def read_name_version(metadata: bytes) -> tuple[str, str] | None:
    """``(Name, Version)`` from the header block of a core metadata file (the first of
    each), or None when either is missing or empty; never raises."""
    fields = header_fields(metadata, _NAME_AND_VERSION)
    name, version = fields.get("name"), fields.get("version")
    return (name, version) if name and version else None


def is_egg_info(dist: InstalledDist) -> bool:
    """Whether setuptools or distutils installed *dist* (an ``.egg-info`` folder or
    file, with no ``RECORD``)."""
    return dist.location.name.endswith(EGG_INFO)


def metadata_file(location: Path) -> Path:
    """The core metadata file of an installed distribution whose metadata is at
    *location*: ``METADATA`` in a ``.dist-info`` folder, ``PKG-INFO`` in an
    ``.egg-info`` folder; an ``.egg-info`` file is one itself."""
    if not location.name.endswith(EGG_INFO):
        return location / "METADATA"
    return location / "PKG-INFO" if location.is_dir() else location


def read_installed_metadata(location: Path, limit: int = MAX_INSTALLED_FILE) -> bytes:
    """The core metadata of the installed distribution whose metadata is at
    *location* (:attr:`InstalledDist.location`), at most *limit* bytes of it (raises
    OSError when it cannot be read). setuptools writes an ``.egg-info`` install's
    requirements to ``requires.txt``, not to ``PKG-INFO``: they are added to its head
    as ``Requires-Dist`` lines, as importlib.metadata reads them, so that every
    reader sees one format."""
    from wheelwise.userfiles import read_regular_file

    data = read_regular_file(metadata_file(location), limit=limit)
    if location.name.endswith(EGG_INFO) and location.is_dir():
        data = _with_requires_txt(location, data)
    return data


def _with_requires_txt(egg_info: Path, pkg_info: bytes) -> bytes:
    """*pkg_info* with the requirements of *egg_info*'s ``requires.txt`` as
    ``Requires-Dist`` lines at the end of its head, unless it lists some itself."""
    from importlib.metadata import PathDistribution

    end = _head_end(pkg_info)
    if b"\nrequires-dist:" in b"\n" + pkg_info[:end].lower():
        return pkg_info
    try:
        requires = PathDistribution(egg_info).requires or []
    except (OSError, ValueError):  # an unreadable or malformed requires.txt adds none
        return pkg_info
    head = pkg_info[:end].rstrip(b"\r\n")
    lines = b"".join(
        b"\nRequires-Dist: " + line.encode("utf-8", "surrogateescape")
        for line in requires
        if "\n" not in line and "\r" not in line
    )
    return head + lines + (pkg_info[end:] if end < len(pkg_info) else b"\n")


def _head_end(metadata: bytes) -> int:
    """Where the head of a core metadata file ends: at its first empty line (the
    line break before it kept), else at its end."""
    ends = [found for found in (metadata.find(b"\n\n"), metadata.find(b"\r\n\r\n")) if found >= 0]
    return min(ends) if ends else len(metadata)


def _name_and_version(location: Path) -> tuple[str, str] | None:
    try:
        with location.open("rb") as handle:
            head = handle.read(_HEAD)
            found = read_name_version(head)
            if found is None and len(head) == _HEAD:
                found = read_name_version(head + handle.read())
    except OSError:
        return None
    return found


def read_metadata(dist: InstalledDist) -> bytes | None:
    """The whole core metadata of *dist* (:func:`read_installed_metadata`), or None
    when it cannot be read; never raises."""
    try:
        return read_installed_metadata(dist.location)
    except OSError:
        return None


def _folder_project(folder: str) -> str:
    """The normalized project name a ``NAME-VERSION.dist-info`` folder, or a
    ``NAME-VERSION[-pyX.Y].egg-info`` folder or file (whose NAME has no "-"), is named
    for."""
    if folder.endswith(EGG_INFO):
        return canonicalize_name(folder[: -len(EGG_INFO)].split("-", 1)[0])
    return canonicalize_name(folder[: -len(DIST_INFO)].rsplit("-", 1)[0])


def _is_metadata(entry: os.DirEntry[str]) -> bool:
    """Whether *entry* holds an installed distribution's metadata: a ``.dist-info``
    folder, or an ``.egg-info`` folder or file."""
    if entry.name.endswith(DIST_INFO):
        return entry.is_dir()
    return entry.name.endswith(EGG_INFO) and (entry.is_dir() or entry.is_file())


def _named_like(folder: str, wanted: Collection[str]) -> bool:
    return _folder_project(folder) in wanted


def metadata_locations(
    site_dirs: Iterable[Path],
    wanted: Collection[str] | None = None,
    unreadable: list[Path] | None = None,
) -> list[MetadataLocation]:
    """The distributions in *site_dirs* (the first of each name, as imports find it;
    in one site folder, a ``.dist-info`` before an ``.egg-info``), sorted by name;
    those whose core metadata gives no name and version (missing, unreadable, or
    without either) are left out, and added to *unreadable* when it is given. With
    *wanted* (normalized names), only those named like one of them are read: each
    site folder is listed once, however many names are asked for."""
    found: dict[str, MetadataLocation] = {}
    for site in site_dirs:
        try:
            with os.scandir(site) as scan:
                folders = sorted(
                    (entry.name.endswith(EGG_INFO), entry.path)
                    for entry in scan
                    if entry.name.endswith((DIST_INFO, EGG_INFO))
                    and (wanted is None or _named_like(entry.name, wanted))
                    and _is_metadata(entry)
                )
        except OSError:
            continue
        for _, folder in folders:
            location = Path(folder)
            fields = _name_and_version(metadata_file(location))
            if fields is None:
                if unreadable is not None:
                    unreadable.append(location)
                continue
            name = canonicalize_name(fields[0])
            if name not in found and (wanted is None or name in wanted):
                found[name] = MetadataLocation(name, fields[1], location)
    return sorted(found.values(), key=lambda dist: dist.name)


def missing_from_venv(python: Path, names: Collection[str]) -> bool:
    """Whether *python* is a virtual environment's interpreter whose site-packages,
    found by the layout ``venv`` makes (without running it), lacks a distribution of
    one of *names* (normalized): what is installed cannot answer an install of them.
    False whenever that cannot be told (another layout, an unreadable folder)."""
    prefix = Path(os.path.abspath(python)).parent.parent  # noqa: PTH100 - keep the venv's link
    if not names or not (prefix / "pyvenv.cfg").is_file():
        return False
    sites = [site for site in prefix.glob("lib/python3*/site-packages") if site.is_dir()]
    if len(sites) != 1:
        return False
    try:  # the folders' names only: a present one is read by the check that follows
        with os.scandir(sites[0]) as scan:
            found = {
                _folder_project(e.name) for e in scan if e.name.endswith((DIST_INFO, EGG_INFO))
            }
    except OSError:
        return False
    return not set(names) <= found


def _installed(found: MetadataLocation) -> InstalledDist:
    location = found.location
    try:
        installer_name: str | None = (location / "INSTALLER").read_text("utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        installer_name = None
    variant: str | None = None
    try:
        doc = loads_json((location / VARIANT_JSON).read_bytes())
    except (OSError, ValueError):
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("variants"), dict) and doc["variants"]:
        labels = list(doc["variants"])
        variant = str(labels[0]) if len(labels) == 1 else None
    return InstalledDist(found.name, found.version, installer_name, variant, location)


def list_installed(
    env: TargetEnvironment, unreadable: list[Path] | None = None
) -> list[InstalledDist]:
    """The distributions installed in *env*'s purelib and platlib, sorted by name;
    those left out, as :func:`metadata_locations` says, added to *unreadable*
    when it is given."""
    return [_installed(found) for found in metadata_locations(env.site_dirs, None, unreadable)]


def importable_installed(env: TargetEnvironment) -> list[InstalledDist]:
    """The distributions *env*'s interpreter imports, the first of each name: those
    of its site folders, and of the folders it also imports from
    (:attr:`~wheelwise.environment.interpreter.TargetEnvironment.sites_before` and
    ``sites_after``, for ``--user``), in the interpreter's order. What an install
    counts as there, as pip counts it; only those of *env*'s own are ever changed."""
    sites = [*env.sites_before, *env.site_dirs, *env.sites_after]
    return [_installed(found) for found in metadata_locations(sites)]


def find_installed(env: TargetEnvironment, names: Iterable[str]) -> dict[str, InstalledDist]:
    """The installed distributions among *names* (by normalized name), reading only
    the metadata named like them."""
    wanted = {canonicalize_name(name) for name in names}
    return {found.name: _installed(found) for found in metadata_locations(env.site_dirs, wanted)}
