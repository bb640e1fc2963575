"""A stream cut after its commit point: its failure write, and the continuation, if any.

The core decides whether the cut answer is continued
(``routing/stream/continuation.py``); this carries the decision out: the
cut attempt's failure is written alongside, and a continuation run is
routed to the targets with the prefill of what the client was shown
(``service/stream/continuation.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.stream.continuation import Cut, Reason, decide
from edgeproxy.routing.stream.remainder import spent
from edgeproxy.routing.verdict import judge
from edgeproxy.service.outcomes import Outcomes, settle
from edgeproxy.service.run import Run, Served
from edgeproxy.service.stream.continuation import Progress, continuation_body
from edgeproxy.service.stream.settlement import Settlement
from edgeproxy.service.telemetry import Telemetry

logger = logging.getLogger(__name__)

# Routes a continuation run to the given models, excluding the cut deployments.
Resume = Callable[[Run, Sequence[str], frozenset[str]], Awaitable[Served | None]]


class Recovery:
    """What the relay does when a committed stream is cut."""

    def __init__(
        self,
        outcomes: Outcomes,
        clock: Callable[[], float],
        telemetry: Telemetry,
        resume: Resume | None,
    ) -> None:
        self._outcomes = outcomes
        self._clock = clock
        self._telemetry = telemetry
        self._resume = resume

    async def after_cut(
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
        stream = served.answer.stream
        assert stream is not None
        writes.append(await self._cut(run, served, settlement, progress, exc))
        decision = decide(
            Cut(
                run.req.operation,
                pinned=run.req.pin is not None,
                by_deadline=isinstance(exc, TimeoutError),
                continuations=progress.continuations,
                output_spent=spent(progress.limits(run.req.body)),
            ),
            stream.tracker,
            "".join(progress.text),
            run.config.continuation_targets(served.model),
            run.budget,
            now=self._clock(),
        )
        progress.ended_by_length = decision.reason is Reason.LENGTH
        if self._resume is None or not decision.go:
            return None
        return await self._continued(run, served, settlement, progress)

    async def _cut(
        self,
        run: Run,
        served: Served,
        settlement: Settlement,
        progress: Progress,
        exc: UpstreamFault | TimeoutError,
    ) -> asyncio.Future[None]:
        """Close the cut stream and start its failure write; the write, in flight."""
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
        write = asyncio.ensure_future(settle(failure))
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
        return write

    async def _continued(
        self, run: Run, served: Served, settlement: Settlement, progress: Progress
    ) -> Served | None:
        """Route the continuation of a cut answer; None when no deployment takes it."""
        assert self._resume is not None
        targets = run.config.continuation_targets(served.model)
        resume_run = Run(
            req=replace(
                run.req,
                body=continuation_body(
                    run.req.body, progress.prefill(), progress.limits(run.req.body)
                ),
                pin=None,
            ),
            config=run.config,
            budget=run.budget,
            trace=run.trace,
            owner=run.owner,
            resume=True,
            calibrated=run.calibrated,
        )
        progress.continuations += 1
        resumed = await self._resume(resume_run, targets, frozenset(progress.cut))
        if resumed is None:
            self._log(run, logging.WARNING, "stream continuation found no capable deployment")
            return None
        progress.continued()
        settlement.serving(resumed)
        self._telemetry.count("StreamContinuations")
        self._log(
            run, logging.INFO, "stream continued on deployment=%s", resumed.attempt.deployment.id
        )
        return resumed

    def _log(self, run: Run, level: int, message: str, *args: object) -> None:
        log_run(logger, run, level, message, *args)


def log_run(log: logging.Logger, run: Run, level: int, message: str, *args: object) -> None:
    """Log with the request's routing trace and id (as structured fields)."""
    if log.isEnabledFor(level):
        extra = {"unified_routing": run.trace.metadata(), "request_id": run.req.request_id}
        log.log(level, message, *args, extra=extra)
