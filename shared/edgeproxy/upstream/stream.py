"""An open upstream stream: an async iterator of OpenAI chunks with an idle deadline.

Completeness follows the spec ("What counts as complete") and is judged by
the core's ``StreamTracker``, fed each event as it is handed out: a stream
that reached its end marker, or whose every choice got a finish reason, is
complete even if the other signal is missing; only a stream that stops with
neither fails, as TRUNCATED. An event that is not valid JSON is handed to the
tracker's judgement when its turn comes: skipped (an anomaly) after the commit,
a MALFORMED failure before it. The idle deadline counts every received byte
(keepalive comments included), because it is checked per network read, not
per event.

Where the events come from is a ``StreamSource``: ``SSESource`` reads an
httpx response's Server-Sent Events; Bedrock's AWS event stream has its own
(``upstream/bedrock_stream.py``). Deadlines, ordering and completeness are
judged here, the same for every protocol.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Protocol

import httpx

from edgeproxy.config.models import UpstreamLimits
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.routing.stream.completeness import StreamTracker
from edgeproxy.upstream.adapter import ChunkTranslator
from edgeproxy.upstream.call import StreamEvent, Usage
from edgeproxy.upstream.errors import STREAM, fault, hide_secrets, translate_errors
from edgeproxy.upstream.headers import RateLimitInfo
from edgeproxy.upstream.sse import SSEParser

# After the end marker only the transfer's own terminator should follow; waiting
# for it briefly lets the connection go back to the pool instead of being closed.
_DRAIN_S = 1.0
_AFTER_THE_END = frozenset({FaultKind.TRUNCATED, FaultKind.IDLE})


class StreamSource(Protocol):
    """One protocol's stream, read one network unit at a time."""

    @property
    def usage(self) -> Usage | None:
        """The latest usage the upstream reported, if any."""
        ...

    async def read(self) -> list[StreamEvent | UpstreamFault] | None:
        """The events of the next network read; ``None`` at the end of the stream.

        A MALFORMED fault in the list is one bad event (judged in its turn);
        any other fault in it ends the stream once the events before it are
        out. Transport errors and timeouts are raised (``translate_errors``
        turns them into faults around the call).
        """
        ...

    async def drain(self) -> None:
        """After the end marker: read what is left briefly, then close (idempotent)."""
        ...

    async def aclose(self) -> None:
        """Release the connection (idempotent)."""
        ...


class SSESource:
    """An httpx response's Server-Sent Events, translated by a provider's ``ChunkTranslator``."""

    def __init__(
        self, response: httpx.Response, translator: ChunkTranslator, limits: UpstreamLimits
    ) -> None:
        self._response = response
        self._raw: AsyncIterator[bytes] = response.aiter_raw()
        self._translator = translator
        self._parser = SSEParser(limits.event_bytes)
        self._max_bytes = limits.stream_bytes
        self._received = 0

    @property
    def usage(self) -> Usage | None:
        """The translator's latest usage."""
        return self._translator.usage

    async def read(self) -> list[StreamEvent | UpstreamFault] | None:
        """The events in the next bytes received (keepalive comments yield none)."""
        data = await anext(self._raw, None)
        if data is None:
            return None
        self._received += len(data)
        if self._received > self._max_bytes:
            return [
                fault(
                    FaultKind.OVERSIZE,
                    f"the upstream's stream passed {self._max_bytes} bytes"
                    " (gateway.upstream_limits.stream_bytes)",
                )
            ]
        out: list[StreamEvent | UpstreamFault] = []
        try:
            for sse in self._parser.feed(data):
                try:
                    out.extend(self._translator.feed(sse))
                except UpstreamFault as exc:
                    out.append(exc)
                    if exc.fault.kind is not FaultKind.MALFORMED:
                        break
        except UpstreamFault as exc:  # an event beyond event_bytes
            out.append(exc)
        return out

    async def drain(self) -> None:
        """Let the connection go back to the pool if its terminator follows promptly."""
        if self._response.is_closed:
            return
        try:
            async with asyncio.timeout(_DRAIN_S):
                async for _ in self._raw:
                    pass
        except (TimeoutError, httpx.TransportError):
            pass  # the answer is complete; a messy ending costs only the connection
        await self.aclose()

    async def aclose(self) -> None:
        """Close the response (and the connection, if the body was not read to the end)."""
        await self._response.aclose()


class UpstreamStream:
    """Iterate for ``StreamEvent``s; always ``aclose()`` (or use ``async with``).

    >>> async with await client.open_stream(call) as stream:   # doctest: +SKIP
    ...     async for event in stream:
    ...         forward(event.chunk)
    """

    def __init__(
        self,
        source: StreamSource,
        *,
        status: int = 200,
        idle_timeout_s: float | None,
        secrets: Sequence[str | None] = (),
        rate_limits: RateLimitInfo | None,
        request_id: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.rate_limits = rate_limits
        self.request_id = request_id
        self.headers = dict(headers or {})  # passed on to the client (headers.passthrough)
        self.tracker = StreamTracker()  # fed every event handed out, in order
        self._source = source
        self._idle = idle_timeout_s
        self._secrets = secrets
        # A malformed event waits in line as its fault, judged when its turn comes.
        self._pending: deque[StreamEvent | UpstreamFault] = deque()
        self._ended = False
        self._failure: UpstreamFault | None = None  # raised once the events before it are out

    @classmethod
    def over_sse(
        cls,
        response: httpx.Response,
        translator: ChunkTranslator,
        *,
        idle_timeout_s: float | None,
        limits: UpstreamLimits | None = None,
        secrets: Sequence[str | None] = (),
        rate_limits: RateLimitInfo | None,
        request_id: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> UpstreamStream:
        """A stream over an httpx response's Server-Sent Events."""
        return cls(
            SSESource(response, translator, limits or UpstreamLimits()),
            status=response.status_code,
            idle_timeout_s=idle_timeout_s,
            secrets=secrets,
            rate_limits=rate_limits,
            request_id=request_id,
            headers=headers,
        )

    @property
    def usage(self) -> Usage | None:
        """The latest usage the upstream reported in the stream, if any."""
        return self._source.usage

    @property
    def complete(self) -> bool:
        """The stream may end here without being a failure."""
        return self.tracker.complete

    def __aiter__(self) -> UpstreamStream:
        return self

    async def __anext__(self) -> StreamEvent:
        """The next event; raises ``UpstreamFault`` (IDLE, TRUNCATED, MALFORMED, HTTP)."""
        while True:
            event = await self._next_pending()
            if not isinstance(event, UpstreamFault):
                break
            if not self.tracker.skip_malformed():
                await self.aclose()
                raise event
            # Skipped after the commit: an anomaly on the attempt, not a failure.
        # Judged as handed out, so a reader stopping at the commit sees exactly that.
        if event.chunk is not None:
            self.tracker.feed(event.chunk)
        if event.done:
            self.tracker.end()
            if not self.complete:  # an end marker this deployment's streams cannot be trusted on
                await self.aclose()
                raise fault(FaultKind.TRUNCATED, "the upstream ended its stream without finishing")
            self._ended = True
            self._pending.clear()
            self._failure = None  # nothing after the end marker can spoil the answer
        return event

    async def _next_pending(self) -> StreamEvent | UpstreamFault:
        while not self._pending:
            if self._failure is not None:
                await self.aclose()
                raise self._failure
            if self._ended:
                await self._source.drain()
                raise StopAsyncIteration
            try:
                await self._read()
            except UpstreamFault as exc:
                await self.aclose()
                if exc.fault.kind in _AFTER_THE_END and self.complete:
                    # Every choice finished: a drop or a silence after that ends
                    # a complete answer (the upstream merely skipped [DONE]).
                    raise StopAsyncIteration from None
                raise
        return self._pending.popleft()

    async def _read(self) -> None:
        with translate_errors(STREAM):
            async with asyncio.timeout(self._idle):
                items = await self._source.read()
        if items is None:
            await self.aclose()
            if not self.complete:
                raise fault(
                    FaultKind.TRUNCATED, "the upstream's stream ended before it was complete"
                )
            return
        for item in items:
            if isinstance(item, UpstreamFault) and item.fault.kind is not FaultKind.MALFORMED:
                self._failure = item
                break
            self._pending.append(self._scrubbed(item))

    def _scrubbed(self, item: StreamEvent | UpstreamFault) -> StreamEvent | UpstreamFault:
        # An upstream echoing its request headers must not hand the client its key.
        if isinstance(item, StreamEvent) and item.chunk is not None and self._secrets:
            return StreamEvent(chunk=hide_secrets(item.chunk, self._secrets), done=item.done)
        return item

    async def aclose(self) -> None:
        """Release the connection (closing it if the body was not read to the end)."""
        self._ended = True
        await self._source.aclose()

    async def __aenter__(self) -> UpstreamStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
