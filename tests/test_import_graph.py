"""Our packages import one another without a circle, and only the way docs/ARCHITECTURE.md says.

Every `import x` / `from x import y` / relative import of a first-party module counts, wherever
it stands: at the top, inside a function, under `if TYPE_CHECKING:`. A lazy import only hides a
circle from the interpreter; a reader (and a refactor) still has to go round it. `from a import b`
where `b` is a submodule is an edge to `a.b`, and importing anything from a package is an edge to
its `__init__` too (it runs first, and may import modules of its own). Dotted-path strings
resolved at run time (engine/models/registry.py) are not imports and do not count.

Run as a script to print the circles and the imports across packages the rules forbid:
    .venv/bin/python tests/test_import_graph.py
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "workers", "vision", "engine", "kernels", "httpguard", "training")
# Which packages each may import (ARCHITECTURE.md): app -> workers -> {engine client, vision},
# engine -> kernels. app's `engine` subcommand starts engine.server (lazily, never torch at import);
# training imports engine.models, so training and serving preprocess alike.
MAY_IMPORT = {
    "app": {"workers", "vision", "engine", "httpguard"},
    "workers": {"vision"},
    "vision": set(),
    "engine": {"kernels", "httpguard"},
    "kernels": set(),
    "httpguard": set(),
    "training": {"engine", "vision"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def first_party_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _first_party(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def _parents(name: str) -> list[str]:
    """engine.a.b -> [engine.a, engine] (the packages whose __init__ runs first)."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The first-party modules `name` imports anywhere in its file."""
    is_package = path.name == "__init__.py"
    own_packages = set(_parents(name))   # already running when `name` runs: no edge of its making
    found: set[str] = set()

    def add(target: str) -> None:
        # the deepest existing module the dotted name reaches, and every package above it
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target:
            found.add(target)   # even its own package, named explicitly: that __init__ imports it back
            found.update(p for p in _parents(target) if p in modules and p not in own_packages)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _first_party(alias.name):
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:   # relative: from its own package (a package's __init__ is its own package)
                base = name.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not _first_party(source):
                continue
            add(source)
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:   # a submodule, not a name in the module
                    add(f"{source}.{alias.name}")
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = first_party_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected component of more than one module (Tarjan's), written
    as a path through it that comes back to its start."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_circle(graph, component) for component in components]


def _circle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside the component."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return sorted(component)


def forbidden_imports(graph: dict[str, set[str]]) -> list[str]:
    return [f"{source} -> {target}" for source, targets in sorted(graph.items()) for target in sorted(targets)
            if (a := source.split(".")[0]) != (b := target.split(".")[0]) and b not in MAY_IMPORT[a]]


def test_the_graph_sees_every_kind_of_import():
    graph = import_graph()
    # a function-level import, a TYPE_CHECKING one and a package __init__ are all edges
    assert "engine.grammar" in graph["engine.engine"]
    assert "engine.request" in graph["engine.spec.verify"]
    assert "engine.spec" in graph["engine.engine"]
    assert "workers.recognizers.registry" in graph["workers.tasks"]
    assert "workers.recognizers" in graph["workers.recognizers.base"] or "workers.recognizers" in graph["workers.tasks"]


def test_no_module_is_part_of_an_import_circle():
    cycles = find_cycles(import_graph())
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_packages_import_only_what_the_architecture_allows():
    assert set(MAY_IMPORT) == set(PACKAGES)
    forbidden = forbidden_imports(import_graph())
    assert not forbidden, "imports the architecture forbids:\n" + "\n".join(forbidden)


if __name__ == "__main__":
    graph = import_graph()
    circles, forbidden = find_cycles(graph), forbidden_imports(graph)
    for circle in circles:
        print(" -> ".join(circle))
    print(*forbidden, sep="\n")
    print(f"{len(circles)} circle(s), {len(forbidden)} forbidden import(s)")
    sys.exit(1 if circles or forbidden else 0)
