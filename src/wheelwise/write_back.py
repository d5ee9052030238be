"""Writing a file to the disk while it is still being written.

A file that must be on the disk before it is renamed into place (a rewritten wheel)
is ``fsync``-ed at the end; for a 550 MB wheel that alone took about as long as
copying it. :func:`writing_back` has a thread ask the kernel to write out what is
there so far (``fdatasync``) every few hundredths of a second while the file is
written, so the last ``fsync`` waits only for the pages written since. Where
``fdatasync`` is missing (Windows, macOS), it does nothing.

A failure of a write-back is raised when the block ends (the kernel reports it
once per open file, so the closing ``fsync`` would not see it again).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

__all__ = ["writing_back"]

# Seconds between two write-backs: what the closing fsync may still wait for.
_INTERVAL = 0.05


@contextlib.contextmanager
def writing_back(descriptor: int) -> Iterator[None]:
    """Write the file open as *descriptor* to the disk, piece by piece, while the
    block runs; raises the OSError of a failed write-back at its end."""
    sync = getattr(os, "fdatasync", None)
    if sync is None:
        yield
        return
    done = threading.Event()
    failures: list[OSError] = []

    def write_back() -> None:
        while not done.wait(_INTERVAL):
            try:
                sync(descriptor)
            except OSError as exc:
                failures.append(exc)
                return

    thread = threading.Thread(target=write_back, name="write-back", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
    if failures:
        raise failures[0]
