"""Replace a directory by another one in one step.

On Linux, ``renameat2(RENAME_EXCHANGE)`` swaps the two names atomically: a web
server reading the target sees the old tree or the new one, never a gap.
Elsewhere (or on a file system without it) the old tree is renamed aside and the
new one renamed in: two renames, with a moment in which the target is missing,
but still never a half-written tree.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import sys
import uuid
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM}


def exchange(first: Path, second: Path) -> bool:
    """Atomically swap two existing paths; False where the system cannot."""
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    renameat2.restype = ctypes.c_int
    result = renameat2(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    if result == 0:
        return True
    error = ctypes.get_errno()
    if error in _UNSUPPORTED:
        return False
    raise OSError(error, os.strerror(error), str(second))


def replace_directory(new: Path, target: Path) -> None:
    """Put the directory *new* at *target*; whatever was at *target* is deleted.

    *new* and *target* must be on one file system (siblings, in practice).
    """
    if not target.exists():
        new.rename(target)
        return
    if exchange(new, target):
        shutil.rmtree(new)  # now the old tree
        return
    aside = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:12]}")
    target.rename(aside)
    try:
        new.rename(target)
    except BaseException:
        aside.rename(target)
        raise
    shutil.rmtree(aside, ignore_errors=True)
