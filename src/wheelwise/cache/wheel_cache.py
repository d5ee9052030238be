"""Files kept by their hash: the wheels and PEP 658 metadata files installs fetched.

An entry lives at ``<folder>/<algorithm>/<h[:2]>/<h>/<filename>``, where *h* is the
hex digest the index page gave for the file (sha256, or a stronger one when the
page gives no sha256). A file whose page gives no such hash is never kept: nothing
could check it on reuse. Entries are written to a temporary file and renamed into
place, so no reader sees half an entry. Every reuse hashes the file again; an
entry that does not match (changed on disk) is removed and counts as missing.

A cache that cannot be read or written (read-only, a file in the way) only means
nothing is kept: no method here raises for it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from wheelwise.atomic_file import replace_with, replace_with_bytes
from wheelwise.policy.hashes import TRUSTED, digest_hex_length, trusted_hashes
from wheelwise.userfiles import open_regular

__all__ = ["ContentStore", "content_key"]

_log = logging.getLogger(__name__)
_CHUNK = 1 << 20
# Far above any metadata file (the index client refuses those over 16 MiB).
_READ_LIMIT = 64 << 20
_HEX = frozenset("0123456789abcdef")
# Puts an entry's content at the path it is given, whole or not at all.
_Writer = Callable[[Path], None]


def content_key(hashes: Mapping[str, str]) -> tuple[str, str] | None:
    """(algorithm, lower-case hex digest) that an entry with *hashes* is kept under;
    None when no sha256 (or stronger) digest of the right length is given."""
    given = {name.lower(): value.lower() for name, value in hashes.items()}
    for name in TRUSTED:
        digest = given.get(name)
        if (
            digest is not None
            and len(digest) == digest_hex_length(name)
            and _HEX.issuperset(digest)
        ):
            return name, digest
    return None


def _checked(hashes: Mapping[str, str]) -> dict[str, str]:
    """The digests of *hashes* this module can check (each must match on reuse)."""
    return trusted_hashes(hashes)


def _safe_name(filename: str) -> bool:
    """A plain file name (the name comes from an index page)."""
    separators = {"/", "\\", os.sep, os.altsep or "/", "\0"}
    return filename not in ("", ".", "..") and not any(s in filename for s in separators)


class ContentStore:
    """One folder of entries kept by hash (see the module's docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path_for(self, hashes: Mapping[str, str], filename: str) -> Path | None:
        """Where the entry for a file with *hashes* named *filename* lives (whether or
        not it is there); None when such a file is not kept."""
        key = content_key(hashes)
        if key is None or not _safe_name(filename):
            return None
        algorithm, digest = key
        return self.folder / algorithm / digest[:2] / digest / filename

    def size(self, hashes: Mapping[str, str], filename: str) -> int | None:
        """The size of the entry, if there is one (not verified: a ``stat`` only)."""
        path = self.path_for(hashes, filename)
        if path is None:
            return None
        try:
            found = path.stat()
        except OSError:
            return None
        return found.st_size if stat.S_ISREG(found.st_mode) else None

    def lookup(
        self, hashes: Mapping[str, str], filename: str, *, size: int | None = None
    ) -> Path | None:
        """The entry, verified against every digest in *hashes* (and *size*, the size
        the index gives, if known); None when it is missing or does not match (then
        it is removed)."""
        path = self.path_for(hashes, filename)
        if path is None:
            return None
        expected = _checked(hashes)
        try:
            # Never blocks: a FIFO or device in the cache is refused, not opened.
            with open_regular(path) as stream:
                found = os.fstat(stream.fileno())
                if size is not None and found.st_size != size:
                    matches = False
                else:
                    hashers = {name: hashlib.new(name) for name in expected}
                    for chunk in iter(lambda: stream.read(_CHUNK), b""):
                        for hasher in hashers.values():
                            hasher.update(chunk)
                    matches = all(hashers[n].hexdigest() == d for n, d in expected.items())
        except OSError:
            return None
        if not matches:
            self._discard(path)
            return None
        with contextlib.suppress(OSError):  # its last use, for the size bound
            os.utime(path)
        return path

    def holds(self, path: Path) -> bool:
        """Whether *path* lies in this store (is an entry :meth:`lookup` gave)."""
        return path.is_relative_to(self.folder)

    def read(self, hashes: Mapping[str, str], filename: str) -> bytes | None:
        """The entry's bytes (a small file: at most 64 MiB), verified as by
        :meth:`lookup`; None when missing or bad."""
        path = self.path_for(hashes, filename)
        if path is None:
            return None
        try:
            with open_regular(path) as stream:
                data = stream.read(_READ_LIMIT + 1)
        except OSError:
            return None
        for name, digest in _checked(hashes).items():
            if len(data) > _READ_LIMIT or hashlib.new(name, data).hexdigest() != digest:
                self._discard(path)
                return None
        return data

    def store_bytes(self, hashes: Mapping[str, str], filename: str, data: bytes) -> Path | None:
        """Keep *data*, a file the caller verified against *hashes*; the entry, or None
        when it is not kept (no usable hash, or the cache cannot be written)."""

        return self._store(hashes, filename, lambda path: replace_with_bytes(path, [data]))

    def store_file(self, hashes: Mapping[str, str], filename: str, source: Path) -> Path | None:
        """Keep a copy of the file at *source* (verified by the caller against
        *hashes*): a hard link where the file system allows, else a copy."""

        def write(temporary: Path) -> None:
            temporary.unlink()
            try:
                os.link(source, temporary)
            except OSError:
                shutil.copyfile(source, temporary)

        return self._store(hashes, filename, lambda path: replace_with(path, write))

    def _store(self, hashes: Mapping[str, str], filename: str, put: _Writer) -> Path | None:
        path = self.path_for(hashes, filename)
        if path is None:
            return None
        try:
            put(path)
        except OSError as exc:
            _log.debug("cannot keep %s in the cache %s: %s", filename, self.folder, exc)
            return None
        return path

    def _discard(self, path: Path) -> None:
        _log.debug("%s does not match its hash: removed from the cache", path)
        with contextlib.suppress(OSError):
            path.unlink()
