"""Variant environment markers (PEP 825 "Environment markers").

``variant_label`` (a string) and ``variant_properties``, ``variant_features``,
``variant_namespaces`` (sets of strings) gate the dependencies of a wheel that
has already been selected. packaging 26 does not know these names, so this module
runs packaging's own marker grammar with one token rule extended to accept them,
and normalizes ``ns::f::v`` literals so that whitespace around ``::`` does not
matter. Evaluation is packaging's own. ``settle_variant_markers`` evaluates only the
variant comparisons of a marker, for a wheel served to installers that know no
variant markers: what is left uses standard markers only.

This is the one module of wheelwise that uses packaging's private API, and what it
uses may change in any packaging release: ``packaging._tokenizer`` (``DEFAULT_RULES``,
``Tokenizer``, ``ParserSyntaxError``), ``packaging._parser`` (``_parse_full_marker``,
``_parse_requirement``, the ``Variable``/``Value`` nodes of a marker tree),
``packaging.markers._normalize_extra_values``, a Marker's ``_markers`` tree and, where
present (26.4 on), ``Marker._from_markers``. pyproject.toml therefore allows only the
tested major of packaging, and ``tests/newest_packaging.py`` runs the marker tests
against the newest release.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from packaging import _parser, _tokenizer
from packaging.markers import InvalidMarker, Marker, _normalize_extra_values
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

if TYPE_CHECKING:  # properties load with the first variant marker
    from wheelwise.variants.properties import VariantProperty

VARIANT_LABEL = "variant_label"
VARIANT_PROPERTIES = "variant_properties"
VARIANT_FEATURES = "variant_features"
VARIANT_NAMESPACES = "variant_namespaces"
VARIANT_MARKERS = frozenset(
    {VARIANT_LABEL, VARIANT_PROPERTIES, VARIANT_FEATURES, VARIANT_NAMESPACES}
)
_NORMALIZED_SETS = frozenset({VARIANT_PROPERTIES, VARIANT_FEATURES})

_RULES = {
    **_tokenizer.DEFAULT_RULES,
    "VARIABLE": re.compile(
        r"\b(?:variant_label|variant_properties|variant_features|variant_namespaces)\b"
        r"|" + _tokenizer.DEFAULT_RULES["VARIABLE"].pattern,
        re.VERBOSE,
    ),
}

MarkerEnvironment = Mapping[str, "str | AbstractSet[str]"]


def _normalize(tree: _parser.MarkerList) -> _parser.MarkerList:
    """Canonical ``ns :: f :: v`` spelling for literals compared with the set markers."""
    result: _parser.MarkerList = []
    for item in tree:
        if isinstance(item, list):
            result.append(_normalize(item))
        elif isinstance(item, tuple):
            lhs, op, rhs = item
            if (
                isinstance(rhs, _parser.Variable)
                and rhs.value in _NORMALIZED_SETS
                and isinstance(lhs, _parser.Value)
            ):
                from wheelwise.variants.properties import normalize_property_text

                lhs = _parser.Value(normalize_property_text(lhs.value))
            result.append((lhs, op, rhs))
        else:
            result.append(item)
    return result


def _marker_from_tree(tree: _parser.MarkerList) -> Marker:
    # As Marker() does: `extra == "Dev"` matches the normalized extra "dev".
    markers = _normalize_extra_values(_normalize(tree))
    from_markers = getattr(Marker, "_from_markers", None)
    if from_markers is not None:  # packaging >= 26.4 keeps more state than the tree
        built: Marker = from_markers(markers)
        return built
    marker = Marker.__new__(Marker)
    marker._markers = markers
    return marker


# packaging's parser recurses once per parenthesis.
_TOO_DEEP = "parentheses nested too deeply"


def _first_line(exc: Exception) -> str:
    """packaging's reason without the copy of the text and the caret line under it
    (callers quote the text; an error is one line)."""
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__


def parse_marker(text: str) -> Marker:
    """A packaging Marker that also accepts the four variant markers."""
    try:
        tree = _parser._parse_full_marker(_tokenizer.Tokenizer(text, rules=_RULES))
    except _tokenizer.ParserSyntaxError as exc:
        raise InvalidMarker(_first_line(exc)) from None
    except RecursionError:
        raise InvalidMarker(_TOO_DEEP) from None
    return _marker_from_tree(tree)


def parse_requirement(text: str) -> Requirement:
    """A packaging Requirement whose marker may use the variant markers."""
    try:
        parsed = _parser._parse_requirement(_tokenizer.Tokenizer(text, rules=_RULES))
    except _tokenizer.ParserSyntaxError as exc:
        raise InvalidRequirement(_first_line(exc)) from None
    except RecursionError:
        raise InvalidRequirement(_TOO_DEEP) from None
    # Built from the parse as Requirement() builds itself (its attributes are public),
    # so the text is parsed once: resolving parses every dependency of every candidate.
    requirement = Requirement.__new__(Requirement)
    requirement.name = parsed.name
    requirement.url = parsed.url or None
    requirement.extras = set(parsed.extras)
    try:
        requirement.specifier = SpecifierSet(parsed.specifier)
    except InvalidSpecifier as exc:
        raise InvalidRequirement(str(exc)) from None
    requirement.marker = None if parsed.marker is None else _marker_from_tree(parsed.marker)
    return requirement


def uses_variant_markers(marker: Marker) -> bool:
    """Whether *marker* refers to any of the variant markers."""

    def walk(tree: _parser.MarkerList) -> bool:
        for item in tree:
            if isinstance(item, list) and walk(item):
                return True
            if isinstance(item, tuple) and any(
                isinstance(node, _parser.Variable) and node.value in VARIANT_MARKERS
                for node in (item[0], item[2])
            ):
                return True
        return False

    return walk(marker._markers)


def variant_environment(
    label: str | None, supported_properties: Iterable[VariantProperty] = ()
) -> dict[str, str | frozenset[str]]:
    """Marker values for the selected wheel (PEP 825 "Evaluating variant markers").

    *label* is None for a non-variant wheel. *supported_properties* are the wheel's
    properties already narrowed to those the target system supports.
    """
    props = frozenset(supported_properties) if label is not None else frozenset()
    return {
        VARIANT_LABEL: label or "",
        VARIANT_PROPERTIES: frozenset(str(p) for p in props),
        VARIANT_FEATURES: frozenset(str(p.variant_feature) for p in props),
        VARIANT_NAMESPACES: frozenset(p.namespace for p in props),
    }


def evaluate_marker(
    marker: Marker | str,
    variant_env: Mapping[str, str | frozenset[str]],
    environment: MarkerEnvironment | None = None,
) -> bool:
    """Evaluate *marker* with the standard markers (*environment* or this
    interpreter's) and the variant markers of the selected wheel."""
    if isinstance(marker, str):
        marker = parse_marker(marker)
    combined: dict[str, str | AbstractSet[str]] = dict(environment or {})
    combined.update(variant_env)
    return marker.evaluate(combined)


def _variant_key(atom: _parser.MarkerItem) -> str | None:
    """The variant marker *atom* looks up, or None. Like packaging's evaluator, the
    looked-up name is the left side when it is a variable, else the right side."""
    lhs, _, rhs = atom
    key = lhs if isinstance(lhs, _parser.Variable) else rhs
    return key.value if isinstance(key, _parser.Variable) and key.value in VARIANT_MARKERS else None


def _as_literal(node: _parser.MarkerVar) -> _parser.MarkerVar:
    """A variable on the side packaging does not look up is compared as its own
    name; a plain marker cannot spell a variant marker's name, so quote it."""
    if isinstance(node, _parser.Variable) and node.value in VARIANT_MARKERS:
        return _parser.Value(node.value)
    return node


def _settle_atom(
    atom: _parser.MarkerItem, variant_env: Mapping[str, str | frozenset[str]]
) -> _parser.MarkerItem | bool:
    if _variant_key(atom) is not None:
        return _marker_from_tree([atom]).evaluate(variant_env)
    lhs, op, rhs = atom
    return (_as_literal(lhs), op, _as_literal(rhs))


def _settle_tree(
    tree: _parser.MarkerList, variant_env: Mapping[str, str | frozenset[str]]
) -> _parser.MarkerList | bool:
    """*tree* (``a and b or c ...``: "and" binds tighter) with its variant comparisons
    replaced by their values and the constants folded away."""
    groups: list[list[_parser.MarkerList | _parser.MarkerItem | bool]] = [[]]
    for item in tree:
        if item == "or":
            groups.append([])
        elif isinstance(item, list):
            groups[-1].append(_settle_tree(item, variant_env))
        elif isinstance(item, tuple):
            groups[-1].append(_settle_atom(item, variant_env))
    # Everything is evaluated before folding: a comparison packaging cannot evaluate
    # raises here as it does in evaluate_marker, wherever it stands.
    kept: list[list[_parser.MarkerList | _parser.MarkerItem]] = []
    for group in groups:
        if any(value is False for value in group):
            continue
        rest = [value for value in group if not isinstance(value, bool)]  # no False left
        if not rest:
            return True
        kept.append(rest)
    if not kept:
        return False
    result: _parser.MarkerList = []
    for conjunction in kept:
        if result:
            result.append("or")
        for index, value in enumerate(conjunction):
            if index:
                result.append("and")
            # An and-only subgroup reads the same without its parentheses.
            if isinstance(value, list) and "or" not in value:
                result.extend(value)
            else:
                result.append(value)
    return result


def settle_variant_markers(
    marker: Marker, variant_env: Mapping[str, str | frozenset[str]]
) -> Marker | bool:
    """*marker* with every variant marker comparison evaluated in *variant_env*.

    True or False when that decides the whole marker; else the rest of it, which uses
    standard markers only (its ``str()`` parses with plain packaging). For every
    standard *environment*, ``evaluate_marker(marker, variant_env, environment)``
    equals the result (evaluated in *environment*). Raises what evaluate_marker
    raises for a variant comparison it cannot evaluate.
    """
    settled = _settle_tree(marker._markers, variant_env)
    return settled if isinstance(settled, bool) else _marker_from_tree(settled)
