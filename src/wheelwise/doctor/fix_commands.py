"""The commands ``doctor`` gives as fixes, aimed at the environment it checked: a
fix for ``--python PATH`` must change that environment, not the one wheelwise runs
in."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

__all__ = ["FixCommands"]


class FixCommands:
    """``pip ...`` and ``wheelwise install ...`` for the target interpreter *python*,
    whose environment is *prefix*: named in every command unless it is the running
    interpreter's environment (compared by prefix: a virtual environment's python is
    often a link to the same file as another's)."""

    def __init__(self, python: Path, prefix: Path) -> None:
        self.python = python
        self._elsewhere = not _same_folder(prefix, Path(sys.prefix))

    @property
    def pip(self) -> str:
        return f"pip --python {shlex.quote(str(self.python))}" if self._elsewhere else "pip"

    def pip_install(self, *args: str) -> str:
        return f"{self.pip} install {_join(args)}"

    def pip_uninstall(self, *names: str) -> str:
        return f"{self.pip} uninstall -y {_join(names)}"

    def wheelwise_install(
        self,
        name: str,
        label: str | None = None,
        index_url: str | None = None,
        *,
        upgrade: bool = True,
    ) -> str:
        """``wheelwise install --upgrade [--index-url URL] [--variant NAME=LABEL] NAME``:
        the build of *name* that fits the machine (*label*'s, when given). Without
        *upgrade*, the installed versions of other distributions are matched first
        (what an ``abi_dependency`` build needs)."""
        words = ["wheelwise", "install"]
        if self._elsewhere:
            words += ["--python", str(self.python)]
        if upgrade:
            words.append("--upgrade")
        if index_url:
            words += ["--index-url", index_url]
        if label is not None:
            words += ["--variant", f"{name}={label}"]
        words.append(name)
        return _join(words)

    def wheelwise_uninstall(self, name: str) -> str:
        words = ["wheelwise", "uninstall"]
        if self._elsewhere:
            words += ["--python", str(self.python)]
        return _join([*words, name])


def _join(words: tuple[str, ...] | list[str]) -> str:
    return " ".join(shlex.quote(word) for word in words)


def _same_folder(left: Path, right: Path) -> bool:
    try:
        return left.samefile(right)
    except OSError:
        return left == right
