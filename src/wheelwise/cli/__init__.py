"""The ``wheelwise`` command line. Only this package prints or exits."""

from wheelwise.cli.app import main

__all__ = ["main"]
