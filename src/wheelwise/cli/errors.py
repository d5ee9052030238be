"""Turn library errors into one clear line on stderr and exit status 2.

Every error the library raises on purpose is a
:class:`~wheelwise.errors.WheelwiseError` whose ``str()`` is the message, so one
``except`` serves every layer; an exception of any other kind is a bug and keeps
its traceback.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from wheelwise.errors import WheelwiseError

INPUT_ERROR_EXIT = 2
_P = ParamSpec("_P")
_R = TypeVar("_R")


class InputError(click.ClickException):
    """A user input problem: printed as ``wheelwise: error: ...``, exit 2."""

    exit_code = INPUT_ERROR_EXIT

    def show(self, file: object = None) -> None:
        click.echo(f"wheelwise: error: {one_line(self.format_message())}", err=True)


# The credentials of a URL (user:token@): never printed, whatever said the URL.
_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^/\s@]*@")


def one_line(text: str) -> str:
    """*text* as one printable line: control characters (newlines, terminal escapes)
    and line separators from names and files the user gave are escaped as Python
    writes them (``\\n``, ``\\x1b``), so an error is one line a terminal shows as is;
    a URL's credentials are shown as ``****`` (CI logs keep what is printed)."""
    if "@" in text:
        text = _USERINFO.sub(r"\1****@", text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text)


def warn(message: str) -> None:
    """``wheelwise: warning: ...`` on stderr, one line."""
    click.echo(f"wheelwise: warning: {one_line(message)}", err=True)


def input_errors(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator: report any WheelwiseError, and OSError, as InputError."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return func(*args, **kwargs)
        except BrokenPipeError:  # the reader went away (| head): told by main
            raise
        # First: NotARegularFile is both, and is told as the OSError it is.
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise InputError(f"{where}{exc.strerror or exc}") from None
        except WheelwiseError as exc:
            raise InputError(str(exc)) from None

    return wrapper
