"""What ``wheelwise install`` (and ``lock``, ``sync``) take, and what follows from it:
the package sources, the caches, the index client, a finder that only lists, and what
the machine supports."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement
from packaging.utils import canonicalize_name

from wheelwise.cachedir import user_cache_dir
from wheelwise.client.bounded import DEFAULT_DEADLINE
from wheelwise.client.connection import Connection
from wheelwise.client.defaults import DEFAULT_INDEX_URL
from wheelwise.models.errors import ResolveError
from wheelwise.resolve.formats import FormatPolicy
from wheelwise.variants.markers import parse_requirement

# The client, caches and fetcher are imported by the functions that make them: an
# install that finds every requirement installed makes none (bench/noop.py).
if TYPE_CHECKING:
    from packaging.tags import Tag

    from wheelwise.cache.stores import ContentCache
    from wheelwise.client.index_client import IndexClient, IndexSource, Routes
    from wheelwise.client.index_strategy import IndexStrategy
    from wheelwise.environment.interpreter import TargetEnvironment
    from wheelwise.fetch.download import Fetcher, ProgressSink
    from wheelwise.install.link import Placement
    from wheelwise.resolve.finder import BuildSource, IndexFinder, Warn
    from wheelwise.resolve.selection import TargetSpec
    from wheelwise.resolve.upload_cutoff import UploadCutoffs
    from wheelwise.variants.metadata import VariantMetadata
    from wheelwise.variants.supported import SupportedProperties

__all__ = [
    "InstallOptions",
    "cache_root_of",
    "caches_for",
    "finder_for",
    "index_client",
    "placement_for",
    "requested_names",
    "sources_for",
    "supported_for",
]


@dataclass(frozen=True)
class InstallOptions:
    """Everything ``wheelwise install`` takes (see the command's help)."""

    requirements: Sequence[str] = ()
    constraints: Sequence[str] = ()
    index_url: str | None = DEFAULT_INDEX_URL
    extra_index_urls: Sequence[str] = ()
    find_links: Sequence[str] = ()
    # --index-strategy: first-index, unsafe-first-match or unsafe-best-match (None:
    # pip's way; see wheelwise.client.index_strategy).
    index_strategy: IndexStrategy | None = None
    upgrade: bool = False
    # -P NAME: these (normalized names) upgraded, the rest kept as --upgrade would not.
    upgrade_packages: frozenset[str] = frozenset()
    # PEP 517 config_settings for every build (-C KEY=VALUE; a key given twice: a list).
    config_settings: Mapping[str, str | list[str]] = field(default_factory=dict)
    pre: bool = False
    no_deps: bool = False
    python: Path | None = None
    # Install into this folder instead of the interpreter's environment (pip's and
    # uv's --target): see TargetEnvironment.in_folder.
    target_dir: Path | None = None
    # Install with this prefix instead of the environment's (pip's and uv's
    # --prefix): see TargetEnvironment.in_prefix.
    prefix_dir: Path | None = None
    # Install into the interpreter's user site (pip's --user): see
    # TargetEnvironment.in_user_site.
    user: bool = False
    no_variant: bool = False
    variant_choice: Mapping[str, str] = field(default_factory=dict)
    system: SupportedProperties | None = None
    allowed_providers: Sequence[str] = ()
    enabled_providers: Sequence[str] = ()
    dry_run: bool = False
    # Hash-checking mode (wheelwise.resolve.user_hashes): on with this, or with any
    # of *hashes* (the --hash options of a requirements file, by requirement text).
    require_hashes: bool = False
    hashes: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    break_system_packages: bool = False
    timeout: float = 15.0
    # Seconds for one request: a page or metadata file, or a wheel (which also gets
    # 1 s per 16 KiB received); see wheelwise.client.bounded.
    request_deadline: float = DEFAULT_DEADLINE
    # More tries after the first, on connection errors, timeouts and 5xx answers.
    retries: int = 3
    # The certificates, unchecked hosts and proxy of the command line.
    connection: Connection = field(default_factory=Connection)
    # Wheels downloaded at once (None: one per core, 4 to 16; see download_workers).
    concurrent_downloads: int | None = None
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
    # Byte-compile the installed modules with the target interpreter (uv's flag).
    compile_bytecode: bool = False
    # How files get from the unpacked-wheel cache into the environment: hardlink,
    # clone, copy or symlink (None: hardlink, else clone, else copy).
    link_mode: str | None = None
    # Bytes the cache may hold once the install is done (least recently used go).
    max_cache_size: int | None = None
    # Install again what is installed already: every package (True), or those named
    # (normalized names).
    reinstall: bool | frozenset[str] = False
    # Project folders installed in editable mode (-e; PEP 660).
    editables: Sequence[str] = ()
    # Which projects may be built from sdists, and which may not take published
    # wheels (--only-binary, --no-binary).
    formats: FormatPolicy = field(default_factory=FormatPolicy)
    # --torch-backend: auto, cpu, cuNNN, rocmX.Y or xpu (see routes_for).
    torch_backend: str | None = None
    # --exclude-newer and --exclude-newer-package: only files uploaded before a
    # project's moment.
    exclude_newer: UploadCutoffs | None = None
    # Build in a fresh environment whose build requirements wheelwise installs
    # (False: in the target environment, which must have them).
    build_isolation: bool = True
    # Hears one line as each build starts, and (build_output) each line a build
    # backend prints: `-v`.
    on_build: Callable[[str], None] | None = None
    build_output: Callable[[str], None] | None = None
    # The projects whose builds this install is for (build requirements of build
    # requirements...): a build that needs one of them again is refused.
    build_chain: tuple[str, ...] = ()


def placement_for(options: InstallOptions, kept: ContentCache | None) -> Placement:
    """The unpacked-wheel cache (unless ``no_cache``) and *options*' link mode."""
    from wheelwise.install.link import Placement

    return Placement(kept.unpacked if kept is not None else None, options.link_mode)


def sources_for(options: InstallOptions, *, references: bool = False) -> list[IndexSource]:
    """The package sources in priority order: the indexes (``--index-url`` first,
    else last with ``--index-strategy``: see :func:`ranked_indexes`), then find-links
    (first with a strategy: :func:`find_links_first`); none with *references*:
    requirements that name their own files need none."""
    from wheelwise.client.index_client import IndexSource
    from wheelwise.client.index_strategy import find_links_first, ranked_indexes

    strategy = options.index_strategy
    urls = ranked_indexes(options.index_url or None, options.extra_index_urls, strategy)
    indexes = [IndexSource.index(url) for url in urls]
    links = [IndexSource.find_links(location) for location in options.find_links]
    sources = [*links, *indexes] if find_links_first(strategy) else [*indexes, *links]
    if not sources and not references:
        raise ResolveError("no package source: give --index-url or --find-links")
    return sources


# The base of PyTorch's indexes (a mirror of https://download.pytorch.org/whl).
PYTORCH_INDEX_VARIABLE = "WHEELWISE_PYTORCH_INDEX"


def routes_for(options: InstallOptions, sys_platform: str) -> Routes | None:
    """The PyTorch indexes ``--torch-backend`` gives the projects of the PyTorch
    ecosystem, for a target on *sys_platform* (``auto``: the machine's, or
    ``--system``'s, variant properties); None without it."""
    if options.torch_backend is None:
        return None
    import os

    from wheelwise.client.index_client import IndexSource
    from wheelwise.resolve.torch_backend import (
        AUTO,
        PYTORCH_INDEX,
        TORCH_PROJECTS,
        backends_for,
    )

    supported: Mapping[str, Mapping[str, Sequence[str]]] = {}
    if options.system is not None:
        supported = options.system.namespaces
    elif options.torch_backend == AUTO:
        from wheelwise.providers.detect import detect_cached

        supported = detect_cached(refresh=options.refresh)[0].system.namespaces
    base = os.environ.get(PYTORCH_INDEX_VARIABLE, "").strip() or PYTORCH_INDEX
    backends = backends_for(options.torch_backend, supported, sys_platform)
    sources = [IndexSource.index(f"{base.rstrip('/')}/{name}/") for name in backends]
    return dict.fromkeys(TORCH_PROJECTS, sources)


def caches_for(options: InstallOptions) -> tuple[Path, ContentCache | None]:
    """The cache root (see cache_root_of), and its wheel and metadata stores unless
    ``no_cache``."""
    from wheelwise.cache.stores import ContentCache

    cache_root = cache_root_of(options)
    if options.no_cache:
        return cache_root, None
    try:
        cache_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        # A cache is never worth failing an install for: go on without it, as pip does.
        why = "not a folder" if isinstance(exc, FileExistsError) else exc.strerror
        if options.warn is not None:
            options.warn(
                f"{cache_root}: cannot be the cache ({why}); going on without one: set "
                "WHEELWISE_CACHE_DIR to a folder you can write, or give --no-cache"
            )
        return cache_root, None
    return cache_root, ContentCache.at(cache_root)


def index_client(
    options: InstallOptions, cache_root: Path, kept: ContentCache | None
) -> IndexClient:
    """The client for *options*' timeouts, retries and caches (see caches_for)."""
    from wheelwise.client.index_client import IndexClient
    from wheelwise.policy.retry import RetryPolicy

    return IndexClient(
        timeout=options.timeout,
        deadline=options.request_deadline,
        retry=RetryPolicy(retries=options.retries),
        warn=options.warn,
        cache_dir=cache_root / "http",
        cache=kept is not None,
        revalidate=options.refresh,
        metadata_cache=kept.metadata if kept is not None else None,
        connection=options.connection,
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
        # and need not load the providers' modules.
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


def requested_names(requirements: Sequence[str]) -> set[str]:
    """The canonical names of *requirements* (those that parse)."""
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


def finder_for(
    options: InstallOptions,
    sources: Sequence[IndexSource],
    client: IndexClient,
    kept: ContentCache | None,
    *,
    tags: Collection[Tag],
    python_version: str,
    fetcher: Fetcher | None = None,
    build: BuildSource | None = None,
    formats: FormatPolicy | None = None,
    routes: Routes | None = None,
) -> IndexFinder:
    """The finder of an install, a download, a lock or a listing, over *sources* for
    a target with *tags* and *python_version*: with *options*' warnings, upload
    moments, index strategy and formats (*formats* in their place), and the
    cache's wheels (*kept*, None without a cache)."""
    from wheelwise.resolve.finder import IndexFinder

    return IndexFinder(
        sources,
        client,
        tags=tags,
        python_version=python_version,
        warn=options.warn,
        wheel_cache=kept.wheels if kept is not None else None,
        fetcher=fetcher,
        build=build,
        formats=formats if formats is not None else options.formats,
        exclude_newer=options.exclude_newer,
        routes=routes,
        strategy=options.index_strategy,
    )


@contextlib.contextmanager
def listing_finder(
    options: InstallOptions, env: TargetEnvironment
) -> Iterator[tuple[IndexFinder, TargetSpec]]:
    """A finder over *options*' sources for *env* that builds nothing (sdists are
    listed, never built), and the target its wheels are selected for: what asks
    the index without installing (``list --outdated``)."""
    from wheelwise.resolve.outdated import never_built
    from wheelwise.resolve.selection import TargetSpec

    cache_root, kept = caches_for(options)
    with index_client(options, cache_root, kept) as client:
        finder = finder_for(
            options,
            sources_for(options),
            client,
            kept,
            tags=env.tags,
            python_version=".".join(str(part) for part in env.version_info),
            build=never_built,
            routes=routes_for(options, env.markers.get("sys_platform", "")),
        )
        spec = TargetSpec(
            env.tags,
            supported_for(options, env.markers),
            no_variant=options.no_variant,
            variant_choice={canonicalize_name(n): v for n, v in options.variant_choice.items()},
        )
        try:
            yield finder, spec
        finally:
            finder.close()
