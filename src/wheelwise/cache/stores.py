"""The stores under one cache root that installs read and fill."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from wheelwise.cache.unpacked import UnpackedStore
from wheelwise.cache.wheel_cache import ContentStore

__all__ = ["ContentCache"]


class ContentCache(NamedTuple):
    """``wheels/`` and ``metadata/`` (:mod:`wheelwise.cache.wheel_cache`), and
    ``unpacked/`` (:mod:`wheelwise.cache.unpacked`)."""

    wheels: ContentStore
    metadata: ContentStore
    unpacked: UnpackedStore

    @classmethod
    def at(cls, root: Path) -> ContentCache:
        return cls(
            ContentStore(root / "wheels"),
            ContentStore(root / "metadata"),
            UnpackedStore(root / "unpacked", root / "scratch"),
        )
