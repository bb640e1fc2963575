"""Route one request across a pool and its fallback chain.

Per pool: one state read (BatchGetItem), then for each attempt: decide in
memory, take the probe lease if the circuit is half-open, count the start
with a conditional ``ADD`` (rpm limit), call the upstream, record the
outcome. A success returns at once; its outcome writes are left to the
caller (after the response, off the critical path). When the pool is spent
the fallback chain for the failure's reason runs the whole selection again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import FallbackReason, GatewayConfig
from edgeproxy.errors import CredentialError, ModelNotFound, RequestError, UpstreamFault
from edgeproxy.routing.backoff import MAX_RETRY_AFTER_SECONDS, retry_delay
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.failures import classify, fallback_reason, tries_another
from edgeproxy.routing.faults import FailureClass, Fault, FaultKind
from edgeproxy.routing.selection import Blocked, BlockReason, Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import BindingKey
from edgeproxy.service.attempts import Answer, Caller, with_stream_usage
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.service.outcomes import Attempt, Outcomes, PoolContext
from edgeproxy.service.request import ProxyRequest
from edgeproxy.service.trace import AttemptRecord, Trace
from edgeproxy.state.store import SnapshotRequest, Store
from edgeproxy.upstream.call import UpstreamCall

logger = logging.getLogger(__name__)

CAPACITY_MARGIN_S = 0.01  # wake just after the capacity circuit ends, not just before


@dataclass(slots=True)
class Served:
    """The attempt that answered, with what its outcome write needs."""

    answer: Answer
    ctx: PoolContext
    attempt: Attempt
    model: str
    counted: bool = False  # this request already counted a failure of this deployment


@dataclass(slots=True)
class PoolFailure:
    """Why a pool gave no answer: the last upstream fault, or what blocked it."""

    fault: Fault | None = None
    blocked: Blocked | None = None
    rate_limited: bool = False  # admission refused by rpm limits


@dataclass(slots=True)
class RouteFailure:
    """Every pool tried failed; ``last_fault`` is the last upstream answer, if any."""

    primary: PoolFailure
    last_fault: Fault | None
    failures: list[PoolFailure] = field(default_factory=list)


@dataclass(slots=True)
class Run:
    """One request's routing state across pools."""

    req: ProxyRequest
    config: GatewayConfig
    budget: Budget
    trace: Trace
    owner: str


class Router:
    """Routes requests; one per process, shared by every request."""

    def __init__(
        self,
        store: Store,
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

    async def route(self, run: Run, caller: Caller) -> Served | RouteFailure:
        """Try the requested model's pool, then its fallback chains."""
        req, config = run.req, run.config
        if not config.pool(req.model):
            raise ModelNotFound(
                f"The model `{req.model}` does not exist or you do not have access to it.",
                param="model",
            )
        result = await self._pool(run, req.model, caller)
        if isinstance(result, Served):
            return result
        failure = RouteFailure(primary=result, last_fault=result.fault, failures=[result])
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
            failure.last_fault = result.fault or failure.last_fault
            if depth < config.router.max_fallback_depth:
                queue.extend((m, depth + 1) for m in self._chain(config, model, result))
        return failure

    def _chain(self, config: GatewayConfig, model: str, failure: PoolFailure) -> list[str]:
        reason = FallbackReason.GENERAL
        if failure.fault is not None and failure.blocked is None:
            found = fallback_reason(failure.fault)
            if found is None:
                return []  # a rejected request ends here: another model would reject it too
            reason = found
        return config.fallback_chain(model, reason)

    async def _pool(self, run: Run, model: str, caller: Caller) -> Served | PoolFailure:
        req, config = run.req, run.config
        deployments = config.pool(model)
        if req.pin is not None:
            deployments = [d for d in deployments if d.id == req.pin]
            if not deployments:
                raise RequestError(
                    f"X-Route-Pin names no deployment of `{model}`.",
                    param="x-route-pin",
                    code="invalid_pin",
                )
        now = self._clock()
        minute = int(now // 60)
        sticky = config.sticky_for(model)
        key = (
            BindingKey(req.caller, model, req.protocol)
            if sticky.enabled and req.pin is None
            else None
        )
        snapshot = await self._store.read_pool(
            SnapshotRequest(
                pool=model,
                deployment_ids=[d.id for d in deployments],
                domains=sorted({d.domain for d in deployments}),
                minute=minute,
                binding=key,
            )
        )
        ctx = PoolContext(model, deployments, snapshot, key, sticky, config.router.circuit)
        route = RouteRequest(
            operation=req.operation,
            modalities=req.modalities,
            caller=req.caller,
            strategy=functools.partial(config.strategy_for, model),
            sticky=key is not None,
        )
        tried: dict[str, int] = {}
        skip: set[str] = set()
        counted: set[str] = set()
        retry_after: dict[str, float] = {}
        failed_at: dict[str, float] = {}
        failure = PoolFailure()
        attempts = 0
        budget = run.budget
        while True:
            now = self._clock()
            if budget.expired(now) or attempts >= budget.max_attempts:
                return failure
            pick = self._pick(run, ctx, route, now, tried, skip)
            if isinstance(pick, Blocked):
                hold = _throttle_wait(pick, failure)
                if hold is not None and budget.allows_attempt(now, attempts, hold):
                    # Our own 429 closed the domain's capacity: honour its Retry-After, then retry.
                    await asyncio.sleep(hold)
                    continue
                failure.blocked = pick
                run.trace.blocked.append(f"{model}:{pick.reason.value}")
                return failure
            dep = pick.deployment
            if run.trace.strategy is None and pick.strategy is not None:
                run.trace.strategy = pick.strategy.value
            if pick.probe and not await self._outcomes.take_probe(ctx, run.owner, dep):
                skip.add(dep.id)  # another request owns the probe; use other candidates
                continue
            wait = retry_delay(
                pick.tries,
                config.router.circuit,
                self._rng,
                provider_retry_after=retry_after.get(dep.id),
            )
            # The backoff runs from the failure: time already spent waiting counts toward it.
            wait = max(0.0, wait - (now - failed_at.get(dep.id, now)))
            if not budget.allows_attempt(now, attempts, wait):
                if pick.probe:
                    await self._outcomes.release_probe(ctx, run.owner, dep)
                return failure
            if wait > 0:
                await asyncio.sleep(wait)
            minute = int(self._clock() // 60)
            admission = self._admit(dep, minute)
            if dep.rpm_limit is not None and not await admission:
                skip.add(dep.id)  # at its rpm limit (another instance got there first)
                failure.rate_limited = True
                if pick.probe:
                    # An unused lease would hold off every other prober until it expires.
                    await self._outcomes.release_probe(ctx, run.owner, dep)
                continue
            attempts += 1
            tried[dep.id] = tried.get(dep.id, 0) + 1
            attempt = Attempt(
                dep, minute, self._clock(), pick.probe, pick.sticky, run.owner, admission
            )
            result = await self._attempt(run, ctx, attempt, caller, counted)
            if isinstance(result, Served):
                return result
            failure.fault = result
            failed_at[dep.id] = self._clock()
            cls = classify(result)
            if not tries_another(cls):
                return failure  # another deployment would reject it the same way
            if cls in (FailureClass.CONFIGURATION, FailureClass.INCOMPATIBLE):
                skip.add(dep.id)
            if result.retry_after is not None:
                retry_after[dep.id] = result.retry_after

    def _admit(self, dep: Deployment, minute: int) -> asyncio.Future[bool]:
        """Count the attempt's start (requests +1, in-flight +1) in bucket ``minute``.

        With an rpm limit the count is a conditional write the caller must
        await before calling the upstream. Without one it is a plain ``ADD``
        that cannot be refused, so it runs alongside the upstream call and the
        critical path keeps a single store round trip (the state read); the
        outcome write awaits it first.
        """
        return asyncio.ensure_future(
            self._store.admit(dep.id, minute, dep.rpm_limit, minute * 60.0 + 3600)
        )

    def _pick(
        self,
        run: Run,
        ctx: PoolContext,
        route: RouteRequest,
        now: float,
        tried: dict[str, int],
        skip: set[str],
    ) -> Pick | Blocked:
        if run.req.pin is not None:
            # An admin pin bypasses selection and circuits (a debugging tool).
            dep = ctx.deployments[0]
            if dep.id in skip:
                # Ruled out (configuration fault, incompatible, rpm limit): retrying cannot help.
                return Blocked(BlockReason.EXHAUSTED)
            return Pick(dep, dep.priority, None, tries=tried.get(dep.id, 0))
        return next_deployment(
            ctx.deployments, ctx.snapshot, route, now, self._rng, tried=tried, skip=skip
        )

    async def _attempt(
        self, run: Run, ctx: PoolContext, attempt: Attempt, caller: Caller, counted: set[str]
    ) -> Served | Fault:
        dep = attempt.deployment
        config = run.config
        policy = config.policy_for(dep, run.req.operation, run.req.stream)
        timeouts = run.budget.tightened(policy).timeouts(self._clock(), policy)
        record = AttemptRecord(ctx.model, dep.id, 0, sticky=attempt.sticky, probe=attempt.probe)
        run.trace.attempts.append(record)
        try:
            credential = await self._credentials.resolve(dep.credential)
            body, hide_usage = with_stream_usage(run.req.body, dep, run.req.stream)
            call = UpstreamCall(
                deployment=dep,
                operation=run.req.operation,
                body=body,
                stream=run.req.stream,
                credential=credential.get_secret_value() if credential else None,
                response_timeout_s=timeouts.response,
                idle_timeout_s=timeouts.idle,
            )
            answer = await caller(call, timeouts)
            answer.hide_usage = hide_usage
        except CredentialError as exc:
            logger.error("deployment %s: %s", dep.id, exc)
            fault = Fault(
                FaultKind.HTTP,
                "upstream credential unavailable",
                status=401,
                type="authentication_error",
                code="credential_unavailable",
            )
            return await self._failed(run, ctx, attempt, record, fault, counted)
        except UpstreamFault as exc:
            return await self._failed(run, ctx, attempt, record, exc.fault, counted)
        except BaseException:
            await asyncio.shield(self._outcomes.abandon(attempt))
            raise
        record.latency_ms = int((self._clock() - attempt.started_at) * 1000)
        record.status = answer.response.status if answer.response else 200
        run.trace.served_by = dep.id
        run.trace.served_model = ctx.model
        return Served(answer, ctx, attempt, ctx.model, counted=dep.id in counted)

    async def _failed(
        self,
        run: Run,
        ctx: PoolContext,
        attempt: Attempt,
        record: AttemptRecord,
        fault: Fault,
        counted: set[str],
    ) -> Fault:
        cls = classify(fault)
        record.latency_ms = int((self._clock() - attempt.started_at) * 1000)
        record.status = fault.status
        record.error_class = cls.value
        record.error_kind = fault.kind.value
        dep_id = attempt.deployment.id
        first = dep_id not in counted
        counted.add(dep_id)  # at most one failure per request and deployment counts
        logger.info(
            "attempt failed: deployment=%s class=%s kind=%s status=%s",
            dep_id,
            cls.value,
            fault.kind.value,
            fault.status,
        )
        await self._outcomes.failure(ctx, attempt, fault, cls, count_for_circuit=first)
        return fault


def _throttle_wait(blocked: Blocked, failure: PoolFailure) -> float | None:
    """How long to wait out a capacity circuit this request's own 429 opened, if so."""
    fault = failure.fault
    if (
        blocked.reason is not BlockReason.RATE_LIMITED
        or blocked.retry_after is None
        or fault is None
        or classify(fault) is not FailureClass.THROTTLE
    ):
        return None
    return min(blocked.retry_after, MAX_RETRY_AFTER_SECONDS) + CAPACITY_MARGIN_S


__all__ = ["PoolFailure", "RouteFailure", "Router", "Run", "Served"]
