"""Checking a downloaded variant wheel against the metadata it was chosen by.

A release's wheel is chosen with its combined variant metadata, usually the
index's ``*-variants.json``. PEP 825 ("Metadata consistency") requires that file to
give every label exactly the properties the wheels of that label carry in their own
``*.dist-info/variant.json``; an installer may assume so, but trusting an index
that lies would install a build the machine cannot run. So once a wheel is
downloaded, and before anything is written to the environment, its own entry for
its label must list exactly the properties it was chosen for.
"""

from __future__ import annotations

from collections.abc import Collection

from wheelwise.fetch.verify import VerifiedWheel
from wheelwise.models.errors import VariantMismatch

__all__ = ["check_variant_consistency"]


def check_variant_consistency(
    wheel: VerifiedWheel, label: str | None, chosen_for: Collection[str], source: str | None
) -> None:
    """Raise :class:`VariantMismatch` unless *wheel*'s own ``variant.json`` gives
    *label* exactly the properties *chosen_for* (``ns :: feature :: value``) that
    *source* (the metadata's URL, or what it was read from) lists for it.

    Nothing is checked for a non-variant wheel (*label* None) or one chosen without
    metadata (*source* None)."""
    if label is None or source is None:
        return
    name = wheel.path.name
    claimed = f"{source} lists {_shown(chosen_for)} for it"
    own = wheel.variant_metadata
    if own is None:
        raise VariantMismatch(
            f"{name}: a variant wheel (label {label!r}) without *.dist-info/variant.json, "
            f"but {claimed}; refusing to install it (nothing was installed)"
        )
    if label not in own.variants:
        raise VariantMismatch(
            f"{name}: its variant.json has no entry for its label {label!r} (it has "
            f"{', '.join(map(repr, own.variants)) or 'none'}), but {claimed}; refusing to "
            "install it (nothing was installed)"
        )
    actual = {str(prop) for prop in own.properties(label)}
    expected = set(chosen_for)
    if actual == expected:
        return
    raise VariantMismatch(
        f"{name}: its variant.json disagrees with {source} about label {label!r}: "
        f"only in {source}: {_shown(expected - actual)}; only in the wheel: "
        f"{_shown(actual - expected)}; the release's variant metadata is inconsistent "
        "(report it to its publisher); refusing to install it (nothing was installed)"
    )


def _shown(properties: Collection[str]) -> str:
    return ", ".join(sorted(properties)) or "no properties"
