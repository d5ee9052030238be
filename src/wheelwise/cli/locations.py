"""Options that name the environment a command works on: ``--python``,
``--target``, ``--prefix`` and ``--user``, shared by install, uninstall, list and
the others."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from wheelwise.cli.errors import InputError

_P = ParamSpec("_P")
_R = TypeVar("_R")


def python_option(verb: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """``--python``, kept as typed: "./python" is that file, not a PATH lookup."""
    return click.option(
        "--python",
        type=click.Path(path_type=str),
        help=f"{verb} this interpreter's environment (default: the activated virtual "
        "environment, $VIRTUAL_ENV, else the running interpreter's). A path, a virtual "
        "environment's folder, or a bare name looked up on PATH when no such file is here.",
    )


def location_options(verb: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """``--target``, ``--prefix`` and ``--user`` (pip's and uv's), for *verb*
    ("Install", "List", ...): where packages are, instead of the environment."""

    def apply(func: Callable[_P, _R]) -> Callable[_P, _R]:
        decorators = [
            click.option(
                "-t",
                "--target",
                "target_dir",
                type=click.Path(path_type=Path),
                metavar="DIR",
                help=f"{verb} in DIR instead of the environment, as pip's --target: "
                "packages at its top level, scripts in DIR/bin (for the interpreter "
                "--python names).",
            ),
            click.option(
                "--prefix",
                "prefix_dir",
                type=click.Path(path_type=Path),
                metavar="DIR",
                help=f"{verb} with DIR as the prefix, as pip's --prefix: "
                "DIR/lib/pythonX.Y/site-packages, DIR/bin (the scheme of the interpreter "
                "--python names).",
            ),
            click.option(
                "--user",
                is_flag=True,
                help=f"{verb} in the user site of the interpreter --python names, as "
                "pip's --user (~/.local, or $PYTHONUSERBASE).",
            ),
        ]
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def check_location(target_dir: Path | None, prefix_dir: Path | None, user: bool) -> str | None:
    """The location flag given, if any; an InputError for more than one."""
    given = [
        flag
        for flag, value in (("--target", target_dir), ("--prefix", prefix_dir), ("--user", user))
        if value
    ]
    if len(given) > 1:
        raise InputError(f"{' and '.join(given)} cannot be used together; give one")
    return given[0] if given else None


def environment_getter(
    python: str | None,
    target_dir: Path | None = None,
    prefix_dir: Path | None = None,
    user: bool = False,
) -> Callable[[], Any]:
    """The environment of *python* (this interpreter by default), or the location
    the flags name (nothing is made), when the function returned is called: the
    interpreter answers meanwhile, while the command loads what it needs."""
    from wheelwise.environment.interpreter import TargetEnvironment

    check_location(target_dir, prefix_dir, user)
    found = TargetEnvironment.start_query(python).result if python else TargetEnvironment.current

    def environment() -> Any:
        from wheelwise.install.plan import install_location

        return install_location(found(), target_dir, prefix_dir, user, make=False)

    return environment


def warn_if_interrupted(
    env: Any, target_dir: Path | None, prefix_dir: Path | None, user: bool, what: str
) -> None:
    """A warning when a killed run's journal is still in *env*: commands that only
    read (``list``, ``show``) take no lock, so they do not recover, and *what* they
    print may show that run half done."""
    from wheelwise.cli.errors import warn
    from wheelwise.install.journal import pending

    if not pending(env.prefix):
        return
    where = check_location(target_dir, prefix_dir, user)
    folder = f" {target_dir or prefix_dir}" if where in ("--target", "--prefix") else ""
    again = f" {where}{folder}" if where else ""
    warn(
        f"an install or uninstall in {env.purelib} was interrupted and is not recovered "
        f"yet, so {what} may show it half done; run: wheelwise recover --python "
        f"{env.python}{again}"
    )


def installed_or_warned(env: Any) -> list[Any]:
    """The distributions installed in *env*
    (:func:`~wheelwise.environment.installed.list_installed`), with a warning for each
    ``.dist-info`` folder (or ``.egg-info``) left out because its core metadata does
    not name it: ``list``,
    ``freeze``, ``show``, ``tree`` and ``check`` would otherwise drop it silently."""
    from wheelwise.cli.errors import warn
    from wheelwise.environment.installed import EGG_INFO, list_installed

    unreadable: list[Path] = []
    dists = list_installed(env, unreadable)
    for folder in unreadable:
        if folder.name.endswith(EGG_INFO):
            what = "PKG-INFO" if folder.is_dir() else "content"
            fix = "remove it and that project's files"
        else:
            what, fix = "METADATA", "remove the folder"
        warn(
            f"{folder}: left out: its {what} is missing, unreadable or gives no Name and "
            f"Version; {fix}, then install that project again"
        )
    return dists
