"""Reading and validating ``pylock.toml`` (PEP 751, with PEP 825 variant wheels).

Strict about shape: a missing required key, a value of the wrong type, an unknown key
(for lock-version 1.0), a wheel without hashes or whose file name does not parse, a
variant wheel whose label the inlined ``variants-json`` lacks: each is a
:class:`LockError` of one line, naming the file and the place in it
(``packages[3].wheels[1].hashes``; indices count from 0) and saying how to fix it.
A newer 1.x minor version is read for the keys this release knows; the result's
``warnings`` say so and name each key ignored. Another major version is refused.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from typing import Any

from packaging.markers import Marker
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

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
from wheelwise.policy.hashes import digest_hex_length
from wheelwise.untrusted_json import UntrustedDocumentError, loads_toml
from wheelwise.variants.errors import InvalidMetadata, VariantError
from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.schema import PEP825_SCHEMA_URL, SchemaVersion

__all__ = ["read_pylock"]

_VERSION_RE = re.compile(r"([0-9]{1,6})\.([0-9]{1,6})")
READ_MAJOR, READ_MINOR = 1, 0

_TOP_KEYS = (
    "lock-version",
    "environments",
    "requires-python",
    "extras",
    "dependency-groups",
    "default-groups",
    "created-by",
    "packages",
    "tool",
)
_PACKAGE_KEYS = (
    "name",
    "version",
    "marker",
    "requires-python",
    "dependencies",
    "vcs",
    "directory",
    "archive",
    "index",
    "sdist",
    "wheels",
    "attestation-identities",
    "tool",
    "variants-json",
)
_FILE_KEYS = ("name", "upload-time", "url", "path", "size", "hashes")
_ARCHIVE_KEYS = ("url", "path", "size", "upload-time", "hashes", "subdirectory")
_VCS_KEYS = ("type", "url", "path", "requested-revision", "commit-id", "subdirectory")
_DIRECTORY_KEYS = ("path", "editable", "subdirectory")
# Data kept as read ([tool], dependencies) may nest this deep: enough for any real
# table, and far from the interpreter's recursion limit when it is written again.
MAX_NESTING = 32
_HEX_RE = re.compile(r"[0-9a-fA-F]+")


def read_pylock(data: bytes | str, source: str = "pylock.toml") -> PyLock:
    """The validated lock in *data* (UTF-8 TOML); *source* names it in messages."""
    try:
        document = loads_toml(data)
    except UntrustedDocumentError as exc:
        raise LockError(f"{source}: {exc}; pylock.toml must be UTF-8 encoded TOML") from None
    return _Reader(source).lock(document)


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    kinds: tuple[tuple[type, str], ...] = (
        (str, "a string"),
        (int, "an integer"),
        (float, "a float"),
        (dict, "a table"),
        (list, "an array"),
        (datetime, "a date-time"),
        (date, "a date"),
        (time, "a time"),
    )
    for typ, name in kinds:
        if isinstance(value, typ):
            return name
    return type(value).__name__


class _Reader:
    """One file's validation; every error names the source and the key path."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.warnings: list[str] = []
        self.newer_minor = False
        self.version_text = ""

    def fail(self, where: str, message: str) -> LockError:
        return LockError(f"{self.source}: {where or 'top level'}: {message}")

    # -- shapes ---------------------------------------------------------------------

    def table(self, value: object, where: str) -> TomlTable:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a table, got {_kind(value)}")
        return value

    def string(self, value: object, where: str) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {_kind(value)}")
        return value

    def optional_string(self, table: TomlTable, key: str, where: str) -> str | None:
        if key not in table:
            return None
        return self.string(table[key], _at(where, key))

    def required(self, table: TomlTable, key: str, where: str) -> Any:
        if key not in table:
            raise self.fail(where, f"missing required key {key!r}; add it")
        return table[key]

    def strings(self, value: object, where: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array of strings, got {_kind(value)}")
        for index, item in enumerate(value):
            self.string(item, f"{where}[{index}]")
        return tuple(value)

    def tables(self, value: object, where: str) -> list[TomlTable]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array of tables, got {_kind(value)}")
        return [self.table(item, f"{where}[{index}]") for index, item in enumerate(value)]

    def kept(self, value: object, where: str) -> None:
        """Data kept as read must not nest deeper than MAX_NESTING."""
        pending: list[tuple[object, int]] = [(value, 0)]
        while pending:
            item, depth = pending.pop()
            if depth > MAX_NESTING:
                raise self.fail(where, f"nested deeper than {MAX_NESTING} levels; flatten it")
            if isinstance(item, dict):
                pending.extend((child, depth + 1) for child in item.values())
            elif isinstance(item, list):
                pending.extend((child, depth + 1) for child in item)

    def known_keys(self, table: TomlTable, known: tuple[str, ...], where: str) -> TomlTable:
        """*table* without the keys pylock.toml does not define: an error for
        lock-version 1.0, a warning (and the key ignored) for a newer minor."""
        unknown = [key for key in table if key not in known]
        if not unknown:
            return table
        if not self.newer_minor:
            raise self.fail(
                where,
                f"unknown key {unknown[0]!r}; pylock.toml {self.version_text} has no such "
                "key (tool-specific data belongs in [tool] or [packages.tool])",
            )
        for key in unknown:
            self.warnings.append(
                f"{self.source}: {_at(where, key) or 'top level'}: unknown key ignored "
                f"(lock-version {self.version_text})"
            )
        return {key: value for key, value in table.items() if key in known}

    # -- values ---------------------------------------------------------------------

    def marker(self, value: object, where: str) -> str:
        text = self.string(value, where)
        try:
            Marker(text)
        except (ValueError, RecursionError) as exc:
            hint = (
                "; variant markers belong only in dependency specifiers (PEP 825)"
                if "variant_" in text
                else ""
            )
            first = str(exc).strip().splitlines()
            reason = first[0] if first else "nested too deeply"
            raise self.fail(where, f"invalid environment marker {text!r}: {reason}{hint}") from None
        return text

    def specifiers(self, value: object, where: str) -> str:
        text = self.string(value, where)
        try:
            SpecifierSet(text)
        except ValueError as exc:
            raise self.fail(where, f"invalid version specifiers {text!r}: {exc}") from None
        return text

    def version(self, value: object, where: str) -> str:
        text = self.string(value, where)
        try:
            Version(text)
        except ValueError:
            raise self.fail(
                where, f"invalid version {text!r}; write a PEP 440 version such as '1.0'"
            ) from None
        return text

    def size(self, value: object, where: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.fail(where, f"expected the file size in bytes, got {value!r}")
        return value

    def upload_time(self, value: object, where: str) -> datetime:
        if not isinstance(value, datetime):
            raise self.fail(
                where,
                f"expected a TOML date-time such as 2025-01-01T00:00:00Z, got {_kind(value)}",
            )
        offset = value.utcoffset()
        if offset is not None and offset != timedelta(0):
            raise self.fail(where, f"{value.isoformat()} is not in UTC; record it in UTC ('Z')")
        return value

    def hashes(self, table: TomlTable, where: str) -> dict[str, str]:
        if "hashes" not in table:
            raise self.fail(
                where,
                "missing required key 'hashes'; add the file's hashes, e.g. "
                "hashes = { sha256 = '...' }",
            )
        where = _at(where, "hashes")
        raw = self.table(table["hashes"], where)
        if not raw:
            raise self.fail(where, "needs at least one hash; add e.g. sha256 = '...'")
        result: dict[str, str] = {}
        for algorithm, digest in raw.items():
            digest = self.string(digest, _at(where, algorithm))
            length = digest_hex_length(algorithm)
            if length is not None and (len(digest) != length or not _HEX_RE.fullmatch(digest)):
                raise self.fail(
                    _at(where, algorithm),
                    f"expected {length} hexadecimal digits, got {digest!r}",
                )
            if not digest:
                raise self.fail(_at(where, algorithm), "empty hash value")
            result[algorithm] = digest
        return result

    def located(self, table: TomlTable, where: str) -> tuple[str | None, str | None]:
        url = self.optional_string(table, "url", where)
        path = self.optional_string(table, "path", where)
        if url is None and path is None:
            raise self.fail(where, "needs 'url' or 'path' to say where the file is")
        return url, path

    # -- the document ---------------------------------------------------------------

    def lock(self, document: TomlTable) -> PyLock:
        self.lock_version(self.required(document, "lock-version", ""))
        document = self.known_keys(document, _TOP_KEYS, "")
        created_by = self.string(self.required(document, "created-by", ""), "created-by")
        environments = None
        if "environments" in document:
            environments = self.strings(document["environments"], "environments")
            for index, text in enumerate(environments):
                self.marker(text, f"environments[{index}]")
        requires_python = None
        if "requires-python" in document:
            requires_python = self.specifiers(document["requires-python"], "requires-python")
        lists = {
            key: self.strings(document.get(key, []), key)
            for key in ("extras", "dependency-groups", "default-groups")
        }
        packages = tuple(
            self.package(table, f"packages[{index}]")
            for index, table in enumerate(
                self.tables(self.required(document, "packages", ""), "packages")
            )
        )
        tool = None
        if "tool" in document:
            tool = self.table(document["tool"], "tool")
            self.kept(tool, "tool")
        return PyLock(
            lock_version=self.version_text,
            environments=environments,
            requires_python=requires_python,
            extras=lists["extras"],
            dependency_groups=lists["dependency-groups"],
            default_groups=lists["default-groups"],
            created_by=created_by,
            packages=packages,
            tool=tool,
            source=self.source,
            warnings=tuple(self.warnings),
        )

    def lock_version(self, value: object) -> None:
        text = self.string(value, "lock-version")
        match = _VERSION_RE.fullmatch(text)
        if match is None:
            raise self.fail("lock-version", f"expected a version such as '1.0', got {text!r}")
        major, minor = int(match[1]), int(match[2])
        if major != READ_MAJOR:
            raise self.fail(
                "lock-version",
                f"unsupported lock-version {text!r}: this wheelwise reads "
                f"{READ_MAJOR}.x lock files only; upgrade wheelwise",
            )
        self.version_text = text
        if minor > READ_MINOR:
            self.newer_minor = True
            self.warnings.append(
                f"{self.source}: lock-version {text} is newer than the "
                f"{READ_MAJOR}.{READ_MINOR} this wheelwise knows; keys it does not know "
                "are ignored"
            )

    def package(self, raw: TomlTable, where: str) -> Package:
        table = self.known_keys(raw, _PACKAGE_KEYS, where)
        name = self.string(self.required(table, "name", where), _at(where, "name"))
        try:
            normalized = canonicalize_name(name, validate=True)
        except ValueError:
            raise self.fail(_at(where, "name"), f"invalid package name {name!r}") from None
        if name != normalized:
            raise self.fail(
                _at(where, "name"),
                f"package name {name!r} is not normalized; write {normalized!r}",
            )
        version = None
        if "version" in table:
            version = self.version(table["version"], _at(where, "version"))
        marker = None
        if "marker" in table:
            marker = self.marker(table["marker"], _at(where, "marker"))
        requires_python = None
        if "requires-python" in table:
            requires_python = self.specifiers(
                table["requires-python"], _at(where, "requires-python")
            )
        dependencies = tuple(self.tables(table.get("dependencies", []), _at(where, "dependencies")))
        self.kept(list(dependencies), _at(where, "dependencies"))
        identities = tuple(
            self.tables(
                table.get("attestation-identities", []), _at(where, "attestation-identities")
            )
        )
        for index, identity in enumerate(identities):
            at = f"{_at(where, 'attestation-identities')}[{index}]"
            self.string(self.required(identity, "kind", at), _at(at, "kind"))
        self.kept(list(identities), _at(where, "attestation-identities"))
        self.exclusive_sources(table, where)
        wheels = tuple(
            self.wheel(item, f"{_at(where, 'wheels')}[{index}]")
            for index, item in enumerate(self.tables(table.get("wheels", []), _at(where, "wheels")))
        )
        variants_json = (
            self.variants_json(table["variants-json"], _at(where, "variants-json"))
            if "variants-json" in table
            else None
        )
        self.check_wheels(name, version, wheels, variants_json, where)
        return Package(
            name=name,
            version=version,
            marker=marker,
            requires_python=requires_python,
            dependencies=dependencies,
            vcs=self.vcs(table["vcs"], _at(where, "vcs")) if "vcs" in table else None,
            directory=(
                self.directory(table["directory"], _at(where, "directory"))
                if "directory" in table
                else None
            ),
            archive=(
                self.archive(table["archive"], _at(where, "archive"))
                if "archive" in table
                else None
            ),
            index=self.optional_string(table, "index", where),
            sdist=self.sdist(table["sdist"], _at(where, "sdist")) if "sdist" in table else None,
            wheels=wheels,
            attestation_identities=identities,
            variants_json=variants_json,
            tool=self.tool(table, where),
        )

    def tool(self, table: TomlTable, where: str) -> TomlTable | None:
        if "tool" not in table:
            return None
        tool = self.table(table["tool"], _at(where, "tool"))
        self.kept(tool, _at(where, "tool"))
        return tool

    def exclusive_sources(self, table: TomlTable, where: str) -> None:
        sources = [key for key in ("vcs", "directory", "archive") if key in table]
        files = [key for key in ("sdist", "wheels") if key in table]
        if len(sources) > 1 or (sources and files):
            first, second = [*sources, *files][:2]
            raise self.fail(
                where,
                f"{first!r} and {second!r} are mutually exclusive; keep one source",
            )

    def check_wheels(
        self,
        package: str,
        version: str | None,
        wheels: tuple[Wheel, ...],
        variants_json: VariantsJson | None,
        where: str,
    ) -> None:
        """File names parse, belong to the package, appear once; each variant label
        is in ``variants-json``. *wheels* are in file order, for the messages."""
        seen: set[str] = set()
        variant_wheel = None
        for index, wheel in enumerate(wheels):
            at = f"{_at(where, 'wheels')}[{index}]"
            name = wheel.filename
            try:
                parsed = WheelFilename.parse(name)
                parsed_version = parsed.version
            except ValueError as exc:  # VariantError, or int() refusing a huge number
                reason = str(exc) if isinstance(exc, VariantError) else f"{name!r}: {exc}"
                raise self.fail(
                    at, f"{reason}; give the wheel's file name in 'name', 'url' or 'path'"
                ) from None
            if parsed.name != package:
                raise self.fail(at, f"wheel {name!r} is not a wheel of {package!r}")
            if version is not None and parsed_version != Version(version):
                raise self.fail(at, f"wheel {name!r} is not version {version} of {package}")
            if name in seen:
                raise self.fail(at, f"wheel {name!r} is listed twice; keep one entry")
            seen.add(name)
            label = parsed.variant_label
            if label is None:
                continue
            variant_wheel = variant_wheel or name
            if variants_json is not None and label not in variants_json.labels:
                raise self.fail(
                    at,
                    f"variant label {label!r} of {name!r} is missing from variants-json; "
                    f"add variants-json.variants.{label} from the release's *-variants.json",
                )
        if variant_wheel is not None and variants_json is None:
            raise self.fail(
                where,
                f"variant wheels ({variant_wheel!r}) but no [packages.variants-json]; "
                "inline the release's *-variants.json there (PEP 825)",
            )

    # -- sources --------------------------------------------------------------------

    def file_fields(self, raw: object, where: str) -> dict[str, Any]:
        table = self.known_keys(self.table(raw, where), _FILE_KEYS, where)
        url, path = self.located(table, where)
        return {
            "name": self.optional_string(table, "name", where),
            "upload_time": (
                self.upload_time(table["upload-time"], _at(where, "upload-time"))
                if "upload-time" in table
                else None
            ),
            "url": url,
            "path": path,
            "size": self.size(table["size"], _at(where, "size")) if "size" in table else None,
            "hashes": self.hashes(table, where),
        }

    def wheel(self, raw: object, where: str) -> Wheel:
        wheel = Wheel(**self.file_fields(raw, where))
        if not wheel.filename:
            raise self.fail(where, "cannot tell the wheel's file name; give it in 'name'")
        return wheel

    def sdist(self, raw: object, where: str) -> Sdist:
        return Sdist(**self.file_fields(raw, where))

    def archive(self, raw: object, where: str) -> Archive:
        table = self.known_keys(self.table(raw, where), _ARCHIVE_KEYS, where)
        url, path = self.located(table, where)
        return Archive(
            url=url,
            path=path,
            size=self.size(table["size"], _at(where, "size")) if "size" in table else None,
            upload_time=(
                self.upload_time(table["upload-time"], _at(where, "upload-time"))
                if "upload-time" in table
                else None
            ),
            hashes=self.hashes(table, where),
            subdirectory=self.optional_string(table, "subdirectory", where),
        )

    def vcs(self, raw: object, where: str) -> Vcs:
        table = self.known_keys(self.table(raw, where), _VCS_KEYS, where)
        url, path = self.located(table, where)
        return Vcs(
            type=self.string(self.required(table, "type", where), _at(where, "type")),
            url=url,
            path=path,
            requested_revision=self.optional_string(table, "requested-revision", where),
            commit_id=self.string(
                self.required(table, "commit-id", where), _at(where, "commit-id")
            ),
            subdirectory=self.optional_string(table, "subdirectory", where),
        )

    def directory(self, raw: object, where: str) -> Directory:
        table = self.known_keys(self.table(raw, where), _DIRECTORY_KEYS, where)
        editable = table.get("editable", False)
        if not isinstance(editable, bool):
            raise self.fail(
                _at(where, "editable"), f"expected true or false, got {_kind(editable)}"
            )
        return Directory(
            path=self.string(self.required(table, "path", where), _at(where, "path")),
            editable=editable,
            subdirectory=self.optional_string(table, "subdirectory", where),
        )

    def variants_json(self, raw: object, where: str) -> VariantsJson:
        document = self.table(raw, where)
        self.kept(document, where)
        if "$schema" not in document:
            raise self.fail(
                where,
                "missing required key '$schema'; PEP 825 keeps it, e.g. "
                f'"$schema" = "{PEP825_SCHEMA_URL}"',
            )
        try:
            # A legacy draft is read too, as the index would serve it: its providers
            # and priorities choose the wheel, and PEP 825's format cannot hold them.
            SchemaVersion.from_url(document["$schema"])
        except InvalidMetadata as exc:
            raise self.fail(_at(where, "$schema"), str(exc)) from None
        try:
            return VariantsJson(document, source=f"{self.source}: {where}")
        except VariantError as exc:
            raise LockError(str(exc)) from None
