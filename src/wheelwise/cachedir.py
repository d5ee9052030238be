"""The per-user cache directory, with nothing but ``os`` and ``sys``.

``wheelwise detect`` answers from this cache on the warm path, where importing
platformdirs (and pathlib) would cost more than the whole answer. The rules are
platformdirs' own for ``user_cache_dir("wheelwise", appauthor=False)``; a test
keeps the two in agreement.
"""

from __future__ import annotations

import os
import sys

APP = "wheelwise"


def user_cache_dir() -> str:
    """``$WHEELWISE_CACHE_DIR`` if set, else the platform's per-user cache folder."""
    override = os.environ.get("WHEELWISE_CACHE_DIR")
    if override:
        return override
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
        return os.path.join(base, APP, "Cache")
    if sys.platform == "darwin":
        return os.path.expanduser(f"~/Library/Caches/{APP}")
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
    return os.path.join(base, APP)
