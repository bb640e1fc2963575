"""Ordering strategies: rank the eligible deployments of one priority tier.

``order(strategy, candidates, inputs, rng)`` returns the candidates best
first; a strategy may drop some (weighted-random strategies and health-aware
never pick a ``weight: 0`` deployment). Every input is fleet-wide shared state
from the snapshot, so every instance ranks alike; no strategy keeps counters
of its own.

Metric-ranked strategies fall back to a weighted-random order when no
candidate has a usable value yet, and break ties with the power-of-two-choices
rule: two weighted draws, keep the one with fewer requests in flight.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.router import Strategy
from edgeproxy.routing.snapshot import PoolSnapshot


@dataclass(frozen=True, slots=True)
class StrategyInputs:
    """The shared state strategies rank by."""

    snapshot: PoolSnapshot
    minute: int
    caller: str = ""


Ranker = Callable[[Sequence[Deployment], StrategyInputs, random.Random], list[Deployment]]


def _draw(pool: Sequence[Deployment], rng: random.Random) -> Deployment:
    """One weighted draw; uniform when every weight is zero."""
    total = sum(d.weight for d in pool)
    if total <= 0:
        return pool[rng.randrange(len(pool))]
    point = rng.uniform(0.0, total)
    for dep in pool:
        point -= dep.weight
        if point < 0 and dep.weight > 0:
            return dep
    return next(d for d in reversed(pool) if d.weight > 0)  # float rounding at the top end


def weighted_order(
    candidates: Sequence[Deployment], rng: random.Random, *, skip_zero: bool = True
) -> list[Deployment]:
    """Successive weighted draws without replacement.

    Zero-weight deployments are dropped (``skip_zero``) or put last in random order.
    """
    pool = [d for d in candidates if d.weight > 0]
    zero = [d for d in candidates if d.weight <= 0]
    ordered: list[Deployment] = []
    while pool:
        pick = _draw(pool, rng)
        ordered.append(pick)
        pool.remove(pick)
    if not skip_zero:
        rng.shuffle(zero)
        ordered.extend(zero)
    return ordered


def two_choices(
    group: Sequence[Deployment], inputs: StrategyInputs, rng: random.Random
) -> list[Deployment]:
    """Order equally ranked deployments: of two weighted draws, the less busy goes first."""
    pool = list(group)
    ordered: list[Deployment] = []
    while pool:
        first, second = _draw(pool, rng), _draw(pool, rng)
        inflight = inputs.snapshot.inflight_of
        pick = second if inflight(second.id) < inflight(first.id) else first
        ordered.append(pick)
        pool.remove(pick)
    return ordered


def ranked(
    candidates: Sequence[Deployment],
    metric: Callable[[Deployment], float | None],
    inputs: StrategyInputs,
    rng: random.Random,
) -> list[Deployment]:
    """Lowest metric first; ties by two choices; deployments without a value go last."""
    known = [(value, d) for d in candidates if (value := metric(d)) is not None]
    unknown = [d for d in candidates if metric(d) is None]
    if not known:
        return weighted_order(candidates, rng, skip_zero=False)
    known.sort(key=lambda pair: pair[0])
    ordered: list[Deployment] = []
    for _, ties in groupby(known, key=lambda pair: pair[0]):
        ordered.extend(two_choices([d for _, d in ties], inputs, rng))
    return ordered + weighted_order(unknown, rng, skip_zero=False)


def _weighted(c: Sequence[Deployment], _: StrategyInputs, rng: random.Random) -> list[Deployment]:
    return weighted_order(c, rng)


def _least_busy(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    return ranked(c, lambda d: i.snapshot.inflight_of(d.id), i, rng)


def _rpm(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    return ranked(c, lambda d: i.snapshot.usage_of(d.id, i.minute).requests, i, rng)


def _tpm(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    return ranked(c, lambda d: i.snapshot.usage_of(d.id, i.minute).tokens, i, rng)


def _latency(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    return ranked(c, lambda d: i.snapshot.health_of(d.id).ewma_latency_ms, i, rng)


def _throughput(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    def metric(d: Deployment) -> float | None:
        value = i.snapshot.health_of(d.id).ewma_tokens_per_s
        return None if value is None else -value

    return ranked(c, metric, i, rng)


def _price(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    prices = [(d.input_price_per_mtok, d.output_price_per_mtok) for d in c]
    if any(p is None for pair in prices for p in pair):
        # One unknown price makes any numeric comparison false: do not pretend.
        return weighted_order(c, rng)
    return ranked(
        c, lambda d: (d.input_price_per_mtok or 0.0) + (d.output_price_per_mtok or 0.0), i, rng
    )


def _health(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    weighted = [d for d in c if d.weight > 0]
    if not any(d.id in i.snapshot.health for d in weighted):
        return weighted_order(weighted, rng)
    return ranked(weighted, lambda d: -i.snapshot.health_of(d.id).score * d.weight, i, rng)


def _unit_hash(caller: str, deployment_id: str) -> float:
    digest = hashlib.sha256(f"{caller}\x00{deployment_id}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64  # strictly inside (0, 1)


def _hash_affinity(
    c: Sequence[Deployment], i: StrategyInputs, _: random.Random
) -> list[Deployment]:
    # Weighted rendezvous hashing: each (caller, deployment) pair gets an
    # independent score, so adding or removing a deployment only moves the
    # callers whose top choice was that deployment.
    def key(d: Deployment) -> tuple[bool, float]:
        h = _unit_hash(i.caller, d.id)
        return (d.weight > 0, d.weight / -math.log(h) if d.weight > 0 else h)

    return sorted(c, key=key, reverse=True)


def _weight_priority(
    c: Sequence[Deployment], _: StrategyInputs, __: random.Random
) -> list[Deployment]:
    return sorted(c, key=lambda d: -d.weight)  # stable: equal weights keep declaration order


def _round_robin(
    c: Sequence[Deployment], i: StrategyInputs, rng: random.Random
) -> list[Deployment]:
    # Derived from the fleet-wide minute counters instead of a per-process
    # cursor: the deployment furthest behind its weighted share goes next.
    def metric(d: Deployment) -> float:
        requests = i.snapshot.usage_of(d.id, i.minute).requests
        return requests / d.weight if d.weight > 0 else math.inf

    weighted = [d for d in c if d.weight > 0]
    zero = sorted((d for d in c if d.weight <= 0), key=metric)
    return ranked(weighted, metric, i, rng) + zero


RANKERS: dict[Strategy, Ranker] = {
    Strategy.SIMPLE_SHUFFLE: _weighted,
    Strategy.WEIGHTED_RANDOM: _weighted,
    Strategy.LEAST_BUSY: _least_busy,
    Strategy.USAGE_BASED_RPM: _rpm,
    Strategy.USAGE_BASED_TPM: _tpm,
    Strategy.LATENCY_BASED: _latency,
    Strategy.THROUGHPUT_BASED: _throughput,
    Strategy.PRICE_BASED: _price,
    Strategy.HEALTH_AWARE: _health,
    Strategy.HASH_AFFINITY: _hash_affinity,
    Strategy.WEIGHT_PRIORITY: _weight_priority,
    Strategy.WEIGHTED_ROUND_ROBIN: _round_robin,
}


# Strategies that order by weights, hashes or declaration alone: no usage counters.
# Every other strategy ranks (ties by two choices on in-flight counts, which sum
# the last two minute buckets) or counts this minute's requests.
COUNTER_FREE = frozenset(
    {
        Strategy.SIMPLE_SHUFFLE,
        Strategy.WEIGHTED_RANDOM,
        Strategy.HASH_AFFINITY,
        Strategy.WEIGHT_PRIORITY,
    }
)


def reads_counters(strategy: Strategy) -> bool:
    """Whether ``strategy`` orders by the usage buckets (both minutes, every candidate)."""
    return strategy not in COUNTER_FREE


def order(
    strategy: Strategy,
    candidates: Sequence[Deployment],
    inputs: StrategyInputs,
    rng: random.Random,
) -> list[Deployment]:
    """``candidates`` ordered best first by ``strategy`` (some may be dropped)."""
    return RANKERS[strategy](candidates, inputs, rng)
