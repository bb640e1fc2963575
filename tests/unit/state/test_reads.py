"""``SnapshotRequest.of`` reads the usage buckets only where routing looks at them."""

from __future__ import annotations

import random

import pytest

from edgeproxy.config.router import Strategy
from edgeproxy.routing.ordering.registry import REGISTRY
from edgeproxy.routing.ordering.strategies import (
    COUNTER_FREE,
    StrategyInputs,
    order,
    reads_counters,
)
from edgeproxy.routing.snapshot import PoolSnapshot, Usage
from edgeproxy.state.store import SnapshotRequest
from tests.unit.routing.builders import dep

NOW = 1_700_000_000.0
POOL = [dep("a"), dep("b", rpm_limit=10), dep("c", tpm_limit=1000)]


def test_without_strategies_every_bucket_is_read() -> None:
    request = SnapshotRequest.of("gpt", POOL, NOW)
    assert request.usage_ids is None
    assert request.previous_minute


@pytest.mark.parametrize("strategy", sorted(COUNTER_FREE))
def test_a_counter_free_strategy_reads_only_the_limited_deployments_bucket(
    strategy: Strategy,
) -> None:
    assert not reads_counters(strategy)
    request = SnapshotRequest.of("gpt", POOL, NOW, counting=set())
    assert list(request.usage_ids or ()) == ["b", "c"]
    assert not request.previous_minute


@pytest.mark.parametrize("strategy", sorted(set(Strategy) - COUNTER_FREE))
def test_a_counting_strategy_reads_both_buckets_of_every_deployment(strategy: Strategy) -> None:
    # Judged by the caller with the tier's parameters: simple-shuffle counts once its
    # rule has a threshold (it has none by default), and then its read must count too.
    request = SnapshotRequest.of("gpt", POOL, NOW, counting={strategy})
    assert request.usage_ids is None
    assert request.previous_minute


def test_every_strategy_is_classified() -> None:
    assert {spec.name for spec in REGISTRY} == set(Strategy)
    assert set(Strategy) > COUNTER_FREE


@pytest.mark.parametrize("strategy", sorted(COUNTER_FREE))
def test_a_counter_free_strategy_orders_alike_whatever_the_counters(strategy: Strategy) -> None:
    # The reason the buckets may go unread: the order does not change with them.
    minute = int(NOW // 60)
    pool = [dep(name, weight=w) for name, w in (("a", 1), ("b", 2), ("c", 3), ("d", 0))]
    busy = PoolSnapshot(
        usage={
            d.id: [Usage(d.id, m, requests=n * 7, inflight=n) for m in (minute - 1, minute)]
            for n, d in enumerate(pool)
        }
    )
    for seed in range(20):
        orders = [
            order(strategy, pool, StrategyInputs(s, minute, "caller"), random.Random(seed))
            for s in (PoolSnapshot(), busy)
        ]
        assert [d.id for d in orders[0]] == [d.id for d in orders[1]]
