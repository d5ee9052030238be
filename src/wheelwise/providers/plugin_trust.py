"""Which third-party provider plugins the user trusts, and how to say how to opt in.

A plugin is arbitrary code from a package index, so it runs only when its
namespace is allowed: on the command line (``--allow-provider NS``) or in the
user's configuration file::

    # ~/.config/wheelwise/config.toml  (platformdirs' user_config_dir("wheelwise"))
    [providers]
    allow = ["installable_plugin"]

``$WHEELWISE_CONFIG`` names another file (tests use it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from wheelwise.untrusted_json import UntrustedDocumentError, loads_toml

CONFIG_ENV = "WHEELWISE_CONFIG"


def config_path() -> Path:
    """``$WHEELWISE_CONFIG``, else ``config.toml`` in the per-user config folder."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_config_dir("wheelwise", appauthor=False)) / "config.toml"


def display_path(path: Path) -> str:
    """*path* with the home folder written as ``~``, for messages."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return str(path)


@dataclass(frozen=True)
class TrustConfig:
    """The ``[providers]`` table of the user's configuration file."""

    path: Path
    allow: frozenset[str] = frozenset()
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
            problem=f"{display_path(path)}: [providers] allow must be a list of namespaces",
        )
    return TrustConfig(path, frozenset(allow))


def untrusted_detail(namespace: str, requires: str, config: TrustConfig) -> str:
    """The message for a plugin that is not trusted: exactly how to opt in."""
    detail = (
        f"third-party provider {namespace!r} ({requires}) is not trusted; rerun with "
        f"--allow-provider {namespace} or add it to [providers] allow in "
        f"{display_path(config.path)}"
    )
    if config.problem:
        detail += f" ({config.problem})"
    return detail


def optional_detail(namespace: str, requires: str, *, trusted: bool) -> str:
    """The message for an optional provider that was not enabled."""
    flags = f"--enable-provider {namespace}"
    if not trusted:
        flags += f" --allow-provider {namespace}"
    return f"optional provider {namespace!r} ({requires}) is off; rerun with {flags} to use it"
