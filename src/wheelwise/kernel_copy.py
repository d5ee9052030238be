"""Copying bytes from one file into another inside the kernel (``sendfile``): the
pages never pass through the interpreter. Where the kernel cannot (another
platform, a file system without support), a read/write loop does the same."""

from __future__ import annotations

import errno
import os
import sys

__all__ = ["copy_range"]

# sendfile copies at most about 2 GiB a call.
_CHUNK = 1 << 30
_LOOP_CHUNK = 1 << 20
# The kernel cannot send between these files: copy them by hand.
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP})


def copy_range(source: int, target: int, offset: int, count: int) -> int:
    """Copy *count* bytes of the file *source*, from *offset*, to the file *target*
    at its position (which moves past them; *source*'s does not move). Returns how
    many were copied: fewer only where *source* ends first."""
    copied = 0
    if sys.platform == "linux":
        try:
            while copied < count:
                sent = os.sendfile(target, source, offset + copied, min(_CHUNK, count - copied))
                if sent == 0:
                    return copied
                copied += sent
            return copied
        except OSError as exc:
            if exc.errno not in _UNSUPPORTED or copied:
                raise
    while copied < count:
        chunk = os.pread(source, min(_LOOP_CHUNK, count - copied), offset + copied)
        if not chunk:
            break
        view = memoryview(chunk)
        while view:
            view = view[os.write(target, view) :]
        copied += len(chunk)
    return copied
