"""The document wheelwise publishes for a :class:`VariantMetadata`.

PEP 825 0.1.1 has no room for provider information, yet an installer cannot select
a variant without it: which plugin answers for a namespace, which values an
ahead-of-time namespace supports, which features and values are preferred. So a
document is written in one of two formats:

* metadata that carries provider information (a ``providers`` entry, static
  properties, feature or property priorities) is written as PEP 850 v0.2.0, the
  format that extends PEP 825 with a ``providers`` table;
* anything else is written as canonical PEP 825 0.1.1 (``to_dict()``), byte for
  byte as before.

Legacy spellings (PEP 817 drafts, variantlib 0.2) map to PEP 850 as follows:

* an ahead-of-time namespace (``install-time: false``, ``plugin-use: none``, or
  static properties; see ``VariantMetadata.static_supported()`` for where its
  values come from) becomes ``providers.NS.static-properties`` (values in
  preference order) with ``providers.NS.feature-order`` listing every static
  feature once: PEP 850 has no ``install-time``, static properties are what make
  a provider ahead-of-time. Its ``requires`` / ``plugin-api`` run no plugin at
  install time and are left out;
* top-level ``static-properties`` move into their namespace's provider;
* ``default-priorities.feature.NS`` becomes ``providers.NS.feature-order``;
* ``default-priorities.property.NS`` reorders the static values of NS; on a
  namespace answered by a plugin PEP 850 has no place for it, so it is not written;
* ``build-requires``, ``plugin-use`` and unknown provider keys do not take part
  in selection and are not written.
"""

from __future__ import annotations

import json
from typing import Any

from wheelwise.variants.metadata import ProviderInfo, VariantMetadata
from wheelwise.variants.schema import PEP850_SCHEMA_URL


def needs_providers_format(metadata: VariantMetadata) -> bool:
    """Whether *metadata* carries provider information that selection needs."""
    return bool(
        metadata.providers
        or metadata.static_properties
        or metadata.feature_priorities
        or metadata.property_priorities
    )


def metadata_document(metadata: VariantMetadata) -> dict[str, Any]:
    """The published document: PEP 850 v0.2.0 when provider information is needed,
    else canonical PEP 825 0.1.1. Keys are in a stable order."""
    canonical = metadata.to_dict()
    if not needs_providers_format(metadata):
        return canonical
    return {
        "$schema": PEP850_SCHEMA_URL,
        "default-priorities": canonical["default-priorities"],
        "providers": providers_table(metadata),
        "variants": canonical["variants"],
    }


def metadata_json(metadata: VariantMetadata) -> str:
    """:func:`metadata_document` as JSON text with a trailing newline."""
    return json.dumps(metadata_document(metadata), indent=2, ensure_ascii=False) + "\n"


def metadata_bytes(metadata: VariantMetadata) -> bytes:
    return metadata_json(metadata).encode("utf-8")


def providers_table(metadata: VariantMetadata) -> dict[str, dict[str, Any]]:
    """PEP 850 ``providers``: one entry per listed namespace that has information."""
    static = metadata.static_supported()
    described = (
        set(metadata.providers)
        | set(static)
        | set(metadata.feature_priorities)
        | set(metadata.property_priorities)
    )
    table: dict[str, dict[str, Any]] = {}
    for ns in sorted(described & set(metadata.namespaces)):
        info = metadata.providers.get(ns, ProviderInfo())
        if ns in static:
            entry = _static_entry(static[ns], metadata.property_priorities.get(ns, {}))
        else:
            entry = _plugin_entry(metadata, ns, info)
        if info.enable_if is not None:
            entry["enable-if"] = info.enable_if
        if info.optional:
            entry["optional"] = True
        table[ns] = dict(sorted(entry.items()))
    return table


def _static_entry(
    features: dict[str, tuple[str, ...]], priorities: dict[str, tuple[str, ...]]
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "static-properties": {
            feature: _preferred_first(values, priorities.get(feature, ()))
            for feature, values in sorted(features.items())
        }
    }
    if features:
        # static_supported()'s order: feature priorities, then the provider's
        # feature-order, then document order; every static feature exactly once.
        entry["feature-order"] = list(features)
    return entry


def _plugin_entry(metadata: VariantMetadata, ns: str, info: ProviderInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if info.requires:
        entry["requires"] = list(info.requires)
    if info.plugin_api is not None:
        entry["plugin-api"] = info.plugin_api
    if info.builtin is not None:
        entry["builtin"] = info.builtin
    order = metadata.feature_order(ns)
    if order:
        entry["feature-order"] = list(order)
    return entry


def _preferred_first(values: tuple[str, ...], preferred: tuple[str, ...]) -> list[str]:
    head = [value for value in preferred if value in values]
    return head + [value for value in values if value not in head]
