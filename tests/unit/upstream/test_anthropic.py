"""OpenAI chat <-> Anthropic Messages translation: request, answer, stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.config.policies import Operation
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.anthropic import (
    AnthropicAdapter,
    to_chat_completion,
    to_messages_request,
)
from edgeproxy.upstream.anthropic_stream import AnthropicChunks
from edgeproxy.upstream.call import DONE, UpstreamCall
from edgeproxy.upstream.sse import ServerSentEvent

DEPLOYMENT = Deployment(
    id="claude",
    model="smart",
    provider=ProviderKind.ANTHROPIC,
    base_url="https://api.anthropic.com/v1",
    upstream_model="claude-sonnet-4",
)


def test_prepare_sets_path_headers_and_model() -> None:
    call = UpstreamCall(
        DEPLOYMENT, Operation.CHAT, {"model": "smart", "messages": []}, credential="sk-ant-x"
    )
    prepared = AnthropicAdapter().prepare(call)
    assert prepared.path == "/messages"
    assert prepared.headers["x-api-key"] == "sk-ant-x"
    assert prepared.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in prepared.headers
    assert prepared.body["model"] == "claude-sonnet-4"


def test_embeddings_are_incompatible() -> None:
    call = UpstreamCall(DEPLOYMENT, Operation.EMBEDDINGS, {"input": "x"})
    with pytest.raises(UpstreamFault) as info:
        AnthropicAdapter().prepare(call)
    assert info.value.fault.kind is FaultKind.INCOMPATIBLE


def test_request_translation() -> None:
    body = {
        "model": "smart",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": [{"type": "text", "text": "Use metric."}]},
            {"role": "user", "content": "Weather in Oslo and Rome?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Rome"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "3C"},
            {"role": "tool", "tool_call_id": "call_2", "content": "18C"},
        ],
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": "END",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Current weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ],
        "tool_choice": "required",
        "presence_penalty": 0.5,
        "user": "u-42",
    }
    out = to_messages_request(body, "claude-sonnet-4", stream=True)
    assert out["model"] == "claude-sonnet-4"
    assert out["system"] == "Be brief.\n\nUse metric."
    assert out["max_tokens"] == 4096
    assert (out["temperature"], out["top_p"]) == (0.2, 0.9)
    assert out["stop_sequences"] == ["END"]
    assert out["tool_choice"] == {"type": "any"}
    assert out["tools"] == [
        {
            "name": "weather",
            "description": "Current weather",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    assert out["metadata"] == {"user_id": "u-42"}
    assert out["stream"] is True
    assert "presence_penalty" not in out
    assert out["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo and Rome?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "call_2", "name": "weather", "input": {"city": "Rome"}},
            ],
        },
        {  # consecutive tool results merge into one user turn
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "3C"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "18C"},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ({"type": "function", "function": {"name": "f"}}, {"type": "tool", "name": "f"}),
    ],
)
def test_tool_choice(choice: Any, expected: dict[str, Any]) -> None:
    out = to_messages_request({"messages": [], "tool_choice": choice}, "m", stream=False)
    assert out["tool_choice"] == expected
    assert "stream" not in out


def test_max_tokens_and_stop_list() -> None:
    out = to_messages_request(
        {"messages": [], "max_completion_tokens": 100, "max_tokens": 5, "stop": ["a", "b"]},
        "m",
        stream=False,
    )
    assert out["max_tokens"] == 100
    assert out["stop_sequences"] == ["a", "b"]


def test_image_parts() -> None:
    content = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
    ]
    out = to_messages_request({"messages": [{"role": "user", "content": content}]}, "m", False)
    assert out["messages"][0]["content"][1:] == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
    ]


@pytest.mark.parametrize(
    ("body", "param", "named"),
    [
        (
            {"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            "messages",
            "'input_audio'",
        ),
        ({"messages": [], "n": 2}, "n", "n > 1"),
    ],
)
def test_unservable_requests_are_incompatible(body: dict[str, Any], param: str, named: str) -> None:
    # The adapter's last guard reads the declaration routing filters on (CARRIAGE).
    with pytest.raises(UpstreamFault) as info:
        AnthropicAdapter().prepare(UpstreamCall(DEPLOYMENT, Operation.CHAT, body))
    fault = info.value.fault
    assert (fault.kind, fault.param) == (FaultKind.INCOMPATIBLE, param)
    assert named in fault.message
    assert "anthropic deployments" in fault.message


def test_answer_translation() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [
            {"type": "text", "text": "Checking. "},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 12, "output_tokens": 30},
    }
    out = to_chat_completion(message, created=123)
    assert out["object"] == "chat.completion"
    assert (out["id"], out["created"], out["model"]) == ("msg_1", 123, "claude-sonnet-4-20250514")
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Checking. "
    call = choice["message"]["tool_calls"][0]
    assert (call["id"], call["function"]["name"]) == ("toolu_1", "weather")
    assert json.loads(call["function"]["arguments"]) == {"city": "Oslo"}
    assert out["usage"] == {"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42}


@pytest.mark.parametrize(
    ("stop_reason", "finish_reason"),
    [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("stop_sequence", "stop"),
        (None, None),
    ],
)
def test_finish_reasons(stop_reason: str | None, finish_reason: str | None) -> None:
    message = {"content": [{"type": "text", "text": "x"}], "stop_reason": stop_reason}
    assert to_chat_completion(message, 0)["choices"][0]["finish_reason"] == finish_reason


def events(*payloads: dict[str, Any]) -> list[ServerSentEvent]:
    return [ServerSentEvent(data=json.dumps(p), event=str(p["type"])) for p in payloads]


def test_stream_translation() -> None:
    translator = AnthropicChunks(created=99, secrets=[])
    stream = events(
        {
            "type": "message_start",
            "message": {"id": "msg_9", "model": "claude-x", "usage": {"input_tokens": 10}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"a":'},
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 7},
        },
        {"type": "message_stop"},
    )
    out = [item for event in stream for item in translator.feed(event)]
    assert out[-1] is DONE
    chunks = [item.chunk for item in out[:-1]]
    assert all(c is not None and c["object"] == "chat.completion.chunk" for c in chunks)
    assert all(
        c is not None and (c["id"], c["model"], c["created"]) == ("msg_9", "claude-x", 99)
        for c in chunks
    )
    deltas = [c["choices"][0]["delta"] for c in chunks if c is not None]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"content": "Hi"},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "f", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]},
        {},
    ]
    assert chunks[-1] is not None
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert translator.usage is not None
    assert (translator.usage.prompt_tokens, translator.usage.completion_tokens) == (10, 7)


def test_stream_error_event_raises_with_status() -> None:
    translator = AnthropicChunks(created=0, secrets=[])
    (error,) = events({"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}})
    with pytest.raises(UpstreamFault) as info:
        translator.feed(error)
    assert (info.value.fault.kind, info.value.fault.status) == (FaultKind.HTTP, 529)


def test_stream_bad_json_is_malformed() -> None:
    with pytest.raises(UpstreamFault) as info:
        AnthropicChunks(0, []).feed(ServerSentEvent(data="{oops", event="content_block_delta"))
    assert info.value.fault.kind is FaultKind.MALFORMED


def usage_stream() -> list[ServerSentEvent]:
    return events(
        {
            "type": "message_start",
            "message": {"id": "msg_u", "model": "claude-x", "usage": {"input_tokens": 21}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 4},
        },
        {"type": "message_stop"},
    )


def test_stream_ends_with_the_usage_chunk_when_the_client_asked() -> None:
    translator = AnthropicChunks(created=5, secrets=[], include_usage=True)
    out = [item for event in usage_stream() for item in translator.feed(event)]
    assert out[-1] is DONE
    last = out[-2].chunk
    assert last is not None
    assert last["choices"] == []
    assert last["usage"] == {"prompt_tokens": 21, "completion_tokens": 4, "total_tokens": 25}
    assert (last["id"], last["model"], last["object"]) == (
        "msg_u",
        "claude-x",
        "chat.completion.chunk",
    )


def test_stream_has_no_usage_chunk_unless_asked() -> None:
    translator = AnthropicChunks(created=5, secrets=[])
    out = [item for event in usage_stream() for item in translator.feed(event)]
    assert all(item.chunk is None or item.chunk["choices"] for item in out)
