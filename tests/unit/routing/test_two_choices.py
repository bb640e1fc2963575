"""Power-of-two-choices with 001's intervene threshold: as a strategy, in simple-shuffle, as tiebreak.

The audit's case: weights 10:1, the heavy deployment with 50 attempts in
flight, the light one idle. Plain weighted draws ignore the load (about
91 / 9 %); with the rule, the heavy one keeps a pick only when both draws
land on it, (10/11)^2 = 82.6 %.
"""

from __future__ import annotations

import random
from collections import Counter
from functools import partial

import pytest

from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.router import Strategy
from edgeproxy.config.strategies import (
    RankedParams,
    StrategyParams,
    TwoChoicesParams,
    WeightedDrawParams,
)
from edgeproxy.routing.ordering.strategies import StrategyInputs, order, reads_counters
from edgeproxy.routing.selection import Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import PoolSnapshot, Usage

from .builders import dep

MINUTE = 1000
NOW = MINUTE * 60.0 + 5
N = 20_000
BOTH_HEAVY = (10 / 11) ** 2
HEAVY_SHARE = 10 / 11


def loaded(heavy: int, light: int = 0) -> PoolSnapshot:
    return PoolSnapshot(
        usage={
            "heavy": [
                Usage("heavy", MINUTE - 1, inflight=heavy // 2),
                Usage("heavy", MINUTE, inflight=heavy - heavy // 2),
            ],
            "light": [Usage("light", MINUTE, inflight=light)],
        }
    )


POOL = [dep("heavy", weight=10), dep("light", weight=1)]


def heavy_share(
    strategy: Strategy, snapshot: PoolSnapshot, params: StrategyParams | None = None
) -> float:
    rng = random.Random(2024)
    inputs = StrategyInputs(snapshot, MINUTE, "", params)
    picks = Counter(order(strategy, POOL, inputs, rng)[0].id for _ in range(N))
    return picks["heavy"] / N


AT_EIGHT = WeightedDrawParams(intervene_inflight=8)


@pytest.mark.parametrize(
    ("strategy", "params"),
    [(Strategy.SIMPLE_SHUFFLE, AT_EIGHT), (Strategy.POWER_OF_TWO_CHOICES, None)],
)
def test_a_backed_up_deployment_loses_the_draws_that_reach_an_idle_one(
    strategy: Strategy, params: StrategyParams | None
) -> None:
    assert heavy_share(strategy, loaded(50), params) == pytest.approx(BOTH_HEAVY, abs=0.01)


def test_simple_shuffle_is_plain_weighted_draws_by_default() -> None:
    # The rule costs the in-flight counters in every routing read: opt in.
    share = heavy_share(Strategy.SIMPLE_SHUFFLE, loaded(500))
    assert share == pytest.approx(HEAVY_SHARE, abs=0.01)


def test_below_the_threshold_simple_shuffle_follows_the_weights_alone() -> None:
    share = heavy_share(Strategy.SIMPLE_SHUFFLE, loaded(7), AT_EIGHT)
    assert share == pytest.approx(HEAVY_SHARE, abs=0.01)
    share = heavy_share(Strategy.SIMPLE_SHUFFLE, loaded(8), AT_EIGHT)
    assert share == pytest.approx(BOTH_HEAVY, abs=0.01)


def test_the_threshold_is_a_parameter_and_null_turns_the_rule_off() -> None:
    at_three = WeightedDrawParams(intervene_inflight=3)
    share = heavy_share(Strategy.SIMPLE_SHUFFLE, loaded(5), at_three)
    assert share == pytest.approx(BOTH_HEAVY, abs=0.01)
    off = WeightedDrawParams(intervene_inflight=None)
    share = heavy_share(Strategy.SIMPLE_SHUFFLE, loaded(500), off)
    assert share == pytest.approx(HEAVY_SHARE, abs=0.01)
    strict = TwoChoicesParams(intervene_inflight=100)
    share = heavy_share(Strategy.POWER_OF_TWO_CHOICES, loaded(50), strict)
    assert share == pytest.approx(HEAVY_SHARE, abs=0.01)


def test_power_of_two_choices_engages_on_any_backlog_by_default() -> None:
    share = heavy_share(Strategy.POWER_OF_TWO_CHOICES, loaded(1))
    assert share == pytest.approx(BOTH_HEAVY, abs=0.01)
    # Equal loads: the first draw stands, so the weights decide.
    share = heavy_share(Strategy.POWER_OF_TWO_CHOICES, loaded(4, 4))
    assert share == pytest.approx(HEAVY_SHARE, abs=0.01)


def test_the_less_busy_draw_wins_only_if_it_is_less_busy() -> None:
    # Light is the busier one: draws that land on heavy keep heavy; light keeps a
    # pick only when both draws are light.
    snapshot = PoolSnapshot(
        usage={
            "heavy": [Usage("heavy", MINUTE, inflight=0)],
            "light": [Usage("light", MINUTE, inflight=90)],
        }
    )
    share = heavy_share(Strategy.POWER_OF_TWO_CHOICES, snapshot)
    assert 1 - share == pytest.approx((1 / 11) ** 2, abs=0.005)


def test_weight_zero_is_never_drawn_and_every_other_deployment_is_ordered() -> None:
    pool = [dep("a", weight=2), dep("b"), dep("z", weight=0)]
    for strategy in (Strategy.SIMPLE_SHUFFLE, Strategy.POWER_OF_TWO_CHOICES):
        for seed in range(30):
            got = order(strategy, pool, StrategyInputs(loaded(50), MINUTE), random.Random(seed))
            assert sorted(d.id for d in got) == ["a", "b"]


def test_parameters_of_another_strategy_are_refused() -> None:
    inputs = StrategyInputs(loaded(0), MINUTE, "", StrategyParams())
    with pytest.raises(TypeError, match="simple-shuffle takes WeightedDrawParams"):
        order(Strategy.SIMPLE_SHUFFLE, POOL, inputs, random.Random(0))


def test_load_aware_strategies_read_the_counters_unless_the_rule_is_off() -> None:
    assert not reads_counters(Strategy.SIMPLE_SHUFFLE)  # its rule is off by default
    assert reads_counters(Strategy.SIMPLE_SHUFFLE, AT_EIGHT)
    assert reads_counters(Strategy.POWER_OF_TWO_CHOICES)
    assert not reads_counters(Strategy.WEIGHTED_RANDOM)
    off = WeightedDrawParams(intervene_inflight=None)
    assert not reads_counters(Strategy.SIMPLE_SHUFFLE, off)
    assert not reads_counters(
        Strategy.POWER_OF_TWO_CHOICES, TwoChoicesParams(intervene_inflight=None)
    )
    # A metric strategy reads them for its metric whatever its tiebreak.
    assert reads_counters(Strategy.LEAST_BUSY, RankedParams(intervene_inflight=None))


def test_selection_runs_each_tier_with_its_own_parameters() -> None:
    config = GatewayConfig.model_validate(
        {
            "deployments": [
                {
                    **d,
                    "model": "gpt",
                    "provider": "openai",
                    "base_url": "https://x.test/v1",
                    "upstream_model": "m",
                }
                for d in (
                    {"id": "heavy", "weight": 10, "priority": 2},
                    {"id": "light", "weight": 1, "priority": 2},
                )
            ],
            "router": {"strategy_params": {"simple-shuffle": {"intervene_inflight": 1000}}},
            "pools": {
                "gpt": {
                    "tier_strategy_params": {"2": {"simple-shuffle": {"intervene_inflight": 2}}}
                }
            },
        }
    )
    assert config.params_for("gpt", 2, Strategy.SIMPLE_SHUFFLE) == WeightedDrawParams(
        intervene_inflight=2
    )
    assert config.params_for("gpt", 1, Strategy.SIMPLE_SHUFFLE).intervene_inflight == 1000
    assert config.params_for("gpt", 2, Strategy.LEAST_BUSY) == RankedParams()
    request = RouteRequest(
        strategy=partial(config.strategy_for, "gpt"), params=partial(config.params_for, "gpt")
    )
    rng = random.Random(3)
    picks: Counter[str] = Counter()
    for _ in range(4000):
        pick = next_deployment(config.pool("gpt"), loaded(3), request, NOW, rng)
        assert isinstance(pick, Pick)
        picks[pick.deployment.id] += 1
    assert picks["heavy"] / 4000 == pytest.approx(BOTH_HEAVY, abs=0.02)  # 3 >= 2: engaged
