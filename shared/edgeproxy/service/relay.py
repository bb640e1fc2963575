"""Relay a committed upstream stream to the client as SSE, chunk by chunk.

Response headers are held for up to ``stream_header_hold_ms`` (10 s) while
routing settles, so an early failure keeps its real HTTP status. Past that
the stream opens with 200 and SSE comments keep the connection alive; a
failure after the stream opened, or after the first content frame, ends it
with an in-band error event, as the provider's own stream would.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from edgeproxy.errors import EdgeproxyError
from edgeproxy.routing.completeness import Complete, StreamTracker
from edgeproxy.routing.failures import classify
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.service.attempts import usage_only
from edgeproxy.service.failure import fault_error
from edgeproxy.service.outcomes import Outcomes, settle
from edgeproxy.service.router import Run, Served
from edgeproxy.service.telemetry import Telemetry
from edgeproxy.upstream.errors import UpstreamFault

logger = logging.getLogger(__name__)

KEEPALIVE = b": keepalive\n\n"
KEEPALIVE_INTERVAL_S = 5.0
DONE = b"data: [DONE]\n\n"


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class Deferred:
    """The success write of a relayed stream, run after the body was sent.

    The stream's outcome is known only once its last chunk went out; writing
    it in the body generator would hold the end of the response for one more
    store round trip, so the generator leaves it here for the response's
    background task.
    """

    def __init__(self) -> None:
        self._write: Coroutine[Any, Any, None] | None = None

    def set(self, write: Coroutine[Any, Any, None]) -> None:
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
    ) -> AsyncIterator[bytes]:
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
    ) -> AsyncIterator[bytes]:
        try:
            while not task.done():
                yield KEEPALIVE
                await asyncio.wait({task}, timeout=KEEPALIVE_INTERVAL_S)
            try:
                served = task.result()
            except EdgeproxyError as exc:
                yield sse(exc.body())
                return
            except Exception:
                # The stream is open: the error goes in-band, generic, and into the log.
                logger.exception("routing failed after the stream opened")
                yield sse(EdgeproxyError("internal error").body())
                return
        finally:
            if not task.done():
                task.cancel()  # the client went away while routing was still settling
        async for data in self._relay(run, served, after):
            yield data

    async def _relay(self, run: Run, served: Served, after: Deferred) -> AsyncIterator[bytes]:
        answer = served.answer
        stream = answer.stream
        assert stream is not None
        tracker = stream.tracker
        finished = False
        try:
            last: dict[str, Any] | None = None
            for chunk in answer.head:
                if answer.hide_usage and usage_only(chunk):
                    continue
                last = chunk
                yield sse(chunk)
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
                        last = event.chunk
                        yield sse(event.chunk)
            # A stream that ended early without [DONE] got here only by finishing every choice.
            outcome = tracker.outcome()
            if isinstance(outcome, Complete) and run.trace.attempts:
                # The serving attempt is the last one routed (routing ends at the success).
                run.trace.attempts[-1].anomalies = list(outcome.anomalies)
            for extra in _closing_chunks(run, outcome, tracker, last):
                yield extra
            yield DONE
            finished = True
            if isinstance(outcome, Complete) and outcome.anomalies:
                logger.info("stream anomalies: %s", ",".join(outcome.anomalies))
            usage = stream.usage
            after.set(
                self._outcomes.success(
                    served.ctx,
                    served.attempt,
                    prompt_tokens=usage.prompt_tokens if usage else 0,
                    completion_tokens=usage.completion_tokens if usage else 0,
                    latency_s=self._clock() - served.attempt.started_at,
                )
            )
        except (UpstreamFault, TimeoutError) as exc:
            fault = (
                exc.fault
                if isinstance(exc, UpstreamFault)
                else Fault(FaultKind.TIMEOUT, "the request's total deadline passed")
            )
            finished = True
            yield sse(_in_band(fault))
            await self._finish(
                self._outcomes.failure(
                    served.ctx,
                    served.attempt,
                    fault,
                    classify(fault),
                    count_for_circuit=not served.counted,
                )
            )
        finally:
            await stream.aclose()
            if not finished:
                # Client disconnected mid-stream: no verdict on the upstream, free its slot.
                await self._finish(self._outcomes.abandon(served.attempt))

    async def _finish(self, write: Coroutine[Any, Any, None]) -> None:
        # Shielded so a client disconnect cannot cancel the state write half-way.
        await asyncio.shield(settle(write))


def _closing_chunks(
    run: Run, outcome: object, tracker: StreamTracker, last: dict[str, Any] | None
) -> list[bytes]:
    base: dict[str, Any] = {
        k: last[k] for k in ("id", "object", "created", "model") if last and k in last
    }
    out: list[bytes] = []
    if isinstance(outcome, Complete) and outcome.inferred_finish_reason:
        # The upstream reached its end marker without saying why: say it, as its SDK would.
        inferred = [
            {"index": i, "delta": {}, "finish_reason": reason}
            for i, reason in sorted(outcome.finish_reasons.items())
            if i not in tracker.finish_reasons
        ]
        out.append(sse({**base, "choices": inferred}))
    if run.req.want_routing:
        out.append(sse({**base, "choices": [], "unified_routing": run.trace.metadata()}))
    return out


def _in_band(fault: Fault) -> dict[str, Any]:
    return fault_error(fault).body()
