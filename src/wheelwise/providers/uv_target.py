"""uv's static target file (``UV_VARIANT_LOCK``): a machine as ``[[provider]]`` tables.

uv's wheel-variant work describes a target machine in a TOML file, named by
``UV_VARIANT_LOCK``, instead of running providers. ``wheelwise detect --format uv``
writes that format and ``--system FILE`` reads it, so one recorded target serves
both tools::

    [metadata]
    created-by = "wheelwise 1.0"
    version = "0.1"

    [[provider]]
    namespace = "nvidia"
    resolved = []
    [provider.properties]
    cuda_version_lower_bound = ["12.8", "12.7"]
    sm_arch = ["86_real", "80_real"]

Each provider table names a namespace; ``properties`` maps its features to the
supported values, best first. ``resolved`` (the provider packages that produced the
answer, as requirement strings) and ``plugin-api`` (their PEP 817 entry point) are
kept for the record; selection only needs the properties. wheelwise writes
``resolved = []`` and no ``plugin-api``: its built-in providers are not packages
anyone could install. Names and values follow
the PEP 825 grammar, so the writer below never needs more than plain quoting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from wheelwise.record import Record
from wheelwise.variants.errors import InvalidSystem, VariantError
from wheelwise.variants.grammar import validate_name, validate_value
from wheelwise.variants.supported import SupportedProperties

TYPE_CHECKING = False

if TYPE_CHECKING:
    from wheelwise.providers.base import ProviderReport

FORMAT_VERSION = "0.1"
# A newer major may change what the tables mean; a newer minor may only add keys.
READABLE_MAJOR = 0
TOP_LEVEL_KEYS = ("metadata", "provider")
PROVIDER_KEYS = ("namespace", "resolved", "plugin-api", "properties")
VERSION_RE = re.compile(r"([0-9]+)\.([0-9]+)(?:\.[0-9]+)*")
# TOML comments may hold any character but these.
COMMENT_UNSAFE_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]+")


class NotUvTarget(InvalidSystem):
    """The text is not a uv target file at all: not UTF-8, not TOML, or TOML
    without its tables (as opposed to a target file with a bad entry)."""


class UvProvider(Record):
    """One ``[[provider]]`` table: a namespace's supported features, best first."""

    __slots__ = ("namespace", "properties", "resolved", "plugin_api")  # noqa: RUF023 - repr order
    namespace: str
    properties: Mapping[str, tuple[str, ...]]
    resolved: tuple[str, ...]
    plugin_api: str | None

    def __init__(
        self,
        namespace: str,
        properties: Mapping[str, Sequence[str]],
        resolved: Sequence[str] = (),
        plugin_api: str | None = None,
    ) -> None:
        self._set(
            namespace=namespace,
            properties={f: tuple(v) for f, v in properties.items()},
            resolved=tuple(resolved),
            plugin_api=plugin_api,
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.resolved, self.plugin_api))


class UvTarget(Record):
    """A whole target file: its providers in file order and its ``[metadata]``."""

    __slots__ = ("providers", "created_by", "version")  # noqa: RUF023 - repr order
    providers: tuple[UvProvider, ...]
    created_by: str | None
    version: str

    def __init__(
        self,
        providers: Sequence[UvProvider],
        created_by: str | None = None,
        version: str = FORMAT_VERSION,
    ) -> None:
        self._set(providers=tuple(providers), created_by=created_by, version=version)

    @classmethod
    def from_system(cls, system: SupportedProperties, *, created_by: str | None = None) -> UvTarget:
        """One provider table per namespace of *system*, in its order."""
        providers = [UvProvider(ns, features) for ns, features in system.namespaces.items()]
        return cls(providers, created_by=created_by)

    @property
    def system(self) -> SupportedProperties:
        return SupportedProperties({p.namespace: dict(p.properties) for p in self.providers})


# -- reading -------------------------------------------------------------------


def parse_uv_target(text: bytes | str, *, source: str = "<system>") -> SupportedProperties:
    """The supported properties of a uv target file; InvalidSystem if it is not one."""
    return read_uv_target(text, source=source).system


def read_uv_target(text: bytes | str, *, source: str = "<system>") -> UvTarget:
    # Imported here: `detect --format uv` only writes, on a path kept short.
    from wheelwise.untrusted_json import UntrustedDocumentError, loads_toml

    try:
        raw = loads_toml(text)
    except UntrustedDocumentError as exc:
        raise NotUvTarget(f"{source}: {exc}") from None
    return uv_target_from_dict(raw, source=source)


def uv_target_from_dict(raw: Mapping[str, object], *, source: str = "<system>") -> UvTarget:
    """Check the tables of a parsed target file (see the module docstring)."""
    if "provider" not in raw and "metadata" not in raw:
        raise NotUvTarget(
            f"{source}: not a uv variant target: expected [[provider]] tables "
            "(and a [metadata] table)"
        )
    created_by, version, strict = _read_metadata(raw.get("metadata", {}), source)
    if strict:
        _reject_unknown(raw, TOP_LEVEL_KEYS, f"{source}: ")
    tables = raw.get("provider", [])
    if not isinstance(tables, list):
        raise InvalidSystem(
            f"{source}: provider: expected [[provider]] tables, got {_kind(tables)}"
        )
    providers: list[UvProvider] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(tables, start=1):
        where = f"{source}: [[provider]] #{index}"
        provider = _read_provider(table, where, strict=strict)
        if provider.namespace in seen:
            raise InvalidSystem(
                f"{where}: namespace {provider.namespace!r} is already described by "
                f"[[provider]] #{seen[provider.namespace]}; merge the two tables"
            )
        seen[provider.namespace] = index
        providers.append(provider)
    return UvTarget(providers, created_by=created_by, version=version)


def _read_metadata(metadata: object, source: str) -> tuple[str | None, str, bool]:
    """``created-by``, ``version``, and whether that version is one this module
    knows all the keys of (a newer minor may add some)."""
    if not isinstance(metadata, dict):
        raise InvalidSystem(f"{source}: metadata: expected a table, got {_kind(metadata)}")
    created_by = metadata.get("created-by")
    if created_by is not None and not isinstance(created_by, str):
        raise InvalidSystem(
            f"{source}: metadata.created-by: expected a string, got {_kind(created_by)}"
        )
    version = metadata.get("version", FORMAT_VERSION)
    match = VERSION_RE.fullmatch(version) if isinstance(version, str) else None
    if match is None or not isinstance(version, str):
        raise InvalidSystem(
            f"{source}: metadata.version: expected a version string such as "
            f'"{FORMAT_VERSION}", got {version!r}'
        )
    if _number(match.group(1)) != _number(str(READABLE_MAJOR)):
        raise InvalidSystem(
            f"{source}: metadata.version: unsupported target file version {version!r} "
            f"(this wheelwise reads {READABLE_MAJOR}.x); upgrade wheelwise"
        )
    known_minor = _number(FORMAT_VERSION.split(".")[1])
    return created_by, version, _number(match.group(2)) <= known_minor


def _number(digits: str) -> tuple[int, str]:
    """A key that orders digit strings numerically, however long (no int())."""
    digits = digits.lstrip("0") or "0"
    return len(digits), digits


def _read_provider(table: object, where: str, *, strict: bool) -> UvProvider:
    if not isinstance(table, dict):
        raise InvalidSystem(f"{where}: expected a table, got {_kind(table)}")
    if strict:
        _reject_unknown(table, PROVIDER_KEYS, f"{where}: ")
    namespace = table.get("namespace")
    if namespace is None:
        raise InvalidSystem(f'{where}: namespace: missing; add namespace = "NAME"')
    if not isinstance(namespace, str):
        raise InvalidSystem(f"{where}: namespace: expected a string, got {_kind(namespace)}")
    try:
        validate_name(namespace, "namespace")
    except VariantError as exc:
        raise InvalidSystem(f"{where}: namespace: {exc}") from None
    where = f"{where} ({namespace})"
    resolved = table.get("resolved", [])
    if not isinstance(resolved, list) or not all(isinstance(r, str) for r in resolved):
        raise InvalidSystem(f"{where}: resolved: expected a list of requirement strings")
    plugin_api = table.get("plugin-api")
    if plugin_api is not None and not isinstance(plugin_api, str):
        raise InvalidSystem(f"{where}: plugin-api: expected a string, got {_kind(plugin_api)}")
    properties = table.get("properties", {})
    if not isinstance(properties, dict):
        raise InvalidSystem(f"{where}: properties: expected a table, got {_kind(properties)}")
    features: dict[str, tuple[str, ...]] = {}
    try:
        for feature, values in properties.items():
            validate_name(feature, "feature name")
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise InvalidSystem(
                    f"properties.{feature}: expected a list of value strings, best first"
                )
            for value in values:
                validate_value(value)
            features[feature] = tuple(dict.fromkeys(values))
    except VariantError as exc:
        raise InvalidSystem(f"{where}: {exc}") from None
    return UvProvider(namespace, features, resolved, plugin_api)


def _reject_unknown(table: Mapping[str, object], known: Sequence[str], where: str) -> None:
    for key in table:
        if key not in known:
            raise InvalidSystem(
                f"{where}{key!r}: unknown key (expected {', '.join(known)}); check its spelling"
            )


def _kind(value: object) -> str:
    names = {dict: "a table", list: "an array", str: "a string", bool: "a boolean"}
    return names.get(type(value), type(value).__name__)


# -- writing -------------------------------------------------------------------


def render_uv_target(
    target: UvTarget, *, reports: Mapping[str, ProviderReport] | None = None
) -> str:
    """The TOML text of *target*; with *reports* (a detection's), comments say where
    each namespace's answer came from and which providers found nothing."""
    reports = reports or {}
    lines = ["# Variant target for uv (UV_VARIANT_LOCK) and wheelwise (--system FILE):"]
    lines.append("# supported properties per namespace, values best first.")
    described = {p.namespace for p in target.providers}
    for ns, report in reports.items():
        if ns not in described:
            lines.append(_comment(f"{ns}: {report.status} ({report.source}): {report.detail}"))
    if not target.providers:
        lines.append("provider = []")
    lines += ["", "[metadata]"]
    if target.created_by is not None:
        lines.append(f"created-by = {_string(target.created_by)}")
    lines.append(f"version = {_string(target.version)}")
    for provider in target.providers:
        lines.append("")
        found = reports.get(provider.namespace)
        if found is not None:
            lines.append(_comment(f"{provider.namespace}: {found.source}: {found.detail}"))
        lines.append("[[provider]]")
        lines.append(f"namespace = {_string(validate_name(provider.namespace, 'namespace'))}")
        lines.append(f"resolved = {_array(provider.resolved)}")
        if provider.plugin_api is not None:
            lines.append(f"plugin-api = {_string(provider.plugin_api)}")
        lines.append("[provider.properties]")
        for feature, values in provider.properties.items():
            checked = [validate_value(v) for v in values]
            lines.append(f"{validate_name(feature, 'feature name')} = {_array(checked)}")
    return "\n".join(lines) + "\n"


def _comment(text: str) -> str:
    return "# " + COMMENT_UNSAFE_RE.sub(" ", text).strip()


def _array(items: Sequence[str]) -> str:
    return "[" + ", ".join(_string(item) for item in items) + "]"


def _string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    escaped = []
    for char in text:
        if char in ('"', "\\"):
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'
