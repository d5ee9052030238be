"""The provider model: the PEP 817 plugin API, and what running a provider yields.

A provider answers "which properties of my namespace does this machine support,
best first". Built-in providers implement :class:`BuiltinProvider`; third-party
plugins implement the PEP 817 API (``get_all_configs()`` /
``get_supported_configs()``) and run through the plugin host. Either way the
caller gets a :class:`ProviderReport` and never an exception.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

Status = Literal["ok", "unavailable", "error"]


@dataclass(frozen=True)
class FeatureConfig:
    """PEP 817 ``VariantFeatureConfig``: one feature and its values, best first."""

    name: str
    values: tuple[str, ...]
    multi_value: bool = False


class PluginAPI(Protocol):
    """The PEP 817 provider plugin API (what third-party plugins expose)."""

    namespace: str

    def get_all_configs(self) -> Sequence[FeatureConfig]: ...

    def get_supported_configs(self) -> Sequence[FeatureConfig]: ...


class ProviderUnavailable(Exception):  # a state of the machine, not a failure
    """Raised by a provider when the machine lacks what it detects.

    ``str(exc)`` is the reason shown to users ("no NVIDIA driver: libnvidia-ml.so.1
    not found"); *source* says what was consulted.
    """

    def __init__(self, reason: str, source: str = "") -> None:
        super().__init__(reason)
        self.source = source


@dataclass(frozen=True)
class Probe:
    """What a built-in provider found."""

    configs: tuple[FeatureConfig, ...]
    # Where the answer came from: "NVML", "/proc/cpuinfo", "WHEELWISE_NVIDIA_DRIVER", ...
    source: str
    # One line for humans: "driver 12.8, 2 GPUs: 8.6, 6.1".
    detail: str = ""


@dataclass(frozen=True)
class Environment:
    """What providers may look at; tests and simulations substitute every part."""

    variables: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def get(self, name: str) -> str | None:
        """An environment variable, with an empty value treated as unset."""
        value = self.variables.get(name)
        return value if value else None


class BuiltinProvider(ABC):
    """A provider that runs in-process, with no third-party dependencies.

    Subclasses set :attr:`namespace`, implement :meth:`get_all_configs` (the full
    vocabulary, independent of the machine) and :meth:`probe` (detection). Probes
    raise :class:`ProviderUnavailable` when there is nothing to detect; any other
    exception is a bug that the runner reports as ``error``.
    """

    namespace: str

    def __init__(self, env: Environment | None = None) -> None:
        self.env = env if env is not None else Environment()

    @abstractmethod
    def get_all_configs(self) -> Sequence[FeatureConfig]:
        """Every feature and value this provider can ever report."""

    @abstractmethod
    def probe(self) -> Probe:
        """Detect the machine."""

    def get_supported_configs(self) -> Sequence[FeatureConfig]:
        """PEP 817 API: what this machine supports, best first."""
        return self.probe().configs

    def fingerprint_inputs(self) -> Sequence[str]:
        """Cheap-to-read things whose change means the answer may change.

        Returns strings (environment values, small file contents) that the
        detection cache hashes; reading them must cost far less than probing.
        """
        return ()


@dataclass(frozen=True)
class ProviderReport:
    """The outcome of asking one provider about this machine."""

    namespace: str
    status: Status
    source: str
    detail: str
    # Supported features (ordered) and their values, best first; empty unless "ok".
    features: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, str]:
        return {"status": self.status, "source": self.source, "detail": self.detail}
