"""How the listings of several indexes combine: ``--index-strategy``, uv's names and rules.

Without a strategy, every source is read and the best version of any wins, as in
pip, which lets a newer release on a later index win (the "dependency confusion"
risk uv's default closes); a version's files come from the first source, in the
order ``--index-url``, each ``--extra-index-url``, ``--find-links``, that has a
wheel of it the target can use (index priority, PEP 825's non-normative section).

With one, the indexes are ranked as uv ranks them (each ``--extra-index-url`` in
the order given, then ``--index-url``); ``--find-links`` files are read with every
index that lists the project, and a version they have is taken from them (uv calls
them overrides of the index's answer). Then:

* ``first-index``: a project comes only from the first index that lists it; the
  others are not asked.
* ``unsafe-first-match``: every index is read; the resolver tries the releases of
  the first index that lists the project (with the find-links files), newest first,
  before those of the next. A version takes the files of the first index that lists
  it, even where they do not fit the target.
* ``unsafe-best-match``: every index is read, and the best version wins; a
  version's files come from the first index with a wheel of it that fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

__all__ = [
    "FIRST_INDEX",
    "INDEX_STRATEGIES",
    "UNSAFE_BEST_MATCH",
    "UNSAFE_FIRST_MATCH",
    "IndexStrategy",
    "find_links_first",
    "ranked_indexes",
]

IndexStrategy = Literal["first-index", "unsafe-first-match", "unsafe-best-match"]
FIRST_INDEX: IndexStrategy = "first-index"
UNSAFE_FIRST_MATCH: IndexStrategy = "unsafe-first-match"
UNSAFE_BEST_MATCH: IndexStrategy = "unsafe-best-match"
INDEX_STRATEGIES: tuple[IndexStrategy, ...] = (FIRST_INDEX, UNSAFE_FIRST_MATCH, UNSAFE_BEST_MATCH)

_T = TypeVar("_T")


def ranked_indexes(
    index_url: _T | None, extra_index_urls: Sequence[_T], strategy: IndexStrategy | None
) -> list[_T]:
    """The indexes in priority order: ``--index-url`` first without a strategy (pip's
    order), last with one (uv's: each extra index in the order given, then the
    default one)."""
    first = [index_url] if index_url is not None else []
    if strategy is None:
        return [*first, *extra_index_urls]
    return [*extra_index_urls, *first]


def find_links_first(strategy: IndexStrategy | None) -> bool:
    """Whether find-links sources come before the indexes: with a strategy, a version
    they have is taken from them; without one, they come last."""
    return strategy is not None
