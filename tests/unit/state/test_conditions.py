"""Every DynamoDB condition is a named constant, and every constant says what race it prevents."""

from __future__ import annotations

import ast
from pathlib import Path

DYNAMODB = Path(__file__).resolve().parents[3] / "shared" / "edgeproxy" / "state" / "dynamodb"
KEY = "ConditionExpression"


def _inline_conditions(path: Path) -> list[int]:
    """Lines where a ``ConditionExpression`` is given as a string literal."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.keyword) and node.arg == KEY:
            values = [node.value]
        elif isinstance(node, ast.Dict):
            values = [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == KEY
            ]
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Subscript)
            and isinstance(t.slice, ast.Constant)
            and t.slice.value == KEY
            for t in node.targets
        ):
            values = [node.value]
        else:
            continue
        found += [v.lineno for v in values if isinstance(v, ast.Constant | ast.JoinedStr)]
    return found


def _named_conditions(path: Path) -> list[tuple[str, bool]]:
    """Module-level condition constants, and whether a comment right above gives the race."""
    lines = path.read_text().splitlines()
    named = []
    for node in ast.parse(path.read_text()).body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and (
                "attribute_" in node.value.value
                or ":expected" in node.value.value
                or " < :" in node.value.value
            )
        ):
            name = ast.unparse(node.targets[0])
            above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            named.append((name, above.startswith("#") and "must" in above))
    return named


def test_no_condition_is_written_inline() -> None:
    inline = {p.name: lines for p in DYNAMODB.glob("*.py") if (lines := _inline_conditions(p))}
    assert inline == {}


def test_every_named_condition_says_the_race_it_prevents() -> None:
    named = [n for p in sorted(DYNAMODB.glob("*.py")) for n in _named_conditions(p)]
    assert len(named) >= 12  # the check sees the constants
    assert [name for name, explained in named if not explained] == []
