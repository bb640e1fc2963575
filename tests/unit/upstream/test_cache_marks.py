"""Prompt-cache marks (``cache_control``): kept by the Messages surface, carried to Anthropic
(``cache_control``) and Bedrock Converse (``cachePoint``), removed for other providers."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.api.surfaces.messages_request import to_chat_request
from edgeproxy.config.deployment import Deployment
from edgeproxy.config.policies import Operation
from edgeproxy.errors import RequestError
from edgeproxy.routing.cache_marks import DROPPED, has_marks, without_marks
from edgeproxy.upstream.anthropic import to_messages_request
from edgeproxy.upstream.bedrock_convert import to_converse
from edgeproxy.upstream.call import UpstreamCall

EPHEMERAL = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}
POINT = {"cachePoint": {"type": "default"}}

# An Anthropic Messages body with a mark on the system prompt, a user block, a tool result,
# an assistant turn and a tool: everywhere Anthropic's docs allow one.
MESSAGES_BODY: dict[str, Any] = {
    "model": "claude",
    "max_tokens": 50,
    "system": [
        {"type": "text", "text": "You are a careful assistant."},
        {"type": "text", "text": "A long reference document ...", "cache_control": HOUR},
    ],
    "tools": [
        {
            "name": "lookup",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": EPHEMERAL,
        }
    ],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Question one", "cache_control": EPHEMERAL},
                {"type": "text", "text": "and a tail"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "lookup",
                    "input": {},
                    "cache_control": EPHEMERAL,
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": "found it",
                    "cache_control": EPHEMERAL,
                },
                {"type": "text", "text": "Go on."},
            ],
        },
    ],
}


def _chat() -> dict[str, Any]:
    return to_chat_request(MESSAGES_BODY).body


def _dep(provider: str) -> Deployment:
    return Deployment.model_validate(
        {"id": provider, "model": "m", "provider": provider, "upstream_model": "up"}
    )


def test_the_messages_surface_keeps_every_mark_on_the_chat_body() -> None:
    chat = _chat()
    system, user, assistant, tool, follow = chat["messages"]
    assert system["content"][1] == {
        "type": "text",
        "text": "A long reference document ...",
        "cache_control": HOUR,
    }
    assert "cache_control" not in system["content"][0]
    assert user["content"][0]["cache_control"] == EPHEMERAL
    assert "cache_control" not in user["content"][1]
    assert assistant["cache_control"] == EPHEMERAL  # a turn's marks apply at its end
    assert tool == {
        "role": "tool",
        "tool_call_id": "t1",
        "content": "found it",
        "cache_control": EPHEMERAL,
    }
    assert follow["content"] == [{"type": "text", "text": "Go on."}]
    assert chat["tools"][0]["cache_control"] == EPHEMERAL
    assert has_marks(chat)


def test_an_unmarked_system_prompt_stays_one_string() -> None:
    body = {
        **MESSAGES_BODY,
        "system": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    assert to_chat_request(body).body["messages"][0] == {"role": "system", "content": "a\n\nb"}
    out = to_messages_request(to_chat_request(body).body, "claude-x", False)
    assert out["system"] == "a\n\nb"


@pytest.mark.parametrize(
    "mark",
    [
        {"type": "persistent"},
        {"type": "ephemeral", "ttl": "2d"},
        "ephemeral",
        {"type": "ephemeral", "x": 1},
    ],
)
def test_a_malformed_mark_is_the_clients_400(mark: Any) -> None:
    body = {
        **MESSAGES_BODY,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": mark}]}
        ],
    }
    with pytest.raises(RequestError) as caught:
        to_chat_request(body)
    assert caught.value.param == "messages.0.content.0.cache_control"


def test_anthropic_gets_each_mark_on_its_block() -> None:
    out = to_messages_request(_chat(), "claude-x", False)
    assert out["system"] == [
        {"type": "text", "text": "You are a careful assistant."},
        {"type": "text", "text": "A long reference document ...", "cache_control": HOUR},
    ]
    assert out["tools"][0]["cache_control"] == EPHEMERAL
    user, assistant, results = out["messages"]
    assert user["content"][0] == {
        "type": "text",
        "text": "Question one",
        "cache_control": EPHEMERAL,
    }
    assert "cache_control" not in user["content"][1]
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use"]
    assert assistant["content"][-1]["cache_control"] == EPHEMERAL
    assert "cache_control" not in assistant["content"][0]
    assert results["content"][0]["type"] == "tool_result"
    assert results["content"][0]["cache_control"] == EPHEMERAL
    assert "cache_control" not in results["content"][1]


def test_bedrock_gets_a_cache_point_after_each_marked_block() -> None:
    out = to_converse(UpstreamCall(_dep("bedrock"), Operation.CHAT, _chat()))
    assert out["system"] == [
        {"text": "You are a careful assistant."},
        {"text": "A long reference document ..."},
        POINT,
    ]
    assert out["toolConfig"]["tools"][1] == POINT
    assert "toolSpec" in out["toolConfig"]["tools"][0]
    user, assistant, results = out["messages"]
    assert user["content"] == [{"text": "Question one"}, POINT, {"text": "and a tail"}]
    assert assistant["content"][-1] == POINT
    assert "toolUse" in assistant["content"][-2]
    assert "toolResult" in results["content"][0]
    assert results["content"][1] == POINT
    assert results["content"][2] == {"text": "Go on."}


def test_a_body_without_marks_gets_no_cache_point() -> None:
    body = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]}
    out = to_converse(UpstreamCall(_dep("bedrock"), Operation.CHAT, body))
    assert out["system"] == [{"text": "s"}]
    assert out["messages"][0]["content"] == [{"text": "hi"}]


def test_without_marks_removes_every_mark_and_nothing_else() -> None:
    chat = _chat()
    plain = without_marks(chat)
    assert not has_marks(plain)
    assert "cache_control" not in repr(plain)
    assert [m["role"] for m in plain["messages"]] == [m["role"] for m in chat["messages"]]
    assert plain["messages"][1]["content"][0] == {"type": "text", "text": "Question one"}
    assert has_marks(chat)  # the body it was given is left as it was
    assert DROPPED == "cache_control_dropped"
