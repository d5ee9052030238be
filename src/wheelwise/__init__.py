"""wheelwise: install the right build of a package for this machine (wheel variants)."""

__version__ = "0.1.0"
