"""The detection cache: one file holding the fingerprint and the ``detect --json``
document it was computed for.

Layout: a header line ``wheelwise-detect-cache 1 <fingerprint length>``, the
fingerprint text, then the JSON document. The warm path compares the fingerprint
verbatim (no hashing, no JSON parsing) and prints the document as stored.
"""

from __future__ import annotations

import os
import stat
import time

from wheelwise.cachedir import user_cache_dir

HEADER = "wheelwise-detect-cache 1"
# A safety net for changes the fingerprint cannot see (a driver swapped in place).
MAX_AGE_SECONDS = 24 * 3600


def cache_path() -> str:
    return os.path.join(user_cache_dir(), "detect.cache")


def load(fingerprint: str) -> str | None:
    """The cached document for *fingerprint*, or None (missing, stale, other machine)."""
    try:
        data = _read_cache_file(cache_path())
    except (OSError, UnicodeDecodeError):
        return None
    if data is None:
        return None
    header, _, rest = data.partition("\n")
    prefix, _, length = header.rpartition(" ")
    if prefix != HEADER or not length.isdigit():
        return None
    size = int(length)
    if rest[:size] != fingerprint:
        return None
    return rest[size:]


def _read_cache_file(path: str) -> str | None:
    """The text of the cache file; None when it is old or no regular file (a FIFO
    would block the reader, a device would never end)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(fd, "rb") as handle:  # owns fd from here on
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or time.time() - status.st_mtime > MAX_AGE_SECONDS:
            return None
        return handle.read().decode("utf-8")


def store(fingerprint: str, document: str) -> None:
    """Write atomically (temp file + rename); a cache that cannot be written is skipped."""
    path = cache_path()
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temp, "w", encoding="utf-8") as handle:
            handle.write(f"{HEADER} {len(fingerprint)}\n{fingerprint}{document}")
        os.replace(temp, path)
    except OSError:
        _remove_quietly(temp)


def _remove_quietly(path: str) -> None:
    # Not contextlib.suppress: this module is on the warm path, which avoids the import.
    try:
        os.unlink(path)
    except OSError:
        return
