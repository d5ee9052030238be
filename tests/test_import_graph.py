"""The package layers, enforced over the import graph of ``src/wheelwise``.

Every ``import`` and ``from ... import`` counts, inside functions and under
``TYPE_CHECKING`` too: a type-only import still ties two modules together. The
layers (docs/architecture.md has the diagram) go from the foundations up to the
command line; a package may import only packages of lower layers, never one of its
own layer or above, and no set of modules may import each other in a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

# Lowest first. Modules directly under wheelwise/, ``models`` and ``policy`` are the
# foundations.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset(
        {
            "wheelwise",
            "errors",
            "record",
            "untrusted_json",
            "userfiles",
            "atomic_file",
            "kernel_copy",
            "open_folders",
            "write_back",
            "cachedir",
            "userconfig",
            "forked_map",
            "delete_tree",
            "models",
            "policy",
        }
    ),
    frozenset({"variants"}),
    frozenset({"providers"}),
    frozenset({"wheels"}),
    frozenset({"environment", "cache", "lock"}),
    frozenset({"client"}),
    frozenset({"fetch", "publish"}),
    frozenset({"resolve"}),
    frozenset({"sources"}),
    frozenset({"install"}),
    frozenset({"doctor", "proxy"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),
)
FOUNDATIONS = LAYERS[0]
MAX_INSTALL_MODULES = 15


def _modules() -> dict[str, tuple[Path, bool]]:
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted((SRC / "wheelwise").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


def _imports(name: str, path: Path, is_package: bool, known: set[str]) -> Iterator[str]:
    here = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "wheelwise":
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] != "wheelwise":
                continue
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                yield submodule if submodule in known else module


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {
        name: {target for target in _imports(name, path, package, known) if target != name}
        for name, (path, package) in modules.items()
    }


GRAPH = _graph()


def _group(module: str) -> str:
    parts = module.split(".")
    return "wheelwise" if len(parts) == 1 else parts[1]


def _layer(group: str) -> int:
    for index, layer in enumerate(LAYERS):
        if group in layer:
            return index
    raise AssertionError(f"wheelwise.{group} has no layer: add it to LAYERS in {__file__}")


def test_every_package_has_a_layer() -> None:
    for module in GRAPH:
        _layer(_group(module))


def test_imports_point_only_down() -> None:
    wrong = []
    for module, targets in sorted(GRAPH.items()):
        group = _group(module)
        for target in sorted(targets):
            other = _group(target)
            if other == group or (group in FOUNDATIONS and other in FOUNDATIONS):
                continue
            if _layer(other) >= _layer(group):
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports that do not point to a lower layer:\n" + "\n".join(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_through_others() -> None:
    # A package's __init__ that re-exports its modules lazily imports them only under
    # TYPE_CHECKING; the modules never import their package's __init__ back.
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("package", ["doctor", "proxy"])
def test_doctor_and_proxy_use_the_stages_not_install(package: str) -> None:
    users = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if _group(module) == package
        for target in targets
        if _group(target) == "install"
    )
    assert users == []


def test_install_holds_the_orchestration_only() -> None:
    modules = sorted(path.name for path in (SRC / "wheelwise" / "install").glob("*.py"))
    assert len(modules) <= MAX_INSTALL_MODULES, modules
