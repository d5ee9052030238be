"""Unpacking a source distribution (or any source archive) to build it.

An sdist is a gzip'd tar (``.tar.gz``; also ``.tar.bz2``, ``.tar.xz``, ``.tgz``,
``.tar``) or, from older tools, a ``.zip``. It comes from an index or a URL, so it is
read as hostile: only regular files and folders are extracted (tar's ``data``
filter rules: no absolute paths, no ``..``, no links out of the tree, no devices),
within a bound on the number of members and on the bytes written, and a damaged
archive is one :class:`SourceArchiveError` naming it. The project is the archive's
one top folder (``{name}-{version}/``), or the archive's root when it has several.
"""

from __future__ import annotations

import functools
import os
import stat
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, NamedTuple

from wheelwise.wheels.errors import WheelError, describe

if TYPE_CHECKING:
    import tarfile

__all__ = [
    "MAX_MEMBERS",
    "MAX_UNPACKED_BYTES",
    "SOURCE_SUFFIXES",
    "SourceArchiveError",
    "is_source_archive",
    "unpack_source",
]

# What one source archive may hold: far above any real project, low enough that a
# crafted archive cannot fill a disk or take minutes.
MAX_MEMBERS = 200_000
MAX_UNPACKED_BYTES = 8 << 30

SOURCE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")


class SourceArchiveError(WheelError):
    """A source archive is damaged, or holds what must not be extracted."""


def is_source_archive(filename: str) -> bool:
    """Whether *filename* names a source archive (by its suffix)."""
    return filename.lower().endswith(SOURCE_SUFFIXES)


def _member_path(name: str, archive: Path) -> PurePosixPath:
    """*name* as a relative path inside the tree; SourceArchiveError when it leaves it."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise SourceArchiveError(f"{archive}: member {name!r} would be written outside the tree")
    return path


def unpack_source(archive: Path, dest: Path) -> Path:
    """Extract *archive* into *dest* (an empty folder, made if missing); the project's
    folder.

    Raises SourceArchiveError for a damaged or hostile archive, OSError when *dest*
    cannot be written."""
    name = archive.name.lower()
    if not name.endswith(SOURCE_SUFFIXES):
        raise SourceArchiveError(
            f"{archive}: not a source archive (expected one of {', '.join(SOURCE_SUFFIXES)})"
        )
    dest.mkdir(parents=True, exist_ok=True)
    import tarfile  # here: an install that builds nothing never loads it

    try:
        if name.endswith(".zip"):
            _unzip(archive, dest)
        else:
            _untar(archive, dest)
    except SourceArchiveError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, ValueError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:
            raise  # reading the archive file or writing the tree failed: not damage
        raise SourceArchiveError(f"{archive}: damaged archive ({describe(exc)})") from None
    return _project_root(dest)


class _Member(NamedTuple):
    """One archive member, whatever the archive's format."""

    name: str
    kind: str  # "dir", "file" or "other" (links, devices: never extracted)
    size: int
    executable: bool
    open: Callable[[], IO[bytes] | None]


def _tar_members(tar: tarfile.TarFile) -> Iterator[_Member]:
    for member in tar:
        kind = "dir" if member.isdir() else "file" if member.isfile() else "other"
        opener = functools.partial(tar.extractfile, member)
        yield _Member(member.name, kind, member.size, bool(member.mode & stat.S_IXUSR), opener)


def _zip_members(zf: zipfile.ZipFile) -> Iterator[_Member]:
    for info in zf.infolist():
        mode = info.external_attr >> 16
        # Many zips store permissions without a file type: those are files too.
        special = stat.S_IFMT(mode) and not stat.S_ISREG(mode)
        kind = "dir" if info.is_dir() else "other" if special else "file"
        opener = functools.partial(zf.open, info)
        yield _Member(info.filename, kind, info.file_size, bool(mode & stat.S_IXUSR), opener)


def _untar(archive: Path, dest: Path) -> None:
    import tarfile

    with tarfile.open(archive, "r:*") as tar:
        _extract(_tar_members(tar), archive, dest)


def _unzip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        _extract(_zip_members(zf), archive, dest)


def _extract(members: Iterable[_Member], archive: Path, dest: Path) -> None:
    """Write the folders and regular files of *members* under *dest*, within the
    bounds; links, devices and FIFOs are left out (a source tree needs none, and
    links are how crafted archives write outside it)."""
    written = 0
    for count, member in enumerate(members, start=1):
        if count > MAX_MEMBERS:
            raise SourceArchiveError(f"{archive}: more than {MAX_MEMBERS} members")
        relative = _member_path(member.name, archive)
        if not relative.parts or member.kind == "other":
            continue
        target = dest.joinpath(*relative.parts)
        if member.kind == "dir":
            target.mkdir(parents=True, exist_ok=True)
            continue
        written += member.size
        if written > MAX_UNPACKED_BYTES:
            raise SourceArchiveError(
                f"{archive}: holds more than {MAX_UNPACKED_BYTES >> 30} GiB unpacked"
            )
        source = member.open()
        if source is None:  # pragma: no cover - regular members always have data
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with source, open(target, "wb") as out:  # noqa: PTH123
            _copy_bounded(source, out, member.size, archive)
        if member.executable:
            os.chmod(target, 0o755)  # noqa: PTH101


def _copy_bounded(source: IO[bytes], out: IO[bytes], size: int, archive: Path) -> None:
    """Copy at most *size* bytes (what the member's header claims): a member that
    gives more is refused."""
    left = size
    while True:
        chunk = source.read(min(1 << 20, left + 1))
        if not chunk:
            return
        left -= len(chunk)
        if left < 0:
            raise SourceArchiveError(f"{archive}: a member inflates to more than its stated size")
        out.write(chunk)


def _project_root(dest: Path) -> Path:
    entries = [entry for entry in dest.iterdir() if not entry.name.startswith("._")]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return dest
