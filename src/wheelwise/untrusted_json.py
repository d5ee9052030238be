"""Parse JSON and TOML from untrusted sources without crashes.

``json.loads`` raises RecursionError for deeply nested arrays and ValueError for
integers longer than ``sys.get_int_max_str_digits()``; ``tomllib`` recurses too.
These readers turn all of that into one :class:`UntrustedDocumentError` with a
one-line reason, for the caller to wrap in its own error class.
"""

from __future__ import annotations

import json
import sys

from wheelwise.errors import WheelwiseError

# typing costs 2 ms to import: `wheelwise detect` reads its cache through this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["UntrustedDocumentError", "loads_json", "loads_toml"]


class UntrustedDocumentError(ValueError, WheelwiseError):
    """The text is not a usable JSON or TOML document; ``str()`` says why."""


def _text(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UntrustedDocumentError(f"not valid UTF-8 (byte {exc.start})") from None


def loads_json(data: bytes | str) -> Any:
    """The decoded JSON document *data* (UTF-8 when bytes)."""
    data = _text(data)
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise UntrustedDocumentError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise UntrustedDocumentError("invalid JSON: nested too deeply") from None
    except ValueError as exc:  # an integer with too many digits
        raise UntrustedDocumentError(f"invalid JSON: {_first_line(exc)}") from None


def loads_toml(text: bytes | str) -> dict[str, Any]:
    """The decoded TOML document *text* (UTF-8 when bytes)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    text = _text(text)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UntrustedDocumentError(f"invalid TOML: {_first_line(exc)}") from None
    except RecursionError:
        raise UntrustedDocumentError("invalid TOML: nested too deeply") from None
    except ValueError as exc:
        raise UntrustedDocumentError(f"invalid TOML: {_first_line(exc)}") from None


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
