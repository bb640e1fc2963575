"""Strategy parameters: each strategy's model, unknown names and keys refused, levels merged."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.router import PoolSettings, RouterSettings
from edgeproxy.config.strategies import (
    DEFAULT_INTERVENE_INFLIGHT,
    PARAMS,
    Strategy,
    describe,
    parse_params,
)

DEPLOYMENT = {
    "id": "a",
    "model": "gpt",
    "provider": "openai",
    "base_url": "https://x.test/v1",
    "upstream_model": "m",
}


def config(**sections: Any) -> GatewayConfig:
    return GatewayConfig.model_validate({"deployments": [DEPLOYMENT], **sections})


def test_every_strategy_has_a_parameter_model() -> None:
    assert set(PARAMS) == set(Strategy)
    for strategy in Strategy:
        assert parse_params(strategy, {}) == PARAMS[strategy]()  # defaults are valid


def test_an_unknown_key_is_refused_with_the_keys_the_strategy_takes() -> None:
    with pytest.raises(ValidationError, match=r"unknown parameter 'intervene'.*intervene_inflight"):
        RouterSettings.model_validate({"strategy_params": {"simple-shuffle": {"intervene": 3}}})
    with pytest.raises(ValidationError, match="weight_priority takes: no parameters"):
        RouterSettings.model_validate({"strategy_params": {"weight_priority": {"x": 1}}})


def test_an_unknown_strategy_name_is_refused() -> None:
    with pytest.raises(ValidationError, match="power-of-two-choices"):
        RouterSettings.model_validate({"strategy_params": {"two-choices": {}}})


@pytest.mark.parametrize("value", [-1, "many", 2.5, True])
def test_an_out_of_range_or_mistyped_value_is_refused(value: object) -> None:
    with pytest.raises(ValidationError, match="intervene_inflight"):
        PoolSettings.model_validate(
            {"strategy_params": {"least-busy": {"intervene_inflight": value}}}
        )


def test_a_tier_level_is_checked_too() -> None:
    with pytest.raises(ValidationError, match=r"tier_strategy_params\n.*tier 2: simple-shuffle"):
        config(pools={"gpt": {"tier_strategy_params": {"2": {"simple-shuffle": {"nope": 1}}}}})


def test_levels_merge_field_by_field_most_specific_first() -> None:
    cfg = config(
        router={"strategy_params": {"power-of-two-choices": {"intervene_inflight": 9}}},
        pools={
            "gpt": {
                "strategy_params": {"power-of-two-choices": {"intervene_inflight": 5}},
                "tier_strategy_params": {
                    "3": {"power-of-two-choices": {"intervene_inflight": None}}
                },
            }
        },
    )
    p2c = Strategy.POWER_OF_TWO_CHOICES
    assert cfg.params_for("other", 0, p2c).model_dump() == {"intervene_inflight": 9}
    assert cfg.params_for("gpt", 0, p2c).model_dump() == {"intervene_inflight": 5}
    assert cfg.params_for("gpt", 3, p2c).model_dump() == {"intervene_inflight": None}
    assert cfg.params_for("gpt", 0, Strategy.SIMPLE_SHUFFLE).model_dump() == {
        "intervene_inflight": None,  # off unless set: the rule reads the in-flight counters
        "prefill": None,  # 001's prefill rule: off unless set, for the same read
    }


def test_describe_lists_type_range_default_and_meaning() -> None:
    [row] = describe(Strategy.LEAST_BUSY)
    assert row["name"] == "intervene_inflight"
    assert (row["type"], row["minimum"], row["maximum"]) == ("integer or null", 0, None)
    assert row["default"] == DEFAULT_INTERVENE_INFLIGHT
    assert describe(Strategy.SIMPLE_SHUFFLE)[0]["default"] is None
    assert "in flight" in row["description"]
    assert describe(Strategy.HASH_AFFINITY) == []
