"""Choosing the wheel of one release for the target (PEP 825 "Suggested
implementation logic for tools", steps 3 to 9).

Wheels are filtered by platform tags; if variant wheels remain, the release's
combined variant metadata is ranked for the machine and the wheels are ordered
with :func:`~wheelwise.variants.ordering.order_wheels` (variant groups in ranking
order, the non-variant group last, tag priority and build number inside a group).
A release without a usable wheel is *unavailable*, with a reason for messages.

Variants using the ``abi_dependency`` namespace (PEP 817) are builds against
different versions of a dependency, which only the resolver can settle: every
valid value counts as supported here, ordered by the versions the resolution
prefers (installed or pinned), and :func:`select_builds` offers each such build
in turn, each standing for one value per dependency, until the first build that
needs nothing of the resolver.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from packaging.tags import Tag
from packaging.utils import NormalizedName
from packaging.version import Version

from wheelwise.resolve.candidates import ReleaseFiles, WheelFile
from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.supported import SupportedProperties

if TYPE_CHECKING:
    from wheelwise.variants.metadata import VariantMetadata
    from wheelwise.variants.ordering import RankedVariant, Ranking
    from wheelwise.variants.properties import VariantProperty

# The variant modules (metadata, ordering) load with the first release that has
# variant wheels: an install without any never needs them.
SupportedFor = Callable[["VariantMetadata"], SupportedProperties]

_MAX_TAGS_SHOWN = 5
_MAX_VALUES_SHOWN = 8


@dataclass(frozen=True)
class TargetSpec:
    """Everything wheel selection depends on besides the release itself."""

    tags: Sequence[Tag]
    supported: SupportedFor
    no_variant: bool = False
    variant_choice: Mapping[str, str] = field(default_factory=dict)
    # Versions abi_dependency builds are matched against first (installed, pinned).
    abi_preferred: Mapping[NormalizedName, Version] = field(default_factory=dict)
    # Locking: a release's selection lists every wheel that fits the tags (see
    # every_wheel), whatever the machine supports.
    every_wheel: bool = False
    # Installed builds kept where their version is chosen (not upgraded): the version
    # and variant label (None: a non-variant wheel), tried first among the builds
    # the machine supports, so that the dependencies are those of the kept build.
    kept_builds: Mapping[NormalizedName, tuple[Version, str | None]] = field(default_factory=dict)
    tag_rank: Mapping[Tag, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rank: dict[Tag, int] = {}
        for i, tag in enumerate(self.tags):
            rank.setdefault(tag, i)
        object.__setattr__(self, "tag_rank", rank)


class ListedWheel(NamedTuple):
    """A wheel a lock lists, with every property its variant label has (none for a
    non-variant wheel): its dependencies are read in that context."""

    file: WheelFile
    properties: tuple[VariantProperty, ...] = ()


class Selection(NamedTuple):
    """The wheel chosen for a release, with why."""

    file: WheelFile
    ranking: Ranking | None = None
    ranked: RankedVariant | None = None
    # The abi_dependency properties this build stands for, one per dependency: each
    # implies a requirement the resolver must meet (``torch==2.9.*``).
    abi: tuple[VariantProperty, ...] = ()
    # Locking (TargetSpec.every_wheel): every wheel of the release that fits the tags.
    listed: tuple[ListedWheel, ...] = ()

    @property
    def label(self) -> str | None:
        return self.file.filename.variant_label

    @property
    def won_by(self) -> VariantProperty | None:
        """The property that put the chosen variant first (its best, most important)."""
        if self.ranked is None or not self.ranked.best:
            return None
        best = self.ranked.best[0]
        for prop in self.abi:  # the value this build stands for, not just the best listed
            if prop.variant_feature == best.variant_feature:
                return prop
        return best

    @property
    def variant_properties(self) -> tuple[VariantProperty, ...]:
        """The chosen wheel's properties that the machine supports (marker values);
        of its abi_dependency values, only those this build stands for."""
        if self.ranked is None:
            return ()
        if not self.abi:
            return self.ranked.supported
        features = {prop.variant_feature for prop in self.abi}
        kept = [p for p in self.ranked.supported if p.variant_feature not in features]
        return tuple(kept) + self.abi


class Unavailable(NamedTuple):
    """Why a release has no usable wheel; ``label`` is set for variant-choice errors."""

    reason: str
    label: str | None = None


def select_wheel(
    name: NormalizedName, release: ReleaseFiles, target: TargetSpec
) -> Selection | Unavailable:
    """The best wheel of *release* for *target*, or why there is none."""
    builds = select_builds(name, release, target)
    return builds if isinstance(builds, Unavailable) else builds[0]


def select_builds(
    name: NormalizedName, release: ReleaseFiles, target: TargetSpec
) -> tuple[Selection, ...] | Unavailable:
    """The wheels of *release* the resolver may try for *target*, best first, or why
    there is none.

    One wheel, unless variants use ``abi_dependency``: then one selection per such
    build (and per matching value combination), up to the first wheel without; or,
    where *target* keeps an installed build of this version, that build and then the
    machine's best (:func:`_kept_then_best`).
    """
    if not release.files:
        return Unavailable("no wheels (source distributions are never built)")
    ranked_files = _by_tags(release.files, target.tag_rank)
    if not ranked_files:
        return Unavailable(_tag_reason(release.files, target.tags))
    if target.every_wheel:
        return every_wheel(release, ranked_files)
    choice = target.variant_choice.get(name)
    if target.no_variant:
        plain = [f for f in ranked_files if not f.filename.is_variant]
        if plain:
            return (Selection(plain[0]),)
        labels = sorted({str(f.filename.variant_label) for f in ranked_files})
        return Unavailable(
            f"only variant wheels ({', '.join(labels)}) and variant wheels are disabled"
        )
    variant_labels = {f.filename.variant_label for f in ranked_files if f.filename.is_variant}
    if not variant_labels:
        if choice is not None:
            return Unavailable(
                f"variant {choice!r} was asked for, but {name} {release.version} has no "
                "variant wheels for this Python",
                label=choice,
            )
        return (Selection(ranked_files[0]),)
    metadata = release.variant_metadata()
    if metadata is None:
        # PEP 825: without the metadata, treat the variant wheels as incompatible.
        plain = [f for f in ranked_files if not f.filename.is_variant]
        if plain and choice is None:
            return (Selection(plain[0]),)
        problem = getattr(release, "variant_metadata_problem", None)  # an IndexRelease's
        missing = f"usable variant metadata: {problem}" if problem else "variant metadata"
        return Unavailable(
            f"variant wheels ({', '.join(sorted(map(str, variant_labels)))}) but no "
            f"{missing} for the release",
            label=choice,
        )
    from wheelwise.variants.ordering import order_wheels, rank_variants

    supported = target.supported(metadata)
    uses_abi = _ABI_NAMESPACE in metadata.namespaces  # PEP 825: every used one is listed
    if uses_abi:
        supported = _with_abi_values(metadata, supported, target.abi_preferred)
    ranking = rank_variants(metadata, supported)
    if choice is not None:
        chosen = _chosen(name, release.version, ranked_files, metadata, supported, ranking, choice)
        if isinstance(chosen, Unavailable):
            return chosen
        return _abi_builds([chosen], metadata, supported) if uses_abi else (chosen,)
    ordered = order_wheels([f.filename for f in ranked_files], ranking)
    if not ordered:
        return Unavailable(_variant_reason(ranked_files, metadata, supported, ranking))
    kept = target.kept_builds.get(name)
    if uses_abi:  # an installed abi_dependency build is matched, not kept (resolver)
        offered = ordered
    elif kept is not None and kept[0] == release.version:
        offered = _kept_then_best(ordered, kept[1])
    else:
        offered = ordered[:1]
    selections = [
        Selection(
            _file_for(filename, ranked_files),
            ranking,
            ranking.get(filename.variant_label) if filename.variant_label is not None else None,
        )
        for filename in offered
    ]
    return _abi_builds(selections, metadata, supported) if uses_abi else tuple(selections)


def _kept_then_best(ordered: list[WheelFilename], label: str | None) -> list[WheelFilename]:
    """The best wheel of the installed build's *label*, when the machine supports it,
    then the machine's best build (tried when the kept one's dependencies conflict);
    the best alone otherwise."""
    for filename in ordered:
        if filename.variant_label == label:
            return [filename] if filename == ordered[0] else [filename, ordered[0]]
    return ordered[:1]


_ABI_NAMESPACE = "abi_dependency"  # wheelwise.variants.abi_dependency.NAMESPACE, unimported


def every_wheel(
    release: ReleaseFiles, files: Sequence[WheelFile]
) -> tuple[Selection, ...] | Unavailable:
    """One selection listing every wheel of *files* (those of *release* that fit the
    tags, best first), whatever the machine: what a lock holds. A variant wheel
    whose label the release's variant metadata lacks is left out (PEP 825: it is
    incompatible), as are all of them when the release has no usable metadata."""
    has_variants = any(f.filename.is_variant for f in files)
    metadata = release.variant_metadata() if has_variants else None
    listed: list[ListedWheel] = []
    for file in files:
        label = file.filename.variant_label
        if label is None:
            listed.append(ListedWheel(file))
        elif metadata is not None and label in metadata.variants:
            listed.append(ListedWheel(file, metadata.properties(label)))
    if not listed:
        problem = getattr(release, "variant_metadata_problem", None)  # an IndexRelease's
        missing = f"usable variant metadata: {problem}" if problem else "variant metadata"
        labels = sorted({str(f.filename.variant_label) for f in files})
        return Unavailable(
            f"variant wheels ({', '.join(labels)}) but no {missing} for their labels"
        )
    return (Selection(listed[0].file, listed=tuple(listed)),)


def _with_abi_values(
    metadata: VariantMetadata,
    supported: SupportedProperties,
    preferred: Mapping[NormalizedName, Version],
) -> SupportedProperties:
    """*supported* with every valid abi_dependency value of *metadata*, the ones
    matching *preferred* versions first: the resolver settles which build fits."""
    from wheelwise.variants import abi_dependency as abi

    values = {
        feature: abi.preferred_values(listed, preferred.get(abi.package_name(feature)))
        for feature, listed in abi.used_features(metadata).items()
    }
    return supported.replacing({abi.NAMESPACE: values})


def _abi_builds(
    selections: Sequence[Selection], metadata: VariantMetadata, supported: SupportedProperties
) -> tuple[Selection, ...]:
    """One selection per abi_dependency build and value combination, in order, up
    to the first wheel that needs none: the resolver never gets past that one.
    Only a label's best wheel by tags is kept, and a combination only once."""
    from wheelwise.variants.properties import VariantProperty

    builds: list[Selection] = []
    seen_labels: set[str | None] = set()
    seen_combinations: set[tuple[VariantProperty, ...]] = set()
    for selection in selections:
        label = selection.label
        if label in seen_labels:
            continue
        seen_labels.add(label)
        features = metadata.variants[label].get(_ABI_NAMESPACE) if label is not None else None
        if not features:
            builds.append(selection)
            break
        choices = [
            [
                VariantProperty(_ABI_NAMESPACE, feature, value)
                for value in supported.values(_ABI_NAMESPACE, feature)
                if value in listed
            ]
            for feature, listed in features.items()
        ]
        for combination in itertools.product(*choices):
            if combination not in seen_combinations:
                seen_combinations.add(combination)
                builds.append(selection._replace(abi=combination))
    return tuple(builds)


def _chosen(
    name: NormalizedName,
    version: Version,
    files: list[WheelFile],
    metadata: VariantMetadata,
    supported: SupportedProperties,
    ranking: Ranking,
    label: str,
) -> Selection | Unavailable:
    """The wheel of the variant the user picked by label, or why it cannot be used."""
    where = f"{name} {version}"
    if label not in metadata.variants:
        known = ", ".join(metadata.labels) or "none"
        return Unavailable(
            f"variant {label!r} was asked for, but {where} has no such variant (variants: {known})",
            label=label,
        )
    ranked = ranking.get(label)
    if ranked is None:
        reason = ranking.rejected.get(label, "not compatible")
        return Unavailable(
            f"variant {label!r} of {where} is not supported by this machine: {reason}; "
            f"{describe_machine(supported, metadata.namespaces)}",
            label=label,
        )
    matching = [f for f in files if f.filename.variant_label == label]
    if not matching:
        return Unavailable(
            f"variant {label!r} of {where} has no wheel for this Python's tags", label=label
        )
    return Selection(matching[0], ranking, ranked)


def _by_tags(files: Sequence[WheelFile], tag_rank: Mapping[Tag, int]) -> list[WheelFile]:
    """Wheels the target's tags accept: best tag first, then highest build number."""
    scored: list[tuple[int, WheelFile]] = []
    for file in files:
        ranks = [tag_rank[t] for t in file.filename.tags if t in tag_rank]
        if ranks:
            scored.append((min(ranks), file))
    scored.sort(key=lambda item: item[1].filename.build, reverse=True)
    scored.sort(key=lambda item: item[0])
    return [file for _, file in scored]


def _file_for(filename: WheelFilename, files: list[WheelFile]) -> WheelFile:
    for file in files:
        if file.filename is filename:
            return file
    raise AssertionError(f"{filename} is not among the candidate wheels")  # pragma: no cover


def _tag_reason(files: Sequence[WheelFile], tags: Sequence[Tag]) -> str:
    have = dict.fromkeys(
        f"{f.filename.python_tag}-{f.filename.abi_tag}-{f.filename.platform_tag}" for f in files
    )
    shown = ", ".join(str(t) for t in tags[:_MAX_TAGS_SHOWN])
    if len(tags) > _MAX_TAGS_SHOWN:
        shown += f", ... ({len(tags) - _MAX_TAGS_SHOWN} more)"
    return f"wheels have tags {', '.join(have)}; this Python supports {shown or 'no tags'}"


def _variant_reason(
    files: list[WheelFile],
    metadata: VariantMetadata,
    supported: SupportedProperties,
    ranking: Ranking,
) -> str:
    labels = sorted({str(f.filename.variant_label) for f in files if f.filename.is_variant})
    parts: list[str] = []
    for label in labels:
        if label not in metadata.variants:
            parts.append(f"{label}: not in the variant metadata")
        else:
            parts.append(f"{label}: {ranking.rejected.get(label, 'not compatible')}")
    return (
        f"no variant wheel is supported by this machine ({'; '.join(parts)}); "
        f"{describe_machine(supported, metadata.namespaces)}"
    )


def describe_machine(supported: SupportedProperties, namespaces: Sequence[str]) -> str:
    """``machine supports ns :: feature :: v1, v2, ...`` for the namespaces that matter."""
    clauses: list[str] = []
    for ns in namespaces:
        for feature, values in supported.namespaces.get(ns, {}).items():
            shown = ", ".join(values[:_MAX_VALUES_SHOWN])
            if len(values) > _MAX_VALUES_SHOWN:
                shown += f", ... ({len(values) - _MAX_VALUES_SHOWN} more)"
            clauses.append(f"{ns} :: {feature} :: {shown}")
    if not clauses:
        return f"machine supports no properties in {', '.join(namespaces) or 'any namespace'}"
    return "machine supports " + "; ".join(clauses)
