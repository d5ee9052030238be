"""``python -m wheelwise``."""

from wheelwise.cli import main

main()
