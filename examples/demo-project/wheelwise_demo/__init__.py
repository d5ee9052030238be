"""wheelwise-demo: reports which build of itself is installed (see ``describe``)."""

from __future__ import annotations

import json
from importlib import metadata

__all__ = ["DIST_NAME", "describe", "variant"]

DIST_NAME = "wheelwise-demo"


def variant() -> tuple[str, list[str]] | None:
    """This installation's variant label and properties, or None for a non-variant build.

    Read from ``variant.json`` in the installed ``.dist-info`` (PEP 825): its
    ``variants`` table has exactly one entry, the wheel's own label.
    """
    text = metadata.distribution(DIST_NAME).read_text("variant.json")
    if text is None:
        return None
    variants: dict[str, dict[str, dict[str, list[str]]]] = json.loads(text)["variants"]
    ((label, namespaces),) = variants.items()
    properties = [
        f"{namespace} :: {feature} :: {value}"
        for namespace, features in namespaces.items()
        for feature, values in features.items()
        for value in values
    ]
    return label, properties


def describe() -> str:
    """One line: the distribution, its version and which build it is."""
    head = f"{DIST_NAME} {metadata.version(DIST_NAME)}"
    found = variant()
    if found is None:
        return f"{head}: non-variant build"
    label, properties = found
    if not properties:
        return f"{head}: variant {label} (no properties: the fallback for any machine)"
    return f"{head}: variant {label} ({', '.join(properties)})"
