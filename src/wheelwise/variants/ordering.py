"""Filter and order variants for a machine (PEP 825 "Variant ordering").

A label is compatible when, for every feature it lists, the machine supports at
least one of the listed values. Compatible labels are ordered by their
best-value properties, each keyed by (namespace index, feature index, value
index); lists are compared item by item, the longer list wins a prefix tie, the
label breaks exact ties, and the null variant always comes last.

Legacy (PEP 817 / variantlib) metadata adds two things, both applied here:
static properties of ahead-of-time namespaces count as supported in their listed
order, and ``default-priorities.feature`` / ``.property`` lists go before the
machine's own order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.labels import NULL_LABEL
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.supported import SupportedProperties

# Sort keys pack (namespace, feature, value) indices into one int for speed.
_SHIFT = 21
_END = 1 << (3 * _SHIFT + 1)  # sorts after every packed property key
_MAX_SHOWN_VALUES = 10
_first = itemgetter(0)


@dataclass(frozen=True)
class RankedVariant:
    """A compatible label with the properties that decide its place."""

    label: str
    # Best supported value per feature, most important first: why it ranks here.
    best: tuple[VariantProperty, ...]
    # Every listed property the machine supports (the variant marker values).
    supported: tuple[VariantProperty, ...]


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
    """The machine's properties with legacy static namespaces and priorities applied."""
    static = metadata.static_supported()
    base = supported.replacing(static) if static else supported
    if not metadata.feature_priorities and not metadata.property_priorities:
        return base
    ordered: dict[str, dict[str, tuple[str, ...]]] = {}
    for ns, features in base.namespaces.items():
        first = [f for f in metadata.feature_priorities.get(ns, ()) if f in features]
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
        self.groups = metadata.feature_groups.groups
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
        self.keys: list[int | None] = [self._best_key(group) for group in self.groups]
        self._reasons: dict[int, str] = {}
        self._matches: dict[int, tuple[VariantProperty, tuple[VariantProperty, ...]]] = {}

    def _best_key(self, group: tuple[str, str, tuple[str, ...]]) -> int | None:
        entry = self.lookup.get((group[0], group[1]))
        if entry is None:
            return None
        ranks = entry[1]
        present = [ranks[v] for v in group[2] if v in ranks]
        return entry[0] | min(present) if present else None

    def reason(self, group_id: int) -> str:
        found = self._reasons.get(group_id)
        if found is None:
            ns, feature, values = self.groups[group_id]
            found = self._reasons[group_id] = _reason(ns, feature, values, self.machine)
        return found

    def match(self, group_id: int) -> tuple[VariantProperty, tuple[VariantProperty, ...]]:
        """(best supported property, every supported property best first)."""
        found = self._matches.get(group_id)
        if found is None:
            ns, feature, values = self.groups[group_id]
            ranks = self.lookup[(ns, feature)][1]
            present = sorted((ranks[v], v) for v in values if v in ranks)
            supported = tuple(VariantProperty(ns, feature, v) for _, v in present)
            found = self._matches[group_id] = (supported[0], supported)
        return found


class _Reasons(Mapping[str, str]):
    """Rejected labels (sorted) with their reasons, formatted on first access."""

    def __init__(self, scorer: _Scorer, rejected: dict[str, tuple[int, ...]]) -> None:
        self._scorer = scorer
        self._rejected = dict(sorted(rejected.items()))
        self._cache: dict[str, str] = {}

    def __getitem__(self, label: str) -> str:
        found = self._cache.get(label)
        if found is None:
            keys = self._scorer.keys
            unmet = [g for g in self._rejected[label] if keys[g] is None]
            found = self._cache[label] = "; ".join(self._scorer.reason(g) for g in unmet)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._rejected)

    def __len__(self) -> int:
        return len(self._rejected)

    def __repr__(self) -> str:
        return repr(dict(self))


def rank_variants(metadata: VariantMetadata, supported: SupportedProperties) -> Ranking:
    """Filter and order every label of *metadata* for a machine supporting *supported*."""
    scorer = _Scorer(metadata, effective_supported(metadata, supported))
    keys = scorer.keys
    keyed: list[tuple[list[Any], str, tuple[int, ...]]] = []
    rejected: dict[str, tuple[int, ...]] = {}
    for label, group_ids in metadata.feature_groups.labels:
        label_keys: list[Any] = [keys[g] for g in group_ids]
        if None in label_keys:
            rejected[label] = group_ids
            continue
        label_keys.sort()
        label_keys += (_END, label == NULL_LABEL, label)
        keyed.append((label_keys, label, group_ids))
    keyed.sort(key=_first)
    compatible = []
    for _, label, group_ids in keyed:
        matches = sorted(((keys[g], scorer.match(g)) for g in group_ids), key=_first)
        compatible.append(
            RankedVariant(
                label,
                best=tuple(best for _, (best, _) in matches),
                supported=tuple(p for g in group_ids for p in scorer.match(g)[1]),
            )
        )
    return Ranking(tuple(compatible), _Reasons(scorer, rejected))


def _reason(ns: str, feature: str, wanted: Iterable[str], machine: SupportedProperties) -> str:
    wanted = list(wanted)
    need = (
        f"needs {ns} :: {feature} :: {wanted[0]}"
        if len(wanted) == 1
        else f"needs {ns} :: {feature} one of {', '.join(wanted)}"
    )
    have = machine.values(ns, feature)
    if have:
        shown = ", ".join(have[:_MAX_SHOWN_VALUES])
        if len(have) > _MAX_SHOWN_VALUES:
            shown += f", ... ({len(have) - _MAX_SHOWN_VALUES} more)"
        return f"{need}; machine has {shown}"
    if machine.namespaces.get(ns):
        return f"{need}; machine has no {ns} :: {feature} values"
    return f"{need}; machine has no {ns} support"


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
