"""``wheelwise show``: the fields of installed distributions, as ``pip show`` prints
them, with the variant label of a variant build."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from wheelwise.cli.errors import InputError, input_errors, warn
from wheelwise.cli.install_cmd import install_errors
from wheelwise.cli.locations import (
    environment_getter,
    location_options,
    python_option,
    warn_if_interrupted,
)
from wheelwise.environment.dependencies import MAX_INSTALLED_FILE
from wheelwise.environment.installed import is_egg_info

if TYPE_CHECKING:
    from wheelwise.environment.installed import InstalledDist
    from wheelwise.wheels.core_metadata import CoreMetadata

# pip's line for a distribution without a RECORD, kept for readers of pip's output.
_NO_RECORD = "Cannot locate RECORD or installed-files.txt"


@click.command()
@click.argument("names", nargs=-1, metavar="NAME...")
@click.option(
    "-f",
    "--files",
    "list_files",
    is_flag=True,
    help="Also list each distribution's files (from its RECORD, relative to Location), "
    "as pip show --files.",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Also show Metadata-Version, Installer, Classifiers, Entry-points and "
    "Project-URLs, as pip show --verbose.",
)
@python_option("Show")
@location_options("Show")
@input_errors
@install_errors
def show(
    names: tuple[str, ...],
    list_files: bool,
    verbose: bool,
    python: str | None,
    target_dir: Path | None,
    prefix_dir: Path | None,
    user: bool,
) -> None:
    """Show installed distributions NAME... as pip show does: name, version, variant
    label, summary, home page, author, license, location, what each requires and
    what requires it. A NAME that is not installed is skipped with a warning; exit 1
    when none is."""
    if not names:
        raise InputError("nothing to show: give NAME...")
    environment = environment_getter(python, target_dir, prefix_dir, user)
    from wheelwise.environment.installed import list_installed

    env: Any = environment()
    warn_if_interrupted(env, target_dir, prefix_dir, user, "what is shown")
    installed = {dist.name: dist for dist in list_installed(env)}
    found = _found(names, installed, env.prefix)
    if not found:
        raise click.exceptions.Exit(1)
    # Required-by needs every distribution's requirements, as pip reads them.
    from wheelwise.environment.dependencies import installed_metadata

    metadata = {name: installed_metadata(dist) for name, dist in installed.items()}
    requires = {
        name: _requires(dist, metadata[name], env.markers) for name, dist in installed.items()
    }
    for index, dist in enumerate(found):
        if index:
            click.echo("---")
        for key, value in _fields(dist, metadata, requires):
            click.echo(f"{key}: {value}")
        if verbose:
            for line in _verbose_lines(dist, metadata[dist.name]):
                click.echo(line)
        if list_files:
            _echo_files(dist)


def _found(
    names: Iterable[str], installed: Mapping[str, InstalledDist], prefix: Path
) -> list[InstalledDist]:
    """The installed distributions *names* name, in their order, once each; a
    warning for each name that is not installed (pip warns, and goes on)."""
    from packaging.utils import canonicalize_name

    found: dict[str, InstalledDist] = {}
    for name in dict.fromkeys(names):
        dist = installed.get(canonicalize_name(name))
        if dist is None:
            warn(f"{name} is not installed in {prefix}")
        else:
            found.setdefault(dist.name, dist)
    return list(found.values())


def _first(metadata: CoreMetadata | None, field: str) -> str:
    return (metadata.first(field) if metadata is not None else None) or ""


def _fields(
    dist: InstalledDist,
    metadata: Mapping[str, CoreMetadata | None],
    requires: Mapping[str, list[str]],
) -> list[tuple[str, str]]:
    """pip show's fields of *dist* in pip's order, with ``Variant`` after the version."""
    from wheelwise.environment.installed import editable_location

    own = metadata[dist.name]
    fields = [("Name", _first(own, "Name") or dist.name), ("Version", dist.version)]
    if dist.variant is not None:
        fields.append(("Variant", dist.variant))
    fields += [
        ("Summary", _first(own, "Summary")),
        ("Home-page", _home_page(own)),
        ("Author", _first(own, "Author")),
        ("Author-email", _first(own, "Author-email")),
        _license(own),
        ("Location", str(dist.location.parent)),
    ]
    editable = editable_location(dist)
    if editable is not None:
        fields.append(("Editable project location", editable))
    fields += [
        ("Requires", ", ".join(sorted(requires[dist.name], key=str.lower))),
        ("Required-by", ", ".join(_required_by(dist.name, metadata, requires))),
    ]
    return fields


def _verbose_lines(dist: InstalledDist, metadata: CoreMetadata | None) -> list[str]:
    """pip show --verbose's lines: the metadata version, the installer, and the
    classifiers, entry points (``entry_points.txt``'s lines) and project URLs, each
    list two spaces in."""
    return [
        f"Metadata-Version: {_first(metadata, 'Metadata-Version')}",
        f"Installer: {_installer(dist)}",
        "Classifiers:",
        *(f"  {value}" for value in _values(metadata, "Classifier")),
        "Entry-points:",
        *(f"  {line.strip()}" for line in _text_lines(dist, "entry_points.txt")),
        "Project-URLs:",
        *(f"  {value}" for value in _values(metadata, "Project-URL")),
    ]


def _values(metadata: CoreMetadata | None, field: str) -> list[str]:
    return metadata.values(field) if metadata is not None else []


def _installer(dist: InstalledDist) -> str:
    """The first line of *dist*'s INSTALLER with something on it ("" if none)."""
    return next((line.strip() for line in _text_lines(dist, "INSTALLER") if line.strip()), "")


def _text_lines(dist: InstalledDist, name: str) -> list[str]:
    """The lines of *dist*'s file *name*; none when it is missing or cannot be read
    (as pip shows them)."""
    from wheelwise.userfiles import read_regular_file

    try:
        data = read_regular_file(dist.location / name, limit=MAX_INSTALLED_FILE)
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()


def _home_page(metadata: CoreMetadata | None) -> str:
    """Home-page, else the Project-URL labelled Homepage (pip 24 on: PEP 621
    projects have no Home-page field; labels compared as PEP 753 normalizes them)."""
    found = _first(metadata, "Home-page")
    if found or metadata is None:
        return found
    for entry in metadata.values("Project-URL"):
        label, _, url = entry.partition(",")
        if "".join(ch for ch in label.lower() if ch.isalnum()) == "homepage":
            return url.strip()
    return ""


def _license(metadata: CoreMetadata | None) -> tuple[str, str]:
    """License-Expression in place of License from metadata 2.4 on, as pip shows it."""
    expression = _first(metadata, "License-Expression")
    version = _first(metadata, "Metadata-Version").split(".")
    try:
        newer = tuple(int(part) for part in version) >= (2, 4)
    except ValueError:
        newer = False
    if newer and expression:
        return ("License-Expression", expression)
    return ("License", _first(metadata, "License"))


def _required_by(
    name: str,
    metadata: Mapping[str, CoreMetadata | None],
    requires: Mapping[str, list[str]],
) -> list[str]:
    """The installed distributions whose requirements (as Requires shows them) name
    *name*, by the names their metadata give, as pip lists them."""
    from packaging.utils import canonicalize_name

    found = [
        _first(metadata[other], "Name") or other
        for other, needs in requires.items()
        if name in {canonicalize_name(need) for need in needs}
    ]
    return sorted(found, key=str.lower)


def _requires(dist: InstalledDist, metadata: CoreMetadata | None, markers: Any) -> list[str]:
    """The names *dist*'s Requires-Dist gives, as written, once each spelling (as
    pip), of the requirements that apply here (not an extra's; markers read for the
    environment, as pip reads them); one that does not parse is left out."""
    from wheelwise.environment.dependencies import installed_requirements

    found = installed_requirements(dist, metadata, markers)
    return list(dict.fromkeys(requirement.name for requirement in found))


def _echo_files(dist: InstalledDist) -> None:
    """``Files:`` and *dist*'s RECORD paths, sorted, two spaces in, as pip lists them
    (relative to Location: a script is ``../../../bin/NAME``)."""
    from wheelwise.userfiles import read_regular_file
    from wheelwise.wheels.errors import WheelError
    from wheelwise.wheels.record import parse_record_rows

    click.echo("Files:")
    if is_egg_info(dist):
        _echo_egg_info_files(dist)
        return
    record = dist.location / "RECORD"
    try:
        data = read_regular_file(record, limit=MAX_INSTALLED_FILE)
        rows = parse_record_rows(data, name=str(record))
    except FileNotFoundError:
        click.echo(_NO_RECORD)
        return
    except (OSError, WheelError) as exc:
        # One distribution's broken RECORD does not stop the others being shown.
        warn(f"{dist.name}: its files cannot be listed: {exc}")
        return
    # Through Path() as pip: "./a" and "a//b" are "a" and "a/b".
    paths = sorted(str(Path(row[0])) for row in rows)
    for path in paths:
        click.echo(f"  {path.strip()}")


def _echo_egg_info_files(dist: InstalledDist) -> None:
    """The paths *dist*'s ``installed-files.txt`` lists, relative to Location as pip
    shows them (they are relative to the ``.egg-info`` folder: ``../foo/a.py`` is
    ``foo/a.py``), sorted."""
    from wheelwise.userfiles import read_regular_file

    listed = dist.location / "installed-files.txt"
    try:
        data = read_regular_file(listed, limit=MAX_INSTALLED_FILE)
    except (FileNotFoundError, NotADirectoryError):  # a distutils .egg-info file
        click.echo(_NO_RECORD)
        return
    except OSError as exc:
        warn(f"{dist.name}: its files cannot be listed: {exc}")
        return
    lines = (line.strip() for line in data.decode("utf-8", "replace").split("\n"))
    site = os.path.normpath(dist.location.parent)
    paths = (os.path.normpath(os.path.join(dist.location, line)) for line in lines if line)  # noqa: PTH118
    for path in sorted(os.path.relpath(path, site) for path in paths):
        click.echo(f"  {path}")
