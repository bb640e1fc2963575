"""UpstreamClient.open_stream against a real loopback mock: chunks, deadlines, cuts."""

from __future__ import annotations

import time
from typing import Any

import pytest

from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.call import StreamEvent
from edgeproxy.upstream.client import UpstreamClient
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.integration.upstream.helpers import chat, drain


def text(events: list[StreamEvent]) -> str:
    return "".join(
        e.chunk["choices"][0]["delta"].get("content") or ""
        for e in events
        if e.chunk and e.chunk["choices"]
    )


async def test_stream_ok_chunk_by_chunk(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_a.set_faults([{"chunk_delay_ms": 5}])
    events: list[StreamEvent] = []
    stream = await upstream_client.open_stream(chat(upstream_a, stream=True))
    assert stream.status == 200
    assert stream.rate_limits is not None
    await drain(stream, events)

    (seen,) = upstream_a.requests()
    assert seen["body"]["stream"] is True
    assert seen["headers"]["accept"] == "text/event-stream"
    first = events[0].chunk
    assert first is not None
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert first["model"] == "upstream-model-1"
    contents = [e.chunk["choices"][0]["delta"].get("content") for e in events[1:-2] if e.chunk]
    assert contents == ["Hello ", "from ", "a! ", "You ", "said: ", "ping"]
    assert events[-1].done
    tracker = stream.tracker
    assert (tracker.saw_done, tracker.finished, tracker.finish_reasons) == (True, True, {0: "stop"})


async def test_stream_usage_when_asked(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    body = {"messages": [], "stream_options": {"include_usage": True}}
    stream = await upstream_client.open_stream(chat(upstream_a, stream=True, body=body))
    await drain(stream, [])
    assert stream.usage is not None
    assert stream.usage.completion_tokens == 3  # "Hello from a!": no user text, 3 words


async def test_connection_is_reused_after_a_complete_stream(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    await drain(await upstream_client.open_stream(chat(upstream_a, stream=True)), [])
    await upstream_client.send(chat(upstream_a))
    assert [r["connection"] for r in upstream_a.requests()] == [1, 1]


@pytest.mark.parametrize(
    ("mock_fault", "status"), [({"status": 429, "retry_after": "3"}, 429), ({"status": 503}, 503)]
)
async def test_error_status_before_the_stream(
    upstream_a: MockUpstream,
    upstream_client: UpstreamClient,
    mock_fault: dict[str, Any],
    status: int,
) -> None:
    upstream_a.set_faults([mock_fault])
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.open_stream(chat(upstream_a, stream=True))
    assert (info.value.fault.kind, info.value.fault.status) == (FaultKind.HTTP, status)


@pytest.mark.parametrize(
    ("mock_fault", "kind"),
    [({"stall": True}, FaultKind.TIMEOUT), ({"reset": True}, FaultKind.RESET)],
)
async def test_no_headers(
    upstream_a: MockUpstream,
    upstream_client: UpstreamClient,
    mock_fault: dict[str, Any],
    kind: FaultKind,
) -> None:
    upstream_a.set_faults([mock_fault])
    started = time.perf_counter()
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.open_stream(chat(upstream_a, stream=True, response_timeout_s=0.3))
    assert info.value.fault.kind is kind
    assert time.perf_counter() - started < 8  # unbounded, it would stall (margin for load)


async def test_slow_first_token_is_not_a_response_timeout(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    # Headers come at once; the 1.5 s response deadline covers only them, not the 2 s wait
    # for the first token (headers may take a while on a loaded machine: hence 1.5 s).
    upstream_a.set_faults([{"first_token_delay_ms": 2000}])
    events: list[StreamEvent] = []
    call = chat(upstream_a, stream=True, response_timeout_s=1.5, idle_timeout_s=10.0)
    await drain(await upstream_client.open_stream(call), events)
    assert text(events) == "Hello from a! You said: ping"


async def test_idle_timeout_on_a_silent_first_token(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_a.set_faults([{"first_token_delay_ms": 20_000}])
    stream = await upstream_client.open_stream(chat(upstream_a, stream=True, idle_timeout_s=0.3))
    started = time.perf_counter()
    with pytest.raises(UpstreamFault) as info:
        await drain(stream, [])
    assert info.value.fault.kind is FaultKind.IDLE
    assert 0.25 < time.perf_counter() - started < 10  # not the 20 s stall (margin for load)


async def test_keepalive_comments_reset_the_idle_timer(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    # 2 s of silence in content, but a byte every 0.1 s: under a 1 s idle limit (a loaded
    # machine may delay one keepalive by a few hundred ms, never by the whole second).
    upstream_a.set_faults([{"first_token_delay_ms": 2000, "keepalive_ms": 100}])
    events: list[StreamEvent] = []
    call = chat(upstream_a, stream=True, idle_timeout_s=1.0)
    await drain(await upstream_client.open_stream(call), events)
    assert text(events) == "Hello from a! You said: ping"
    assert events[-1].done


async def test_stall_mid_stream_is_idle_after_the_chunks_sent(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_a.set_faults([{"stall_after_chunks": 3}])
    events: list[StreamEvent] = []
    stream = await upstream_client.open_stream(chat(upstream_a, stream=True, idle_timeout_s=1.0))
    with pytest.raises(UpstreamFault) as info:
        await drain(stream, events)
    assert info.value.fault.kind is FaultKind.IDLE
    assert text(events) == "Hello from "


async def test_idle_disabled_waits_past_silence(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_a.set_faults([{"first_token_delay_ms": 2000}])
    events: list[StreamEvent] = []
    call = chat(upstream_a, stream=True, idle_timeout_s=None, response_timeout_s=1.5)
    await drain(await upstream_client.open_stream(call), events)
    assert events[-1].done


async def test_cut_stream_is_truncated(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_a.set_faults([{"cut_after_chunks": 2}])
    events: list[StreamEvent] = []
    stream = await upstream_client.open_stream(chat(upstream_a, stream=True))
    with pytest.raises(UpstreamFault) as info:
        await drain(stream, events)
    assert info.value.fault.kind is FaultKind.TRUNCATED
    assert len(events) == 2


async def test_malformed_chunk(upstream_a: MockUpstream, upstream_client: UpstreamClient) -> None:
    upstream_a.set_faults([{"malformed_after_chunks": 1}])
    events: list[StreamEvent] = []
    stream = await upstream_client.open_stream(chat(upstream_a, stream=True))
    with pytest.raises(UpstreamFault) as info:
        await drain(stream, events)
    assert info.value.fault.kind is FaultKind.MALFORMED
    assert len(events) == 1


async def test_without_done_but_finished_is_complete(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_a.set_faults([{"no_done": True}])
    events: list[StreamEvent] = []
    stream = await upstream_client.open_stream(chat(upstream_a, stream=True))
    await drain(stream, events)
    assert not any(e.done for e in events)
    assert (stream.tracker.saw_done, stream.tracker.finished, stream.complete) == (
        False,
        True,
        True,
    )


async def test_done_without_finish_reason_is_complete(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_a.set_faults([{"finish_reason": None}])
    events: list[StreamEvent] = []
    stream = await upstream_client.open_stream(chat(upstream_a, stream=True))
    await drain(stream, events)
    assert events[-1].done
    tracker = stream.tracker
    assert (tracker.saw_done, tracker.finished, tracker.finish_reasons) == (True, False, {})


async def test_neither_done_nor_finish_reason_is_truncated(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_a.set_faults([{"finish_reason": None, "no_done": True}])
    stream = await upstream_client.open_stream(chat(upstream_a, stream=True))
    with pytest.raises(UpstreamFault) as info:
        await drain(stream, [])
    assert info.value.fault.kind is FaultKind.TRUNCATED


async def test_empty_answer_is_an_answer(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_a.set_faults([{"content": ""}])
    events: list[StreamEvent] = []
    stream = await upstream_client.open_stream(chat(upstream_a, stream=True))
    await drain(stream, events)
    assert text(events) == ""
    assert stream.complete
