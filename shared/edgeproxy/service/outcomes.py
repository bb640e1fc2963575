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
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.errors import StoreError
from edgeproxy.routing import circuit
from edgeproxy.routing import effects as effects_of
from edgeproxy.routing.access import cost_usd
from edgeproxy.routing.effects import AttemptFacts, CircuitWrite, Effects, PoolFacts
from edgeproxy.routing.snapshot import Capacity
from edgeproxy.routing.verdict import Failed, Verdict
from edgeproxy.service.admission import Attempt, bucket_expiry
from edgeproxy.service.headers_quota import quota_writes
from edgeproxy.service.limits.usage import record_key_usage
from edgeproxy.service.pool import NOTHING, PoolContext, Standing
from edgeproxy.service.success import Pending, Success
from edgeproxy.service.telemetry import Telemetry
from edgeproxy.state.store import CounterStore, OutcomeStore, UsageDelta
from edgeproxy.upstream.headers import RateLimitInfo

logger = logging.getLogger(__name__)

MAX_CIRCUIT_RACES = 3


class Outcomes:
    """Records attempt outcomes: usage counters, circuits, capacity, bindings."""

    def __init__(
        self,
        store: OutcomeStore,
        clock: Callable[[], float],
        rng: random.Random,
        telemetry: Telemetry,
        *,
        counters: CounterStore | None = None,
    ) -> None:
        """``counters``: where counters and key spend go if not ``store`` (a coalescing buffer)."""
        self._store = store
        self._counters: CounterStore = store if counters is None else counters
        self._clock = clock
        self._rng = rng
        self._telemetry = telemetry
        self._writes = Pending(telemetry)  # successes' writes under way

    async def key_usage(
        self, key_id: str, minute: int | None, tokens: int, spend_usd: float, expires_at: float
    ) -> None:
        """Count a key's usage on the path answers are counted on (a release: negative).

        The same path as ``success``'s actual spend: a coalescing buffer flushes
        one batch at a time, so the release never lands before the actual does
        (straight to the store, it could: the spend read 0 between the two, and an
        over-budget key was admitted into what looked like an empty budget).
        """
        await self._counters.record_key_usage(key_id, minute, tokens, spend_usd, expires_at)

    def success(
        self,
        ctx: PoolContext,
        attempt: Attempt,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        latency_s: float,
        rate_limits: RateLimitInfo | None = None,
        anomalies: tuple[str, ...] = (),
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> Success:
        """Start a success's writes: its counters, a probed circuit's close, the binding, the
        key's spend. Returns them under way (``Success``); none waits for another.

        The binding write (the one this success earns, or a failover's move to
        this deployment) starts at once: the caller releases the answer after
        ``Success.bound()``, so the caller's next turn, on any process, reads it.
        ``rate_limits``: the answer's rate-limit headers (the credential's quota when they
        say something new, ``routing.quota``); ``anomalies``: a stream's, counted per minute.
        """
        effects = effects_of.on_success(
            _facts(attempt),
            _pool(ctx),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=latency_s,
            now=self._clock(),
            anomalies=anomalies,
        )
        binding = self._binding_writes(ctx, attempt.deployment, effects)
        tokens = (prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens)
        if ctx.tally is not None:  # what the levels above the key settle with, counted now
            ctx.tally.tokens += prompt_tokens + completion_tokens
            ctx.tally.spend_usd += cost_usd(attempt.deployment, *tokens)
        rest = self._counted(ctx, attempt, effects, tokens, rate_limits)
        return Success(
            self._writes.start(_all(binding), "binding") if binding else None,
            self._writes.start(rest, "outcome"),
        )

    async def _counted(
        self,
        ctx: PoolContext,
        attempt: Attempt,
        effects: Effects,
        tokens: tuple[int, int, int, int],
        rate_limits: RateLimitInfo | None,
    ) -> Standing:
        """A success's writes beside its binding: counters, quota, key spend, circuit."""
        dep = attempt.deployment
        self._telemetry.count("Attempts", outcome="success", deployment=dep.id, model=ctx.model)
        await attempt.admitted()
        writes = self._usage(
            await attempt.ended(effects.reconcile, effects.finished, **effects.counters)
        )
        now = self._clock()
        writes += [_nothing(w) for w in quota_writes(self._store, ctx, dep, rate_limits, now)]
        if ctx.key is not None:
            # The key's tokens and spend (at this deployment's prices), alongside.
            spent = record_key_usage(self._counters, ctx.key, dep, attempt.minute, *tokens)
            writes.append(_nothing(spent))
        return await _all(writes + self._standing_writes(ctx, dep, effects))

    async def failure(
        self, ctx: PoolContext, attempt: Attempt, verdict: Verdict, *, first: bool
    ) -> Standing:
        """Count a failure and apply its effect on the circuit, capacity and binding.

        ``first``: the first failure of this deployment in this request (only
        that one counts toward the circuit, unless the attempt was the probe).
        """
        dep = attempt.deployment
        effects = effects_of.on_failure(
            _facts(attempt), _pool(ctx), verdict, now=self._clock(), rng=self._rng, first=first
        )
        writes = self._usage(await attempt.ended(effects.reconcile, **effects.counters))
        self._telemetry.count("Attempts", outcome="failure", deployment=dep.id, model=ctx.model)
        await attempt.admitted()
        self._telemetry.count(
            "AttemptFailures", deployment=dep.id, model=ctx.model, **{"class": verdict.cls.value}
        )
        standing = NOTHING
        if effects.throttled_until is not None:
            standing += Standing(capacities=(Capacity(dep.domain, effects.throttled_until),))
        if effects.drop_binding:
            standing += Standing(binding_dropped=True)
        writes += self._standing_writes(ctx, dep, effects)
        return standing + await _all(writes + self._binding_writes(ctx, dep, effects))

    async def counted_late(
        self, ctx: PoolContext, owner: str, failures: Sequence[Failed]
    ) -> Standing:
        """Count the deferred ``failures`` toward their circuits: the request ended and its
        failures did not follow it (``routing.verdict.request_scope`` said None)."""
        writes: list[Coroutine[Any, Any, Standing]] = []
        for one in failures:
            facts = AttemptFacts(one.deployment_id, one.started_at, False, False, owner, 0)
            write = effects_of.counted_later(facts, _pool(ctx), one.verdict, one.at, self._rng)
            if write is not None:
                writes.append(self._write_circuit(write))
        return await _all(writes) if writes else NOTHING

    def count_later(self, ctx: PoolContext, owner: str, failures: Sequence[Failed]) -> None:
        """``counted_late`` beside a success's answer (the request was served)."""
        if failures:
            self._writes.start(self.counted_late(ctx, owner, failures), "deferred failure")

    def _standing_writes(
        self, ctx: PoolContext, dep: Deployment, effects: Effects
    ) -> list[Coroutine[Any, Any, Standing]]:
        """The writes of ``effects`` beyond the counters and the binding."""
        writes: list[Coroutine[Any, Any, Standing]] = []
        if effects.circuit is not None:
            writes.append(self._write_circuit(effects.circuit))
        if effects.count_rejection:
            writes.append(_nothing(self._store.count_rejection(dep.id)))
        if effects.throttled_until is not None:
            writes.append(
                _nothing(self._store.extend_capacity(dep.domain, effects.throttled_until))
            )
        if effects.clear_rejections:
            writes.append(_nothing(self._store.clear_rejections(dep.id)))
        return writes

    def _binding_writes(
        self, ctx: PoolContext, dep: Deployment, effects: Effects
    ) -> list[Coroutine[Any, Any, Standing]]:
        """The binding's write of ``effects``: a put (renewal, creation, a move), a drop, or none
        (a success on its valid binding, not near renewal, writes nothing)."""
        writes: list[Coroutine[Any, Any, Standing]] = []
        if effects.renewed is not None:
            writes.append(_nothing(self._store.put_binding(effects.renewed, ctx.snapshot.binding)))
        if effects.drop_binding and ctx.binding_key is not None:
            writes.append(_nothing(self._store.delete_binding(ctx.binding_key, dep.id)))
        return writes

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

    async def _write_circuit(self, write: CircuitWrite) -> Standing:
        """Write ``write.new``; on a lost race, re-apply its ``decide`` to the winner (bounded)."""
        current, new, decide = write.current, write.new, write.decide
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
        return [_nothing(self._counters.record(d, bucket_expiry(d.minute))) for d in deltas]


def _facts(attempt: Attempt) -> AttemptFacts:
    return AttemptFacts(
        deployment_id=attempt.deployment.id,
        started_at=attempt.started_at,
        probe=attempt.probe,
        sticky=attempt.sticky,
        owner=attempt.owner,
        reserved=attempt.reserved,
    )


def _pool(ctx: PoolContext) -> PoolFacts:
    return PoolFacts(ctx.snapshot, ctx.binding_key, ctx.sticky.idle_ttl_seconds, ctx.circuit)


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
