"""Turn library errors into one clear line on stderr and exit status 2."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from wheelwise.variants.errors import VariantError
from wheelwise.wheels.errors import WheelError

INPUT_ERROR_EXIT = 2
_P = ParamSpec("_P")
_R = TypeVar("_R")


class InputError(click.ClickException):
    """A user input problem: printed as ``wheelwise: error: ...``, exit 2."""

    exit_code = INPUT_ERROR_EXIT

    def show(self, file: object = None) -> None:
        click.echo(f"wheelwise: error: {self.format_message()}", err=True)


def input_errors(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator: report VariantError / WheelError / OSError as InputError."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return func(*args, **kwargs)
        except (VariantError, WheelError) as exc:
            raise InputError(str(exc)) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise InputError(f"{where}{exc.strerror or exc}") from None

    return wrapper
