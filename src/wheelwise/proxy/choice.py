"""What a proxy lists for one project and one machine.

Every release comes from the first upstream (in the order given) that lists it; its
files are then decided group by group, a group being the wheels that share a
non-variant filename (one platform tag triple and build):

* a group without variant wheels, sdists and other files pass through unchanged;
* a group with variant wheels gets the wheel :func:`~wheelwise.resolve.selection.
  select_wheel` picks for the machine among them (the plain wheel of the same name,
  if the upstream has one, taking part as the non-variant fallback): a variant is
  served rewritten under the plain name (:class:`Rewrite`), the plain wheel as it
  is; when nothing fits, the group is left out (:class:`Omitted`), with why.

A release's ``*-variants.json`` and its variant wheels are never listed: clients
that do not know variants would reject them, and see one plain wheel instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from packaging.utils import NormalizedName
from packaging.version import Version

from wheelwise.client.index_client import IndexFile, ProjectListing
from wheelwise.client.index_file import VARIANTS_JSON, WHEEL
from wheelwise.resolve.candidates import WheelFile
from wheelwise.resolve.selection import Selection, TargetSpec, Unavailable, select_wheel
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.supported import SupportedProperties

__all__ = ["Omitted", "Passthrough", "ProjectView", "ReleaseView", "Rewrite", "decide"]

MetadataFor = Callable[[IndexFile], VariantMetadata]
SupportedFor = Callable[[VariantMetadata], SupportedProperties]


@dataclass(frozen=True)
class Passthrough:
    """An upstream file served as it is."""

    file: IndexFile
    why: str | None = None

    @property
    def filename(self) -> str:
        return self.file.filename


@dataclass(frozen=True)
class Rewrite:
    """The variant wheel *source*, served as the plain wheel *filename*."""

    filename: str
    source: IndexFile
    label: str
    # The wheel's properties the machine supports: its variant markers' values.
    properties: tuple[VariantProperty, ...]
    # The release's variant metadata: the wheel's own variant.json must agree with it.
    metadata: VariantMetadata = field(compare=False)
    why: str = ""

    @property
    def key(self) -> str:
        """The content address of the rewritten wheel: the same upstream bytes and
        marker values give the same bytes."""
        upstream = self.source.hashes.get("sha256") or self.source.url
        props = "\n".join(sorted(str(p) for p in self.properties))
        text = f"plain-wheel\n{upstream}\n{self.source.filename}\n{self.label}\n{props}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Omitted:
    """A group of wheels none of which fits the machine."""

    filename: str
    why: str


Entry = Passthrough | Rewrite


@dataclass(frozen=True)
class ReleaseView:
    version: Version
    upstream: str
    entries: tuple[Entry, ...]
    omitted: tuple[Omitted, ...] = ()


@dataclass(frozen=True)
class ProjectView:
    name: NormalizedName
    machine: str
    releases: tuple[ReleaseView, ...]  # oldest first
    # What the upstream pages listed that could not be read as a file, one line each.
    skipped: tuple[str, ...] = ()
    # Set when the upstreams failed and this is the last page read: their error.
    stale: str | None = None

    def entries(self) -> Iterator[Entry]:
        for release in self.releases:
            yield from release.entries

    def find(self, filename: str) -> Entry | None:
        for entry in self.entries():
            if entry.filename == filename:
                return entry
        return None

    @property
    def versions(self) -> list[str]:
        return [str(release.version) for release in self.releases]


@dataclass(frozen=True)
class _Group:
    """The ReleaseFiles of one group, for select_wheel."""

    version: Version
    files: Sequence[WheelFile]
    metadata: VariantMetadata | None

    def variant_metadata(self) -> VariantMetadata | None:
        return self.metadata


def decide(
    name: NormalizedName,
    listings: Sequence[ProjectListing],
    *,
    machine: str,
    supported: SupportedFor,
    metadata_for: MetadataFor,
) -> ProjectView:
    """The files to list for *name* on *machine*, release by release, oldest first.

    *metadata_for* reads a release's ``*-variants.json`` (its errors propagate: a
    release whose variant metadata cannot be read is not listed wrongly).
    """
    owner: dict[Version, ProjectListing] = {}
    for listing in listings:
        for version in listing.versions():
            owner.setdefault(version, listing)
    releases = []
    for version in sorted(owner):
        listing = owner[version]
        releases.append(_release(name, version, listing, machine, supported, metadata_for))
    return ProjectView(name, machine, tuple(releases))


def _release(
    name: NormalizedName,
    version: Version,
    listing: ProjectListing,
    machine: str,
    supported: SupportedFor,
    metadata_for: MetadataFor,
) -> ReleaseView:
    files = listing.files_for(version)
    groups: dict[str, list[IndexFile]] = {}
    entries: list[Entry] = []
    omitted: list[Omitted] = []
    for file in files:
        if file.kind == VARIANTS_JSON:
            continue
        if file.kind == WHEEL and file.wheel is not None:
            groups.setdefault(str(file.wheel.without_variant()), []).append(file)
        else:
            entries.append(Passthrough(file))
    metadata: VariantMetadata | None = None
    loaded = False
    for plain_name, members in groups.items():
        if not any(f.wheel is not None and f.wheel.is_variant for f in members):
            entries += [Passthrough(f) for f in members]
            continue
        if not loaded:
            found = listing.variants_json(version)
            metadata = metadata_for(found) if found is not None else None
            loaded = True
        entry = _choose(name, version, plain_name, members, metadata, machine, supported)
        if isinstance(entry, Omitted):
            omitted.append(entry)
        else:
            entries.append(entry)
    return ReleaseView(version, listing.source.url, tuple(entries), tuple(omitted))


def _choose(
    name: NormalizedName,
    version: Version,
    plain_name: str,
    members: list[IndexFile],
    metadata: VariantMetadata | None,
    machine: str,
    supported: SupportedFor,
) -> Entry | Omitted:
    wheels = [WheelFile(f.wheel, f) for f in members if f.wheel is not None]
    tags = sorted(wheels[0].filename.tags, key=str)
    target = TargetSpec(tags=tags, supported=supported)
    chosen = select_wheel(name, _Group(version, wheels, metadata), target)
    if isinstance(chosen, Unavailable):
        return Omitted(plain_name, f"no build fits {machine}: {chosen.reason}")
    file: IndexFile = chosen.file.link
    if chosen.label is None:
        why = f"no variant fits {machine}: the plain wheel"
        if metadata is None:
            why = "the release has no variant metadata (*-variants.json): the plain wheel"
        return Passthrough(file, why)
    assert metadata is not None  # select_wheel chooses a variant only with metadata
    return Rewrite(
        plain_name,
        file,
        chosen.label,
        chosen.variant_properties,
        metadata,
        _why(chosen, machine),
    )


def _why(chosen: Selection, machine: str) -> str:
    ranking = chosen.ranking
    won = f", won by {chosen.won_by}" if chosen.won_by is not None else ""
    text = f"variant {chosen.label} for {machine}{won}"
    if ranking is None:
        return text
    others = [label for label in ranking.order if label != chosen.label]
    if others:
        text += f"; also compatible, ranked lower: {', '.join(others)}"
    if ranking.rejected:
        rejected = "; ".join(f"{label}: {reason}" for label, reason in ranking.rejected.items())
        text += f"; incompatible: {rejected}"
    return text
