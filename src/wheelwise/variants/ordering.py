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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wheelwise.variants.filenames import WheelFilename
from wheelwise.variants.labels import NULL_LABEL
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.properties import VariantProperty
from wheelwise.variants.supported import SupportedProperties

# Sort keys pack (namespace, feature, value) indices into one int for speed.
_SHIFT = 21
_END = 1 << (3 * _SHIFT + 1)  # sorts after every packed property key
_MAX_SHOWN_VALUES = 10


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


def rank_variants(metadata: VariantMetadata, supported: SupportedProperties) -> Ranking:
    """Filter and order every label of *metadata* for a machine supporting *supported*."""
    machine = effective_supported(metadata, supported)
    ns_index = {ns: i for i, ns in enumerate(metadata.namespaces)}
    # (namespace, feature) -> (namespace/feature part of the key, {value: index})
    lookup: dict[tuple[str, str], tuple[int, dict[str, int]]] = {}
    for ns, features in machine.namespaces.items():
        ns_part = ns_index.get(ns, len(ns_index)) << (2 * _SHIFT)
        for f_i, (feature, values) in enumerate(features.items()):
            lookup[(ns, feature)] = (
                ns_part | (f_i << _SHIFT),
                {value: v_i for v_i, value in enumerate(values)},
            )

    keyed: list[tuple[tuple[object, ...], RankedVariant]] = []
    rejected: dict[str, str] = {}
    for label, properties in metadata.variants.items():
        keys: list[int] = []
        best: list[tuple[int, VariantProperty]] = []
        narrowed: list[VariantProperty] = []
        unmet: list[str] = []
        for ns, features in properties.items():
            for feature, values in features.items():
                entry = lookup.get((ns, feature))
                ranks = entry[1] if entry else {}
                present = [(ranks[v], v) for v in values if v in ranks]
                if not present or entry is None:
                    unmet.append(_reason(ns, feature, values, machine))
                    continue
                v_i, value = min(present)
                key = entry[0] | v_i
                keys.append(key)
                best.append((key, VariantProperty(ns, feature, value)))
                narrowed.extend(VariantProperty(ns, feature, v) for _, v in sorted(present))
        if unmet:
            rejected[label] = "; ".join(unmet)
            continue
        keys.sort()
        best.sort(key=lambda item: item[0])
        sort_key = (*keys, _END, label == NULL_LABEL, label)
        keyed.append((sort_key, RankedVariant(label, tuple(p for _, p in best), tuple(narrowed))))
    keyed.sort(key=lambda item: item[0])
    return Ranking(tuple(variant for _, variant in keyed), dict(sorted(rejected.items())))


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
