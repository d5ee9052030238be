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
    "RecordRow",
    "encode_digest",
    "file_entry",
    "hash_of",
    "parse_record",
    "parse_record_rows",
    "record_entries",
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


# A RECORD row as it is written: path, hash (``name=value``, or empty), size (or empty).
RecordRow = tuple[str, str, str]


def parse_record_rows(data: bytes, *, name: str = "RECORD") -> list[RecordRow]:
    """The rows of a RECORD file's bytes, as they are written (not checked further:
    :func:`record_entries` checks them); *name* is used in error messages."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise WheelError(f"{name} is not valid UTF-8") from None
    try:
        return list(parse_record_file(io.StringIO(text)))
    except (InvalidRecordEntry, csv.Error, ValueError) as exc:
        raise WheelError(f"malformed {name}: {exc}") from None


def record_entries(rows: Iterable[RecordRow], *, name: str = "RECORD") -> list[RecordEntry]:
    """The entries of *rows* (:func:`parse_record_rows`), each checked."""
    try:
        return [RecordEntry.from_elements(*row) for row in rows]
    except (InvalidRecordEntry, TypeError, ValueError) as exc:
        raise WheelError(f"malformed {name}: {exc}") from None


def parse_record(data: bytes, *, name: str = "RECORD") -> list[RecordEntry]:
    """The entries of a RECORD file's bytes; *name* is used in error messages."""
    return record_entries(parse_record_rows(data, name=name), name=name)


def _row(entry: RecordEntry | RecordRow) -> RecordRow:
    return entry.to_row() if isinstance(entry, RecordEntry) else entry


def write_record(
    entries: Iterable[RecordEntry | RecordRow], *, record_path: str | None = None
) -> bytes:
    """RECORD bytes: one CSV row per entry (or row, kept as it was read), in the
    order given.

    With *record_path*, RECORD's own row (no hash, no size) ends the file unless
    *entries* already list it; where they do, it is written with no hash and size.
    """
    rows = list(map(_row, entries))
    own = [index for index, row in enumerate(rows) if row[0] == record_path]
    for index in own:
        rows[index] = (rows[index][0], "", "")
    if record_path is not None and not own:
        rows.append((record_path, "", ""))
    text = _unquoted(rows)
    if text is None:
        out = io.StringIO()
        csv.writer(out, delimiter=",", quotechar='"', lineterminator="\n").writerows(rows)
        text = out.getvalue()
    return text.encode("utf-8")


def _unquoted(rows: list[RecordRow]) -> str | None:
    """*rows* as :mod:`csv` writes them, joined at once, where no field needs quoting
    (a comma, a quote or a line break in it; real RECORDs have none); else None.
    A big wheel's RECORD has 10,000s of rows, and csv's per-field checks cost more
    than the rest of a rewrite's work on RECORD (the wheel rewrite's speed trick)."""
    if not rows or set(map(len, rows)) != {3}:
        return None
    text = "\n".join(map(",".join, rows)) + "\n"
    # Three fields a row: exactly two commas and one line break each, where no
    # field holds one.
    if text.count(",") != 2 * len(rows) or text.count("\n") != len(rows):
        return None
    if '"' in text or "\r" in text:
        return None
    return text
