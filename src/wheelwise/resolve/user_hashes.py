"""Hash-checking mode: the hashes a user gives for what gets installed, as pip's
and uv's ``--require-hashes``.

It is on with ``--require-hashes``, or as soon as one requirement carries a hash
(``--hash=sha256:HEX`` in a requirements file, or ``#sha256=HEX`` on a file's URL).
Then, as pip and uv have it, all or nothing:

* every requirement asked for is pinned to one version (``==1.2.3``, ``===``) or
  names a file, and carries its hashes (:func:`requested_hashes`, before anything
  is resolved);
* every package the install would add, dependencies included, has hashes given
  (:func:`check_planned`, once the plan is known);
* every file installed has one of the hashes given for its project, by algorithm:
  an index's own hash of the same algorithm must be one of them before anything is
  fetched (the file is then checked against the index's, as always), else the file
  itself is hashed once fetched (:func:`check_index`, :func:`check_fetched`).

Hashes of a direct reference are checked where the reference is prepared
(:mod:`wheelwise.sources.direct`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name

from wheelwise.client.index_file import IndexFile
from wheelwise.models.errors import DownloadError, ResolveError
from wheelwise.policy.hashes import file_digests, hash_mismatch, trusted_hashes
from wheelwise.resolve.direct import DIRECTORY, DirectReference

__all__ = ["Hashes", "check_fetched", "check_index", "check_planned", "requested_hashes"]

# Lower-case algorithm and hex digest pairs; several of one algorithm: any one.
Hashes = tuple[tuple[str, str], ...]

_HOW = "(hash-checking mode: --require-hashes, or a --hash on any requirement)"


def requested_hashes(
    requirements: Sequence[str],
    references: Sequence[DirectReference],
    given: Mapping[str, Hashes],
) -> dict[NormalizedName, Hashes]:
    """The hashes of each project asked for by name (*given*: by requirement text),
    once every requirement is found pinned and hashed. Raises ResolveError."""
    by_name: dict[NormalizedName, Hashes] = {}
    for text in requirements:
        try:
            parsed = Requirement(text.split("#", 1)[0])
        except InvalidRequirement:
            continue  # the resolver says what is wrong with it
        specifiers = list(parsed.specifier)
        pinned = len(specifiers) == 1 and (
            specifiers[0].operator == "==="
            or (specifiers[0].operator == "==" and not specifiers[0].version.endswith(".*"))
        )
        if not pinned:
            raise ResolveError(
                f"{text!r} is not pinned to one version with == {_HOW}; pin it "
                "(pip-compile and uv pip compile --generate-hashes write such files)"
            )
        hashes = given.get(text, ())
        if not hashes:
            raise ResolveError(f"{text!r} has no --hash {_HOW}; add one for each of its files")
        name = canonicalize_name(parsed.name)
        by_name[name] = (*by_name.get(name, ()), *hashes)
    for reference in references:
        if reference.kind == DIRECTORY:
            raise ResolveError(
                f"{reference.text!r} is a folder, which has no hash {_HOW}; build a wheel "
                "of it and give its hash, or leave hash-checking off"
            )
        if not reference.hashes:
            raise ResolveError(
                f"{reference.text!r} has no hash {_HOW}; add #sha256=HEX to its URL or "
                "--hash to its line"
            )
    return by_name


def check_planned(
    names: Sequence[NormalizedName],
    by_name: Mapping[NormalizedName, Hashes],
    checked: Sequence[str] = (),
) -> None:
    """Every project of *names* (those the install adds) has hashes in *by_name*, or
    is among *checked* (direct references, checked as they were prepared)."""
    missing = [name for name in names if name not in by_name and name not in checked]
    if missing:
        raise ResolveError(
            f"no --hash for {', '.join(sorted(missing))} {_HOW}: every package installed "
            "needs its hashes, dependencies included; add them to the requirements file "
            "(pip-compile and uv pip compile --generate-hashes list every one)"
        )


def check_index(file: IndexFile, allowed: Hashes) -> bool:
    """Before *file* is fetched: where the index gives it a hash of an algorithm of
    *allowed*, that hash is one of them (raises DownloadError when not; the file is
    then checked against the index's, as always); False. True when the index gives
    it no trusted hash at all: the file itself is hashed once fetched
    (:func:`check_fetched`; such a file is never taken from the cache)."""
    given = trusted_hashes(file.hashes)
    if not given:
        return True
    if not any(name in given for name, _ in allowed):
        algorithms = ", ".join(sorted({name for name, _ in allowed}))
        raise DownloadError(
            file.url,
            f"the index gives its {', '.join(sorted(given))} hash, and --hash only "
            f"{algorithms}: add its {next(iter(sorted(given)))} hash {_HOW}",
        )
    mismatch = hash_mismatch(given, allowed)
    if mismatch is not None:
        raise DownloadError(file.url, f"{mismatch} (the index's hash against --hash)")
    return False


def check_fetched(url: str, wheel: Path | bytes, allowed: Hashes) -> None:
    """*wheel* (a file, or its bytes) has one of the *allowed* hashes of each
    algorithm; raises DownloadError as a download's check does."""
    names = {name for name, _ in allowed}
    if isinstance(wheel, Path):
        digests = file_digests(wheel, names)
    else:
        digests = {name: hashlib.new(name, wheel).hexdigest() for name in names}
    mismatch = hash_mismatch(digests, allowed)
    if mismatch is not None:
        raise DownloadError(url, mismatch)
