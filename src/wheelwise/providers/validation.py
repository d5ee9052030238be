"""Checking what a provider returns: names and values follow PEP 825, supported
configs are a subset of all configs, nothing is duplicated."""

from __future__ import annotations

from collections.abc import Sequence

from wheelwise.errors import WheelwiseError
from wheelwise.providers.base import FeatureConfig
from wheelwise.variants.errors import VariantError
from wheelwise.variants.grammar import validate_name, validate_value


class ProviderOutputError(ValueError, WheelwiseError):
    """A provider returned something malformed or inconsistent."""


def check_configs(namespace: str, configs: Sequence[FeatureConfig], what: str) -> None:
    seen: set[str] = set()
    for config in configs:
        try:
            validate_name(config.name, "feature name")
            for value in config.values:
                validate_value(value)
        except VariantError as exc:
            raise ProviderOutputError(f"{namespace}: {what}: {exc}") from None
        if config.name in seen:
            raise ProviderOutputError(f"{namespace}: {what}: feature {config.name!r} twice")
        seen.add(config.name)
        if len(set(config.values)) != len(config.values):
            raise ProviderOutputError(f"{namespace}: {what}: duplicate values for {config.name!r}")


def supported_features(
    namespace: str,
    all_configs: Sequence[FeatureConfig],
    supported: Sequence[FeatureConfig],
) -> dict[str, tuple[str, ...]]:
    """Validate *supported* against *all_configs*; return ``{feature: values}``."""
    check_configs(namespace, all_configs, "get_all_configs()")
    check_configs(namespace, supported, "get_supported_configs()")
    known = {config.name: set(config.values) for config in all_configs}
    result: dict[str, tuple[str, ...]] = {}
    for config in supported:
        if config.name not in known:
            raise ProviderOutputError(
                f"{namespace}: supported feature {config.name!r} is not among all configs"
            )
        unknown = [v for v in config.values if v not in known[config.name]]
        if unknown:
            raise ProviderOutputError(
                f"{namespace}: supported values {unknown} of {config.name!r} are not "
                "among all configs"
            )
        if config.values:
            result[config.name] = tuple(config.values)
    return result
