"""``name#label``: a variant chosen in the requirement itself.

The wheel-variant proposals write "this variant of this package" as
``torch#cu128``; it means the same as ``--variant torch=cu128``. The label follows
the name, extras and version specifiers and comes before a marker:
``torch[extra]>=2.9#cu128 ; python_version >= "3.10"``. A ``#`` inside a marker
(``platform_version`` holds one on Linux) or a direct URL (a ``#sha256=`` fragment)
is never a label: those requirements are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from packaging.utils import canonicalize_name

from wheelwise.errors import WheelwiseError
from wheelwise.variants.labels import LABEL_RE

__all__ = [
    "LabelledRequirement",
    "VariantRequirementError",
    "apply_variant_labels",
    "split_variant_label",
]

# The name (PEP 508), then extras and specifiers up to a '#': no ';' (a marker),
# no '@' (a direct URL) and no other '#' before it.
# No ":" or "/" before the "#": that is a URL's or a path's fragment (git+https://
# host/repo#egg=name, ./dist/x.whl#sha256=...), never a label.
_LABELLED = re.compile(
    r"\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?P<rest>[^;#@:/\\]*)#(?P<after>.*)",
    re.DOTALL,
)


class VariantRequirementError(ValueError, WheelwiseError):
    """A ``name#label`` requirement is malformed, or asks for another variant of a
    package than the one already chosen for it."""


class LabelledRequirement(NamedTuple):
    """A requirement without its ``#label``; *name* and *label* are None when it had
    none."""

    requirement: str
    name: str | None = None
    label: str | None = None


def split_variant_label(text: str) -> LabelledRequirement:
    """*text* without its ``#label``, the package's name and the label.

    Raises :class:`VariantRequirementError` for an empty or invalid label."""
    match = _LABELLED.fullmatch(text)
    if match is None:
        return LabelledRequirement(text)
    after = match["after"]
    label, semicolon, marker = after.partition(";")
    label = label.strip()
    if not label:
        raise VariantRequirementError(
            f"{text!r}: nothing after '#': write NAME#LABEL, such as torch#cu128"
        )
    if not LABEL_RE.fullmatch(label):
        raise VariantRequirementError(
            f"{text!r}: invalid variant label {label!r} after '#' (a label uses only a-z, "
            "0-9, '_' and '.', and a marker comes after it: NAME#LABEL ; MARKER)"
        )
    requirement = (match["name"] + match["rest"]).strip()
    if semicolon:
        requirement += f" ; {marker.strip()}"
    return LabelledRequirement(requirement, canonicalize_name(match["name"]), label)


def apply_variant_labels(
    requirements: Iterable[str], chosen: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """*requirements* without their labels, and *chosen* (``--variant NAME=LABEL``)
    with each label added. Raises :class:`VariantRequirementError` when two ask for
    different variants of one package."""
    choice: dict[str, str] = {canonicalize_name(n): label for n, label in chosen.items()}
    origin = {name: f"--variant {name}={label}" for name, label in choice.items()}
    stripped: list[str] = []
    for text in requirements:
        found = split_variant_label(text)
        stripped.append(found.requirement)
        if found.name is None or found.label is None:
            continue
        known = choice.get(found.name)
        if known is not None and known != found.label:
            raise VariantRequirementError(
                f"{text!r} asks for variant {found.label!r} of {found.name}, but "
                f"{origin[found.name]} asks for {known!r}: choose one"
            )
        choice[found.name] = found.label
        origin.setdefault(found.name, repr(text.strip()))
    return stripped, choice
