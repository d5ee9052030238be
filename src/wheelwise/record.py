"""A small immutable record base for classes on the ``wheelwise detect`` path.

``dataclasses`` imports ``inspect``, which costs about as much as the whole cold
detection; these records give the same value semantics (equality, hashing, repr,
no mutation) for the few classes that path needs.

The small records that ``wheelwise install`` creates before its first request
(listings, links, selections, ...) are ``typing.NamedTuple`` for a similar reason:
on Python 3.11 each frozen dataclass compiles six generated methods when its
module loads, a named tuple one small function.
"""

from __future__ import annotations


class Record:
    """Subclasses list their fields in ``__slots__`` and assign them in ``__init__``
    through ``_set``; instances are then read-only."""

    __slots__: tuple[str, ...] = ()

    def _set(self, **values: object) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Record)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *self._fields()))

    def __repr__(self) -> str:
        parts = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({parts})"
