"""UpstreamStream completeness and ordering, over httpx's MockTransport (no sockets)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.config.policies import Operation
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.routing.stream.completeness import Complete
from edgeproxy.upstream.call import StreamEvent, UpstreamCall, Usage
from edgeproxy.upstream.client import UpstreamClient
from edgeproxy.upstream.stream import UpstreamStream

DEPLOYMENT = Deployment(
    id="oa",
    model="gpt-4o",
    provider=ProviderKind.OPENAI,
    base_url="https://upstream.test/v1",
    upstream_model="gpt-4o",
)
CALL = UpstreamCall(DEPLOYMENT, Operation.CHAT, {"messages": []}, stream=True, response_timeout_s=5)


class Body(httpx.AsyncByteStream):
    """Yields ``parts``, then raises ``error`` (a dropped connection) if given."""

    def __init__(self, parts: list[bytes], error: Exception | None = None) -> None:
        self.parts = parts
        self.error = error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            yield part
        if self.error is not None:
            raise self.error


def chunk(content: str | None = None, finish: str | None = None, index: int = 0) -> bytes:
    delta = {} if content is None else {"content": content}
    payload = {"choices": [{"index": index, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(payload)}\n\n".encode()


async def read(parts: list[bytes], error: Exception | None = None) -> list[StreamEvent]:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Body(parts, error)
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        stream = await UpstreamClient(http).open_stream(CALL)
        got: list[StreamEvent] = []
        try:
            async for event in stream:
                got.append(event)
        except UpstreamFault as exc:
            exc.add_note(f"after {len(got)} events")
            raise
        finally:
            await stream.aclose()
        return got


async def _open(parts: list[bytes], http: httpx.AsyncClient) -> UpstreamStream:
    return await UpstreamClient(http).open_stream(CALL)


def _transport(parts: list[bytes]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Body(parts)
        )

    return httpx.MockTransport(handler)


async def test_a_malformed_event_after_the_commit_is_skipped_as_an_anomaly() -> None:
    parts = [chunk("a") + chunk("b") + b"data: {bad\n\n" + chunk("c") + chunk(finish="stop")]
    async with httpx.AsyncClient(transport=_transport(parts)) as http:
        stream = await _open(parts, http)
        got = [event.chunk async for event in stream]
        contents = [c["choices"][0]["delta"].get("content") for c in got if c]
        assert contents == ["a", "b", "c", None]
        outcome = stream.tracker.outcome()
        assert isinstance(outcome, Complete)
        assert "malformed_event" in outcome.anomalies


async def test_a_malformed_event_before_the_commit_fails_the_attempt() -> None:
    parts = [chunk() + b"data: {bad\n\n" + chunk("c")]
    async with httpx.AsyncClient(transport=_transport(parts)) as http:
        stream = await _open(parts, http)
        first = await anext(stream)
        assert first.chunk is not None
        with pytest.raises(UpstreamFault) as info:
            await anext(stream)
        assert info.value.fault.kind is FaultKind.MALFORMED


async def test_eof_with_neither_marker_is_truncated() -> None:
    with pytest.raises(UpstreamFault) as info:
        await read([chunk("a")])
    assert info.value.fault.kind is FaultKind.TRUNCATED


async def test_drop_after_every_choice_finished_is_complete() -> None:
    events = await read(
        [chunk("a"), chunk(finish="stop")], httpx.RemoteProtocolError("incomplete chunked read")
    )
    assert len(events) == 2


async def test_silence_after_every_choice_finished_is_complete() -> None:
    events = await read([chunk("a"), chunk(finish="stop")], TimeoutError())
    assert len(events) == 2


async def test_drop_mid_answer_is_truncated() -> None:
    with pytest.raises(UpstreamFault) as info:
        await read([chunk("a")], httpx.ReadError("connection reset"))
    assert info.value.fault.kind is FaultKind.TRUNCATED


async def test_one_unfinished_choice_of_two_is_truncated() -> None:
    with pytest.raises(UpstreamFault) as info:
        await read([chunk("a", index=0), chunk("b", index=1), chunk(finish="stop", index=0)])
    assert info.value.fault.kind is FaultKind.TRUNCATED


async def test_nothing_after_the_end_marker_is_read() -> None:
    events = await read([chunk("a") + b"data: [DONE]\n\n" + b"data: {garbage\n\n"])
    assert [e.done for e in events] == [False, True]


async def test_stream_state() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        parts = [chunk("a"), chunk(finish="length"), b"data: [DONE]\n\n"]
        headers = {"content-type": "text/event-stream", "x-ratelimit-remaining-requests": "5"}
        return httpx.Response(200, headers=headers, stream=Body(parts))

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        stream = await UpstreamClient(http).open_stream(CALL)
        async with stream:
            assert stream.status == 200
            assert stream.rate_limits is not None
            assert stream.rate_limits.remaining_requests == 5
            assert not stream.complete
            _ = [event async for event in stream]
            tracker = stream.tracker
            assert (tracker.saw_done, tracker.finished, stream.complete) == (True, True, True)
            assert tracker.finish_reasons == {0: "length"}
            assert not tracker.tool_calls


async def test_json_answer_to_a_stream_request_is_malformed() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": []})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        with pytest.raises(UpstreamFault) as info:
            await UpstreamClient(http).open_stream(CALL)
    assert info.value.fault.kind is FaultKind.MALFORMED


async def test_stream_usage_is_the_adapters_reading() -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    final = f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode()

    def handler(request: httpx.Request) -> httpx.Response:
        parts = [chunk("Hi"), chunk(finish="stop"), final, b"data: [DONE]\n\n"]
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Body(parts)
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        stream = await UpstreamClient(http).open_stream(CALL)
        async with stream:
            _ = [event async for event in stream]
            assert stream.usage == Usage(12, 3)
            assert stream.usage.total_tokens == 15
