"""The root of every error wheelwise raises on purpose.

Each layer has its own root (:class:`~wheelwise.wheels.errors.WheelError`,
:class:`~wheelwise.models.errors.InstallError`, ...), and each of those is a
:class:`WheelwiseError`, so a caller of the library (and the command line) can
tell "wheelwise refused or failed, and ``str()`` says why in one line" from a bug,
with one ``except``. Layers keep their other bases (``ValueError``, ``OSError``)
for callers that catch those.

Exceptions that only carry control within the library (a cancelled download, a
body over its cap before it is reported) and :class:`ProviderUnavailable
<wheelwise.providers.base.ProviderUnavailable>` (a machine without the hardware a
provider detects: an answer, not a failure) are not errors and stay outside.
"""

from __future__ import annotations

__all__ = ["WheelwiseError"]


class WheelwiseError(Exception):
    """wheelwise could not do what was asked; ``str()`` is one line saying why."""
