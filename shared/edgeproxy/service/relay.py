"""Relay a committed upstream stream to the client as typed events, chunk by chunk.

Response headers are held for up to ``stream_header_hold_ms`` (10 s) while
routing settles, so an early failure keeps its real HTTP status. Past that
the stream opens with 200 and keepalive events hold the connection; a
failure after the stream opened, or after the first content frame, ends it
with an in-band error event, as the provider's own stream would. The events
(``service/events.py``) are serialised by the client's surface.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from edgeproxy.errors import EdgeproxyError, UpstreamFault
from edgeproxy.routing.completeness import Complete
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.refusal import fault_error
from edgeproxy.routing.verdict import judge
from edgeproxy.service.attempts import usage_only
from edgeproxy.service.events import KEEPALIVE, Chunk, Closing, Failed, StreamItem
from edgeproxy.service.outcomes import Outcomes, settle
from edgeproxy.service.router import Run, Served
from edgeproxy.service.telemetry import Telemetry

logger = logging.getLogger(__name__)

KEEPALIVE_INTERVAL_S = 5.0


class Deferred:
    """The success write of a relayed stream, run after the body was sent.

    The stream's outcome is known only once its last chunk went out; writing
    it in the body generator would hold the end of the response for one more
    store round trip, so the generator leaves it here for the response's
    background task.
    """

    def __init__(self) -> None:
        self._write: Coroutine[Any, Any, object] | None = None

    def set(self, write: Coroutine[Any, Any, object]) -> None:
        self._write = write

    async def __call__(self) -> None:
        write, self._write = self._write, None
        if write is not None:
            await settle(write)


class Relay:
    def __init__(
        self, outcomes: Outcomes, clock: Callable[[], float], telemetry: Telemetry
    ) -> None:
        self._outcomes = outcomes
        self._clock = clock
        self._telemetry = telemetry

    async def open(
        self, run: Run, route: Coroutine[Any, Any, Served], hold_s: float, after: Deferred
    ) -> AsyncIterator[StreamItem]:
        """Wait up to ``hold_s`` for routing; raise its error if it fails in that window.

        The success write is left in ``after``, to run once the body was sent.
        """
        task = asyncio.ensure_future(route)
        try:
            done, _ = await asyncio.wait({task}, timeout=hold_s)
        except BaseException:
            task.cancel()
            raise
        if done:
            served = task.result()  # raises the routing error: answered with its real status
            return self._relay(run, served, after)
        return self._held(run, task, after)

    async def _held(
        self, run: Run, task: asyncio.Future[Served], after: Deferred
    ) -> AsyncIterator[StreamItem]:
        try:
            while not task.done():
                yield KEEPALIVE
                await asyncio.wait({task}, timeout=KEEPALIVE_INTERVAL_S)
            try:
                served = task.result()
            except EdgeproxyError as exc:
                yield Failed(exc)
                return
            except Exception:
                # The stream is open: the error goes in-band, generic, and into the log.
                logger.exception("routing failed after the stream opened")
                yield Failed(EdgeproxyError("internal error"))
                return
        finally:
            if not task.done():
                task.cancel()  # the client went away while routing was still settling
        async for data in self._relay(run, served, after):
            yield data

    async def _relay(self, run: Run, served: Served, after: Deferred) -> AsyncIterator[StreamItem]:
        answer = served.answer
        stream = answer.stream
        assert stream is not None
        finished = False
        try:
            for chunk in answer.head:
                if answer.hide_usage and usage_only(chunk):
                    continue
                yield Chunk(chunk)
            if not answer.ended:
                remaining = run.budget.remaining(self._clock())
                async with asyncio.timeout(remaining):
                    async for event in stream:
                        if event.done:
                            break
                        if event.chunk is None:
                            continue
                        if answer.hide_usage and usage_only(event.chunk):
                            continue  # we asked for it to count tokens; the client did not
                        yield Chunk(event.chunk)
            # A stream that ended early without [DONE] got here only by finishing every choice.
            tracker = stream.tracker
            outcome = tracker.outcome()
            inferred: dict[int, str] = {}
            if isinstance(outcome, Complete):
                inferred = outcome.inferred(tracker.finish_reasons)
                if run.trace.attempts:
                    # The serving attempt is the last one routed (routing ends at the success).
                    run.trace.attempts[-1].anomalies = list(outcome.anomalies)
            usage = stream.usage
            routing = run.trace.metadata() if run.req.want_routing else None
            yield Closing(finish_reasons=inferred, usage=usage, routing=routing)
            finished = True
            if isinstance(outcome, Complete) and outcome.anomalies:
                logger.info("stream anomalies: %s", ",".join(outcome.anomalies))
            after.set(
                self._outcomes.success(
                    served.ctx,
                    served.attempt,
                    prompt_tokens=usage.prompt_tokens if usage else 0,
                    completion_tokens=usage.completion_tokens if usage else 0,
                    latency_s=self._clock() - served.attempt.started_at,
                    rate_limits=stream.rate_limits,
                )
            )
        except (UpstreamFault, TimeoutError) as exc:
            fault = (
                exc.fault
                if isinstance(exc, UpstreamFault)
                else Fault(FaultKind.TIMEOUT, "the request's total deadline passed")
            )
            finished = True
            yield Failed(fault_error(fault))
            await self._finish(
                self._outcomes.failure(
                    served.ctx, served.attempt, judge(fault), first=not served.counted
                )
            )
        finally:
            await stream.aclose()
            if not finished:
                # Client disconnected mid-stream: no verdict on the upstream, free its slot.
                await self._finish(self._outcomes.abandon(served.attempt))

    async def _finish(self, write: Coroutine[Any, Any, object]) -> None:
        # Shielded so a client disconnect cannot cancel the state write half-way.
        await asyncio.shield(settle(write))
