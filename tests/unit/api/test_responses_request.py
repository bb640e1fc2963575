"""Responses API bodies -> chat bodies, or the parameter that needs a native deployment."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.api.surfaces.responses_request import to_chat_request
from edgeproxy.errors import RequestError

TOOL = {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}


def chat(**body: Any) -> dict[str, Any]:
    parsed = to_chat_request({"model": "m", **body})
    assert parsed.chat is not None
    assert parsed.chat.body is not None, parsed.chat
    return parsed.chat.body


def refused(**body: Any) -> str | None:
    parsed = to_chat_request({"model": "m", **body})
    assert parsed.chat is not None
    assert parsed.chat.body is None
    assert parsed.body == {"model": "m", **body}  # kept as sent, for native deployments
    return parsed.chat.param


def test_a_conversation_with_a_function_call_round_trip() -> None:
    body = chat(
        instructions="Be brief.",
        input=[
            {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Let me see."}],
            },
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'},
            {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "one"},
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": [{"type": "input_text", "text": "two"}],
            },
        ],
        tools=[TOOL],
        tool_choice={"type": "function", "name": "f"},
        parallel_tool_calls=False,
        max_output_tokens=50,
        stream=True,
    )
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {
            "role": "assistant",
            "content": "Let me see.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a": 1}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
    ]
    function = {"name": "f", "parameters": {"type": "object"}, "strict": True}
    assert body["tools"] == [{"type": "function", "function": function}]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert body["parallel_tool_calls"] is False
    assert body["max_completion_tokens"] == 50
    assert body["stream"] is True
    assert "stream_options" not in body  # the gateway asks for usage per deployment


def test_images_formats_and_ignored_fields() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAA"}
    parsed = to_chat_request(
        {
            "model": "m",
            "input": [{"role": "user", "content": [image]}],
            "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}},
            "metadata": {"k": "v"},
            "store": False,
            "include": [],
            "truncation": "disabled",
            "previous_response_id": None,
        }
    )
    assert parsed.modalities == frozenset({"text", "image"})
    assert parsed.chat is not None
    body = parsed.chat.body
    assert body is not None
    assert body["messages"][0]["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}}
    ]
    schema = {"name": "x", "schema": {"type": "object"}}
    assert body["response_format"] == {"type": "json_schema", "json_schema": schema}
    assert set(body) == {"model", "messages", "response_format"}


def test_what_has_no_chat_equivalent_names_its_parameter() -> None:
    assert refused(input="x", previous_response_id="r") == "previous_response_id"
    assert refused(input="x", conversation="conv_1") == "conversation"
    assert refused(input="x", store=True) == "store"
    assert refused(input="x", background=True) == "background"
    assert refused(input="x", reasoning={"effort": "high"}) == "reasoning"
    assert refused(input="x", truncation="auto") == "truncation"
    assert refused(input="x", some_new_field=1) == "some_new_field"
    assert refused(input="x", tools=[TOOL, {"type": "file_search"}]) == "tools[1].type"
    assert refused(input="x", tools=[TOOL], tool_choice={"type": "web_search"}) == "tool_choice"
    assert refused(input="x", text={"verbosity": "low"}) == "text.verbosity"
    assert refused(input=[{"type": "reasoning", "summary": []}]) == "input[0].type"
    file_part = {"type": "input_file", "file_id": "f"}
    assert refused(input=[{"role": "user", "content": [file_part]}]) == "input[0].content[0].type"
    by_id = {"type": "input_image", "file_id": "f"}
    assert refused(input=[{"role": "user", "content": [by_id]}]) == "input[0].content[0].file_id"
    assert refused(previous_response_id="r") == "previous_response_id"  # no input needed then


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x", "model": 5}, "model"),
        ({}, "input"),
        ({"input": {"role": "user"}}, "input"),
        ({"input": ["x"]}, "input[0]"),
        ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
        ({"input": [{"role": "user", "content": 5}]}, "input[0].content"),
        ({"input": [{"type": "function_call", "name": "f"}]}, "input[0]"),
        (
            {"input": [{"type": "function_call_output", "call_id": "c", "output": 1}]},
            "input[0].output",
        ),
        ({"input": "x", "instructions": ["a"]}, "instructions"),
        ({"input": "x", "max_output_tokens": "9"}, "max_output_tokens"),
        ({"input": "x", "temperature": "hot"}, "temperature"),
        ({"input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
        ({"input": "x", "text": {"format": {"type": "yaml"}}}, "text.format.type"),
        ({"input": "x", "stream": "yes"}, "stream"),
    ],
)
def test_malformed_bodies_are_400s_naming_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(RequestError) as caught:
        to_chat_request({"model": "m", **body})
    assert caught.value.param == param
