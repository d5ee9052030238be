"""``wheelwise download`` as a library call: the files an install would take, for a
machine and interpreter that need not be this one, saved into a folder.

The requirements are resolved as an install resolves them, for the target's tags and
markers (an interpreter, or a CPython version and platform named on the command
line, :mod:`wheelwise.environment.targets`) and for the target *machine*
(``--system FILE``, else this one's detection). Each chosen file is saved as the
source publishes it: the wheel, or the sdist of a release without a wheel for the
target (built here for its metadata only when the target is this interpreter; for a
named target, building is off, as in pip). Each chosen variant wheel's release gets
its ``{name}-{version}-variants.json`` beside it, so that the folder is a complete
find-links source (PEP 825 allows the file there): ``wheelwise install --no-index
-f DIR`` on the target needs no network.

Every file is written under a temporary name and renamed into place; a file already
there with the same sha256 is left alone.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from wheelwise.atomic_file import replace_with, replace_with_bytes
from wheelwise.client.index_client import IndexFile, IndexSource
from wheelwise.client.index_file import SDIST
from wheelwise.environment.interpreter import TargetEnvironment
from wheelwise.environment.targets import LockEnvironment
from wheelwise.fetch.download import DownloadItem, Fetcher
from wheelwise.install.options import (
    InstallOptions,
    caches_for,
    finder_for,
    index_client,
    routes_for,
    sources_for,
    supported_for,
)
from wheelwise.install.plan import finder_build, source_builder, split_references
from wheelwise.models.errors import InstallError
from wheelwise.policy.hashes import file_sha256, trusted_hashes
from wheelwise.resolve.decide import resolve_with
from wheelwise.resolve.finder import link_of
from wheelwise.resolve.formats import ALL
from wheelwise.resolve.lookahead import Lookahead
from wheelwise.resolve.user_hashes import (
    check_fetched,
    check_index,
    check_planned,
    requested_hashes,
)
from wheelwise.resolve.variant_requirement import apply_variant_labels
from wheelwise.sources.direct import prepare_references
from wheelwise.variants.filenames import variants_json_filename

__all__ = ["Saved", "run_download"]


@dataclass(frozen=True)
class Saved:
    """One file in the folder: its name, the project and version, and whether it was
    written now (False: the same file was there already)."""

    filename: str
    name: str
    version: str
    written: bool
    label: str | None = None


def run_download(
    options: InstallOptions,
    target: LockEnvironment,
    dest: Path,
    *,
    env: TargetEnvironment | None = None,
) -> list[Saved]:
    """Resolve *options*' requirements for *target* and save the chosen files (and
    variant documents) into *dest*, made if missing. *env*: the target's interpreter
    when it is a real one: sdists are then built for it to read their metadata
    (never for a named target). Raises ResolveError, SourceError, InstallError,
    BuildError."""
    requirements, references = split_references(options.requirements, ())
    user_hashes = None
    if options.require_hashes or options.hashes:
        references = [
            replace(one, hashes=(*one.hashes, *options.hashes.get(one.text, ())))
            for one in references
        ]
        user_hashes = requested_hashes(requirements, references, options.hashes)
    requirements, variant_choice = apply_variant_labels(requirements, options.variant_choice)
    dest = dest.absolute()
    formats = options.formats
    if env is None:  # a wheel's metadata only: nothing is built for another interpreter
        formats = replace(formats, only_binary=frozenset({ALL}), no_binary=frozenset())
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InstallError(f"{dest}: cannot make the folder ({exc.strerror or exc})") from None
    if not dest.is_dir():
        raise InstallError(f"{dest}: not a folder; give a folder to download into")
    sources = sources_for(options, references=bool(references))
    cache_root, kept = caches_for(options)
    with (
        tempfile.TemporaryDirectory(prefix=".wheelwise-download-", dir=dest) as scratch,
        index_client(options, cache_root, kept) as client,
    ):
        # Wheels of direct references: the first source, as for an install.
        local = Path(scratch) / "direct"
        local.mkdir()
        if references:
            sources = [IndexSource.find_links(local), *sources]
        builder = (
            None
            if env is None
            else source_builder(options, env, lambda: Path(scratch), cache_root, kept is not None)
        )
        fetcher = Fetcher(
            client.http_source,
            retry=client.retry,
            deadline=options.request_deadline,
            cache=kept.wheels if kept is not None else None,
            downloads=options.concurrent_downloads,
        )
        prepared = []
        if references:
            prepared = prepare_references(
                references, builder=builder, fetcher=fetcher, folder=local, scratch=Path(scratch)
            )
            requirements = [*(one.requirement for one in prepared), *requirements]
        routes = routes_for(options, target.markers["sys_platform"])
        lookahead = Lookahead(sources, client, routes, options.index_strategy)
        finder = finder_for(
            options,
            sources,
            client,
            kept,
            tags=target.tags,
            python_version=target.full_version,
            fetcher=fetcher,
            build=finder_build(builder) if builder is not None else None,
            formats=formats,
            routes=routes,
        )
        with contextlib.closing(finder), lookahead:
            lookahead.serve(finder)
            resolution = resolve_with(
                requirements,
                lookahead,
                tags=list(target.tags),
                environment=target.markers,
                supported=supported_for(options, target.markers),
                constraints=options.constraints,
                pre=options.pre,
                no_deps=options.no_deps,
                no_variant=options.no_variant,
                variant_choice=variant_choice,
            )
            if options.warn is not None:
                for note in resolution.notes:
                    options.warn(note)
            if user_hashes is not None:
                checked = [one.name for one in prepared]
                check_planned([package.name for package in resolution], user_hashes, checked)
            saved: list[Saved] = []
            for package in resolution:
                file = link_of(package.file).file
                allowed = (user_hashes or {}).get(package.name)
                digest = allowed is not None and check_index(file, allowed)
                path = fetcher.fetch_to(
                    DownloadItem(file.url, file.hashes, file.filename, file.size), Path(scratch)
                )
                if digest and allowed is not None:
                    check_fetched(file.url, path, allowed)
                written = _save(path, dest / file.filename, file)
                name, version = str(package.name), str(package.version)
                saved.append(Saved(file.filename, name, version, written, package.label))
                release = finder.release(package.name, package.version)
                metadata = release.variant_metadata() if release is not None else None
                if package.label is not None and metadata is not None:
                    document = variants_json_filename(package.name, package.version)
                    fresh = _save_bytes(metadata.to_bytes(), dest / document)
                    saved.append(Saved(document, name, version, fresh))
    return saved


def _save(path: Path, target: Path, file: IndexFile) -> bool:
    """*path* (a verified file: the source's hashes held) as *target*, unless the same
    file is there; whether it was written."""
    expected = trusted_hashes(file.hashes).get("sha256") or file_sha256(path)
    if target.is_file() and file_sha256(target) == expected:
        return False

    def copy(temporary: Path) -> None:
        shutil.copyfile(path, temporary)

    try:
        replace_with(target, copy)
    except OSError as exc:
        kind = "sdist" if file.kind == SDIST else "wheel"
        raise InstallError(
            f"{target}: cannot save the {kind} ({exc.strerror or exc}); free some space "
            "there, or give another folder with -d"
        ) from None
    return True


def _save_bytes(data: bytes, target: Path) -> bool:
    try:
        if target.is_file() and target.read_bytes() == data:
            return False
        replace_with_bytes(target, [data])
    except OSError as exc:
        raise InstallError(
            f"{target}: cannot save it ({exc.strerror or exc}); free some space there, or "
            "give another folder with -d"
        ) from None
    return True
