"""One refusal judge: the errors a request is refused with before any upstream call are
rendered in ``routing/judge/`` only (``Refusal.error``), so every surface and every view of
a refusal (the status page's pool answers among them) reads them from there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "shared" / "edgeproxy"
# Only ever a refusal: a limit, a budget, a pool that cannot take the request.
REFUSALS = frozenset({"RateLimited", "QuotaExceeded", "ModelOverloaded", "ModelUnavailable"})
JUDGE = ("errors.py", "routing/judge/")


def names_used(source: str) -> set[str]:
    """The names ``source`` imports or refers to."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.name.rpartition(".")[2])
    return found


def _outside_the_judge() -> list[Path]:
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.relative_to(PACKAGE).as_posix().startswith(JUDGE)
    ]


@pytest.mark.parametrize(
    "path", _outside_the_judge(), ids=lambda p: p.relative_to(PACKAGE).as_posix()
)
def test_no_module_outside_the_judge_renders_a_refusal(path: Path) -> None:
    assert names_used(path.read_text()) & REFUSALS == set()


def test_the_walk_sees_imports_and_references() -> None:
    source = (
        "from edgeproxy.errors import RateLimited\nimport edgeproxy.errors as e\ne.QuotaExceeded\n"
    )
    assert names_used(source) & REFUSALS == {"RateLimited", "QuotaExceeded"}
    assert names_used((PACKAGE / "routing" / "judge" / "reasons.py").read_text()) >= REFUSALS
