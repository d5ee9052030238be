"""Requirements a ``pyproject.toml`` names, as uv and pip read them.

``-r pyproject.toml`` gives the ``[project]`` table's ``dependencies``, plus the
``optional-dependencies`` of each extra asked for (``--extra NAME``,
``--all-extras``); an extra that names the project itself (``all = ["me[gpu,docs]"]``)
is expanded in place, its marker joined to theirs. ``--group [PATH:]NAME`` gives a
PEP 735 dependency group, read by the ``dependency-groups`` library (the
specification's own). Dependencies the build backend computes (``dynamic``) cannot
be read from the file: installing the project folder builds them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.markers import Marker, default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from wheelwise.resolve.reqfile import RequirementsFileError
from wheelwise.untrusted_json import UntrustedDocumentError, loads_toml
from wheelwise.userfiles import NotARegularFile, read_regular_file

__all__ = ["group_requirements", "is_project_file", "project_requirements", "split_group"]

PROJECT_FILE = "pyproject.toml"


def is_project_file(path: Path) -> bool:
    """Whether ``-r`` names a project's ``pyproject.toml`` rather than a requirements file."""
    return path.name == PROJECT_FILE


def read_project_file(path: Path, missing: str = "") -> dict[str, Any]:
    """The decoded TOML of *path*; a RequirementsFileError saying why it cannot be
    (*missing* added when there is no such file)."""
    try:
        return loads_toml(read_regular_file(path))
    except FileNotFoundError:
        raise RequirementsFileError(f"{path}: file not found{missing}") from None
    except NotARegularFile as exc:
        raise RequirementsFileError(f"{path}: {exc.strerror}") from None
    except OSError as exc:
        raise RequirementsFileError(f"{path}: cannot be read ({exc.strerror})") from None
    except UntrustedDocumentError as exc:
        raise RequirementsFileError(f"{path}: {exc}") from None


def _strings(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RequirementsFileError(f"{where}: expected a list of requirement strings")
    return value


def _parsed(text: str, where: str) -> Requirement:
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid"
        raise RequirementsFileError(f"{where}: {text!r} is not a requirement ({first})") from None
    url = requirement.url
    if url is not None and url.lower().startswith("file:") and not url[5:].startswith("/"):
        # Relative to what? PEP 508 URLs are absolute; uv refuses these too.
        raise RequirementsFileError(
            f"{where}: {text!r}: a relative file: URL; write it as file:///ABSOLUTE/PATH"
        )
    return requirement


def _joined(requirement: Requirement, outer: Marker | None) -> str:
    """*requirement* under the marker *outer* as well as its own."""
    if outer is not None:
        own = requirement.marker
        requirement.marker = Marker(f"({own}) and ({outer})") if own else outer
    return str(requirement)


class _Project:
    """The ``[project]`` table of one file, checked as it is read."""

    def __init__(self, path: Path, document: Mapping[str, Any]) -> None:
        table = document.get("project")
        if not isinstance(table, dict):
            raise RequirementsFileError(
                f"{path}: no [project] table, so no dependencies to read; give the "
                "requirements in a requirements file, or --group NAME for a dependency group"
            )
        self.path = path
        name = table.get("name")
        self.name = canonicalize_name(name) if isinstance(name, str) else None
        dynamic = table.get("dynamic", [])
        self.dynamic = (
            {key for key in dynamic if isinstance(key, str)} if isinstance(dynamic, list) else set()
        )
        self.table = table

    def _dynamic(self, key: str) -> RequirementsFileError:
        return RequirementsFileError(
            f"{self.path}: project.{key} is dynamic (the build backend computes it), so it "
            f"cannot be read from the file; install the project instead: "
            f"wheelwise install {self.path.parent}"
        )

    def dependencies(self) -> list[str]:
        if "dependencies" in self.dynamic:
            raise self._dynamic("dependencies")
        return _strings(self.table.get("dependencies", []), f"{self.path}: project.dependencies")

    def extras(self) -> dict[str, list[str]]:
        if "optional-dependencies" in self.dynamic:
            raise self._dynamic("optional-dependencies")
        table = self.table.get("optional-dependencies", {})
        where = f"{self.path}: project.optional-dependencies"
        if not isinstance(table, dict):
            raise RequirementsFileError(f"{where}: expected a table of extras")
        # PEP 685: extras compare by their normalized names.
        return {
            canonicalize_name(extra): _strings(items, f"{where}.{extra}")
            for extra, items in table.items()
        }

    def expand(
        self,
        texts: Iterable[str],
        where: str,
        extras: Mapping[str, list[str]],
        within: frozenset[str] = frozenset(),
    ) -> list[str]:
        """*texts* (those of the extras *within*), with each requirement on the
        project itself replaced by the requirements of the extras it names."""
        found: list[str] = []
        no_marker: Marker | None = None
        pending = [(text, no_marker, where, within, _only(within)) for text in texts]
        while pending:
            text, outer, at, seen, extra_of = pending.pop(0)
            requirement = _parsed(text, at)
            if self.name is None or canonicalize_name(requirement.name) != self.name:
                if _for_extra(requirement, extra_of, at):
                    found.append(_joined(requirement, outer))
                continue
            if requirement.url or requirement.specifier:
                raise RequirementsFileError(
                    f"{at}: {text!r} names the project itself with a version or URL; name "
                    "only its extras (NAME[EXTRA])"
                )
            marker = _outer_of(requirement, outer)
            for extra in sorted(canonicalize_name(e) for e in requirement.extras):
                if extra in seen:
                    continue  # an extra reached again through another names nothing new
                if extra not in extras:
                    raise _no_extra(self.path, extra, extras)
                inner = f"{self.path}: project.optional-dependencies.{extra}"
                pending.extend(
                    (item, marker, inner, seen | {extra}, extra) for item in extras[extra]
                )
        return found


def _only(extras: frozenset[str]) -> str | None:
    return next(iter(extras)) if len(extras) == 1 else None


# A marker's variables: its words outside quoted values, less the operators.
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_OPERATORS = {"and", "or", "in", "not"}


def _for_extra(requirement: Requirement, extra: str | None, at: str) -> bool:
    """Whether *requirement*, read for *extra* (None: not an extra's), applies: a
    marker on ``extra`` alone (``extra == 'gpu'`` in the gpu extra's list, as some
    projects write it) holds or not for that extra, and is then dropped; one that
    also reads the machine cannot be split here."""
    marker = requirement.marker
    if marker is None:
        return True
    words = set(_WORD.findall(_QUOTED.sub("", str(marker)))) - _OPERATORS
    if "extra" not in words:
        return True
    if words != {"extra"}:
        raise RequirementsFileError(
            f"{at}: {str(requirement)!r}: a marker on extra and on the machine at once "
            "cannot be read from the file; drop the extra part (the list is that extra's)"
        )
    environment: dict[str, str] = {key: str(value) for key, value in default_environment().items()}
    holds = marker.evaluate({**environment, "extra": extra or ""})
    requirement.marker = None
    return holds


def _outer_of(requirement: Requirement, outer: Marker | None) -> Marker | None:
    """The marker the extras of a self-reference are under: its own and *outer*."""
    own = requirement.marker
    if own is None:
        return outer
    if outer is None:
        return own
    return Marker(f"({own}) and ({outer})")


def _no_extra(path: Path, extra: str, extras: Mapping[str, object]) -> RequirementsFileError:
    known = ", ".join(sorted(extras)) or "none"
    return RequirementsFileError(
        f"{path}: the project has no extra {extra!r} (its extras: {known})"
    )


def project_requirements(path: Path, extras: Sequence[str], all_extras: bool) -> list[str]:
    """The requirements ``-r pyproject.toml`` gives, with the extras asked for."""
    project = _Project(path, read_project_file(path))
    where = f"{path}: project.dependencies"
    wanted: list[str] = [canonicalize_name(extra) for extra in extras]
    known = project.extras() if wanted or all_extras or _names_itself(project) else {}
    if not wanted and not all_extras:
        return project.expand(project.dependencies(), where, known)
    for extra in wanted:
        if extra not in known:
            raise _no_extra(path, extra, known)
    chosen = sorted(known) if all_extras else list(dict.fromkeys(wanted))
    found = project.expand(project.dependencies(), where, known)
    for extra in chosen:
        inner = f"{path}: project.optional-dependencies.{extra}"
        found.extend(project.expand(known[extra], inner, known, frozenset({extra})))
    return list(dict.fromkeys(found))


def _names_itself(project: _Project) -> bool:
    """Whether the project's dependencies name the project itself (``me[gpu]``)."""
    return any(
        project.name is not None and canonicalize_name(_parsed(text, "").name) == project.name
        for text in project.dependencies()
    )


def split_group(given: str) -> tuple[Path, str]:
    """``[PATH:]NAME`` as pip's ``--group`` takes it: the file (``pyproject.toml``
    here when no path is given) and the group's name."""
    path, sep, name = given.rpartition(":")
    if not name.strip():
        raise RequirementsFileError(f"--group {given!r}: expected [PATH:]NAME")
    file = Path(path) if sep and path else Path(PROJECT_FILE)
    if file.name != PROJECT_FILE:
        raise RequirementsFileError(
            f"--group {given!r}: dependency groups are read from a pyproject.toml, not {file.name}"
        )
    return file, name.strip()


def group_requirements(path: Path, names: Sequence[str]) -> list[str]:
    """The requirements of the dependency groups *names* of *path* (PEP 735)."""
    from dependency_groups import resolve

    hint = " (--group reads the pyproject.toml here; give PATH:NAME for another)"
    table = read_project_file(path, hint if path == Path(PROJECT_FILE) else "").get(
        "dependency-groups"
    )
    if not isinstance(table, dict):
        raise RequirementsFileError(
            f"{path}: no [dependency-groups] table, so no group {names[0]!r}"
        )
    try:
        found = resolve(table, *names)
    except LookupError as exc:
        missing = [n for n in names if canonicalize_name(n) not in _group_names(table)]
        # A TOML key may hold any character: one that is not printable is quoted,
        # so that the message stays one line.
        known = ", ".join(sorted(_shown(str(name)) for name in table)) or "none"
        if not missing:  # a group asked for includes one there is not
            shown = str(exc).replace("\n", "\\n")
            raise RequirementsFileError(f"{path}: [dependency-groups]: {shown}") from None
        raise RequirementsFileError(
            f"{path}: no dependency group {', '.join(map(repr, missing))} (its groups: {known})"
        ) from None
    except (ValueError, TypeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RequirementsFileError(f"{path}: [dependency-groups]: {first}") from None
    where = f"{path}: [dependency-groups]"
    return [str(_parsed(text, where)) for text in dict.fromkeys(found)]


def _group_names(table: Mapping[object, object]) -> set[str]:
    return {canonicalize_name(name) for name in table if isinstance(name, str)}


def _shown(name: str) -> str:
    """*name* as written when it is printable, else quoted (``'a\\nb'``)."""
    return name if name.isprintable() else repr(name)
