"""An index given as uv takes one on its command line: ``NAME=URL`` or ``URL``.

uv names an index (``--index pytorch=https://download.pytorch.org/whl/cu128``) so
that its project settings can refer to it; an install from the command line uses
only the URL, and so does wheelwise. A value is split at its first ``=`` when what
comes before holds no ``:``, ``/`` or ``\\`` (else the ``=`` belongs to a URL's query
or to a path), and the name must be one uv takes: ASCII letters, digits, ``-``, ``_``
and ``.``. A local path that exists as given is never split.
"""

from __future__ import annotations

import os
import string

__all__ = ["IndexNameError", "index_location"]

_NAME_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-_.")
# What only a URL or a path holds before an "=": then the "=" is theirs.
_NOT_IN_A_NAME = frozenset(":/\\")


class IndexNameError(ValueError):
    """A ``NAME=URL`` whose name uv would refuse, or with nothing after the ``=``."""


def index_location(value: str) -> str:
    """The URL or folder of the index *value* names (its ``NAME=`` dropped; see the
    module's docstring). Raises IndexNameError, whose message leaves out the URL (it
    may hold credentials)."""
    name, equals, location = value.partition("=")
    if not equals or _NOT_IN_A_NAME.intersection(name) or os.path.lexists(value):
        return value
    for character in name:
        if character not in _NAME_CHARACTERS:
            raise IndexNameError(
                f"the index name {name!r} (NAME=URL) holds {character!r}; a name may only "
                "hold ASCII letters, digits, hyphens, underscores and periods, as in uv"
            )
    if not location:
        raise IndexNameError(f"the index name {name!r} (NAME=URL) has no URL or folder after it")
    return location
