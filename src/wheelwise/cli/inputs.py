"""Read the files named on the command line and hand their bytes to the library."""

from __future__ import annotations

import errno
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from wheelwise.cli.errors import InputError
from wheelwise.userfiles import NotARegularFile, read_regular_file
from wheelwise.variants.errors import InvalidSystem
from wheelwise.variants.supported import SupportedProperties

# Whitespace JSON allows before a value, and a UTF-8 byte order mark.
JSON_LEADING_BYTES = b" \t\r\n\xef\xbb\xbf"

if TYPE_CHECKING:  # `install` reads no variant metadata file: it loads this when needed
    from wheelwise.resolve.reqfile import RequirementsSet
    from wheelwise.variants.metadata import VariantMetadata


def read_bytes(path: Path, what: str) -> bytes:
    """The whole file (a regular file of sane size: never a device or a FIFO)."""
    try:
        return read_regular_file(path)
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found") from None
    except NotARegularFile as exc:
        if exc.errno == errno.EISDIR:
            raise InputError(f"{path}: is a directory, expected a {what}") from None
        raise InputError(f"{path}: {exc.strerror}") from None


def load_metadata(path: Path) -> VariantMetadata:
    from wheelwise.variants.metadata import VariantMetadata

    return VariantMetadata.from_json(read_bytes(path, "variant metadata file"), source=str(path))


def load_pyproject_variant(path: Path) -> VariantMetadata:
    """The ``[variant]`` table of a pyproject.toml (PEP 817)."""
    from wheelwise.variants.pyproject import read_pyproject_variant

    data = read_bytes(path, "pyproject.toml")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    return read_pyproject_variant(text, source=str(path))


def load_system(path: Path | None) -> SupportedProperties:
    """The machine's supported properties; none yet without ``--system``.

    The file is a ``wheelwise detect --json`` document or uv's variant target TOML
    (``detect --format uv``), told apart by content: only the JSON starts with ``{``.
    """
    if path is None:
        return SupportedProperties()
    data = read_bytes(path, "system file")
    if data.lstrip(JSON_LEADING_BYTES).startswith(b"{"):
        return SupportedProperties.from_json(data, source=str(path))
    from wheelwise.providers.uv_target import NotUvTarget, parse_uv_target

    try:
        return parse_uv_target(data, source=str(path))
    except NotUvTarget as exc:
        reason = str(exc).removeprefix(f"{path}: ")
        raise InvalidSystem(
            f"{path}: neither a JSON object (wheelwise detect --json) nor uv's variant "
            f"target TOML (wheelwise detect --format uv): {reason}"
        ) from None


def read_requirement_files(
    requirement_files: Iterable[Path],
    constraint_files: Iterable[Path],
    *,
    extras: Sequence[str] = (),
    all_extras: bool = False,
    groups: Sequence[str] = (),
) -> RequirementsSet:
    """What ``-r FILE`` and ``-c FILE`` give, in the order named; a ``pyproject.toml``
    gives its project's dependencies and the *extras* asked for, and *groups* their
    dependency groups (``[PATH:]NAME``)."""
    from wheelwise.resolve.project_file import (
        group_requirements,
        is_project_file,
        project_requirements,
        split_group,
    )
    from wheelwise.resolve.reqfile import RequirementsSet, read_requirements

    files = RequirementsSet()
    projects = 0
    for path in requirement_files:
        if path.name in ("setup.py", "setup.cfg"):
            raise InputError(
                f"-r {path}: its requirements are known once the project is built; "
                f"install the project folder instead (wheelwise install {path.parent})"
            )
        if is_project_file(path):
            projects += 1
            files.requirements.extend(project_requirements(path, extras, all_extras))
        else:
            read_requirements(path, into=files)
    if (extras or all_extras) and not projects:
        flag = "--all-extras" if all_extras else f"--extra {extras[0]}"
        raise InputError(f"{flag} needs -r pyproject.toml: extras are a project's")
    by_file: dict[Path, list[str]] = {}
    for given in groups:
        path, name = split_group(given)
        by_file.setdefault(path, []).append(name)
    for path, names in by_file.items():
        files.requirements.extend(group_requirements(path, names))
    for path in constraint_files:
        read_requirements(path, constraint=True, into=files)
    return files
