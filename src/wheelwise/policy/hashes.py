"""Which hash algorithms wheelwise checks and which it trusts, for every file it
reads: index pages, lock files, the wheel cache and a wheel's RECORD.

Every hash a source gives is checked when wheelwise can compute it (md5 and sha1
included, as pip and uv check them: a wrong md5 still means a wrong or damaged file),
but only sha256 or stronger is trusted: ``--require-hashes`` refuses a file with only
md5 or sha1, the wheel cache keys by a trusted hash, and the wheel format needs one in
RECORD.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection, Iterable, Mapping

__all__ = [
    "CHECKED",
    "TRUSTED",
    "checked_hashes",
    "digest_hex_length",
    "file_digests",
    "file_sha256",
    "hash_mismatch",
    "is_digest",
    "is_trusted",
    "new_hashers",
    "trusted_hashes",
]

# sha256 or stronger, preferred first (sha256 is what indexes give: the cache's key).
TRUSTED = ("sha256", "sha384", "sha512", "sha3_256", "sha3_384", "sha3_512", "blake2b")
_TRUSTED = frozenset(TRUSTED)
CHECKED = frozenset({*TRUSTED, "sha224", "sha3_224", "blake2s", "sha1", "md5"})
# The fixed-size algorithms every Python has (shake_* take a length: never a digest here).
_HEX_LENGTH = {
    name: hashlib.new(name).digest_size * 2
    for name in sorted(hashlib.algorithms_guaranteed)
    if not name.startswith("shake_")
}


def is_trusted(name: str) -> bool:
    """Whether *name* (any case) is sha256 or stronger."""
    return name.lower() in _TRUSTED


def digest_hex_length(name: str) -> int | None:
    """How many hex digits a digest of *name* (any case) has; None for an algorithm
    wheelwise cannot compute."""
    return _HEX_LENGTH.get(name.lower())


def is_digest(name: str, value: str) -> bool:
    """Whether *value* can be a hex digest of the algorithm *name* (any case): hex
    digits only, as many as the algorithm gives (any number for one wheelwise cannot
    compute)."""
    length = digest_hex_length(name)
    return (
        bool(value)
        and all(ch in _HEX_DIGITS for ch in value)
        and (length is None or len(value) == length)
    )


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def checked_hashes(hashes: Mapping[str, str]) -> dict[str, str]:
    """Of *hashes* (name to hex digest, as an index or a lock gives them), every one
    that is checked, lower-cased: a file that does not match any of them is refused."""
    return {
        name.lower(): value.lower() for name, value in hashes.items() if name.lower() in CHECKED
    }


def trusted_hashes(hashes: Mapping[str, str]) -> dict[str, str]:
    """Of *hashes*, those of sha256 or stronger, lower-cased. md5 and sha1 can be
    forged, so a file that has only those is checked but not trusted: refused under
    ``--require-hashes``, and not kept in (nor taken from) the cache."""
    return {
        name.lower(): value.lower() for name, value in hashes.items() if name.lower() in _TRUSTED
    }


def new_hashers(names: Mapping[str, object]) -> dict[str, hashlib._Hash]:
    """A fresh hasher for each of *names* that wheelwise can compute (others are left
    out: nothing to check them with)."""
    return {name: hashlib.new(name) for name in names if name in _HEX_LENGTH}


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 hex digest of the file at *path* (read in 1 MiB pieces)."""
    return file_digests(path, ("sha256",))["sha256"]


def file_digests(path: str | os.PathLike[str], names: Collection[str]) -> dict[str, str]:
    """The hex digests of the file at *path* for each of *names* (lower-case
    algorithms wheelwise can compute), in one read of 1 MiB pieces."""
    hashers = new_hashers(dict.fromkeys(names))
    with open(path, "rb") as stream:  # noqa: PTH123
        while chunk := stream.read(1 << 20):
            for hasher in hashers.values():
                hasher.update(chunk)
    return {name: hasher.hexdigest() for name, hasher in hashers.items()}


def hash_mismatch(digests: Mapping[str, str], allowed: Iterable[tuple[str, str]]) -> str | None:
    """None when, for each algorithm of *allowed* (lower-case algorithm and hex
    digest pairs, several of one algorithm meaning any one of them, as pip's
    ``--hash`` options), the file's digest in *digests* is among them; else what
    differs, as a download's check says it."""
    wanted: dict[str, list[str]] = {}
    for name, value in allowed:
        wanted.setdefault(name, []).append(value)
    for name, values in wanted.items():
        actual = digests.get(name)
        if actual is not None and actual not in values:
            expected = values[0] if len(values) == 1 else "one of " + ", ".join(values)
            return f"{name} mismatch: expected {expected}, got {actual}"
    return None
