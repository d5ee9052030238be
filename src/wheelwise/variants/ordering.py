"""Filter and order variants for a machine (PEP 825 "Variant ordering").

A label is compatible when, for every feature it lists, the machine supports at
least one of the listed values. Compatible labels are ordered by their
best-value properties, each keyed by (namespace index, feature index, value
index); lists are compared item by item, the longer list wins a prefix tie, the
label breaks exact ties, and the null variant always comes last.

Legacy (PEP 817 / variantlib) metadata may list ``default-priorities.feature`` /
``.property``: those go before the machine's own order, and are applied here. Which
properties the machine supports, ahead-of-time namespaces included, is the caller's
answer (see ``wheelwise.providers.machine``): ordering never decides that a
namespace is supported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.supported import SupportedProperties

# Sort keys pack (namespace, feature, value) indices into one int for speed.
_SHIFT = 21
_END = 1 << (3 * _SHIFT + 1)  # sorts after every packed property key
_MAX_SHOWN_VALUES = 10
_DIGITS = re.compile(r"(\d+)")
_first = itemgetter(0)


class RankedVariant:
    """A compatible label with the properties that decide its place.

    ``best`` and ``supported`` are worked out on first access: a ranking of
    thousands of labels usually needs them for the selected one only.
    """

    __slots__ = ("_best", "_group_ids", "_scorer", "_supported", "label")

    def __init__(self, label: str, scorer: _Scorer, group_ids: tuple[int, ...]) -> None:
        self.label = label
        self._scorer = scorer
        self._group_ids = group_ids
        self._best: tuple[VariantProperty, ...] | None = None
        self._supported: tuple[VariantProperty, ...] | None = None

    @property
    def best(self) -> tuple[VariantProperty, ...]:
        """Best supported value per feature, most important first: why it ranks here."""
        if self._best is None:
            keys = self._scorer.keys
            ordered = sorted(self._group_ids, key=keys.__getitem__)  # type: ignore[arg-type]
            self._best = tuple(self._scorer.match(g)[0] for g in ordered)
        return self._best

    @property
    def supported(self) -> tuple[VariantProperty, ...]:
        """Every listed property the machine supports (the variant marker values)."""
        if self._supported is None:
            match = self._scorer.match
            self._supported = tuple(p for g in self._group_ids for p in match(g)[1])
        return self._supported

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RankedVariant):
            return NotImplemented
        return (self.label, self.best, self.supported) == (other.label, other.best, other.supported)

    def __hash__(self) -> int:
        return hash((self.label, self.best, self.supported))

    def __repr__(self) -> str:
        return f"RankedVariant(label={self.label!r}, best={self.best!r})"


@dataclass(frozen=True)
class Ranking:
    """The result of ranking the labels of one metadata document for a machine."""

    compatible: tuple[RankedVariant, ...]
    rejected: Mapping[str, str]

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(variant.label for variant in self.compatible)

    @property
    def selected(self) -> str | None:
        return self.compatible[0].label if self.compatible else None

    def get(self, label: str) -> RankedVariant | None:
        for variant in self.compatible:
            if variant.label == label:
                return variant
        return None


def effective_supported(
    metadata: VariantMetadata, supported: SupportedProperties
) -> SupportedProperties:
    """The machine's properties reordered by the metadata's legacy priorities."""
    base = supported
    has_feature_order = any(p.feature_order for p in metadata.providers.values())
    if not (metadata.feature_priorities or metadata.property_priorities or has_feature_order):
        return base
    ordered: dict[str, dict[str, tuple[str, ...]]] = {}
    for ns, features in base.namespaces.items():
        first = [f for f in metadata.feature_order(ns) if f in features]
        feature_order = first + [f for f in features if f not in first]
        ordered[ns] = {}
        for feature in feature_order:
            values = features[feature]
            preferred = metadata.property_priorities.get(ns, {}).get(feature, ())
            head = [v for v in preferred if v in values]
            ordered[ns][feature] = tuple(head + [v for v in values if v not in head])
    return SupportedProperties(ordered)


class _Scorer:
    """Scores the distinct (namespace, feature, values) groups of one metadata
    document against one machine. Each group is scored once, however many labels
    share it; reasons and property objects are only built when asked for."""

    def __init__(self, metadata: VariantMetadata, machine: SupportedProperties) -> None:
        self.machine = machine
        self.table = metadata.feature_groups
        ns_index = {ns: i for i, ns in enumerate(metadata.namespaces)}
        # (namespace, feature) -> (its part of the sort key, {value: index})
        self.lookup: dict[tuple[str, str], tuple[int, dict[str, int]]] = {}
        for ns, features in machine.namespaces.items():
            ns_part = ns_index.get(ns, len(ns_index)) << (2 * _SHIFT)
            for f_i, (feature, values) in enumerate(features.items()):
                self.lookup[(ns, feature)] = (
                    ns_part | (f_i << _SHIFT),
                    {value: v_i for v_i, value in enumerate(values)},
                )
        # Per group: the packed key of its best supported value, or None.
        self.keys: list[int | None] = []
        lookup = self.lookup
        for ns, feature, values in self.table.groups:
            entry = lookup.get((ns, feature))
            best = None
            if entry is not None:
                ranks = entry[1]
                present = [ranks[v] for v in values if v in ranks]
                if present:
                    best = entry[0] | min(present)
            self.keys.append(best)
        self._reasons: dict[int, tuple[str, str]] = {}
        self._matches: dict[int, tuple[VariantProperty, tuple[VariantProperty, ...]]] = {}

    def rejected_indices(self) -> set[int]:
        """Indices of labels that list at least one unsupported group."""
        rejected: set[int] = set()
        members = self.table.members
        for group_id, key in enumerate(self.keys):
            if key is None:
                rejected.update(members[group_id])
        return rejected

    def reason(self, group_ids: tuple[int, ...]) -> str:
        """ "needs X; machine has Y" per unmet feature; needs with the same answer
        (say, a whole namespace the machine lacks) share one clause."""
        clauses: dict[str, list[str]] = {}
        for group_id in group_ids:
            if self.keys[group_id] is not None:
                continue
            found = self._reasons.get(group_id)
            if found is None:
                ns, feature, values = self.table.groups[group_id]
                found = self._reasons[group_id] = _reason(ns, feature, values, self.machine)
            clauses.setdefault(found[1], []).append(found[0])
        return "; ".join(f"needs {' and '.join(needs)}; {have}" for have, needs in clauses.items())

    def match(self, group_id: int) -> tuple[VariantProperty, tuple[VariantProperty, ...]]:
        """(best supported property, every supported property best first)."""
        found = self._matches.get(group_id)
        if found is None:
            ns, feature, values = self.table.groups[group_id]
            ranks = self.lookup[(ns, feature)][1]
            present = sorted((ranks[v], v) for v in values if v in ranks)
            supported = tuple(VariantProperty(ns, feature, v) for _, v in present)
            found = self._matches[group_id] = (supported[0], supported)
        return found


class _Reasons(Mapping[str, str]):
    """Rejected labels, sorted, with their reasons formatted on first access."""

    def __init__(self, scorer: _Scorer, rejected: set[int]) -> None:
        self._scorer = scorer
        self._indices = rejected
        self._by_label: dict[str, tuple[int, ...]] | None = None
        self._cache: dict[str, str] = {}

    def _table(self) -> dict[str, tuple[int, ...]]:
        if self._by_label is None:
            labels = self._scorer.table.labels
            self._by_label = dict(sorted(labels[i] for i in self._indices))
        return self._by_label

    def __getitem__(self, label: str) -> str:
        found = self._cache.get(label)
        if found is None:
            found = self._cache[label] = self._scorer.reason(self._table()[label])
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._indices)

    def __repr__(self) -> str:
        return repr(dict(self))


def rank_variants(metadata: VariantMetadata, supported: SupportedProperties) -> Ranking:
    """Filter and order every label of *metadata* for a machine supporting *supported*."""
    scorer = _Scorer(metadata, effective_supported(metadata, supported))
    keys = scorer.keys
    labels = metadata.feature_groups.labels
    rejected = scorer.rejected_indices()
    keyed: list[tuple[list[Any], str, tuple[int, ...]]] = []
    for index in set(range(len(labels))) - rejected:
        label, group_ids = labels[index]
        label_keys: list[Any] = sorted([keys[g] for g in group_ids])
        label_keys += (_END, metadata.is_null(label), label)
        keyed.append((label_keys, label, group_ids))
    keyed.sort(key=_first)
    compatible = tuple(RankedVariant(label, scorer, group_ids) for _, label, group_ids in keyed)
    return Ranking(compatible, _Reasons(scorer, rejected))


def _natural(value: str) -> tuple[tuple[int, str], ...]:
    """Sort key that puts 70_real before 100_real (for display only)."""
    return tuple((int(part), "") if part.isdigit() else (0, part) for part in _DIGITS.split(value))


def _reason(
    ns: str, feature: str, wanted: Iterable[str], machine: SupportedProperties
) -> tuple[str, str]:
    """(what the label needs, what the machine has) for one unmet feature."""
    wanted = sorted(wanted, key=_natural)
    need = (
        f"{ns} :: {feature} :: {wanted[0]}"
        if len(wanted) == 1
        else f"{ns} :: {feature} one of {', '.join(wanted)}"
    )
    have = machine.values(ns, feature)
    if have:
        shown = ", ".join(have[:_MAX_SHOWN_VALUES])
        if len(have) > _MAX_SHOWN_VALUES:
            shown += f", ... ({len(have) - _MAX_SHOWN_VALUES} more)"
        return need, f"machine has {shown}"
    if machine.namespaces.get(ns):
        return need, f"machine has no {ns} :: {feature} values"
    return need, f"machine has no {ns} support"


def order_wheels(wheels: Iterable[WheelFilename], ranking: Ranking) -> list[WheelFilename]:
    """Compatible wheels best first: variant groups in ranking order, then non-variant.

    Incompatible and unknown labels are dropped. Input order is kept inside a group,
    so callers pass wheels already ordered by platform tag preference.
    """
    position = {label: i for i, label in enumerate(ranking.order)}
    non_variant = len(position)
    groups: list[tuple[int, int, WheelFilename]] = []
    for i, wheel in enumerate(wheels):
        if wheel.variant_label is None:
            groups.append((non_variant, i, wheel))
        elif wheel.variant_label in position:
            groups.append((position[wheel.variant_label], i, wheel))
    return [wheel for _, _, wheel in sorted(groups, key=lambda g: (g[0], g[1]))]
