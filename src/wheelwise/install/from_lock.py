"""Installing a ``pylock.toml``: ``wheelwise install -r pylock.toml`` and ``wheelwise sync``.

Nothing is resolved and no index page is fetched: :mod:`wheelwise.resolve.lock_selection`
chooses each package's wheel among those the lock lists, for the target (``--python``)
and the machine (``--system`` or the providers). Each chosen wheel is downloaded from
its ``url``, or copied from its ``path`` (relative to the lock's folder), checked
against the size and hashes the lock gives, opened and checked (:func:`verify_wheel`),
and a variant wheel's own ``variant.json`` checked against the lock's
``variants-json``; then one transaction installs them, as ``install`` does. With
*sync*, that transaction also removes every installed distribution the lock does not
select, except the installer's tooling (pip, setuptools, wheel, unless the lock lists
them; and, in the environment wheelwise itself runs in, wheelwise and what it needs).

A dry run downloads only the wheels whose ``Requires-Dist`` settle variant-gated
packages (into the cache, unless ``no_cache``), and installs nothing.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from packaging.utils import NormalizedName, canonicalize_name, canonicalize_version
from packaging.version import InvalidVersion, Version

from wheelwise.cache.scratch import make_scratch
from wheelwise.cache.stores import ContentCache
from wheelwise.cache.unpacked import UnpackedWheel
from wheelwise.client.index_client import IndexClient, IndexFile, IndexSource
from wheelwise.environment.installed import InstalledDist, read_installed_metadata
from wheelwise.environment.interpreter import PendingEnvironment, TargetEnvironment
from wheelwise.fetch.consistency import check_variant_consistency
from wheelwise.fetch.download import DownloadItem, Fetched, Fetcher
from wheelwise.fetch.verify import VerifiedWheel, verify_wheel
from wheelwise.install.bytecode import compile_installed
from wheelwise.install.fetch import UnpackAhead
from wheelwise.install.plan import (
    IN_MEMORY_DOWNLOADS,
    InstallOptions,
    InstallOutcome,
    bound_cache,
    cache_root_of,
    placement_for,
    prepare_target,
    supported_for,
)
from wheelwise.install.transaction import InstallReport, install_wheels
from wheelwise.lock import LockError, PyLock, Wheel
from wheelwise.models.errors import ChangedCacheEntries, DownloadError, InstallError
from wheelwise.policy.retry import RetryPolicy
from wheelwise.resolve.decide import PlannedPackage
from wheelwise.resolve.lock_selection import LockedChoice, LockTarget, select_from_lock
from wheelwise.resolve.resolver import ResolvedPackage
from wheelwise.resolve.selection import TargetSpec
from wheelwise.wheels.archive import InMemoryWheel

__all__ = ["TOOLING", "LockInstallOutcome", "run_lock_install"]

# Kept by a sync unless the lock lists them, as uv pip sync keeps them.
TOOLING = frozenset({"pip", "setuptools", "wheel"})


class LockInstallOutcome(NamedTuple):
    """What :func:`run_lock_install` did (or, for a dry run, would do)."""

    outcome: InstallOutcome
    # Distributions a sync removed (or, for a dry run, would remove).
    removals: tuple[InstalledDist, ...] = ()
    # The dependency groups in effect: default-groups, those asked for, variant-needs-*.
    groups: frozenset[str] = frozenset()


def run_lock_install(
    lock: PyLock,
    lock_path: Path,
    options: InstallOptions,
    query: PendingEnvironment | None = None,
    *,
    sync: bool = False,
    extras: Collection[str] = (),
    groups: Collection[str] = (),
) -> LockInstallOutcome:
    """Install what *lock* selects for ``options.python`` (all or nothing); with
    *sync*, also remove what it does not select. *lock_path* is the lock's file: a
    relative ``path`` is read from its folder, and output names it as the source.
    Of *options*, those about the target, the machine, the network, the cache and the
    output apply; requirements, sources, ``upgrade``, ``pre`` and ``no_deps`` do not,
    and hashes are always required. Raises LockError, InstallError (and subclasses); the lock's
    ``warnings`` go to ``options.warn``."""
    warn = options.warn
    if warn is not None:
        for warning in lock.warnings:
            warn(warning)
    lock_path = lock_path.absolute()
    kept = None if options.no_cache else ContentCache.at(cache_root_of(options))
    if query is None:
        query = TargetEnvironment.start_query(options.python or sys.executable)
    with query:
        env = query.result()
    installed = prepare_target(env, options)
    # Hashes pin every file: no plugin is installed without one (as --require-hashes).
    machine = supported_for(replace(options, require_hashes=True), env.markers)
    target = LockTarget(
        env.markers,
        TargetSpec(
            env.tags,
            machine,
            no_variant=options.no_variant,
            variant_choice={canonicalize_name(n): v for n, v in options.variant_choice.items()},
        ),
        frozenset(extras),
        frozenset(groups),
    )
    with (
        IndexClient(
            timeout=options.timeout,
            deadline=options.request_deadline,
            retry=RetryPolicy(retries=options.retries),
            cache=False,
            warn=warn,
            connection=options.connection,
        ) as client,
        make_scratch("download", options.cache_dir) as folder,
    ):
        wheels = _LockWheels(lock, lock_path.parent, options, Path(folder), client, kept)
        selection = select_from_lock(lock, target, _metadata_source(wheels, installed))
        skipped = {c.name for c in selection.choices if _is_installed(c, installed)}
        removals = _removals(lock, selection.choices, installed, env) if sync else ()
        wanted = [c for c in selection.choices if c.name not in skipped]
        if not options.dry_run:
            wheels.fetch(wanted)
        source = IndexSource.find_links(lock_path)
        plan = [
            _planned(lock, choice, installed, wheels, source, choice.name in skipped)
            for choice in selection.choices
        ]
        if options.dry_run:
            outcome = InstallOutcome(env, plan, dry_run=True)
            return LockInstallOutcome(outcome, removals, selection.groups)
        report = InstallReport()
        if wanted or removals:

            def installed_from(fetched: list[VerifiedWheel]) -> InstallReport:
                return install_wheels(
                    env,
                    fetched,
                    remove=[dist.name for dist in removals],
                    break_system_packages=options.break_system_packages,
                    warn=warn,
                    placement=placement_for(options, kept),
                )

            try:
                report = installed_from(wheels.fetch(wanted))
            except ChangedCacheEntries as exc:  # those entries are gone: fetched again
                wheels.forget(exc.filenames)
                report = installed_from(wheels.fetch(wanted))
    compile_installed(env, report.installed, options)
    bound_cache(options, kept, cache_root_of(options))
    outcome = InstallOutcome(env, plan, dry_run=False, report=report)
    return LockInstallOutcome(outcome, removals, selection.groups)


def _metadata_source(
    wheels: _LockWheels, installed: Mapping[str, InstalledDist]
) -> Callable[[Sequence[LockedChoice]], list[bytes]]:
    """What reads the chosen wheels' METADATA to settle gated packages: a build
    installed already (same version, same label) answers from its own ``METADATA``,
    so a sync with nothing to do downloads nothing; the others are downloaded."""

    def metadata_of(choices: Sequence[LockedChoice]) -> list[bytes]:
        local: dict[str, bytes] = {}
        for choice in choices:
            if _is_installed(choice, installed):
                with contextlib.suppress(OSError):  # unreadable: downloaded instead
                    local[choice.name] = read_installed_metadata(installed[choice.name].location)
        fetched = iter(wheels.metadata([c for c in choices if c.name not in local]))
        return [local[c.name] if c.name in local else next(fetched) for c in choices]

    return metadata_of


def _is_installed(choice: LockedChoice, installed: Mapping[str, InstalledDist]) -> bool:
    """Whether exactly the chosen build is installed: same version, same label."""
    current = installed.get(choice.name)
    return (
        current is not None
        and canonicalize_version(current.version) == canonicalize_version(choice.version)
        and current.variant == choice.label
    )


def _removals(
    lock: PyLock,
    choices: Sequence[LockedChoice],
    installed: Mapping[str, InstalledDist],
    env: TargetEnvironment,
) -> tuple[InstalledDist, ...]:
    """What a sync removes: every installed distribution the lock does not select,
    but the tooling the lock does not list."""
    listed = {canonicalize_name(package.name) for package in lock.packages}
    kept = {choice.name for choice in choices} | (TOOLING - listed)
    if _same_environment(env):
        kept |= _running_installer() - listed
    return tuple(dist for name, dist in sorted(installed.items()) if name not in kept)


def _same_environment(env: TargetEnvironment) -> bool:
    try:
        return env.prefix.resolve() == Path(sys.prefix).resolve()
    except OSError:
        return False


def _running_installer() -> frozenset[NormalizedName]:
    """wheelwise and every distribution it needs, as installed here: a sync of the
    environment wheelwise runs in must not remove the installer doing it."""
    from importlib import metadata

    from packaging.requirements import InvalidRequirement, Requirement

    found: set[NormalizedName] = set()
    pending = ["wheelwise"]
    while pending:
        name = canonicalize_name(pending.pop())
        if name in found:
            continue
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        found.add(name)
        for text in requires:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    return frozenset(found)


def _planned(
    lock: PyLock,
    choice: LockedChoice,
    installed: Mapping[str, InstalledDist],
    wheels: _LockWheels,
    source: IndexSource,
    skipped: bool,
) -> PlannedPackage:
    """*choice* as ``install`` shows and reports a package (the same table and lines)."""
    selection = choice.selection
    ranking = selection.ranking
    current = installed.get(choice.name)
    package = ResolvedPackage(
        name=choice.name,
        version=choice.version,
        file=selection.file,
        label=choice.label,
        won_by=selection.won_by,
        rejected=dict(ranking.rejected) if ranking is not None else {},
        installed=_version(current.version) if current is not None else None,
        ranking=ranking,
    )
    wheel = choice.wheel
    file = IndexFile(
        filename=wheel.filename,
        url=wheels.location(wheel),
        hashes=dict(wheel.hashes),
        requires_python=choice.package.requires_python,
        size=wheel.size,
    )
    verified = wheels.verified.get(wheel.filename)
    return PlannedPackage(
        package=package,
        file=file,
        source=source,
        requested=True,
        skipped=skipped,
        properties=choice.properties,
        metadata=verified.metadata if verified is not None else _lock_metadata(choice),
        variant_source=_variants_json_source(lock, choice),
    )


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _lock_metadata(choice: LockedChoice) -> bytes:
    """What the lock says of a package whose wheel a dry run did not download."""
    lines = ["Metadata-Version: 2.1", f"Name: {choice.name}", f"Version: {choice.version}"]
    if choice.package.requires_python is not None:
        lines.append(f"Requires-Python: {choice.package.requires_python}")
    return ("\n".join(lines) + "\n").encode()


def _variants_json_source(lock: PyLock, choice: LockedChoice) -> str | None:
    if choice.label is None:
        return None
    return f"{lock.source} ([packages.variants-json] of {choice.name})"


class _LockWheels:
    """The chosen wheels, each downloaded once, checked against the size and hashes
    the lock gives, opened (:func:`verify_wheel`) and checked against the entry:
    its name and version, and a variant wheel's own ``variant.json``."""

    def __init__(
        self,
        lock: PyLock,
        lock_dir: Path,
        options: InstallOptions,
        folder: Path,
        client: IndexClient,
        kept: ContentCache | None,
    ) -> None:
        self.lock = lock
        self.lock_dir = lock_dir
        self.options = options
        self.folder = folder
        self.client = client
        self.kept = kept
        self.memory_left = IN_MEMORY_DOWNLOADS
        # By file name (unique within one lock's choices: each names its package).
        self.verified: dict[str, VerifiedWheel] = {}

    def location(self, wheel: Wheel) -> str:
        """Where *wheel* is read from: its ``path`` (relative to the lock's folder)
        when it has one, as PEP 751 says, else its ``url``."""
        if wheel.path is not None:
            return (self.lock_dir / wheel.path).absolute().as_uri()
        assert wheel.url is not None  # the reader requires one of them
        return wheel.url

    def metadata(self, choices: Sequence[LockedChoice]) -> list[bytes]:
        return [wheel.metadata for wheel in self.fetch(choices)]

    def forget(self, filenames: Sequence[str]) -> None:
        """Fetch these wheels again when next asked for them."""
        for filename in filenames:
            self.verified.pop(filename, None)

    def fetch(self, choices: Sequence[LockedChoice]) -> list[VerifiedWheel]:
        """*choices*' wheels, verified, downloading those not yet here."""
        missing = {c.wheel.filename: c for c in choices if c.wheel.filename not in self.verified}
        for choice in missing.values():
            self._check_hashes(choice)
        if missing:
            self._download(missing)
        return [self.verified[choice.wheel.filename] for choice in choices]

    def _where(self, choice: LockedChoice) -> str:
        return f"{self.lock.source}: package {choice.package.describe()}: {choice.wheel.filename}"

    def _check_hashes(self, choice: LockedChoice) -> None:
        item = self._item(choice)
        if not item.expected_hashes():
            raise LockError(
                f"{self._where(choice)}: the lock gives no sha256 (or stronger) hash for it "
                f"({', '.join(choice.wheel.hashes)}); lock it again with sha256 hashes"
            )

    def _item(self, choice: LockedChoice) -> DownloadItem:
        wheel = choice.wheel
        return DownloadItem(self.location(wheel), dict(wheel.hashes), wheel.filename, wheel.size)

    def _download(self, missing: Mapping[str, LockedChoice]) -> None:
        options = self.options
        # Whole wheels unpacked into the cache while the others download.
        ahead = UnpackAhead(self.kept.unpacked) if self.kept is not None else None
        whole: dict[str, Fetched] = {}

        def check(found: Fetched) -> None:
            choice = missing[found.name]
            item = self._item(choice)
            # An unpacked wheel was found by the hash the lock gives: nothing to size.
            size = (
                None
                if isinstance(found, UnpackedWheel)
                else len(found.data)
                if isinstance(found, InMemoryWheel)
                else found.stat().st_size
            )
            if size is not None and choice.wheel.size is not None and size != choice.wheel.size:
                raise DownloadError(
                    item.url,
                    f"size mismatch: the lock gives {choice.wheel.size} bytes, the file "
                    f"has {size} bytes",
                )
            try:
                verified = replace(
                    verify_wheel(found), hashes=item.unpacked_hashes(), origin=item.origin
                )
                checked = self._checked(choice, verified)
            except InstallError as exc:
                raise DownloadError(item.url, str(exc)) from None
            self.verified[choice.wheel.filename] = checked
            if ahead is not None:
                whole[choice.wheel.filename] = found
                ahead.submit(found, checked, checked.hashes)

        items = [self._item(choice) for choice in missing.values()]
        fetcher = Fetcher(
            self.client.http_source,
            retry=self.client.retry,
            deadline=options.request_deadline,
            cache=self.kept.wheels if self.kept is not None else None,
            unpacked=self.kept.unpacked if self.kept is not None else None,
            in_memory=self.memory_left,
            downloads=options.concurrent_downloads,
        )
        try:
            found = fetcher.fetch_all(
                items, self.folder, progress=options.progress, require_hashes=True, then=check
            )
        except DownloadError as exc:
            choice = next((c for c in missing.values() if self._item(c).url == exc.url), None)
            if choice is None:  # pragma: no cover - every item is one of the choices
                raise
            raise InstallError(f"{self._where(choice)} at {exc.url}: {exc.reason}") from None
        finally:
            if ahead is not None:  # no thread left running: the installer may fork
                ahead.finish()
        if ahead is not None:
            for filename, wheel in whole.items():
                self.verified[filename] = ahead.unpacked(wheel, self.verified[filename])
        self.memory_left -= sum(len(f.data) for f in found if isinstance(f, InMemoryWheel))

    def _checked(self, choice: LockedChoice, wheel: VerifiedWheel) -> VerifiedWheel:
        if wheel.name != choice.name or canonicalize_version(wheel.version) != (
            canonicalize_version(choice.version)
        ):
            raise InstallError(
                f"its METADATA says {wheel.name} {wheel.version}, not the "
                f"{choice.name} {choice.version} the lock lists it for; refusing it"
            )
        check_variant_consistency(
            wheel, choice.label, choice.properties, _variants_json_source(self.lock, choice)
        )
        return wheel
