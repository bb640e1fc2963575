"""The relay's bounded read-ahead (``service/stream/readahead.py``) on a virtual clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.service.stream.readahead import ReadAhead
from edgeproxy.upstream.call import StreamEvent


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def chunk(n: int) -> StreamEvent:
    return StreamEvent(chunk={"n": n}, done=False)


class Source:
    """An upstream stream of ``count`` chunks and the end marker; records how far it got."""

    def __init__(self, count: int, fail: bool = False) -> None:
        self.count = count
        self.fail = fail
        self.yielded = 0
        self.finished = asyncio.Event()
        self.cancelled = False

    async def events(self) -> AsyncIterator[StreamEvent]:
        try:
            for n in range(self.count):
                self.yielded += 1
                yield chunk(n)
            if self.fail:
                self.finished.set()
                raise UpstreamFault(Fault(FaultKind.TRUNCATED, "cut"))
            self.finished.set()
            yield StreamEvent(chunk=None, done=True)
            await asyncio.Event().wait()  # an upstream that never closes after [DONE]
        except (asyncio.CancelledError, GeneratorExit):
            self.cancelled = True
            raise


async def test_latency_ends_at_the_upstreams_last_event_not_the_clients_read() -> None:
    clock, source = Clock(), Source(5)
    reader = ReadAhead(source.events(), clock)
    first = await anext(reader)
    assert first.chunk == {"n": 0}
    await asyncio.wait_for(source.finished.wait(), 5)  # the client has read one event
    await asyncio.sleep(0)
    clock.now = 70.0  # a slow client takes a minute over the rest
    rest = [event async for event in reader]
    assert [e.chunk for e in rest[:-1]] == [{"n": n} for n in range(1, 5)]
    assert rest[-1].done
    assert reader.finished_at == 10.0
    await reader.aclose()


async def test_a_failure_comes_after_the_events_read_before_it() -> None:
    reader = ReadAhead(Source(2, fail=True).events(), Clock())
    seen = [await anext(reader), await anext(reader)]
    assert [e.chunk for e in seen] == [{"n": 0}, {"n": 1}]
    with pytest.raises(UpstreamFault):
        await anext(reader)
    with pytest.raises(StopAsyncIteration):
        await anext(reader)
    await reader.aclose()


async def test_the_read_ahead_is_bounded() -> None:
    source = Source(100)
    reader = ReadAhead(source.events(), Clock(), limit=3)
    await anext(reader)
    for _ in range(20):
        await asyncio.sleep(0)
    # One handed out, three queued, one waiting for room: never the whole stream.
    assert source.yielded <= 5
    assert reader.finished_at is None
    await reader.aclose()
    stopped_at = source.yielded
    for _ in range(20):
        await asyncio.sleep(0)
    assert source.yielded == stopped_at  # closing stopped the reader


async def test_reading_stops_at_the_end_marker_of_a_stream_that_never_closes() -> None:
    source = Source(1)
    reader = ReadAhead(source.events(), Clock())
    assert (await anext(reader)).chunk == {"n": 0}
    assert (await anext(reader)).done
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(reader), 5)  # not waiting for the upstream to close
    await reader.aclose()
    assert not source.cancelled  # never read past the end marker
