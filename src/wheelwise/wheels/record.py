"""Reading and writing a wheel's ``RECORD`` (PEP 376 / the binary distribution format).

Builds on :mod:`installer.records`. Written files use ``sha256`` hashes in the
``sha256=<urlsafe base64, no padding>`` form and CSV rows ending in ``"\\n"``.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
from collections.abc import Iterable

from installer.records import Hash, InvalidRecordEntry, RecordEntry, parse_record_file

from wheelwise.wheels.errors import WheelError

__all__ = [
    "HASH_ALGORITHM",
    "RecordEntry",
    "RecordHasher",
    "encode_digest",
    "file_entry",
    "hash_of",
    "parse_record",
    "write_record",
]

HASH_ALGORITHM = "sha256"


def encode_digest(digest: bytes) -> str:
    """*digest* as RECORD writes it: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def hash_of(data: bytes) -> Hash:
    """The RECORD hash of *data*: ``sha256=<urlsafe base64, no padding>``."""
    return Hash(HASH_ALGORITHM, encode_digest(hashlib.sha256(data).digest()))


def file_entry(path: str, data: bytes) -> RecordEntry:
    """The RECORD row of a member *path* holding *data*."""
    return RecordEntry(path, hash_of(data), len(data))


class RecordHasher:
    """Hash and count a member streamed in chunks; ``entry()`` gives its RECORD row."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._digest = hashlib.sha256()
        self._size = 0

    def update(self, chunk: bytes) -> None:
        self._digest.update(chunk)
        self._size += len(chunk)

    def entry(self) -> RecordEntry:
        digest = Hash(HASH_ALGORITHM, encode_digest(self._digest.digest()))
        return RecordEntry(self.path, digest, self._size)


def parse_record(data: bytes, *, name: str = "RECORD") -> list[RecordEntry]:
    """The entries of a RECORD file's bytes; *name* is used in error messages."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise WheelError(f"{name} is not valid UTF-8") from None
    try:
        return [RecordEntry.from_elements(*row) for row in parse_record_file(io.StringIO(text))]
    except (InvalidRecordEntry, TypeError, ValueError) as exc:
        raise WheelError(f"malformed {name}: {exc}") from None


def write_record(entries: Iterable[RecordEntry], *, record_path: str | None = None) -> bytes:
    """RECORD bytes: one CSV row per entry, in the order given.

    With *record_path*, RECORD's own row (no hash, no size) ends the file unless
    *entries* already list it.
    """
    out = io.StringIO()
    writer = csv.writer(out, delimiter=",", quotechar='"', lineterminator="\n")
    listed_self = False
    for entry in entries:
        if entry.path == record_path:
            listed_self = True
            entry = RecordEntry(entry.path, None, None)
        writer.writerow(entry.to_row())
    if record_path is not None and not listed_self:
        writer.writerow((record_path, "", ""))
    return out.getvalue().encode("utf-8")
