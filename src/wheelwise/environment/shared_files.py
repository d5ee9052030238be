"""Files that two distributions both install: shared where their bytes are the same,
replaced, with a warning, where they differ.

Some families of wheels each ship one file of a package folder they all use: every
``nvidia-*-cu12`` wheel of CUDA 12 has its own empty ``nvidia/__init__.py``. Others
are alternatives that overlap: ``opencv-python`` and ``opencv-python-headless``
(which two popular projects require, one each) both install ``cv2/``, three of its
files with other bytes. pip and uv let the last wheel written replace the file,
without a word. wheelwise:

* between the wheels of one install, and with the files of installed
  distributions the install keeps, decides from the wheels' listings before anything
  is placed (:func:`root_files_left`): the first wheel in the install's order places
  the file and the others leave it; a file already there with the same bytes is
  left as it is, and one with other bytes is replaced (moved to the transaction's
  backup first: a rollback puts it back). Each ``RECORD`` lists the file all the
  same, as pip's and uv's do. So two wheels placed side by side never meet a
  half-written copy, and no intent to make a kept file is ever journaled. Different
  bytes are told (:attr:`Sharing.warnings`); a file there that no distribution lists
  is never replaced (:class:`FileClash`).
* where the listings cannot tell (the files of a wheel's ``.data`` folder; purelib
  and platlib in two folders), as each file is placed (:func:`holds_bytes`,
  :func:`holds_file`, :class:`ComparingWriter`): kept when it holds the very bytes,
  else a clash.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from wheelwise.models.errors import InstallError
from wheelwise.wheels.record import encode_digest

__all__ = [
    "ComparingWriter",
    "FileClash",
    "Sharing",
    "holds_bytes",
    "holds_file",
    "left_to_earlier",
    "replacing_warning",
    "root_files_left",
]

_READ = 1 << 20

# One file a wheel places: its path in the wheel, and its content's digest and size as
# its listing gives them (RECORD's "sha256=..." spelling, or the cache entry's).
ListedFile = tuple[str, str, int | None]


@dataclass
class Sharing:
    """What :func:`root_files_left` decided."""

    left: list[frozenset[str]]
    """For each wheel, the files (targets) it does not place."""
    replaced: dict[str, str] = field(default_factory=dict)
    """Files there already with other bytes (targets), and the wheel (``NAME
    VERSION``) that places its own there: moved out first, if a distribution lists
    them (:class:`FileClash` otherwise)."""
    differing: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """For each pair of wheels (the one that places the file first), the paths they
    both place with other bytes."""

    @property
    def warnings(self) -> list[str]:
        """One line for each pair of wheels that place other bytes at one path."""
        return [
            f"{first} and {second} both install {_some(paths)}, with different contents; "
            f"{first.split()[0]}'s were installed (pip and uv let either replace the "
            "other): install only one of them"
            for (first, second), paths in self.differing.items()
        ]


def _some(paths: Sequence[str]) -> str:
    """The first of *paths*, and how many more."""
    more = len(paths) - 1
    return paths[0] + (f" (and {more} more file{'s' if more > 1 else ''})" if more else "")


def replacing_warning(paths: Sequence[str], owner: str, wheel: str) -> str:
    """The line for the files of *owner* (``NAME VERSION``) at *paths* that *wheel*
    replaced, with other bytes."""
    return (
        f"{_some(paths)}, installed by {owner}, replaced by {wheel}'s, with other "
        f"contents, as pip and uv replace them; {owner.split()[0]}'s RECORD still lists "
        "them: install only one of the two"
    )


class Listing(Protocol):
    """A wheel as :func:`root_files_left` reads it
    (:class:`~wheelwise.fetch.verify.VerifiedWheel` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    def top_names(self) -> set[str]:
        """Its top-level names, its own ``.dist-info`` and ``.data`` left out."""
        ...

    def root_files(self) -> Iterator[ListedFile]:
        """Its files (paths relative to the wheel), digests and sizes."""
        ...


class FileClash(InstallError):
    """A file to place is already there with other bytes, and no distribution lists
    it; or one does (:meth:`with_owner` names it), and it was found only as the file
    was placed."""

    def __init__(self, target: str, owner: str | None = None) -> None:
        self.target = target
        if owner is None:
            message = (
                f"{target} already exists with other contents, and no installed "
                "distribution lists it; wheelwise replaces no such file: remove it, then "
                "install again"
            )
        else:
            message = (
                f"{target} is already installed by {owner}, with other contents; "
                "wheelwise replaces no file it finds only as it places it (a wheel's "
                ".data files; purelib and platlib in two folders): uninstall "
                f"{owner.split()[0]} first if this install is to replace it, or install "
                "only one of the two"
            )
        super().__init__(message)

    def with_owner(self, owner: str) -> FileClash:
        """The same clash, naming *owner* (``NAME VERSION``)."""
        return FileClash(self.target, owner)


def root_files_left(
    wheels: Sequence[Listing],
    root: str,
    present: Collection[str] = (),
    *,
    being_placed: int = 0,
) -> Sharing:
    """For each of *wheels*, in the order they claim files, the files at the root of
    its scheme (the folder *root*: purelib, which is platlib too) that it does not
    place: those an earlier one places (:func:`left_to_earlier`), and those already
    there with the same bytes (under *present*, the names at the top of *root* once
    what this install replaces is moved out); and the files there with other bytes,
    which it replaces. Decided before anything is placed, no intent to make a left
    file is ever journaled: a rollback cannot take it for this install's. The first
    *being_placed* wheels are being placed already (a head start's): their files
    are claimed, never looked for.

    Only the wheels with a top-level name another one has, or that is present, are
    read, and only their files under such names: a torch stack's nvidia wheels, not
    torch's 12,000 files. The targets are *root* joined with the wheels' paths (as
    listed: plain, ``/``-separated)."""
    tops = [wheel.top_names() for wheel in wheels]
    counted = Counter(top for names in tops for top in names)
    there = {top for names in tops[being_placed:] for top in names if top in present}
    shared = {top for top, count in counted.items() if count > 1} | there
    if not shared:
        return Sharing([frozenset()] * len(wheels))
    listings = [
        (
            f"{wheel.name} {wheel.version}",
            [row for row in wheel.root_files() if row[0].partition("/")[0] in shared]
            if not names.isdisjoint(shared)
            else [],
        )
        for wheel, names in zip(wheels, tops, strict=True)
    ]
    differing: dict[tuple[str, str], list[str]] = {}
    left = left_to_earlier(listings, differing)
    prefix = root + os.sep
    convert = os.sep != "/"

    def target(path: str) -> str:
        return prefix + (path.replace("/", os.sep) if convert else path)

    replaced: dict[str, str] = {}
    if there:  # a file there claimed by no earlier wheel is an installed one's
        claimed = {path for _, files in listings[:being_placed] for path, _, _ in files}
        for index, (name, files) in enumerate(listings[being_placed:], start=being_placed):
            installed = set()
            for path, digest, size in files:
                if path in claimed:
                    continue
                claimed.add(path)
                if os.path.lexists(target(path)):
                    if _holds_digest(target(path), digest, size):
                        installed.add(path)
                    else:
                        replaced[target(path)] = name
            left[index] |= installed
    return Sharing(
        [frozenset(target(path) for path in paths) for paths in left], replaced, differing
    )


def _holds_digest(path: str, digest: str, size: int | None) -> bool:
    """Whether the file at *path* is (or links to) a regular file of *size* bytes
    whose hash is *digest* (``NAME=urlsafe-base64``, as RECORD writes it)."""
    handle = _open_regular(path)
    if handle is None:
        return False
    name, _, value = digest.partition("=")
    with handle:
        if size is not None and os.fstat(handle.fileno()).st_size != size:
            return False
        try:
            hasher = hashlib.new(name)
        except ValueError:
            return False
        while chunk := handle.read(_READ):
            hasher.update(chunk)
    return encode_digest(hasher.digest()) == value


def left_to_earlier(
    wheels: Sequence[tuple[str, Iterable[ListedFile]]],
    differing: dict[tuple[str, str], list[str]] | None = None,
) -> list[frozenset[str]]:
    """For each of *wheels* (a name for messages, and the files it places), the
    paths it leaves to an earlier wheel that places a file there. Where the bytes
    differ, the path is added to *differing* under the two wheels' names."""
    claimed: dict[str, tuple[str, str, int | None]] = {}  # path: wheel, digest, size
    left: list[frozenset[str]] = []
    for name, files in wheels:
        mine: set[str] = set()
        for path, digest, size in files:
            earlier = claimed.get(path)
            if earlier is None:
                claimed[path] = (name, digest, size)
                continue
            mine.add(path)
            if earlier[1:] != (digest, size) and differing is not None:
                differing.setdefault((earlier[0], name), []).append(path)
        left.append(frozenset(mine))
    return left


def _open_regular(path: str) -> BinaryIO | None:
    """*path* opened for reading when it is (or links to) a regular file: what a
    ``--link-mode symlink`` install placed there is a link to a cache file.
    Non-blocking: a FIFO planted there is never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb", buffering=0)


def holds_bytes(path: str, data: bytes | memoryview) -> bool:
    """Whether the file at *path* is (or links to) a regular file holding exactly
    *data*."""
    handle = _open_regular(path)
    if handle is None:
        return False
    with handle:
        if os.fstat(handle.fileno()).st_size != len(data):
            return False
        writer = ComparingWriter(handle)
        writer.write(data)
        return writer.same()


def holds_file(path: str, source: str) -> bool:
    """Whether the file at *path* is (or links to) a regular file with the bytes of
    *source*."""
    handle = _open_regular(path)
    if handle is None:
        return False
    with handle:
        try:
            with open(source, "rb", buffering=0) as original:  # noqa: PTH123
                found, wanted = os.fstat(handle.fileno()), os.fstat(original.fileno())
                if os.path.samestat(found, wanted):
                    return True
                if found.st_size != wanted.st_size:
                    return False
                writer = ComparingWriter(handle)
                while chunk := original.read(_READ):
                    writer.write(chunk)
                return writer.same()
        except OSError:
            return False


class ComparingWriter:
    """Takes the bytes a file would be written with, in order, and compares them
    with those of the open file *existing* (None: not a regular file, never the
    same); :meth:`same` once all are given."""

    def __init__(self, existing: BinaryIO | None) -> None:
        self._existing = existing
        self._differs = existing is None

    @classmethod
    def at(cls, path: str) -> ComparingWriter:
        """One comparing with the file at *path* (:meth:`close` it)."""
        return cls(_open_regular(path))

    def write(self, data: bytes | memoryview) -> int:
        view = memoryview(data)
        while view and not self._differs:
            assert self._existing is not None
            chunk = self._existing.read(min(len(view), _READ))
            if not chunk or view[: len(chunk)] != chunk:
                self._differs = True
            view = view[len(chunk) :]
        return len(data)

    def same(self) -> bool:
        """Whether every byte given matched, and the file holds no more."""
        return not self._differs and self._existing is not None and not self._existing.read(1)

    def close(self) -> None:
        if self._existing is not None:
            self._existing.close()
