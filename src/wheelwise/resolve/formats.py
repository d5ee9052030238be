"""Which kinds of file a project may be installed from: pip's ``--only-binary`` and
``--no-binary``; and pip's ``--prefer-binary``: a release with a wheel for the target
is tried before any release that would be built from its sdist, however newer.

Each option holds project names or ``:all:``; ``:none:`` empties what came before
it. A name given to one option wins over ``:all:`` given to the other, as in pip.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.utils import InvalidName, canonicalize_name

from wheelwise.models.errors import ResolveError

__all__ = ["ALL", "NONE", "FormatPolicy", "format_names", "wheels_only_advice"]

ALL = ":all:"
NONE = ":none:"


def wheels_only_advice(name: str, version: object) -> str:
    """What to do about *name* *version*, published as source only, for a command
    that takes wheels only (``lock``, ``download`` without building)."""
    return (
        "this command takes wheels only: build one (`pip wheel --no-deps "
        f"{name}=={version} -w wheels`), then pass --find-links wheels"
    )


def format_names(values: Iterable[str], option: str) -> frozenset[str]:
    """The names of an option given *values* (each may hold several, comma
    separated), normalized; ``:none:`` clears those before it."""
    names: set[str] = set()
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if part == NONE:
                names.clear()
            elif part == ALL:
                names.add(ALL)
            else:
                try:
                    names.add(canonicalize_name(part, validate=True))
                except InvalidName:
                    raise ResolveError(
                        f"{option} {part!r}: not a project name, {ALL} or {NONE}"
                    ) from None
    return frozenset(names)


@dataclass(frozen=True)
class FormatPolicy:
    """``only_binary``: projects never built from source; ``no_binary``: projects
    never installed from a published wheel (built from their sdist instead)."""

    only_binary: frozenset[str] = frozenset()
    no_binary: frozenset[str] = frozenset()
    prefer_binary: bool = False

    def builds(self, name: str) -> bool:
        """Whether *name* may be built from a source distribution."""
        if name in self.only_binary:
            return name in self.no_binary
        return ALL not in self.only_binary or name in self.no_binary

    def takes_wheels(self, name: str) -> bool:
        """Whether a published wheel of *name* may be installed."""
        if name in self.no_binary:
            return False
        return ALL not in self.no_binary or name in self.only_binary

    def why_not_built(self, name: str) -> str:
        """The option that keeps *name* from being built (for messages)."""
        which = name if name in self.only_binary else ALL
        return f"--only-binary {which}"
