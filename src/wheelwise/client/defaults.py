"""Defaults of the installer, importable without loading it (the command line
shows them in its help)."""

from __future__ import annotations

__all__ = ["DEFAULT_INDEX_URL"]

DEFAULT_INDEX_URL = "https://pypi.org/simple/"
