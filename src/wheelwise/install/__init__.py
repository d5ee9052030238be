"""Installing wheels: verified downloads, the target environment, atomic transactions."""

from __future__ import annotations

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
from wheelwise.install.transaction import (
    InstalledDist,
    InstallReport,
    VerifiedWheel,
    install_wheels,
    list_installed,
    uninstall,
    verify_wheel,
)

__all__ = [
    "DownloadError",
    "DownloadItem",
    "EnvironmentQueryError",
    "ExternallyManagedError",
    "InstallError",
    "InstallReport",
    "InstalledDist",
    "LockTimeoutError",
    "ProgressSink",
    "TargetEnvironment",
    "VerifiedWheel",
    "download_all",
    "download_wheels",
    "install_wheels",
    "list_installed",
    "uninstall",
    "verify_wheel",
]
