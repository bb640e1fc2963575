"""The gateway's OpenAI SSE bytes -> Anthropic Messages stream events."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from edgeproxy.api.messages_stream import MessageEvents, message_stream


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    payload = {
        "id": "chatcmpl-9",
        "object": "chat.completion.chunk",
        "model": "mock-small",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


USAGE = (
    b'data: {"id":"chatcmpl-9","choices":[],'
    b'"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}\n\n'
)
DONE = b"data: [DONE]\n\n"
TEXT_STREAM = b"".join(
    [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hello "}),
        chunk({"content": "wörld"}),
        chunk({}, "stop"),
        USAGE,
        DONE,
    ]
)


def parse(raw: bytes) -> list[tuple[str, Any]]:
    """(event name, data) pairs, and ("comment", text) for comment lines."""
    out: list[tuple[str, Any]] = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        if block.startswith(":"):
            out.append(("comment", block))
            continue
        name_line, data_line = block.split("\n")
        name, data = name_line.removeprefix("event: "), json.loads(data_line.removeprefix("data: "))
        assert data["type"] == name  # the SDKs read either; they must agree
        out.append((name, data))
    return out


def translate(parts: list[bytes]) -> list[tuple[str, Any]]:
    events = MessageEvents()
    out = b"".join(b"".join(events.feed(p)) for p in parts) + b"".join(events.close())
    return parse(out)


def test_text_stream() -> None:
    events = translate([TEXT_STREAM])
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    assert start["id"] == "chatcmpl-9"
    assert start["model"] == "mock-small"
    assert start["role"] == "assistant"
    assert start["content"] == []
    assert events[1][1] == {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    assert [e[1]["delta"] for e in events[2:4]] == [
        {"type": "text_delta", "text": "Hello "},
        {"type": "text_delta", "text": "wörld"},
    ]
    assert events[5][1]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert events[5][1]["usage"] == {"input_tokens": 11, "output_tokens": 3}


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_split_anywhere_gives_the_same_events(size: int) -> None:
    # Every split point, including inside "\n\n" and inside the two-byte "ö".
    parts = [TEXT_STREAM[i : i + size] for i in range(0, len(TEXT_STREAM), size)]
    assert translate(parts) == translate([TEXT_STREAM])


def test_crlf_line_endings() -> None:
    crlf = TEXT_STREAM.replace(b"\n", b"\r\n")
    parts = [crlf[i : i + 5] for i in range(0, len(crlf), 5)]
    assert translate(parts) == translate([TEXT_STREAM])


def test_tool_calls_stream_as_tool_use_blocks() -> None:
    def call(index: int, **fields: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, **fields}]}

    events = translate(
        [
            chunk({"role": "assistant", "content": "Let me check."}),
            chunk(call(0, id="call_a", type="function", function={"name": "f", "arguments": ""})),
            chunk(call(0, function={"arguments": '{"ci'})),
            chunk(call(0, function={"arguments": 'ty": "Paris"}'})),
            chunk(call(1, id="call_b", type="function", function={"name": "g", "arguments": "{}"})),
            chunk({}, "tool_calls"),
            DONE,
        ]
    )
    summary = [(name, data.get("index")) for name, data in events]
    assert summary == [
        ("message_start", None),
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_delta", 1),
        ("content_block_stop", 1),
        ("content_block_start", 2),
        ("content_block_delta", 2),
        ("content_block_stop", 2),
        ("message_delta", None),
        ("message_stop", None),
    ]
    assert events[4][1]["content_block"] == {
        "type": "tool_use",
        "id": "call_a",
        "name": "f",
        "input": {},
    }
    partial = "".join(
        d["delta"]["partial_json"]
        for n, d in events
        if d.get("index") == 1 and n == "content_block_delta"
    )
    assert json.loads(partial) == {"city": "Paris"}
    assert events[8][1]["content_block"]["id"] == "call_b"
    assert events[11][1]["delta"]["stop_reason"] == "tool_use"


def test_in_band_error_ends_the_stream_as_an_anthropic_error() -> None:
    error = {
        "error": {
            "message": "Every deployment is cooling down.",
            "type": "server_error",
            "code": "model_overloaded",
        }
    }
    events = translate(
        [
            chunk({"role": "assistant", "content": "Hel"}),
            b"data: " + json.dumps(error).encode() + b"\n\n",
            chunk({"content": "ignored"}),
            DONE,
        ]
    )
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "error",
    ]
    assert events[-1][1] == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Every deployment is cooling down."},
    }


def test_keepalives_pass_through_and_an_error_may_come_first() -> None:
    error = {
        "error": {"message": "slow", "type": "rate_limit_error", "code": "rate_limit_exceeded"}
    }
    events = translate(
        [
            b": keepalive\n\n",
            b": keep",
            b"alive\n\n",
            b"data: " + json.dumps(error).encode() + b"\n\n",
        ]
    )
    assert events == [
        ("comment", ": keepalive"),
        ("comment", ": keepalive"),
        ("error", {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
    ]


def test_a_stream_cut_before_done_ends_with_an_error() -> None:
    events = translate([chunk({"role": "assistant", "content": "Hi"})])
    assert events[-1][0] == "error"
    assert events[-1][1]["error"]["type"] == "api_error"


def test_unreadable_data_is_an_error() -> None:
    events = translate([b"data: {not json\n\n", DONE])
    assert [name for name, _ in events] == ["error"]


def test_routing_metadata_rides_on_message_delta() -> None:
    routing = b'data: {"id":"chatcmpl-9","choices":[],"unified_routing":{"served_by":"a"}}\n\n'
    events = translate([chunk({"content": "x"}, "length"), routing, DONE])
    delta = dict(events)["message_delta"]
    assert delta["unified_routing"] == {"served_by": "a"}
    assert delta["delta"]["stop_reason"] == "max_tokens"


async def test_message_stream_closes_its_source_when_the_client_leaves() -> None:
    closed: list[bool] = []

    async def source() -> AsyncIterator[bytes]:
        try:
            yield chunk({"role": "assistant", "content": "a"})
            yield chunk({"content": "b"})
        finally:
            closed.append(True)

    stream = message_stream(source())
    first = await anext(stream)
    assert first.startswith(b"event: message_start")
    await stream.aclose()  # what Starlette does when the client disconnects
    assert closed == [True]
