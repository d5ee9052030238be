"""The interpreter's switch interval while wheels unpack as they download.

A thread that inflated, hashed or wrote a piece of a download (all without the
interpreter lock) waits for the lock behind another thread's Python code, h11's
parsing of another download mostly, for up to the switch interval: 5 ms by default.
A shorter one lets the download that ends last wait less
(docs/benchmarks-method.md, "Figures behind design choices").

The switch interval belongs to the whole process, so the library never changes it
on its own: :data:`prompt_handover` does nothing until a program sets its
``interval`` (the command line sets :data:`HANDOVER_INTERVAL`). Only the standard
library is imported here, so that a program can do so before anything else loads.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["HANDOVER_INTERVAL", "prompt_handover"]

# The interval the command line asks for while any wheel streams into the cache.
HANDOVER_INTERVAL = 0.0005


class PromptHandover:
    """A context for each wheel unpacked as it downloads: while any runs (a count
    across threads), the switch interval is at most :attr:`interval` (None: left
    alone); the interval from before comes back when the last one ends."""

    def __init__(self) -> None:
        self.interval: float | None = None
        self._lock = threading.Lock()
        self._running = 0
        self._before: float | None = None

    def __enter__(self) -> None:
        with self._lock:
            if self._running == 0 and self.interval is not None:
                self._before = sys.getswitchinterval()
                sys.setswitchinterval(min(self._before, self.interval))
            self._running += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0 and self._before is not None:
                sys.setswitchinterval(self._before)
                self._before = None


prompt_handover = PromptHandover()
