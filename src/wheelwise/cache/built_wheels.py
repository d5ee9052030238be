"""Wheels built from source distributions, kept by what they were built from.

An entry is a folder named after its key (the sdist's sha256, the target
interpreter's tag and what the machine was taken to support: see
:func:`built_key`), holding the one wheel the build gave. The wheel is copied into
a temporary file in that folder and renamed into place, so an entry is either whole
or missing; a later build of the same key replaces nothing that is there.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["PART_PREFIX", "BuiltWheels", "built_key"]

# A wheel being copied in: ``.part-PID-XXXX`` (``cache prune`` removes those of
# processes that are gone).
PART_PREFIX = ".part-"


def built_key(source_sha256: str, tag: str, machine: str) -> str:
    """The key of a wheel built from the sdist with *source_sha256* for an
    interpreter whose best tag is *tag*, on a machine described by *machine* (its
    variant properties matter when a build requirement is a variant package)."""
    text = "\0".join((source_sha256.lower(), tag, machine))
    return hashlib.sha256(text.encode()).hexdigest()


class BuiltWheels:
    """The folder of built wheels (``built/`` under the cache root)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _entry(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def find(self, key: str) -> Path | None:
        """The wheel kept under *key*, if there is one."""
        try:
            with os.scandir(self._entry(key)) as entries:
                wheels = [e.path for e in entries if e.name.endswith(".whl") and e.is_file()]
        except OSError:
            return None
        return Path(wheels[0]) if len(wheels) == 1 else None

    def parts(self) -> list[tuple[Path, int]]:
        """Files being copied in (or left by a killed run), with the writer's pid."""
        found = []
        for path in self.folder.glob(f"*/*/{PART_PREFIX}*"):
            pid = path.name[len(PART_PREFIX) :].split("-", 1)[0]
            if pid.isdigit():
                found.append((path, int(pid)))
        return found

    def keep(self, key: str, wheel: Path) -> Path | None:
        """A copy of *wheel* kept under *key*, or None when the cache cannot be
        written (the build's own file is used then)."""
        entry = self._entry(key)
        target = entry / wheel.name
        try:
            entry.mkdir(parents=True, exist_ok=True)
            fd, part = tempfile.mkstemp(dir=entry, prefix=f"{PART_PREFIX}{os.getpid()}-")
        except OSError:
            return None
        try:
            with os.fdopen(fd, "wb") as out, open(wheel, "rb") as source:  # noqa: PTH123
                shutil.copyfileobj(source, out, 1 << 20)
            os.replace(part, target)  # noqa: PTH105
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(part)  # noqa: PTH108
            return None
        return target
