"""``wheelwise download``: save the right files for a machine into a folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from wheelwise.cli.errors import InputError, input_errors, warn
from wheelwise.cli.install_cmd import install_errors
from wheelwise.cli.options import (
    connection_with,
    format_options,
    format_policy,
    network_options,
    provider_options,
    source_options,
    torch_backend_option,
    upload_cutoffs,
)

if TYPE_CHECKING:
    from wheelwise.client.connection import Connection


@click.command()
@click.argument("requirements", nargs=-1, metavar="[REQ[#LABEL]]...")
@source_options("Download the requirements of a requirements file (repeatable).")
@click.option("--no-index", is_flag=True, help="Use no index: --find-links only.")
@click.option(
    "-d",
    "--dest",
    "--dest-dir",
    "dest",
    type=click.Path(path_type=Path),
    default=Path(),
    show_default=True,
    metavar="DIR",
    help="The folder the files go into (made if missing).",
)
@click.option("--pre", is_flag=True, help="Allow pre-release versions.")
@click.option("--no-deps", is_flag=True, help="Download the named projects only.")
@click.option(
    "--python",
    type=click.Path(path_type=str),
    help="Download for this interpreter (default: $VIRTUAL_ENV's, else the running one); "
    "with --python-version or --platform, the one that gives what they leave out.",
)
@click.option(
    "--python-version",
    metavar="X.Y",
    help="Download for this CPython version (then nothing is built: wheels only).",
)
@click.option(
    "--platform",
    "--python-platform",
    "platform",
    metavar="PLATFORM",
    help="Download for this platform: linux, x86_64-manylinux_2_28, aarch64-apple-darwin, "
    "... (uv's names) or a wheel platform tag such as manylinux_2_28_x86_64 (then nothing "
    "is built: wheels only).",
)
@click.option(
    "--system",
    "system_file",
    type=click.Path(path_type=Path),
    help="JSON or TOML file of the target machine's supported properties (default: "
    "this machine's).",
)
@click.option("--no-variant", is_flag=True, help="Download non-variant wheels only.")
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME=LABEL",
    help="Download this variant of package NAME (repeatable); or write NAME#LABEL.",
)
@format_options
@torch_backend_option
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@network_options
@provider_options
@input_errors
@install_errors
def download(
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
    dest: Path,
    pre: bool,
    no_deps: bool,
    python: str | None,
    python_version: str | None,
    platform: str | None,
    system_file: Path | None,
    no_variant: bool,
    variants: tuple[str, ...],
    only_binary: tuple[str, ...],
    no_binary: tuple[str, ...],
    prefer_binary: bool,
    torch_backend: str | None,
    quiet: bool,
    timeout: float,
    request_deadline: float,
    retries: int,
    connection: Connection,
    concurrent_downloads: int | None,
    no_cache: bool,
    allow_provider: tuple[str, ...],
    enable_provider: tuple[str, ...],
    refresh: bool,
) -> None:
    """Download the files an install would take, for this machine or another (--system,
    --python-version, --platform), with their *-variants.json, into a folder that
    `wheelwise install --no-index -f DIR` installs from without a network."""
    from wheelwise.cli.inputs import load_system, read_requirement_files
    from wheelwise.cli.install_cmd import (
        _all_references,
        _variant_option,
        chosen_index_strategy,
        chosen_indexes,
    )
    from wheelwise.environment.interpreter import TargetEnvironment, default_python
    from wheelwise.environment.targets import (
        interpreter_target,
        parse_platform,
        parse_python_version,
        synthetic_target,
    )
    from wheelwise.install.download import run_download
    from wheelwise.install.options import InstallOptions

    files = read_requirement_files(
        requirement_files, constraint_files, extras=extras, all_extras=all_extras, groups=groups
    )
    # What the files' own options say, as pip reads them.
    no_index, pre = no_index or files.no_index, pre or files.pre
    indexes = chosen_indexes(index_url, extra_index_url, files, no_index)
    wanted = [*requirements, *files.requirements]
    if not wanted:
        raise InputError("nothing to download: give requirements or -r FILE")
    if no_index and not (find_links or files.find_links) and not _all_references(wanted):
        raise InputError("--no-index leaves no package source: give --find-links DIR|URL")
    version = parse_python_version(python_version) if python_version is not None else None
    named = parse_platform(platform) if platform is not None else None
    env = None
    if version is None or named is None:  # the interpreter gives what is left out
        env = TargetEnvironment.from_python(python if python is not None else default_python())
    if version is None and named is None:
        assert env is not None
        target = interpreter_target(env)
    else:
        target = synthetic_target(version, named, env.info if env is not None else None)
        env = None  # a named target: nothing is built for it
    options = InstallOptions(
        requirements=wanted,
        constraints=files.constraints,
        index_url=indexes[0],
        extra_index_urls=indexes[1],
        index_strategy=chosen_index_strategy(index_strategy),
        find_links=[*find_links, *files.find_links],
        pre=pre,
        no_deps=no_deps,
        python=Path(python) if python is not None else None,
        no_variant=no_variant,
        variant_choice=_variant_option(variants),
        system=load_system(system_file) if system_file is not None else None,
        allowed_providers=allow_provider,
        enabled_providers=enable_provider,
        timeout=timeout,
        request_deadline=request_deadline,
        retries=retries,
        connection=connection_with(connection, files),
        concurrent_downloads=concurrent_downloads,
        no_cache=no_cache,
        refresh=refresh,
        warn=warn,
        formats=format_policy(files, only_binary, no_binary, prefer_binary),
        exclude_newer=upload_cutoffs(exclude_newer, exclude_newer_package),
        torch_backend=torch_backend,
        require_hashes=files.require_hashes or bool(files.hashes),
        hashes=files.hashes,
    )
    saved = run_download(options, target, dest, env=env)
    if quiet:
        return
    for one in saved:
        label = f" (variant {one.label})" if one.label is not None else ""
        click.echo(f"{'saved' if one.written else 'kept'} {one.filename}{label}")
    count = sum(1 for one in saved if not one.filename.endswith("-variants.json"))
    click.echo(f"{count} file{'s' if count != 1 else ''} for {target.describe()} in {dest}")
