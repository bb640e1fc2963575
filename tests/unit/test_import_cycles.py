"""No circle among edgeproxy's modules, counting every import the source names.

Type-only imports (under ``TYPE_CHECKING``) and imports inside functions count
too: they hide a circle from the interpreter, not from a reader, and the next
runtime import along the same arrows closes it for real.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
PACKAGE = SHARED / "edgeproxy"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SHARED).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _named(module: str, names: list[str]) -> Iterator[str]:
    """The edgeproxy modules that ``from module import names`` loads: each name that is a
    module of its own, else ``module`` itself."""
    for name in names:
        if f"{module}.{name}" in MODULES:
            yield f"{module}.{name}"
        elif module in MODULES:
            yield module


def imports_of(name: str, source: str | None = None) -> set[str]:
    """The edgeproxy modules ``name``'s source (or ``source``) imports, wherever the import
    stands."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text() if source is None else source, str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.update(_named(base, [a.name for a in node.names]))
    found.discard(name)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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


def test_the_walk_finds_a_circle_it_is_shown() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_the_walk_sees_type_only_relative_and_function_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from edgeproxy.service.run import Run\n"
        "def later() -> None:\n"
        "    from . import pool\n"
        "    from ..routing.step import Try\n"
        "    import edgeproxy.errors, json\n"
    )
    assert imports_of("edgeproxy.service.slots", source) == {
        "edgeproxy.service.run",
        "edgeproxy.service.pool",
        "edgeproxy.routing.step",
        "edgeproxy.errors",
    }


def test_no_circle_among_edgeproxy_modules() -> None:
    graph = {name: imports_of(name) for name in MODULES}
    assert circles(graph) == []
