"""For the drivers of the kill matrix and the full-disk tests: every wheel fetched
whole is unpacked into the cache by the background thread of
:class:`wheelwise.install.fetch.UnpackAhead` at once, and the fetch waits for it, so that
what happens there (kills, a full disk) happens on every run rather than only when
a download outlasts the others."""

from __future__ import annotations

import time
from typing import Any


def unpack_ahead_at_once() -> None:
    import wheelwise.install.fetch as ahead

    ahead.GRACE = 0.0
    finish = ahead.UnpackAhead.finish

    def drained_finish(self: Any) -> None:
        while self.pending:
            time.sleep(0.001)
        finish(self)

    ahead.UnpackAhead.finish = drained_finish  # type: ignore[method-assign]
