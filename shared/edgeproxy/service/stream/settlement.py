"""What a relayed stream must release however it ends, even if its body never ran.

A client may leave while the headers are held, mid-stream, or before the
server ever iterated the body. A generator's ``finally`` covers none of these
reliably: an unstarted generator never runs it, and inside a cancelled task
group every ``await`` in it is cancelled again. So the relay keeps its
obligations here, and ``release`` runs them in a task of its own (shielded),
once: cancel routing that is still settling (the router abandons its own
attempt), close the serving attempt's upstream stream, release its
in-flight count and record it as abandoned.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Mapping

from edgeproxy.service.outcomes import Outcomes, settle
from edgeproxy.service.run import Served
from edgeproxy.service.stream.events import StreamItem


class Deferred:
    """The success writes of a relayed stream, awaited after the body was sent.

    They start when the stream's end is known, and only the binding's holds
    the end back (``Relay``: the next turn must see it); the counters and the
    rest need not, so the generator leaves them here for the response's
    background task.
    """

    def __init__(self) -> None:
        self._write: Awaitable[object] | None = None

    def set(self, write: Awaitable[object]) -> None:
        self._write = write

    async def __call__(self) -> None:
        write, self._write = self._write, None
        if write is not None:
            await settle(write)


class Settlement:
    """The open obligations of one relayed stream."""

    def __init__(self, outcomes: Outcomes, routing: asyncio.Future[Served] | None = None) -> None:
        self._outcomes = outcomes
        self._routing = routing
        self._served: Served | None = None
        self._task: asyncio.Future[None] | None = None
        self.settled = False  # the serving attempt's outcome is written (or on its way)

    def serving(self, served: Served) -> None:
        """``served`` now carries the stream; its outcome is still owed."""
        self._served = served
        self.settled = False

    async def release(self) -> None:
        """Settle what is still open (idempotent; survives the caller's cancellation)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._release())
        await asyncio.shield(self._task)

    async def _release(self) -> None:
        routing = self._routing
        if routing is not None and not routing.done():
            routing.cancel()
            await asyncio.wait({routing})
        if (
            self._served is None
            and routing is not None
            and not routing.cancelled()
            and routing.exception() is None
        ):
            self._served = routing.result()  # routing won the race: its stream is open
        served = self._served
        if served is None or self.settled:
            return
        self.settled = True
        if served.record is not None:
            served.record.error_kind = "abandoned"
        if served.answer.stream is not None:
            await served.answer.stream.aclose()
        await settle(self._outcomes.abandon(served.attempt))


class RelayStream:
    """The relay's events for the surface; ``aclose()`` settles whatever is still open."""

    def __init__(
        self,
        events: AsyncIterator[StreamItem],
        settlement: Settlement,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._events = events
        self._settlement = settlement
        # The committed attempt's passed-on upstream headers; none when the response
        # opened before routing settled (its headers were sent before any attempt won).
        self.headers = dict(headers or {})

    def __aiter__(self) -> RelayStream:
        return self

    async def __anext__(self) -> StreamItem:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        """Stop the relay; release routing, the upstream and its in-flight count if still held."""
        aclose = getattr(self._events, "aclose", None)
        try:
            if aclose is not None:
                await aclose()
        finally:
            if not self._settlement.settled:
                await self._settlement.release()
