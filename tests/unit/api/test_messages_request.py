"""Anthropic Messages request bodies -> OpenAI chat bodies, and their 400s."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.api.surfaces.messages_request import to_chat_request
from edgeproxy.errors import RequestError
from edgeproxy.upstream.anthropic import to_messages_request

PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def body(**fields: Any) -> dict[str, Any]:
    return {
        "model": "fast-chat",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Hello"}],
        **fields,
    }


def test_minimal_body() -> None:
    chat = to_chat_request(body())
    assert chat.model == "fast-chat"
    assert chat.stream is False
    assert chat.modalities == frozenset({"text"})
    assert chat.body == {
        "model": "fast-chat",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Hello"}],
    }


def test_system_string_and_blocks_lead_the_messages() -> None:
    first = to_chat_request(body(system="Be brief.")).body["messages"][0]
    assert first == {"role": "system", "content": "Be brief."}
    blocks = [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Be kind."},
    ]
    plain = to_chat_request(body(system=[{"type": "text", "text": "a"}, blocks[1]]))
    assert plain.body["messages"][0] == {"role": "system", "content": "a\n\nBe kind."}
    # A marked block keeps the system prompt as parts, so the mark stays where it was.
    first_message = to_chat_request(body(system=blocks)).body["messages"][0]
    assert first_message == {"role": "system", "content": blocks}


def test_sampling_stop_and_dropped_fields() -> None:
    chat = to_chat_request(
        body(
            temperature=0.2,
            top_p=0.9,
            top_k=40,
            stop_sequences=["END", "STOP"],
            metadata={"user_id": "u1"},
            thinking={"type": "enabled", "budget_tokens": 1024},
        )
    )
    assert chat.body["temperature"] == 0.2
    assert chat.body["top_p"] == 0.9
    assert chat.body["stop"] == ["END", "STOP"]
    for dropped in ("top_k", "metadata", "thinking", "stop_sequences"):
        assert dropped not in chat.body


def test_stream_asks_for_usage() -> None:
    chat = to_chat_request(body(stream=True))
    assert chat.stream is True
    assert chat.body["stream"] is True
    assert chat.body["stream_options"] == {"include_usage": True}


def test_images_mark_the_image_modality() -> None:
    content = [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": PNG},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
    ]
    chat = to_chat_request(body(messages=[{"role": "user", "content": content}]))
    assert chat.modalities == frozenset({"text", "image"})
    assert chat.body["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
    ]


def conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "two calls", "signature": "sig"},
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "get_weather",
                    "input": {"city": "Rome"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "25C"}],
                    "is_error": False,
                },
                {"type": "text", "text": "Which is warmer?"},
            ],
        },
    ]


def test_tool_use_and_results_become_tool_calls_and_tool_messages() -> None:
    chat = to_chat_request(body(messages=conversation(), tools=[WEATHER]))
    user, assistant, tool_1, tool_2, follow_up = chat.body["messages"]
    assert user == {"role": "user", "content": "Weather in Paris and Rome?"}
    assert assistant["content"] == "Checking."  # the echoed thinking block is dropped
    assert [c["id"] for c in assistant["tool_calls"]] == ["toolu_1", "toolu_2"]
    assert assistant["tool_calls"][0]["type"] == "function"
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'
    assert tool_1 == {"role": "tool", "tool_call_id": "toolu_1", "content": "18C"}
    assert tool_2 == {"role": "tool", "tool_call_id": "toolu_2", "content": "25C"}
    assert follow_up == {"role": "user", "content": [{"type": "text", "text": "Which is warmer?"}]}
    assert chat.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": WEATHER["input_schema"],
                "description": "Weather for a city",
            },
        }
    ]


def test_translation_is_the_inverse_of_the_anthropic_upstream_adapter() -> None:
    original = [*conversation()[:2], {"role": "user", "content": [conversation()[2]["content"][0]]}]
    chat = to_chat_request(body(messages=original, system="Be brief."))
    back = to_messages_request(chat.body, "claude", stream=False)
    assert back["system"] == "Be brief."
    assert back["max_tokens"] == 64
    assert back["messages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": "Weather in Paris and Rome?"}],
    }
    assert back["messages"][1]["content"] == [
        block for block in original[1]["content"] if block["type"] != "thinking"
    ]
    assert back["messages"][2]["content"] == [original[2]["content"][0]]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, {"tool_choice": "auto"}),
        ({"type": "any"}, {"tool_choice": "required"}),
        ({"type": "none"}, {"tool_choice": "none"}),
        (
            {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
            {
                "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
                "parallel_tool_calls": False,
            },
        ),
    ],
)
def test_tool_choice(choice: dict[str, Any], expected: dict[str, Any]) -> None:
    chat = to_chat_request(body(tools=[WEATHER], tool_choice=choice))
    assert {k: chat.body[k] for k in expected} == expected


def test_tool_choice_without_tools_is_dropped() -> None:
    chat = to_chat_request(body(tool_choice={"type": "auto"}))
    assert "tool_choice" not in chat.body


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"model": None}, "model"),
        ({"model": ""}, "model"),
        ({"max_tokens": None}, "max_tokens"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"messages": []}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": ["hi"]}, "messages.0"),
        ({"messages": [{"role": "system", "content": "x"}]}, "messages.0.role"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
        ({"messages": [{"role": "user", "content": [{"text": "x"}]}]}, "messages.0.content.0"),
        (
            {"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
            "messages.0.content.0.type",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]},
            "messages.0.content.0.source",
        ),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "image", "source": PNG}]}]},
            "messages.0.content.0",
        ),
        ({"stream": "yes"}, "stream"),
        ({"temperature": "hot"}, "temperature"),
        ({"stop_sequences": "END"}, "stop_sequences"),
        ({"system": 5}, "system"),
        ({"tools": [{"name": "f"}]}, "tools.0.input_schema"),
        ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools.0.type"),
        ({"tool_choice": {"type": "sometimes"}}, "tool_choice"),
    ],
)
def test_malformed_bodies_are_400_with_the_param(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(RequestError) as caught:
        to_chat_request(body(**fields))
    assert caught.value.status == 400
    assert caught.value.param == param
    assert caught.value.message.startswith(param + ":")
