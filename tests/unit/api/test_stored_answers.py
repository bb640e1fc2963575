"""Capture and replay of stored answers at the ASGI seam (no sockets)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from edgeproxy.api.stored.capture import Captured, Watched
from edgeproxy.api.stored.replay import events, replayed
from edgeproxy.errors import UpstreamError
from edgeproxy.service.stream.events import Chunk, Closing, Failed, StreamItem
from edgeproxy.state.answers import StoredAnswer

NOW = 1_700_000_000.0
SSE = b'data: {"id":"1","choices":[]}\n\ndata: {"id":"1","usage":{}}\n\ndata: [DONE]\n\n'


async def _send_through(response: Response) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    asked = 0

    async def receive() -> dict[str, Any]:
        nonlocal asked
        asked += 1
        if asked > 1:  # the client stays: starlette's disconnect listener waits
            await asyncio.Event().wait()
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    await response({"type": "http", "method": "POST", "headers": []}, receive, send)
    return sent


def _body(sent: list[dict[str, Any]]) -> bytes:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


class Kept:
    def __init__(self) -> None:
        self.answers: list[StoredAnswer] = []

    async def __call__(self, answer: StoredAnswer) -> None:
        self.answers.append(answer)


def _captured(inner: Response, kept: Kept, **kwargs: Any) -> Captured:
    return Captured(inner, kept, now=lambda: NOW, limit=kwargs.pop("limit", 10_000), **kwargs)


async def test_a_json_answer_is_kept_with_its_describing_headers_only() -> None:
    kept = Kept()
    inner = JSONResponse(
        {"id": "x", "choices": []},
        headers={"x-request-id": "r1", "x-edgeproxy-deployment": "d1", "x-ratelimit-x": "9"},
    )

    sent = await _send_through(_captured(inner, kept, stream=False, meta=lambda: {"c": 1}))

    [answer] = kept.answers
    assert answer.body == _body(sent) == b'{"id":"x","choices":[]}'
    assert answer.status == 200
    assert answer.content_type == "application/json"
    assert answer.headers == (("x-edgeproxy-deployment", "d1"),)
    assert answer.stored_at == NOW
    assert answer.meta == {"c": 1}
    assert not answer.stream


async def test_an_error_answer_is_never_kept() -> None:
    kept = Kept()
    await _send_through(_captured(JSONResponse({"error": {}}, 500), kept, stream=False))
    assert kept.answers == []


async def test_an_answer_past_the_limit_is_not_kept_but_sent_whole() -> None:
    kept = Kept()
    inner = Response(b"x" * 200, media_type="application/json")

    sent = await _send_through(_captured(inner, kept, stream=False, limit=100))

    assert _body(sent) == b"x" * 200
    assert kept.answers == []


async def test_an_answer_that_carries_a_credential_is_not_kept() -> None:
    kept = Kept()
    inner = JSONResponse({"text": "your key is sk-ant-REALLOOKINGKEY0123456789"})
    await _send_through(_captured(inner, kept, stream=False))
    assert kept.answers == []


async def _relay(items: list[StreamItem]) -> AsyncIterator[StreamItem]:
    for item in items:
        yield item


async def _sse(events_: Watched) -> AsyncIterator[bytes]:
    async for item in events_:
        if isinstance(item, Chunk):
            yield b"data: " + repr(item.data).encode() + b"\n\n"
        elif isinstance(item, Failed):
            yield b"event: error\ndata: {}\n\n"
    yield b"data: [DONE]\n\n"


async def test_a_complete_stream_is_kept_as_the_bytes_sent() -> None:
    kept = Kept()
    watched = Watched(_relay([Chunk({"a": 1}), Closing()]))
    inner = StreamingResponse(_sse(watched), media_type="text/event-stream")

    sent = await _send_through(
        _captured(inner, kept, stream=True, complete=lambda: watched.closing is not None)
    )

    [answer] = kept.answers
    assert answer.body == _body(sent)
    assert answer.stream
    assert answer.content_type.startswith("text/event-stream")


async def test_a_stream_that_failed_in_band_is_not_kept() -> None:
    kept = Kept()
    failed = Failed(UpstreamError("cut", status=502, type="api_error"))
    watched = Watched(_relay([Chunk({"a": 1}), failed]))
    inner = StreamingResponse(_sse(watched), media_type="text/event-stream")

    await _send_through(
        _captured(inner, kept, stream=True, complete=lambda: watched.closing is not None)
    )

    assert kept.answers == []


def test_events_split_after_each_blank_line_and_join_back() -> None:
    parts = events(SSE + b"data: tail")
    assert parts[0] == b'data: {"id":"1","choices":[]}\n\n'
    assert parts[-1] == b"data: tail"
    assert b"".join(parts) == SSE + b"data: tail"


async def test_a_stored_stream_replays_event_by_event_with_this_requests_headers() -> None:
    answer = StoredAnswer(200, "text/event-stream; charset=utf-8", SSE, NOW, stream=True)

    sent = await _send_through(replayed(answer, {"x-edgeproxy-cache": "hit", "age": "3"}))

    bodies = [m["body"] for m in sent if m["type"] == "http.response.body" and m["body"]]
    assert bodies == events(SSE)
    start = dict((k.decode(), v.decode()) for k, v in sent[0]["headers"])
    assert start["x-edgeproxy-cache"] == "hit"
    assert start["age"] == "3"
    assert start["content-type"] == "text/event-stream; charset=utf-8"


async def test_a_stored_json_answer_replays_its_bytes() -> None:
    answer = StoredAnswer(
        200, "application/json", b'{"a":1}', NOW, (("x-edgeproxy-deployment", "d"),)
    )

    sent = await _send_through(replayed(answer, {"x-request-id": "new"}))

    assert _body(sent) == b'{"a":1}'
    start = dict((k.decode(), v.decode()) for k, v in sent[0]["headers"])
    assert start["x-request-id"] == "new"
    assert start["x-edgeproxy-deployment"] == "d"
    assert start["content-type"] == "application/json"
