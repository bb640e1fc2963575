"""Ordering strategies: rank the eligible deployments of one priority tier.

``order(strategy, candidates, inputs, rng)`` returns the candidates best
first; a strategy may drop some (weighted-random strategies and health-aware
never pick a ``weight: 0`` deployment). Every input is fleet-wide shared state
from the snapshot, so every instance ranks alike; no strategy keeps counters
of its own. Each ranker is registered in ``routing.ordering.registry`` with its
parameter model; ``inputs.params`` carries the validated parameters of the
tier being ordered.

Power-of-two-choices (001): of two independent weighted draws the first is
kept, unless it has at least ``intervene_inflight`` attempts in flight and
the second has fewer; below that threshold the weights decide alone (they
encode cost and preference, not only capacity). ``power-of-two-choices``
orders by that rule alone, ``simple-shuffle`` applies it to its weighted
draws, and the metric strategies apply it to deployments whose metric ties.
Metric-ranked strategies fall back to a weighted-random order when no
candidate has a usable value yet.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import groupby

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.strategies import LoadAware, Strategy, StrategyParams, WeightedDrawParams
from edgeproxy.routing.ordering.inputs import StrategyInputs as StrategyInputs
from edgeproxy.routing.ordering.prices import PriceBasis, comparable_price, price_basis
from edgeproxy.routing.ordering.registry import REGISTRY
from edgeproxy.routing.prefill.choice import prefill_first


def weighted_draw(pool: Sequence[Deployment], rng: random.Random) -> Deployment:
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
        pick = weighted_draw(pool, rng)
        ordered.append(pick)
        pool.remove(pick)
    if not skip_zero:
        rng.shuffle(zero)
        ordered.extend(zero)
    return ordered


def two_choices(
    group: Sequence[Deployment], inputs: StrategyInputs, rng: random.Random
) -> list[Deployment]:
    """Successive power-of-two-choices picks without replacement (``inputs.intervene()``)."""
    pool = list(group)
    ordered: list[Deployment] = []
    intervene = inputs.intervene()
    inflight = inputs.snapshot.inflight_of
    while pool:
        pick = weighted_draw(pool, rng)
        if intervene is not None and len(pool) > 1:
            other = weighted_draw(pool, rng)
            busy = inflight(pick.id)
            if busy >= intervene and inflight(other.id) < busy:
                if inputs.notes is not None:
                    inputs.notes.remark(other.id, f"p2c: {busy} in flight on {pick.id}")
                pick = other
        ordered.append(pick)
        pool.remove(pick)
    return ordered


def ranked(
    candidates: Sequence[Deployment],
    metric: Callable[[Deployment], float | None],
    inputs: StrategyInputs,
    rng: random.Random,
) -> list[Deployment]:
    """Lowest metric first; ties by power-of-two-choices; deployments without a value last."""
    known = [(value, d) for d in candidates if (value := metric(d)) is not None]
    unknown = [d for d in candidates if metric(d) is None]
    if inputs.notes is not None:
        inputs.notes.metric(known, unknown)
    if not known:
        return weighted_order(candidates, rng, skip_zero=False)
    known.sort(key=lambda pair: pair[0])
    ordered: list[Deployment] = []
    for _, ties in groupby(known, key=lambda pair: pair[0]):
        ordered.extend(two_choices([d for _, d in ties], inputs, rng))
    return ordered + weighted_order(unknown, rng, skip_zero=False)


@REGISTRY.register(Strategy.WEIGHTED_RANDOM, "A weighted random draw over weight", counters=False)
def _weighted(c: Sequence[Deployment], _: StrategyInputs, rng: random.Random) -> list[Deployment]:
    return weighted_order(c, rng)


@REGISTRY.register(
    Strategy.SIMPLE_SHUFFLE,
    "A weighted random draw over weight; the less busy of two draws past intervene_inflight;"
    " with prefill, the prefill-aware choice",
    counters=False,  # only its power-of-two-choices rule reads them (reads_counters)
)
def _shuffle(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    pool = [d for d in c if d.weight > 0]
    prefill = i.params.prefill if isinstance(i.params, WeightedDrawParams) else None
    if prefill is None or not pool:
        return two_choices(pool, i, rng)
    # 001's prefill rule picks the first; the rest (fallbacks) keep the weighted order.
    first = prefill_first(pool, i, prefill, rng, weighted_draw)
    return [first, *two_choices([d for d in pool if d is not first], i, rng)]


@REGISTRY.register(
    Strategy.POWER_OF_TWO_CHOICES,
    "Of two weighted draws, the one with fewer attempts in flight",
    counters=False,
)
def _two_choices(
    c: Sequence[Deployment], i: StrategyInputs, rng: random.Random
) -> list[Deployment]:
    return two_choices([d for d in c if d.weight > 0], i, rng)


@REGISTRY.register(
    Strategy.LEAST_BUSY, "The fewest attempts in flight fleet-wide right now", counters=True
)
def _least_busy(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    return ranked(c, lambda d: i.snapshot.inflight_of(d.id), i, rng)


@REGISTRY.register(
    Strategy.USAGE_BASED_RPM, "The fewest requests in the current minute", counters=True
)
def _rpm(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    return ranked(c, lambda d: i.snapshot.usage_of(d.id, i.minute).requests, i, rng)


@REGISTRY.register(
    Strategy.USAGE_BASED_TPM, "The fewest tokens in the current minute", counters=True
)
def _tpm(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    return ranked(c, lambda d: i.snapshot.usage_of(d.id, i.minute).tokens, i, rng)


@REGISTRY.register(
    Strategy.LATENCY_BASED, "The lowest EWMA completion latency (health job)", counters=True
)
def _latency(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    return ranked(c, lambda d: i.snapshot.health_of(d.id).ewma_latency_ms, i, rng)


@REGISTRY.register(
    Strategy.THROUGHPUT_BASED,
    "The highest EWMA output tokens per second (health job)",
    counters=True,
)
def _throughput(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    def metric(d: Deployment) -> float | None:
        value = i.snapshot.health_of(d.id).ewma_tokens_per_s
        return None if value is None else -value

    return ranked(c, metric, i, rng)


@REGISTRY.register(
    Strategy.PRICE_BASED,
    "The lowest price on one basis: token (input plus output, or input only) or search unit",
    counters=True,
)
def _price(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    bases = {price_basis(d) for d in c}
    if len(bases) > 1 or PriceBasis.UNKNOWN in bases:
        return weighted_order(c, rng)  # an unknown price or mixed bases: do not pretend
    return ranked(c, comparable_price, i, rng)


@REGISTRY.register(
    Strategy.HEALTH_AWARE, "The highest success rate times weight (10-minute window)", counters=True
)
def _health(c: Sequence[Deployment], i: StrategyInputs, rng: random.Random) -> list[Deployment]:
    weighted = [d for d in c if d.weight > 0]
    if not any(d.id in i.snapshot.health for d in weighted):
        return weighted_order(weighted, rng)
    return ranked(weighted, lambda d: -i.snapshot.health_of(d.id).score * d.weight, i, rng)


def _unit_hash(caller: str, deployment_id: str) -> float:
    digest = hashlib.sha256(f"{caller}\x00{deployment_id}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64  # strictly inside (0, 1)


@REGISTRY.register(
    Strategy.HASH_AFFINITY,
    "A stable weighted preference per caller and protocol (rendezvous hash)",
    counters=False,
)
def _hash_affinity(
    c: Sequence[Deployment], i: StrategyInputs, _: random.Random
) -> list[Deployment]:
    # Weighted rendezvous hashing: each (caller, deployment) pair gets an
    # independent score, so adding or removing a deployment only moves the
    # callers whose top choice was that deployment.
    def key(d: Deployment) -> tuple[bool, float]:
        h = _unit_hash(f"{i.caller}\x00{i.protocol}" if i.protocol else i.caller, d.id)
        score = d.weight / -math.log(h) if d.weight > 0 else h
        if i.notes is not None:
            i.notes.score(d.id, -score)  # ranked highest first: lower-first like the others
        return (d.weight > 0, score)

    return sorted(c, key=key, reverse=True)


@REGISTRY.register(Strategy.WEIGHT_PRIORITY, "Fixed order by weight, highest first", counters=False)
def _weight_priority(
    c: Sequence[Deployment], _: StrategyInputs, __: random.Random
) -> list[Deployment]:
    return sorted(c, key=lambda d: -d.weight)  # stable: equal weights keep declaration order


@REGISTRY.register(
    Strategy.WEIGHTED_ROUND_ROBIN,
    "The furthest behind its weighted share this minute",
    counters=True,
)
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


REGISTRY.check()

# Strategies that order by weights, hashes or declaration alone, whatever their
# parameters: no usage counters.
COUNTER_FREE = frozenset(
    spec.name for spec in REGISTRY if not spec.counters and not issubclass(spec.params, LoadAware)
)


def reads_counters(strategy: Strategy, params: StrategyParams | None = None) -> bool:
    """Whether ``strategy`` with ``params`` (None: its defaults) reads the usage buckets.

    Its metric may (``least-busy``...), or its power-of-two-choices rule (the
    in-flight counts, both minutes, every candidate) unless that is off.
    """
    spec = REGISTRY.spec(strategy)
    if spec.counters:
        return True
    params = spec.params() if params is None else params
    if isinstance(params, WeightedDrawParams) and params.prefill is not None:
        return True  # the prefill leases live in the usage buckets
    return isinstance(params, LoadAware) and params.intervene_inflight is not None


def order(
    strategy: Strategy,
    candidates: Sequence[Deployment],
    inputs: StrategyInputs,
    rng: random.Random,
) -> list[Deployment]:
    """``candidates`` ordered best first by ``strategy`` (some may be dropped).

    ``inputs.params`` must be ``strategy``'s parameter model (None: its defaults).
    """
    spec = REGISTRY.spec(strategy)
    if inputs.params is None:
        inputs = replace(inputs, params=spec.params())
    elif not isinstance(inputs.params, spec.params):
        raise TypeError(f"{strategy.value} takes {spec.params.__name__}")
    return spec.rank(candidates, inputs, rng)
