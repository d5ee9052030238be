"""Where a rewritten wheel goes: a target that is not the input, and a file written
atomically (a temporary file renamed over the target once whole, written back to
the disk as it is written).

:func:`rewrite_output` begins the output of ``variant make`` and ``strip`` with the
kernel copying the input into it, before the input is opened, and before most of
what reads it is even imported (the wheel rewrite's speed trick: this module imports
little, and neither the zip reader nor ``installer``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from wheelwise.userfiles import open_regular
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.zip_copy import CompressedCopyWriter
from wheelwise.write_back import writing_back

__all__ = ["atomic_output", "atomic_write", "check_not_input", "rewrite_output"]


def check_not_input(source: Path, target: Path) -> None:
    """Refuse a *target* that is the input wheel itself."""
    same = source.resolve() == target.resolve()
    if not same and target.exists():
        with contextlib.suppress(OSError):
            same = target.samefile(source)
    if same:
        raise WheelError(
            f"{target}: the output would overwrite the input wheel; choose another output directory"
        )


def atomic_write(target: Path, write: Callable[[BinaryIO], None]) -> None:
    """Create *target* through a temporary file in its folder; on error, leave nothing."""
    with atomic_output(target) as stream:
        write(stream)


@contextlib.contextmanager
def atomic_output(target: Path) -> Iterator[BinaryIO]:
    """A temporary file in *target*'s folder to write *target* into, renamed over it
    once the block ends; on error, nothing is left (nor the folders made for it)."""
    made = [folder for folder in (target.parent, *target.parent.parents) if not folder.exists()]
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.parent / f".{target.name}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    # Mode 0666 before the umask: the same permissions as any other new file.
    try:
        descriptor = os.open(temporary, flags, 0o666)
    except BaseException:
        _remove_folders(made)
        raise
    try:
        with os.fdopen(descriptor, "wb") as stream:
            with writing_back(descriptor):
                yield stream
                stream.flush()
            os.fsync(stream.fileno())
        temporary.replace(target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        _remove_folders(made)
        if isinstance(exc, OSError) and exc.filename is None:
            # A failed write names no file: say which, and what to do on a full disk.
            full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
            hint = "; free some space there, or write it elsewhere" if full else ""
            reason = f"cannot write it ({exc.strerror or exc}){hint}"
            raise OSError(exc.errno, reason, str(target)) from None
        raise


def _remove_folders(made: list[Path]) -> None:
    """Remove the folders in *made* (deepest first) that are still empty."""
    for folder in made:
        with contextlib.suppress(OSError):
            folder.rmdir()


@contextlib.contextmanager
def rewrite_output(wheel: Path, target: Path) -> Iterator[CompressedCopyWriter]:
    """The output of a rewrite of the wheel file *wheel* into *target* (written as
    :func:`atomic_output` writes), made before the wheel is opened: the kernel starts
    copying the whole file into it at once, unchecked, while the wheel is opened and
    checked; :func:`rewrite_wheel` given it keeps what its members copied as they are
    confirm (:meth:`CompressedCopyWriter.copy_ahead`). A path that is not a regular
    file is not read here (opening the wheel says what it is)."""
    with atomic_output(target) as stream:
        out = CompressedCopyWriter(stream)
        try:
            with contextlib.suppress(OSError), open_regular(wheel) as source:
                out.copy_ahead(None, source.fileno(), os.fstat(source.fileno()).st_size)
            yield out
        finally:
            out.stop()
