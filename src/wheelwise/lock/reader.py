"""Reading and validating ``pylock.toml`` (PEP 751, with PEP 825 variant wheels).

``packaging.pylock`` validates the standard parts: types, required keys, one source
per package, normalized names, versions, markers, specifiers, and that each file name
belongs to its package. This module adds what it leaves to tools: the lock-version
policy (a newer 1.x minor is read for the keys this release knows, with
``warnings`` naming each key ignored; another major is refused), unknown keys refused
in a 1.0 lock, hash digests of the right length, upload times in UTC, a wheel listed
once, a nesting bound on data kept as read, and PEP 825's ``[packages.variants-json]``
with the variant labels of the wheels. packaging does not know variant wheel names:
it checks each variant wheel under its name without the label, and the entry keeps
its own.

Every error is a :class:`LockError` of one line naming the file and the place in it
(``packages[3].wheels[1].hashes``; indices count from 0) and saying how to fix it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import date, datetime, time, timedelta
from typing import Any

from packaging.pylock import Package as StandardPackage
from packaging.pylock import PackageWheel, Pylock, PylockValidationError
from packaging.utils import canonicalize_name

from wheelwise.lock.errors import LockError
from wheelwise.lock.pylock import Package, PyLock, TomlTable, VariantsJson, file_name_of
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
_SOURCE_KEYS = {
    "sdist": _FILE_KEYS,
    "archive": ("url", "path", "size", "upload-time", "hashes", "subdirectory"),
    "vcs": ("type", "url", "path", "requested-revision", "commit-id", "subdirectory"),
    "directory": ("path", "editable", "subdirectory"),
}
# Data kept as read ([tool], dependencies) may nest this deep: enough for any real
# table, and far from the interpreter's recursion limit when it is written again.
MAX_NESTING = 32
_HEX_RE = re.compile(r"[0-9a-fA-F]+")
# packaging's messages that this module says in its own words.
_UNEXPECTED_TYPE = re.compile(r"Unexpected type (\w+) \(expected (\w+)\)")
_EXPECTED = {
    "str": "a string",
    "int": "an integer",
    "bool": "true or false",
    "datetime": "a TOML date-time such as 2025-01-01T00:00:00Z",
    "Mapping": "a table",
    "Sequence": "an array",
}
_ARRAYS_OF_TABLES = ("packages", "wheels", "dependencies", "attestation-identities")
_PATH_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


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


def _value_at(document: object, path: str) -> object:
    """The value at *path* (``packages[0].wheels[1].size``) in *document*, or None."""
    value = document
    for key, index in _PATH_STEP.findall(path):
        if key and isinstance(value, dict):
            value = value.get(key)
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return None
    return value


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


class _Reader:
    """One file's validation; every error names the source and the key path."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.warnings: list[str] = []
        self.newer_minor = False
        self.version_text = ""
        # The place of each variant wheel -> its file name (packaging sees it without
        # the label).
        self.original_names: dict[str, str] = {}

    def fail(self, where: str, message: str) -> LockError:
        return LockError(f"{self.source}: {where or 'top level'}: {message}")

    # -- the document ---------------------------------------------------------------

    def lock(self, document: TomlTable) -> PyLock:
        if "lock-version" not in document:
            raise self.fail("", "missing required key 'lock-version'; add it")
        self.lock_version(document["lock-version"])
        document = self.known_keys(document, _TOP_KEYS, "")
        standard = dict(document, **{"lock-version": f"{READ_MAJOR}.{READ_MINOR}"})
        variants: dict[int, object] = {}
        names: dict[tuple[int, int], str | None] = {}
        raw_packages = document.get("packages")
        if isinstance(raw_packages, list):
            standard["packages"] = [
                self.standard_package(raw, index, variants, names)
                for index, raw in enumerate(raw_packages)
            ]
        try:
            parsed = Pylock.from_dict(standard)
        except PylockValidationError as exc:
            raise self.translated(exc, standard) from None
        packages = tuple(
            self.package(standard["packages"][index], found, index, variants, names)
            for index, found in enumerate(parsed.packages)
        )
        if "tool" in document:
            self.kept(document["tool"], "tool")
        return PyLock(
            lock_version=self.version_text,
            environments=None if parsed.environments is None else tuple(document["environments"]),
            requires_python=document.get("requires-python"),
            extras=tuple(parsed.extras or ()),
            dependency_groups=tuple(parsed.dependency_groups or ()),
            default_groups=tuple(parsed.default_groups or ()),
            created_by=parsed.created_by,
            packages=packages,
            tool=document.get("tool"),
            source=self.source,
            warnings=tuple(self.warnings),
        )

    def lock_version(self, value: object) -> None:
        if not isinstance(value, str):
            raise self.fail("lock-version", f"expected a string, got {_kind(value)}")
        match = _VERSION_RE.fullmatch(value)
        if match is None:
            raise self.fail("lock-version", f"expected a version such as '1.0', got {value!r}")
        major, minor = int(match[1]), int(match[2])
        if major != READ_MAJOR:
            raise self.fail(
                "lock-version",
                f"unsupported lock-version {value!r}: this wheelwise reads "
                f"{READ_MAJOR}.x lock files only; upgrade wheelwise",
            )
        self.version_text = value
        if minor > READ_MINOR:
            self.newer_minor = True
            self.warnings.append(
                f"{self.source}: lock-version {value} is newer than the "
                f"{READ_MAJOR}.{READ_MINOR} this wheelwise knows; keys it does not know "
                "are ignored"
            )

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

    def standard_package(
        self,
        raw: object,
        index: int,
        variants: dict[int, object],
        names: dict[tuple[int, int], str | None],
    ) -> object:
        """The package table as packaging reads it: known keys only, no
        ``variants-json`` (kept in *variants*), variant wheels named without their
        label (their own ``name``, or None, kept in *names*)."""
        if not isinstance(raw, dict):
            return raw
        where = f"packages[{index}]"
        table = dict(self.known_keys(raw, _PACKAGE_KEYS, where))
        if "variants-json" in table:
            variants[index] = table.pop("variants-json")
        for key, known in _SOURCE_KEYS.items():
            if isinstance(table.get(key), dict):
                table[key] = self.known_keys(table[key], known, _at(where, key))
        wheels = table.get("wheels")
        if isinstance(wheels, list):
            table["wheels"] = [
                self.standard_wheel(wheel, f"{where}.wheels[{position}]", (index, position), names)
                for position, wheel in enumerate(wheels)
            ]
        return table

    def standard_wheel(
        self,
        raw: object,
        where: str,
        key: tuple[int, int],
        names: dict[tuple[int, int], str | None],
    ) -> object:
        if not isinstance(raw, dict):
            return raw
        table = self.known_keys(raw, _FILE_KEYS, where)
        located = [table.get(k) for k in ("name", "path", "url")]
        if not all(value is None or isinstance(value, str) for value in located):
            return table  # packaging names the value of the wrong type
        filename = file_name_of(*located)
        if not filename:
            return table  # packaging asks for 'url' or 'path'
        try:
            parsed = WheelFilename.parse(filename)
        except ValueError as exc:  # VariantError, or int() refusing a huge number
            reason = str(exc) if isinstance(exc, VariantError) else f"{filename!r}: {exc}"
            raise self.fail(
                where, f"{reason}; give the wheel's file name in 'name', 'url' or 'path'"
            ) from None
        if parsed.variant_label is None:
            return table
        names[key] = table.get("name")
        self.original_names[where] = filename
        return {**table, "name": str(parsed.without_variant())}

    # -- packaging's errors, in this module's words -----------------------------------

    def translated(self, exc: PylockValidationError, document: TomlTable) -> LockError:
        context = exc.context or ""
        parent, _, key = context.rpartition(".")
        key = re.sub(r"\[\d+\]$", "", key)
        message = exc.message
        value = _value_at(document, context)
        if message == "Missing required value":
            if key == "hashes":
                return self.fail(
                    parent,
                    "missing required key 'hashes'; add the file's hashes, e.g. "
                    "hashes = { sha256 = '...' }",
                )
            return self.fail(parent, f"missing required key {key!r}; add it")
        typed = _UNEXPECTED_TYPE.fullmatch(message)
        if typed is not None:
            if key == "size":
                return self.fail(context, f"expected the file size in bytes, got {value!r}")
            expected = _EXPECTED.get(typed[2], typed[2])
            if typed[2] == "Sequence":
                expected += " of tables" if key in _ARRAYS_OF_TABLES else " of strings"
            return self.fail(context, f"expected {expected}, got {_kind(value)}")
        if key in ("marker", "environments"):
            hint = (
                "; variant markers belong only in dependency specifiers (PEP 825)"
                if "variant_" in str(value)
                else ""
            )
            return self.fail(
                context,
                f"invalid environment marker {value!r}: {_first_line(message)}{hint}",
            )
        if key == "version" and message.startswith("Invalid version"):
            return self.fail(
                context, f"invalid version {value!r}; write a PEP 440 version such as '1.0'"
            )
        if key == "requires-python":
            return self.fail(context, f"invalid version specifiers {value!r}: {message}")
        if key in ("name", "extras") and message.endswith("is not normalized"):
            what = "package name" if key == "name" else "extra"
            return self.fail(context, self.not_normalized(what, str(value)))
        if message == "path or url must be provided":
            return self.fail(context, "needs 'url' or 'path' to say where the file is")
        if message == "At least one hash must be provided":
            return self.fail(context, "needs at least one hash; add e.g. sha256 = '...'")
        if message == "Hash values must be strings" and isinstance(value, dict):
            algorithm, digest = next((a, d) for a, d in value.items() if not isinstance(d, str))
            return self.fail(_at(context, algorithm), f"expected a string, got {_kind(digest)}")
        if message.startswith(("None of vcs", "Exactly one of vcs")):
            return self.fail(context, self.sources_message(value))
        consistent = re.fullmatch(
            r"(Name|Version) in (.+) is not consistent with package (?:name|version) (.+)", message
        )
        if consistent is not None:
            what, filename, expected = consistent[1], consistent[2], consistent[3]
            package = _value_at(document, context.rsplit(".", 1)[0] + ".name")
            filename = repr(self.original_names.get(context, filename.strip("'")))
            kind, article = ("sdist", "an") if key == "sdist" else ("wheel", "a")
            if what == "Name":
                return self.fail(
                    context, f"{kind} {filename} is not {article} {kind} of {expected}"
                )
            version = expected.strip("'")
            return self.fail(context, f"{kind} {filename} is not version {version} of {package}")
        return self.fail(context, _first_line(message))

    def not_normalized(self, what: str, name: str) -> str:
        try:
            normalized = canonicalize_name(name, validate=True)
        except ValueError:
            return f"invalid {what} {name!r}"
        return f"{what} {name!r} is not normalized; write {normalized!r}"

    def sources_message(self, table: object) -> str:
        present = [
            key
            for key in ("vcs", "directory", "archive", "sdist", "wheels")
            if isinstance(table, dict) and table.get(key)
        ]
        if len(present) > 1:
            return f"{present[0]!r} and {present[1]!r} are mutually exclusive; keep one source"
        return "no source: give 'wheels' or 'sdist', or one of 'vcs', 'directory' and 'archive'"

    # -- what packaging leaves to tools ----------------------------------------------

    def package(
        self,
        table: TomlTable,
        found: StandardPackage,
        index: int,
        variants: dict[int, object],
        names: dict[tuple[int, int], str | None],
    ) -> Package:
        where = f"packages[{index}]"
        for key in ("dependencies", "attestation-identities", "tool"):
            if key in table:
                self.kept(table[key], _at(where, key))
        for key in ("sdist", "archive"):
            if key in table:
                self.file_checks(table[key], _at(where, key))
        wheels: list[PackageWheel] = []
        for position, wheel in enumerate(found.wheels or ()):
            at = f"{where}.wheels[{position}]"
            self.file_checks(table["wheels"][position], at)
            if (index, position) in names:
                wheel = dataclasses.replace(wheel, name=names[(index, position)])
            wheels.append(wheel)
        variants_json = (
            self.variants_json(variants[index], _at(where, "variants-json"))
            if index in variants
            else None
        )
        self.check_wheels(wheels, variants_json, where)
        return Package(
            name=found.name,
            version=table.get("version"),
            marker=table.get("marker"),
            requires_python=table.get("requires-python"),
            dependencies=tuple(table.get("dependencies", ())),
            vcs=found.vcs,
            directory=found.directory,
            archive=found.archive,
            index=found.index,
            sdist=found.sdist,
            wheels=tuple(wheels),
            attestation_identities=tuple(table.get("attestation-identities", ())),
            variants_json=variants_json,
            tool=table.get("tool"),
        )

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

    def file_checks(self, table: Mapping[str, Any], where: str) -> None:
        """A file's size, upload time and digests, which packaging takes as given."""
        size = table.get("size")
        if size is not None and size < 0:
            raise self.fail(_at(where, "size"), f"expected the file size in bytes, got {size!r}")
        uploaded = table.get("upload-time")
        if uploaded is not None:
            offset = uploaded.utcoffset()
            if offset is not None and offset != timedelta(0):
                raise self.fail(
                    _at(where, "upload-time"),
                    f"{uploaded.isoformat()} is not in UTC; record it in UTC ('Z')",
                )
        hashes = _at(where, "hashes")
        for algorithm, digest in table["hashes"].items():
            length = digest_hex_length(algorithm)
            if length is not None and (len(digest) != length or not _HEX_RE.fullmatch(digest)):
                raise self.fail(
                    _at(hashes, algorithm), f"expected {length} hexadecimal digits, got {digest!r}"
                )
            if not digest:
                raise self.fail(_at(hashes, algorithm), "empty hash value")

    def check_wheels(
        self, wheels: list[PackageWheel], variants_json: VariantsJson | None, where: str
    ) -> None:
        """Each wheel appears once; each variant label is in ``variants-json``.
        *wheels* are in file order, for the messages."""
        seen: set[str] = set()
        variant_wheel = None
        for index, wheel in enumerate(wheels):
            at = f"{_at(where, 'wheels')}[{index}]"
            name = wheel.filename
            if name in seen:
                raise self.fail(at, f"wheel {name!r} is listed twice; keep one entry")
            seen.add(name)
            label = WheelFilename.parse(name).variant_label
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

    def variants_json(self, raw: object, where: str) -> VariantsJson:
        if not isinstance(raw, dict):
            raise self.fail(where, f"expected a table, got {_kind(raw)}")
        self.kept(raw, where)
        if "$schema" not in raw:
            raise self.fail(
                where,
                "missing required key '$schema'; PEP 825 keeps it, e.g. "
                f'"$schema" = "{PEP825_SCHEMA_URL}"',
            )
        try:
            # A legacy draft is read too, as the index would serve it: its providers
            # and priorities choose the wheel, and PEP 825's format cannot hold them.
            SchemaVersion.from_url(raw["$schema"])
        except InvalidMetadata as exc:
            raise self.fail(_at(where, "$schema"), str(exc)) from None
        try:
            return VariantsJson(raw, source=f"{self.source}: {where}")
        except VariantError as exc:
            raise LockError(str(exc)) from None
