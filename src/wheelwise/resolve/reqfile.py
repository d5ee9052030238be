"""Requirements files (``-r``) and constraints files (``-c``), the simple subset.

Understood: requirement lines, blank lines and ``#`` comments, line continuations
(``\\``), ``-r``/``--requirement`` and ``-c``/``--constraint`` (relative to the file
that names them, or to the folder given with text that comes from no file: ``-r -``),
``-i``/``--index-url``, ``--extra-index-url``,
``-f``/``--find-links``, ``-e``/``--editable`` (a relative folder from the file's
own), ``--only-binary``, ``--no-binary``, and the flags ``--pre``, ``--no-index``,
``--prefer-binary`` and ``--require-hashes``, and ``--trusted-host`` (see
:mod:`wheelwise.client.connection`).
Any other option is an error naming the file and line.
A requirement may be followed by ``--hash=ALGORITHM:HEX`` options (sha256, sha384 or
sha512; one per file the project may install, as ``pip-compile --generate-hashes``
and ``uv pip compile --generate-hashes`` write them): they turn on hash-checking
(see :mod:`wheelwise.resolve.user_hashes`).

A requirement line may choose a variant, ``torch#cu128`` (see
:mod:`wheelwise.resolve.variant_requirement`); the line is kept as it is, its label
checked here so that a bad one is reported with the file and line. As in pip, a
``#`` after whitespace starts a comment: ``torch #cu128`` is just ``torch``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from wheelwise.client.connection import HostPattern, InsecureHostError, parse_host
from wheelwise.errors import WheelwiseError
from wheelwise.policy.hashes import is_digest
from wheelwise.resolve.variant_requirement import VariantRequirementError, split_variant_label
from wheelwise.userfiles import NotARegularFile, read_regular_file

__all__ = [
    "RequirementsFileError",
    "RequirementsSet",
    "read_requirements",
    "read_requirements_data",
]

_COMMENT = re.compile(r"(^|\s+)#.*$")
_OPTIONS = {
    "-r": "requirement",
    "--requirement": "requirement",
    "-c": "constraint",
    "--constraint": "constraint",
    "-i": "index_url",
    "--index-url": "index_url",
    "--extra-index-url": "extra_index_url",
    "-f": "find_links",
    "--find-links": "find_links",
    "-e": "editable",
    "--editable": "editable",
    "--only-binary": "only_binary",
    "--no-binary": "no_binary",
    "--trusted-host": "trusted_host",
}
# Options that take no value: pip's, as its requirements files write them.
_FLAGS = {
    "--pre": "pre",
    "--no-index": "no_index",
    "--require-hashes": "require_hashes",
    "--prefer-binary": "prefer_binary",
}
_MAX_DEPTH = 20
# ``--hash=sha256:HEX`` or ``--hash sha256:HEX`` after a requirement.
_HASH_OPTION = re.compile(r"\s--hash(?:=|\s+)(\S*)")
# The algorithms pip's --hash takes (and uv's).
HASH_ALGORITHMS = ("sha256", "sha384", "sha512")


class RequirementsFileError(ValueError, WheelwiseError):
    """A requirements file cannot be read or uses what is not supported."""


@dataclass
class RequirementsSet:
    """What requirements files gave: requirements, constraints and sources."""

    requirements: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    index_url: str | None = None
    extra_index_urls: list[str] = field(default_factory=list)
    find_links: list[str] = field(default_factory=list)
    # -e lines: project folders (relative ones from the file's folder).
    editables: list[str] = field(default_factory=list)
    only_binary: list[str] = field(default_factory=list)
    no_binary: list[str] = field(default_factory=list)
    pre: bool = False
    no_index: bool = False
    require_hashes: bool = False
    prefer_binary: bool = False
    # Hosts whose certificates are not checked (--trusted-host).
    trusted_hosts: list[HostPattern] = field(default_factory=list)
    # The --hash options of each requirement (by its text in ``requirements``):
    # lower-case algorithm and hex digest pairs, any one of which a file may have.
    hashes: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)


def _read(path: Path) -> bytes:
    if str(path).startswith(("http:/", "https:/", "file:/")):  # a URL made a path
        raise RequirementsFileError(
            f"{str(path).replace(':/', '://', 1)}: requirements files are read from this "
            "machine, not from a URL; download it first"
        )
    try:
        return read_regular_file(path)
    except FileNotFoundError:
        raise RequirementsFileError(f"{path}: requirements file not found") from None
    except NotARegularFile as exc:
        raise RequirementsFileError(f"{path}: {exc.strerror}") from None
    except OSError as exc:
        raise RequirementsFileError(f"{path}: cannot be read ({exc})") from None


def _lines(data: bytes, source: str) -> list[tuple[int, str]]:
    """The numbered logical lines of a requirements file's *data*, comments and
    continuations taken out, blank ones left out."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequirementsFileError(f"{source}: cannot be read ({exc})") from None
    joined: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _COMMENT.sub("", raw)
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        joined.append((start, (pending + line).strip()))
        pending = ""
    if pending:
        joined.append((start, pending.strip()))
    return [(n, line) for n, line in joined if line]


def _hash_options(line: str, where: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """*line* without its ``--hash`` options, and what they give."""
    found = list(_HASH_OPTION.finditer(line))
    if not found:
        return line, ()
    requirement = line[: found[0].start()].strip()
    rest = _HASH_OPTION.sub("", line[found[0].start() :]).strip()
    if rest:
        raise RequirementsFileError(
            f"{where}: {rest.split()[0]!r} after --hash: only --hash options may follow "
            "a requirement"
        )
    hashes = []
    for match in found:
        value = match.group(1)
        algorithm, _, digest = value.partition(":")
        name = algorithm.lower()
        if name not in HASH_ALGORITHMS or not is_digest(name, digest):
            raise RequirementsFileError(
                f"{where}: --hash {value!r} is not ALGORITHM:HEX with sha256, sha384 or "
                "sha512 (as pip-compile --generate-hashes writes it)"
            )
        hashes.append((name, digest.lower()))
    if not requirement:
        raise RequirementsFileError(f"{where}: --hash needs a requirement before it")
    return requirement, tuple(hashes)


def _split_option(line: str) -> tuple[str, str] | None:
    if not line.startswith("-"):
        return None
    if line.startswith("--") and "=" in line.split()[0]:
        option, _, value = line.partition("=")
        return option.strip(), value.strip()
    option, _, value = line.partition(" ")
    if option.startswith("-") and not option.startswith("--") and len(option) > 2:
        return option[:2], option[2:].strip()
    return option, value.strip()


def read_requirements(
    path: Path,
    *,
    constraint: bool = False,
    into: RequirementsSet | None = None,
    _depth: int = 0,
) -> RequirementsSet:
    """Read *path* (a constraints file with *constraint*) into *into* (or a new set)."""
    result = into if into is not None else RequirementsSet()
    if _depth > _MAX_DEPTH:
        raise RequirementsFileError(f"{path}: requirements files nest too deeply (a cycle?)")
    _parse(_read(path), str(path), path.parent, constraint, result, _depth)
    return result


def read_requirements_data(
    data: bytes,
    *,
    source: str,
    folder: Path,
    constraint: bool = False,
    into: RequirementsSet | None = None,
) -> RequirementsSet:
    """Read requirements-file *data* that comes from no file (``-r -``: standard
    input) into *into* (or a new set): *source* names it in errors, and the relative
    paths of its ``-r``, ``-c``, ``-e`` and ``--find-links`` lines are from *folder*."""
    result = into if into is not None else RequirementsSet()
    _parse(data, source, folder, constraint, result, 0)
    return result


def _parse(
    data: bytes, source: str, folder: Path, constraint: bool, result: RequirementsSet, depth: int
) -> None:
    """Add the lines of *data* (named *source*, its relative paths from *folder*)."""
    for number, line in _lines(data, source):
        where = f"{source}:{number}"
        split = _split_option(line)
        if split is None:
            line, hashes = _hash_options(line, where)
            if hashes and constraint:
                raise RequirementsFileError(
                    f"{where}: --hash belongs on a requirement, not a constraint"
                )
            if hashes:
                result.hashes[line] = (*result.hashes.get(line, ()), *hashes)
            try:
                label = split_variant_label(line).label
            except VariantRequirementError as exc:
                raise RequirementsFileError(f"{where}: {exc}") from None
            if label is not None and constraint:
                raise RequirementsFileError(
                    f"{where}: {line!r}: a variant label (#{label}) cannot be a constraint; "
                    "put it on the requirement, or use --variant"
                )
            (result.constraints if constraint else result.requirements).append(line)
            continue
        option, value = split
        flag = _FLAGS.get(option)
        if flag is not None and not value:
            setattr(result, flag, True)
            continue
        kind = _OPTIONS.get(option)
        if kind is None:
            raise RequirementsFileError(
                f"{where}: option {option} is not supported in requirements files "
                "(supported: -r, -c, -e, --index-url, --extra-index-url, --find-links, "
                "--no-index, --pre, --only-binary, --no-binary, --prefer-binary, --require-hashes, "
                "--trusted-host)"
            )
        if not value:
            raise RequirementsFileError(f"{where}: {option} needs a value")
        if kind in ("requirement", "constraint"):
            if "://" in value:
                raise RequirementsFileError(
                    f"{where}: {option} {value}: requirements files are read from this "
                    "machine, not from a URL; download it first"
                )
            nested = Path(value)
            if not nested.is_absolute():
                nested = folder / nested
            read_requirements(
                nested,
                constraint=constraint or kind == "constraint",
                into=result,
                _depth=depth + 1,
            )
        elif kind == "index_url":
            result.index_url = value
        elif kind == "extra_index_url":
            result.extra_index_urls.append(value)
        elif kind == "editable":
            local = "://" not in value and not value.startswith("file:")
            if local and not Path(value).is_absolute():
                value = str(folder / value)
            result.editables.append(value)
        elif kind == "only_binary":
            result.only_binary.append(value)
        elif kind == "no_binary":
            result.no_binary.append(value)
        elif kind == "trusted_host":
            try:
                result.trusted_hosts.append(parse_host(value))
            except InsecureHostError as exc:
                raise RequirementsFileError(f"{where}: {exc}") from None
        else:
            found = value
            if "://" not in value and not Path(value).is_absolute():
                found = str(folder / value)
            result.find_links.append(found)
