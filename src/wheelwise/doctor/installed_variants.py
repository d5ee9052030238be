"""The installed variant wheels of a target: each one's label and variant metadata,
read from the ``variant.json`` its ``.dist-info`` keeps (PEP 825: one entry, the
wheel's own label)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from wheelwise.doctor.installed_dists import VARIANT_JSON, InstalledDist

if TYPE_CHECKING:
    from wheelwise.variants.metadata import VariantMetadata

__all__ = ["InstalledVariant", "UnreadableVariant", "read_variant"]


@dataclass(frozen=True)
class InstalledVariant:
    """An installed variant wheel, with the metadata it was installed with."""

    dist: InstalledDist
    label: str
    metadata: VariantMetadata


@dataclass(frozen=True)
class UnreadableVariant:
    """An installed distribution whose ``variant.json`` gives no usable label."""

    dist: InstalledDist
    reason: str


def read_variant(dist: InstalledDist) -> InstalledVariant | UnreadableVariant | None:
    """*dist*'s variant, if it is a variant wheel (None if not); never raises."""
    if not dist.has_variant_json:
        return None
    path = dist.location / VARIANT_JSON
    from wheelwise.variants.errors import VariantError
    from wheelwise.variants.metadata import VariantMetadata

    try:
        metadata = VariantMetadata.from_json(path.read_bytes(), source=str(path))
    except OSError as exc:
        return UnreadableVariant(dist, f"{path}: cannot be read ({exc.strerror or exc})")
    except VariantError as exc:
        return UnreadableVariant(dist, str(exc))
    labels = metadata.labels
    if len(labels) != 1:
        return UnreadableVariant(
            dist, f"{path}: lists {len(labels)} variants ({', '.join(labels)}), not its own one"
        )
    return InstalledVariant(dist, labels[0], metadata)
