"""Time and chance come in from the composition roots, never read where they decide.

A module that reads the wall clock or draws from the ``random`` module's
hidden generator cannot be driven by a test's virtual clock or seeded rng
(``tests/fixtures/clock.py``). Only the roots that build a process or run
one operator command read them: they pass a clock and an rng down. The
process's generator is made in one place (``clients.process_rng``); the
store and the AWS client make none and touch no ``random`` function: theirs is
passed in.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "edgeproxy"

# Where a process or a command is put together: the only readers of the real sources
# (``api/snapshot.py`` reseeds the process's generator after a SnapStart restore;
# ``clients.py`` makes the process's own, ``PROCESS_RNG``).
ROOTS = ("runtime.py", "cli/", "api/snapshot.py", "clients.py")
# The one unseeded generator: the process's, which each composition root asks for once.
PROCESS_RNG = ("clients.py", "process_rng")
# Rooms that are given their rng (and the client its jitter) by the composition root.
GIVEN_THEIR_RNG = ("state/", "aws/")

CLOCKS = {
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
    ("time", "perf_counter"),
    ("time", "perf_counter_ns"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
}
# The ``random`` module's functions on its hidden, process-wide generator.
DRAWS = {
    "random",
    "uniform",
    "choice",
    "choices",
    "shuffle",
    "sample",
    "randint",
    "randrange",
    "getrandbits",
    "gauss",
    "normalvariate",
    "expovariate",
    "triangular",
    "betavariate",
    "seed",
}


def bare_sources(source: str) -> list[str]:
    """The clock reads and hidden-generator draws ``source`` calls, as ``module.name()``;
    an unseeded ``random.Random()`` counts as one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if not isinstance(owner, ast.Name):
            continue
        pair = (owner.id, node.func.attr)
        unseeded = pair == ("random", "Random") and not node.args and not node.keywords
        if pair in CLOCKS or (owner.id == "random" and pair[1] in DRAWS) or unseeded:
            found.append(f"{pair[0]}.{pair[1]}()")
    return found


def _found() -> set[tuple[str, str]]:
    out = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if not name.startswith(ROOTS):
            out.update((name, call) for call in bare_sources(path.read_text()))
    return out


def test_the_walk_finds_clock_reads_and_hidden_draws() -> None:
    source = (
        "import time, random\n"
        "from datetime import datetime\n"
        "def f(rng: random.Random) -> None:\n"
        "    time.time(); time.monotonic(); time.perf_counter(); datetime.now(); random.random()\n"
        "    random.Random(); random.Random(3); rng.random(); clock = time.time\n"
    )
    assert bare_sources(source) == [
        "time.time()",
        "time.monotonic()",
        "time.perf_counter()",
        "datetime.now()",
        "random.random()",
        "random.Random()",
    ]


def test_only_the_composition_roots_read_the_clock_or_draw_from_the_random_module() -> None:
    assert _found() == set()


def unseeded_generators(source: str) -> list[str]:
    """The functions (``<module>`` outside any) that make an unseeded ``random.Random()``."""
    found: list[str] = []

    def visit(node: ast.AST, scope: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = node.name
        if (
            isinstance(node, ast.Call)
            and _is_random_attr(node, "Random")
            and not (node.args or node.keywords)
        ):
            found.append(scope)
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(ast.parse(source), "<module>")
    return found


def random_module_uses(source: str) -> list[str]:
    """Each ``random.<name>`` the source uses other than the ``random.Random`` type in an
    annotation: a generator made (seeded or not) or a hidden-generator function named
    (a call, or passed on as ``jitter=random.random``)."""
    tree = ast.parse(source)
    in_annotations: set[int] = set()
    for node in ast.walk(tree):
        for annotation in _annotations(node):
            in_annotations.update(id(inner) for inner in ast.walk(annotation))
    used = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _is_random_attr(node, node.attr)
            and id(node) not in in_annotations
        ):
            used.append(f"random.{node.attr}")
    return sorted(used)


def _is_random_attr(node: ast.AST, attr: str) -> bool:
    if isinstance(node, ast.Call):
        node = node.func
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == "random"
    )


def _annotations(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        arguments += [a for a in (node.args.vararg, node.args.kwarg) if a is not None]
        found = [a.annotation for a in arguments if a.annotation is not None]
        return found + ([node.returns] if node.returns is not None else [])
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    return []


def test_the_walks_find_generators_made_and_random_functions_named() -> None:
    source = (
        "import random\n"
        "def given(rng: random.Random | None = None) -> random.Random:\n"
        "    return rng or random.Random()\n"
        "def seeded() -> None:\n"
        "    x: random.Random = random.Random(3)\n"
        "def jitter(draw=random.random) -> float:\n"
        "    return draw()\n"
    )
    assert unseeded_generators(source) == ["given"]
    assert random_module_uses(source) == ["random.Random", "random.Random", "random.random"]


def test_the_process_generator_is_made_in_one_place() -> None:
    made = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        made.update((name, function) for function in unseeded_generators(path.read_text()))
    assert made == {PROCESS_RNG}


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.relative_to(PACKAGE).as_posix().startswith(GIVEN_THEIR_RNG)
    ],
    ids=lambda p: p.relative_to(PACKAGE).as_posix(),
)
def test_the_store_and_the_aws_client_make_no_generator_of_their_own(path: Path) -> None:
    # A store module's rng is its constructor's argument, the client's jitter its opener's:
    # no fallback generator, no draw from the random module's hidden one.
    assert random_module_uses(path.read_text()) == []
