"""Relay a committed upstream stream to the client as typed events, chunk by chunk.

Response headers are held for up to ``stream_header_hold_ms`` (10 s) while
routing settles, so an early failure keeps its real HTTP status. Past that
the stream opens with 200 and keepalive events hold the connection. A
failure after the first content frame is continued on a prefill-capable
deployment when the pool (or its fallback chain) opted in
(``service/continuation.py``); otherwise, or when no continuation works, the
stream ends with the original failure as an in-band error event, as the
provider's own stream would. The events (``service/events.py``) are
serialised by the client's surface.

However the client leaves (during the header hold, mid-stream, or before
the body was ever iterated), ``RelayStream.aclose`` settles what is left:
routing is cancelled, the upstream stream closed, its in-flight count
released and the attempt recorded as abandoned.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from typing import Any

from edgeproxy.config.policies import Operation
from edgeproxy.errors import EdgeproxyError, UpstreamFault
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.refusal import fault_error
from edgeproxy.routing.stream.completeness import Complete
from edgeproxy.routing.verdict import judge
from edgeproxy.service.outcomes import Outcomes, settle
from edgeproxy.service.run import Run, Served
from edgeproxy.service.stream.continuation import (
    MAX_CONTINUATIONS,
    Progress,
    added,
    continuable,
    continuation_body,
)
from edgeproxy.service.stream.events import KEEPALIVE, Chunk, Closing, Failed, StreamItem
from edgeproxy.service.stream.readahead import ReadAhead
from edgeproxy.service.stream.settlement import Deferred, RelayStream, Settlement
from edgeproxy.service.telemetry import Telemetry

logger = logging.getLogger(__name__)

KEEPALIVE_INTERVAL_S = 5.0
# Routes a continuation run to the given models, excluding the cut deployments.
Resume = Callable[[Run, Sequence[str], frozenset[str]], Awaitable[Served | None]]


class Relay:
    def __init__(
        self,
        outcomes: Outcomes,
        clock: Callable[[], float],
        telemetry: Telemetry,
        resume: Resume | None = None,
    ) -> None:
        self._outcomes = outcomes
        self._clock = clock
        self._telemetry = telemetry
        self._resume = resume

    async def open(
        self, run: Run, route: Coroutine[Any, Any, Served], hold_s: float, after: Deferred
    ) -> RelayStream:
        """Wait up to ``hold_s`` for routing; raise its error if it fails in that window.

        The success write is left in ``after``, to run once the body was sent.
        """
        task = asyncio.ensure_future(route)
        settlement = Settlement(self._outcomes, task)
        try:
            done, _ = await asyncio.wait({task}, timeout=hold_s)
        except BaseException:
            await settlement.release()  # the client left during the header hold
            raise
        if done:
            served = task.result()  # raises the routing error: answered with its real status
            settlement.serving(served)
            headers = served.answer.stream.headers if served.answer.stream else None
            return RelayStream(self._relay(run, served, after, settlement), settlement, headers)
        return RelayStream(self._held(run, task, after, settlement), settlement)

    async def _held(
        self, run: Run, task: asyncio.Future[Served], after: Deferred, settlement: Settlement
    ) -> AsyncIterator[StreamItem]:
        while not task.done():
            yield KEEPALIVE
            await asyncio.wait({task}, timeout=KEEPALIVE_INTERVAL_S)
        try:
            served = task.result()
        except EdgeproxyError as exc:
            yield Failed(exc, self._routing(run))
            return
        except Exception:
            # The stream is open: the error goes in-band, generic, and into the log.
            logger.exception("routing failed after the stream opened")
            yield Failed(EdgeproxyError("internal error"), self._routing(run))
            return
        settlement.serving(served)
        async for data in self._relay(run, served, after, settlement):
            yield data

    async def _relay(
        self, run: Run, served: Served, after: Deferred, settlement: Settlement
    ) -> AsyncIterator[StreamItem]:
        progress = Progress()
        writes: list[asyncio.Future[None]] = []  # failure writes of cut attempts, in flight
        try:
            while True:
                finished_at: float | None = None  # the upstream's last event (latency's end)
                answer = served.answer
                stream = answer.stream
                assert stream is not None
                try:
                    for chunk in answer.head:
                        owed = progress.owed(chunk, hide_usage=answer.hide_usage)
                        if owed is not None:
                            yield Chunk(owed)
                    if not answer.ended:
                        reader = ReadAhead(stream, self._clock)
                        try:
                            async with asyncio.timeout(run.budget.remaining(self._clock())):
                                async for event in reader:
                                    if event.done:
                                        break
                                    if event.chunk is None:
                                        continue
                                    owed = progress.owed(event.chunk, hide_usage=answer.hide_usage)
                                    if owed is not None:
                                        yield Chunk(owed)
                        finally:
                            await reader.aclose()
                        finished_at = reader.finished_at
                except (UpstreamFault, TimeoutError) as exc:
                    resumed = await self._failed(run, served, settlement, progress, exc, writes)
                    if resumed is None:
                        assert progress.first_fault is not None
                        error = fault_error(progress.first_fault, progress.first_deployment)
                        yield Failed(error, self._routing(run))
                        await _written(writes)
                        return
                    served = resumed
                    continue
                yield self._closing(run, served, progress, after, settlement, finished_at)
                await _written(writes)
                return
        finally:
            if not settlement.settled:
                # The client left mid-stream: settle in a task of its own, which
                # a cancellation of this generator cannot interrupt half-way.
                await asyncio.shield(settlement.release())

    def _closing(
        self,
        run: Run,
        served: Served,
        progress: Progress,
        after: Deferred,
        settlement: Settlement,
        finished_at: float | None,
    ) -> Closing:
        """The end of a complete answer; leaves its success write in ``after``."""
        stream = served.answer.stream
        assert stream is not None
        tracker = stream.tracker
        outcome = tracker.outcome()
        inferred: dict[int, str] = {}
        record = served.record
        if isinstance(outcome, Complete):
            inferred = outcome.inferred(tracker.finish_reasons)
            if record is not None:
                record.anomalies = list(outcome.anomalies)
        own = stream.usage
        if record is not None and own is not None:
            record.usage = {
                "prompt_tokens": own.prompt_tokens,
                "completion_tokens": own.completion_tokens,
            }
        settlement.settled = True
        closing = Closing(
            finish_reasons=inferred, usage=added(progress.usage, own), routing=self._routing(run)
        )
        if isinstance(outcome, Complete) and outcome.anomalies:
            self._log(run, logging.INFO, "stream anomalies: %s", ",".join(outcome.anomalies))
        after.set(
            self._outcomes.success(
                served.ctx,
                served.attempt,
                prompt_tokens=own.prompt_tokens if own else 0,
                completion_tokens=own.completion_tokens if own else 0,
                latency_s=(finished_at or self._clock()) - served.attempt.started_at,
                rate_limits=stream.rate_limits,
            )
        )
        return closing

    async def _failed(
        self,
        run: Run,
        served: Served,
        settlement: Settlement,
        progress: Progress,
        exc: UpstreamFault | TimeoutError,
        writes: list[asyncio.Future[None]],
    ) -> Served | None:
        """Record a failure after the commit; the continuation that takes over, if any.

        The failure write runs alongside (added to ``writes``): the client's
        error event or the continuation need not wait for a store round trip.
        """
        spent = isinstance(exc, TimeoutError)
        fault = (
            exc.fault
            if isinstance(exc, UpstreamFault)
            else Fault(FaultKind.TIMEOUT, "the request's total deadline passed")
        )
        verdict = judge(fault)
        dep = served.attempt.deployment.id
        stream = served.answer.stream
        assert stream is not None
        settlement.settled = True
        await stream.aclose()
        failure = self._outcomes.failure(
            served.ctx, served.attempt, verdict, first=not served.counted
        )
        writes.append(asyncio.ensure_future(settle(failure)))
        if served.record is not None:
            served.record.error_class = verdict.cls.value
            served.record.error_kind = fault.kind.value
        progress.failed(fault, dep, stream.usage)
        self._log(
            run,
            logging.WARNING,
            "stream failed after commit: deployment=%s kind=%s",
            dep,
            fault.kind.value,
        )
        text = "".join(progress.text)
        targets = run.config.continuation_targets(served.model)
        if (
            self._resume is None
            or run.req.pin is not None  # a pinned request never leaves its deployment
            or run.req.operation is not Operation.CHAT  # a prefill continues chat only
            or spent
            or not targets
            or progress.continuations >= MAX_CONTINUATIONS
            or not continuable(stream.tracker, text)
            or run.budget.expired(self._clock())
        ):
            return None
        resume_run = Run(
            req=replace(
                run.req, body=continuation_body(run.req.body, progress.prefill()), pin=None
            ),
            config=run.config,
            budget=run.budget,
            trace=run.trace,
            owner=run.owner,
            resume=True,
        )
        progress.continuations += 1
        resumed = await self._resume(resume_run, targets, frozenset(progress.cut))
        if resumed is None:
            self._log(run, logging.WARNING, "stream continuation found no capable deployment")
            return None
        progress.resumed = True
        settlement.serving(resumed)
        self._telemetry.count("StreamContinuations")
        self._log(
            run, logging.INFO, "stream continued on deployment=%s", resumed.attempt.deployment.id
        )
        return resumed

    def _routing(self, run: Run) -> dict[str, Any] | None:
        return run.trace.metadata() if run.req.want_routing else None

    def _log(self, run: Run, level: int, message: str, *args: object) -> None:
        if logger.isEnabledFor(level):
            extra = {"unified_routing": run.trace.metadata(), "request_id": run.req.request_id}
            logger.log(level, message, *args, extra=extra)


async def _written(writes: list[asyncio.Future[None]]) -> None:
    # Shielded so a client disconnect cannot cancel the state writes half-way.
    if writes:
        await asyncio.shield(asyncio.gather(*writes))
