"""The relay's typed stream events -> Anthropic Messages stream events."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from edgeproxy.api.surfaces.messages_stream import MessageEvents, message_stream
from edgeproxy.errors import EdgeproxyError, ModelOverloaded, RateLimited
from edgeproxy.service.stream.events import KEEPALIVE, Chunk, Closing, Failed, StreamItem
from edgeproxy.upstream.call import Usage


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> Chunk:
    payload = {
        "id": "chatcmpl-9",
        "object": "chat.completion.chunk",
        "model": "mock-small",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return Chunk(payload)


USAGE = Chunk(
    {
        "id": "chatcmpl-9",
        "choices": [],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }
)
CLOSING = Closing()
TEXT_STREAM: list[StreamItem] = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Hello "}),
    chunk({"content": "wörld"}),
    chunk({}, "stop"),
    USAGE,
    Closing(usage=Usage(11, 3)),
]


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


def translate(items: list[StreamItem]) -> list[tuple[str, Any]]:
    events = MessageEvents()
    out = b"".join(b"".join(events.feed(item)) for item in items) + b"".join(events.close())
    return parse(out)


def test_text_stream() -> None:
    events = translate(TEXT_STREAM)
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
            CLOSING,
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
    events = translate(
        [
            chunk({"role": "assistant", "content": "Hel"}),
            Failed(ModelOverloaded("Every deployment is cooling down.")),
            chunk({"content": "ignored"}),
            CLOSING,
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
    events = translate([KEEPALIVE, KEEPALIVE, Failed(RateLimited("slow"))])
    assert events == [
        ("comment", ": keepalive"),
        ("comment", ": keepalive"),
        ("error", {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
    ]


def test_a_stream_cut_before_done_ends_with_an_error() -> None:
    events = translate([chunk({"role": "assistant", "content": "Hi"})])
    assert events[-1][0] == "error"
    assert events[-1][1]["error"]["type"] == "api_error"


def test_internal_errors_in_band_never_show_their_text() -> None:
    events = translate([chunk({"content": "a"}), Failed(EdgeproxyError("secret sk-123"))])
    name, data = events[-1]
    assert (name, data["error"]["type"]) == ("error", "api_error")
    assert "secret" not in data["error"]["message"]


def test_routing_metadata_rides_on_message_delta() -> None:
    routing = Closing(routing={"served_by": "a"})
    events = translate([chunk({"content": "x"}, "length"), routing])
    delta = dict(events)["message_delta"]
    assert delta["unified_routing"] == {"served_by": "a"}
    assert delta["delta"]["stop_reason"] == "max_tokens"
    assert delta["usage"] == {"input_tokens": 0, "output_tokens": 0}  # none reported


def test_an_inferred_finish_reason_fills_in_only_a_missing_one() -> None:
    call = {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}
    inferred = Closing(finish_reasons={0: "tool_calls"})
    assert dict(translate([chunk(call), inferred]))["message_delta"]["delta"]["stop_reason"] == (
        "tool_use"
    )
    stated = translate([chunk({"content": "x"}, "length"), Closing(finish_reasons={1: "stop"})])
    assert dict(stated)["message_delta"]["delta"]["stop_reason"] == "max_tokens"
    assert [name for name, _ in translate([Closing()])] == [
        "message_start",
        "message_delta",
        "message_stop",
    ]


async def test_message_stream_closes_its_source_when_the_client_leaves() -> None:
    closed: list[bool] = []

    async def source() -> AsyncIterator[StreamItem]:
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


def test_an_in_band_error_carries_the_routing_trace_when_asked() -> None:
    routing = {"deployment": "a", "attempts": []}
    events = translate([chunk({"content": "a"}), Failed(RateLimited("slow"), routing)])
    kind, payload = events[-1]
    assert kind == "error"
    assert payload["unified_routing"] == routing
    assert payload["error"]["type"] == "rate_limit_error"


def test_message_start_reports_the_upstreams_input_tokens_else_the_estimate() -> None:
    reported = [Chunk(chunk({"role": "assistant", "content": ""}).data, reported=Usage(21, 0))]
    start = translate_with(reported + TEXT_STREAM[1:], estimate=9)[0][1]
    assert start["message"]["usage"] == {"input_tokens": 21, "output_tokens": 0}
    start = translate_with(TEXT_STREAM, estimate=9)[0][1]
    # The estimate says it is one; the upstream's own count above carries no mark.
    assert start["message"]["usage"] == {
        "input_tokens": 9,
        "output_tokens": 0,
        "edgeproxy_estimated": True,
    }
    assert translate(TEXT_STREAM)[0][1]["message"]["usage"]["input_tokens"] == 0  # neither
    # The end reports what the upstream counted, whatever message_start said.
    end = next(data for name, data in translate_with(TEXT_STREAM, 9) if name == "message_delta")
    assert end["usage"] == {"input_tokens": 11, "output_tokens": 3}


def translate_with(items: list[StreamItem], estimate: int) -> list[tuple[str, Any]]:
    events = MessageEvents(estimate)
    out = b"".join(b"".join(events.feed(item)) for item in items) + b"".join(events.close())
    return parse(out)
