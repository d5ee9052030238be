"""Open the files a user names, refusing anything that is not a regular file.

``/dev/zero`` never ends and a FIFO blocks the reader until a writer comes, so a
path is opened without blocking (``O_NONBLOCK``) and the *open descriptor* is
checked with ``fstat`` (no window between a check and the open). Inputs that are
read whole (JSON, TOML, requirements files) also have a size cap.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import zipfile
from typing import BinaryIO

from wheelwise.errors import WheelwiseError

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "NotARegularFile",
    "map_regular",
    "open_regular",
    "open_regular_zip",
    "read_regular_exactly",
    "read_regular_file",
]

# Far above any real variants.json, system document or requirements file.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024


class NotARegularFile(OSError, WheelwiseError):
    """The path names a device, a FIFO, a socket or a directory; or it is too large."""


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """*path* opened for binary reading; :class:`NotARegularFile` unless it is a
    regular file (other OSErrors as ``open`` raises them)."""
    fd = _open_regular_fd(path)
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_exactly(path: str | os.PathLike[str], size: int) -> bytes | None:
    """The bytes of the regular file *path*, if it holds exactly *size* of them; None
    if it holds more or fewer (it changed since *size* was taken). With plain
    descriptor reads and no file object: ``index build`` reads thousands of wheels."""
    fd = _open_regular_fd(path)
    try:
        # A regular file's reads never block, O_NONBLOCK or not; one byte more than
        # expected shows a file that grew.
        chunks = []
        wanted = size + 1
        while wanted > 0 and (chunk := os.read(fd, wanted)):
            chunks.append(chunk)
            wanted -= len(chunk)
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return data if len(data) == size else None


def _open_regular_fd(path: str | os.PathLike[str]) -> int:
    """A descriptor for reading *path*, not yet set blocking; NotARegularFile unless
    it is a regular file."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
            raise NotARegularFile(code, f"{what} (expected a file)", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def map_regular(path: str | os.PathLike[str]) -> mmap.mmap:
    """The regular file *path*, mapped read-only: only the parts read are loaded, and
    they stay those of the file opened, even if another is renamed over it (ValueError
    for an empty file, which cannot be mapped). Only for files that are replaced by
    rename, never rewritten in place (as wheelwise's caches are): reading a mapping
    whose file was truncated under it faults."""
    with open_regular(path) as stream:
        return mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)


def read_regular_file(path: str | os.PathLike[str], *, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of the regular file *path*, at most *limit* of them."""
    with open_regular(path) as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise NotARegularFile(
            errno.EFBIG, f"larger than {limit} bytes (too large for a document)", os.fspath(path)
        )
    return data


class _OwnedZipFile(zipfile.ZipFile):
    """A ZipFile over a stream it owns: closing the archive closes the stream."""

    def __init__(self, stream: BinaryIO, name: str) -> None:
        self._owned_stream = stream
        try:
            super().__init__(stream)
        except BaseException:
            stream.close()
            raise
        self.filename = name  # readers (installer) take the wheel's name from it

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._owned_stream.close()

    def __del__(self) -> None:
        # As a ZipFile opened from a name: collected unclosed, its file is closed.
        self.close()


def open_regular_zip(path: str | os.PathLike[str]) -> zipfile.ZipFile:
    """The zip archive at *path*, which must be a regular file (see :func:`open_regular`)."""
    return _OwnedZipFile(open_regular(path), os.fspath(path))


def write_all(descriptor: int, data: bytes | memoryview) -> None:
    """Every byte of *data* to the open file *descriptor* (``os.write`` may write
    fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]
