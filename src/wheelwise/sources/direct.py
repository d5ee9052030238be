"""Turning direct references (local projects, archives, URLs, git) into wheels.

Before resolving, each reference (:mod:`wheelwise.resolve.direct`) becomes one
wheel in the run's own find-links folder: a wheel file as it is, a source archive
or project folder built (:class:`~wheelwise.install.source_build.SourceBuilder`), an
``http(s)`` file downloaded first, a git URL cloned first. The requirement is then
``name[extras]==version``, so that the resolver takes that wheel (the folder is the
first source) and checks it against every other requirement, and the package gets
PEP 610's ``direct_url.json``, as pip writes it.
"""

from __future__ import annotations

import json
import tempfile
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from packaging.utils import NormalizedName

from wheelwise.fetch.download import DownloadItem, Fetcher
from wheelwise.fetch.git import clone
from wheelwise.models.errors import DownloadError
from wheelwise.policy.hashes import file_digests, hash_mismatch
from wheelwise.resolve.direct import ARCHIVE, DIRECTORY, GIT, WHEEL, DirectReference
from wheelwise.sources.builder import SourceBuilder, built_name, copy_wheel
from wheelwise.wheels.archive import WheelArchive
from wheelwise.wheels.errors import BuildError, WheelError, renamed

__all__ = ["PreparedReference", "prepare_references"]


class PreparedReference:
    """A direct reference, as a wheel in the run's folder."""

    __slots__ = ("direct_url", "name", "reference", "version", "wheel")

    def __init__(self, reference: DirectReference, wheel: Path, direct_url: dict[str, Any]) -> None:
        self.reference = reference
        self.wheel = wheel
        self.name, self.version = built_name(wheel)
        self.direct_url = json.dumps(direct_url, sort_keys=True)

    @property
    def requirement(self) -> str:
        """What the resolver is asked for instead of the reference."""
        extras = f"[{','.join(sorted(self.reference.extras))}]" if self.reference.extras else ""
        marker = f" ; {self.reference.marker}" if self.reference.marker else ""
        return f"{self.name}{extras}=={self.version}{marker}"


class _Sources(NamedTuple):
    builder: SourceBuilder | None  # None: nothing may be built (another interpreter)
    fetcher: Fetcher
    folder: Path  # the run's find-links folder
    scratch: Path


def prepare_references(
    references: Sequence[DirectReference],
    *,
    builder: SourceBuilder | None,
    fetcher: Fetcher,
    folder: Path,
    scratch: Path,
) -> list[PreparedReference]:
    """A wheel in *folder* for each of *references*, in their order; downloads and
    clones go into *scratch*. Without a *builder*, only wheels can be taken. Raises
    BuildError, DownloadError."""
    prepared = []
    with tempfile.TemporaryDirectory(prefix="direct-", dir=scratch) as work:
        sources = _Sources(builder, fetcher, folder, Path(work))
        for number, reference in enumerate(references):
            one = _prepare(reference, sources, Path(work) / str(number))
            if reference.name is not None and one.name != reference.name:
                raise BuildError(
                    f"{reference.text}: it is {one.name} {one.version}, not {reference.name}"
                )
            prepared.append(one)
    return prepared


def _url_of(reference: DirectReference) -> str:
    """The URL direct_url.json gives: as given, but a hash in its fragment goes to
    ``archive_info`` instead (as pip writes it)."""
    if reference.url is None:
        return Path(reference.location).as_uri()
    return urllib.parse.urldefrag(reference.url).url if reference.hashes else reference.url


def _builder(sources: _Sources, origin: str) -> SourceBuilder:
    if sources.builder is None:
        raise BuildError(
            f"{origin}: it would have to be built, and nothing is built for another "
            "interpreter (--python-version, --platform); give a wheel, or leave those out"
        )
    return sources.builder


def _prepare(reference: DirectReference, sources: _Sources, work: Path) -> PreparedReference:
    work.mkdir(parents=True)
    origin = reference.text.strip()
    if reference.kind == DIRECTORY:
        tree = Path(reference.location)
        wheel = _builder(sources, origin).tree(tree, origin=origin, editable=reference.editable)
        info: dict[str, Any] = {"editable": True} if reference.editable else {}
        return PreparedReference(
            reference, copy_wheel(wheel, sources.folder), {"url": tree.as_uri(), "dir_info": info}
        )
    if reference.kind == GIT:
        checkout = clone(reference.location, reference.revision, work / "repo")
        tree = checkout.folder
        if reference.subdirectory:
            tree = tree / reference.subdirectory
            if not tree.is_dir():
                raise BuildError(
                    f"{origin}: no folder {reference.subdirectory!r} in the repository"
                )
        wheel = _builder(sources, origin).tree(tree, origin=origin)
        vcs: dict[str, Any] = {"vcs": "git", "commit_id": checkout.commit}
        if reference.revision:
            vcs["requested_revision"] = reference.revision
        direct: dict[str, Any] = {"url": reference.location, "vcs_info": vcs}
        if reference.subdirectory:
            direct["subdirectory"] = reference.subdirectory
        return PreparedReference(reference, copy_wheel(wheel, sources.folder), direct)
    # A wheel or a source archive: local, or downloaded first.
    if reference.is_local:
        path = Path(reference.location)
    else:
        name = urllib.parse.unquote(urllib.parse.urlsplit(reference.location).path).rsplit("/")[-1]
        path = sources.fetcher.fetch_to(DownloadItem(reference.location, {}, name), work)
    digests = file_digests(path, {"sha256", *(name for name, _ in reference.hashes)})
    mismatch = hash_mismatch(digests, reference.hashes)
    if mismatch is not None:
        raise DownloadError(reference.url or reference.location, mismatch)
    sha256 = digests["sha256"]
    archive_info = {"hashes": {"sha256": sha256}, "hash": f"sha256={sha256}"}
    direct = {"url": _url_of(reference), "archive_info": archive_info}
    if reference.kind == WHEEL:
        try:  # a file that is no wheel is named as the user gave it, not as its copy
            with WheelArchive(path):
                pass
        except WheelError as exc:
            raise renamed(exc, path, origin) from None
        return PreparedReference(reference, copy_wheel(path, sources.folder), direct)
    assert reference.kind == ARCHIVE
    wheel = _builder(sources, origin).sdist(path, origin=origin, sha256=sha256)
    return PreparedReference(reference, copy_wheel(wheel, sources.folder), direct)


def direct_names(prepared: Sequence[PreparedReference]) -> dict[NormalizedName, str]:
    """The ``direct_url.json`` of each prepared reference, by project name."""
    return {one.name: one.direct_url for one in prepared}
