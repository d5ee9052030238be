"""The dependency tree of an environment, drawn as ``uv pip tree`` draws it.

An edge goes from a distribution to each installed one its requirements name (those
that apply here: :mod:`wheelwise.environment.dependencies`) whose version is in the
range asked for; a requirement nothing installed meets draws nothing (``strict``
problems say so). The roots are the distributions nothing requires (with
``invert``: those that require nothing), by name; a cycle that no root reaches is
drawn from its first member by name. A distribution whose dependencies were drawn
already is drawn again as ``NAME vVERSION (*)`` without them, unless ``dedupe`` is
off; one met again below itself (a cycle) always is. A variant build is followed by
its label: ``torch v2.9.0 (variant cu128)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelwise.environment.dependencies import installed_metadata, installed_requirements

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from wheelwise.environment.installed import InstalledDist

__all__ = ["DependencyGraph", "TreeOptions", "dependency_graph", "draw_tree"]

SEEN_NOTE = "(*) Package tree already displayed"
CYCLE_NOTE = "(*) Package tree is a cycle and cannot be shown"


@dataclass(frozen=True)
class Edge:
    """*source* requires *target* with *specifier* (as written; ``*`` for any)."""

    source: NormalizedName
    target: NormalizedName
    specifier: str


@dataclass
class DependencyGraph:
    """The installed distributions by name, the edges between them, and the
    requirements that no installed distribution meets (one line each)."""

    dists: dict[NormalizedName, InstalledDist]
    edges: list[Edge] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TreeOptions:
    """What to draw (uv's ``pip tree`` options)."""

    depth: int = 255
    prune: frozenset[NormalizedName] = frozenset()
    packages: tuple[NormalizedName, ...] = ()
    dedupe: bool = True
    invert: bool = False
    show_specifiers: bool = False


def dependency_graph(
    installed: Iterable[InstalledDist], markers: Mapping[str, str]
) -> DependencyGraph:
    """The graph of *installed*, requirements read with the environment's *markers*."""
    graph = DependencyGraph({canonicalize_name(d.name): d for d in installed})
    for name, dist in sorted(graph.dists.items()):
        for requirement in installed_requirements(dist, installed_metadata(dist), markers):
            target = canonicalize_name(requirement.name)
            wanted = _written(requirement)
            found = graph.dists.get(target)
            if found is None:
                graph.problems.append(
                    f"The package `{name}` requires `{wanted}`, but it's not installed"
                )
            elif _meets(found, requirement):
                graph.edges.append(Edge(name, target, _specifier(requirement)))
            else:
                graph.problems.append(
                    f"The package `{name}` requires `{wanted}`, but `{found.version}` is installed"
                )
    return graph


def _meets(dist: InstalledDist, requirement: Requirement) -> bool:
    try:
        return requirement.specifier.contains(Version(dist.version), prereleases=True)
    except InvalidVersion:
        return False


def _specifier(requirement: Requirement, separator: str = ", ") -> str:
    """*requirement*'s range as uv prints it: versions normalized, lowest first,
    *separator* between; its URL for a direct reference; ``*`` for any version."""
    if requirement.url:
        return requirement.url
    parts = sorted(requirement.specifier, key=lambda s: (_version_key(s.version), str(s)))
    return separator.join(_normalized(part.operator, part.version) for part in parts) or "*"


def _written(requirement: Requirement) -> str:
    """*requirement* as uv's warnings write it: the normalized name, its extras, its
    range (or `` @ URL``) and its marker."""
    text: str = canonicalize_name(requirement.name)
    if requirement.extras:
        text += f"[{','.join(sorted(requirement.extras))}]"
    if requirement.url:
        text += f" @ {requirement.url}"
    elif requirement.specifier:
        text += _specifier(requirement, ",")
    if requirement.marker is not None:
        text += f" ; {str(requirement.marker).replace(chr(34), chr(39))}"
    return text


def _normalized(operator: str, version: str) -> str:
    """``OPERATOR VERSION`` with the version normalized (``2.0a.0`` as ``2.0a0``),
    a wildcard kept; an arbitrary equality (``===``) as written."""
    if operator == "===":
        return f"{operator}{version}"
    stem, wildcard = (version[:-2], ".*") if version.endswith(".*") else (version, "")
    try:
        return f"{operator}{Version(stem)}{wildcard}"
    except InvalidVersion:
        return f"{operator}{version}"


def _version_key(text: str) -> tuple[int, Version | str]:
    """A sort key of a specifier's version (``1.*`` as ``1``; one that is no
    version after those that are)."""
    try:
        return 0, Version(text.removesuffix(".*"))
    except InvalidVersion:
        return 1, text


def draw_tree(graph: DependencyGraph, options: TreeOptions) -> list[str]:
    """The lines of the tree of *graph*, as *options* ask."""
    children: dict[NormalizedName, list[tuple[NormalizedName, Edge]]] = {n: [] for n in graph.dists}
    for edge in graph.edges:
        if edge.source in options.prune or edge.target in options.prune:
            continue
        parent, child = (edge.target, edge.source) if options.invert else (edge.source, edge.target)
        children[parent].append((child, edge))
    for listed in children.values():
        listed.sort(key=lambda item: item[0])
    drawing = _Drawing(graph, options, children)
    for root in _roots(graph, options, children):
        drawing.draw(root, None, "", "", 0)
    if drawing.marked:
        drawing.lines.append(SEEN_NOTE if options.dedupe else CYCLE_NOTE)
    return drawing.lines


def _roots(
    graph: DependencyGraph,
    options: TreeOptions,
    children: Mapping[NormalizedName, Sequence[tuple[NormalizedName, Edge]]],
) -> list[NormalizedName]:
    """The distributions drawn from the top: those asked for, else those nothing
    points at, then one of each cycle left (by name)."""
    names = sorted(name for name in graph.dists if name not in options.prune)
    if options.packages:
        # The tree of those asked for: what they lead to, drawn from those of them
        # nothing else there leads to.
        asked = [name for name in set(options.packages) if name in names]
        names = sorted(_reachable(asked, children))
        pointed = {child for name in names for child, _ in children.get(name, ())}
        roots = [name for name in sorted(asked) if name not in pointed]
    else:
        pointed = {child for listed in children.values() for child, _ in listed}
        roots = [name for name in names if name not in pointed]
    reached = _reachable(roots, children)
    for name in names:
        if name not in reached:
            roots.append(name)
            reached |= _reachable([name], children)
    return sorted(roots)


def _reachable(
    starts: Iterable[NormalizedName],
    children: Mapping[NormalizedName, Sequence[tuple[NormalizedName, Edge]]],
) -> set[NormalizedName]:
    seen: set[NormalizedName] = set()
    pending = list(starts)
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            pending.extend(child for child, _ in children.get(name, ()))
    return seen


class _Drawing:
    def __init__(
        self,
        graph: DependencyGraph,
        options: TreeOptions,
        children: Mapping[NormalizedName, Sequence[tuple[NormalizedName, Edge]]],
    ) -> None:
        self.graph = graph
        self.options = options
        self.children = children
        self.lines: list[str] = []
        self.expanded: set[NormalizedName] = set()
        # The distributions above the one being drawn: met again, a cycle.
        self.path: list[NormalizedName] = []
        self.marked = False

    def draw(
        self, name: NormalizedName, edge: Edge | None, lead: str, indent: str, depth: int
    ) -> None:
        """*name*'s line (after *lead*), and below it its children, each line after
        *indent*."""
        line = f"{lead}{self._label(name, edge)}"
        below = self.children[name]
        if name in self.path or (below and self.options.dedupe and name in self.expanded):
            self.lines.append(f"{line} (*)")
            self.marked = True
            return
        self.lines.append(line)
        if below:  # drawn once (even where the depth stops it): marked from now on
            self.expanded.add(name)
        if depth >= self.options.depth:
            return
        self.path.append(name)
        for position, (child, child_edge) in enumerate(below):
            last = position == len(below) - 1
            self.draw(
                child,
                child_edge,
                indent + ("└── " if last else "├── "),
                indent + ("    " if last else "│   "),
                depth + 1,
            )
        self.path.pop()

    def _label(self, name: NormalizedName, edge: Edge | None) -> str:
        dist = self.graph.dists[name]
        text = f"{name} v{dist.version}"
        if dist.variant is not None:
            text += f" (variant {dist.variant})"
        if edge is not None and self.options.show_specifiers:
            if self.options.invert:
                text += f" [requires: {edge.target} {edge.specifier}]"
            else:
                text += f" [required: {edge.specifier}]"
        return text
