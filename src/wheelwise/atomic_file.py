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


# Pieces are gathered into writes of up to this size: a grouped page copy is
# thousands of small pieces, and every write is a system call during which another
# thread may take the interpreter.
_WRITE_BUFFER = 1 << 20


def replace_with(path: Path, write: Callable[[Path], None]) -> None:
    """Create *path*'s folder if needed, let *write* fill a new temporary file beside
    *path*, then rename it over *path*. Raises OSError (and what *write* raises);
    then no temporary file is left."""

    def fill(descriptor: int, temporary: Path) -> None:
        os.close(descriptor)
        write(temporary)

    _replace(path, fill)


def replace_with_bytes(path: Path, pieces: Iterable[bytes]) -> None:
    """:func:`replace_with` for content held in memory, written piece by piece
    through the temporary file's own descriptor."""

    def fill(descriptor: int, temporary: Path) -> None:
        with open(descriptor, "wb", buffering=_WRITE_BUFFER) as stream:
            stream.writelines(pieces)

    _replace(path, fill)


def _replace(path: Path, fill: Callable[[int, Path], None]) -> None:
    """*fill* (which closes the descriptor) writes the new temporary file, which is
    then renamed over *path*."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    temporary = Path(name)
    try:
        fill(descriptor, temporary)
        temporary.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
