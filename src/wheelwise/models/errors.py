"""Errors raised while resolving, downloading and installing wheels."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wheelwise.errors import WheelwiseError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from packaging.version import Version


class InstallError(WheelwiseError):
    """Installing into (or uninstalling from) a target environment failed.

    The environment was left as it was before the operation started.
    """


class ChangedCacheEntries(InstallError):
    """Wheels kept unpacked in the cache had files changed since they were made (a
    file edited in place through a hard link); their entries were removed before
    anything was installed, so fetching those wheels again and retrying succeeds."""

    def __init__(self, filenames: list[str]) -> None:
        self.filenames = filenames
        super().__init__(
            f"the cache's unpacked copy of {', '.join(filenames)} changed after it was "
            "made (a file edited in place through a hard link?); it was removed from the "
            "cache and nothing was installed: run the command again"
        )


class DownloadError(InstallError):
    """A file could not be downloaded, or its contents did not match the expected hash."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


class DownloadDeadline(DownloadError):
    """A download reached the request deadline: final for this run, never sent again."""


class EnvironmentQueryError(InstallError):
    """The target interpreter could not be run or queried."""


class ExternallyManagedError(InstallError):
    """The target environment is marked externally managed (PEP 668)."""


class LockTimeoutError(InstallError):
    """Another run holds the target environment's lock for too long."""


class VariantMismatch(InstallError):
    """A downloaded variant wheel's own ``variant.json`` does not give its label the
    properties the wheel was chosen for (PEP 825 "Metadata consistency")."""


class ResolveError(WheelwiseError):
    """Resolution failed; the message says why, naming packages and versions
    (:attr:`projects`: those it is about, for advice added to it)."""

    projects: tuple[str, ...] = ()

    def advise(self, advice: str) -> None:
        """Add *advice* to the end of this error's message."""
        self.args = (f"{self}{advice}",)


# What a NoCompatibleWheel message names: the reasons, and the releases of each.
_SHOWN_REASONS = 3
_SHOWN_RELEASES = 3


class NoCompatibleWheel(ResolveError):
    """No release of a package that the requirements allow has a usable wheel."""

    def __init__(
        self, name: str, reasons: Mapping[Version, str], *, about_sources: bool = True
    ) -> None:
        self.name = name
        self.projects = (name,)
        self.reasons = dict(reasons)
        # Releases that fail for the same reason share it, the newest named: a project
        # may have hundreds, and the line stays short.
        by_reason: dict[str, list[Version]] = {}
        for version in sorted(reasons, reverse=True):
            by_reason.setdefault(reasons[version], []).append(version)
        parts = []
        for reason, versions in list(by_reason.items())[:_SHOWN_REASONS]:
            shown = ", ".join(str(v) for v in versions[:_SHOWN_RELEASES])
            more = len(versions) - _SHOWN_RELEASES
            parts.append(f"{name} {shown}{f' and {more} older' if more > 0 else ''}: {reason}")
        others = sum(len(v) for v in list(by_reason.values())[_SHOWN_REASONS:])
        if others:
            parts.append(f"and {others} more release{'s' if others > 1 else ''}")
        # Unless every release was passed over for another cause (yanked, say).
        sources = " (source distributions are never built)" if about_sources else ""
        super().__init__(f"no compatible wheel for {name}{sources}: {'; '.join(parts)}")


class VariantChoiceError(ResolveError):
    """A variant chosen by label is unknown, or not supported by this machine."""

    def __init__(self, name: str, label: str, message: str) -> None:
        self.name = name
        self.label = label
        super().__init__(message)
