"""Getting a project's source from a git repository (``git+URL[@REV]`` requirements).

The repository is cloned with the ``git`` command (never asking for a password:
``GIT_TERMINAL_PROMPT=0``), within a time limit, and the requested revision (a
branch, tag or commit) checked out; the commit it resolved to is what
``direct_url.json`` records (PEP 610 ``vcs_info``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

from wheelwise.models.errors import DownloadError

__all__ = ["GIT_TIMEOUT", "Checkout", "clone"]

# Seconds a clone may take (a big repository over a slow link: minutes).
GIT_TIMEOUT = 600.0


class Checkout(NamedTuple):
    """A cloned working tree and the commit checked out in it."""

    folder: Path
    commit: str


def _git(args: list[str], url: str, cwd: Path | None = None, timeout: float = GIT_TIMEOUT) -> str:
    git = shutil.which("git")
    if git is None:
        raise DownloadError(url, "git is not installed; install git, or give an archive URL")
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        done = subprocess.run(
            [git, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise DownloadError(url, f"git {args[0]} took more than {timeout:.0f} s") from None
    except OSError as exc:
        raise DownloadError(url, f"cannot run git ({exc.strerror or exc})") from None
    if done.returncode:
        lines = [line.strip() for line in done.stderr.decode("utf-8", "replace").splitlines()]
        fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
        said = (fatal or [line for line in lines if line] or [f"exit status {done.returncode}"])[0]
        raise DownloadError(url, f"git {args[0]} failed: {said}")
    return done.stdout.decode("utf-8", errors="replace").strip()


def clone(url: str, revision: str | None, folder: Path) -> Checkout:
    """*url* (a git URL, without ``git+``) cloned into *folder* (which must not exist)
    at *revision* (default: the remote's default branch)."""
    _git(["clone", "--quiet", "--no-checkout", "--", url, str(folder)], url)
    # A tag or commit as it is, a branch as the remote has it.
    targets = [revision, f"origin/{revision}"] if revision else ["HEAD"]
    for target in targets:
        try:
            _git(["checkout", "--quiet", "--detach", target, "--"], url, cwd=folder)
            break
        except DownloadError:
            continue
    else:
        raise DownloadError(url, f"no branch, tag or commit {revision!r} in the repository")
    commit = _git(["rev-parse", "HEAD"], url, cwd=folder)
    return Checkout(folder, commit)
