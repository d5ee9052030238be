"""``wheelwise install`` as a library call, in three stages with plain values between
them, as a planner, a preparer and an installer:

1. decide (:mod:`wheelwise.resolve.decide`): resolve the requirements for the target
   and choose each wheel; a :class:`~wheelwise.resolve.decide.Plan`, and nothing
   changed. A dry run stops here.
2. fetch (:mod:`wheelwise.install.fetch`): the plan's wheels through the one
   :class:`~wheelwise.fetch.download.Fetcher`, each verified and checked against
   the variant metadata it was chosen by.
3. install (:func:`~wheelwise.install.transaction.install_wheels`): one atomic
   transaction.

What makes it fast lives beside the stages, in one collaborator: the
:class:`~wheelwise.resolve.lookahead.Lookahead` fetches listings, metadata files and
the wheels of pinned candidates while the resolver works, and hands the fetch stage
the wheels it has (verified the same way as any other). Wheels and PEP 658 metadata
files are kept in the cache by their hash (:mod:`wheelwise.cache.wheel_cache`),
and index pages by URL (:mod:`wheelwise.cache.http_cache`), unless ``no_cache``.
Nothing here prints: problems that were worked around (invalid variant metadata)
go to ``InstallOptions.warn``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from packaging.utils import NormalizedName, canonicalize_version, parse_sdist_filename

from wheelwise import __version__
from wheelwise.client.defaults import DEFAULT_INDEX_URL
from wheelwise.environment.installed import InstalledDist, importable_installed, missing_from_venv
from wheelwise.environment.interpreter import (
    PendingEnvironment,
    TargetEnvironment,
    refuse_externally_managed,
)
from wheelwise.environment.satisfied import installed_closure
from wheelwise.install.journal import pending as journal_pending
from wheelwise.install.options import (
    InstallOptions,
    cache_root_of,
    caches_for,
    finder_for,
    index_client,
    placement_for,
    requested_names,
    routes_for,
    sources_for,
    supported_for,
)
from wheelwise.models.errors import ChangedCacheEntries, InstallError, ResolveError
from wheelwise.resolve.direct import DirectReference, parse_direct
from wheelwise.resolve.user_hashes import Hashes, check_planned, requested_hashes
from wheelwise.resolve.variant_requirement import apply_variant_labels

# What resolving and installing take is imported by the functions that do it: an
# install that finds every requirement installed needs none of it (bench/noop.py).
if TYPE_CHECKING:
    from wheelwise.cache.stores import ContentCache
    from wheelwise.client.index_client import IndexFile
    from wheelwise.fetch.download import DownloadItem, Fetched
    from wheelwise.fetch.verify import VerifiedWheel
    from wheelwise.install.head_start import HeadStart
    from wheelwise.install.transaction import InstallReport
    from wheelwise.resolve.decide import Plan, PlannedPackage
    from wheelwise.resolve.finder import BuildSource
    from wheelwise.sources.builder import SourceBuilder

__all__ = [
    "DEFAULT_INDEX_URL",
    "InstallOptions",
    "InstallOutcome",
    "bound_cache",
    "cache_root_of",
    "caches_for",
    "index_client",
    "installation_report",
    "placement_for",
    "prepare_target",
    "run_install",
    "sources_for",
    "supported_for",
]

# Memory that downloaded wheels may take instead of temporary files (32 MiB at most
# each); larger wheels, and those whose size is not announced, go to disk.
IN_MEMORY_DOWNLOADS = 256 << 20


class InstallOutcome(NamedTuple):
    """What :func:`run_install` did (or, for a dry run, would do)."""

    environment: TargetEnvironment
    plan: list[PlannedPackage]
    dry_run: bool
    report: InstallReport | None = None
    satisfied: tuple[InstalledDist, ...] = ()
    """What satisfied every requirement, found without resolving (the plan is then
    empty; see :mod:`wheelwise.environment.satisfied`)."""

    @property
    def to_install(self) -> list[PlannedPackage]:
        return [p for p in self.plan if not p.skipped]


def install_location(
    env: TargetEnvironment,
    target_dir: Path | None,
    prefix_dir: Path | None,
    user: bool,
    *,
    make: bool,
) -> TargetEnvironment:
    """*env*, or its interpreter installing into *target_dir* (``--target``), with
    *prefix_dir* (``--prefix``; either folder made if missing, with *make*) or into
    its user site (``--user``). Raises InstallError when that cannot be."""
    if user:
        return env.in_user_site()
    folder = target_dir or prefix_dir
    if folder is None:
        return env
    flag = "--target" if target_dir is not None else "--prefix"
    if folder.exists() and not folder.is_dir():
        raise InstallError(f"{flag} {folder}: not a folder; give a folder to install into")
    if make:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InstallError(
                f"{flag} {folder}: cannot make the folder ({exc.strerror or exc})"
            ) from None
    return env.in_folder(folder) if target_dir is not None else env.in_prefix(folder)


def _may_be_satisfied(
    options: InstallOptions,
    references: Sequence[DirectReference],
    variant_choice: Mapping[str, str],
) -> bool:
    """Whether *options* leave every installed version that fits as it is, so that
    what is installed may answer the install alone: no direct reference, variant
    choice, constraint, ``--upgrade`` or reinstall; not a dry run, which shows the
    resolver's plan."""
    return bool(options.requirements) and not (
        references
        or variant_choice
        or options.constraints
        or options.upgrade
        or options.upgrade_packages
        or options.reinstall
        or options.dry_run
    )


def _surely_missing(options: InstallOptions, requirements: Sequence[str]) -> bool:
    """Whether a requirement is known not to be installed before the target
    interpreter answers (a virtual environment without it): then nothing waits for
    that answer, and it comes while the resolver's modules load."""
    if options.target_dir or options.prefix_dir or options.user:
        return False
    python = Path(options.python) if options.python else Path(sys.executable)
    return missing_from_venv(python, requested_names(requirements))


def _target(
    env: TargetEnvironment, options: InstallOptions
) -> tuple[TargetEnvironment, dict[str, InstalledDist]]:
    """Where *options* install with *env*'s interpreter, and what is installed there
    (see :func:`install_location` and :func:`prepare_target`)."""
    env = install_location(
        env, options.target_dir, options.prefix_dir, options.user, make=not options.dry_run
    )
    return env, prepare_target(env, options)


def prepare_target(env: TargetEnvironment, options: InstallOptions) -> dict[str, InstalledDist]:
    """What is installed in *env*, by name, once it is known to be usable: refused
    when externally managed (PEP 668; not for a dry run, nor with
    ``break_system_packages``), recovered from a killed run (not for a dry run), and
    with the machine detected afresh for ``refresh`` (unless ``system`` is given)."""
    if not options.dry_run:
        if not options.break_system_packages:
            refuse_externally_managed(env, override="--break-system-packages")
        if journal_pending(env.prefix):  # what a killed run left must not count as installed
            from wheelwise.install.transaction import recover

            recover(env, warn=options.warn)
    installed = {dist.name: dist for dist in importable_installed(env)}
    if options.refresh and options.system is None:
        # Once, now: every release's detection then reads the fresh cache.
        from wheelwise.providers.detect import detect_cached

        detect_cached(refresh=True)
    return installed


def refuse_shadowed(plan: Plan, installed: Mapping[str, InstalledDist]) -> None:
    """Raise InstallError where *plan* would change a distribution that sits in a
    site folder the interpreter imports before the target's (``--user`` in a
    virtual environment that sees the user site): the version installed would never
    be imported. pip refuses the same."""
    before = set(plan.environment.sites_before)
    for package in plan.to_install:
        dist = installed.get(package.name)
        if dist is not None and dist.location.parent in before:
            raise InstallError(
                f"--user: {package.name} {dist.version} in {dist.location.parent} is "
                "imported before the user site, so the version installed there would not "
                f"be; install {package.name} without --user"
            )


def split_references(
    requirements: Sequence[str], editables: Sequence[str]
) -> tuple[list[str], list[DirectReference]]:
    """*requirements* on releases, and the direct references among them and in
    *editables* (``-e``). Raises ResolveError for a reference that cannot be used."""
    plain: list[str] = []
    references: list[DirectReference] = []
    for text in requirements:
        found = parse_direct(text)
        if found is None:
            plain.append(text)
        else:
            references.append(found)
    for text in editables:
        found = parse_direct(text, editable=True)
        assert found is not None  # an editable is a folder, or refused
        references.append(found)
    return plain, references


def run_install(options: InstallOptions, query: PendingEnvironment | None = None) -> InstallOutcome:
    """Resolve *options*' requirements for the target and install them (all or
    nothing). Raises ResolveError, SourceError, InstallError, BuildError (and
    subclasses).

    *query*: the query of ``options.python`` (``TargetEnvironment.start_query``), if
    the caller started it already, so that it runs while this module loads; closed
    here. A requirement may choose its variant, ``torch#cu128``
    (:func:`~wheelwise.resolve.variant_requirement.apply_variant_labels`; raises
    VariantRequirementError), or name a source (:mod:`wheelwise.resolve.direct`)."""
    requirements, references = split_references(options.requirements, options.editables)
    user_hashes: dict[NormalizedName, Hashes] | None = None
    if options.require_hashes or options.hashes:
        references = [
            dataclasses.replace(one, hashes=(*one.hashes, *options.hashes.get(one.text, ())))
            for one in references
        ]
        user_hashes = requested_hashes(requirements, references, options.hashes)
    requirements, variant_choice = apply_variant_labels(requirements, options.variant_choice)
    # The target interpreter answers while the rest of this starts.
    pending = (
        query
        if query is not None
        else TargetEnvironment.start_query(options.python or sys.executable)
    )
    with pending:
        target: tuple[TargetEnvironment, dict[str, InstalledDist]] | None = None
        if _may_be_satisfied(options, references, variant_choice) and not _surely_missing(
            options, requirements
        ):
            # Everything may be installed already: then no index is read at all.
            target = _target(pending.result(), options)
            env, installed = target
            found = installed_closure(requirements, installed, env.markers, no_deps=options.no_deps)
            if found is not None:
                return InstallOutcome(env, [], dry_run=False, satisfied=tuple(found))
        return _resolve_and_install(
            options, requirements, references, variant_choice, pending, target, user_hashes
        )


def _resolve_and_install(
    options: InstallOptions,
    requirements: list[str],
    references: list[DirectReference],
    variant_choice: Mapping[str, str],
    pending: PendingEnvironment,
    target: tuple[TargetEnvironment, dict[str, InstalledDist]] | None,
    user_hashes: Mapping[NormalizedName, Hashes] | None = None,
) -> InstallOutcome:
    """:func:`run_install` once what is installed does not answer it: resolve, fetch,
    install. *target*: where it installs and what is there, if known already.
    *user_hashes*: in hash-checking mode, the hashes given for each project."""
    cache_root, kept = caches_for(options)
    requested = requested_names(requirements)
    with contextlib.ExitStack() as stack:
        # Its worker is forked before any thread starts (see head_start), and before
        # what resolving takes is loaded: it reads ahead meanwhile.
        head = _head_start(options, kept, requested, stack)
        from wheelwise.cache.scratch import LazyScratch, make_scratch
        from wheelwise.client.index_client import IndexSource
        from wheelwise.fetch.download import Fetcher
        from wheelwise.install.bytecode import compile_installed
        from wheelwise.install.fetch import Verifier, fetch
        from wheelwise.install.head_start import HeadStartFailed
        from wheelwise.install.transaction import install_wheels
        from wheelwise.resolve.decide import decide
        from wheelwise.resolve.lookahead import Lookahead
        from wheelwise.sources.direct import prepare_references

        sources = sources_for(options, references=bool(references))
        # Made only for a build or a direct reference: most installs need none.
        scratch = stack.enter_context(contextlib.closing(LazyScratch("build", options.cache_dir)))
        if references:  # their wheels: the first source, listed once they are built
            local = scratch.path / "wheels"
            local.mkdir()
            sources = [IndexSource.find_links(local), *sources]
        client = stack.enter_context(index_client(options, cache_root, kept))
        # Installs are for this machine: its platform is the target's.
        routes = routes_for(options, sys.platform)
        lookahead = stack.enter_context(Lookahead(sources, client, routes, options.index_strategy))
        lookahead.want(sorted(requested))  # the metadata comes once the target is known
        env, installed = target if target is not None else _target(pending.result(), options)
        # Small wheels stay in memory: nothing to write, and delete, on disk.
        fetcher = Fetcher(
            client.http_source,
            retry=client.retry,
            deadline=options.request_deadline,
            cache=kept.wheels if kept is not None else None,
            unpacked=kept.unpacked if kept is not None else None,
            in_memory=IN_MEMORY_DOWNLOADS,
            downloads=options.concurrent_downloads,
        )
        builder = source_builder(options, env, lambda: scratch.path, cache_root, kept is not None)
        direct_urls: dict[str, str] = {}
        if references:
            prepared = prepare_references(
                references, builder=builder, fetcher=fetcher, folder=local, scratch=scratch.path
            )
            requirements = [*(one.requirement for one in prepared), *requirements]
            direct_urls = {one.name: one.direct_url for one in prepared}
            requested |= set(direct_urls)
        verify = Verifier()
        finder = finder_for(
            options,
            sources,
            client,
            kept,
            tags=env.tags,
            python_version=".".join(str(part) for part in env.version_info),
            fetcher=fetcher,
            build=finder_build(builder),
            routes=routes,
        )
        stack.enter_context(contextlib.closing(finder))
        # Each candidate the resolver pins starts downloading (a dry run downloads
        # nothing), and each wheel is checked as soon as it is complete.
        if not options.dry_run:
            lookahead.serve(
                finder,
                fetcher=fetcher,
                verify=verify,
                installed=_versions(installed),
                pinned=_offer_to(head, env, installed, options),
            )
        else:
            lookahead.serve(finder)
        plan = decide(
            requirements,
            env,
            installed,
            lookahead,
            requested=requested,
            upgrade=options.upgrade or options.upgrade_packages,
            supported=supported_for(options, env.markers),
            constraints=options.constraints,
            pre=options.pre,
            no_deps=options.no_deps,
            no_variant=options.no_variant,
            variant_choice=variant_choice,
            reinstall=options.reinstall,
            direct_urls=direct_urls,
        )
        if options.warn is not None:
            for note in plan.notes:
                options.warn(note)
        refuse_shadowed(plan, installed)
        if user_hashes is not None:
            check_planned([p.name for p in plan.to_install], user_hashes, list(direct_urls))
        if options.dry_run:
            return InstallOutcome(env, list(plan.packages), dry_run=True)
        with make_scratch("download", options.cache_dir) as folder:

            def fetched(
                ready: Callable[[DownloadItem], Fetched | None] | None,
            ) -> list[VerifiedWheel]:
                return fetch(
                    plan,
                    fetcher,
                    Path(folder),
                    verify,
                    ready=ready,
                    progress=options.progress,
                    # (--require-hashes is hash-checking mode: the user's hashes.)
                    unpack_into=kept.unpacked if kept is not None else None,
                    user_hashes=user_hashes,
                )

            def installed_from(
                wheels: list[VerifiedWheel], head_start: HeadStart | None = None
            ) -> InstallReport:
                return install_wheels(
                    env,
                    wheels,
                    break_system_packages=options.break_system_packages,
                    warn=options.warn,
                    placement=placement_for(options, kept),
                    head_start=head_start,
                )

            try:
                wheels = fetched(lookahead.take)
            finally:
                lookahead.close()  # no thread left running: the installer may fork
            try:
                report = installed_from(wheels, head)
            except HeadStartFailed:  # rolled back: made again the usual way, which tells why
                report = installed_from(wheels)
            except ChangedCacheEntries:  # those entries are gone: their wheels again
                report = installed_from(fetched(None))
    compile_installed(env, report.installed, options)
    bound_cache(options, kept, cache_root)
    return InstallOutcome(env, list(plan.packages), dry_run=False, report=report)


def _head_start(
    options: InstallOptions,
    kept: ContentCache | None,
    requested: set[str],
    stack: contextlib.ExitStack,
) -> HeadStart | None:
    """A head start for an install into an environment (not a dry run, nor a
    folder given by ``--target``, ``--prefix`` or ``--user``) through the unpacked
    cache; closed with *stack*."""
    from wheelwise.install.head_start import HeadStart

    plain = not (options.target_dir or options.prefix_dir or options.user)
    if options.dry_run or kept is None or not plain:
        return None
    head = HeadStart(placement_for(options, kept), requested)
    stack.callback(head.close)
    return head


def _offer_to(
    head: HeadStart | None,
    env: TargetEnvironment,
    installed: Mapping[str, InstalledDist],
    options: InstallOptions,
) -> Callable[[IndexFile], None] | None:
    """What tells *head* of each wheel the resolver pins."""
    if head is None:
        return None
    return functools.partial(
        head.offer,
        env=env,
        installed=installed,
        warn=options.warn,
        break_system_packages=options.break_system_packages,
    )


def source_builder(
    options: InstallOptions,
    env: TargetEnvironment,
    scratch: Callable[[], Path],
    cache_root: Path,
    keep: bool,
) -> SourceBuilder:
    """The builder of *options*' install into *env*: built files in the folder
    *scratch* gives, kept in the cache under *cache_root* with *keep*."""
    from wheelwise.cache.built_wheels import BuiltWheels
    from wheelwise.sources.builder import SourceBuilder

    return SourceBuilder(
        env,
        scratch,
        BuiltWheels(cache_root / "built") if keep else None,
        install=functools.partial(_install_build_requirements, options),
        isolation=options.build_isolation,
        machine="this machine" if options.system is None else f"system {options.system!r}",
        chain=options.build_chain,
        told=options.on_build,
        output=options.build_output,
        config_settings=options.config_settings,
    )


def finder_build(builder: SourceBuilder) -> BuildSource:
    """How a finder builds the sdists it picks, with *builder*."""
    return functools.partial(_build_sdist, builder)


def _install_build_requirements(
    options: InstallOptions, python: str, requirements: Sequence[str], chain: tuple[str, ...]
) -> None:
    """Install *requirements* into the build environment of *python*, resolved for
    this install's target machine, from its sources and caches."""
    nested = dataclasses.replace(
        options,
        requirements=list(requirements),
        constraints=(),
        editables=(),
        python=Path(python),
        target_dir=None,
        prefix_dir=None,
        user=False,
        upgrade=False,
        no_deps=False,
        dry_run=False,
        reinstall=False,
        progress=None,
        compile_bytecode=False,
        break_system_packages=True,
        build_chain=chain,
        max_cache_size=None,
    )
    try:
        run_install(nested)
    except (InstallError, ResolveError) as exc:
        from wheelwise.wheels.errors import BuildError

        raise BuildError(
            f"{chain[-1]}: cannot install its build requirements ({', '.join(requirements)}): {exc}"
        ) from None


def _build_sdist(builder: SourceBuilder, sdist: IndexFile, archive: Path) -> Path:
    """The finder's way to build *sdist* (downloaded to *archive*)."""
    from wheelwise.client.index_client import local_path
    from wheelwise.policy.hashes import trusted_hashes

    expect = parse_sdist_filename(sdist.filename)
    origin = sdist.url
    if sdist.url.startswith("file:"):
        origin = str(local_path(sdist.url))
    return builder.sdist(
        archive, origin=origin, sha256=trusted_hashes(sdist.hashes).get("sha256"), expect=expect
    )


def bound_cache(options: InstallOptions, kept: ContentCache | None, cache_root: Path) -> None:
    """With ``options.max_cache_size``, remove the least recently used unpacked
    wheels and wheel files until the cache holds no more."""
    if options.max_cache_size is None or kept is None:
        return
    from wheelwise.cache.cleanup import enforce_size

    enforce_size(cache_root, options.max_cache_size)


def _versions(installed: Mapping[str, InstalledDist]) -> set[tuple[str, str]]:
    """(name, version) of each installed distribution: most likely kept, so its
    wheel is not downloaded early."""
    return {(name, canonicalize_version(dist.version)) for name, dist in installed.items()}


# -- the installation report (pip's format, version 1) --------------------------------


def metadata_json(raw: bytes) -> dict[str, Any]:
    """The JSON form of core metadata (PEP 566), as pip's report gives it."""
    from wheelwise.wheels.core_metadata import read_core_metadata

    return read_core_metadata(raw).to_json()


def installation_report(outcome: InstallOutcome) -> dict[str, Any]:
    """pip's installation report (version ``1``) for *outcome*'s packages to install,
    with a ``variant`` object per item and ``installer`` naming wheelwise.

    pip's ``pip_version`` is left out: consumers read it as the version of pip that
    wrote the report, and no pip did; ``installer`` says what did."""
    items = []
    for planned in outcome.to_install:
        # What was downloaded: the sdist a wheel was built from, else the wheel.
        origin = planned.built_from if planned.built_from is not None else planned.file
        hashes = dict(origin.hashes)
        archive_info: dict[str, Any] = {"hashes": hashes}
        if "sha256" in hashes:
            archive_info["hash"] = f"sha256={hashes['sha256']}"
        download_info: dict[str, Any] = {"url": origin.url, "archive_info": archive_info}
        if planned.direct_url is not None:  # PEP 610, as installed
            download_info = json.loads(planned.direct_url)
        label = planned.package.label
        items.append(
            {
                "download_info": download_info,
                "is_direct": planned.direct_url is not None,
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
