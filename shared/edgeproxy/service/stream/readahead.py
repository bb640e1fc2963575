"""A bounded read-ahead between an upstream stream and the client.

The relay hands events to the client as fast as the client reads them; a
slow reader would otherwise pace the upstream read, hold the upstream
connection open, and make the stream's measured latency the client's
rather than the deployment's. ``ReadAhead`` reads the upstream in a task of
its own into a queue of at most ``limit`` events, and notes the time the
upstream's last event arrived (``finished_at``): that is the stream's
latency end, whatever the client does. Failures keep their place: events
read before a failure are handed out first, then the failure is raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from edgeproxy.upstream.call import StreamEvent

# ~1024 events of a few hundred bytes each: a whole typical answer, a bounded worst case
# (each event is itself capped by gateway.upstream_limits.event_bytes).
READ_AHEAD_EVENTS = 1024


class _End:
    """The upstream stream ended; ``error`` is how (None: normally)."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


class ReadAhead:
    """Iterate for the upstream's events; ``aclose()`` stops the reader."""

    def __init__(
        self,
        source: AsyncIterator[StreamEvent],
        clock: Callable[[], float],
        limit: int = READ_AHEAD_EVENTS,
    ) -> None:
        self.finished_at: float | None = None  # when the upstream's last event was read
        self._source = source
        self._clock = clock
        self._queue: asyncio.Queue[StreamEvent | _End] = asyncio.Queue(maxsize=limit)
        self._task: asyncio.Task[None] | None = None
        self._done = False

    def __aiter__(self) -> ReadAhead:
        return self

    async def __anext__(self) -> StreamEvent:
        if self._done:
            raise StopAsyncIteration
        if self._task is None:
            self._task = asyncio.ensure_future(self._read())
        item = await self._queue.get()
        if isinstance(item, _End):
            self._done = True
            if item.error is not None:
                raise item.error
            raise StopAsyncIteration
        return item

    async def _read(self) -> None:
        try:
            async for event in self._source:
                if event.done:
                    self.finished_at = self._clock()
                await self._queue.put(event)
                if event.done:
                    break
            if self.finished_at is None:
                self.finished_at = self._clock()
            await self._queue.put(_End(None))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # handed to the reader, in its place
            await self._queue.put(_End(exc))

    async def aclose(self) -> None:
        """Stop reading ahead (the upstream stream itself is closed by its owner)."""
        self._done = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            # wait, not await: the reader's CancelledError is not the caller's, and a
            # caller that is itself being cancelled must see its own cancellation.
            await asyncio.wait({task})
