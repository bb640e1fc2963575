"""The one stream driver: every surface ends the same way, only its frames differ."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from edgeproxy.api.stream import KEEPALIVE as KEEPALIVE_FRAME
from edgeproxy.api.stream import UNFINISHED
from edgeproxy.api.surfaces.messages_stream import message_stream
from edgeproxy.api.surfaces.openai import openai_sse
from edgeproxy.api.surfaces.responses_stream import response_stream
from edgeproxy.errors import RateLimited
from edgeproxy.routing.stream.completeness import responses_event
from edgeproxy.service.stream.events import KEEPALIVE, Chunk, Closing, Failed, StreamItem

Render = Callable[[AsyncIterator[StreamItem]], AsyncIterator[bytes]]
SURFACES: dict[str, Render] = {
    "openai": openai_sse,
    "anthropic": message_stream,
    "responses": lambda source: response_stream(source, 0.0),
}
HI = Chunk({"id": "c-1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}}]})


async def _render(render: Render, items: list[StreamItem], closed: list[bool]) -> bytes:
    async def source() -> AsyncIterator[StreamItem]:
        try:
            for item in items:
                yield item
        finally:
            closed.append(True)

    return b"".join([frame async for frame in render(source())])


def _payloads(body: bytes) -> list[Any]:
    out = []
    for block in body.decode().split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(json.loads(line[6:]))
    return out


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_source_that_stops_unfinished_ends_with_the_surfaces_error(surface: str) -> None:
    closed: list[bool] = []
    body = await _render(SURFACES[surface], [KEEPALIVE, HI], closed)
    assert closed == [True]
    assert KEEPALIVE_FRAME in body
    last = _payloads(body)[-1]
    error = last.get("error") or last.get("response", {}).get("error")
    assert error["message"] == UNFINISHED, last
    assert b"[DONE]" not in body


@pytest.mark.parametrize("surface", SURFACES)
async def test_nothing_is_rendered_after_the_end(surface: str) -> None:
    failed = Failed(RateLimited("slow down"))
    once = await _render(SURFACES[surface], [HI, failed], [])
    again = await _render(SURFACES[surface], [HI, failed, HI, Closing(), failed], [])
    assert again.count(b"Hi") == once.count(b"Hi")
    assert len(_payloads(again)) == len(_payloads(once))
    assert UNFINISHED.encode() not in again  # an ended stream owes no fallback


def test_one_check_tells_a_responses_event_from_a_chat_chunk() -> None:
    assert responses_event({"type": "response.output_text.delta", "delta": "x"}) == (
        "response.output_text.delta"
    )
    assert responses_event(HI.data) is None
    assert responses_event({"type": "x", "choices": []}) is None  # a chat chunk with a type
    assert responses_event({"type": 3}) is None
