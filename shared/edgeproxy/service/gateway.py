"""One request end to end: routing, the answer, and its outcome writes.

The edge reads the configuration once per request (``config()``) and passes
that same version to ``complete`` / ``open_stream``, so authentication, body
limits and routing all see one configuration.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import ModelNotFound
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.eligibility import pool_status
from edgeproxy.routing.refusal import final_error
from edgeproxy.service.attempts import JsonCaller, StreamCaller
from edgeproxy.service.config_cache import ConfigCache
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.service.idempotency import Leases
from edgeproxy.service.keys import KeyRing
from edgeproxy.service.limits.calibrations import Calibrations
from edgeproxy.service.limits.enforcement import Reservation, reserve_usage
from edgeproxy.service.limits.levels import LevelHold, Levels, settled
from edgeproxy.service.limits.parallel import KeyParallel
from edgeproxy.service.limits.reserve import Admission, counted, released
from edgeproxy.service.limits.slots import KeySlots
from edgeproxy.service.metrics import Metrics
from edgeproxy.service.outcomes import Outcomes
from edgeproxy.service.request import ProxyRequest
from edgeproxy.service.router import Router
from edgeproxy.service.run import JsonAnswer, Run, Served, StreamAnswer
from edgeproxy.service.stream.events import StreamItem
from edgeproxy.service.stream.relay import Relay
from edgeproxy.service.stream.settlement import Deferred
from edgeproxy.service.telemetry import Telemetry
from edgeproxy.service.token_count import TokenCounter
from edgeproxy.service.trace import Trace
from edgeproxy.service.tracing.recording import TracedStream, finish_json, opened
from edgeproxy.service.tracing.span import NoTracer, Tracer
from edgeproxy.service.usage.logged_stream import LoggedStream
from edgeproxy.service.usage.request_log import RequestLog
from edgeproxy.state.store import SnapshotRequest, Store
from edgeproxy.upstream.client import UpstreamClient

logger = logging.getLogger(__name__)


class Gateway:
    """The service: everything a handler needs, built once per process."""

    def __init__(
        self,
        store: Store,
        upstream: UpstreamClient,
        configs: ConfigCache,
        router: Router,
        outcomes: Outcomes,
        *,
        clock: Callable[[], float],
        rng: random.Random,
        telemetry: Telemetry,
        trust_forwarded_for: bool = False,
        max_total_ms: int | None = None,
        aclose: Callable[[], Awaitable[None]] | None = None,
        keys: KeyRing | None = None,
        tokens: TokenCounter | None = None,
        usage_log: RequestLog | None = None,
        tracer: Tracer | None = None,
        key_slots: KeySlots | None = None,
        metrics: Metrics | None = None,
        credentials: CredentialResolver | None = None,
    ) -> None:
        self._store = store
        self._configs = configs
        self._router = router
        self._outcomes = outcomes
        self._clock = clock
        self._telemetry = telemetry
        self._tracer = tracer or NoTracer()
        self._json = JsonCaller(upstream)
        # The upstream client itself (an admin's connection test sends through it).
        self.upstream = upstream
        self._stream = StreamCaller(upstream)
        # Each deployment's prompt calibration per protocol, learned from the counts its
        # answers report.
        self.calibrations = Calibrations()
        self._relay = Relay(
            outcomes,
            clock,
            telemetry,
            resume=lambda run, models, cut: router.resume(run, models, cut, self._stream),
            calibrations=self.calibrations,
        )
        self._aclose = aclose
        self._pending: set[asyncio.Task[None]] = set()  # answers' outcome writes under way
        self.trust_forwarded_for = trust_forwarded_for
        # The platform's ceiling on any request's total deadline (None: the configuration's).
        self.max_total_ms = max_total_ms
        # The client keys (lookup cache, bootstrap admin key, admission).
        self.keys = keys or KeyRing(store, clock)
        # Each key's share of the process's requests in progress.
        self.key_slots = key_slots or KeySlots()
        # Capped keys' requests in flight across every process (``max_parallel_requests``).
        self.key_parallel = KeyParallel(store, clock, rng, max_total_ms)
        # The limits of the teams, organizations and end users above keys.
        self.levels = Levels(store, clock, rng, max_total_ms)
        # Token counts (``/v1/messages/count_tokens``) asked of Anthropic deployments.
        self.tokens = tokens or TokenCounter(upstream, CredentialResolver({}))
        # The request log and its usage aggregates (``service/usage/``).
        self.usage_log = usage_log or RequestLog(None, clock)
        # What ``GET /metrics`` serves (None: EDGEPROXY_METRICS is off).
        self.metrics = metrics
        # The upstream credentials' resolver (``/health/deep`` checks each reference with it).
        self.credentials = credentials
        # Idempotency keys' leases and their stored answers (``service.idempotency``).
        self.leases = Leases(store, clock)

    async def config(self) -> GatewayConfig:
        """The current configuration (cached in process for a short TTL)."""
        return await self._configs.get()

    def cached_config(self) -> GatewayConfig | None:
        """The configuration this process holds, without reading the store (None: not loaded)."""
        return self._configs.cached()

    @property
    def store(self) -> Store:
        """The state store (the admin API edits configuration and circuits through it)."""
        return self._store

    def now(self) -> float:
        """The gateway's clock (epoch seconds)."""
        return self._clock()

    def config_changed(self) -> None:
        """This process wrote the configuration: re-read it on the next request.

        Other processes see the change when their cache TTL runs out.
        """
        self._configs.invalidate()

    async def aclose(self) -> None:
        """Close the clients this gateway owns."""
        if self._aclose is not None:
            await self._aclose()

    def _budget(self, req: ProxyRequest, config: GatewayConfig) -> Budget:
        policies = config.router.execution_policies[req.operation]
        deadline = policies.stream if req.stream else policies.json_
        return Budget.from_deadline(deadline, self._clock(), self.max_total_ms)

    def deadline_s(self, req: ProxyRequest, config: GatewayConfig) -> float:
        """Seconds ``req`` may run in all (its operation's deadline, under the platform's cap)."""
        return self._budget(req, config).total_ms / 1000.0

    def keep(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` to its end, whatever the request that started it does (nothing may
        cancel it: a keyed request's first call, ``api.idempotent``)."""
        return self._keep(work)

    def _run(self, req: ProxyRequest, config: GatewayConfig) -> Run:
        return Run(
            req=req,
            config=config,
            budget=self._budget(req, config),
            trace=Trace(requested_model=req.model),
            owner=f"{req.request_id}:{uuid.uuid4().hex[:8]}",
            calibrated=self.calibrations.view(req.protocol),
        )

    async def admit(self, req: ProxyRequest, config: GatewayConfig) -> Admission:
        """The key's verdict on ``req`` and its first writes (its fleet slot, its rpm count);
        the caller holds the slot until the answer is over and passes this on to
        ``complete`` / ``open_stream``. A refusal raises and leaves no record."""
        now = self._clock()
        return await counted(self._store, self.key_parallel, req, config, self.calibrations, now)

    def cached(
        self, req: ProxyRequest, config: GatewayConfig, deployment: str | None, saved_usd: float
    ) -> Callable[[], Awaitable[None]]:
        """Log an answer the response cache served (``api.cached``): the request was
        admitted (its rpm counted), no upstream was called and nothing is spent. The
        record's write starts now; the answer awaits what this returns once it is sent."""
        self._telemetry.count("CacheHits")
        run = self._run(req, config)
        entry = self.usage_log.begin(run)

        async def write() -> None:
            if entry is not None:
                await self.usage_log.write(entry, entry.hit(deployment, saved_usd))

        writing = self._keep(write())

        async def after() -> None:
            await writing

        return after

    async def complete(
        self, req: ProxyRequest, config: GatewayConfig, admission: Admission
    ) -> JsonAnswer:
        """A JSON request ``admission`` let through: the serving upstream's answer, or an
        ``EdgeproxyError``."""
        run, plan, now = self._run(req, config), admission.plan, admission.now
        self._telemetry.count("Requests")
        entry = self.usage_log.begin(run)
        held: Reservation | None = None
        above: LevelHold | None = None
        span = opened(self._tracer, req, config, run.budget.started_at)
        try:
            held = await reserve_usage(self._store, plan, req.key, now)
            above = await self.levels.reserve(req, config, self.calibrations, now)
            result = await self._router.route(run, self._json)
            self._log(run)
            if entry is not None:
                entry.routed()
            if not isinstance(result, Served):
                raise final_error(result, now=self._clock())
        except BaseException as exc:
            finish_json(self._tracer, span, run.trace, self._clock(), error=exc)
            ended = [self.usage_log.failed(entry, exc)]
            if held is not None:
                ended.append(held.release(self._outcomes.key_usage))
            if above is not None:
                ended.append(above.settle(req.tally))
            await asyncio.gather(*ended)
            raise
        response = result.answer.response
        assert response is not None
        finish_json(self._tracer, span, run.trace, self._clock(), response=response)
        body = response.body
        if req.want_routing:
            body = {**body, "unified_routing": run.trace.metadata(reasons=req.want_reasons)}

        self.calibrations.observe(
            result.attempt.deployment.id, req.protocol, req.body, response.usage.prompt_tokens
        )
        success = self._outcomes.success(
            result.ctx,
            result.attempt,
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            cache_read_tokens=response.usage.cache_read_tokens,
            cache_write_tokens=response.usage.cache_write_tokens,
            latency_s=response.elapsed_s,
            rate_limits=response.rate_limits,
        )

        async def recorded() -> None:
            writes = [success.written(), self.usage_log.answered(entry, result)]
            if above is not None:  # the answer's usage is in the tally (``success`` counted it)
                writes.append(above.settle(req.tally))  # beside the outcome: no round trip more
            await asyncio.gather(*writes)
            if held is not None:  # after the actual usage, on the same counter path
                await held.release(self._outcomes.key_usage)

        # Started now, so a client that leaves while the binding lands loses only its answer.
        ending = self._keep(recorded())
        # The binding this success earns lands before the answer is released: the
        # caller's next turn, on any process, routes on it.
        await success.bound()

        async def after() -> None:
            await ending

        headers = {**response.headers, "x-edgeproxy-deployment": result.attempt.deployment.id}
        return JsonAnswer(body, headers, after)

    async def open_stream(
        self, req: ProxyRequest, config: GatewayConfig, admission: Admission
    ) -> StreamAnswer:
        """A streamed request ``admission`` let through; errors before the stream opens raise
        with their real status.

        The answer's body is typed events (``service/stream/events.py``) for the
        surface to serialise.
        """
        run, plan, now = self._run(req, config), admission.plan, admission.now
        self._telemetry.count("Requests")
        hold = run.config.router.stream_header_hold_ms / 1000.0
        entry = self.usage_log.begin(run)
        span = opened(self._tracer, req, config, run.budget.started_at)

        async def route() -> Served:
            result = await self._router.route(run, self._stream)
            self._log(run)
            if entry is not None:
                entry.routed()
            if not isinstance(result, Served):
                raise final_error(result, now=self._clock())
            return result

        after = Deferred()
        held: Reservation | None = None
        above: LevelHold | None = None
        try:
            held = await reserve_usage(self._store, plan, req.key, now)
            above = await self.levels.reserve(req, config, self.calibrations, now)
            stream = await self._relay.open(run, route(), hold, after)
        except BaseException as exc:
            finish_json(self._tracer, span, run.trace, self._clock(), error=exc)
            ended = [self.usage_log.failed(entry, exc)]
            if held is not None:
                ended.append(held.release(self._outcomes.key_usage))
            if above is not None:
                ended.append(above.settle(req.tally))
            await asyncio.gather(*ended)
            raise
        body: AsyncIterator[StreamItem] = (
            stream if entry is None else LoggedStream(stream, entry, self.usage_log)
        )
        if span is not None:
            body = TracedStream(body, self._tracer, span, run.trace, self._clock)
        over = released(after, held, self._outcomes)
        return StreamAnswer(body, stream.headers, after=settled(over, above, req.tally))

    async def deployment_status(self, model: str, config: GatewayConfig) -> dict[str, Any]:
        """Each deployment's availability (the admin view; reveals deployment ids only)."""
        deployments = config.pool(model)
        if not deployments:
            raise ModelNotFound(f"The model `{model}` does not exist.", param="model")
        now = self._clock()
        snapshot = await self._store.read_pool(SnapshotRequest.of(model, deployments, now))
        statuses = pool_status(deployments, snapshot, now, config.quota_max_age_seconds)
        return {
            "model": model,
            "deployments": [
                {
                    "id": s.deployment_id,
                    "status": s.status.value,
                    "retry_after_ms": int(s.retry_after * 1000),
                    "cause": s.cause.value if s.cause else None,
                    "limit": s.limit.value if s.limit else None,  # rpm, tpm, capacity, quota
                }
                for s in statuses
            ],
        }

    def _keep(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """``work`` as a task this gateway holds until it ends (nothing may cancel it)."""
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    def _log(self, run: Run) -> None:
        if not logger.isEnabledFor(logging.INFO):
            return  # the trace's dict is built only for someone who reads it
        logger.info(
            "routed model=%s served_by=%s attempts=%d route=%s",
            run.req.model,
            run.trace.served_by,
            len(run.trace.attempts),
            run.trace.reasons(),
            extra={"unified_routing": run.trace.metadata(), "request_id": run.req.request_id},
        )
