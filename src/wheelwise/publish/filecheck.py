"""What an index refuses to publish although the name looks right.

* A symbolic link whose target is not a regular file inside the published folder
  (its subfolders included): ``evil-1.0.tar.gz -> /etc/passwd`` would publish any
  file the index can read. A link to a file inside the folder is followed (a
  folder of links into a store of files is a common layout).
* An sdist that is not one: a ``.tar.gz`` must be a gzip'd tar whose members all
  sit under one top folder named as the file (``{name}-{version}/``), with a
  ``PKG-INFO`` there, as the sdist format says. Only the member list and the
  ``PKG-INFO`` are read (the whole stream is inflated once, bounded against gzip
  bombs); nothing is extracted. ``.zip`` sdists are not published at all (see
  :func:`~wheelwise.publish.distfiles.file_kind`).

Both raise :class:`UnsafeFile`: ``index build`` fails naming the file, ``index
serve`` skips it with a logged warning, and an upload of it gets a 400.
"""

from __future__ import annotations

import gzip
import os
import posixpath
import tarfile
import zlib
from pathlib import Path
from typing import BinaryIO

from packaging.utils import InvalidSdistFilename, parse_sdist_filename
from packaging.version import InvalidVersion

from wheelwise.errors import WheelwiseError

SDIST_SUFFIX = ".tar.gz"
# Inflating past this many times the file's size (and past a floor) is a gzip bomb.
MAX_SDIST_RATIO = 200
SDIST_FLOOR_BYTES = 64 << 20
# A PKG-INFO past this is not read (its description would be most of it): the sdist
# is still published, without what the file says.
MAX_PKG_INFO_BYTES = 4 << 20


class UnsafeFile(ValueError, WheelwiseError):
    """A file an index must not publish (the message names it and says why)."""


def check_link(path: Path, directory: Path) -> None:
    """Refuse *path* if it is a symbolic link to anything but a regular file inside
    *directory*."""
    if not path.is_symlink():
        return
    root = directory.resolve()
    try:
        target: Path | None = path.resolve()
    except (OSError, RuntimeError):  # a loop of links
        target = None
    if target is None or not target.is_relative_to(root) or not target.is_file():
        raise UnsafeFile(
            f"{path.name}: a symbolic link to {str(path.readlink())!r}, which is not a file "
            f"inside {directory}; copy the file there instead of linking to it"
        )


class _Bounded(gzip.GzipFile):
    """A gzip stream that refuses to inflate past *limit* bytes."""

    def __init__(self, fileobj: BinaryIO, limit: int) -> None:
        super().__init__(fileobj=fileobj, mode="rb")
        self._limit = limit
        self._inflated = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self._inflated += len(data)
        if self._inflated > self._limit:
            raise OSError(f"inflates to more than {self._limit} bytes (a gzip bomb?)")
        return data


def _member_problem(member: tarfile.TarInfo, top: str) -> str | None:
    """Why *member* does not belong in an sdist whose top folder is *top*, or None."""
    name = member.name
    parts = name.rstrip("/").split("/")
    if (
        name.startswith("/")
        or "\\" in name
        or "\0" in name
        or parts[0] != top
        or any(part in ("", ".", "..") for part in parts[1:])
    ):
        return f"member {name!r} is not under the top folder '{top}/'"
    if member.issym() or member.islnk():
        base = posixpath.dirname(name) if member.issym() else ""
        target = posixpath.normpath(posixpath.join(base, member.linkname))
        if member.linkname.startswith("/") or target.split("/")[0] != top:
            return f"member {name!r} links to {member.linkname!r}, outside '{top}/'"
    return None


def check_sdist(path: Path) -> bytes | None:
    """Refuse *path* (named ``{name}-{version}.tar.gz``) unless it is a gzip'd tar of
    ``{name}-{version}/`` with a ``PKG-INFO``; return that file (None when it is a
    link or longer than :data:`MAX_PKG_INFO_BYTES`)."""
    filename = path.name
    top = filename.removesuffix(SDIST_SUFFIX)
    try:
        parse_sdist_filename(filename)
    except (InvalidSdistFilename, InvalidVersion) as exc:
        raise UnsafeFile(f"{filename}: not an sdist filename ({exc})") from None
    fix = "publish the sdist that the build backend wrote (python -m build --sdist)"
    found_pkg_info = False
    pkg_info: bytes | None = None
    with path.open("rb") as raw:  # OSError: the caller's (cannot read the file)
        limit = max(SDIST_FLOOR_BYTES, MAX_SDIST_RATIO * os.fstat(raw.fileno()).st_size)
        try:
            with (
                _Bounded(raw, limit) as stream,
                tarfile.open(fileobj=stream, mode="r|") as archive,
            ):
                for member in archive:
                    problem = _member_problem(member, top)
                    if problem is not None:
                        raise UnsafeFile(f"{filename}: {problem}; {fix}")
                    if member.name != f"{top}/PKG-INFO" or found_pkg_info:
                        continue
                    found_pkg_info = True
                    if member.isfile() and member.size <= MAX_PKG_INFO_BYTES:
                        content = archive.extractfile(member)
                        pkg_info = content.read() if content is not None else None
        except UnsafeFile:
            raise
        except (tarfile.TarError, OSError, EOFError, zlib.error, ValueError) as exc:
            why = " ".join(str(exc).split()) or type(exc).__name__
            raise UnsafeFile(f"{filename}: not a gzip'd tar archive ({why}); {fix}") from None
    if not found_pkg_info:
        raise UnsafeFile(f"{filename}: no {top}/PKG-INFO, so not an sdist; {fix}")
    return pkg_info
