"""Each strategy's ranking; random ones are checked statistically with a seeded rng."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.router import Strategy
from edgeproxy.routing.ordering.strategies import StrategyInputs, order, weighted_order
from edgeproxy.routing.snapshot import Health, PoolSnapshot, Usage

from .builders import dep

MINUTE = 1000


def inputs(snapshot: PoolSnapshot | None = None, caller: str = "") -> StrategyInputs:
    return StrategyInputs(snapshot or PoolSnapshot(), MINUTE, caller)


def first_counts(
    strategy: Strategy, deps: Sequence[Deployment], snap: StrategyInputs, n: int = 4000
) -> Counter[str]:
    rng = random.Random(1234)
    return Counter(order(strategy, deps, snap, rng)[0].id for _ in range(n))


@pytest.mark.parametrize("strategy", [Strategy.SIMPLE_SHUFFLE, Strategy.WEIGHTED_RANDOM])
def test_weighted_draw_follows_weights_and_never_picks_weight_zero(strategy: Strategy) -> None:
    deps = [dep("a", weight=3), dep("b", weight=1), dep("z", weight=0)]
    counts = first_counts(strategy, deps, inputs())
    assert counts["a"] / 4000 == pytest.approx(0.75, abs=0.05)
    assert counts["b"] / 4000 == pytest.approx(0.25, abs=0.05)
    assert counts["z"] == 0
    assert "z" not in [d.id for d in order(strategy, deps, inputs(), random.Random(1))]


def test_weighted_order_can_keep_zero_weights_last() -> None:
    deps = [dep("z", weight=0), dep("a"), dep("b")]
    ordered = weighted_order(deps, random.Random(5), skip_zero=False)
    assert [d.id for d in ordered][-1] == "z"
    assert len(ordered) == 3


def test_least_busy_ranks_by_inflight_and_ignores_weight() -> None:
    deps = [dep("a", weight=5), dep("b", weight=0), dep("c")]
    snap = PoolSnapshot(
        usage={
            "a": [Usage("a", MINUTE - 1, inflight=2), Usage("a", MINUTE, inflight=3)],
            "b": [Usage("b", MINUTE, inflight=1)],
            "c": [Usage("c", MINUTE, inflight=4)],
        }
    )
    assert [d.id for d in order(Strategy.LEAST_BUSY, deps, inputs(snap), random.Random(0))] == [
        "b",
        "c",
        "a",
    ]


def test_usage_based_rpm_and_tpm_read_the_current_minute_only() -> None:
    deps = [dep("a"), dep("b")]
    snap = PoolSnapshot(
        usage={
            "a": [
                Usage("a", MINUTE - 1, requests=0),
                Usage("a", MINUTE, requests=9, prompt_tokens=10),
            ],
            "b": [
                Usage("b", MINUTE - 1, requests=500),
                Usage("b", MINUTE, requests=10, prompt_tokens=5, completion_tokens=1),
            ],
        }
    )
    rng = random.Random(0)
    assert order(Strategy.USAGE_BASED_RPM, deps, inputs(snap), rng)[0].id == "a"
    assert order(Strategy.USAGE_BASED_TPM, deps, inputs(snap), rng)[0].id == "b"


@pytest.mark.parametrize(("busy", "idle_share"), [(5, 0.5), (8, 0.75), (50, 0.75)])
def test_ties_use_two_choices_toward_the_less_busy_past_the_threshold(
    busy: int, idle_share: float
) -> None:
    deps = [dep("busy"), dep("idle")]
    snap = PoolSnapshot(
        usage={
            "busy": [Usage("busy", MINUTE, requests=4, inflight=busy)],
            "idle": [Usage("idle", MINUTE, requests=4, inflight=0)],
        }
    )
    counts = first_counts(Strategy.USAGE_BASED_RPM, deps, inputs(snap))
    # Below intervene_inflight (8) the first draw stands: 1/2 each. From it on,
    # "busy" wins only when both draws are "busy" (1/4).
    assert counts["idle"] / 4000 == pytest.approx(idle_share, abs=0.05)


def test_latency_based_lowest_first_unknown_last() -> None:
    deps = [dep("slow"), dep("fresh"), dep("fast")]
    snap = PoolSnapshot(
        health={
            "slow": Health("slow", ewma_latency_ms=900.0),
            "fast": Health("fast", ewma_latency_ms=120.0),
        }
    )
    got = order(Strategy.LATENCY_BASED, deps, inputs(snap), random.Random(0))
    assert [d.id for d in got] == ["fast", "slow", "fresh"]


def test_throughput_based_highest_first() -> None:
    deps = [dep("a"), dep("b")]
    snap = PoolSnapshot(
        health={"a": Health("a", ewma_tokens_per_s=40.0), "b": Health("b", ewma_tokens_per_s=95.0)}
    )
    assert order(Strategy.THROUGHPUT_BASED, deps, inputs(snap), random.Random(0))[0].id == "b"


@pytest.mark.parametrize(
    "strategy", [Strategy.LATENCY_BASED, Strategy.THROUGHPUT_BASED, Strategy.HEALTH_AWARE]
)
def test_metric_strategies_fall_back_to_weighted_random_without_data(strategy: Strategy) -> None:
    deps = [dep("a", weight=3), dep("b", weight=1)]
    counts = first_counts(strategy, deps, inputs())
    assert counts["a"] / 4000 == pytest.approx(0.75, abs=0.05)


def test_price_based_lowest_total_rate() -> None:
    deps = [
        dep("pricey", input_price_per_mtok=5, output_price_per_mtok=15),
        dep("cheap", input_price_per_mtok=2, output_price_per_mtok=8),
    ]
    assert order(Strategy.PRICE_BASED, deps, inputs(), random.Random(0))[0].id == "cheap"


def test_price_based_with_an_unknown_price_falls_back_to_weighted() -> None:
    deps = [
        dep("cheap", input_price_per_mtok=0.1, output_price_per_mtok=0.1, weight=1),
        dep("unknown", weight=1),
    ]
    counts = first_counts(Strategy.PRICE_BASED, deps, inputs())
    assert counts["unknown"] / 4000 == pytest.approx(0.5, abs=0.05)


def test_price_based_ranks_search_unit_prices_when_every_candidate_declares_them() -> None:
    # 000's reranking basis: cents per search unit, exact when the whole tier shares it.
    deps = [
        dep("pricey", search_unit_cents=0.4, weight=5),
        dep("cheap", search_unit_cents=0.1),
        dep("middle", search_unit_cents=0.2, weight=5),
    ]
    for seed in range(20):
        got = [d.id for d in order(Strategy.PRICE_BASED, deps, inputs(), random.Random(seed))]
        assert got == ["cheap", "middle", "pricey"]  # weights do not outrank a lower price


@pytest.mark.parametrize(
    "odd_one",
    [
        {"input_price_per_mtok": 0.001, "output_price_per_mtok": 0.001},  # token billing
        {"input_price_per_mtok": 0.001},  # input-token billing
        {"search_unit_cents": 0.001, "input_price_per_mtok": 0.001},  # both bases at once
        {},  # an unknown price
    ],
    ids=["tokens", "input-tokens", "both-bases", "unknown"],
)
def test_price_based_with_mixed_bases_falls_back_to_weighted(odd_one: dict[str, float]) -> None:
    # A search-unit price and a token price are no numeric comparison: 0.001 would win on
    # the number alone, so a fair split shows that nothing was compared.
    deps = [dep("units", search_unit_cents=0.5, weight=1), dep("odd", weight=1, **odd_one)]
    counts = first_counts(Strategy.PRICE_BASED, deps, inputs())
    assert counts["odd"] / 4000 == pytest.approx(0.5, abs=0.05)
    assert counts["units"] / 4000 == pytest.approx(0.5, abs=0.05)


def test_a_search_unit_price_is_a_deployment_field() -> None:
    assert dep("r", search_unit_cents=0.25).search_unit_cents == 0.25
    with pytest.raises(ValueError, match="search_unit_cents"):
        dep("r", search_unit_cents=-1)


def test_health_aware_ranks_score_times_weight_and_skips_weight_zero() -> None:
    deps = [dep("a", weight=1), dep("b", weight=2), dep("z", weight=0), dep("new", weight=1)]
    snap = PoolSnapshot(
        health={
            "a": Health("a", score=0.9),
            "b": Health("b", score=0.6),
            "z": Health("z", score=1.0),
        }
    )
    got = [d.id for d in order(Strategy.HEALTH_AWARE, deps, inputs(snap), random.Random(0))]
    assert got == ["b", "a", "new"]  # 1.2, 0.9, neutral 0.5


def test_hash_affinity_is_stable_per_caller_and_weighted_across_callers() -> None:
    deps = [dep("a", weight=3), dep("b", weight=1)]
    rng = random.Random(0)
    for caller in ("key:1", "ip:10.0.0.1"):
        picks = {
            order(Strategy.HASH_AFFINITY, deps, inputs(caller=caller), rng)[0].id for _ in range(20)
        }
        assert len(picks) == 1
    counts = Counter(
        order(Strategy.HASH_AFFINITY, deps, inputs(caller=f"c{i}"), rng)[0].id for i in range(4000)
    )
    assert counts["a"] / 4000 == pytest.approx(0.75, abs=0.05)


def test_hash_affinity_moves_only_the_affected_callers() -> None:
    rng = random.Random(0)
    base = [dep("a"), dep("b"), dep("c")]
    callers = [f"c{i}" for i in range(1000)]

    def top(deps: list[Deployment], caller: str) -> str:
        return order(Strategy.HASH_AFFINITY, deps, inputs(caller=caller), rng)[0].id

    before = {c: top(base, c) for c in callers}
    grown = {c: top([*base, dep("d")], c) for c in callers}
    moved = [c for c in callers if before[c] != grown[c]]
    assert all(grown[c] == "d" for c in moved)
    assert len(moved) / 1000 == pytest.approx(0.25, abs=0.05)
    shrunk = {c: top([d for d in base if d.id != "b"], c) for c in callers}
    assert all(shrunk[c] == before[c] for c in callers if before[c] != "b")


def test_weight_priority_is_a_fixed_order() -> None:
    deps = [
        dep("low", weight=1),
        dep("high", weight=5),
        dep("mid", weight=2),
        dep("mid2", weight=2),
    ]
    got = [d.id for d in order(Strategy.WEIGHT_PRIORITY, deps, inputs(), random.Random(0))]
    assert got == ["high", "mid", "mid2", "low"]


def test_weighted_round_robin_tracks_weights_from_shared_counters() -> None:
    deps = [dep("a", weight=3), dep("b", weight=1), dep("z", weight=0)]
    requests = {"a": 0, "b": 0, "z": 0}
    rng = random.Random(9)
    for _ in range(400):
        snap = PoolSnapshot(usage={k: [Usage(k, MINUTE, requests=v)] for k, v in requests.items()})
        pick = order(Strategy.WEIGHTED_ROUND_ROBIN, deps, inputs(snap), rng)[0].id
        requests[pick] += 1
    assert requests["z"] == 0
    assert abs(requests["a"] - 300) <= 2
    assert abs(requests["b"] - 100) <= 2


def test_every_strategy_is_implemented() -> None:
    deps = [dep("a"), dep("b")]
    for strategy in Strategy:
        assert {d.id for d in order(strategy, deps, inputs(), random.Random(0))} == {"a", "b"}
