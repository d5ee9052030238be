"""A lock file given to ``install -r`` or ``sync``: the options that cannot come with
it, and the extras and groups it is asked for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from wheelwise.cli.errors import InputError

# Options of `install` that choose what to install: a lock file has chosen already.
_NOT_WITH_A_LOCK = (
    ("-U/--upgrade", "upgrade"),
    ("-P/--upgrade-package", "upgrade_package"),
    ("--pre", "pre"),
    ("--no-deps", "no_deps"),
    ("-i/--index-url", "index_url"),
    ("--extra-index-url", "extra_index_url"),
    ("--index-strategy", "index_strategy"),
    ("-f/--find-links", "find_links"),
    ("--exclude-newer", "exclude_newer"),
    ("--exclude-newer-package", "exclude_newer_package"),
    ("--torch-backend", "torch_backend"),
    ("--prefer-binary", "prefer_binary"),
    ("--only-binary", "only_binary"),
    ("--no-binary", "no_binary"),
    ("-e/--editable", "editables"),
    ("-C/--config-settings", "config_settings"),
    ("--no-build-isolation", "no_build_isolation"),
)


def on_command_line(parameter: str) -> bool:
    """Whether the running command's *parameter* was given on its command line."""
    from click.core import ParameterSource

    source = click.get_current_context().get_parameter_source(parameter)
    return source is ParameterSource.COMMANDLINE


def lock_among(
    requirement_files: tuple[Path, ...],
    requirements: tuple[str, ...],
    constraint_files: tuple[Path, ...],
    given: dict[str, object],
) -> Path | None:
    """The lock file given with ``-r`` (named ``pylock.toml`` or ``pylock.*.toml``,
    as pip and uv tell one), checked to come alone; None when there is none."""
    if not requirement_files:
        return None
    from wheelwise.lock import is_lock_file_name

    locks = [path for path in requirement_files if is_lock_file_name(path.name)]
    if not locks:
        return None
    lock = locks[0]
    if requirements or constraint_files or len(requirement_files) > 1:
        raise InputError(
            f"{lock}: a lock file is installed on its own; give no other requirements, "
            "-r or -c files with it"
        )
    for flag, name in _NOT_WITH_A_LOCK:
        if given[name]:
            raise InputError(
                f"{flag} cannot be used with a lock file ({lock}): the lock gives every "
                f"package, version and file; drop {flag.split('/')[-1]}"
            )
    return lock


@dataclass(frozen=True)
class LockSelection:
    """``--extra``, ``--all-extras`` and ``--group`` given with a lock file."""

    extras: Sequence[str] = ()
    all_extras: bool = False
    groups: Sequence[str] = ()

    def chosen(self, lock: Any, path: Path) -> tuple[list[str], list[str]]:
        """The lock's extras and dependency groups asked for (normalized names, as
        PEP 751 compares them); an InputError for one the lock does not declare."""
        from packaging.utils import canonicalize_name

        extras = {canonicalize_name(e): e for e in lock.extras}
        groups = {canonicalize_name(g): g for g in lock.dependency_groups}
        wanted = list(extras) if self.all_extras else [canonicalize_name(e) for e in self.extras]
        for kind, asked, known in (
            ("extra", wanted, extras),
            ("dependency group", [canonicalize_name(g) for g in self.groups], groups),
        ):
            for name in asked:
                if name not in known:
                    listed = ", ".join(sorted(known.values())) or "none"
                    raise InputError(f"{path}: the lock has no {kind} {name!r} (it has: {listed})")
        return [extras[e] for e in wanted], [groups[canonicalize_name(g)] for g in self.groups]


# No extra and no group asked for: the lock's default groups only.
NOTHING_SELECTED = LockSelection()
