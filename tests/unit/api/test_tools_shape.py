"""``tools`` that is not an array of objects is the client's 400, before any upstream call.

A server handed ``tools: true`` may reset the connection instead of answering 400 (the
mock does, as some real ones do): without this check the client got a 502 and the
deployment a transient failure for a request that was malformed.
"""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.api.surfaces.openai import OpenAISurface
from edgeproxy.config.policies import Operation
from edgeproxy.errors import RequestError

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("tools", "param"),
    [(True, "tools"), (1, "tools"), ("x", "tools"), ({"type": "function"}, "tools"),
     ([1], "tools[0]"), ([{"type": "function"}, None], "tools[1]")],
)  # fmt: skip
@pytest.mark.parametrize("operation", [Operation.CHAT, Operation.COMPLETIONS])
def test_malformed_tools_are_a_400_naming_the_field(
    tools: Any, param: str, operation: Operation
) -> None:
    body = {**CHAT, "prompt": "hi", "tools": tools}
    with pytest.raises(RequestError) as refused:
        OpenAISurface(operation).parse(body)
    assert refused.value.status == 400
    assert refused.value.param == param


def test_absent_null_or_listed_tools_pass() -> None:
    surface = OpenAISurface(Operation.CHAT)
    for tools in (None, [], [{"type": "function", "function": {"name": "f"}}]):
        surface.parse({**CHAT, "tools": tools})
    surface.parse(dict(CHAT))
