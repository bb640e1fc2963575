"""The package's shape: the pure core stays pure, and every module stays small.

Read from the source with ``ast``, so a violation fails here before any
behaviour test would notice it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "edgeproxy"
MAX_LINES = 300
# The service carries decisions out: a longer function or a deeper nest hides a rule.
SERVICE_MAX_FUNCTION_LINES = 60
SERVICE_MAX_NESTING = 4
_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)

# The core decides from values it is given: no clock, no environment, no I/O.
CORE_MAY_IMPORT = ("edgeproxy.config", "edgeproxy.errors", "edgeproxy.routing")
CORE_MAY_NOT_IMPORT = frozenset({"time", "os", "asyncio", "socket", "datetime", "secrets"})


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(PACKAGE / "routing"), ids=lambda p: p.name)
def test_the_routing_core_imports_no_edge(path: Path) -> None:
    for name in _imports(path):
        top = name.split(".")[0]
        if top == "edgeproxy":
            assert name.startswith(CORE_MAY_IMPORT), f"{path.name} imports {name}"
        else:
            assert top in sys.stdlib_module_names, f"{path.name} imports {name}"
            assert top not in CORE_MAY_NOT_IMPORT, f"{path.name} imports {name}"


@pytest.mark.parametrize("path", _modules(PACKAGE), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_the_size_limit(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines"


def _folders() -> list[Path]:
    return sorted({path.parent for path in _modules(PACKAGE)})


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: str(p.relative_to(PACKAGE)) or ".")
def test_every_folder_is_a_package(folder: Path) -> None:
    # setuptools finds packages by their __init__.py: without one a folder leaves the layer.
    assert (folder / "__init__.py").is_file(), f"{folder.relative_to(PACKAGE)}/ has no __init__.py"


@pytest.mark.parametrize(
    "path", _modules(PACKAGE / "api"), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_the_api_does_not_import_upstream(path: Path) -> None:
    # The surfaces see the service's types only; the provider side stays behind the service.
    for name in _imports(path):
        assert not name.startswith("edgeproxy.upstream"), f"{path.name} imports {name}"


def _nesting(node: ast.AST, depth: int = 0) -> int:
    """The deepest block nesting in ``node``, nested functions and classes apart."""
    deepest = depth
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        inner = depth + 1 if isinstance(child, _BLOCKS) else depth
        deepest = max(deepest, _nesting(child, inner))
    return deepest


def _functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(), str(path))
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


@pytest.mark.parametrize(
    "path", _modules(PACKAGE / "service"), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_service_functions_stay_short_and_flat(path: Path) -> None:
    for fn in _functions(path):
        lines = (fn.end_lineno or fn.lineno) - fn.lineno + 1
        assert lines <= SERVICE_MAX_FUNCTION_LINES, f"{path.name}: {fn.name} has {lines} lines"
        depth = _nesting(fn)
        assert depth <= SERVICE_MAX_NESTING, f"{path.name}: {fn.name} nests {depth} deep"


def test_the_nesting_check_counts_blocks() -> None:
    tree = ast.parse(
        "def f():\n    for x in y:\n        if x:\n            with z:\n                pass\n"
    )
    assert _nesting(tree.body[0]) == 3


def test_the_layering_checks_see_the_package() -> None:
    # A moved package would make the parametrized tests above vanish silently.
    assert len(_modules(PACKAGE / "routing")) >= 10
    assert len(_modules(PACKAGE / "api")) >= 20
    assert len(_folders()) >= 10
    assert "edgeproxy.config.models" in _imports(PACKAGE / "routing" / "refusal.py")
    assert "edgeproxy.service.gateway" in _imports(PACKAGE / "api" / "pipeline.py")
