"""Fixes that take a library off the loader's search path: the exact ``unset`` /
``export`` line for ``LD_PRELOAD`` and ``LD_LIBRARY_PATH``."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

from wheelwise.doctor.library_survey import LibraryCopy
from wheelwise.doctor.loader import split_library_path
from wheelwise.doctor.search_path import SearchPath, split_preload

__all__ = ["drop_copies", "without_entries"]


def without_entries(
    variable: str, value: str, entries: Sequence[str], split: Callable[[str], list[str]]
) -> str:
    """The shell line that removes *entries* from the path list *variable*."""
    drop = {os.path.normpath(entry) for entry in entries}
    kept = [part for part in split(value) if os.path.normpath(part) not in drop]
    return f"export {variable}={':'.join(kept)}" if kept else f"unset {variable}"


def drop_copies(search: SearchPath | None, copies: Sequence[LibraryCopy]) -> str:
    """How to stop the loader from taking *copies* (all reached the same way): the
    ``LD_PRELOAD`` entries or ``LD_LIBRARY_PATH`` folders that hold them; empty when
    they are reached some other way."""
    if search is None or not copies:
        return ""
    how = copies[0].searched
    if how == "LD_PRELOAD":
        return without_entries(
            "LD_PRELOAD", search.ld_preload or "", [c.path for c in copies], split_preload
        )
    if how == "LD_LIBRARY_PATH":
        folders = [str(PurePosixPath(c.path).parent) for c in copies]
        return without_entries(
            "LD_LIBRARY_PATH", search.ld_library_path or "", folders, split_library_path
        )
    return ""
