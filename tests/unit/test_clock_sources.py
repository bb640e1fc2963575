"""Time and chance come in from the composition roots, never read where they decide.

A module that reads the wall clock or draws from the ``random`` module's
hidden generator cannot be driven by a test's virtual clock or seeded rng
(``tests/fixtures/clock.py``). Only the roots that build a process or run
one operator command read them: they pass a clock and an rng down.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "edgeproxy"

# Where a process or a command is put together: the only readers of the real sources
# (``api/snapshot.py`` reseeds the process's generator after a SnapStart restore).
ROOTS = ("runtime.py", "cli/", "api/snapshot.py")
# Unseeded generators left as a constructor's fallback; the running service passes none
# here, tests and CLI commands do. They go when the store's constructors take their rng
# from ``runtime.open_store`` (the store's split, issue 35 item 2, rewrites them).
FALLBACKS = {
    ("state/counter_shards.py", "random.Random()"),
    ("state/dynamodb/dynamo_usage.py", "random.Random()"),
}

CLOCKS = {
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
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
        "    time.time(); time.monotonic(); datetime.now(); random.random()\n"
        "    random.Random(); random.Random(3); rng.random(); clock = time.time\n"
    )
    assert bare_sources(source) == [
        "time.time()",
        "time.monotonic()",
        "datetime.now()",
        "random.random()",
        "random.Random()",
    ]


def test_only_the_composition_roots_read_the_clock_or_draw_from_the_random_module() -> None:
    assert _found() <= FALLBACKS


def test_each_fallback_still_stands_or_leaves_the_list() -> None:
    assert _found() >= FALLBACKS
