"""``wheelwise install`` as a library call: find, resolve, download, install.

:func:`run_install` composes the pieces: the target environment (``--python`` or
this interpreter), what is installed there, the machine's supported properties
(``--system`` or the providers), the resolver over the package sources, verified
downloads into a temporary folder, each variant wheel checked against the variant
metadata it was chosen by, and one atomic transaction. With ``dry_run`` it stops
after resolving and returns the plan. Wheels and PEP 658 metadata files are kept in
the cache by their hash (:mod:`wheelwise.install.wheel_cache`), and index pages by
URL (:mod:`wheelwise.index.http_cache`), unless ``no_cache``. Nothing here prints:
problems that were worked around (invalid variant metadata) go to
``InstallOptions.warn``.
"""

from __future__ import annotations

import email.parser
import email.policy
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from packaging.requirements import InvalidRequirement
from packaging.utils import NormalizedName, canonicalize_name, canonicalize_version

from wheelwise import __version__
from wheelwise.cachedir import user_cache_dir
from wheelwise.index.bounded import DEFAULT_DEADLINE
from wheelwise.index.client import IndexClient, IndexFile, IndexSource, RetryPolicy
from wheelwise.install.consistency import check_variant_consistency
from wheelwise.install.core_metadata import check_core_metadata
from wheelwise.install.defaults import DEFAULT_INDEX_URL
from wheelwise.install.download import (
    DownloadItem,
    ProgressSink,
    SpeculativeDownloads,
    download_wheels,
)
from wheelwise.install.environment import PendingEnvironment, TargetEnvironment
from wheelwise.install.errors import DownloadError, ExternallyManagedError, ResolveError
from wheelwise.install.finder import IndexFinder, Link, Warn, source_label
from wheelwise.install.prefetch import ListingPrefetcher
from wheelwise.install.resolve import PackageNotFound, ResolvedPackage, resolve
from wheelwise.install.scratch import make_scratch
from wheelwise.install.transaction import (
    InstalledDist,
    InstallReport,
    VerifiedWheel,
    install_wheels,
    list_installed,
    recover,
    verify_wheel,
)
from wheelwise.install.variant_requirement import apply_variant_labels
from wheelwise.install.wheel_cache import ContentCache
from wheelwise.variants.markers import parse_requirement
from wheelwise.variants.supported import SupportedProperties
from wheelwise.wheels.archive import InMemoryWheel

if TYPE_CHECKING:
    from wheelwise.variants.metadata import VariantMetadata

__all__ = [
    "DEFAULT_INDEX_URL",
    "InstallOptions",
    "InstallOutcome",
    "PlannedPackage",
    "cache_root_of",
    "caches_for",
    "index_client",
    "installation_report",
    "prepare_target",
    "run_install",
    "sources_for",
    "supported_for",
]

# Memory that downloaded wheels may take instead of temporary files (32 MiB at most
# each); larger wheels, and those whose size is not announced, go to disk.
IN_MEMORY_DOWNLOADS = 256 << 20


@dataclass(frozen=True)
class InstallOptions:
    """Everything ``wheelwise install`` takes (see the command's help)."""

    requirements: Sequence[str] = ()
    constraints: Sequence[str] = ()
    index_url: str | None = DEFAULT_INDEX_URL
    extra_index_urls: Sequence[str] = ()
    find_links: Sequence[str] = ()
    upgrade: bool = False
    pre: bool = False
    no_deps: bool = False
    python: Path | None = None
    no_variant: bool = False
    variant_choice: Mapping[str, str] = field(default_factory=dict)
    system: SupportedProperties | None = None
    allowed_providers: Sequence[str] = ()
    enabled_providers: Sequence[str] = ()
    dry_run: bool = False
    require_hashes: bool = False
    break_system_packages: bool = False
    timeout: float = 15.0
    # Seconds for one request: a page or metadata file, or a wheel (which also gets
    # 1 s per 16 KiB received); see wheelwise.index.bounded.
    request_deadline: float = DEFAULT_DEADLINE
    # More tries after the first, on connection errors, timeouts and 5xx answers.
    retries: int = 3
    # The cache root (default: the user cache dir): wheels/, metadata/, http/, scratch/.
    cache_dir: Path | None = None
    # Neither read nor keep wheels, metadata files and pages in the cache.
    no_cache: bool = False
    progress: ProgressSink | None = None
    # Detect the machine again rather than reading the providers' cache, and
    # revalidate every cached page, however fresh.
    refresh: bool = False
    # Hears each problem that was worked around, one line each (from any thread).
    warn: Warn | None = None


@dataclass(frozen=True)
class PlannedPackage:
    """One resolved package, with where it comes from and whether it gets installed."""

    package: ResolvedPackage
    file: IndexFile
    source: IndexSource
    requested: bool
    # Already installed at this version (and variant): left alone.
    skipped: bool
    properties: tuple[str, ...]
    metadata: bytes = field(repr=False)
    # Where the variant metadata that chose the wheel came from (its URL, or
    # finder.WHEELS_METADATA); None for a wheel chosen without any.
    variant_source: str | None = None

    @property
    def name(self) -> NormalizedName:
        return self.package.name


class InstallOutcome(NamedTuple):
    """What :func:`run_install` did (or, for a dry run, would do)."""

    environment: TargetEnvironment
    plan: list[PlannedPackage]
    dry_run: bool
    report: InstallReport | None = None

    @property
    def to_install(self) -> list[PlannedPackage]:
        return [p for p in self.plan if not p.skipped]


def sources_for(options: InstallOptions) -> list[IndexSource]:
    """The package sources in priority order: index, extra indexes, find-links."""
    sources: list[IndexSource] = []
    if options.index_url:
        sources.append(IndexSource.index(options.index_url))
    sources += [IndexSource.index(url) for url in options.extra_index_urls]
    sources += [IndexSource.find_links(location) for location in options.find_links]
    if not sources:
        raise ResolveError("no package source: give --index-url or --find-links")
    return sources


def caches_for(options: InstallOptions) -> tuple[Path, ContentCache | None]:
    """The cache root (see cache_root_of), and its wheel and metadata stores unless
    ``no_cache``."""
    cache_root = cache_root_of(options)
    return cache_root, None if options.no_cache else ContentCache.at(cache_root)


def index_client(
    options: InstallOptions, cache_root: Path, kept: ContentCache | None
) -> IndexClient:
    """The client for *options*' timeouts, retries and caches (see caches_for)."""
    return IndexClient(
        timeout=options.timeout,
        deadline=options.request_deadline,
        retry=RetryPolicy(retries=options.retries),
        warn=options.warn,
        cache_dir=cache_root / "http",
        cache=kept is not None,
        revalidate=options.refresh,
        metadata_cache=kept.metadata if kept is not None else None,
    )


def supported_for(
    options: InstallOptions, markers: Mapping[str, str]
) -> Callable[[VariantMetadata], SupportedProperties]:
    """What the target supports, per release's metadata: ``--system`` or detection,
    with providers' ``enable-if`` evaluated for the target environment (*markers*).
    Notes (a static claim on a built-in namespace ignored) go to ``options.warn``,
    each once."""
    noted: set[str] = set()

    def detect(metadata: VariantMetadata) -> SupportedProperties:
        # Imported on the first release with variant wheels: most installs have none,
        # and the providers' modules take ~8 ms to import.
        from wheelwise.providers.machine import MachineOptions, machine_for

        machine = MachineOptions(
            options.allowed_providers,
            options.enabled_providers,
            markers=markers,
            abi_from_installed=False,
            plugins_refused=(
                "--require-hashes is on, and pip would install the plugin without hash checks"
                if options.require_hashes
                else None
            ),
        )
        view = machine_for(metadata, machine, system=options.system)
        for note in view.notes:
            if options.warn is not None and note not in noted:
                noted.add(note)
                options.warn(note)
        return view.supported

    return detect


def _requested(requirements: Sequence[str]) -> set[str]:
    names: set[str] = set()
    for text in requirements:
        try:
            names.add(canonicalize_name(parse_requirement(text).name))
        except InvalidRequirement:
            continue  # the resolver reports it
    return names


def cache_root_of(options: InstallOptions) -> Path:
    """``options.cache_dir``, else the user cache folder."""
    return options.cache_dir if options.cache_dir is not None else Path(user_cache_dir())


def prepare_target(env: TargetEnvironment, options: InstallOptions) -> dict[str, InstalledDist]:
    """What is installed in *env*, by name, once it is known to be usable: refused
    when externally managed (PEP 668; not for a dry run, nor with
    ``break_system_packages``), recovered from a killed run (not for a dry run), and
    with the machine detected afresh for ``refresh`` (unless ``system`` is given)."""
    if env.is_externally_managed and not options.break_system_packages and not options.dry_run:
        raise ExternallyManagedError(
            f"{env.prefix} is externally managed (PEP 668: "
            f"{env.stdlib / 'EXTERNALLY-MANAGED'}); use a virtual environment, or pass "
            "--break-system-packages to override"
        )
    if not options.dry_run:  # what a killed run left must not count as installed
        recover(env, warn=options.warn)
    installed = {dist.name: dist for dist in list_installed(env)}
    if options.refresh and options.system is None:
        # Once, now: every release's detection then reads the fresh cache.
        from wheelwise.providers.detect import detect_cached

        detect_cached(refresh=True)
    return installed


def run_install(options: InstallOptions, query: PendingEnvironment | None = None) -> InstallOutcome:
    """Resolve *options*' requirements for the target and install them (all or
    nothing). Raises ResolveError, SourceError, InstallError (and subclasses).

    *query*: the query of ``options.python`` (``TargetEnvironment.start_query``), if
    the caller started it already, so that it runs while this module loads; closed
    here. A requirement may choose its variant, ``torch#cu128``
    (:func:`~wheelwise.install.variant_requirement.apply_variant_labels`; raises
    VariantRequirementError)."""
    requirements, variant_choice = apply_variant_labels(
        options.requirements, options.variant_choice
    )
    sources = sources_for(options)
    cache_root, kept = caches_for(options)
    # The target interpreter answers while the client starts and the requested
    # projects' listings download.
    with (
        (
            query
            if query is not None
            else TargetEnvironment.start_query(options.python or sys.executable)
        ) as pending,
        index_client(options, cache_root, kept) as client,
        ListingPrefetcher(sources, client) as prefetcher,
    ):
        requested = _requested(requirements)
        prefetcher.want(sorted(requested))  # the metadata comes once the target is known
        env = pending.result()
        installed = prepare_target(env, options)
        python_version = ".".join(str(part) for part in env.version_info)
        # Small wheels stay in memory: nothing to write, and delete, on disk. Each
        # candidate the resolver pins starts downloading (a dry run downloads
        # nothing), and each wheel is checked as soon as it is complete.
        verified: dict[Path | InMemoryWheel, VerifiedWheel] = {}

        def check(wheel: Path | InMemoryWheel) -> None:
            verified[wheel] = verify_wheel(wheel)

        speculative = SpeculativeDownloads(
            client.http_source,
            budget=IN_MEMORY_DOWNLOADS,
            then=check,
            deadline=options.request_deadline,
            cache=kept.wheels if kept is not None else None,
        )
        finder = IndexFinder(
            sources,
            client,
            tags=env.tags,
            python_version=python_version,
            cache_dir=None,
            prefetcher=prefetcher,
            early=(
                None
                if options.dry_run
                else _EarlyWheels(speculative, _installed_versions(installed), verified)
            ),
            warn=options.warn,
            wheel_cache=kept.wheels if kept is not None else None,
        )
        try:
            try:
                resolution = resolve(
                    requirements,
                    finder,
                    supported=supported_for(options, env.markers),
                    tags=env.tags,
                    environment=env.markers,
                    constraints=options.constraints,
                    pre=options.pre,
                    upgrade=options.upgrade,
                    installed={name: dist.version for name, dist in installed.items()},
                    no_deps=options.no_deps,
                    no_variant=options.no_variant,
                    variant_choice=variant_choice,
                )
            except PackageNotFound as exc:
                searched = ", ".join(source_label(source) for source in sources)
                raise PackageNotFound(f"{exc}; searched {searched}") from None
            finally:
                prefetcher.close()  # no thread left running: the installer may fork
            if options.warn is not None:
                for note in resolution.notes:
                    options.warn(note)
            plan: list[PlannedPackage] = []
            for package in resolution:
                link = package.file.link
                assert isinstance(link, Link)
                current = installed.get(package.name)
                # An abi_dependency build must match its dependency's resolved version:
                # another installed build of the same version is replaced, even without -U.
                keep_variant = not options.upgrade and not package.abi
                skipped = (
                    current is not None
                    and package.is_installed
                    and (keep_variant or current.variant == package.label)
                )
                release = finder.release(package.name, package.version)
                metadata = release.variant_metadata() if release is not None else None
                properties: tuple[str, ...] = ()
                variant_source = None
                if metadata is not None and package.label in metadata.variants:
                    properties = tuple(str(p) for p in metadata.properties(package.label))
                    assert release is not None
                    variant_source = release.variant_source
                plan.append(
                    PlannedPackage(
                        package=package,
                        file=link.file,
                        source=link.source,
                        requested=package.name in requested,
                        skipped=skipped,
                        properties=properties,
                        metadata=finder.core_metadata(package.file),
                        variant_source=variant_source,
                    )
                )
            if options.dry_run:
                return InstallOutcome(env, plan, dry_run=True)
            if env.is_externally_managed and not options.break_system_packages:
                raise ExternallyManagedError(f"{env.prefix} is externally managed (PEP 668)")
            wanted = [p for p in plan if not p.skipped]
            for planned in wanted:
                usable = DownloadItem(planned.file.url, planned.file.hashes).expected_hashes()
                if options.require_hashes and not usable:
                    raise DownloadError(
                        planned.file.url,
                        "the source gives no sha256 (or stronger) hash for it, and "
                        "--require-hashes is on",
                    )
            with make_scratch("download", options.cache_dir) as folder:
                items = []
                # Wheels the finder took from the cache (hashed then): used where they
                # are, checked in the download threads.
                in_cache: dict[str, Path] = {}
                for planned in wanted:
                    cached = finder.cached_wheel(planned.file)
                    if kept is not None and cached is not None and kept.wheels.holds(cached):
                        in_cache[planned.file.url] = cached
                        cached = None
                    url = cached.as_uri() if cached is not None else planned.file.url
                    items.append(
                        DownloadItem(
                            url, planned.file.hashes, planned.file.filename, planned.file.size
                        )
                    )

                def ready(item: DownloadItem) -> Path | InMemoryWheel | None:
                    found = in_cache.get(item.url)
                    if found is None:
                        return speculative.take(item)
                    check(found)
                    return found

                try:
                    found = download_wheels(
                        items,
                        folder,
                        in_memory=IN_MEMORY_DOWNLOADS - speculative.bytes_taken,
                        client=client.http_source,
                        progress=options.progress,
                        require_hashes=options.require_hashes,
                        timeout=options.timeout,
                        retries=options.retries + 1,
                        deadline=options.request_deadline,
                        then=check,
                        ready=ready,
                        cache=kept.wheels if kept is not None else None,
                    )
                finally:
                    speculative.close()  # no thread left running: the installer may fork
                # Every download path (early, cached while resolving, or now) ends here.
                for planned, wheel in zip(wanted, found, strict=True):
                    if planned.file.core_metadata:
                        check_core_metadata(
                            planned.file.metadata_url,
                            planned.metadata,
                            planned.file.filename,
                            verified[wheel].metadata,
                        )
                    check_variant_consistency(
                        verified[wheel],
                        planned.package.label,
                        planned.properties,
                        planned.variant_source,
                    )
                report = install_wheels(
                    env,
                    [verified[wheel] for wheel in found],
                    break_system_packages=options.break_system_packages,
                    warn=options.warn,
                )
        finally:
            speculative.close()
            finder.close()
    return InstallOutcome(env, plan, dry_run=False, report=report)


def _installed_versions(installed: Mapping[str, InstalledDist]) -> set[tuple[str, str]]:
    return {(name, canonicalize_version(dist.version)) for name, dist in installed.items()}


class _EarlyWheels(NamedTuple):
    """The finder's early downloads: into memory, verified as each completes."""

    downloads: SpeculativeDownloads
    installed: set[tuple[str, str]]
    """(name, version) of what is installed: most likely kept, so not downloaded."""
    verified: Mapping[Path | InMemoryWheel, VerifiedWheel]

    def start(self, file: IndexFile) -> Future[int | None] | None:
        wheel = file.wheel
        version = None if wheel is None else (wheel.name, canonicalize_version(wheel.version))
        if version in self.installed:
            return None
        return self.downloads.start(_item(file))

    def queued(self, file: IndexFile) -> bool:
        return self.downloads.queued(_item(file))

    def metadata(self, file: IndexFile) -> bytes | None:
        verified = self._verified(file)
        return verified.metadata if verified is not None else None

    def requires_dist(self, file: IndexFile) -> list[str] | None:
        verified = self._verified(file)
        return list(verified.requires_dist) if verified is not None else None

    def _verified(self, file: IndexFile) -> VerifiedWheel | None:
        wheel = self.downloads.peek(_item(file))
        return self.verified[wheel] if wheel is not None else None


def _item(file: IndexFile) -> DownloadItem:
    return DownloadItem(file.url, file.hashes, file.filename, file.size)


# -- the installation report (pip's format, version 1) --------------------------------

_MULTI = {
    "classifier",
    "dynamic",
    "license_file",
    "obsoletes_dist",
    "platform",
    "project_url",
    "provides_dist",
    "provides_extra",
    "requires_dist",
    "requires_external",
    "supported_platform",
}


def metadata_json(raw: bytes) -> dict[str, Any]:
    """The JSON form of core metadata (PEP 566): lower-case keys with underscores,
    multiple-use fields as lists, ``keywords`` split, the body as ``description``."""
    message = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(raw)
    result: dict[str, Any] = {}
    for key in dict.fromkeys(message.keys()):
        name = key.lower().replace("-", "_")
        values = [str(v) for v in message.get_all(key) or []]
        if name == "keywords":
            result[name] = [k.strip() for k in values[0].replace(",", " ").split() if k.strip()]
        elif name in _MULTI:
            result[name] = values
        else:
            result[name] = values[0]
    body = message.get_payload()
    if isinstance(body, str) and body.strip() and "description" not in result:
        result["description"] = body
    return result


def installation_report(outcome: InstallOutcome) -> dict[str, Any]:
    """pip's installation report (version ``1``) for *outcome*'s packages to install,
    with a ``variant`` object per item and ``installer`` naming wheelwise.

    pip's ``pip_version`` is left out: consumers read it as the version of pip that
    wrote the report, and no pip did; ``installer`` says what did."""
    items = []
    for planned in outcome.to_install:
        hashes = dict(planned.file.hashes)
        archive_info: dict[str, Any] = {"hashes": hashes}
        if "sha256" in hashes:
            archive_info["hash"] = f"sha256={hashes['sha256']}"
        label = planned.package.label
        items.append(
            {
                "download_info": {"url": planned.file.url, "archive_info": archive_info},
                "is_direct": False,
                "is_yanked": planned.file.yanked,
                "requested": planned.requested,
                "metadata": metadata_json(planned.metadata),
                "variant": (
                    None
                    if label is None
                    else {"label": label, "properties": list(planned.properties)}
                ),
            }
        )
    return {
        "version": "1",
        "installer": {"name": "wheelwise", "version": __version__},
        "install": items,
        "environment": dict(outcome.environment.markers),
    }
