"""A wheel's file name, parsed, its errors told as a wheel's (:class:`WheelError`)."""

from __future__ import annotations

from wheelwise.variants.errors import VariantError
from wheelwise.variants.filenames import WheelFilename
from wheelwise.wheels.errors import WheelError

__all__ = ["wheel_filename"]


def wheel_filename(name: str) -> WheelFilename:
    """The wheel file name *name*, parsed; WheelError when it is no wheel's name."""
    try:
        return WheelFilename.parse(name)
    except VariantError as exc:
        raise WheelError(str(exc)) from None
