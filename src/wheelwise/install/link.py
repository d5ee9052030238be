"""Placing a cached file into an environment: uv's link modes, and their fallbacks.

* ``hardlink``: the environment's file *is* the cache's (one inode, no bytes
  written). Editing it in place edits the cache entry too, and every other
  environment that links it; replacing it (what most editors and ``pip`` do)
  does not.
* ``clone``: a copy-on-write copy (``FICLONE``: Btrfs, XFS, bcachefs, ...), as
  cheap as a hard link and independent of the cache from the first write.
* ``copy``: the bytes, copied by the kernel (``sendfile``).
* ``symlink``: a symbolic link to the cache's file; removing the cache breaks
  the environment.

Without a mode, each file is hard-linked where cache and target share a file
system, else cloned where the file system can, else copied. A mode that cannot
be used for a file falls back the same way (clone, then copy), file by file,
with no error; once it failed for a reason that holds for every file (another
file system, no support), later files go straight to the fallback.

Every function creates the target only if it does not exist
(``FileExistsError`` otherwise), as :class:`~wheelwise.install.unpack.Journal`
needs.
"""

from __future__ import annotations

import errno
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wheelwise.kernel_copy import copy_range

if TYPE_CHECKING:
    from wheelwise.cache.unpacked import UnpackedStore
    from wheelwise.open_folders import OpenFolders

__all__ = ["DEFAULT_LINK_MODE", "LINK_MODES", "Linker", "Placement"]

LINK_MODES = ("hardlink", "clone", "copy", "symlink")
# What the installer does when no mode is given: the cheapest that works.
DEFAULT_LINK_MODE = "hardlink"

_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
# linux/fs.h: _IOW(0x94, 9, int)
_FICLONE = 0x40049409
# The file systems (or their pairing) cannot do this at all: stop trying.
_NEVER = frozenset(
    {
        errno.EXDEV,
        errno.EPERM,
        errno.EACCES,
        errno.ENOTSUP,
        errno.EOPNOTSUPP,
        errno.ENOSYS,
        errno.EINVAL,
        errno.ENOTTY,
    }
)
# This one file cannot be linked (its link count is at the maximum): copy it.
_NOT_THIS_ONE = frozenset({errno.EMLINK})


@dataclass(frozen=True)
class Placement:
    """Where wheels are unpacked, and how their files get into the environment."""

    unpacked: UnpackedStore | None = None
    """Unpack each wheel (with a hash) here once, and link its files in."""
    link_mode: str | None = None
    """``hardlink``, ``clone``, ``copy``, ``symlink`` (None: the default; see
    :mod:`wheelwise.install.link`)."""


def _mode(executable: bool) -> int:
    return 0o777 if executable else 0o666


class Linker:
    """Places files with one link mode (None: the default), falling back as the
    module says. Shared by the threads of one transaction (its state only ever
    moves down the chain, and a race merely costs one more failed try)."""

    def __init__(self, mode: str | None = None) -> None:
        if mode is not None and mode not in LINK_MODES:
            raise ValueError(f"unknown link mode {mode!r}: use one of {', '.join(LINK_MODES)}")
        self.mode = mode or DEFAULT_LINK_MODE
        self.fell_back: str | None = None
        """Why files are no longer placed with :attr:`mode`, once they are not."""
        self._can_link = self.mode == "hardlink"
        self._can_clone = self.mode in ("hardlink", "clone") and sys.platform == "linux"

    def place(
        self,
        source: str,
        target: str,
        executable: bool,
        folders: tuple[OpenFolders, OpenFolders] | None = None,
    ) -> None:
        """A new file at *target* with *source*'s content (*executable*: its mode
        when it is written, rather than linked). *folders*: where the folders of a
        run of sources and targets are kept open (see
        :mod:`wheelwise.open_folders`), for hard links."""
        if self.mode == "symlink":
            os.symlink(source, target)  # noqa: PTH211 - plain strings throughout
            return
        if self._can_link:
            try:
                if folders is None:
                    os.link(source, target)
                else:
                    _link_in(folders, source, target)
                return
            except OSError as exc:
                if exc.errno in _NEVER:
                    self._can_link = False
                    self.fell_back = f"cannot hard-link {source} to {target}: {exc.strerror}"
                elif exc.errno not in _NOT_THIS_ONE:
                    raise
        fd = os.open(target, _CREATE_FLAGS, _mode(executable))
        try:
            with open(source, "rb") as stream:  # noqa: PTH123
                if not (self._can_clone and self._clone(stream.fileno(), fd, target)):
                    _copy(stream.fileno(), fd)
        finally:
            os.close(fd)

    def _clone(self, source: int, target: int, path: str) -> bool:
        import fcntl

        try:
            fcntl.ioctl(target, _FICLONE, source)
        except OSError as exc:
            if exc.errno not in _NEVER:
                raise
            self._can_clone = False
            if self.mode == "clone":
                self.fell_back = f"cannot clone into {path}: {exc.strerror}"
            return False
        return True


def _link_in(folders: tuple[OpenFolders, OpenFolders], source: str, target: str) -> None:
    """``os.link(source, target)``, each path looked up from its open folder."""
    try:
        source_folder, source_name = folders[0].split(source)
        target_folder, target_name = folders[1].split(target)
        os.link(source_name, target_name, src_dir_fd=source_folder, dst_dir_fd=target_folder)
    except OSError:
        os.link(source, target)  # the error as whole paths give it, named by them


def _copy(source: int, target: int) -> None:
    copy_range(source, target, 0, os.fstat(source).st_size)
