"""Files that appear whole or not at all: written beside their place, then renamed.

The caches (pages, grouped pages, wheels and metadata files) write their entries
this way, so that a reader, or a process killed mid-write, never leaves or sees
half an entry.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["replace_with", "replace_with_bytes"]


def replace_with(path: Path, write: Callable[[Path], None]) -> None:
    """Create *path*'s folder if needed, let *write* fill a new temporary file beside
    *path*, then rename it over *path*. Raises OSError (and what *write* raises);
    then no temporary file is left."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    os.close(fd)
    temporary = Path(name)
    try:
        write(temporary)
        temporary.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def replace_with_bytes(path: Path, pieces: Iterable[bytes]) -> None:
    """:func:`replace_with` for content held in memory, written piece by piece."""

    def write(temporary: Path) -> None:
        with temporary.open("wb") as stream:
            stream.writelines(pieces)

    replace_with(path, write)
