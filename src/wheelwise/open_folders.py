"""Paths looked up from their folder, kept open: for walks of many files in few folders.

A system call given a whole path walks each of its parts again; a walk of a cache
entry's or an environment's files (12,000 of torch's, in 734 folders) repeats
the same folders thousands of times. :class:`OpenFolders` keeps the folder of the
last path it was given open, and hands back that folder's descriptor and the
file's name, for the ``dir_fd`` of :func:`os.link` and :func:`os.stat`: a lookup
of one name. Files taken folder by folder open each folder once.

Where the platform has no ``dir_fd`` (Windows), :data:`AVAILABLE` is False and
callers use whole paths.
"""

from __future__ import annotations

import os

__all__ = ["AVAILABLE", "OpenFolders"]

# By name: a wrapper put in place of os.link (a test's, say) still has the ability.
AVAILABLE = {"link", "stat"} <= {function.__name__ for function in os.supports_dir_fd}
# O_PATH: a folder opened only to name things in it (no read permission needed).
_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


class OpenFolders:
    """The folder of the last path given, open (see the module's docstring)."""

    def __init__(self) -> None:
        self._folder: str | None = None
        self._fd = -1

    def split(self, path: str) -> tuple[int, str]:
        """A descriptor of *path*'s folder, and *path*'s last part. Raises OSError
        when the folder cannot be opened."""
        folder, sep, name = path.rpartition(os.sep)
        folder += sep  # "/" (the root's files) is not "" (a bare name's: the current folder)
        if folder != self._folder:
            self.close()
            self._fd = os.open(folder or os.curdir, _FLAGS)
            self._folder = folder
        return self._fd, name

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd, self._folder = -1, None
