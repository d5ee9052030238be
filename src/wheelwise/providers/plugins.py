"""The third-party provider plugin host (PEP 817 "Provider plugin API").

:func:`run_plugins` decides, for each :class:`PluginSpec`, whether the plugin may
run at all (its ``enable-if`` marker, ``optional`` and the user's trust), then
installs its requirements into an isolated cached environment
(:mod:`~wheelwise.providers.plugin_env`), runs it in a subprocess
(:mod:`~wheelwise.providers.plugin_runner`) and returns one
:class:`~wheelwise.providers.base.ProviderReport` per namespace. It never
raises for a plugin's sake: a plugin that cannot be installed, crashes, hangs
or lies is an ``error`` report, and the other plugins are not affected.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from wheelwise.providers.base import ProviderReport
from wheelwise.providers.plugin_env import PluginEnvError, ensure_env
from wheelwise.providers.plugin_runner import PluginFailure, run_plugin
from wheelwise.providers.plugin_trust import (
    TrustConfig,
    display_path,
    load_trust_config,
    optional_detail,
    untrusted_detail,
)
from wheelwise.variants.metadata import ProviderInfo

DEFAULT_TIMEOUT = 10.0
DEFAULT_INSTALL_TIMEOUT = 600.0
_MAX_WORKERS = 8


class InvalidPluginSpec(ValueError):
    """The provider information cannot describe a runnable plugin."""


@dataclass(frozen=True)
class PluginSpec:
    """How to install and call one install-time provider plugin."""

    namespace: str
    # PEP 508 requirement strings, as written in the metadata.
    requires: tuple[str, ...]
    # The ``plugin-api`` object reference; None derives it from ``requires``.
    plugin_api: str | None = None
    optional: bool = False
    enable_if: str | None = None

    @classmethod
    def from_provider(cls, namespace: str, info: ProviderInfo) -> PluginSpec:
        return cls(
            namespace=namespace,
            requires=tuple(info.requires),
            plugin_api=info.plugin_api,
            optional=info.optional,
            enable_if=info.enable_if,
        )

    @property
    def source(self) -> str:
        """``plugin <requires>``, for reports."""
        return f"plugin {', '.join(self.requires) or '(no requirements)'}"

    def install_requires(self) -> tuple[str, ...]:
        """The requirements that apply to this interpreter (markers evaluated, dropped).

        The plugin environment is built from the running interpreter, so PEP 817's
        "evaluated against the environment where the plugin is being installed" is
        this one.
        """
        result = []
        for text in self.requires:
            try:
                requirement = Requirement(text)
            except InvalidRequirement as exc:
                raise InvalidPluginSpec(f"invalid requirement {text!r}: {exc}") from None
            try:
                applies = requirement.marker is None or requirement.marker.evaluate()
            except ValueError as exc:  # e.g. an undefined marker variable
                raise InvalidPluginSpec(f"cannot evaluate {text!r}: {exc}") from None
            if not applies:
                continue
            requirement.marker = None
            result.append(str(requirement))
        if not result:
            raise InvalidPluginSpec("no requirement applies to this interpreter")
        return tuple(result)

    @property
    def object_reference(self) -> str:
        """``plugin-api``, else the first applicable requirement's name, ``-`` -> ``_``."""
        if self.plugin_api is not None:
            reference = self.plugin_api.strip()
        else:
            first = Requirement(self.install_requires()[0])
            reference = canonicalize_name(first.name).replace("-", "_")
        module, colon, attrs = reference.partition(":")
        parts = module.split(".") + (attrs.split(".") if colon else [])
        if not all(part.isidentifier() for part in parts):
            raise InvalidPluginSpec(f"invalid plugin-api object reference {reference!r}")
        return reference


def run_plugins(
    specs: Sequence[PluginSpec],
    *,
    allowed: Collection[str],
    enabled: Collection[str],
    timeout: float = DEFAULT_TIMEOUT,
    environment: Mapping[str, str] | None = None,
    install_timeout: float = DEFAULT_INSTALL_TIMEOUT,
    cache_dir: Path | None = None,
) -> dict[str, ProviderReport]:
    """One report per namespace, in the order of *specs*; never raises for a plugin.

    *allowed* (``--allow-provider``) adds to the allowlist in the user's config
    file; *enabled* (``--enable-provider``) turns on optional providers;
    *environment* overrides marker variables for ``enable-if`` (default: this
    interpreter). *timeout* bounds each plugin's run, *install_timeout* each pip
    install; *cache_dir* replaces ``<user cache>/plugins``.
    """
    config = load_trust_config()
    trusted = frozenset(allowed) | config.allow
    first: dict[str, PluginSpec] = {}
    reports: dict[str, ProviderReport] = {}
    for spec in specs:
        ns = spec.namespace
        if first.setdefault(ns, spec) != spec:
            detail = f"two different providers declared for namespace {ns!r}"
            reports[ns] = ProviderReport(ns, "error", spec.source, detail)
    runnable: list[PluginSpec] = []
    for ns, spec in first.items():
        if ns in reports:
            continue
        refusal = _gate(spec, trusted, frozenset(enabled), config, environment)
        if refusal is None:
            runnable.append(spec)
        else:
            reports[ns] = refusal
    if runnable:
        workers = min(_MAX_WORKERS, len(runnable))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="plugin") as pool:
            futures = [
                pool.submit(_run_one, spec, timeout, install_timeout, cache_dir)
                for spec in runnable
            ]
            for spec, future in zip(runnable, futures, strict=True):
                reports[spec.namespace] = future.result()
    return {ns: reports[ns] for ns in first}


def _gate(
    spec: PluginSpec,
    trusted: frozenset[str],
    enabled: frozenset[str],
    config: TrustConfig,
    environment: Mapping[str, str] | None,
) -> ProviderReport | None:
    """The report for a plugin that must not run, or None when it may."""
    ns = spec.namespace
    if spec.enable_if is not None:
        try:
            applies = Marker(spec.enable_if).evaluate(environment)
        except (InvalidMarker, KeyError, ValueError) as exc:
            return ProviderReport(
                ns, "error", spec.source, f"invalid enable-if {spec.enable_if!r}: {exc}"
            )
        if not applies:
            return ProviderReport(
                ns, "unavailable", spec.source, f"enable-if {spec.enable_if!r} is false here"
            )
    requires = ", ".join(spec.requires)
    if spec.optional and ns not in enabled:
        detail = optional_detail(ns, requires, trusted=ns in trusted)
        return ProviderReport(ns, "unavailable", spec.source, detail)
    if ns not in trusted:
        return ProviderReport(
            ns, "unavailable", spec.source, untrusted_detail(ns, requires, config)
        )
    return None


def _run_one(
    spec: PluginSpec, timeout: float, install_timeout: float, cache_dir: Path | None
) -> ProviderReport:
    ns = spec.namespace
    try:
        requires = spec.install_requires()
        reference = spec.object_reference
    except ValueError as exc:  # InvalidPluginSpec, and anything packaging may raise
        return ProviderReport(ns, "error", spec.source, f"invalid provider information: {exc}")
    try:
        env = ensure_env(requires, root=cache_dir, install_timeout=install_timeout)
        answer = run_plugin(env.python, reference, ns, timeout)
    except PluginEnvError as exc:
        return ProviderReport(ns, "error", spec.source, f"cannot install the plugin: {exc}")
    except PluginFailure as exc:
        return ProviderReport(ns, "error", spec.source, f"plugin {reference}: {exc}")
    except Exception as exc:  # one plugin must never break the others
        return ProviderReport(
            ns, "error", spec.source, f"plugin host failed: {type(exc).__name__}: {exc}"
        )
    where = f"{reference} in {display_path(env.path)}"
    if not answer.features:
        return ProviderReport(ns, "unavailable", spec.source, f"{where}: nothing supported here")
    return ProviderReport(ns, "ok", spec.source, where, answer.features)
