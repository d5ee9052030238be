"""An installed distribution's files, the folders that hold nothing else, and
whether a path is inside an environment's folders.

An installed distribution's files are its ``RECORD``'s rows, the bytecode of its
modules and whatever else is in its ``.dist-info`` folder, each checked to be
inside the environment before anything moves. An install setuptools made has no
``RECORD``: its files are what pip's uninstall takes (:func:`_egg_info_files`).
A transaction moves them into its backup folder
(:mod:`wheelwise.install.transaction`); a folder that holds nothing but those files
(torch's 12,000 files under ``torch/``) is moved in one rename, as pip's uninstall
does, rather than file by file. Each folder is listed once
(``os.scandir``): the answers for torch's 12,000 files come from 780 listings.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from wheelwise.environment.installed import InstalledDist, is_egg_info
from wheelwise.models.errors import InstallError
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.record import parse_record_rows

__all__ = [
    "FolderListings",
    "KeptRecords",
    "RemovableFiles",
    "inside_any",
    "is_inside",
    "joined",
    "owner_of",
    "owners_of",
    "removable_files",
    "split_path",
    "without_shared",
]

# Where a relative path without "." or ".." parts joins a folder as it is (no
# normalizing): with "/" the only separator (see joined).
_PLAIN_JOINS = os.sep == "/" and os.altsep is None


class FolderListings:
    """Folders' entries, each folder listed once."""

    def __init__(self) -> None:
        self._folders: dict[str, dict[str, os.DirEntry[str]]] = {}

    def entries(self, folder: str) -> dict[str, os.DirEntry[str]]:
        """*folder*'s entries by name (none when it cannot be listed)."""
        found = self._folders.get(folder)
        if found is None:
            try:
                with os.scandir(folder) as scan:
                    found = {entry.name: entry for entry in scan}
            except OSError:
                found = {}
            self._folders[folder] = found
        return found

    def bytecode_of(self, cache: str, stem: str) -> list[str]:
        """The names in the ``__pycache__`` folder *cache* of the module *stem*'s
        bytecode (``STEM.*.pyc``), with the temporaries a compile killed midway
        leaves (``STEM.*.pyc.*``)."""
        start = os.path.normcase(stem) + "."
        found = []
        for name in self.entries(cache):
            normal = os.path.normcase(name)
            if normal.startswith(start):
                rest = normal[len(start) :]
                if rest.endswith(".pyc") or ".pyc." in rest:
                    found.append(name)
        return found

    def is_file(self, path: str) -> bool:
        """Whether *path* is a file or a symbolic link (to anything), as
        ``Path.is_file() or Path.is_symlink()``, but no folder."""
        folder, name = split_path(path)
        entry = self.entries(folder).get(name)
        if entry is None:
            return False
        return entry.is_symlink() or entry.is_file()

    def files_under(self, folder: str) -> list[str]:
        """Every file and symbolic link under *folder*, at any depth (links to
        folders are not followed)."""
        found: list[str] = []
        pending = [folder]
        while pending:
            current = pending.pop()
            for entry in self.entries(current).values():
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                else:
                    found.append(entry.path)
        return found


@dataclass
class RemovableFiles:
    """A distribution's files as found (:func:`removable_files`)."""

    files: list[str]
    listings: FolderListings
    folders: dict[str, list[str]] = field(default_factory=dict)
    """The folders :meth:`whole_folders` gave, and the files each holds."""

    def whole_folders(self, roots: Sequence[os.PathLike[str] | str]) -> list[str]:
        """:attr:`files`, with each folder whose every file is among them (and that
        is inside one of *roots*, not one itself) instead of its files: the
        outermost such folders, then the files outside them."""
        remaining = set(self.files)
        inside = inside_any(roots)
        tops = [os.path.normpath(root) for root in roots]
        taken: set[str] = set()
        parents = {split_path(path)[0] for path in self.files}
        for folder in sorted(parents, key=len):
            if not inside(folder) or _below(folder, taken):
                continue
            if any(is_inside(top, folder) for top in tops):  # a root, or above one
                continue
            held = self.listings.files_under(folder)
            if held and remaining.issuperset(held):
                taken.add(folder)
                self.folders[folder] = held
                remaining.difference_update(held)
        return [*sorted(taken), *(path for path in self.files if path in remaining)]


def _below(folder: str, taken: set[str]) -> bool:
    """Whether one of *folder*'s parents is among *taken*."""
    parent = os.path.dirname(folder)  # noqa: PTH120 - plain strings
    while parent != folder:
        if parent in taken:
            return True
        folder, parent = parent, os.path.dirname(parent)  # noqa: PTH120 - plain strings
    return False


def removable_files(dist: InstalledDist, roots: Sequence[os.PathLike[str] | str]) -> RemovableFiles:
    """*dist*'s files here (its RECORD's, their bytecode, whatever else is in its
    .dist-info folder), each checked to be inside one of *roots*. Raises
    InstallError when its RECORD cannot be read or names a path outside them."""
    if is_egg_info(dist):
        return _egg_info_files(dist, roots)
    record = dist.location / "RECORD"
    try:
        # Only the paths count here: a row's hash or size, even malformed, does not.
        rows = parse_record_rows(record.read_bytes(), name=str(record))
    except OSError as exc:
        raise InstallError(
            f"cannot uninstall {dist.name} {dist.version}: no readable RECORD in "
            f"{dist.location} ({exc.strerror or exc})"
        ) from None
    except WheelError as exc:
        raise InstallError(f"cannot uninstall {dist.name} {dist.version}: {exc}") from None
    base = os.path.normpath(dist.location.parent)
    files: dict[str, None] = {}
    inside = inside_any(roots)
    # A path that joins the .dist-info's folder as it is stays inside with it:
    # torch's 12,000 rows are then neither normalized nor compared one by one.
    base_inside = inside(base)
    listings = FolderListings()
    for path, _, _ in rows:
        if not path:
            continue  # names nothing
        full = joined(base, path)
        if not (base_inside and _plain(path)) and not inside(full):
            raise InstallError(
                f"cannot uninstall {dist.name} {dist.version}: its RECORD lists "
                f"{path!r}, outside the environment's install folders; refusing"
            )
        files[full] = None
        if full.endswith(".py"):
            folder, name = os.path.split(full)
            cache = os.path.join(folder, "__pycache__")  # noqa: PTH118
            for pyc in listings.bytecode_of(cache, name[:-3]):
                files[os.path.join(cache, pyc)] = None  # noqa: PTH118
    for leftover in sorted(dist.location.rglob("*")):
        if not leftover.is_dir():
            files.setdefault(str(leftover), None)
    return RemovableFiles([path for path in files if listings.is_file(path)], listings)


# installed-files.txt and top_level.txt list a few thousand lines at most.
_LIST_MAX = 16 << 20


def _egg_info_files(dist: InstalledDist, roots: Sequence[os.PathLike[str] | str]) -> RemovableFiles:
    """What pip's uninstall takes of an install setuptools made: the files its
    ``installed-files.txt`` lists (relative to the ``.egg-info`` folder), else the
    packages and modules its ``top_level.txt`` names (not those
    ``namespace_packages.txt`` names, which other projects share), with their
    bytecode; and the ``.egg-info`` folder. Raises InstallError for a distutils
    ``.egg-info`` file (it lists nothing), a folder that lists neither, or a listed
    path outside *roots*."""
    what = f"cannot uninstall {dist.name} {dist.version}"
    location = dist.location
    if not location.is_dir():
        raise InstallError(
            f"{what}: distutils installed it, and its metadata file {location} lists "
            "none of its files; remove them and that file by hand"
        )
    inside = inside_any(roots)
    listings = FolderListings()
    files: dict[str, None] = {}
    base = os.path.normpath(location)
    site = os.path.dirname(base)  # noqa: PTH120 - plain strings
    listed = _listed_lines(location / "installed-files.txt", what)
    if listed is not None:
        for line in listed:
            full = os.path.normpath(os.path.join(base, line))  # noqa: PTH118 - plain strings
            if not inside(full):
                raise InstallError(
                    f"{what}: its installed-files.txt lists {line!r}, outside the "
                    "environment's install folders; refusing"
                )
            files[full] = None
    else:
        tops = _listed_lines(location / "top_level.txt", what)
        if tops is None:
            raise InstallError(
                f"{what}: {location} has neither installed-files.txt nor top_level.txt "
                "to tell its files by; remove them and that folder by hand"
            )
        shared = set(_listed_lines(location / "namespace_packages.txt", what) or ())
        for top in tops:
            full = os.path.normpath(os.path.join(site, top))  # noqa: PTH118 - plain strings
            if os.path.dirname(full) != site or not inside(full):  # noqa: PTH120
                raise InstallError(
                    f"{what}: its top_level.txt names {top!r}, not a top-level name in "
                    f"{site}; refusing"
                )
            if top in shared:
                continue
            entry = listings.entries(site).get(os.path.basename(full))  # noqa: PTH119
            if entry is not None and entry.is_dir(follow_symlinks=False):
                files.update(dict.fromkeys(listings.files_under(full)))
            elif entry is not None:  # a module, or a link (taken, never followed)
                files[full] = None
            files.update(dict.fromkeys(full + suffix for suffix in (".py", ".pyc", ".pyo")))
    for path in [path for path in files if path.endswith(".py")]:
        folder, name = os.path.split(path)
        cache = os.path.join(folder, "__pycache__")  # noqa: PTH118
        for pyc in listings.bytecode_of(cache, name[:-3]):
            files[os.path.join(cache, pyc)] = None  # noqa: PTH118
    files.update(dict.fromkeys(listings.files_under(base)))
    return RemovableFiles([path for path in files if listings.is_file(path)], listings)


def _listed_lines(path: Path, what: str) -> list[str] | None:
    """The lines of the list *path* with something on them, stripped; None when
    there is no such file. Raises InstallError when it cannot be read, or names a
    path no file system takes (a NUL)."""
    from wheelwise.userfiles import read_regular_file

    try:
        data = read_regular_file(path, limit=_LIST_MAX)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InstallError(f"{what}: {path} cannot be read ({exc.strerror or exc})") from None
    lines = [line.strip() for line in data.decode("utf-8", "surrogateescape").split("\n")]
    if any("\0" in line for line in lines):
        raise InstallError(f"{what}: {path} names a path with a NUL in it; refusing")
    return [line for line in lines if line]


def joined(folder: str, path: str) -> str:
    """``os.path.normpath(os.path.join(folder, path))`` for a normalized *folder*,
    without normalizing again where *path* is plain (:func:`_plain`)."""
    if _plain(path):
        return (folder if folder.endswith(os.sep) else folder + os.sep) + path
    return os.path.normpath(os.path.join(folder, path))  # noqa: PTH118 - plain strings


def split_path(path: str) -> tuple[str, str]:
    """``os.path.split(path)``, cut at the last ``/`` where no other ``/`` ends the
    folder (the paths :func:`joined` gives: torch's 12,000 are split twice)."""
    if _PLAIN_JOINS:
        folder, _, name = path.rpartition("/")
        if folder and folder[-1] != "/":
            return folder, name
    return os.path.split(path)


def _plain(path: str) -> bool:
    """Whether *path* is relative and has no empty, ``.`` or ``..`` part (nor one
    that starts with a dot), with ``/`` the only separator: what normalizing
    leaves as it is."""
    return (
        _PLAIN_JOINS
        and path != ""
        and path[0] != "/"
        and path[-1] != "/"
        and "//" not in path
        and "/." not in "/" + path
    )


def is_inside(path: str, root: str | os.PathLike[str]) -> bool:
    """Whether *path* is *root* or under it, by their text (no link is resolved; a
    relative *root* holds no absolute path). The same answer as comparing
    ``os.path.commonpath`` with *root*, without its cost (an uninstall asks for each
    file it removes)."""
    return inside_any([root])(path)


def inside_any(roots: Iterable[str | os.PathLike[str]]) -> Callable[[str], bool]:
    """Whether a path is inside any of *roots* (:func:`is_inside`), the roots made
    ready once: an uninstall asks for each of its files."""
    bases = [_normal(root) for root in roots]
    prefixes = [(base, base if base.endswith(os.sep) else base + os.sep) for base in bases]

    def inside(path: str) -> bool:
        found = _normal(path)
        return any(
            found == base or (found.startswith(prefix) and _comparable(found, base))
            for base, prefix in prefixes
        )

    return inside


def _comparable(found: str, base: str) -> bool:
    """Both on one drive, both absolute or both relative (what startswith misses)."""
    return os.path.splitdrive(found)[0] == os.path.splitdrive(base)[0] and (
        os.path.isabs(found) == os.path.isabs(base)  # noqa: PTH117 - strings
    )


def _normal(path: str | os.PathLike[str]) -> str:
    normal = os.path.normcase(os.path.normpath(path))
    if os.sep == "/" and normal.startswith("//"):  # kept by normpath; the root on Linux
        normal = "/" + normal.lstrip("/")
    return normal


def owner_of(dists: Iterable[InstalledDist], path: str) -> InstalledDist | None:
    """The first of *dists* whose ``RECORD`` lists the file *path* (absolute), or
    None; a RECORD that cannot be read lists nothing. For an error message."""
    return owners_of(dists, [path]).get(os.path.normpath(path))


def owners_of(dists: Iterable[InstalledDist], paths: Iterable[str]) -> dict[str, InstalledDist]:
    """For those of the files *paths* (absolute) that a ``RECORD`` of *dists* lists,
    the first distribution whose does, by normalized path
    (:meth:`KeptRecords.owners`)."""
    return KeptRecords(lambda: dists).owners(os.path.normpath(path) for path in paths)


def _by_top_name(prefix: str, paths: Iterable[str]) -> dict[str, set[str]]:
    """Those of *paths* inside the folder *prefix* (ending in a separator), by their
    top-level name there."""
    groups: dict[str, set[str]] = {}
    start = len(prefix)
    for path in paths:
        if path.startswith(prefix):
            groups.setdefault(path[start:].partition(os.sep)[0], set()).add(path)
    return groups


def _lists_top_name(data: bytes, top: str) -> bool:
    """Whether the RECORD *data* has a row for the top-level name *top* (a folder's
    file, or that file): one without lists no file under it. Rows as written
    (``/``-separated), quoted or not."""
    name = top.encode("utf-8", "surrogateescape")
    for key in (name + b"/", name + b","):
        for row in (key, b'"' + key):
            if data.startswith(row) or b"\n" + row in data:
                return True
    return False


def _record_paths(dist: InstalledDist, data: bytes) -> set[str]:
    """The files *dist*'s RECORD (*data*) lists, joined to its folder (none when it
    does not parse)."""
    base = os.path.normpath(dist.location.parent)
    try:
        rows = parse_record_rows(data, name=str(dist.location / "RECORD"))
    except WheelError:
        return set()
    return {joined(base, row[0]) for row in rows if row[0]}


class KeptRecords:
    """The ``RECORD``s of the distributions an install or uninstall keeps, each read
    once and parsed only where it may list a file that is removed: which of those
    files another distribution shares (every ``nvidia-*-cu12`` wheel lists its own
    ``nvidia/__init__.py``), and so stays."""

    def __init__(self, dists: Callable[[], Iterable[InstalledDist]]) -> None:
        self._find = dists  # called once, when a removed file may be shared
        self._dists: list[InstalledDist] | None = None
        self._data: dict[Path, bytes] = {}
        self._paths: dict[Path, set[str]] = {}

    def shared(self, files: Iterable[str]) -> set[str]:
        """Those of *files* (absolute, normalized) a kept distribution's RECORD lists
        too. Only files inside a distribution's own site folder are looked for."""
        return set(self.owners(files))

    def owners(self, files: Iterable[str]) -> dict[str, InstalledDist]:
        """For those of *files* (absolute, normalized) a kept distribution's RECORD
        lists, the first such distribution. A RECORD that cannot be read lists
        nothing, and one is parsed only when a row starts with the top-level name of
        one of *files* in its site folder."""
        wanted = set(files)
        found: dict[str, InstalledDist] = {}
        if not wanted:
            return found
        if self._dists is None:
            self._dists = list(self._find())
        grouped: dict[str, dict[str, set[str]]] = {}  # by site folder: most share one
        for dist in self._dists:
            prefix = os.path.normpath(dist.location.parent) + os.sep
            if prefix not in grouped:
                grouped[prefix] = _by_top_name(prefix, wanted)
            groups = grouped[prefix]
            if not groups:
                continue
            data = self._record(dist)
            tops = [top for top in groups if _lists_top_name(data, top)]
            if not tops:
                continue
            if dist.location not in self._paths:
                self._paths[dist.location] = _record_paths(dist, data)
            for top in tops:
                for path in groups[top] & self._paths[dist.location]:
                    found.setdefault(path, dist)
        return found

    def _record(self, dist: InstalledDist) -> bytes:
        if dist.location not in self._data:
            try:
                self._data[dist.location] = (dist.location / "RECORD").read_bytes()
            except OSError:
                self._data[dist.location] = b""
        return self._data[dist.location]


def without_shared(paths: list[str], shared: set[str]) -> list[str]:
    """*paths* (what an uninstall moves out) without the files of *shared* and the
    bytecode of its modules, which stay with them."""
    if not shared:
        return paths
    caches = tuple(
        os.path.join(os.path.dirname(path), "__pycache__", os.path.basename(path)[:-3] + ".")  # noqa: PTH118, PTH119, PTH120
        for path in shared
        if path.endswith(".py")
    )
    return [path for path in paths if path not in shared and not path.startswith(caches or ("\0",))]
