"""The environment variables a plugin, and the pip that installs it, may see.

A plugin is third-party code, and installing one may build an sdist (more
third-party code), so neither gets the user's credentials: variables whose name
says they hold a secret are dropped, user info is cut out of every URL in a
value (an index URL, a proxy), and HOME points at an empty folder with ``NETRC``
naming a file that does not exist, so that no ``~/.netrc``, ``pip.conf`` or
keyring in the user's home is read. What a program needs to run (``PATH``,
``LANG``, ``TMPDIR``, ``SYSTEMROOT``...) and the hardware overrides that simulate
a machine (``WHEELWISE_*``, ``NV_VARIANT_PROVIDER_FORCE_*``...) stay.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

# Name parts that mark a secret (matched in the upper-cased name).
_SECRET_PARTS = ("TOKEN", "PASSWORD", "PASSWD", "SECRET", "CREDENTIAL", "APIKEY", "AUTH")
_SECRET_SUFFIXES = ("_KEY", "_PASS", "_PAT", "_COOKIE")
_SECRET_PREFIXES = ("AWS_", "GITHUB_", "GH_", "GITLAB_", "AZURE_", "GOOGLE_", "GCP_", "KEYRING_")
_SECRET_NAMES = frozenset(
    {
        "NETRC",
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "GPG_AGENT_INFO",
        "KRB5CCNAME",
        "PIP_CLIENT_CERT",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "XDG_RUNTIME_DIR",
        "USERPROFILE",
        "APPDATA",
        "LOCALAPPDATA",
    }
)
# scheme://USERINFO@ (RFC 3986): everything up to the last @ before the host ends.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s]*@")


def is_secret(name: str) -> bool:
    """Whether the variable *name* is one a plugin must not see."""
    upper = name.upper()
    return (
        upper in _SECRET_NAMES
        or any(part in upper for part in _SECRET_PARTS)
        or upper.endswith(_SECRET_SUFFIXES)
        or upper.startswith(_SECRET_PREFIXES)
    )


def strip_userinfo(value: str) -> str:
    """*value* with ``user:password@`` removed from every URL in it."""
    return _USERINFO.sub(r"\1", value)


def plugin_environ(environ: Mapping[str, str], home: Path) -> dict[str, str]:
    """*environ* without secrets, with HOME (an empty folder) and NETRC under *home*."""
    cleaned = {
        name: strip_userinfo(value) for name, value in environ.items() if not is_secret(name)
    }
    cleaned["HOME"] = str(home)
    cleaned["NETRC"] = str(home / ".netrc-none")  # requests then reads no ~/.netrc
    cleaned["PIP_KEYRING_PROVIDER"] = "disabled"
    return cleaned
