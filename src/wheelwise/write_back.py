"""Writing a file to the disk while it is still being written.

A file that must be on the disk before it is renamed into place (a rewritten wheel)
is ``fsync``-ed at the end; for a 550 MB wheel that alone took about as long as
copying it. :func:`writing_back` has a thread ask the kernel to write out what is
there so far (``fdatasync``) every few hundredths of a second while the file is
written, so the last ``fsync`` waits only for the pages written since. Where
``fdatasync`` is missing (Windows, macOS), it does nothing.

A failure of a write-back is raised when the block ends (the kernel reports it
once per open file, so the closing ``fsync`` would not see it again). A file system
that cannot write back this way (``EINVAL``, ``ENOTSUP``), or a thread that cannot
start, only means the closing ``fsync`` does all the work, as before.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Iterator

__all__ = ["writing_back"]

# Seconds between two write-backs: what the closing fsync may still wait for.
_INTERVAL = 0.05
# Not a failure of the file's bytes: this file system does not sync this way.
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS})


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
                if exc.errno not in _UNSUPPORTED:
                    failures.append(exc)
                return

    thread = threading.Thread(target=write_back, name="write-back", daemon=True)
    try:
        thread.start()
        started = True
    except RuntimeError:  # no thread to be had: the closing fsync does it all
        started = False
    if not started:
        yield
        return
    try:
        yield
    finally:
        done.set()
        thread.join()
    if failures:
        raise failures[0]
