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

from wheelwise.errors import WheelwiseError
from wheelwise.providers.base import ProviderReport
from wheelwise.providers.plugin_env import PluginEnv, PluginEnvError, ensure_env
from wheelwise.providers.plugin_runner import PluginFailure, run_plugin
from wheelwise.providers.plugin_trust import (
    PluginTrustError,
    TrustConfig,
    Trusted,
    check_object_reference,
    load_trust_config,
    optional_detail,
    trust_entries,
    trust_flags,
    trusted_plugin,
    untrusted_detail,
)
from wheelwise.userconfig import display_path
from wheelwise.variants.metadata import ProviderInfo

DEFAULT_TIMEOUT = 10.0
DEFAULT_INSTALL_TIMEOUT = 600.0
_MAX_WORKERS = 8


class InvalidPluginSpec(ValueError, WheelwiseError):
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
            reference = self.plugin_api
        else:
            first = Requirement(self.install_requires()[0])
            reference = canonicalize_name(first.name).replace("-", "_")
        try:
            return check_object_reference(reference)
        except ValueError as exc:
            raise InvalidPluginSpec(str(exc)) from None

    def allow_flags(self) -> str:
        """The ``--allow-provider`` options that would trust this plugin."""
        try:
            return trust_flags(self.namespace, self.install_requires(), self.object_reference)
        except ValueError:
            return trust_flags(self.namespace, self.requires, self.plugin_api)


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

    *allowed* (``--allow-provider`` values, ``NS=REQUIREMENT``) adds to the
    allowlist in the user's config file. Raises
    :class:`~wheelwise.providers.plugin_trust.PluginTrustError`, before anything is
    installed, when an entry is malformed or when a trusted namespace is mapped to
    another plugin than the one trusted. *enabled* (``--enable-provider``) turns on
    optional providers;
    *environment* overrides marker variables for ``enable-if`` (default: this
    interpreter). *timeout* bounds each plugin's run, *install_timeout* each pip
    install; *cache_dir* replaces ``<user cache>/plugins``.
    """
    config = load_trust_config()
    trusted = trust_entries(allowed, config)
    first: dict[str, PluginSpec] = {}
    reports: dict[str, ProviderReport] = {}
    for spec in specs:
        ns = spec.namespace
        if first.setdefault(ns, spec) != spec:
            detail = f"two different providers declared for namespace {ns!r}"
            reports[ns] = ProviderReport(ns, "error", spec.source, detail)
    # Every gate is passed before anything is installed: a trust error stops it all.
    runnable: list[tuple[PluginSpec, Trusted]] = []
    for ns, spec in first.items():
        if ns in reports:
            continue
        gate = _gate(spec, trusted, frozenset(enabled), config, environment)
        if isinstance(gate, ProviderReport):
            reports[ns] = gate
        else:
            runnable.append((spec, gate))
    if runnable:
        workers = min(_MAX_WORKERS, len(runnable))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="plugin") as pool:
            futures = [
                pool.submit(_run_one, spec, entry, timeout, install_timeout, cache_dir)
                for spec, entry in runnable
            ]
            for (spec, _), future in zip(runnable, futures, strict=True):
                reports[spec.namespace] = future.result()
    return {ns: reports[ns] for ns in first}


def _gate(
    spec: PluginSpec,
    trusted: Sequence[Trusted],
    enabled: frozenset[str],
    config: TrustConfig,
    environment: Mapping[str, str] | None,
) -> ProviderReport | Trusted:
    """The report for a plugin that must not run, or the entry that trusts it."""
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
    named = any(t.entry.namespace == ns for t in trusted)
    if spec.optional and ns not in enabled:
        detail = optional_detail(ns, requires, None if named else spec.allow_flags())
        return ProviderReport(ns, "unavailable", spec.source, detail)
    try:
        install = spec.install_requires()
        reference = spec.object_reference
    except ValueError as exc:  # InvalidPluginSpec, and anything packaging may raise
        return ProviderReport(ns, "error", spec.source, f"invalid provider information: {exc}")
    entry = trusted_plugin(ns, install, reference, trusted)
    if entry is None:
        detail = untrusted_detail(ns, requires, spec.allow_flags(), config)
        return ProviderReport(ns, "unavailable", spec.source, detail)
    return entry


def _check_hashes(ns: str, env: PluginEnv, trusted: Trusted) -> None:
    """Raise PluginTrustError, before any import, if the installed file is not one
    whose hash the trust entry lists."""
    digests = trusted.entry.hashes
    if not digests:
        return
    named = env.named()
    if not named:
        raise PluginTrustError(
            f"third-party provider {ns!r}: pip reported no file for "
            f"{', '.join(env.requires)} whose hash could be checked; nothing was imported"
        )
    for dist in named:
        if dist.sha256 not in digests:
            got = f"sha256:{dist.sha256}" if dist.sha256 else "no hash"
            fix = f" --hash=sha256:{dist.sha256}" if dist.sha256 else " --hash=sha256:..."
            raise PluginTrustError(
                f"third-party provider {ns!r}: {dist.describe()} has {got}, not a hash "
                f"trusted by {trusted.entry.text()!r} ({trusted.origin}); nothing was "
                f"imported; if you trust that file, add{fix} to the entry"
            )


def _run_one(
    spec: PluginSpec,
    trusted: Trusted,
    timeout: float,
    install_timeout: float,
    cache_dir: Path | None,
) -> ProviderReport:
    ns = spec.namespace
    requires = spec.install_requires()  # checked by the gate
    reference = spec.object_reference
    try:
        env = ensure_env(requires, root=cache_dir, install_timeout=install_timeout)
        _check_hashes(ns, env, trusted)
        answer = run_plugin(env.python, reference, ns, timeout)
    except PluginTrustError:
        raise  # the user must decide: it stops the command
    except PluginEnvError as exc:
        return ProviderReport(ns, "error", spec.source, f"cannot install the plugin: {exc}")
    except PluginFailure as exc:
        return ProviderReport(ns, "error", spec.source, f"plugin {reference}: {exc}")
    except Exception as exc:  # one plugin must never break the others
        return ProviderReport(
            ns, "error", spec.source, f"plugin host failed: {type(exc).__name__}: {exc}"
        )
    where = f"{reference} in {display_path(env.path)}"
    if env.installed:
        where = f"{env.describe()}, {where}"
    where += f"; trusted as {trusted.entry.text()} ({trusted.origin})"
    if not answer.features:
        return ProviderReport(ns, "unavailable", spec.source, f"{where}: nothing supported here")
    return ProviderReport(ns, "ok", spec.source, where, answer.features)
