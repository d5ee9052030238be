"""Errors raised while downloading and installing wheels."""

from __future__ import annotations


class InstallError(Exception):
    """Installing into (or uninstalling from) a target environment failed.

    The environment was left as it was before the operation started.
    """


class DownloadError(InstallError):
    """A file could not be downloaded, or its contents did not match the expected hash."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


class EnvironmentQueryError(InstallError):
    """The target interpreter could not be run or queried."""


class ExternallyManagedError(InstallError):
    """The target environment is marked externally managed (PEP 668)."""


class LockTimeoutError(InstallError):
    """Another run holds the target environment's lock for too long."""


class VariantMismatch(InstallError):
    """A downloaded variant wheel's own ``variant.json`` does not give its label the
    properties the wheel was chosen for (PEP 825 "Metadata consistency")."""
