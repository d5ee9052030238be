"""What this machine supports for one package's variant metadata.

Every namespace the metadata uses is answered by exactly one source, in this order:

1. static properties in the (legacy) metadata: ahead-of-time namespaces, used as
   listed, no provider runs (ordering applies them itself);
2. a built-in provider (nvidia, amd, x86_64, aarch64), from the detection cache;
3. a third-party plugin named by the metadata, only if trusted;
4. otherwise the namespace is unsupported, with the reason.

A provider the metadata marks ``optional`` stays off unless enabled.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from wheelwise.providers.base import ProviderReport
from wheelwise.providers.detect import BUILTIN_PROVIDERS, Detection, detect_cached
from wheelwise.variants.metadata import VariantMetadata
from wheelwise.variants.supported import SupportedProperties


@dataclass(frozen=True)
class MachineOptions:
    """The user's provider choices (``--allow-provider``, ``--enable-provider``, ...)."""

    allowed: Collection[str] = ()
    enabled: Collection[str] = ()
    refresh: bool = False
    plugin_timeout: float = 10.0


@dataclass(frozen=True)
class MachineView:
    """Supported properties for one metadata document, with a report per namespace."""

    supported: SupportedProperties
    reports: Mapping[str, ProviderReport]


def machine_for(
    metadata: VariantMetadata,
    options: MachineOptions | None = None,
    *,
    detection: Detection | None = None,
) -> MachineView:
    """Ask the right provider for every namespace of *metadata*; never raises."""
    options = options or MachineOptions()
    static = metadata.static_supported()
    reports: dict[str, ProviderReport] = {}
    plugin_specs = []
    builtin_wanted = False
    for ns in metadata.namespaces:
        info = metadata.providers.get(ns)
        if ns in static:
            reports[ns] = ProviderReport(
                ns,
                "ok",
                "static-properties",
                "ahead-of-time values from the metadata",
                static[ns],
            )
        elif info is not None and info.optional and ns not in options.enabled:
            reports[ns] = ProviderReport(
                ns,
                "unavailable",
                "metadata",
                f"provider {ns!r} is optional; enable it with --enable-provider {ns}",
            )
        elif ns in BUILTIN_PROVIDERS:
            builtin_wanted = True
        elif info is not None and info.requires and not info.is_static:
            from wheelwise.providers.plugins import PluginSpec

            plugin_specs.append(PluginSpec.from_provider(ns, info))
        else:
            reports[ns] = ProviderReport(
                ns,
                "unavailable",
                "none",
                f"no built-in provider for namespace {ns!r} and the metadata names no "
                "plugin for it",
            )
    if builtin_wanted:
        if detection is None:
            detection, _ = detect_cached(refresh=options.refresh)
        for ns in metadata.namespaces:
            if ns in BUILTIN_PROVIDERS and ns not in reports:
                reports[ns] = detection.reports.get(ns) or ProviderReport(
                    ns, "error", "built-in", "provider did not run"
                )
    if plugin_specs:
        from wheelwise.providers.plugins import run_plugins

        reports.update(
            run_plugins(
                plugin_specs,
                allowed=options.allowed,
                enabled=options.enabled,
                timeout=options.plugin_timeout,
            )
        )
    ordered = {ns: reports[ns] for ns in metadata.namespaces if ns in reports}
    supported = SupportedProperties(
        {ns: dict(r.features) for ns, r in ordered.items() if r.status == "ok"}
    )
    return MachineView(supported, ordered)
