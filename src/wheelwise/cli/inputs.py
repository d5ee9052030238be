"""Read the files named on the command line and hand their bytes to the library."""

from __future__ import annotations

import errno
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from wheelwise.cli.errors import InputError, warn
from wheelwise.userfiles import MAX_DOCUMENT_BYTES, NotARegularFile, read_regular_file
from wheelwise.variants.errors import InvalidSystem
from wheelwise.variants.supported import SupportedProperties

# Whitespace JSON allows before a value, and a UTF-8 byte order mark.
JSON_LEADING_BYTES = b" \t\r\n\xef\xbb\xbf"
# The name that makes -r and -c read standard input, as in uv (``-r -``).
STDIN = "-"

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


def is_stdin(path: Path) -> bool:
    """Whether *path*, given to ``-r`` or ``-c``, names standard input."""
    return str(path) == STDIN


def read_stdin(flag: str, what: str) -> bytes:
    """All of standard input, for ``FLAG -`` (at most :data:`MAX_DOCUMENT_BYTES`,
    as for a file); a warning that it gives no *what* when it holds nothing but
    whitespace (an empty requirements file gives no requirements, in pip and uv too)."""
    try:
        with click.open_file(STDIN, "rb") as stream:  # left open: it is standard input
            data: bytes = stream.read(MAX_DOCUMENT_BYTES + 1)
    except RuntimeError:  # click finds no standard input: it was closed
        raise InputError(f"{flag} -: there is no standard input to read (it is closed)") from None
    except OSError as exc:
        raise InputError(f"{flag} -: standard input cannot be read ({exc})") from None
    if len(data) > MAX_DOCUMENT_BYTES:
        raise InputError(
            f"{flag} -: standard input holds more than {MAX_DOCUMENT_BYTES >> 20} MiB, "
            "more than a requirements file does"
        )
    if not data.strip():
        warn(f"{flag} -: standard input is empty: no {what} from it")
    return data


def _one_stdin(requirement_files: Sequence[Path], constraint_files: Sequence[Path]) -> None:
    """Standard input is read once: at most one ``-r -`` or ``-c -``."""
    named = [
        *(f"-r {STDIN}" for path in requirement_files if is_stdin(path)),
        *(f"-c {STDIN}" for path in constraint_files if is_stdin(path)),
    ]
    if len(named) > 1:
        raise InputError(
            f"{' and '.join(named)}: standard input can be read only once; give - to "
            "one -r or -c and write the other to a file"
        )


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
    dependency groups (``[PATH:]NAME``). ``-r -`` and ``-c -`` read a requirements
    file from standard input, its relative paths from the current folder."""
    from wheelwise.resolve.project_file import (
        group_requirements,
        is_project_file,
        project_requirements,
        split_group,
    )
    from wheelwise.resolve.reqfile import RequirementsSet, read_requirements, read_requirements_data

    requirement_paths, constraint_paths = list(requirement_files), list(constraint_files)
    _one_stdin(requirement_paths, constraint_paths)
    files = RequirementsSet()
    projects = 0
    for path in requirement_paths:
        if is_stdin(path):
            data = read_stdin("-r", "requirements")
            read_requirements_data(data, source="<stdin>", folder=Path(), into=files)
        elif path.name in ("setup.py", "setup.cfg"):
            raise InputError(
                f"-r {path}: its requirements are known once the project is built; "
                f"install the project folder instead (wheelwise install {path.parent})"
            )
        elif is_project_file(path):
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
    for path in constraint_paths:
        if is_stdin(path):
            data = read_stdin("-c", "constraints")
            read_requirements_data(
                data, source="<stdin>", folder=Path(), constraint=True, into=files
            )
        else:
            read_requirements(path, constraint=True, into=files)
    return files
