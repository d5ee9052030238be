"""Writing ``pylock.toml``: one layout, so that a lock's diff shows only what changed.

Keys in the order PEP 751 lists them; packages by name then version, wheels by file
name, hashes by algorithm (the model keeps the first two in order). A package's
``sdist``, ``vcs``, ``directory`` and ``archive`` are inline tables, its
``wheels``, ``dependencies`` and ``attestation-identities`` arrays of inline tables,
one per line; ``[packages.variants-json]`` is a section with one inline table per
label, as in PEP 825's example. The text is read back before it is returned, so
what this writes is always a lock :func:`read_pylock` accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wheelwise.lock.errors import LockError
from wheelwise.lock.pylock import (
    Archive,
    Directory,
    Package,
    PyLock,
    Sdist,
    TomlTable,
    VariantsJson,
    Vcs,
    Wheel,
)
from wheelwise.lock.reader import read_pylock
from wheelwise.lock.toml_layout import KeyPath, dump_layout

__all__ = ["write_pylock"]

_INLINE_SOURCES = frozenset(
    {("packages", "sdist"), ("packages", "vcs"), ("packages", "directory"), ("packages", "archive")}
)
_VARIANTS = ("packages", "variants-json", "variants")


def write_pylock(lock: PyLock) -> str:
    """The text of *lock* (UTF-8 when encoded), ending with a newline.

    A lock that would not read back (a wheel without hashes, a variant label
    missing from ``variants-json``, ...) is a LockError naming what is wrong."""
    text = dump_layout(
        _lock_table(lock),
        inline=_inline,
        arrays_of_tables=frozenset({("packages",)}),
    )
    try:
        read_pylock(text, source=lock.source)
    except LockError as exc:
        raise LockError(f"cannot write an invalid lock: {exc}") from None
    return text


def _inline(path: KeyPath) -> bool:
    return path in _INLINE_SOURCES or (len(path) > len(_VARIANTS) and path[:3] == _VARIANTS)


def _lock_table(lock: PyLock) -> dict[str, Any]:
    table: dict[str, Any] = {"lock-version": lock.lock_version}
    if lock.environments is not None:
        table["environments"] = list(lock.environments)
    if lock.requires_python is not None:
        table["requires-python"] = lock.requires_python
    table["extras"] = list(lock.extras)
    table["dependency-groups"] = list(lock.dependency_groups)
    table["default-groups"] = list(lock.default_groups)
    table["created-by"] = lock.created_by
    table["packages"] = [_package_table(package) for package in lock.packages]
    if lock.tool is not None:
        table["tool"] = _sorted_table(lock.tool)
    return table


def _package_table(package: Package) -> dict[str, Any]:
    table: dict[str, Any] = {"name": package.name}
    _put(table, "version", package.version)
    _put(table, "marker", package.marker)
    _put(table, "requires-python", package.requires_python)
    if package.dependencies:
        table["dependencies"] = [_sorted_table(d) for d in package.dependencies]
    if package.vcs is not None:
        table["vcs"] = _vcs_table(package.vcs)
    if package.directory is not None:
        table["directory"] = _directory_table(package.directory)
    if package.archive is not None:
        table["archive"] = _archive_table(package.archive)
    _put(table, "index", package.index)
    if package.sdist is not None:
        table["sdist"] = _file_table(package.sdist)
    if package.wheels:
        table["wheels"] = [_file_table(wheel) for wheel in package.wheels]
    if package.attestation_identities:
        table["attestation-identities"] = [
            _sorted_table(identity, first=("kind",)) for identity in package.attestation_identities
        ]
    if package.variants_json is not None:
        table["variants-json"] = _variants_json_table(package.variants_json)
    if package.tool is not None:
        table["tool"] = _sorted_table(package.tool)
    return table


def _put(table: dict[str, Any], key: str, value: object) -> None:
    if value is not None:
        table[key] = value


def _hashes(hashes: Mapping[str, str]) -> dict[str, str]:
    return dict(sorted(hashes.items()))


def _file_table(file: Wheel | Sdist) -> dict[str, Any]:
    table: dict[str, Any] = {}
    _put(table, "name", file.name)
    _put(table, "upload-time", file.upload_time)
    _put(table, "url", file.url)
    _put(table, "path", file.path)
    _put(table, "size", file.size)
    table["hashes"] = _hashes(file.hashes)
    return table


def _archive_table(archive: Archive) -> dict[str, Any]:
    table: dict[str, Any] = {}
    _put(table, "url", archive.url)
    _put(table, "path", archive.path)
    _put(table, "size", archive.size)
    _put(table, "upload-time", archive.upload_time)
    table["hashes"] = _hashes(archive.hashes)
    _put(table, "subdirectory", archive.subdirectory)
    return table


def _vcs_table(vcs: Vcs) -> dict[str, Any]:
    table: dict[str, Any] = {"type": vcs.type}
    _put(table, "url", vcs.url)
    _put(table, "path", vcs.path)
    _put(table, "requested-revision", vcs.requested_revision)
    table["commit-id"] = vcs.commit_id
    _put(table, "subdirectory", vcs.subdirectory)
    return table


def _directory_table(directory: Directory) -> dict[str, Any]:
    table: dict[str, Any] = {"path": directory.path}
    if directory.editable:
        table["editable"] = True
    _put(table, "subdirectory", directory.subdirectory)
    return table


def _variants_json_table(variants_json: VariantsJson) -> dict[str, Any]:
    """``$schema``, ``default-priorities`` (its namespace list in priority order),
    ``variants`` by label, then any keys of a newer schema, sorted."""
    return _sorted_table(variants_json.document, first=("$schema", "default-priorities"))


def _sorted_table(table: TomlTable, first: tuple[str, ...] = ()) -> dict[str, Any]:
    """*table* with its keys (and those of the tables in it) sorted, *first* first.
    Arrays keep their order: in variant metadata it is a priority order."""
    keys = [key for key in first if key in table]
    keys += sorted(key for key in table if key not in first)
    return {key: _sorted_value(table[key]) for key in keys}


def _sorted_value(value: object) -> object:
    if isinstance(value, dict):
        return _sorted_table(value)
    if isinstance(value, list):
        return [_sorted_value(item) for item in value]
    return value
