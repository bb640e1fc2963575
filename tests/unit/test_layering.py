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


def test_the_layering_checks_see_the_package() -> None:
    # A moved package would make the parametrized tests above vanish silently.
    assert len(_modules(PACKAGE / "routing")) >= 10
    assert "edgeproxy.config.models" in _imports(PACKAGE / "routing" / "step.py")
