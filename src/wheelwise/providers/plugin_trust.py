"""Which third-party provider plugins the user trusts, and how to say how to opt in.

A plugin is arbitrary code from a package index, so trust names what runs: a
namespace *and* the requirement that provides it, ``NS=REQUIREMENT`` (or
``NS:OBJECT=REQUIREMENT`` when the metadata's ``plugin-api`` is not the default
one derived from the requirement). It is given on the command line
(``--allow-provider``, repeatable) or in the user's configuration file::

    # ~/.config/wheelwise/config.toml  (platformdirs' user_config_dir("wheelwise"))
    [providers]
    allow = ["installable_plugin=test-plugin-package"]

``$WHEELWISE_CONFIG`` names another file (tests use it). A bare namespace trusts
no plugin: metadata that maps a trusted namespace to another requirement or
``plugin-api`` stops with :class:`PluginTrustError` before anything is installed.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from wheelwise.untrusted_json import UntrustedDocumentError, loads_toml
from wheelwise.userconfig import config_path, display_path
from wheelwise.variants.errors import VariantError
from wheelwise.variants.grammar import NAME_RE


class PluginTrustError(VariantError):
    """A trust entry is malformed, or metadata maps a trusted namespace to another plugin."""


def normal_requirement(text: str) -> str:
    """*text* as packaging writes it, with the names normalized; raises InvalidRequirement."""
    requirement = Requirement(text)
    requirement.name = canonicalize_name(requirement.name)
    requirement.extras = {canonicalize_name(extra) for extra in requirement.extras}
    return str(requirement)


def check_object_reference(reference: str) -> str:
    """*reference* (``module`` or ``module:attr``) stripped; raises ValueError if invalid."""
    reference = reference.strip()
    module, colon, attrs = reference.partition(":")
    parts = module.split(".") + (attrs.split(".") if colon else [])
    if not all(part.isidentifier() for part in parts):
        raise ValueError(f"invalid plugin-api object reference {reference!r}")
    return reference


def default_reference(requirement: str) -> str:
    """PEP 817's default ``plugin-api``: the requirement's name, ``-`` -> ``_``."""
    return canonicalize_name(Requirement(requirement).name).replace("-", "_")


@dataclass(frozen=True)
class TrustEntry:
    """``NS``, ``NS=REQUIREMENT`` or ``NS:OBJECT=REQUIREMENT``, parsed."""

    namespace: str
    # Normalized; None for a bare namespace, which trusts no plugin.
    requirement: str | None
    # The trusted ``plugin-api``; None: the default derived from the requirement.
    plugin_api: str | None
    # SHA-256 digests (hex) one of which the installed distribution's file must
    # have; empty: any file pip installs for the requirement.
    hashes: tuple[str, ...] = ()

    def text(self) -> str:
        if self.requirement is None:
            return self.namespace
        api = f":{self.plugin_api}" if self.plugin_api is not None else ""
        hashes = "".join(f" --hash=sha256:{digest}" for digest in self.hashes)
        return f"{self.namespace}{api}={self.requirement}{hashes}"

    @property
    def reference(self) -> str | None:
        """The object the trusted plugin is imported as."""
        if self.requirement is None:
            return None
        return self.plugin_api or default_reference(self.requirement)


_HASH_OPTION = re.compile(r"\s+--hash=")
_SHA256 = re.compile(r"sha256:([0-9a-fA-F]{64})")


def parse_trust(text: str, *, where: str = "--allow-provider") -> TrustEntry:
    """Parse one ``--allow-provider`` value; raises :class:`PluginTrustError`.

    ``NS[:OBJECT]=REQUIREMENT`` may end with ``--hash=sha256:HEX`` options, as in a
    pip requirements file. *where* starts the messages (the option, or the file).
    """
    left, equals, right = text.strip().partition("=")
    right, *hash_options = _HASH_OPTION.split(right)
    digests = set()
    for option in hash_options:
        match = _SHA256.fullmatch(option.strip())
        if match is None:
            raise PluginTrustError(
                f"{where} {text!r}: --hash={option.strip()!r} is not sha256:<64 hex digits>"
            )
        digests.add(match.group(1).lower())
    namespace, colon, api = left.partition(":")
    namespace = namespace.strip()
    if NAME_RE.fullmatch(namespace) is None:
        raise PluginTrustError(
            f"{where} {text!r}: {namespace!r} is not a namespace "
            "(lowercase letters, digits and _); write NS=REQUIREMENT"
        )
    if not equals:
        if colon or digests:
            raise PluginTrustError(
                f"{where} {text!r}: name the requirement too: NS:OBJECT=REQUIREMENT"
            )
        return TrustEntry(namespace, None, None)
    try:
        plugin_api = check_object_reference(api) if colon else None
        requirement = normal_requirement(right)
    except InvalidRequirement as exc:
        reason = (str(exc).splitlines() or ["invalid"])[0]
        raise PluginTrustError(
            f"{where} {text!r}: invalid requirement {right.strip()!r} ({reason}); "
            "write NS=REQUIREMENT, e.g. installable_plugin=test-plugin-package"
        ) from None
    except ValueError as exc:
        raise PluginTrustError(f"{where} {text!r}: {exc}") from None
    if Requirement(requirement).marker is not None:
        raise PluginTrustError(f"{where} {text!r}: a trusted requirement takes no marker")
    return TrustEntry(namespace, requirement, plugin_api, tuple(sorted(digests)))


def trust_flags(namespace: str, requires: Sequence[str], reference: str | None) -> str:
    """The ``--allow-provider`` options that trust exactly this plugin, shell-quoted."""
    flags = []
    for requirement in requires:
        try:
            api = None if reference == default_reference(requires[0]) else reference
        except InvalidRequirement:
            api = reference
        entry = f"{namespace}{f':{api}' if api else ''}={requirement}"
        flags.append(f"--allow-provider {shlex.quote(entry)}")
    return " ".join(flags) or f"--allow-provider {namespace}=REQUIREMENT"


@dataclass(frozen=True)
class Trusted:
    """An entry, with where it was given (``--allow-provider`` or the config file)."""

    entry: TrustEntry
    origin: str


def trust_entries(allowed: Collection[str], config: TrustConfig) -> list[Trusted]:
    """The command line's entries, then the config file's; raises PluginTrustError."""
    entries = [Trusted(parse_trust(text), "--allow-provider") for text in allowed]
    where = f"[providers] allow in {display_path(config.path)}"
    entries += [Trusted(entry, where) for entry in config.entries]
    return entries


def trusted_plugin(
    namespace: str, requires: Sequence[str], reference: str, trusted: Sequence[Trusted]
) -> Trusted | None:
    """The entry that trusts this plugin; None if *namespace* is not trusted at all.

    *requires* are the requirements to install (markers evaluated), *reference*
    the object to import. A namespace that is trusted for another plugin raises
    :class:`PluginTrustError`: nothing may be installed for it.
    """
    mine = [t for t in trusted if t.entry.namespace == namespace]
    if not mine:
        return None
    wanted = {normal_requirement(r) for r in requires}
    pinned = [t for t in mine if t.entry.requirement is not None]
    allowed_requirements = {t.entry.requirement for t in pinned}
    for candidate in pinned:
        if wanted <= allowed_requirements and candidate.entry.reference == reference:
            # Several entries may list hashes for these requirements (one per wheel).
            digests = {d for t in pinned if t.entry.requirement in wanted for d in t.entry.hashes}
            entry = dataclasses.replace(candidate.entry, hashes=tuple(sorted(digests)))
            return Trusted(entry, candidate.origin)
    if pinned:
        what = "; ".join(
            f"{t.entry.requirement} (plugin-api {t.entry.reference}, {t.origin})" for t in pinned
        )
    else:
        origins = ", ".join(sorted({t.origin for t in mine}))
        what = f"the namespace only ({origins}), which names no plugin"
    return_flags = trust_flags(namespace, sorted(wanted), reference)
    raise PluginTrustError(
        f"third-party provider {namespace!r}: the metadata asks for "
        f"{', '.join(sorted(wanted))} (plugin-api {reference}), but trusted: {what}; "
        f"nothing was installed or run; if you trust it, rerun with {return_flags}"
    )


@dataclass(frozen=True)
class TrustConfig:
    """The ``[providers]`` table of the user's configuration file."""

    path: Path
    entries: tuple[TrustEntry, ...] = ()
    # Why the file could not be used, if it exists but is broken; None otherwise.
    problem: str | None = None


def load_trust_config(path: Path | None = None) -> TrustConfig:
    """Read the allowlist; a missing file allows nothing, a broken one is reported."""
    path = config_path() if path is None else path
    try:
        data = loads_toml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return TrustConfig(path)
    except (OSError, UnicodeDecodeError, UntrustedDocumentError) as exc:
        return TrustConfig(path, problem=f"cannot read {display_path(path)}: {exc}")
    table = data.get("providers", {})
    allow = table.get("allow", []) if isinstance(table, dict) else None
    if not isinstance(allow, list) or not all(isinstance(ns, str) for ns in allow):
        return TrustConfig(
            path,
            problem=f"{display_path(path)}: [providers] allow must be a list of "
            '"NS=REQUIREMENT" strings',
        )
    where = f"{display_path(path)}: [providers] allow entry"
    try:
        entries = tuple(parse_trust(text, where=where) for text in allow)
    except PluginTrustError as exc:
        return TrustConfig(path, problem=str(exc))
    return TrustConfig(path, entries)


def untrusted_detail(namespace: str, requires: str, flags: str, config: TrustConfig) -> str:
    """The message for a plugin that is not trusted: exactly how to opt in."""
    detail = (
        f"third-party provider {namespace!r} ({requires}) is not trusted; rerun with "
        f"{flags} or add it to [providers] allow in {display_path(config.path)}"
    )
    if config.problem:
        detail += f" ({config.problem})"
    return detail


def optional_detail(namespace: str, requires: str, allow_flags: str | None) -> str:
    """The message for an optional provider that was not enabled."""
    flags = f"--enable-provider {namespace}"
    if allow_flags is not None:
        flags += f" {allow_flags}"
    return f"optional provider {namespace!r} ({requires}) is off; rerun with {flags} to use it"
