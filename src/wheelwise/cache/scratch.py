"""Scratch folders (downloads, wheels being resolved) under the wheelwise cache.

A run killed by SIGKILL cannot delete its scratch folder; kept in the system's
temporary folder, such leftovers pile up unseen. Here each is named after the
process that made it (``KIND-PID-HOST-RANDOM``, in ``CACHE/scratch``), and every
new one first removes those whose process is gone. Only this host's are judged (a
cache shared with another machine or container holds pids that mean nothing here).
When the cache cannot be written, the system's temporary folder is used as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import sys
import tempfile
from pathlib import Path

from wheelwise.cachedir import user_cache_dir

__all__ = [
    "LazyScratch",
    "clear_stale",
    "make_scratch",
    "new_scratch_folder",
    "process_alive",
    "scratch_root",
]

_NAME = re.compile(r"[a-z]+-(\d+)-([0-9a-f]{8})-.+")


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def scratch_root(cache_dir: Path | None = None) -> Path:
    return (cache_dir if cache_dir is not None else Path(user_cache_dir())) / "scratch"


def process_alive(pid: int) -> bool:
    """Whether process *pid* (of this host) may still run (never guessed dead)."""
    if pid == os.getpid():
        return True
    if sys.platform == "win32":  # os.kill would end it: never guess there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


def clear_stale(root: Path) -> None:
    """Remove the scratch folders in *root* whose process (on this host) has ended."""
    host = _host()
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            match = _NAME.fullmatch(entry.name)
            if match and match.group(2) == host and not process_alive(int(match.group(1))):
                shutil.rmtree(entry.path, ignore_errors=True)


def new_scratch_folder(kind: str, root: Path) -> Path:
    """A new scratch folder in *root* (created if needed), named after this process:
    the caller removes it, or a later run does once this process has ended. Raises
    OSError."""
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{kind}-{os.getpid()}-{_host()}-", dir=root))


def make_scratch(kind: str, cache_dir: Path | None = None) -> tempfile.TemporaryDirectory[str]:
    """A new scratch folder for this process; stale ones are cleared first."""
    root = scratch_root(cache_dir)
    try:
        root.mkdir(parents=True, exist_ok=True)
        clear_stale(root)
        return tempfile.TemporaryDirectory(prefix=f"{kind}-{os.getpid()}-{_host()}-", dir=root)
    except OSError:
        return tempfile.TemporaryDirectory(prefix=f"wheelwise-{kind}-")


class LazyScratch:
    """A scratch folder (:func:`make_scratch`) made the first time :attr:`path` is
    asked for, and removed by :meth:`close`: most installs build nothing, and need
    none."""

    def __init__(self, kind: str, cache_dir: Path | None = None) -> None:
        self.kind = kind
        self.cache_dir = cache_dir
        self._made: tempfile.TemporaryDirectory[str] | None = None

    @property
    def path(self) -> Path:
        if self._made is None:
            self._made = make_scratch(self.kind, self.cache_dir)
        return Path(self._made.name).absolute()

    def close(self) -> None:
        if self._made is not None:
            self._made.cleanup()
            self._made = None
