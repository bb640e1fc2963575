"""Turn one attempt's outcome into conditional writes on the shared state.

Each write is decided by the pure core from the state this request read; a
lost race comes back as the stored winner, and the decision is re-made from
it (a bounded number of times) rather than forced. Every write returns the
``Standing`` it left in the store; the router applies it to its own view of
the pool, so the rest of the request routes on it without another read.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.errors import StoreError
from edgeproxy.routing import affinity, circuit, counters
from edgeproxy.routing.faults import FailureClass
from edgeproxy.routing.snapshot import Capacity, Circuit
from edgeproxy.routing.verdict import Verdict
from edgeproxy.service.admission import Attempt, bucket_expiry
from edgeproxy.service.headers_quota import quota_writes
from edgeproxy.service.key_usage import record_key_usage
from edgeproxy.service.pool import NOTHING, PoolContext, Standing
from edgeproxy.service.telemetry import Telemetry
from edgeproxy.state.store import RequestStore, UsageDelta
from edgeproxy.upstream.headers import RateLimitInfo

logger = logging.getLogger(__name__)

MAX_CIRCUIT_RACES = 3
CREDENTIAL_REJECTIONS = frozenset({401, 403})  # counted for /health/deep until a success


class Outcomes:
    """Records attempt outcomes: usage counters, circuits, capacity, bindings."""

    def __init__(
        self,
        store: RequestStore,
        clock: Callable[[], float],
        rng: random.Random,
        telemetry: Telemetry,
    ) -> None:
        self._store = store
        self._clock = clock
        self._rng = rng
        self._telemetry = telemetry

    async def key_usage(
        self, key_id: str, minute: int | None, tokens: int, spend_usd: float, expires_at: float
    ) -> None:
        """Count a key's usage on the path answers are counted on (a release: negative)."""
        await self._store.record_key_usage(key_id, minute, tokens, spend_usd, expires_at)

    async def success(
        self,
        ctx: PoolContext,
        attempt: Attempt,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        latency_s: float,
        rate_limits: RateLimitInfo | None = None,
    ) -> Standing:
        """Count a success; close a probed circuit; renew the binding; add the key's spend.

        ``rate_limits``: the answer's rate-limit headers; recorded as the
        credential's quota when they say something new (``routing.quota``).
        """
        self._telemetry.count(
            "Attempts", outcome="success", deployment=attempt.deployment.id, model=ctx.model
        )
        await attempt.admitted()
        now = self._clock()
        dep = attempt.deployment
        rated = completion_tokens > 0 and latency_s > 0
        used = prompt_tokens + completion_tokens
        deltas = await attempt.ended(
            used - attempt.reserved if used else 0,  # no usage reported: the estimate stands
            successes=1,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_ms_sum=int(latency_s * 1000),
            # Throughput averages only the successes that reported tokens.
            output_tokens_per_s_sum=completion_tokens / latency_s if rated else 0.0,
            throughput_samples=int(rated),
            sticky_hits=1 if attempt.sticky else 0,
            **counters.latency_counter(latency_s * 1000),
        )
        writes: list[Coroutine[Any, Any, Standing]] = self._usage(deltas)
        writes += [_nothing(w) for w in quota_writes(self._store, ctx, dep, rate_limits, now)]
        if ctx.key is not None:
            # The key's tokens and spend (at this deployment's prices), alongside.
            spent = record_key_usage(
                self._store, ctx.key, dep, attempt.minute, prompt_tokens, completion_tokens
            )
            writes.append(_nothing(spent))

        def close(c: Circuit) -> Circuit | None:
            return circuit.on_success(c, now, was_probe=attempt.probe, owner=attempt.owner)

        current = ctx.snapshot.circuit(dep.id)
        closed = close(current)
        if closed is not None:
            writes.append(self._write_circuit(current, closed, close))
        if ctx.binding_key is not None:
            renewed = affinity.after_success(
                ctx.binding_key,
                ctx.snapshot.binding,
                dep.id,
                now,
                ctx.sticky.idle_ttl_seconds,
                ctx.snapshot.pool_generation,
            )
            if renewed is not None:
                writes.append(_nothing(self._store.put_binding(renewed, ctx.snapshot.binding)))
        if ctx.snapshot.health_of(dep.id).credential_rejections > 0:
            # Written only when the read showed rejections: a healthy success stays write-free.
            writes.append(_nothing(self._store.clear_rejections(dep.id)))
        return await _all(writes)

    async def failure(
        self, ctx: PoolContext, attempt: Attempt, verdict: Verdict, *, first: bool
    ) -> Standing:
        """Count a failure and apply its effect on the circuit, capacity and binding.

        ``first``: the first failure of this deployment in this request (only
        that one counts toward the circuit, unless the attempt was the probe).
        """
        now = self._clock()
        dep = attempt.deployment
        # Throttles and request errors are health-neutral; a failed call used no reservation.
        deltas = await attempt.ended(
            -attempt.reserved,
            failures=int(verdict.lowers_health),
            **counters.failure_counter(verdict.cls),
        )
        writes: list[Coroutine[Any, Any, Standing]] = self._usage(deltas)
        self._telemetry.count("Attempts", outcome="failure", deployment=dep.id, model=ctx.model)
        await attempt.admitted()
        self._telemetry.count(
            "AttemptFailures", deployment=dep.id, model=ctx.model, **{"class": verdict.cls.value}
        )

        def fail(c: Circuit) -> Circuit | None:
            changed = circuit.on_failure(
                c,
                verdict.cls,
                now,
                ctx.circuit,
                self._rng,
                was_probe=attempt.probe,
                attempt_started_at=attempt.started_at,
                owner=attempt.owner,
            )
            if changed is None and attempt.probe:
                # A health-neutral answer proves nothing: hand the probe to the next request.
                changed = circuit.release_probe(c, attempt.owner)
            return changed

        current = ctx.snapshot.circuit(dep.id)
        changed = fail(current) if first or attempt.probe else None
        if changed is not None:
            writes.append(self._write_circuit(current, changed, fail))
        if (
            verdict.cls is FailureClass.CONFIGURATION
            and verdict.fault.status in CREDENTIAL_REJECTIONS
        ):
            writes.append(_nothing(self._store.count_rejection(dep.id)))
        standing = NOTHING
        if verdict.cls is FailureClass.THROTTLE:
            until = circuit.throttle_until(now, verdict.fault.retry_after, ctx.circuit)
            standing += Standing(capacities=(Capacity(dep.domain, until),))
            writes.append(_nothing(self._store.extend_capacity(dep.domain, until)))
        binding = ctx.snapshot.binding
        if (
            ctx.binding_key is not None
            and binding is not None
            and binding.deployment_id == dep.id
            and verdict.clears_binding
        ):
            standing += Standing(binding_dropped=True)
            writes.append(_nothing(self._store.delete_binding(ctx.binding_key, dep.id)))
        return standing + await _all(writes)

    async def take_probe(
        self, ctx: PoolContext, attempt_owner: str, dep: Deployment
    ) -> tuple[bool, Standing]:
        """Take the half-open probe lease with a conditional write; False if another won."""
        current = ctx.snapshot.circuit(dep.id)
        leased = circuit.take_probe(current, attempt_owner, self._clock(), ctx.circuit)
        if leased is None:
            return False, NOTHING
        winner = await self._store.write_circuit(leased, current.version)
        return winner is None, Standing(circuits=(winner or leased,))

    async def release_probe(
        self, ctx: PoolContext, attempt_owner: str, dep: Deployment
    ) -> Standing:
        """Give back a probe lease this request took but will not use."""
        current = ctx.snapshot.circuit(dep.id)
        released = circuit.release_probe(current, attempt_owner)
        if released is None:
            return NOTHING
        winner = await self._store.write_circuit(released, current.version)
        return Standing(circuits=(winner or released,))

    async def abandon(self, attempt: Attempt) -> None:
        """An attempt that ended with no verdict (client went away): release its in-flight count."""
        self._telemetry.count("Attempts", outcome="abandoned", deployment=attempt.deployment.id)
        await attempt.admitted()
        # What an abandoned call used is unknown: its reservation stands.
        await _all(self._usage(await attempt.ended(0)))

    async def _write_circuit(
        self, current: Circuit, new: Circuit, decide: Callable[[Circuit], Circuit | None]
    ) -> Standing:
        """Write ``new``; on a lost race, re-apply ``decide`` to the winner (bounded)."""
        for _ in range(MAX_CIRCUIT_RACES):
            winner = await self._store.write_circuit(new, current.version)
            if winner is None:
                if new.state != current.state:
                    self._telemetry.count(
                        "CircuitTransitions", deployment=new.deployment_id, to_state=new.state.value
                    )
                    logger.info(
                        "circuit %s: %s -> %s",
                        new.deployment_id,
                        current.state.value,
                        new.state.value,
                    )
                return Standing(circuits=(new,))
            current = winner
            redo = decide(current)
            if redo is None:
                break
            new = redo
        return Standing(circuits=(current,))

    def _usage(self, deltas: list[UsageDelta]) -> list[Coroutine[Any, Any, Standing]]:
        return [_nothing(self._store.record(d, bucket_expiry(d.minute))) for d in deltas]


async def settle(write: Awaitable[object]) -> None:
    """Run an outcome write whose failure must not reach the client (its answer is out).

    A store failure here costs accuracy of counters for a moment, never the
    answer; it is logged, not raised.
    """
    try:
        await write
    except StoreError as exc:
        logger.warning("could not record an attempt's outcome: %s", type(exc).__name__)


async def _nothing(write: Awaitable[Any]) -> Standing:
    """A write whose result does not change what the router routes on."""
    await write
    return NOTHING


async def _all(writes: list[Coroutine[Any, Any, Standing]]) -> Standing:
    """Run independent writes concurrently (one round trip of latency, not N)."""
    if len(writes) == 1:
        return await writes[0]
    standing = NOTHING
    for one in await asyncio.gather(*writes):
        standing += one
    return standing
