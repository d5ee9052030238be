"""PEP 825 "Metadata consistency" for the variant wheels of one release.

``merge()`` holds the rules; this module only makes a failure name the two wheels
that disagree. Both rules are pairwise (a label's properties; one namespace list
starting with the other), so when the merge fails some pair fails too, and that
pair is reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from wheelwise.variants.errors import MetadataConflict
from wheelwise.variants.merging import merge, merge_two
from wheelwise.variants.metadata import VariantMetadata


def merge_release(
    project: str, version: str, documents: Sequence[VariantMetadata]
) -> VariantMetadata:
    """The release's index-level metadata: all its wheels' variant.json merged.

    Each document's ``source`` should name its wheel. Raises MetadataConflict
    starting ``{project} {version}: inconsistent variant metadata: ...``, with the
    offending key (the label, or ``default-priorities.namespace``) and both wheels.
    """
    try:
        return merge(documents)
    except MetadataConflict:
        raise conflict(project, version, documents) from None


def conflict(project: str, version: str, documents: Sequence[VariantMetadata]) -> MetadataConflict:
    """The error for the first pair of *documents* that cannot be merged."""
    for left, right in combinations(documents, 2):
        try:
            merge_two(left, right)
        except MetadataConflict as exc:
            return MetadataConflict(f"{project} {version}: inconsistent variant metadata: {exc}")
    return MetadataConflict(f"{project} {version}: inconsistent variant metadata")
