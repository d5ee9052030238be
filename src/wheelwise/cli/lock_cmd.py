"""``wheelwise lock``: write (or ``--check``) a ``pylock.toml`` for one or more targets."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, ParamSpec, TypeVar

import click

from wheelwise.atomic_file import replace_with
from wheelwise.cli.errors import InputError, input_errors, warn
from wheelwise.cli.inputs import read_bytes, read_requirement_files
from wheelwise.cli.options import (
    connection_with,
    network_options,
    source_options,
    upload_cutoffs,
)
from wheelwise.client.errors import SourceError
from wheelwise.lock.errors import LockError
from wheelwise.models.errors import InstallError
from wheelwise.resolve.reqfile import RequirementsFileError
from wheelwise.resolve.variant_requirement import VariantRequirementError

if TYPE_CHECKING:
    from wheelwise.client.connection import Connection
    from wheelwise.environment.targets import LockEnvironment, Platform
    from wheelwise.install.locking import LockInputs

_P = ParamSpec("_P")
_R = TypeVar("_R")
OUT_OF_DATE_EXIT = 1
DEFAULT_OUTPUT = "pylock.toml"


def lock_errors(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Resolver, source, target, lock-file and requirements-file errors: one line,
    exit 2, nothing written."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        from wheelwise.environment.targets import TargetError
        from wheelwise.models.errors import ResolveError

        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("wheelwise: interrupted; nothing was written", err=True)
            raise click.exceptions.Exit(130) from None
        except SourceError as exc:
            raise InputError(f"{exc.message}; nothing was written") from None
        except (
            InstallError,
            LockError,
            RequirementsFileError,
            ResolveError,
            TargetError,
            VariantRequirementError,
        ) as exc:
            raise InputError(f"{exc}; nothing was written") from None

    return wrapper


@click.command()
@click.argument("requirements", nargs=-1, metavar="[REQ]...")
@source_options("Lock the requirements of a requirements file (repeatable).")
@click.option("--no-index", is_flag=True, help="Use no index: --find-links only.")
@click.option("--pre", is_flag=True, help="Allow pre-release versions.")
@click.option(
    "--python",
    type=click.Path(path_type=str),
    help="Lock for this interpreter (default: $VIRTUAL_ENV's, else the running one); "
    "with --python-version or --platform, the one that gives what they leave out.",
)
@click.option(
    "--python-version",
    "python_versions",
    multiple=True,
    metavar="X.Y",
    help="Lock for this CPython version (repeatable: one target per version and platform).",
)
@click.option(
    "--platform",
    "--python-platform",
    "platforms",
    multiple=True,
    metavar="PLATFORM",
    help="Lock for this platform: linux, macos, windows, x86_64-manylinux_2_28, "
    "aarch64-apple-darwin, ... (uv's names) or a wheel platform tag such as "
    "manylinux_2_28_x86_64 (repeatable).",
)
@click.option(
    "-o",
    "--output",
    default=DEFAULT_OUTPUT,
    show_default=True,
    metavar="FILE",
    help="Where to write the lock ('-': stdout).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 when the lock in FILE differs from what locking would "
    "write now, 0 when it is the same.",
)
@click.option("-U", "--upgrade", is_flag=True, help="Ignore the versions of the existing lock.")
@click.option(
    "-P",
    "--upgrade-package",
    "upgrade_packages",
    multiple=True,
    metavar="NAME",
    help="Ignore the existing lock's version of NAME (repeatable).",
)
@network_options
@click.option("--refresh", is_flag=True, help="Revalidate every cached index page.")
@input_errors
@lock_errors
def lock(
    requirements: tuple[str, ...],
    requirement_files: tuple[Path, ...],
    constraint_files: tuple[Path, ...],
    index_url: str | None,
    extra_index_url: tuple[str, ...],
    index_strategy: str | None,
    find_links: tuple[str, ...],
    extras: tuple[str, ...],
    all_extras: bool,
    groups: tuple[str, ...],
    exclude_newer: float | None,
    exclude_newer_package: tuple[tuple[str, float | None], ...],
    no_index: bool,
    pre: bool,
    python: str | None,
    python_versions: tuple[str, ...],
    platforms: tuple[str, ...],
    output: str,
    check: bool,
    upgrade: bool,
    upgrade_packages: tuple[str, ...],
    timeout: float,
    request_deadline: float,
    retries: int,
    connection: Connection,
    concurrent_downloads: int | None,
    no_cache: bool,
    refresh: bool,
) -> None:
    """Lock requirements into a pylock.toml (PEP 751) that lists every wheel variant."""
    from wheelwise.cli.install_cmd import chosen_index_strategy, chosen_indexes
    from wheelwise.environment.targets import parse_platform, parse_python_version
    from wheelwise.install.locking import locked_versions, run_lock
    from wheelwise.install.plan import InstallOptions
    from wheelwise.lock import read_pylock, write_pylock

    files = read_requirement_files(
        requirement_files, constraint_files, extras=extras, all_extras=all_extras, groups=groups
    )
    # What the files' own options say, as pip reads them.
    no_index, pre = no_index or files.no_index, pre or files.pre
    indexes = chosen_indexes(index_url, extra_index_url, files, no_index)
    wanted = [*requirements, *files.requirements]
    if not wanted:
        raise InputError("nothing to lock: give requirements or -r FILE")
    if files.hashes:
        raise InputError(
            f"{next(iter(files.hashes))!r} has --hash: a lock records the hash of every "
            "file itself; give the requirements without hashes"
        )
    destination = None if output == "-" else Path(output)
    if check and destination is None:
        raise InputError("--check compares with a lock file: give -o FILE, not -o -")
    targets = _targets(
        [parse_python_version(v) for v in python_versions],
        [parse_platform(p) for p in platforms],
        python,
    )
    on_disk = _existing(destination)
    preferences = {}
    if on_disk is not None and not upgrade:
        assert destination is not None
        existing = read_pylock(on_disk, source=str(destination))
        preferences = {
            target.environment: locked_versions(existing, target, upgrade_packages)
            for target in targets
        }
    options = InstallOptions(
        requirements=wanted,
        constraints=files.constraints,
        index_url=indexes[0],
        extra_index_urls=indexes[1],
        index_strategy=chosen_index_strategy(index_strategy),
        find_links=[*find_links, *files.find_links],
        pre=pre,
        timeout=timeout,
        request_deadline=request_deadline,
        retries=retries,
        connection=connection_with(connection, files),
        concurrent_downloads=concurrent_downloads,
        no_cache=no_cache,
        refresh=refresh,
        warn=warn,
        exclude_newer=upload_cutoffs(exclude_newer, exclude_newer_package),
    )
    if check:
        assert destination is not None
        # Changed inputs make the lock stale, whether or not they resolve now.
        from wheelwise.install.locking import lock_inputs

        reason = _stale_without_resolving(destination, on_disk, lock_inputs(options, targets))
        if reason is not None:
            _out_of_date(destination, reason)
    locked = run_lock(options, targets, preferences)
    text = write_pylock(locked)
    if check:
        assert destination is not None
        _check(destination, on_disk, text)
        return
    if destination is None:
        click.echo(text, nl=False)
        return
    done = "kept"  # the same lock: the file is left alone, modification time too
    if on_disk != text.encode("utf-8"):
        _write(destination, text)
        done = "wrote"
    count = len(locked.packages)
    click.echo(
        f"{done} {destination}: {count} package{'s' if count != 1 else ''} for "
        f"{len(targets)} target{'s' if len(targets) != 1 else ''}",
        err=True,
    )


def _targets(
    python_versions: list[str], platforms: list[Platform], python: str | None
) -> list[LockEnvironment]:
    from wheelwise.environment.interpreter import TargetEnvironment, default_python
    from wheelwise.environment.targets import lock_targets

    base = None
    if not (python_versions and platforms):  # the interpreter gives what is left out
        base = TargetEnvironment.from_python(python if python is not None else default_python())
    return lock_targets(python_versions, platforms, base)


def _existing(path: Path | None) -> bytes | None:
    """The lock on disk at *path*, if there is one."""
    if path is None or not path.exists():
        return None
    return read_bytes(path, "lock file")


def _check(path: Path, on_disk: bytes | None, text: str) -> None:
    """Exit 1 when *on_disk* is not *text* (its inputs are the same:
    :func:`_stale_without_resolving` has found none changed); say so when it is."""
    if on_disk == text.encode("utf-8"):
        click.echo(f"wheelwise: {path} is up to date", err=True)
        return
    _out_of_date(path, "the inputs are the same, but locking them again gives another lock")


def _out_of_date(path: Path, reason: str) -> NoReturn:
    click.echo(
        f"wheelwise: {path} is out of date: {reason}; run the same wheelwise lock command "
        "without --check to update it",
        err=True,
    )
    raise click.exceptions.Exit(OUT_OF_DATE_EXIT)


def _stale_without_resolving(path: Path, on_disk: bytes | None, inputs: LockInputs) -> str | None:
    """Why the lock *on_disk* is out of date before anything is resolved: there is
    none, it does not read, or it was made from other inputs; else None."""
    from wheelwise.install.locking import TOOL
    from wheelwise.lock import read_pylock

    if on_disk is None:
        return "there is no lock yet"
    try:
        existing = read_pylock(on_disk, source=str(path))
    except LockError as exc:
        return f"it cannot be read ({exc})"
    old = (existing.tool or {}).get(TOOL, {})
    if not isinstance(old, dict) or old.get("inputs-hash") != inputs.digest:
        return (
            "the inputs changed (requirements, constraints, sources, --index-strategy, "
            "targets or --pre: its inputs-hash differs)"
        )
    return None


def _write(path: Path, text: str) -> None:
    """*path* replaced whole (never half written), with the permissions of the file it
    replaces, else those a new file gets."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        mode = 0o666 & ~mask

    def write(temporary: Path) -> None:
        temporary.write_bytes(text.encode("utf-8"))
        temporary.chmod(mode)

    replace_with(path, write)
