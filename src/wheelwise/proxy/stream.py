"""Sending a file while the proxy still fetches (and rewrites) it.

Behind a slow upstream, a 550 MB wheel takes longer to arrive than a client waits
for a first byte (pip gives up after 15 s). So a file not yet in the store is sent
as it grows: its builder writes it in its scratch folder and says, in a
:class:`Growing`, how many of its bytes are final; every request for it reads up to
there, waits for more, and ends once the store has it.

What is sent before every check has passed is only ever a beginning of the checked
file, and the rest waits for the checks:

* a file passed through is the upstream's bytes as they arrive, less the last
  :data:`HOLD_BACK` bytes, which follow once its hash is checked;
* a rewritten wheel (:class:`PrefixRewrite`) is, while the upstream arrives, its
  members written as the rewrite writes them (:mod:`wheelwise.wheels.zip_copy`);
  once the upstream is complete, the wheel is checked and rewritten from it as
  before, and what was sent must be the beginning of that file. The rest (the new
  ``RECORD`` and the central directory) is taken from it.

A failed check, or a retry of the download that changes bytes already sent, stops
every response that has sent some of them (:meth:`Growing.restart`): the client gets
a cut response, never a complete wrong file.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import zipfile
import zlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from wheelwise.proxy.errors import ProxyError
from wheelwise.proxy.store import StoredFile
from wheelwise.wheels.errors import WheelError
from wheelwise.wheels.rewrite import SIGNATURE_FILES
from wheelwise.wheels.zip_copy import CompressedCopyWriter
from wheelwise.wheels.zip_stream import LocalMembers, MemberBytes

__all__ = ["HOLD_BACK", "Growing", "PassthroughTee", "PrefixRewrite", "Progress"]

# What a passed-through file keeps back until its hash is checked: enough that a
# client never holds a complete file whose check failed.
HOLD_BACK = 64 << 10
_COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class Progress:
    """Where a file being built stands: its first *available* bytes at *path* are
    final in *generation*; *stored* once published, *error* once failed."""

    path: Path | None
    available: int
    generation: int
    stored: StoredFile | None
    error: ProxyError | None


class Growing:
    """A file being built, shared between its builder and the requests for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._path: Path | None = None
        self._available = 0
        self._generation = 0
        self._stored: StoredFile | None = None
        self._error: ProxyError | None = None

    def grow(self, path: Path, available: int) -> None:
        with self._lock:
            self._path, self._available = path, available

    def restart(self) -> None:
        """Bytes already made available may change: those who sent some must stop."""
        with self._lock:
            self._generation += 1
            self._available = 0

    def finish(self, stored: StoredFile) -> None:
        with self._lock:
            self._stored = stored

    def fail(self, error: ProxyError) -> None:
        with self._lock:
            self._error = error
            self._generation += 1

    def progress(self) -> Progress:
        with self._lock:
            return Progress(
                self._path, self._available, self._generation, self._stored, self._error
            )


class PassthroughTee:
    """A download's observer that offers the file as it is written."""

    def __init__(self, growing: Growing) -> None:
        self._growing = growing
        self._part: Path | None = None
        self._count = 0

    def started(self, part: Path) -> None:
        self._part, self._count = part, 0

    def restarted(self) -> None:
        self._count = 0
        self._growing.restart()

    def received(self, piece: bytes) -> None:
        assert self._part is not None
        self._count += len(piece)
        self._growing.grow(self._part, max(0, self._count - HOLD_BACK))


class _Hashing:
    """A file that hashes what is written to it."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self.stream.write(data)


# The members of .dist-info the rewrite does not copy as they are.
_DROPPED = {"RECORD", *SIGNATURE_FILES}
_REPLACED = "METADATA"
# More than any METADATA holds: a bigger one is left to the rewrite of the whole file.
_METADATA_LIMIT = 16 << 20


def _in_dist_info(name: str, member: Collection[str]) -> bool:
    top, _, rest = name.partition("/")
    return top.endswith(".dist-info") and rest in member


class PrefixRewrite:
    """A download's observer that writes, into *target*, the beginning of the plain
    wheel the rewrite will make of it, and offers it as it grows.

    Members are copied as the rewrite copies them, ``RECORD`` and its signatures
    left out; ``METADATA`` is gathered and written as *settle* makes it. The first
    member that cannot be written so (or an error) ends what is offered."""

    def __init__(self, target: Path, growing: Growing, settle: Callable[[bytes], bytes]) -> None:
        self._target = target
        self._growing = growing
        self._settle = settle
        self._stream: BinaryIO | None = None
        self._members = LocalMembers()
        self._out: _Hashing | None = None
        self._writer: CompressedCopyWriter | None = None
        self._stopped = False
        # The member whose bytes arrive: how many are left, and what to do with them.
        self._left = 0
        self._copying = False
        self._gathering: tuple[zipfile.ZipInfo, Any, bytearray] | None = None

    def _begin(self) -> None:
        assert self._stream is not None
        self._stream.seek(0)
        self._stream.truncate()
        self._members = LocalMembers()
        self._out = _Hashing(self._stream)
        self._writer = CompressedCopyWriter(self._out)  # type: ignore[arg-type]
        self._stopped = False
        self._left, self._copying, self._gathering = 0, False, None

    def started(self, part: Path) -> None:
        if self._stream is None:
            self._stream = self._target.open("w+b")
        self._begin()

    def restarted(self) -> None:
        self._begin()
        self._growing.restart()

    def received(self, piece: bytes) -> None:
        if self._stopped or self._writer is None or self._stream is None:
            return
        try:
            for found in self._members.feed(piece):
                if isinstance(found, MemberBytes):
                    self._member_bytes(found.data)
                else:
                    self._member(found)
        except (ValueError, zlib.error, WheelError):  # left to the whole file's rewrite
            self._stopped = True
        self._stream.flush()
        self._growing.grow(self._target, self._writer.offset)

    def _member(self, info: zipfile.ZipInfo) -> None:
        assert self._writer is not None
        self._left, self._copying, self._gathering = info.compress_size, False, None
        if _in_dist_info(info.filename, _DROPPED):
            return
        if _in_dist_info(info.filename, {_REPLACED}):
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise ValueError(f"{info.filename}: compression method {info.compress_type}")
            inflater = zlib.decompressobj(-15) if info.compress_type else None
            self._gathering = (info, inflater, bytearray())
            if not self._left:
                self._gathered()
            return
        self._writer.start_copy(info)
        self._copying = True

    def _member_bytes(self, data: bytes | memoryview) -> None:
        assert self._writer is not None
        self._left -= len(data)
        if self._copying:
            self._writer.copy_bytes(data)
        elif self._gathering is not None:
            _, inflater, gathered = self._gathering
            gathered += inflater.decompress(data, _METADATA_LIMIT) if inflater else data
            if len(gathered) >= _METADATA_LIMIT:
                raise ValueError("METADATA is too large to gather")
            if not self._left:
                self._gathered()

    def _gathered(self) -> None:
        assert self._writer is not None
        assert self._gathering is not None
        info, _, gathered = self._gathering
        self._gathering = None
        self._writer.add(info, self._settle(bytes(gathered)))

    def finish(self, whole: Path) -> None:
        """Complete the target from *whole*, the plain wheel made from the checked
        upstream file; if what was offered is not its beginning, start again."""
        assert self._stream is not None
        assert self._writer is not None
        assert self._out is not None
        sent = self._writer.offset
        with whole.open("rb") as source:
            head = hashlib.sha256()
            left = sent
            while left and (chunk := source.read(min(left, _COPY_CHUNK))):
                head.update(chunk)
                left -= len(chunk)
            if left or head.digest() != self._out.digest.digest():
                self._growing.restart()
                source.seek(0)
                self._stream.seek(0)
                self._stream.truncate()
            else:
                self._stream.seek(sent)
            shutil.copyfileobj(source, self._stream, _COPY_CHUNK)
        self._stream.flush()

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
