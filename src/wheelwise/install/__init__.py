"""Installing wheels: verified downloads, the target environment, atomic transactions.

The names below load their module on first use (PEP 562), so that importing one
submodule (``wheelwise.install.environment``, say) does not import them all: the
installer starts querying the target interpreter before its heavier modules load.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wheelwise.install.download import (
        DownloadItem,
        ProgressSink,
        download_all,
        download_wheels,
    )
    from wheelwise.install.environment import TargetEnvironment
    from wheelwise.install.errors import (
        DownloadError,
        EnvironmentQueryError,
        ExternallyManagedError,
        InstallError,
        LockTimeoutError,
    )
    from wheelwise.install.journal import Recovered
    from wheelwise.install.transaction import (
        InstalledDist,
        InstallReport,
        InterruptedAfterCommit,
        VerifiedWheel,
        install_wheels,
        list_installed,
        recover,
        uninstall,
        verify_wheel,
    )

_HOMES = {
    "DownloadItem": "download",
    "ProgressSink": "download",
    "download_all": "download",
    "download_wheels": "download",
    "TargetEnvironment": "environment",
    "DownloadError": "errors",
    "EnvironmentQueryError": "errors",
    "ExternallyManagedError": "errors",
    "InstallError": "errors",
    "LockTimeoutError": "errors",
    "Recovered": "journal",
    "InstalledDist": "transaction",
    "InstallReport": "transaction",
    "InterruptedAfterCommit": "transaction",
    "VerifiedWheel": "transaction",
    "install_wheels": "transaction",
    "list_installed": "transaction",
    "recover": "transaction",
    "uninstall": "transaction",
    "verify_wheel": "transaction",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DownloadError",
    "DownloadItem",
    "EnvironmentQueryError",
    "ExternallyManagedError",
    "InstallError",
    "InstallReport",
    "InstalledDist",
    "InterruptedAfterCommit",
    "LockTimeoutError",
    "ProgressSink",
    "Recovered",
    "TargetEnvironment",
    "VerifiedWheel",
    "download_all",
    "download_wheels",
    "install_wheels",
    "list_installed",
    "recover",
    "uninstall",
    "verify_wheel",
]
