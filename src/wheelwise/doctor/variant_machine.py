"""What the machine supports for one variant metadata document, as
``wheelwise install`` would see it now (:func:`wheelwise.providers.machine.machine_for`:
``enable-if``, ``--system``, the built-in providers, static properties), with two
differences that come from looking at what is installed rather than choosing it:

* ``abi_dependency`` is answered by the versions installed in the target (those a
  build was installed against);
* no third-party plugin runs (doctor installs nothing). For an installed wheel, a
  namespace only a plugin could answer is taken as it was at install time (its own
  values), and said to be unchecked; for an index's release, it is unsupported, as
  for ``install --require-hashes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wheelwise.doctor.context import DoctorContext

if TYPE_CHECKING:
    from wheelwise.variants.metadata import VariantMetadata
    from wheelwise.variants.supported import SupportedProperties

__all__ = ["MachineForVariant", "VariantMachine"]

ABI_NAMESPACE = "abi_dependency"
NO_PLUGINS = "wheelwise doctor runs no third-party plugins"


@dataclass(frozen=True)
class MachineForVariant:
    """The supported properties for one document; the namespaces taken as the
    installed label has them (unchecked); each namespace's provider detail."""

    supported: SupportedProperties
    unchecked: tuple[str, ...]
    details: Mapping[str, str]


class VariantMachine:
    """The machine of *context*, per metadata document, for a target where
    *installed* (``{normalized name: version}``) is installed."""

    def __init__(self, context: DoctorContext, installed: Mapping[str, str]) -> None:
        self.context = context
        self.installed = installed

    def for_metadata(
        self, metadata: VariantMetadata, label: str | None = None
    ) -> MachineForVariant:
        """What the machine supports for *metadata*; with *label* (an installed
        wheel's), plugin namespaces take that label's own values."""
        from wheelwise.providers.machine import MachineOptions, machine_for

        options = MachineOptions(
            # An optional provider was enabled at install time if the wheel uses it.
            enabled=metadata.namespaces,
            markers=self.context.target.markers,
            abi_from_installed=False,
            plugins_refused=NO_PLUGINS,
        )
        view = machine_for(
            metadata, options, system=self.context.system, detection=self.context.detection
        )
        overrides: dict[str, dict[str, tuple[str, ...]]] = {}
        if ABI_NAMESPACE in metadata.namespaces:
            overrides[ABI_NAMESPACE] = self._abi_values(metadata)
        unchecked: list[str] = []
        if label is not None:
            for ns in self._plugin_namespaces(metadata):
                own = metadata.variants[label].get(ns)
                if own:
                    overrides[ns] = dict(own)
                    unchecked.append(ns)
        supported = view.supported.replacing(overrides) if overrides else view.supported
        details = {ns: report.detail for ns, report in view.reports.items()}
        return MachineForVariant(supported, tuple(unchecked), details)

    def supported(self, metadata: VariantMetadata) -> SupportedProperties:
        """What the machine supports for an index's *metadata* (install's question)."""
        return self.for_metadata(metadata).supported

    def _abi_values(self, metadata: VariantMetadata) -> dict[str, tuple[str, ...]]:
        """The ``abi_dependency`` values the installed versions match, each feature
        ending with the installed version itself, so that a build for another
        version says which one is installed."""
        from packaging.version import InvalidVersion, Version

        from wheelwise.providers.abi_dependency import abi_dependency_report
        from wheelwise.variants.abi_dependency import package_name, used_features

        versions: dict[str, Version] = {}
        for feature in used_features(metadata):
            name = package_name(feature)
            text = self.installed.get(name)
            if text is not None:
                try:
                    versions[name] = Version(text)
                except InvalidVersion:
                    continue  # a broken version matches nothing
        values = dict(abi_dependency_report(metadata, versions).features)
        for feature in used_features(metadata):
            version = versions.get(package_name(feature))
            if version is not None:
                release = ".".join(str(part) for part in version.release[:3])
                values[feature] = tuple(dict.fromkeys((*values.get(feature, ()), release)))
        return values

    def _plugin_namespaces(self, metadata: VariantMetadata) -> list[str]:
        """The namespaces of *metadata* only a third-party plugin answers."""
        if self.context.system is not None:
            return []  # the description of the machine answers every namespace
        from wheelwise.providers.detect import BUILTIN_PROVIDERS

        static = metadata.static_supported()
        found = []
        for ns in metadata.namespaces:
            info = metadata.providers.get(ns)
            if (
                ns not in BUILTIN_PROVIDERS
                and ns != ABI_NAMESPACE
                and ns not in static
                and info is not None
                and info.requires
                and not info.is_static
            ):
                found.append(ns)
        return found
