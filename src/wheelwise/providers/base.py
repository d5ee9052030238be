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

# Records, not dataclasses, and typing only for the type checker: this module is
# on the `wheelwise detect` path, where those imports would double the time.
from wheelwise.record import Record

# Not `from typing import TYPE_CHECKING`: importing typing costs the detect path.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Literal

    Status = Literal["ok", "unavailable", "error"]


class FeatureConfig(Record):
    """PEP 817 ``VariantFeatureConfig``: one feature and its values, best first."""

    __slots__ = ("name", "values", "multi_value")  # noqa: RUF023 - repr order
    name: str
    values: tuple[str, ...]
    multi_value: bool

    def __init__(self, name: str, values: Sequence[str], multi_value: bool = False) -> None:
        self._set(name=name, values=tuple(values), multi_value=multi_value)


class ProviderUnavailable(Exception):  # a state of the machine, not a failure
    """Raised by a provider when the machine lacks what it detects.

    ``str(exc)`` is the reason shown to users ("no NVIDIA driver: libnvidia-ml.so.1
    not found"); *source* says what was consulted.
    """

    def __init__(self, reason: str, source: str = "") -> None:
        super().__init__(reason)
        self.source = source


class Probe(Record):
    """What a built-in provider found: its configs, where the answer came from
    ("NVML", "/proc/cpuinfo", "WHEELWISE_NVIDIA_DRIVER", ...) and one line for
    humans ("CUDA driver 12.8; GPUs: 8.6, 6.1")."""

    __slots__ = ("configs", "source", "detail")  # noqa: RUF023 - repr order
    configs: tuple[FeatureConfig, ...]
    source: str
    detail: str

    def __init__(self, configs: Sequence[FeatureConfig], source: str, detail: str = "") -> None:
        self._set(configs=tuple(configs), source=source, detail=detail)


class Environment(Record):
    """What providers may look at; tests and simulations substitute every part."""

    __slots__ = ("variables",)
    variables: Mapping[str, str]

    def __init__(self, variables: Mapping[str, str] | None = None) -> None:
        self._set(variables=dict(os.environ) if variables is None else variables)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.variables.items())))

    def first_set(self, names: Sequence[str]) -> tuple[str, str] | None:
        """The first of *names* that is set (non-empty), with its value."""
        for name in names:
            value = self.get(name)
            if value is not None:
                return name, value
        return None

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


class ProviderReport(Record):
    """The outcome of asking one provider about this machine; ``features`` holds the
    supported features (ordered) and their values, best first, empty unless "ok"."""

    __slots__ = ("namespace", "status", "source", "detail", "features")  # noqa: RUF023 - repr order
    namespace: str
    status: Status
    source: str
    detail: str
    features: Mapping[str, tuple[str, ...]]

    def __init__(
        self,
        namespace: str,
        status: Status,
        source: str,
        detail: str,
        features: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        self._set(
            namespace=namespace,
            status=status,
            source=source,
            detail=detail,
            features=features if features is not None else {},
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.status, self.source, self.detail))

    def to_dict(self) -> dict[str, str]:
        return {"status": self.status, "source": self.source, "detail": self.detail}
