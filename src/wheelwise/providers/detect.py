"""Run the built-in providers and assemble the ``wheelwise detect`` document.

The document is the contract other tools rely on, and what ``--system FILE``
reads back::

    {"system": {NS: {FEATURE: [VALUES, best first]}},
     "providers": {NS: {"status": "ok" | "unavailable" | "error", "source": ..., "detail": ...}}}
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Mapping

from wheelwise import __version__
from wheelwise.providers import cache
from wheelwise.providers.base import BuiltinProvider, Environment, ProviderReport
from wheelwise.providers.fingerprint import machine_fingerprint
from wheelwise.providers.runner import run_builtin
from wheelwise.record import Record
from wheelwise.untrusted_json import loads_json
from wheelwise.variants.supported import SupportedProperties

# namespace -> "module:class" of its built-in provider, in report order.
BUILTIN_PROVIDERS: Mapping[str, str] = {
    "nvidia": "wheelwise.providers.nvidia:NvidiaProvider",
    "amd": "wheelwise.providers.amd:AMDProvider",
    "intel": "wheelwise.providers.intel:IntelProvider",
    "ascend": "wheelwise.providers.ascend:AscendProvider",
    "tpu": "wheelwise.providers.tpu:TPUProvider",
    "x86_64": "wheelwise.providers.x86_64:X86_64Provider",
    "aarch64": "wheelwise.providers.aarch64:AArch64Provider",
}


def builtin_provider(namespace: str, env: Environment | None = None) -> BuiltinProvider:
    module_name, _, class_name = BUILTIN_PROVIDERS[namespace].partition(":")
    provider_class = getattr(importlib.import_module(module_name), class_name)
    provider: BuiltinProvider = provider_class(env)
    return provider


class Detection(Record):
    """Reports of the providers that ran, keyed by namespace."""

    __slots__ = ("reports",)
    reports: Mapping[str, ProviderReport]

    def __init__(self, reports: Mapping[str, ProviderReport]) -> None:
        self._set(reports=reports)

    def __hash__(self) -> int:
        return hash(tuple(self.reports.items()))

    @property
    def system(self) -> SupportedProperties:
        return SupportedProperties(
            {ns: dict(r.features) for ns, r in self.reports.items() if r.status == "ok"}
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "system": self.system.to_dict(),
            "providers": {ns: report.to_dict() for ns, report in self.reports.items()},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, document: Mapping[str, object]) -> Detection:
        """Read a ``detect --json`` document back (the cache, a recorded file)."""
        system = SupportedProperties.from_dict(document.get("system", {}))
        raw_providers = document.get("providers", {})
        reports: dict[str, ProviderReport] = {}
        if isinstance(raw_providers, dict):
            for ns, info in raw_providers.items():
                if not isinstance(info, dict):
                    continue
                status = info.get("status")
                reports[ns] = ProviderReport(
                    ns,
                    status if status in ("ok", "unavailable", "error") else "error",
                    str(info.get("source", "")),
                    str(info.get("detail", "")),
                    dict(system.namespaces.get(ns, {})),
                )
        for ns, features in system.namespaces.items():
            if ns not in reports:
                reports[ns] = ProviderReport(ns, "ok", "system file", "", dict(features))
        return cls(reports)


def detect(namespaces: Iterable[str] | None = None, env: Environment | None = None) -> Detection:
    """Run the built-in providers (all, or those of *namespaces*); never raises."""
    wanted = list(BUILTIN_PROVIDERS) if namespaces is None else list(namespaces)
    reports: dict[str, ProviderReport] = {}
    for ns in wanted:
        if ns not in BUILTIN_PROVIDERS:
            continue
        try:
            provider = builtin_provider(ns, env)
        except Exception as exc:  # an import failure is a report, not a crash
            reports[ns] = ProviderReport(
                ns, "error", "built-in", f"cannot load provider: {type(exc).__name__}: {exc}"
            )
            continue
        reports[ns] = run_builtin(provider)
    return Detection(reports)


def detect_cached(*, refresh: bool = False) -> tuple[Detection, str]:
    """All built-in providers, from the per-user cache when the machine is unchanged.

    Returns the detection and its JSON document text (what ``detect --json`` prints).
    """
    fingerprint = machine_fingerprint(__version__)
    if not refresh:
        text = cache.load(fingerprint)
        if text is not None:
            try:
                return Detection.from_dict(loads_json(text)), text
            except (ValueError, TypeError, KeyError, AttributeError):
                pass  # a damaged cache file: detect again and overwrite it
    detection = detect()
    text = detection.to_json()
    cache.store(fingerprint, text)
    return detection, text
