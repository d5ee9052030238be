"""TOML text with a chosen layout: which tables are ``[sections]`` and which inline.

tomli-w decides inline tables by line length, so the same lock could change shape
when one URL grows. Here the caller decides by key path: a table is a section unless
``inline`` says otherwise, arrays of tables are ``[[sections]]`` only at the paths
named, and every other array at a key's level lists one item per line (inline
inside). A table that holds only sections gets no header line of its own. tomli-w
formats the keys and scalar values, so its escaping rules apply.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

import tomli_w

__all__ = ["KeyPath", "dump_layout"]

# Keys from the root to a value; an element of an array of tables adds nothing.
KeyPath = tuple[str, ...]
_INDENT = "    "


def dump_layout(
    document: Mapping[str, Any],
    *,
    inline: Callable[[KeyPath], bool],
    arrays_of_tables: frozenset[KeyPath],
) -> str:
    """*document* as TOML text: keys in the document's order, a table's own keys
    before its sections, one blank line before each section, one final newline."""
    lines: list[str] = []
    _section(lines, (), document, None, inline, arrays_of_tables)
    return "\n".join(lines) + "\n"


def _section(
    lines: list[str],
    path: KeyPath,
    table: Mapping[str, Any],
    header: str | None,
    inline: Callable[[KeyPath], bool],
    arrays_of_tables: frozenset[KeyPath],
) -> None:
    own: list[str] = []
    sections: list[tuple[KeyPath, Any, bool]] = []
    for key, value in table.items():
        key_path = (*path, key)
        if isinstance(value, Mapping) and not inline(key_path):
            sections.append((key_path, value, False))
        elif key_path in arrays_of_tables and _is_array_of_tables(value):
            sections.append((key_path, value, True))
        else:
            own.append(f"{format_key(key)} = {_value(value, top=True)}")
    # A table of sections only needs no header of its own: [a.b] defines [a].
    bare = header is not None and not header.startswith("[[") and not own and bool(sections)
    if header is not None and not bare:
        if lines:
            lines.append("")
        lines.append(header)
    lines.extend(own)
    for key_path, value, is_array in sections:
        dotted = ".".join(format_key(key) for key in key_path)
        if is_array:
            for item in value:
                _section(lines, key_path, item, f"[[{dotted}]]", inline, arrays_of_tables)
        else:
            _section(lines, key_path, value, f"[{dotted}]", inline, arrays_of_tables)


def _is_array_of_tables(value: object) -> bool:
    # An empty array stays ``key = []``: no section would mean no key at all.
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(v, Mapping) for v in value)
    )


def _value(value: object, *, top: bool = False) -> str:
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = ", ".join(f"{format_key(k)} = {_value(v)}" for k, v in value.items())
        return "{ " + items + " }"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        if top:
            return "[\n" + "".join(f"{_INDENT}{_value(v)},\n" for v in value) + "]"
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, datetime):
        return format_datetime(value)
    return _scalar(value)


def format_datetime(value: datetime) -> str:
    """RFC 3339 with a ``T``; UTC as ``Z`` (how lock files usually spell it)."""
    if value.utcoffset() == timedelta(0):
        return value.replace(tzinfo=None).isoformat() + "Z"
    return value.isoformat()


def format_key(key: str) -> str:
    """*key* bare where TOML allows, else quoted and escaped (by tomli-w)."""
    text = tomli_w.dumps({key: 0})
    return text[: -len(" = 0\n")]


def _scalar(value: object) -> str:
    text = tomli_w.dumps({"v": value})
    return text[len("v = ") : -1]
