"""A refusal's text is written once, by the judge; every surface renders the error it becomes.

Read from the source with ``ast``: each sentence the judge's reasons say
(``routing/judge/``, the literal parts of its messages) appears in no other
module of the package, so no surface, endpoint or service writes a
refusal's text itself. And every surface's codec renders a refusal's one
error (``Refusal.error``) with the judge's status, message and wait.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest
from starlette.requests import Request

from edgeproxy.api.codec import Codec
from edgeproxy.api.surfaces.messages import MESSAGES
from edgeproxy.api.surfaces.openai import CHAT
from edgeproxy.api.surfaces.responses import RESPONSES
from edgeproxy.routing.judge.reasons import Refusal, Write, not_allowed, refused, too_long

PACKAGE = Path(__file__).resolve().parents[3] / "shared" / "edgeproxy"
JUDGE = PACKAGE / "routing" / "judge"
SHORTEST = 24  # a fragment shorter than this is a phrase, not a refusal's sentence


def _fragments(path: Path) -> set[str]:
    """The literal text of the messages in ``path`` (an f-string's constant parts too)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return {
        node.value.strip().lstrip("`);:,. ")  # where a named value ends, the sentence goes on
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and len(node.value.strip().lstrip("`);:,. ")) >= SHORTEST
        and " " in node.value
    }


def _judge_texts() -> set[str]:
    return {f for path in JUDGE.glob("*.py") for f in _fragments(path)}


def test_the_judge_s_texts_are_found() -> None:
    texts = _judge_texts()
    assert "does not exist or you do not have access to it." in texts
    assert "Rate limit reached for this API key (requests per minute)." in texts


@pytest.mark.parametrize(
    "path",
    sorted(p for p in PACKAGE.rglob("*.py") if JUDGE not in p.parents),
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_no_module_but_the_judge_writes_a_refusal_s_text(path: Path) -> None:
    source = path.read_text()
    written = sorted(t for t in _judge_texts() if t in source)
    assert written == [], f"{path.name} writes the judge's text itself"


def _request() -> Request:
    return Request({"type": "http", "method": "POST", "path": "/", "headers": []})


@pytest.mark.parametrize("codec", [CHAT, MESSAGES, RESPONSES], ids=lambda c: c.operation.value)
@pytest.mark.parametrize(
    "refusal",
    [
        refused(Write.RPM, 1_750_000_015.0),
        refused(Write.PARALLEL, 0.0, cap=2),
        not_allowed("gpt"),
        too_long(900, 200, 1024),
    ],
    ids=lambda r: r.reason.value,
)
def test_every_surface_renders_a_refusal_s_one_error(codec: Codec, refusal: Refusal) -> None:
    error = refusal.error()
    response = codec.error(error, _request())
    assert response.status_code == error.status
    assert refusal.message in json.dumps(json.loads(bytes(response.body)))
    wait = None if refusal.retry_after is None else str(max(1, math.ceil(refusal.retry_after)))
    assert response.headers.get("retry-after") == wait
