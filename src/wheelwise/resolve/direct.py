"""Requirements that name a source instead of a release: pip's and uv's forms.

* a local folder (``./my-project``, ``/src/pkg[extra]``), built with its PEP 517
  backend; with ``-e``, an editable install (PEP 660);
* a local file: a wheel (``dist/pkg-1.0-py3-none-any.whl``) or a source archive
  (``pkg-1.0.tar.gz``, ``.zip``);
* a URL: ``name @ https://host/pkg-1.0.tar.gz``, ``name @ file:///path``, or the URL
  alone, and ``git+`` URLs (``git+https://host/repo@v1.0#subdirectory=pkg``;
  ``#egg=name`` names the project when nothing else does). A wheel's or an
  archive's URL may end with its hash, ``#sha256=HEX`` (any algorithm pip and uv
  check): the file must have it.

:func:`parse_direct` tells them from plain requirements (``requests>=2``) without
touching the network: a text is a path when it has a path separator or starts with
a dot, or names an existing file with an archive's suffix.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name

from wheelwise.models.errors import ResolveError
from wheelwise.policy.hashes import CHECKED, digest_hex_length, is_digest

__all__ = ["DirectReference", "parse_direct"]

DIRECTORY = "directory"
WHEEL = "wheel"
ARCHIVE = "archive"
GIT = "git"

_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")
_EXTRAS = re.compile(r"^(?P<path>.+?)(?P<extras>\[[A-Za-z0-9_.,\s-]*\])$")
_URL_SCHEMES = ("http://", "https://", "file:")
_ANY_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True)
class DirectReference:
    """One requirement that names a source. ``location`` is a local path for
    ``directory``, ``wheel`` and ``archive`` references given as paths or ``file:``
    URLs, else the URL (``git`` without its ``git+`` prefix, revision and
    fragment)."""

    text: str
    kind: str
    location: str
    name: NormalizedName | None = None
    extras: frozenset[NormalizedName] = frozenset()
    marker: str | None = None
    editable: bool = False
    revision: str | None = None
    subdirectory: str | None = None
    # The URL as given (for direct_url.json and messages).
    url: str | None = None
    # The hashes the file must have (lower-cased algorithm and hex digest): from
    # the URL's fragment, or ``--hash`` in a requirements file (any one of several
    # of an algorithm).
    hashes: tuple[tuple[str, str], ...] = ()

    @property
    def is_local(self) -> bool:
        return self.kind != GIT and not self.location.startswith(("http://", "https://"))


def _looks_like_path(text: str) -> bool:
    if text.startswith(".") or os.sep in text or "/" in text:
        return True
    return text.lower().endswith((".whl", *_ARCHIVE_SUFFIXES)) and Path(text).is_file()


def _extras_of(text: str) -> tuple[str, frozenset[NormalizedName]]:
    match = _EXTRAS.match(text)
    if match is None:
        return text, frozenset()
    extras = match.group("extras")[1:-1]
    return match.group("path"), frozenset(
        canonicalize_name(e.strip()) for e in extras.split(",") if e.strip()
    )


def _kind_of_file(location: str, text: str) -> str:
    lower = location.lower().rstrip("/")
    if lower.endswith(".whl"):
        return WHEEL
    if lower.endswith(_ARCHIVE_SUFFIXES):
        return ARCHIVE
    raise ResolveError(f"{text!r}: not a wheel or source archive (expected .whl, .tar.gz or .zip)")


class _Given(NamedTuple):
    """What a ``name[extras] @ URL ; marker`` requirement said besides its URL."""

    name: NormalizedName | None = None
    extras: frozenset[NormalizedName] = frozenset()
    marker: str | None = None
    editable: bool = False


def _local(
    path_text: str,
    text: str,
    given: _Given,
    url: str | None = None,
    hashes: tuple[tuple[str, str], ...] = (),
) -> DirectReference:
    name, extras, marker, editable = given
    path = Path(path_text).expanduser()
    if path.is_dir():
        kind = DIRECTORY
    elif path.is_file():
        kind = _kind_of_file(path.name, text)
    elif path.exists():  # a FIFO, a device: reading it would block, or never end
        raise ResolveError(f"{text!r}: not a regular file nor a folder ({str(path)!r})")
    else:
        raise ResolveError(f"{text!r}: no such file or folder ({str(path)!r})")
    if editable and kind != DIRECTORY:
        raise ResolveError(f"-e {text!r}: an editable install needs a project folder")
    if hashes and kind == DIRECTORY:
        raise ResolveError(f"{text!r}: a hash names a file, not a project folder")
    return DirectReference(
        text, kind, str(path.absolute()), name, extras, marker, editable, url=url, hashes=hashes
    )


def url_hashes(url: str, text: str) -> tuple[tuple[str, str], ...]:
    """The hash a file URL's fragment gives (``#sha256=HEX``), if it gives one;
    raises ResolveError for one that cannot be a digest of its algorithm."""
    fragment = urllib.parse.urlsplit(url).fragment
    found = []
    for part in fragment.split("&"):
        algorithm, sep, value = part.partition("=")
        name = algorithm.lower()
        if not sep or name not in CHECKED:
            continue  # #egg=, #subdirectory=: not a hash
        if not is_digest(name, value):
            length = digest_hex_length(name)
            raise ResolveError(
                f"{text!r}: {algorithm} hash {value!r} in the URL is not a {name} digest "
                f"({length} hexadecimal digits)"
            )
        found.append((name, value.lower()))
    return tuple(found)


def _file_path(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise ResolveError(f"{url!r}: a file: URL on another host is not supported")
    return urllib.parse.unquote(parts.path)


def _git(url: str, text: str, given: _Given) -> DirectReference:
    name = given.name
    if given.editable:
        raise ResolveError(
            f"-e {text!r}: editable installs from git are not supported; clone "
            "the repository and install the folder with -e"
        )
    bare = url[len("git+") :]
    parts = urllib.parse.urlsplit(bare)
    fragment = urllib.parse.parse_qs(parts.fragment)
    subdirectory = fragment.get("subdirectory", [None])[0]
    if name is None and fragment.get("egg"):
        name = canonicalize_name(fragment["egg"][0])
    path = parts.path
    revision = None
    if "@" in path:
        path, revision = path.rsplit("@", 1)
        revision = revision or None
    location = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    if not parts.scheme:
        raise ResolveError(f"{text!r}: not a git URL (git+https://..., git+file:///...)")
    return DirectReference(
        text, GIT, location, name, given.extras, given.marker, False, revision, subdirectory,
        url=url,
    )  # fmt: skip


def _from_url(url: str, text: str, given: _Given) -> DirectReference:
    name, extras, marker, editable = given
    if url.startswith("git+"):
        return _git(url, text, given)
    if url.startswith("file:"):
        return _local(_file_path(url), text, given, url=url, hashes=url_hashes(url, text))
    if url.startswith(("http://", "https://")):
        if editable:
            raise ResolveError(f"-e {text!r}: an editable install needs a project folder")
        path = urllib.parse.urlsplit(url).path
        kind = _kind_of_file(urllib.parse.unquote(path), text)
        hashes = url_hashes(url, text)
        location = urllib.parse.urldefrag(url).url if hashes else url
        return DirectReference(
            text, kind, location, name, extras, marker, False, url=url, hashes=hashes
        )
    scheme = url.split(":", 1)[0]
    raise ResolveError(
        f"{text!r}: URLs of scheme {scheme!r} are not supported (http, https, file and git+)"
    )


def parse_direct(text: str, *, editable: bool = False) -> DirectReference | None:
    """*text* as a direct reference, or None for a requirement on a release (and,
    unless *editable*, for anything that is not a reference either: the resolver
    reports those). Raises ResolveError for a reference that cannot be used."""
    try:
        return _parse_direct(text, editable)
    except ValueError as exc:  # urllib's: "Invalid IPv6 URL", a port that is no number
        raise ResolveError(f"{text.strip()!r}: not a valid URL ({exc})") from None


def _parse_direct(text: str, editable: bool) -> DirectReference | None:
    stripped = text.strip()
    if stripped.startswith(("git+", *_URL_SCHEMES)) or _ANY_URL.match(stripped):
        return _from_url(stripped, text, _Given(editable=editable))
    try:
        parsed = Requirement(stripped)
    except InvalidRequirement:
        parsed = None
    if parsed is not None and parsed.url:
        marker = str(parsed.marker) if parsed.marker is not None else None
        extras = frozenset(canonicalize_name(e) for e in parsed.extras)
        return _from_url(
            parsed.url, text, _Given(canonicalize_name(parsed.name), extras, marker, editable)
        )
    if editable or (
        (parsed is None or _looks_like_path(stripped))
        and _looks_like_path(stripped.split(";")[0].strip())
    ):
        body, _, marker_text = stripped.partition(";")
        path_text, extras = _extras_of(body.strip())
        return _local(path_text, text, _Given(None, extras, marker_text.strip() or None, editable))
    return None
