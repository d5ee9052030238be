"""Reading the machine's small text files (``/proc``, ``/sys``, version files) the
way every machine probe must: under the machine root, bounded, and with any failure
(missing, unreadable, a NUL in a path read from another file) an answer of None."""

from __future__ import annotations

from dataclasses import dataclass

from wheelwise.doctor.context import MachineRoots

__all__ = ["VersionFile", "first_line", "read_text"]

_LIMIT = 65536


def read_text(roots: MachineRoots, path: str, limit: int = _LIMIT) -> str | None:
    """The start of *path* (a machine path) as text, or None when it cannot be read."""
    try:
        with roots.path(path).open(encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except (OSError, ValueError):
        return None


def first_line(text: str, limit: int = 200) -> str:
    """The first non-blank line of *text*, cut to *limit* characters (for reports)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:limit]


@dataclass(frozen=True)
class VersionFile:
    """A file that names a version: where it was read, and the version (None when
    the file names none: *content* then holds its first line, for the report)."""

    source: str
    version: str | None
    content: str = ""

    def to_dict(self) -> dict[str, str | None]:
        values: dict[str, str | None] = {"version": self.version, "source": self.source}
        if self.version is None:
            values["content"] = self.content
        return values
