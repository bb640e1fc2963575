"""What an attempt's outcome writes: the pure half of ``service/outcomes.py``.

Given the state this request read and the verdict (or the success), the
effects say which counters move, how the circuit changes, whether the
sticky binding is renewed or dropped, whether the failure domain is
throttled and whether credential rejections are counted or cleared. The
service only carries them out, as conditional writes; a lost circuit race
re-applies ``circuit`` to the stored winner.

    effects = on_failure(facts, pool, verdict, now=now, rng=rng, first=True)
    effects.counters   # {"failures": 1, "failures_transient": 1}
    effects.circuit    # CircuitWrite(current, new, decide), or None: no circuit write
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from edgeproxy.config.router import CircuitSettings
from edgeproxy.routing import affinity, circuit, counters
from edgeproxy.routing.faults import FailureClass
from edgeproxy.routing.snapshot import Binding, BindingKey, Circuit, PoolSnapshot, Second
from edgeproxy.routing.verdict import Verdict

CREDENTIAL_REJECTIONS = frozenset({401, 403})  # counted for /health/deep until a success
CircuitChange = Callable[[Circuit], Circuit | None]


@dataclass(frozen=True, slots=True)
class AttemptFacts:
    """What the effects need to know about the attempt."""

    deployment_id: str
    started_at: float
    probe: bool  # the attempt held the half-open probe lease
    sticky: bool  # it was routed by a sticky binding
    owner: str  # the request that made it (probe leases and bindings name it)
    reserved: int = 0  # tokens reserved at its start against a tpm limit


@dataclass(frozen=True, slots=True)
class PoolFacts:
    """What the request knows of the pool: its snapshot and its settings."""

    snapshot: PoolSnapshot
    binding_key: BindingKey | None
    idle_ttl_seconds: float
    circuit: CircuitSettings


@dataclass(frozen=True, slots=True)
class CircuitWrite:
    """A circuit change: ``new`` over ``current`` as read; ``decide`` re-applied on a lost race."""

    current: Circuit
    new: Circuit
    decide: CircuitChange


def _circuit_write(current: Circuit, decide: CircuitChange) -> CircuitWrite | None:
    new = decide(current)
    return None if new is None else CircuitWrite(current, new, decide)


@dataclass(frozen=True, slots=True)
class Effects:
    """Every write one outcome makes; the service carries them out alongside each other."""

    reconcile: int  # added to the attempt's tpm reservation
    counters: Mapping[str, float] = field(default_factory=dict)  # ADDed to the usage bucket
    # When the upstream finished, and the answer's sample: the health job's EWMA
    # replays answers second by second in this order.
    finished: tuple[float, Second] | None = None
    circuit: CircuitWrite | None = None  # None: the circuit is not written
    renewed: Binding | None = None  # the binding to put (over the one read)
    drop_binding: bool = False  # delete the binding (only while it names this deployment)
    throttled_until: float | None = None  # the failure domain's capacity, when throttled
    count_rejection: bool = False
    clear_rejections: bool = False


def on_success(
    attempt: AttemptFacts,
    pool: PoolFacts,
    *,
    prompt_tokens: int,
    completion_tokens: int,
    latency_s: float,
    now: float,
    anomalies: Collection[str] = (),
) -> Effects:
    """A success: count it, close a probed circuit, renew the binding, clear rejections.

    ``anomalies``: a complete stream's irregularities (``routing.stream.completeness``),
    counted per minute for the status page.
    """
    rated = completion_tokens > 0 and latency_s > 0
    used = prompt_tokens + completion_tokens
    per_s = completion_tokens / latency_s if rated else 0.0
    tallies: dict[str, float] = {
        "successes": 1,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "latency_ms_sum": int(latency_s * 1000),
        # Throughput averages only the successes that reported tokens.
        "output_tokens_per_s_sum": per_s,
        "throughput_samples": int(rated),
        "sticky_hits": 1 if attempt.sticky else 0,
        **counters.latency_counter(latency_s * 1000),
        **counters.anomaly_counter(anomalies),
    }

    def close(c: Circuit) -> Circuit | None:
        return circuit.on_success(c, now, was_probe=attempt.probe, owner=attempt.owner)

    dep = attempt.deployment_id
    renewed = None
    if pool.binding_key is not None:
        renewed = affinity.after_success(
            pool.binding_key,
            pool.snapshot.binding,
            dep,
            now,
            pool.idle_ttl_seconds,
            pool.snapshot.pool_generation,
        )
    return Effects(
        # No usage reported: the estimate stands.
        reconcile=used - attempt.reserved if used else 0,
        counters=tallies,
        finished=(
            attempt.started_at + latency_s,
            Second(1, int(latency_s * 1000), int(rated), per_s),
        ),
        circuit=_circuit_write(pool.snapshot.circuit(dep), close),
        renewed=renewed,
        # Only when the read showed rejections: a healthy success stays write-free.
        clear_rejections=pool.snapshot.health_of(dep).credential_rejections > 0,
    )


def _failing(
    attempt: AttemptFacts, pool: PoolFacts, verdict: Verdict, now: float, rng: random.Random
) -> CircuitChange:
    """The circuit change of a failure judged ``verdict`` at ``now``."""

    def fail(c: Circuit) -> Circuit | None:
        changed = circuit.on_failure(
            c,
            verdict.cls,
            now,
            pool.circuit,
            rng,
            was_probe=attempt.probe,
            attempt_started_at=attempt.started_at,
            owner=attempt.owner,
        )
        if changed is None and attempt.probe:
            # A health-neutral answer proves nothing: hand the probe to the next request.
            changed = circuit.release_probe(c, attempt.owner)
        return changed

    return fail


def counted_later(
    attempt: AttemptFacts, pool: PoolFacts, verdict: Verdict, at: float, rng: random.Random
) -> CircuitWrite | None:
    """The circuit write of a failure at ``at`` whose count waited for the request's end
    (``verdict.defers``) and that did not follow the request: counted as it would have been."""
    return _circuit_write(
        pool.snapshot.circuit(attempt.deployment_id), _failing(attempt, pool, verdict, at, rng)
    )


def on_failure(
    attempt: AttemptFacts,
    pool: PoolFacts,
    verdict: Verdict,
    *,
    now: float,
    rng: random.Random,
    first: bool,
) -> Effects:
    """A failure judged ``verdict``: its counters, circuit, throttle, binding and rejections.

    ``first``: the first failure of this deployment in this request (only that
    one counts toward the circuit, unless the attempt was the probe).
    """
    fail = _failing(attempt, pool, verdict, now, rng)
    dep = attempt.deployment_id
    # Decided once here (it draws the reopen jitter from ``rng``), again only on a lost race.
    write = _circuit_write(pool.snapshot.circuit(dep), fail) if first or attempt.probe else None
    throttled = verdict.cls is FailureClass.THROTTLE
    binding = pool.snapshot.binding
    return Effects(
        reconcile=-attempt.reserved,  # a failed call used no reservation
        # Throttles and request errors are health-neutral.
        counters={
            "failures": int(verdict.lowers_health),
            **counters.failure_counter(verdict.cls),
        },
        circuit=write,
        throttled_until=(
            circuit.throttle_until(now, verdict.fault.retry_after, pool.circuit)
            if throttled
            else None
        ),
        drop_binding=(
            pool.binding_key is not None
            and binding is not None
            and binding.deployment_id == dep
            and verdict.clears_binding
        ),
        count_rejection=(
            verdict.cls is FailureClass.CONFIGURATION
            and verdict.fault.status in CREDENTIAL_REJECTIONS
        ),
    )
