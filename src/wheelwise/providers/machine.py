"""What the target machine supports for one package's variant metadata.

First, a namespace is switched off (its properties incompatible) when its provider's
``enable-if`` marker is false for the target environment, or when the metadata marks
it ``optional`` and the user did not enable it (PEP 817 "Providers"). Every other
namespace the metadata uses is answered by exactly one source, in this order:

1. ``--system FILE``: the user's description of the target machine. With one, this
   machine is never detected and no plugin runs: a namespace the file does not list
   is unsupported, unless step 3 answers it;
2. a built-in provider (nvidia, amd, intel, ascend, tpu, x86_64, aarch64), for its own
   namespace: static properties that the metadata claims for such a namespace are
   ignored (with a note), so that metadata cannot claim a GPU the machine lacks;
3. the metadata's static properties: ahead-of-time namespaces, used as listed;
4. a third-party plugin named by the metadata, only if trusted for exactly the
   requirement and ``plugin-api`` the metadata names (else the whole lookup
   stops), and not when plugins are refused (``install --require-hashes``); each
   plugin that answers is named in a note;
5. otherwise the namespace is unsupported, with the reason.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from wheelwise.providers.base import ProviderReport
from wheelwise.providers.detect import BUILTIN_PROVIDERS, Detection, detect_cached
from wheelwise.variants.metadata import ProviderInfo, VariantMetadata
from wheelwise.variants.supported import SupportedProperties


@dataclass(frozen=True)
class MachineOptions:
    """The user's provider choices (``--allow-provider``, ``--enable-provider``, ...)."""

    allowed: Collection[str] = ()
    enabled: Collection[str] = ()
    refresh: bool = False
    plugin_timeout: float = 10.0
    # The target environment's marker values, for providers' ``enable-if``; None:
    # this interpreter's (``wheelwise select``).
    markers: Mapping[str, str] | None = None
    # False for ``install``: its resolver answers ``abi_dependency`` with the
    # resolution's versions, so this interpreter's distributions are not read.
    abi_from_installed: bool = True
    # Why no plugin may be installed or run (``install --require-hashes``); None: they may.
    plugins_refused: str | None = None


@dataclass(frozen=True)
class MachineView:
    """Supported properties for one metadata document, with a report per namespace."""

    supported: SupportedProperties
    reports: Mapping[str, ProviderReport]
    # What the user should know although nothing failed (an ignored static claim).
    notes: tuple[str, ...] = field(default=())


def machine_for(
    metadata: VariantMetadata,
    options: MachineOptions | None = None,
    *,
    system: SupportedProperties | None = None,
    system_source: str = "the system file",
    detection: Detection | None = None,
) -> MachineView:
    """Ask the right source for every namespace of *metadata*.

    Raises :class:`~wheelwise.providers.plugin_trust.PluginTrustError` (before any
    plugin is installed) where the metadata maps a trusted namespace to another
    plugin than the one trusted; a failing provider is a report, never an error.

    *system*: the ``--system FILE`` description of the target, if given.
    """
    options = options or MachineOptions()
    static = metadata.static_supported()
    reports: dict[str, ProviderReport] = {}
    notes: list[str] = []
    plugin_specs = []
    builtin_wanted: list[str] = []
    for ns in metadata.namespaces:
        if ns == "abi_dependency" and system is None:
            # PEP 817: never a plugin's; the installed distributions answer it.
            if options.abi_from_installed:
                from wheelwise.providers.abi_dependency import abi_dependency_report

                reports[ns] = abi_dependency_report(metadata)
            continue
        info = metadata.providers.get(ns)
        switched_off = _switched_off(ns, info, options)
        if switched_off is not None:
            reports[ns] = switched_off
            continue
        if ns in BUILTIN_PROVIDERS and ns in static:
            notes.append(
                f"{metadata.source}: static properties for the built-in namespace {ns!r} "
                "ignored: the machine's own answer is used"
            )
        if system is not None and ns in system.namespaces:
            reports[ns] = ProviderReport(
                ns, "ok", system_source, "from the system file", system.namespaces[ns]
            )
        elif ns in BUILTIN_PROVIDERS:
            if system is None:
                builtin_wanted.append(ns)
            else:
                reports[ns] = ProviderReport(
                    ns, "unavailable", system_source, f"the system file lists no {ns!r} support"
                )
        elif ns in static:
            reports[ns] = ProviderReport(
                ns,
                "ok",
                "static-properties",
                "ahead-of-time values from the metadata",
                static[ns],
            )
        elif system is not None:
            reports[ns] = ProviderReport(
                ns,
                "unavailable",
                system_source,
                f"the system file lists no {ns!r} support (plugins describe this machine, "
                "not the target, so none runs with a system file)",
            )
        elif info is not None and info.requires and not info.is_static:
            from wheelwise.providers.plugins import PluginSpec

            spec = PluginSpec.from_provider(ns, info)
            if options.plugins_refused is None:
                plugin_specs.append(spec)
            else:
                detail = f"plugin {', '.join(info.requires)} not run: {options.plugins_refused}"
                reports[ns] = ProviderReport(ns, "unavailable", spec.source, detail)
                notes.append(f"{metadata.source}: {ns!r} counts as unsupported: {detail}")
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
        for ns in builtin_wanted:
            reports[ns] = detection.reports.get(ns) or ProviderReport(
                ns, "error", "built-in", "provider did not run"
            )
    if plugin_specs:
        from wheelwise.providers.plugin_trust import PluginTrustError
        from wheelwise.providers.plugins import run_plugins

        try:
            answers = run_plugins(
                plugin_specs,
                allowed=options.allowed,
                enabled=options.enabled,
                timeout=options.plugin_timeout,
            )
        except PluginTrustError as exc:
            raise PluginTrustError(f"{metadata.source}: {exc}") from None
        reports.update(answers)
        notes += [
            f"{ns!r} answered by the third-party plugin {r.detail}"
            for ns, r in answers.items()
            if r.status == "ok"
        ]
    ordered = {ns: reports[ns] for ns in metadata.namespaces if ns in reports}
    supported = SupportedProperties(
        {ns: dict(r.features) for ns, r in ordered.items() if r.status == "ok"}
    )
    return MachineView(supported, ordered, tuple(notes))


def _switched_off(
    ns: str, info: ProviderInfo | None, options: MachineOptions
) -> ProviderReport | None:
    """The report of a namespace whose properties count as incompatible, if it is one."""
    if info is None:
        return None
    if info.enable_if is not None:
        from packaging.markers import InvalidMarker, Marker, UndefinedEnvironmentName

        try:
            enabled = Marker(info.enable_if).evaluate(
                dict(options.markers) if options.markers is not None else None
            )
        except (InvalidMarker, UndefinedEnvironmentName) as exc:
            # packaging's first line: the text and a caret line under it follow.
            reason = (str(exc).splitlines() or [type(exc).__name__])[0]
            return ProviderReport(
                ns,
                "error",
                "metadata",
                f"providers.{ns}.enable-if {info.enable_if!r} cannot be evaluated: {reason}",
            )
        if not enabled:
            return ProviderReport(
                ns,
                "unavailable",
                "metadata",
                f"enable-if {info.enable_if!r} is false for the target environment",
            )
    if info.optional and ns not in options.enabled:
        return ProviderReport(
            ns,
            "unavailable",
            "metadata",
            f"provider {ns!r} is optional; enable it with --enable-provider {ns}",
        )
    return None
