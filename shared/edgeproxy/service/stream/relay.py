"""Relay a committed upstream stream to the client as typed events, chunk by chunk.

Response headers are held for up to ``stream_header_hold_ms`` (10 s) while
routing settles, so an early failure keeps its real HTTP status. Past that
the stream opens with 200 and keepalive events hold the connection. A
failure after the first content frame is continued on a prefill-capable
deployment when the pool (or its fallback chain) opted in
(``routing/stream/continuation.py`` decides, ``service/stream/recovery.py``
carries it out); otherwise, or when no continuation works, the
stream ends with the original failure as an in-band error event, as the
provider's own stream would. The events (``service/stream/events.py``) are
serialised by the client's surface.

However the client leaves (during the header hold, mid-stream, or before
the body was ever iterated), ``RelayStream.aclose`` settles what is left:
routing is cancelled, the upstream stream closed, its in-flight count
released and the attempt recorded as abandoned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from edgeproxy.errors import EdgeproxyError, UpstreamFault
from edgeproxy.routing.estimates.calibration import Calibration
from edgeproxy.routing.estimates.tokens import UNCALIBRATED, unreported_usage
from edgeproxy.routing.refusal import fault_error
from edgeproxy.routing.stream.completeness import Complete
from edgeproxy.routing.stream.remainder import delivered_tokens
from edgeproxy.service.limits.calibrations import Calibrations
from edgeproxy.service.outcomes import Outcomes
from edgeproxy.service.run import Run, Served
from edgeproxy.service.stream.continuation import Progress, added
from edgeproxy.service.stream.events import KEEPALIVE, Chunk, Closing, Failed, StreamItem
from edgeproxy.service.stream.readahead import ReadAhead
from edgeproxy.service.stream.recovery import Recovery, Resume, log_run
from edgeproxy.service.stream.settlement import Deferred, RelayStream, Settlement
from edgeproxy.service.success import Success
from edgeproxy.service.telemetry import Telemetry
from edgeproxy.upstream.call import Usage
from edgeproxy.upstream.stream import UpstreamStream

logger = logging.getLogger(__name__)

KEEPALIVE_INTERVAL_S = 5.0


class Relay:
    def __init__(
        self,
        outcomes: Outcomes,
        clock: Callable[[], float],
        telemetry: Telemetry,
        resume: Resume | None = None,
        calibrations: Calibrations | None = None,
    ) -> None:
        self._outcomes = outcomes
        self._calibrations = calibrations
        self._clock = clock
        self._telemetry = telemetry
        self._recovery = Recovery(outcomes, clock, telemetry, resume)

    async def open(
        self, run: Run, route: Coroutine[Any, Any, Served], hold_s: float, after: Deferred
    ) -> RelayStream:
        """Wait up to ``hold_s`` for routing; raise its error if it fails in that window.

        A complete answer's end is relayed once its binding write landed; the
        rest of its success's writes are left in ``after``, awaited once the
        body was sent.
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
        try:
            legs = self._legs(run, served, after, settlement, progress)
            async with contextlib.aclosing(legs) as items:
                async for item in items:
                    yield item
        finally:
            if not settlement.settled:
                # The client left mid-stream: settle in a task of its own, which
                # a cancellation of this generator cannot interrupt half-way.
                await asyncio.shield(settlement.release())

    async def _legs(
        self, run: Run, served: Served, after: Deferred, settlement: Settlement, progress: Progress
    ) -> AsyncGenerator[StreamItem]:
        """The answer's attempts in turn: each cut one is continued by the next, if any."""
        writes: list[asyncio.Future[None]] = []  # failure writes of cut attempts, in flight
        while True:
            leg = _Leg(served)
            try:
                async with contextlib.aclosing(self._chunks(run, leg, progress)) as chunks:
                    async for chunk in chunks:
                        yield chunk
            except (UpstreamFault, TimeoutError) as exc:
                resumed = await self._recovery.after_cut(
                    run, served, settlement, progress, exc, writes
                )
                if resumed is not None:
                    served = resumed
                    continue
                if progress.ended_by_length:
                    yield self._at_length(run, progress)
                    await _written(writes)
                    return
                assert progress.first_fault is not None
                error = fault_error(progress.first_fault, progress.first_deployment)
                yield Failed(error, self._routing(run))
            else:
                closing, success = self._closing(
                    run, served, progress, after, settlement, leg.finished_at
                )
                # The end of the answer waits for its binding (and for a cut leg's drop):
                # the caller's next turn, sent at [DONE], routes on them on any process.
                await asyncio.gather(success.bound(), _written(writes))
                yield closing
            await _written(writes)
            return

    async def _chunks(self, run: Run, leg: _Leg, progress: Progress) -> AsyncGenerator[Chunk]:
        """One attempt's chunks the client is owed; its last event's time in ``leg``."""
        answer = leg.served.answer
        assert answer.stream is not None
        for chunk in answer.head:
            owed = progress.owed(chunk, hide_usage=answer.hide_usage)
            if owed is not None:
                yield Chunk(owed, reported_prompt(answer.stream))
        if answer.ended:
            return
        reader = ReadAhead(answer.stream, self._clock)
        try:
            async with asyncio.timeout(run.budget.remaining(self._clock())):
                async for event in reader:
                    if event.done:
                        break
                    if event.chunk is None:
                        continue
                    owed = progress.owed(event.chunk, hide_usage=answer.hide_usage)
                    if owed is not None:
                        yield Chunk(owed, reported_prompt(answer.stream))
        finally:
            await reader.aclose()
        leg.finished_at = reader.finished_at

    def _closing(
        self,
        run: Run,
        served: Served,
        progress: Progress,
        after: Deferred,
        settlement: Settlement,
        finished_at: float | None,
    ) -> tuple[Closing, Success]:
        """The end of a complete answer, and its success's writes, started (``after``
        awaits them once the body was sent)."""
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
        deployment_id = served.attempt.deployment.id
        # A continuation's count is of the longer body it was sent (the prefill added):
        # learning it against the client's own body would inflate the ratio.
        if own is not None and self._calibrations is not None and not progress.continuations:
            self._calibrations.observe(
                deployment_id, run.req.protocol, run.req.body, own.prompt_tokens
            )
        if record is not None and own is not None:
            record.usage = own.counts()
        settlement.settled = True
        if isinstance(outcome, Complete) and outcome.anomalies:
            self._anomalies(run, served, outcome.anomalies)
        # Without the upstream's count (no usage chunk), tpm and throughput count an estimate:
        # its prompt as this deployment counts this protocol's prompts (its calibration).
        counted = (
            own
            if own is not None
            else Usage(
                *unreported_usage(
                    run.req.body, "".join(progress.text), _calibration(run, deployment_id)
                )
            )
        )
        closing = Closing(
            finish_reasons=inferred,
            usage=added(progress.usage, own),
            routing=self._routing(run),
            counted=added(progress.usage, counted),
            estimated=own is None,
            anomalies=outcome.anomalies if isinstance(outcome, Complete) else (),
            continued=bool(progress.continuations),
        )
        if record is not None:
            record.counted = counted.counts()
        success = self._outcomes.success(
            served.ctx,
            served.attempt,
            prompt_tokens=counted.prompt_tokens,
            completion_tokens=counted.completion_tokens,
            cache_read_tokens=counted.cache_read_tokens,
            cache_write_tokens=counted.cache_write_tokens,
            latency_s=(finished_at or self._clock()) - served.attempt.started_at,
            rate_limits=stream.rate_limits,
            anomalies=outcome.anomalies if isinstance(outcome, Complete) else (),
        )
        after.set(success)
        return closing, success

    def _at_length(self, run: Run, progress: Progress) -> Closing:
        """The end of an answer cut when the client's output limit was used up: it ends as
        the model's would have, with finish_reason length. Its output is the delivered
        estimate (a cut stream's count, if any, stops short of its end)."""
        text = "".join(progress.text)
        delivered = delivered_tokens(text, len(progress.text))
        reported = progress.usage
        if reported is None:
            calibration = _calibration(run, progress.first_deployment)
            prompt, _ = unreported_usage(run.req.body, text, calibration)
        else:
            prompt, delivered = reported.prompt_tokens, max(delivered, reported.completion_tokens)
        return Closing(
            finish_reasons={0: "length"},
            routing=self._routing(run),
            counted=Usage(prompt, delivered),
            estimated=True,
            continued=bool(progress.continuations),
        )

    def _anomalies(self, run: Run, served: Served, anomalies: tuple[str, ...]) -> None:
        self._log(run, logging.INFO, "stream anomalies: %s", ",".join(anomalies))
        for anomaly in anomalies:
            self._telemetry.count(
                "StreamAnomalies",
                deployment=served.attempt.deployment.id,
                model=served.ctx.model,
                anomaly=anomaly,
            )

    def _routing(self, run: Run) -> dict[str, Any] | None:
        return run.trace.metadata(reasons=run.req.want_reasons) if run.req.want_routing else None

    def _log(self, run: Run, level: int, message: str, *args: object) -> None:
        log_run(logger, run, level, message, *args)


@dataclass(slots=True)
class _Leg:
    """One attempt of a relayed answer: what serves it, and when its last event came."""

    served: Served
    finished_at: float | None = None  # the upstream's last event (latency's end)


def _calibration(run: Run, deployment_id: str | None) -> Calibration:
    """The deployment's prompt calibration for the run's protocol (``Run.calibrated``)."""
    if deployment_id is None:
        return UNCALIBRATED
    return run.calibrated.get(deployment_id, UNCALIBRATED)


async def _written(writes: list[asyncio.Future[None]]) -> None:
    # Shielded so a client disconnect cannot cancel the state writes half-way.
    if writes:
        await asyncio.shield(asyncio.gather(*writes))


def reported_prompt(stream: UpstreamStream) -> Usage | None:
    """The usage ``stream``'s upstream reported so far (None: no input tokens yet, or none)."""
    usage = stream.usage
    return usage if usage is not None and usage.prompt_tokens > 0 else None
