"""Installing: the orchestration of the stages (resolve, fetch, install; lock and
install from a lock) and the transaction that changes an environment.

The names below load their module on first use (PEP 562), so that importing one
submodule (``wheelwise.environment.interpreter``, say) does not import them all: the
installer starts querying the target interpreter before its heavier modules load.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wheelwise.environment.installed import InstalledDist, list_installed
    from wheelwise.environment.interpreter import TargetEnvironment
    from wheelwise.fetch.download import (
        DownloadItem,
        ProgressSink,
    )
    from wheelwise.fetch.verify import VerifiedWheel, verify_wheel
    from wheelwise.install.journal import Recovered
    from wheelwise.install.transaction import (
        InstallReport,
        InterruptedAfterCommit,
        install_wheels,
        recover,
        uninstall,
    )
    from wheelwise.models.errors import (
        DownloadError,
        EnvironmentQueryError,
        ExternallyManagedError,
        InstallError,
        LockTimeoutError,
    )

_HOMES = {
    "DownloadItem": "wheelwise.fetch.download",
    "ProgressSink": "wheelwise.fetch.download",
    "TargetEnvironment": "wheelwise.environment.interpreter",
    "DownloadError": "wheelwise.models.errors",
    "EnvironmentQueryError": "wheelwise.models.errors",
    "ExternallyManagedError": "wheelwise.models.errors",
    "InstallError": "wheelwise.models.errors",
    "LockTimeoutError": "wheelwise.models.errors",
    "Recovered": "wheelwise.install.journal",
    "InstalledDist": "wheelwise.environment.installed",
    "InstallReport": "wheelwise.install.transaction",
    "InterruptedAfterCommit": "wheelwise.install.transaction",
    "VerifiedWheel": "wheelwise.fetch.verify",
    "install_wheels": "wheelwise.install.transaction",
    "list_installed": "wheelwise.environment.installed",
    "recover": "wheelwise.install.transaction",
    "uninstall": "wheelwise.install.transaction",
    "verify_wheel": "wheelwise.fetch.verify",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
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
    "install_wheels",
    "list_installed",
    "recover",
    "uninstall",
    "verify_wheel",
]
