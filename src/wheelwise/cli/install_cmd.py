"""``wheelwise install``, and what ``sync``, ``download`` and ``lock`` share with it."""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import click

from wheelwise.cli.errors import InputError, input_errors, one_line, warn
from wheelwise.cli.locations import check_location, location_options, python_option
from wheelwise.cli.lock_install import NOTHING_SELECTED, LockSelection, lock_among, on_command_line
from wheelwise.cli.options import (
    REFRESH_HELP,
    connection_with,
    format_options,
    format_policy,
    network_options,
    parse_size,
    provider_options,
    source_options,
    torch_backend_option,
    upload_cutoffs,
)
from wheelwise.client.defaults import DEFAULT_INDEX_URL
from wheelwise.client.errors import SourceError
from wheelwise.models.errors import InstallError
from wheelwise.resolve.reqfile import RequirementsFileError
from wheelwise.resolve.variant_requirement import VariantRequirementError

# The installer's modules load inside the commands: `install` first starts querying
# the target interpreter, which answers while they load.
if TYPE_CHECKING:
    from rich.status import Status

    from wheelwise.client.connection import Connection
    from wheelwise.client.index_strategy import IndexStrategy
    from wheelwise.environment.installed import InstalledDist
    from wheelwise.environment.interpreter import PendingEnvironment
    from wheelwise.install.plan import InstallOptions, InstallOutcome
    from wheelwise.install.transaction import InterruptedAfterCommit
    from wheelwise.resolve.decide import PlannedPackage
    from wheelwise.resolve.reqfile import RequirementsSet

_P = ParamSpec("_P")
_R = TypeVar("_R")


def install_errors(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Resolver, source, install, requirements-file and lock-file errors: one clear
    error, exit 2."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt as exc:
            from wheelwise.install.transaction import InterruptedAfterCommit

            if isinstance(exc, InterruptedAfterCommit):
                _report_late_interrupt(exc)
            else:  # every change was rolled back (or none was made yet)
                from wheelwise.environment.interpreter import default_python

                target = kwargs.get("target")
                python = (
                    target.python if isinstance(target, TargetArgs) else kwargs.get("python")
                ) or default_python()
                click.echo(
                    f"wheelwise: interrupted; {python}'s environment was left as it was",
                    err=True,
                )
            raise click.exceptions.Exit(130) from None
        except (InstallError, RequirementsFileError, VariantRequirementError) as exc:
            raise InputError(str(exc)) from None
        except SourceError as exc:
            raise InputError(exc.message) from None
        except Exception as exc:
            from wheelwise.lock.errors import LockError
            from wheelwise.models.errors import ResolveError

            if isinstance(exc, ResolveError | LockError):
                raise InputError(str(exc)) from None
            raise

    return wrapper


def _report_late_interrupt(exc: InterruptedAfterCommit) -> None:
    """Ctrl-C came after the point of no return: say what the environment now holds."""
    for dist in exc.report.removed:
        click.echo(f"removed {dist.name} {dist.version}")
    for dist in exc.report.installed:
        click.echo(f"installed {dist.name} {dist.version}")
    click.echo(
        "interrupted after the changes above were made (too late to undo them); "
        "the environment is complete and consistent",
        err=True,
    )


class RichProgress:
    """One overall download bar (a ProgressSink); calls come from worker threads."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TransferSpeedColumn,
        )

        self.done = 0
        self.count = 0
        self.started = False
        self.totals: dict[str, int | None] = {}
        # Bytes counted per file, and the file each worker thread is fetching: a
        # download started again (a retry, or a wheel fetched whole after it could
        # not be unpacked as it arrived) takes back what its last try counted.
        self.received: dict[str, int] = {}
        self.fetching = threading.local()
        self.lock = threading.Lock()
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = self.progress.add_task("downloading", total=None)
        self.status: Status | None = None

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        if self.status is not None:
            self.status.stop()
            self.status = None

    def close(self) -> None:
        """The downloads are over: the bar goes, and a spinner says what follows
        (unpacking into the cache and linking, until the command is done)."""
        if self.started:
            self.started = False
            self.progress.stop()  # and its refresh thread
            if self.status is None:
                self.status = self.progress.console.status(
                    f"installing {self.done} package{'s' if self.done != 1 else ''}: "
                    "unpacking and linking"
                )
                self.status.start()

    def expect(self, sizes: Mapping[str, int | None]) -> None:
        with self.lock:
            self.totals = dict(sizes)
            self.count = len(sizes)

    def start(self, total_bytes: int | None, name: str) -> None:
        with self.lock:
            if not self.started:  # the first download: resolving is over
                self.started = True
                self.progress.start()
            # The total of every download (index pages give each file's size; a
            # server, when they do not); one of unknown size makes it unknown. A
            # retried download counts once.
            if total_bytes is not None or name not in self.totals:
                self.totals[name] = total_bytes
            sizes = list(self.totals.values())
            total = None if None in sizes else sum(size for size in sizes if size is not None)
            if total is None:  # update() takes None as "unchanged"
                next(t for t in self.progress.tasks if t.id == self.task).total = None
            else:
                self.progress.update(self.task, total=total)
            counted = self.received.get(name, 0)
            if counted:
                self.progress.update(self.task, advance=-counted)
            self.received[name] = 0
        self.fetching.name = name

    def advance(self, n: int) -> None:
        name = getattr(self.fetching, "name", None)
        if name is not None:
            with self.lock:
                self.received[name] = self.received.get(name, 0) + n
        self.progress.advance(self.task, n)

    def finish(self, name: str) -> None:
        with self.lock:
            self.done += 1
            of = f" of {self.count}" if self.count else ""
            self.progress.update(self.task, description=f"fetched {self.done}{of}")


def _warn(message: str) -> None:
    """A problem the installer worked around (invalid variant metadata, say)."""
    warn(message)


def _say(line: str) -> None:
    """What the installer is doing that takes long (a build): one line on stderr."""
    click.echo(line, err=True)


def _backend_line(line: str) -> None:
    """A line a build backend printed (``-v``)."""
    click.echo(f"  | {line}", err=True)


def _variant_option(values: tuple[str, ...]) -> dict[str, str]:
    choice: dict[str, str] = {}
    for value in values:
        name, sep, label = value.partition("=")
        if not sep or not name.strip() or not label.strip():
            raise InputError(f"--variant {value!r}: expected NAME=LABEL")
        choice[name.strip()] = label.strip()
    return choice


def _configured(table: str, key: str) -> tuple[object, str]:
    """``[TABLE] KEY`` of the user's configuration file (``$WHEELWISE_CONFIG``), or
    None; and how to name the file in a message."""
    from wheelwise.userconfig import config_path

    path = config_path()
    try:
        found = path.stat()
        stamp: tuple[int, int] | None = (found.st_mtime_ns, found.st_size)
    except OSError:
        stamp = None
    data, where = _configuration(path, stamp)
    table_found = data.get(table, {})
    return (table_found.get(key) if isinstance(table_found, dict) else None), where


@functools.lru_cache(maxsize=4)
def _configuration(path: Path, stamp: tuple[int, int] | None) -> tuple[dict[str, Any], str]:
    """The tables of the configuration file at *path* as it is at *stamp* (none when
    there is no file), and how to name it: read once, whatever number of keys a
    command asks for."""
    from wheelwise.untrusted_json import UntrustedDocumentError, loads_toml
    from wheelwise.userconfig import display_path

    try:
        data = loads_toml(path.read_bytes())
    except FileNotFoundError:
        return {}, display_path(path)
    except (OSError, UntrustedDocumentError) as exc:
        raise InputError(f"cannot read {display_path(path)}: {exc}") from None
    return (data if isinstance(data, dict) else {}), display_path(path)


def configured_indexes() -> tuple[str | None, list[str]]:
    """``[install] index-url`` and ``extra-index-url`` of the configuration file (a
    URL, and a URL or a list of them), if set; raises InputError for other types."""
    index, where = _configured("install", "index-url")
    if index is not None and not isinstance(index, str):
        raise InputError(f"{where}: [install] index-url must be a URL string")
    extra, _ = _configured("install", "extra-index-url")
    extras = [extra] if isinstance(extra, str) else extra if extra is not None else []
    if not isinstance(extras, list) or not all(isinstance(url, str) for url in extras):
        raise InputError(f"{where}: [install] extra-index-url must be a URL or a list of URLs")
    return index, extras


def chosen_indexes(
    index_url: str | None,
    extra_index_urls: Sequence[str],
    files: RequirementsSet,
    no_index: bool,
) -> tuple[str | None, list[str]]:
    """The index and the extra indexes of ``install``, ``download`` and ``lock``: the
    command line's (and environment's), then the requirements files', then the
    configuration file's; none with *no_index*."""
    if no_index:
        return None, []
    configured, extras = configured_indexes()
    index = index_url or files.index_url or configured or DEFAULT_INDEX_URL
    return index, [*extra_index_urls, *files.extra_index_urls, *extras]


def chosen_index_strategy(given: str | None) -> IndexStrategy | None:
    """``--index-strategy`` (or its variable), else ``[install] index-strategy`` of the
    configuration file; None (pip's way) when neither is set. Raises InputError for a
    configured value that is not one."""
    from wheelwise.client.index_strategy import INDEX_STRATEGIES

    for strategy in INDEX_STRATEGIES:
        if given == strategy:
            return strategy
    configured, where = _configured("install", "index-strategy")
    if configured is None:
        return None
    for strategy in INDEX_STRATEGIES:
        if configured == strategy:
            return strategy
    raise InputError(
        f"{where}: [install] index-strategy = {configured!r} is not one of "
        f"{', '.join(INDEX_STRATEGIES)}"
    )


def configured_link_mode() -> str | None:
    """``[install] link-mode`` of the configuration file, if set; raises InputError for
    a value that is not one."""
    from wheelwise.install.link import LINK_MODES

    mode, where = _configured("install", "link-mode")
    if mode is None:
        return None
    if mode not in LINK_MODES:
        raise InputError(
            f"{where}: [install] link-mode = {mode!r} is not one of {', '.join(LINK_MODES)}"
        )
    return str(mode)


def configured_max_cache_size() -> int | None:
    """``[cache] max-size`` of the configuration file (``"20G"``), if set."""
    size, where = _configured("cache", "max-size")
    if size is None:
        return None
    if not isinstance(size, str | int) or isinstance(size, bool):
        raise InputError(f'{where}: [cache] max-size must be a size such as "20G"')
    return parse_size(str(size), f"{where}: [cache] max-size =")


@dataclass(frozen=True)
class TargetArgs:
    """The options :func:`target_options` adds, as given on the command line."""

    python: str | None
    no_variant: bool
    variants: tuple[str, ...]
    system_file: Path | None
    dry_run: bool
    report_file: Path | None
    require_hashes: bool
    break_system_packages: bool
    timeout: float
    request_deadline: float
    retries: int
    connection: Connection
    concurrent_downloads: int | None
    no_cache: bool
    quiet: bool
    allow_provider: tuple[str, ...]
    enable_provider: tuple[str, ...]
    refresh: bool
    compile_bytecode: bool
    link_mode: str | None
    verbose: bool
    max_cache_size: str | None

    def install_options(self) -> InstallOptions:
        """InstallOptions for these options (no requirements, no sources)."""
        from wheelwise.cli.inputs import load_system
        from wheelwise.install.plan import InstallOptions

        _check_report_file(self.report_file)
        return InstallOptions(
            python=Path(self.python) if self.python is not None else None,
            no_variant=self.no_variant,
            variant_choice=_variant_option(self.variants),
            system=load_system(self.system_file) if self.system_file is not None else None,
            allowed_providers=self.allow_provider,
            enabled_providers=self.enable_provider,
            dry_run=self.dry_run,
            require_hashes=self.require_hashes,
            break_system_packages=self.break_system_packages,
            timeout=self.timeout,
            request_deadline=self.request_deadline,
            retries=self.retries,
            connection=self.connection,
            concurrent_downloads=self.concurrent_downloads,
            no_cache=self.no_cache,
            refresh=self.refresh,
            warn=_warn,
            on_build=None if self.quiet else _say,
            build_output=_backend_line if self.verbose and not self.quiet else None,
            compile_bytecode=self.compile_bytecode,
            link_mode=self.link_mode or configured_link_mode(),
            max_cache_size=(
                parse_size(self.max_cache_size, "--max-cache-size (WHEELWISE_MAX_CACHE_SIZE)")
                if self.max_cache_size is not None
                else configured_max_cache_size()
            ),
        )

    def query(self) -> PendingEnvironment:
        """The target interpreter's query, started (see TargetEnvironment.start_query)."""
        from wheelwise.environment.interpreter import TargetEnvironment, default_python

        return TargetEnvironment.start_query(self.python or default_python())


def _check_report_file(path: Path | None) -> None:
    """Before anything is installed: ``--report FILE`` can be written (its folder is
    there, it is no folder itself), so that no install ends in an error about it."""
    if path is None or str(path) == "-":
        return
    folder = path.absolute().parent
    if path.is_dir():
        raise InputError(f"--report {path}: a folder; give a file name")
    if not folder.is_dir():
        raise InputError(f"--report {path}: no folder {folder}; make it, or give another file")


def target_options(func: Callable[..., _R]) -> Callable[..., _R]:
    """The options of ``install`` that also apply to installing a lock (``sync``):
    the target, the machine, the output, the network and the cache. The command
    gets them as one keyword argument, ``target`` (a :class:`TargetArgs`)."""

    @functools.wraps(func)
    def collected(*args: Any, **kwargs: Any) -> _R:
        given = {name: kwargs.pop(name) for name in TargetArgs.__dataclass_fields__}
        return func(*args, target=TargetArgs(**given), **kwargs)

    decorators: list[Callable[[Any], Any]] = [
        python_option("Install"),
        click.option("--no-variant", is_flag=True, help="Install non-variant wheels only."),
        click.option(
            "--variant",
            "variants",
            multiple=True,
            metavar="NAME=LABEL",
            help="Install this variant of package NAME (repeatable); or write NAME#LABEL.",
        ),
        click.option(
            "--system",
            "system_file",
            type=click.Path(path_type=Path),
            help="JSON or TOML file of the target machine's supported properties "
            "(instead of detecting).",
        ),
        click.option("--dry-run", is_flag=True, help="Resolve and show the plan; install nothing."),
        click.option(
            "--report",
            "report_file",
            type=click.Path(path_type=Path),
            help="Write pip's installation report (version 1, with variants) to FILE "
            "('-': stdout).",
        ),
        click.option(
            "--require-hashes",
            is_flag=True,
            help="Hash-checking mode, as in pip and uv: every requirement pinned with == "
            "and given the hashes of its files (--hash in a requirements file, #sha256= on a "
            "URL), dependencies included; on by itself when any requirement has a hash (a "
            "lock file is always checked).",
        ),
        click.option(
            "--break-system-packages",
            is_flag=True,
            help="Install into an externally managed environment (PEP 668) anyway.",
        ),
        click.option(
            "--compile-bytecode",
            is_flag=True,
            envvar="WHEELWISE_COMPILE_BYTECODE",
            help="Compile the installed modules to bytecode with the target Python "
            "(default: on first import) [env: WHEELWISE_COMPILE_BYTECODE].",
        ),
        click.option(
            "--link-mode",
            type=click.Choice(["hardlink", "clone", "copy", "symlink"]),
            envvar="WHEELWISE_LINK_MODE",
            default=None,
            help="How files get from the cache of unpacked wheels into the environment "
            "(default: hardlink, else clone, else copy; symlink breaks the environment "
            "when the cache is cleaned) [env: WHEELWISE_LINK_MODE; config: [install] "
            "link-mode].",
        ),
        network_options,
        click.option(
            "--max-cache-size",
            metavar="SIZE",
            envvar="WHEELWISE_MAX_CACHE_SIZE",
            help="Once done, remove the least recently used unpacked wheels and wheel "
            "files until the cache holds at most SIZE (500M, 20G) [env: "
            "WHEELWISE_MAX_CACHE_SIZE; config: [cache] max-size].",
        ),
        click.option(
            "-q",
            "--quiet",
            is_flag=True,
            help="Print nothing on success, as pip and uv do (errors and warnings still go "
            "to stderr).",
        ),
        click.option(
            "-v",
            "--verbose",
            is_flag=True,
            help="Say where each installed package came from, and show what build backends print.",
        ),
        functools.partial(
            provider_options,
            refresh_help=REFRESH_HELP[:-1]
            + ", and revalidate every cached index page, however fresh.",
        ),
    ]
    wrapped: Any = collected
    for decorator in reversed(decorators):
        wrapped = decorator(wrapped)
    return cast("Callable[..., _R]", wrapped)


@click.command()
@click.argument("requirements", nargs=-1, metavar="[REQ[#LABEL]]...")
@source_options(
    "Install from a requirements file (repeatable), or from a lock file named "
    "pylock.toml or pylock.NAME.toml."
)
@click.option(
    "-U",
    "--upgrade",
    is_flag=True,
    help="Upgrade installed packages to the newest: those asked for and their "
    "dependencies, as uv's --upgrade.",
)
@click.option(
    "-P",
    "--upgrade-package",
    multiple=True,
    metavar="NAME",
    help="Upgrade NAME to the newest that fits, keeping the other installed versions "
    "(repeatable; uv's -P).",
)
@click.option("--pre", is_flag=True, help="Allow pre-release versions.")
@click.option("--no-deps", is_flag=True, help="Do not install dependencies.")
@click.option(
    "--force-reinstall",
    "--reinstall",
    "reinstall",
    is_flag=True,
    help="Install every package again, even where the same build is installed (pip's "
    "--force-reinstall, uv's --reinstall).",
)
@click.option(
    "--reinstall-package",
    multiple=True,
    metavar="NAME",
    help="Install NAME again, even where the same build is installed (repeatable).",
)
@click.option(
    "--no-index",
    is_flag=True,
    help="Ignore the package indexes (--index-url, --extra-index-url, and those of "
    "requirements files): only --find-links.",
)
@click.option(
    "-e",
    "--editable",
    "editables",
    multiple=True,
    metavar="PATH",
    help="Install the project in folder PATH in editable mode (PEP 660; repeatable).",
)
@format_options
@torch_backend_option
@click.option(
    "-C",
    "--config-settings",
    "config_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A PEP 517 config setting for every build backend (repeatable; a key given "
    "again makes a list), as pip's and uv's -C.",
)
@click.option(
    "--no-build-isolation",
    is_flag=True,
    help="Build source distributions and projects in the target environment, which must "
    "have their build requirements (default: in a new environment into which wheelwise "
    "installs them).",
)
@location_options("Install")
@target_options
@input_errors
@install_errors
def install(
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
    upgrade: bool,
    pre: bool,
    no_deps: bool,
    reinstall: bool,
    reinstall_package: tuple[str, ...],
    upgrade_package: tuple[str, ...],
    config_settings: tuple[str, ...],
    no_index: bool,
    editables: tuple[str, ...],
    only_binary: tuple[str, ...],
    no_binary: tuple[str, ...],
    prefer_binary: bool,
    torch_backend: str | None,
    no_build_isolation: bool,
    target_dir: Path | None,
    prefix_dir: Path | None,
    user: bool,
    target: TargetArgs,
) -> None:
    """Install packages, choosing the wheel variant that fits this machine.

    REQ is a requirement (``torch>=2.9``, ``torch#cu128`` for a variant), a project
    folder (``./my-project``), a wheel or source archive (a path or URL),
    ``NAME @ URL`` or a ``git+URL[@REV]``."""
    lock = lock_among(
        requirement_files,
        requirements,
        constraint_files,
        {
            "upgrade": upgrade,
            "upgrade_package": upgrade_package,
            "pre": pre,
            "no_deps": no_deps,
            "index_url": index_url,
            "extra_index_url": extra_index_url,
            # Set in the environment, it is a default for resolving: a lock has resolved.
            "index_strategy": index_strategy if on_command_line("index_strategy") else None,
            "find_links": find_links,
            # Set in the environment, it is a default for resolving: a lock has resolved.
            "exclude_newer": exclude_newer if on_command_line("exclude_newer") else None,
            "exclude_newer_package": exclude_newer_package,
            "torch_backend": torch_backend if on_command_line("torch_backend") else None,
            "prefer_binary": prefer_binary,
            "only_binary": only_binary,
            "no_binary": no_binary,
            "editables": editables,
            "config_settings": config_settings,
            "no_build_isolation": no_build_isolation,
        },
    )
    location = check_location(target_dir, prefix_dir, user)
    if lock is not None and location is not None:
        raise InputError(
            f"{location} cannot be used with a lock file ({lock}) yet; install the lock "
            "into an environment (--python)"
        )
    with target.query() as query:
        from dataclasses import replace

        from wheelwise.install.plan import run_install

        base = target.install_options()
        if lock is not None:
            selected = LockSelection(extras, all_extras, groups)
            install_lock(lock, query, target, sync=False, selected=selected)
            return
        from wheelwise.cli.inputs import read_requirement_files

        files = read_requirement_files(
            requirement_files, constraint_files, extras=extras, all_extras=all_extras, groups=groups
        )
        # What the files' own options say, as pip reads them.
        no_index, pre = no_index or files.no_index, pre or files.pre
        wanted = [*requirements, *files.requirements]
        all_editables = [*editables, *files.editables]
        if not wanted and not all_editables:
            raise InputError("nothing to install: give requirements or -r FILE")
        if no_index and not (find_links or files.find_links) and not _all_references(wanted):
            raise InputError(
                "--no-index leaves no package source: give --find-links DIR|URL, or drop --no-index"
            )
        index_url, extra_index_urls = chosen_indexes(index_url, extra_index_url, files, no_index)
        options = replace(
            base,
            requirements=wanted,
            constraints=files.constraints,
            index_url=index_url,
            extra_index_urls=extra_index_urls,
            index_strategy=chosen_index_strategy(index_strategy),
            find_links=[*find_links, *files.find_links],
            connection=connection_with(base.connection, files),
            upgrade=upgrade,
            pre=pre,
            no_deps=no_deps,
            reinstall=reinstall
            or frozenset(_project_name(name, "--reinstall-package") for name in reinstall_package),
            upgrade_packages=frozenset(
                _project_name(name, "--upgrade-package") for name in upgrade_package
            ),
            target_dir=target_dir,
            prefix_dir=prefix_dir,
            user=user,
            editables=all_editables,
            formats=format_policy(files, only_binary, no_binary, prefer_binary),
            exclude_newer=upload_cutoffs(exclude_newer, exclude_newer_package),
            torch_backend=torch_backend,
            build_isolation=not no_build_isolation,
            config_settings=parse_config_settings(config_settings),
            # A --hash on any requirement turns hash-checking on, as in pip and uv.
            require_hashes=base.require_hashes or files.require_hashes or bool(files.hashes),
            hashes=files.hashes,
        )
        started = time.perf_counter()
        if interactive(target.quiet) and not target.dry_run:
            with RichProgress() as bar:
                outcome = run_install(replace(options, progress=bar), query)
        else:
            outcome = run_install(options, query)
        show_outcome(
            outcome,
            quiet=target.quiet,
            report_file=target.report_file,
            verbose=target.verbose,
            elapsed=time.perf_counter() - started,
        )
        _warn_broken(outcome)


def parse_config_settings(given: Sequence[str]) -> dict[str, str | list[str]]:
    """``-C KEY=VALUE`` options as PEP 517's config_settings: a key given again makes
    a list of its values, as pip makes it."""
    settings: dict[str, str | list[str]] = {}
    for text in given:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise InputError(f"-C {text!r}: expected KEY=VALUE")
        key = key.strip()
        found = settings.get(key)
        if found is None:
            settings[key] = value
        elif isinstance(found, list):
            found.append(value)
        else:
            settings[key] = [found, value]
    return settings


def _warn_broken(outcome: InstallOutcome) -> None:
    """After an install that replaced distributions: a warning for each requirement
    of another installed distribution that the new versions no longer meet, as pip
    warns (the resolver only looks at what it was asked to install)."""
    report = outcome.report
    if report is None:
        return
    before = {dist.name: dist.version for dist in report.removed}
    # A version replaced by another; the same version installed again breaks nothing.
    changed = {
        dist.name
        for dist in report.installed
        if dist.name in before and before[dist.name] != dist.version
    }
    if not changed:
        return
    from wheelwise.environment.installed import list_installed
    from wheelwise.environment.satisfied import unmet_requirements

    every = {dist.name: dist for dist in list_installed(outcome.environment)}
    markers = outcome.environment.markers
    for line in unmet_requirements(every, markers, names=sorted(changed)):
        if line.split(" ", 1)[0] not in changed:  # what was resolved fits together
            warn(f"{line} (wheelwise check lists every such requirement)")


def _all_references(requirements: Sequence[str]) -> bool:
    """Whether each of *requirements* names its own source (a file, a folder, a
    URL): then no index is needed. One that cannot be read is left to the resolver."""
    from wheelwise.models.errors import ResolveError as Unusable
    from wheelwise.resolve.direct import parse_direct

    try:
        return all(parse_direct(text) is not None for text in requirements)
    except Unusable:
        return True  # the install says what is wrong with it


def _project_name(text: str, option: str) -> str:
    """*text* (given to *option*) as a normalized project name; an InputError when it
    cannot be one."""
    from packaging.utils import InvalidName, canonicalize_name

    try:
        return canonicalize_name(text, validate=True)
    except InvalidName:
        raise InputError(f"{option} {text!r}: not a project name") from None


def interactive(quiet: bool) -> bool:
    """Whether a progress bar is shown: not with -q, nor when output is no terminal."""
    return not quiet and sys.stderr.isatty() and sys.stdout.isatty()


def show_outcome(
    outcome: InstallOutcome,
    *,
    quiet: bool,
    report_file: Path | None,
    removals: Sequence[InstalledDist] = (),
    verbose: bool = False,
    elapsed: float | None = None,
) -> None:
    """The report (``--report``); then, unless *quiet*, the plan of a dry run, or a
    line per package installed, upgraded or kept, then a line per distribution a sync
    removes (*removals*), and how long it took (*elapsed* seconds)."""
    from wheelwise.install.plan import installation_report

    # With the report on stdout, what people read goes to stderr: stdout is JSON.
    to_stderr = report_file is not None and str(report_file) == "-"
    if report_file is not None:
        text = json.dumps(installation_report(outcome), indent=2)
        if to_stderr:
            click.echo(text)
        else:
            report_file.write_text(text + "\n", encoding="utf-8")
    if quiet:
        return
    if outcome.dry_run:
        _render_plan(outcome, to_stderr)
        for dist in removals:
            click.echo(f"would uninstall {dist.name} {dist.version}", err=to_stderr)
        return
    replaced = {
        dist.name: dist for dist in (outcome.report.removed if outcome.report is not None else [])
    }
    for dist in outcome.satisfied:
        parts = [f"variant {dist.variant}"] if dist.variant else []
        if verbose:
            parts.append(f"in {dist.location.parent}")
        click.echo(
            f"already installed {dist.name} {dist.version}"
            + (f" ({'; '.join(parts)})" if parts else ""),
            err=to_stderr,
        )
    if verbose and outcome.satisfied:
        click.echo(
            "every requirement is met by what is installed: no index was read", err=to_stderr
        )
    changed = 0
    for planned in outcome.plan:
        if planned.skipped:
            click.echo(
                f"already installed {planned.name} {planned.package.version}"
                + (f" (variant {planned.installed_variant})" if planned.installed_variant else ""),
                err=to_stderr,
            )
            continue
        changed += 1
        click.echo(one_line(_change(planned, replaced.get(planned.name), verbose)), err=to_stderr)
    for dist in removals:
        changed += 1
        click.echo(f"uninstalled {dist.name} {dist.version}", err=to_stderr)
    if elapsed is not None and changed:
        packages = f"{changed} package{'s' if changed != 1 else ''}"
        click.echo(f"changed {packages} in {elapsed:.2f} s", err=to_stderr)


def _change(planned: PlannedPackage, old: InstalledDist | None, verbose: bool) -> str:
    """``installed NAME VERSION (why)``, or ``upgraded NAME OLD -> NEW (why)``: the
    variant and what won it; with *verbose*, also the source (and non-variant)."""
    from packaging.version import InvalidVersion, Version

    from wheelwise.resolve.finder import source_label

    package = planned.package
    what = f"installed {planned.name} {package.version}"
    if old is not None and str(old.version) == str(package.version):
        if old.variant == package.label:  # the same build, asked for again
            what = f"reinstalled {planned.name} {package.version}"
    elif old is not None:
        try:
            verb = (
                "upgraded" if Version(str(package.version)) > Version(old.version) else "downgraded"
            )
        except InvalidVersion:
            verb = "replaced"
        what = f"{verb} {planned.name} {old.version} -> {package.version}"
    parts = []
    if package.label is not None:
        won = f", won by {package.won_by}" if package.won_by is not None else ""
        parts.append(f"variant {package.label}{won}")
    elif verbose:
        parts.append("non-variant")
    if planned.direct_url is not None:
        parts.append(f"from {_direct_origin(planned.direct_url)}")
    elif planned.built_from is not None:
        parts.append(f"built from {planned.built_from.filename}")
    if verbose and planned.direct_url is None:
        parts.append(f"from {source_label(planned.source)}")
    return what + (f" ({'; '.join(parts)})" if parts else "")


def _direct_origin(direct_url: str) -> str:
    """Where a direct reference came from, as direct_url.json says (a folder for
    ``file:`` URLs, "editable" marked)."""
    from urllib.parse import unquote, urlsplit

    document = json.loads(direct_url)
    url = str(document.get("url", "?"))
    parts = urlsplit(url)
    where = unquote(parts.path) if parts.scheme == "file" else url
    if document.get("dir_info", {}).get("editable"):
        return f"{where}, editable"
    commit = document.get("vcs_info", {}).get("commit_id")
    return f"{where} at {commit[:12]}" if commit else where


def _render_plan(outcome: InstallOutcome, to_stderr: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table

    from wheelwise.resolve.finder import source_label

    stream = sys.stderr if to_stderr else sys.stdout
    console = (
        Console(width=200, stderr=to_stderr) if not stream.isatty() else Console(stderr=to_stderr)
    )
    table = Table(title=f"plan for {outcome.environment.python}", title_justify="left")
    for column in ("package", "version", "label", "won by", "source", "rejected"):
        table.add_column(column, overflow="fold")
    for planned in outcome.plan:
        package = planned.package
        version = str(package.version)
        label, won_by, rejected_labels = package.label, package.won_by, package.rejected
        if planned.skipped:
            version += " (installed)"
            if planned.installed_variant != label:  # the installed build stays
                label, won_by, rejected_labels = planned.installed_variant, None, {}
        rejected = "\n".join(f"{name}: {reason}" for name, reason in rejected_labels.items())
        table.add_row(
            package.name,
            version,
            label or "-",
            str(won_by) if won_by is not None else "-",
            source_label(planned.source),
            rejected or "-",
        )
    console.print(table)
    if not outcome.plan:
        console.print("nothing to install")


def install_lock(
    path: Path,
    query: PendingEnvironment,
    target: TargetArgs,
    *,
    sync: bool,
    selected: LockSelection = NOTHING_SELECTED,
) -> None:
    """Install the lock file *path* into the environment *query* is about (with
    *sync*, also remove what it does not select; *selected*: its extras and groups
    asked for), and say what was done."""
    from dataclasses import replace

    from wheelwise.cli.inputs import read_bytes
    from wheelwise.install.from_lock import run_lock_install
    from wheelwise.lock import read_pylock

    lock = read_pylock(read_bytes(path, "lock file"), source=str(path))
    extras, groups = selected.chosen(lock, path)
    options = target.install_options()
    started = time.perf_counter()
    if interactive(target.quiet) and not target.dry_run:
        with RichProgress() as bar:
            done = run_lock_install(
                lock,
                path,
                replace(options, progress=bar),
                query,
                sync=sync,
                extras=extras,
                groups=groups,
            )
    else:
        done = run_lock_install(lock, path, options, query, sync=sync, extras=extras, groups=groups)
    show_outcome(
        done.outcome,
        quiet=target.quiet,
        report_file=target.report_file,
        removals=done.removals,
        verbose=target.verbose,
        elapsed=time.perf_counter() - started,
    )
