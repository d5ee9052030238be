"""Where the user's configuration file is, with nothing but ``os`` and ``sys``
where that is enough.

Every install reads it (``[install] link-mode``), and importing platformdirs costs
more than reading it. On Linux and other POSIX systems the folder follows
platformdirs' rules for ``user_config_dir("wheelwise", appauthor=False)`` (a test
keeps the two in agreement); on Windows and macOS platformdirs answers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["CONFIG_ENV", "config_path", "display_path"]

CONFIG_ENV = "WHEELWISE_CONFIG"


def config_path() -> Path:
    """``$WHEELWISE_CONFIG``, else ``config.toml`` in the per-user config folder."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override)
    if sys.platform in ("win32", "darwin"):
        import platformdirs

        folder = platformdirs.user_config_dir("wheelwise", appauthor=False)
        return Path(folder) / "config.toml"
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".config") / "wheelwise" / "config.toml"


def display_path(path: Path) -> str:
    """*path* with the home folder written as ``~``, for messages."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return str(path)
