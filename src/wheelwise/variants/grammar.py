"""The PEP 825 grammar of namespace and feature names and of feature values."""

from __future__ import annotations

import re

from wheelwise.variants.errors import InvalidProperty

NAME_RE = re.compile(r"[a-z0-9_]+")
VALUE_RE = re.compile(r"[a-z0-9_.]+")


def validate_name(text: str, what: str = "name") -> str:
    """Return *text* if it is a valid namespace or feature name."""
    if not isinstance(text, str) or not NAME_RE.fullmatch(text):
        raise InvalidProperty(f"invalid variant {what} {text!r}: use only a-z, 0-9 and '_'")
    return text


def validate_value(text: str) -> str:
    """Return *text* if it is a valid feature value."""
    if not isinstance(text, str) or not VALUE_RE.fullmatch(text):
        raise InvalidProperty(
            f"invalid variant feature value {text!r}: use only a-z, 0-9, '_' and '.'"
        )
    return text
