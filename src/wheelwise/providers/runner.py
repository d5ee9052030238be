"""Run a built-in provider and turn whatever happens into a ProviderReport."""

from __future__ import annotations

from wheelwise.providers.base import BuiltinProvider, ProviderReport, ProviderUnavailable
from wheelwise.providers.validation import ProviderOutputError, supported_features


def run_builtin(provider: BuiltinProvider) -> ProviderReport:
    """Probe *provider*; never raises."""
    namespace = provider.namespace
    try:
        probe = provider.probe()
        features = supported_features(namespace, provider.get_all_configs(), probe.configs)
    except ProviderUnavailable as exc:
        return ProviderReport(namespace, "unavailable", exc.source, str(exc))
    except ProviderOutputError as exc:
        return ProviderReport(namespace, "error", "built-in", f"invalid output: {exc}")
    except Exception as exc:  # a provider must never break detection
        return ProviderReport(
            namespace, "error", "built-in", f"provider failed: {type(exc).__name__}: {exc}"
        )
    if not features:
        return ProviderReport(
            namespace, "unavailable", probe.source, probe.detail or "nothing supported"
        )
    return ProviderReport(namespace, "ok", probe.source, probe.detail, features)
