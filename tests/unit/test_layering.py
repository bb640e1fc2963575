"""The package's shape: which room may import which, the pure core stays pure.

Read from the source with ``ast``, so a violation fails here before any
behaviour test would notice it. The seams draw the files: a module is cut
where its rooms part (``MAY_IMPORT``), not at a line count; the one size rule
left is a ceiling no seam needs to reach. That each store protocol method has
one implementation is ``tests/unit/state/test_store_pieces.py``'s.
"""

from __future__ import annotations

import ast
import graphlib
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "edgeproxy"
MAX_LINES = 500
# The service carries decisions out: a deeper nest hides a rule.
SERVICE_MAX_NESTING = 4
_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)

# The core decides from values it is given: no clock, no environment, no I/O.
CORE_MAY_NOT_IMPORT = frozenset({"time", "os", "asyncio", "socket", "datetime", "secrets"})

# The rooms of edgeproxy (its top-level packages and modules) and the other rooms
# each may import; its own always. Every arrow points down: the table is drawn in
# an order where each row names only rows above it (test_the_drawing_has_no_circle).
_LEAF: frozenset[str] = frozenset()
MAY_IMPORT: dict[str, frozenset[str]] = {
    # Leaves: each room may use them, they use no room.
    "errors": _LEAF,
    "anthropic_errors": _LEAF,
    "header_values": _LEAF,
    "strict_json": _LEAF,
    "tls": _LEAF,
    "settings": _LEAF,
    "entrypoint": _LEAF,
    "config": frozenset({"errors"}),
    # The pure core: the configuration's types and the errors, nothing with I/O.
    "routing": frozenset({"config", "errors"}),
    # The AWS client knows AWS, not edgeproxy's items: the store imports it, never the reverse.
    "aws": frozenset({"errors", "tls"}),
    "state": frozenset({"aws", "config", "errors", "routing", "strict_json"}),
    "upstream": frozenset(
        {"anthropic_errors", "config", "errors", "header_values", "routing", "strict_json", "tls"}
    ),
    "service": frozenset(
        {"config", "errors", "routing", "settings", "state", "strict_json", "upstream"}
    ),
    # The store and the credential resolver a job or CLI command opens without the request path.
    "clients": frozenset({"aws", "service", "settings", "state"}),
    # The composition root builds the clients the service is given.
    "runtime": frozenset(
        {
            "aws",
            "clients",
            "config",
            "errors",
            "routing",
            "service",
            "settings",
            "state",
            "tls",
            "upstream",
        }
    ),
    # The surfaces see the service's types; the provider side stays behind the service.
    "api": frozenset(
        {
            "anthropic_errors",
            "aws",  # SnapStart's hooks: which client the first request will build
            "config",
            "entrypoint",
            "errors",
            "header_values",
            "routing",
            "runtime",
            "service",
            "settings",
            "state",
            "strict_json",
        }
    ),
    "jobs": frozenset(
        {
            "aws",
            "clients",
            "config",
            "entrypoint",
            "errors",
            "routing",
            "runtime",
            "service",
            "settings",
            "state",
            "upstream",
        }
    ),
    "cli": frozenset(
        {
            "api",
            "config",
            "entrypoint",
            "errors",
            "jobs",
            "routing",
            "runtime",
            "service",
            "settings",
            "state",
            "strict_json",
        }
    ),
}
# Imports for annotations only (under ``if TYPE_CHECKING``): no arrow at run time, but an
# arrow all the same (test_the_drawing_has_no_circle draws them too). None is needed:
# ``errors`` carries ``Fault`` itself rather than naming routing's.
TYPE_ONLY: dict[str, frozenset[str]] = {}


def _imports(path: Path, *, annotations: bool = True) -> set[str]:
    """The modules ``path`` imports; without ``annotations``, those under ``TYPE_CHECKING`` left out."""
    tree = ast.parse(path.read_text(), str(path))
    skipped: set[int] = set()
    if not annotations:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
                skipped.update(id(inner) for child in node.body for inner in ast.walk(child))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "edgeproxy":  # from edgeproxy import strict_json
                found.update(f"edgeproxy.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
    return found


def _room(path: Path) -> str:
    """``state/dynamodb/table.py`` -> ``state``; ``runtime.py`` -> ``runtime``."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def _rooms_imported(path: Path, *, annotations: bool = True) -> set[str]:
    names = _imports(path, annotations=annotations)
    return {name.split(".")[1] for name in names if name.startswith("edgeproxy.")} - {_room(path)}


def _modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def _code_modules() -> list[Path]:
    return [path for path in _modules(PACKAGE) if path != PACKAGE / "__init__.py"]


@pytest.mark.parametrize("path", _code_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_module_imports_only_the_rooms_its_room_may(path: Path) -> None:
    room = _room(path)
    assert room in MAY_IMPORT, f"{room} is a new room: give it a row in MAY_IMPORT"
    found = _rooms_imported(path, annotations=False)
    assert found <= MAY_IMPORT[room], f"{room} may not import {sorted(found - MAY_IMPORT[room])}"
    typed = _rooms_imported(path) - found
    allowed = MAY_IMPORT[room] | TYPE_ONLY.get(room, _LEAF)
    assert typed <= allowed, f"{room} may not import {sorted(typed - allowed)}, even for types"


def _arrows(
    may: dict[str, frozenset[str]], type_only: dict[str, frozenset[str]]
) -> dict[str, frozenset[str]]:
    """Each room's arrows, run-time and type-only together."""
    return {room: allowed | type_only.get(room, _LEAF) for room, allowed in may.items()}


def _up_arrows(arrows: dict[str, frozenset[str]]) -> list[str]:
    """The arrows of ``arrows`` to a room drawn at or below their own row."""
    drawn: set[str] = set()
    up = []
    for room, allowed in arrows.items():
        up.extend(f"{room} -> {other}" for other in sorted(allowed - drawn))
        drawn.add(room)
    return up


def test_the_drawing_has_no_circle() -> None:
    # Each room's row names only rooms drawn above it: no arrow up, so no circle; a
    # type-only arrow counts, since the next run-time import along it closes the circle.
    assert set(TYPE_ONLY) <= set(MAY_IMPORT)
    assert _up_arrows(_arrows(MAY_IMPORT, TYPE_ONLY)) == []
    graphlib.TopologicalSorter(_arrows(MAY_IMPORT, TYPE_ONLY)).prepare()  # CycleError


def test_a_type_only_arrow_up_is_seen() -> None:
    may = {"errors": _LEAF, "routing": frozenset({"errors"})}
    assert _up_arrows(_arrows(may, {})) == []
    assert _up_arrows(_arrows(may, {"errors": frozenset({"routing"})})) == ["errors -> routing"]


@pytest.mark.parametrize("path", _modules(PACKAGE / "routing"), ids=lambda p: p.name)
def test_the_routing_core_imports_no_edge(path: Path) -> None:
    for name in _imports(path):
        top = name.split(".")[0]
        if top != "edgeproxy":
            assert top in sys.stdlib_module_names, f"{path.name} imports {name}"
            assert top not in CORE_MAY_NOT_IMPORT, f"{path.name} imports {name}"


@pytest.mark.parametrize("path", _modules(PACKAGE), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_the_size_ceiling(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines"


def _folders() -> list[Path]:
    return sorted({path.parent for path in _modules(PACKAGE)})


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: str(p.relative_to(PACKAGE)) or ".")
def test_every_folder_is_a_package(folder: Path) -> None:
    # setuptools finds packages by their __init__.py: without one a folder leaves the layer.
    assert (folder / "__init__.py").is_file(), f"{folder.relative_to(PACKAGE)}/ has no __init__.py"


def _defines_something(init: Path) -> bool:
    body = ast.parse(init.read_text()).body
    return any(
        not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in body
    )


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: str(p.relative_to(PACKAGE)) or ".")
def test_no_package_holds_a_single_module(folder: Path) -> None:
    # A package of one module is a module with a longer name: fold it into its parent.
    modules = [path for path in folder.glob("*.py") if path.name != "__init__.py"]
    if _defines_something(folder / "__init__.py"):
        modules.append(folder / "__init__.py")
    assert len(modules) >= 2, f"{folder.relative_to(PACKAGE)}/ holds {len(modules)} module"


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
def test_service_functions_stay_flat(path: Path) -> None:
    for fn in _functions(path):
        depth = _nesting(fn)
        assert depth <= SERVICE_MAX_NESTING, f"{path.name}: {fn.name} nests {depth} deep"


def test_the_nesting_check_counts_blocks() -> None:
    tree = ast.parse(
        "def f():\n    for x in y:\n        if x:\n            with z:\n                pass\n"
    )
    assert _nesting(tree.body[0]) == 3


def test_the_import_reader_sees_each_form(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\nimport edgeproxy.tls\n"
        "from edgeproxy import strict_json\n"
        "if TYPE_CHECKING:\n    from edgeproxy.routing import faults\n"
        "def late():\n    from edgeproxy.state import keys\n"
    )
    running = {"typing", "edgeproxy.tls", "edgeproxy.strict_json", "edgeproxy.state"}
    assert _imports(probe, annotations=False) == running
    assert _imports(probe) == running | {"edgeproxy.routing"}


def test_the_layering_checks_see_the_package() -> None:
    # A moved package would make the parametrized tests above vanish silently.
    assert len(_modules(PACKAGE / "routing")) >= 10
    assert len(_modules(PACKAGE / "api")) >= 20
    assert len(_modules(PACKAGE / "aws")) >= 6
    assert len(_folders()) >= 10
    assert "edgeproxy.config.models" in _imports(PACKAGE / "routing" / "refusal.py")
    assert "edgeproxy.service.gateway" in _imports(PACKAGE / "api" / "pipeline.py")
    assert _rooms_imported(PACKAGE / "errors.py") == set()
    assert _rooms_imported(PACKAGE / "routing" / "faults.py") == {"errors"}
    assert "strict_json" in _rooms_imported(PACKAGE / "api" / "parsing.py")
