"""Route one request across a pool and its fallback chain.

Per pool: one state read (BatchGetItem), then a loop that asks the pure core
(``routing.step.next_step``) what to do and carries it out: take the probe
lease if the circuit is half-open, back off, count the start with a
conditional ``ADD`` (rpm limit), call the upstream, record the outcome and
apply what the write left standing to this request's view of the pool. A
success returns at once; its outcome writes are left to the caller (the
binding's before the answer is released, the rest after it: ``Outcomes.success``). When the pool is spent the fallback
chain for the failure's reason runs the whole selection again.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Callable, Sequence

from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import CredentialError, UpstreamFault
from edgeproxy.routing.estimates.tokens import reservation
from edgeproxy.routing.estimates.window import unfit
from edgeproxy.routing.refusal import RouteFailure, chain_reason
from edgeproxy.routing.step import AttemptLog, PoolFailure, Stop, Try, Wait, next_step
from edgeproxy.routing.verdict import (
    CREDENTIAL_UNAVAILABLE,
    Failed,
    Verdict,
    attempt_failed,
    judge,
    request_shaped,
)
from edgeproxy.service.admission import Attempt, InFlight, start_count
from edgeproxy.service.attempts import Caller, check_pool, native_refusal, upstream_call
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.service.outcomes import Outcomes
from edgeproxy.service.pool import PoolContext, Standing, open_pool, route_request, with_usage
from edgeproxy.service.prefill import Prefill
from edgeproxy.service.run import Run, Served
from edgeproxy.service.slots import SlotWait, given_back, take_slot
from edgeproxy.service.trace import AttemptRecord
from edgeproxy.state.store import RouterStore

logger = logging.getLogger(__name__)


class Router:
    """Routes requests; one per process, shared by every request."""

    def __init__(
        self,
        store: RouterStore,
        outcomes: Outcomes,
        credentials: CredentialResolver,
        clock: Callable[[], float],
        rng: random.Random,
    ) -> None:
        self._store = store
        self._outcomes = outcomes
        self._credentials = credentials
        self._clock = clock
        self._rng = rng
        self._prefill = Prefill(clock)  # 001's prefill leases and hints

    async def route(self, run: Run, caller: Caller) -> Served | RouteFailure:
        """Try the requested model's pool, then its fallback chains."""
        req, config = run.req, run.config
        check_pool(req, config.pool(req.model))  # 404: no such model, or not this operation
        result = await self._pool(run, req.model, caller)
        if isinstance(result, Served):
            return result
        failure = RouteFailure(
            primary=result,
            last_fault=result.fault,
            failures=[result],
            last_deployment=result.deployment,
        )
        if req.pin is not None:
            return failure  # a pinned request never falls back
        visited = {req.model}
        queue: deque[tuple[str, int]] = deque(
            (m, 1) for m in self._chain(config, req.model, result)
        )
        while queue and not run.budget.expired(self._clock()):
            model, depth = queue.popleft()
            if model in visited or not config.pool(model):
                continue  # loop detection: each model is tried at most once
            visited.add(model)
            result = await self._pool(run, model, caller)
            if isinstance(result, Served):
                return result
            failure.failures.append(result)
            if result.fault is not None:
                failure.last_fault, failure.last_deployment = result.fault, result.deployment
            if depth < config.router.max_fallback_depth:
                queue.extend((m, depth + 1) for m in self._chain(config, model, result))
        return failure

    async def resume(
        self, run: Run, models: Sequence[str], exclude: frozenset[str], caller: Caller
    ) -> Served | None:
        """Route a continuation (``run.resume``) like a fallback attempt: ``models`` in order,
        prefill-capable deployments only, never ``exclude`` (the deployments that were cut)."""
        for model in models:
            if run.budget.expired(self._clock()):
                break
            result = await self._pool(run, model, caller, exclude)
            if isinstance(result, Served):
                return result
        return None

    def _chain(self, config: GatewayConfig, model: str, failure: PoolFailure) -> list[str]:
        reason = chain_reason(failure)
        return [] if reason is None else config.fallback_chain(model, reason)

    async def _pool(
        self, run: Run, model: str, caller: Caller, skip: frozenset[str] = frozenset()
    ) -> Served | PoolFailure:
        ctx = await open_pool(self._store, run, model, self._clock())
        if not ctx.deployments:
            return PoolFailure()  # a continuation with no prefill-capable deployment here
        pinned = run.req.pin is not None
        small, unfit_pool = unfit(ctx.deployments, run.req.body, run.req.operation, run.calibrated)
        if unfit_pool is not None:
            return unfit_pool  # no window holds it: context_window chain, or the 400, no call
        route = route_request(run, ctx, self._prefill.hints(run.req.caller))
        log = AttemptLog(skip=skip | small)
        waiting = SlotWait(self._clock, run.budget, run.config.router.capacity_wait_seconds)
        while True:
            step = next_step(
                ctx.deployments,
                ctx.snapshot,
                route,
                log,
                ctx.circuit,
                run.budget,
                now=self._clock(),
                rng=self._rng,
                pinned=pinned,
                limits=ctx.limits,
            )
            run.trace.decided(model, step)
            if isinstance(step, Stop):
                if await waiting.waited(step.failure, log.attempts):
                    ctx = await open_pool(self._store, run, model, self._clock())
                    log = log.reopened()
                    continue
                if step.failure.blocked is not None:
                    run.trace.blocked.append(f"{model}:{step.failure.blocked.reason.value}")
                if step.failure.scope is None:  # the failures were the deployments' (and if served)
                    await self._outcomes.counted_late(ctx, run.owner, log.pending())
                return native_refusal(run.req, step.failure, ctx.deployments)
            if isinstance(step, Wait):
                # Our own 429 closed the domain's capacity: honour its Retry-After, then retry.
                await asyncio.sleep(step.seconds)
                continue
            if run.trace.strategy is None and step.pick.strategy is not None:
                run.trace.strategy = step.pick.strategy.value
            result = await self._try(run, ctx, step, log, caller)
            if isinstance(result, Served):
                self._outcomes.count_later(result.ctx, run.owner, log.pending())
                return result
            ctx, log = result

    async def _try(
        self, run: Run, ctx: PoolContext, step: Try, log: AttemptLog, caller: Caller
    ) -> Served | tuple[PoolContext, AttemptLog]:
        """Carry one ``Try`` out: probe lease, backoff, admission, the call."""
        pick, dep = step.pick, step.pick.deployment
        if pick.probe:
            won, standing = await self._outcomes.take_probe(ctx, run.owner, dep)
            ctx = ctx.applied(standing)
            if not won:
                return ctx, log.skipped(dep.id)  # another request owns the probe
        if step.wait > 0:
            await asyncio.sleep(step.wait)
        slot = await take_slot(self._store, dep, ctx.snapshot, run, self._clock(), self._rng)
        if slot is False:
            return await given_back(self._outcomes, ctx, run, step), log.skipped(dep.id, full=True)
        minute = int(self._clock() // 60)
        # The start count (requests +1, in-flight +1, the tokens it reserves). With
        # an rpm or tpm limit it is the conditional admission and must land before
        # the call; without one it cannot be refused, so it runs alongside the
        # upstream call and the critical path keeps one store round trip (the
        # outcome write awaits it).
        limited = dep.rpm_limit is not None or dep.tpm_limit is not None
        # Under a tpm limit, a request without an output limit gets one from the minute's rest.
        used = ctx.snapshot.usage_of(dep.id, minute).tpm_used
        planned = reservation(run.req.body, run.req.operation, dep.tpm_limit, used)
        prefill = self._prefill.lease(run, ctx, dep)  # 001's lease rides the start count
        admission = start_count(self._store, dep, minute, planned.tokens, prefill)
        if limited and not await admission:  # at its rpm/tpm limit: another instance got there
            ctx = await given_back(self._outcomes, ctx, run, step, slot)
            return ctx, log.skipped(dep.id, rate_limited=True)
        log = log.started(dep.id)
        inflight = InFlight(self._store, dep.id, minute, self._clock, run.budget.deadline_at)
        inflight.prefill = prefill  # held with the in-flight count until the first token
        inflight.follow(admission)
        attempt = Attempt(
            dep,
            minute,
            self._clock(),
            pick.probe,
            pick.sticky,
            run.owner,
            admission,
            reserved=planned.tokens,
            inflight=inflight,
            output_limit=planned.output_limit,
            slot=slot,
        )
        result = await self._attempt(run, ctx, attempt, caller, log)
        if isinstance(result, Served):
            return result
        failed, standing = result
        return ctx.applied(standing), log.judged(failed)

    async def _attempt(
        self, run: Run, ctx: PoolContext, attempt: Attempt, caller: Caller, log: AttemptLog
    ) -> Served | tuple[Failed, Standing]:
        dep = attempt.deployment
        config = run.config
        policy = config.policy_for(dep, run.req.operation, run.req.stream)
        timeouts = run.budget.tightened(policy).timeouts(self._clock(), policy)
        record = AttemptRecord(
            ctx.model,
            dep.id,
            0,
            sticky=attempt.sticky,
            probe=attempt.probe,
            continuation=run.resume,
            started_at=attempt.started_at,
        )
        run.trace.attempts.append(record)
        try:
            credential = await self._credentials.resolve(dep.credential)
            secret = credential.get_secret_value() if credential else None
            call, hide_usage, notes = upstream_call(
                run.req, config, dep, attempt.output_limit, secret, timeouts
            )
            record.notes.extend(notes)
            answer = await caller(call, timeouts)
            answer.hide_usage = hide_usage
        except CredentialError as exc:
            # The gateway's failure, not the provider's: neutral for the deployment.
            logger.error("deployment %s: %s", dep.id, exc)
            return await self._failed(ctx, attempt, record, judge(CREDENTIAL_UNAVAILABLE), log)
        except UpstreamFault as exc:
            return await self._failed(ctx, attempt, record, judge(exc.fault), log)
        except BaseException as exc:
            # The client left (cancelled) or the gateway itself broke: no verdict on
            # the upstream, so its circuit, health and binding stay as they are.
            record.error_kind = "abandoned"
            if not isinstance(exc, asyncio.CancelledError):
                record.error_class = "gateway"
            await asyncio.shield(self._outcomes.abandon(attempt))
            raise
        self._prefill.answered(run, ctx, attempt)
        record.latency_ms = int((self._clock() - attempt.started_at) * 1000)
        record.status = answer.response.status if answer.response else 200
        run.trace.served_by = dep.id
        run.trace.served_model = ctx.model
        counted = log.owes(dep.id)
        return Served(answer, ctx, attempt, ctx.model, counted=counted, record=record)

    async def _failed(
        self,
        ctx: PoolContext,
        attempt: Attempt,
        record: AttemptRecord,
        verdict: Verdict,
        log: AttemptLog,
    ) -> tuple[Failed, Standing]:
        fault = verdict.fault
        record.latency_ms = int((self._clock() - attempt.started_at) * 1000)
        record.status = fault.status
        record.error_class = verdict.cls.value
        record.error_kind = fault.kind.value
        dep_id = attempt.deployment.id
        logger.info(
            "attempt failed: deployment=%s class=%s kind=%s status=%s",
            dep_id,
            verdict.cls.value,
            fault.kind.value,
            fault.status,
        )
        snapshot = ctx.snapshot
        if request_shaped(verdict, probe=attempt.probe):  # are others served there? (a read)
            snapshot = await with_usage(self._store, snapshot, attempt.deployment, self._clock())
        failed = attempt_failed(
            snapshot, dep_id, verdict, self._clock(), attempt.started_at, attempt.probe
        )
        # At most one failure per request and deployment counts toward its circuit (one the
        # request may have caused: at the request's end, unless it did; ``request_scope``).
        first = log.counts_failure(dep_id) and not failed.deferred
        standing = await self._outcomes.failure(ctx, attempt, verdict, first=first)
        return failed, standing
