"""Lock files: the ``pylock.toml`` model (PEP 751) with PEP 825 variant wheels.

``read_pylock`` validates a file into a :class:`PyLock`; ``write_pylock`` writes one
in a stable layout. Choosing and installing a package's wheel comes from the
installer; this package only holds, checks and writes what the file says.
"""

from __future__ import annotations

from wheelwise.lock.errors import LockError
from wheelwise.lock.pylock import (
    LOCK_VERSION,
    Archive,
    Directory,
    Package,
    PyLock,
    Sdist,
    VariantsJson,
    Vcs,
    Wheel,
    is_lock_file_name,
    wheel_files,
)
from wheelwise.lock.reader import read_pylock
from wheelwise.lock.writer import write_pylock

__all__ = [
    "LOCK_VERSION",
    "Archive",
    "Directory",
    "LockError",
    "Package",
    "PyLock",
    "Sdist",
    "VariantsJson",
    "Vcs",
    "Wheel",
    "is_lock_file_name",
    "read_pylock",
    "wheel_files",
    "write_pylock",
]
