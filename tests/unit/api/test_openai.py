"""The OpenAI surface: request checks and the relay's typed events as OpenAI SSE."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.requests import Request

from edgeproxy.api.codec import request_id
from edgeproxy.api.surfaces.openai import CHAT, COMPLETIONS, EMBEDDINGS, closing_frames, openai_sse
from edgeproxy.errors import EdgeproxyError, ModelOverloaded, RequestError
from edgeproxy.service.stream.events import KEEPALIVE, Chunk, Closing, Failed, StreamItem
from edgeproxy.upstream.call import Usage

FIRST = {"id": "c-1", "object": "chat.completion.chunk", "created": 7, "model": "up-1"}


def chunk(delta: dict[str, Any], finish: str | None = None) -> Chunk:
    return Chunk({**FIRST, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


async def render(items: list[StreamItem]) -> list[bytes]:
    async def source() -> AsyncIterator[StreamItem]:
        for item in items:
            yield item

    return [data async for data in openai_sse(source())]


def data(frame: bytes) -> Any:
    assert frame.startswith(b"data: ")
    assert frame.endswith(b"\n\n")
    text = frame[6:-2].decode()
    return text if text == "[DONE]" else json.loads(text)


async def test_chunks_then_done() -> None:
    frames = await render([chunk({"content": "Hi"}), chunk({}, "stop"), Closing()])
    assert [data(f) for f in frames] == [
        chunk({"content": "Hi"}).data,
        chunk({}, "stop").data,
        "[DONE]",
    ]
    assert frames[0] == b'data: {"id":"c-1","object":"chat.completion.chunk","created":7,' + (
        b'"model":"up-1","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
    )


async def test_closing_states_inferred_reasons_and_routing_like_the_last_chunk() -> None:
    closing = Closing(finish_reasons={1: "stop", 0: "tool_calls"}, routing={"deployment": "a"})
    frames = await render([KEEPALIVE, chunk({"content": "Hi"}), closing])
    assert frames[0] == b": keepalive\n\n"
    inferred, routing, done = (data(f) for f in frames[2:])
    assert inferred == {
        **FIRST,
        "choices": [
            {"index": 0, "delta": {}, "finish_reason": "tool_calls"},
            {"index": 1, "delta": {}, "finish_reason": "stop"},
        ],
    }
    assert routing == {**FIRST, "choices": [], "unified_routing": {"deployment": "a"}}
    assert done == "[DONE]"


async def test_usage_rides_in_its_own_chunk_not_the_closing() -> None:
    frames = await render([chunk({"content": "Hi"}, "stop"), Closing(usage=Usage(3, 1))])
    assert len(frames) == 2


async def test_failed_is_the_errors_public_body() -> None:
    frames = await render([chunk({"content": "Hi"}), Failed(ModelOverloaded("busy"))])
    assert data(frames[-1]) == {
        "error": {
            "message": "busy",
            "type": "server_error",
            "param": None,
            "code": "model_overloaded",
        }
    }
    hidden = await render([Failed(EdgeproxyError("secret sk-1"))])
    assert b"secret" not in hidden[0]


async def test_the_source_is_closed_when_the_client_leaves() -> None:
    closed: list[bool] = []

    async def source() -> AsyncIterator[StreamItem]:
        try:
            yield chunk({"content": "a"})
            yield chunk({"content": "b"})
        finally:
            closed.append(True)

    stream = openai_sse(source())
    await anext(stream)
    await stream.aclose()
    assert closed == [True]


def test_embeddings_never_stream_and_chat_checks_messages() -> None:
    body = {"model": "e", "input": "hi", "stream": True}
    assert EMBEDDINGS.parse(body).stream is False
    with pytest.raises(RequestError):
        EMBEDDINGS.parse({**body, "stream": "yes"})
    parsed = CHAT.parse({"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert (parsed.model, parsed.stream, parsed.modalities) == ("m", False, frozenset({"text"}))
    with pytest.raises(RequestError):
        CHAT.parse({"model": "m"})


def test_a_content_part_that_is_not_an_object_is_a_400_naming_it() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "x"}, "bare"]}]
    with pytest.raises(RequestError) as caught:
        CHAT.parse({"model": "m", "messages": messages})
    assert caught.value.param == "messages[0].content[1]"


def test_a_request_keeps_one_id() -> None:
    given = Request({"type": "http", "headers": [(b"x-request-id", b"r-1")]})
    assert request_id(given) == "r-1"
    fresh = Request({"type": "http", "headers": []})
    assert request_id(fresh) == request_id(fresh)
    assert len(request_id(fresh)) == 32


async def test_a_failed_stream_carries_the_routing_trace_when_asked() -> None:
    routing = {"deployment": "a", "attempts": [{"deployment": "a", "error_kind": "truncated"}]}
    frames = await render([chunk({"content": "Hi"}), Failed(ModelOverloaded("busy"), routing)])
    last = data(frames[-1])
    assert last["error"]["code"] == "model_overloaded"
    assert last["unified_routing"] == routing


def test_a_completion_stream_closes_with_text_choices() -> None:
    last = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m"}
    frames = closing_frames(Closing(finish_reasons={0: "stop"}), last, text=True)
    first = json.loads(frames[0].removeprefix(b"data: "))
    assert first["choices"] == [{"index": 0, "text": "", "finish_reason": "stop"}]
    assert first["object"] == "text_completion"
    assert frames[-1] == b"data: [DONE]\n\n"


def test_completions_need_a_prompt() -> None:
    assert COMPLETIONS.parse({"model": "m", "prompt": ["a", "b"], "stream": True}).stream
    with pytest.raises(RequestError):
        COMPLETIONS.parse({"model": "m", "messages": [{"role": "user", "content": "x"}]})


def _usage_chunks(frames: list[bytes]) -> list[dict[str, Any]]:
    found = [json.loads(f[len(b"data: ") :]) for f in frames if f != b"data: [DONE]\n\n"]
    return [c for c in found if "usage" in c]


def test_an_owed_usage_chunk_is_the_counted_usage_and_says_when_it_is_an_estimate() -> None:
    last = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    estimate = Closing(counted=Usage(7, 5), estimated=True)
    [chunk] = _usage_chunks(closing_frames(estimate, last, usage=True))
    assert chunk["choices"] == []
    assert chunk["id"] == "c1"
    assert chunk["usage"] == {
        "prompt_tokens": 7,
        "completion_tokens": 5,
        "total_tokens": 12,
        "edgeproxy_estimated": True,
    }
    reported = Closing(usage=Usage(7, 5), counted=Usage(7, 5))
    [chunk] = _usage_chunks(closing_frames(reported, last, usage=True))
    assert "edgeproxy_estimated" not in chunk["usage"]
    assert _usage_chunks(closing_frames(estimate, last)) == []  # not asked for, or already sent
