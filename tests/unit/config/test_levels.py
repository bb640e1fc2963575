"""003's setting levels: tier > pool > model capability > model protocol > model > global."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from edgeproxy.config.effective import report
from edgeproxy.config.levels import Level
from edgeproxy.config.loader import parse_config
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.config.strategies import Strategy
from edgeproxy.errors import ConfigError


def dep(dep_id: str, model: str = "chat", **fields: Any) -> dict[str, Any]:
    return {
        "id": dep_id,
        "model": model,
        "provider": "openai",
        "base_url": "https://x.test/v1",
        "upstream_model": "m",
        **fields,
    }


def config(**sections: Any) -> GatewayConfig:
    deployments = sections.pop("deployments", [dep("a", priority=1), dep("b", group="beta")])
    return GatewayConfig.model_validate({"deployments": deployments, **sections})


EVERY_LEVEL: dict[str, Any] = {
    "router": {"strategy": "least-busy"},
    "models": {
        "chat": {
            "strategy": "weighted_random",
            "protocols": {"anthropic.messages": {"strategy": "hash_affinity"}},
            "capabilities": {"responses": {"strategy": "price-based"}},
        }
    },
    "pools": {"chat": {"strategy": "usage-based-rpm", "tier_strategies": {1: "weight_priority"}}},
}

CHAT = Operation.CHAT
RESPONSES = Operation.RESPONSES


def without(sections: dict[str, Any], *paths: str) -> dict[str, Any]:
    """``sections`` with each dotted ``path`` removed (a level unset)."""
    import copy

    out = copy.deepcopy(sections)
    for path in paths:
        *parents, leaf = path.split(".")
        node = out
        for part in parents:
            node = node[part]
        del node[leaf]
    return out


@pytest.mark.parametrize(
    ("removed", "operation", "protocol", "strategy", "level"),
    [
        ((), RESPONSES, "anthropic.messages", Strategy.WEIGHT_PRIORITY, Level.TIER),
        (("pools.chat.tier_strategies",), RESPONSES, None, Strategy.USAGE_BASED_RPM, Level.POOL),
        (("pools",), RESPONSES, "anthropic.messages", Strategy.PRICE_BASED, Level.MODEL_CAPABILITY),
        (("pools",), CHAT, "anthropic.messages", Strategy.HASH_AFFINITY, Level.MODEL_PROTOCOL),
        (("pools",), CHAT, None, Strategy.WEIGHTED_RANDOM, Level.MODEL),
        (("pools", "models"), RESPONSES, "anthropic.messages", Strategy.LEAST_BUSY, Level.GLOBAL),
    ],
)
def test_the_first_level_that_sets_a_strategy_wins(
    removed: tuple[str, ...],
    operation: Operation,
    protocol: str | None,
    strategy: Strategy,
    level: Level,
) -> None:
    cfg = config(**without(EVERY_LEVEL, *removed))
    assert cfg.strategy_for("chat", 1, operation, protocol) is strategy
    tier = report(cfg, "chat", operation, protocol)["tiers"]["1"]["strategy"]
    assert (tier["value"], tier["level"]) == (strategy.value, level.value)


def test_a_capability_rule_beats_a_protocol_rule() -> None:
    cfg = config(**without(EVERY_LEVEL, "pools"))
    # openai.responses has no protocol rule; the capability rule applies either way.
    assert cfg.strategy_for("chat", 0, RESPONSES, "openai.responses") is Strategy.PRICE_BASED
    assert cfg.strategy_for("chat", 0, RESPONSES, "anthropic.messages") is Strategy.PRICE_BASED
    assert cfg.strategy_for("chat", 0, CHAT, "anthropic.messages") is Strategy.HASH_AFFINITY


def test_model_levels_apply_to_every_route_group_of_the_model() -> None:
    cfg = config(**without(EVERY_LEVEL, "pools"))
    assert cfg.strategy_for("chat:beta", 0, CHAT, "anthropic.messages") is Strategy.HASH_AFFINITY
    tier = report(cfg, "chat:beta", CHAT, "anthropic.messages")["tiers"]["0"]["strategy"]
    assert tier["source"] == "models.chat.protocols.anthropic.messages.strategy"


def test_without_any_level_the_global_strategy_applies() -> None:
    cfg = config()
    assert cfg.strategy_for("chat", 1, RESPONSES, "anthropic.messages") is Strategy.SIMPLE_SHUFFLE
    assert report(cfg, "chat", CHAT)["tiers"]["1"]["strategy"]["level"] == "global"


def test_parameters_merge_field_by_field_along_the_chain() -> None:
    params = {"least-busy": {"intervene_inflight": 5}}
    cfg = config(
        router={
            "strategy": "least-busy",
            "strategy_params": {"least-busy": {"intervene_inflight": 2}},
        },
        models={
            "chat": {
                "strategy_params": {"least-busy": {"intervene_inflight": 3}},
                "protocols": {"anthropic.messages": {"strategy_params": params}},
            }
        },
    )
    anthropic = cfg.params_for("chat", 1, Strategy.LEAST_BUSY, CHAT, "anthropic.messages")
    assert anthropic.model_dump() == {"intervene_inflight": 5}
    assert cfg.params_for("chat", 1, Strategy.LEAST_BUSY, CHAT).model_dump() == {
        "intervene_inflight": 3
    }
    view = report(cfg, "chat", CHAT, "anthropic.messages")["tiers"]["1"]["params"]
    assert view["intervene_inflight"] == {
        "value": 5,
        "level": "model_protocol",
        "source": "models.chat.protocols.anthropic.messages.strategy_params.least-busy"
        ".intervene_inflight",
    }
    bare = report(config(router={"strategy": "least-busy"}), "chat", CHAT)["tiers"]["1"]
    assert bare["params"]["intervene_inflight"] == {"value": 8, "level": "default", "source": None}


def test_the_report_names_the_level_of_sticky_continuation_and_deadlines() -> None:
    override = {"chat": {"json": {"response_ms": 1000}}}
    cfg = config(
        deployments=[dep("a", execution_policy_overrides=override)],
        pools={"chat": {"sticky": {"idle_ttl_seconds": 60}}},
    )
    view = report(cfg, "chat", CHAT)
    assert view["sticky"]["idle_ttl_seconds"] == {
        "value": 60,
        "level": "pool",
        "source": "pools.chat.sticky.idle_ttl_seconds",
    }
    assert view["sticky"]["enabled"]["level"] == "global"
    assert view["continuation"]["source"] == "router.continuation"
    assert view["circuit"]["allowed_fails"] == {
        "value": 3,
        "level": "global",
        "source": "router.circuit.allowed_fails",
    }
    json_deadlines = view["deadlines"]["a"]["json"]
    assert json_deadlines["response_ms"]["level"] == "deployment"
    assert json_deadlines["total_ms"]["level"] == "global"
    assert view["precedence"] == [
        "tier",
        "pool",
        "model_capability",
        "model_protocol",
        "model",
        "global",
        "default",
    ]


@pytest.mark.parametrize(
    ("models", "message"),
    [
        ({"nope": {"strategy": "least-busy"}}, "models settings name no deployment's model: nope"),
        ({"chat": {"strategy": "fastest"}}, "models.chat.strategy"),
        ({"chat": {"protocols": {"grpc.chat": {}}}}, "unknown protocol 'grpc.chat'"),
        ({"chat": {"capabilities": {"telepathy": {}}}}, "capabilities.telepathy"),
        (
            {"chat": {"capabilities": {"chat": {"strategy_params": {"least-busy": {"x": 1}}}}}},
            "unknown parameter 'x'",
        ),
        ({"chat": {"strategy": "least-busy", "colour": "red"}}, "models.chat.colour"),
    ],
)
def test_model_levels_are_validated_at_load(models: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config({"deployments": [dep("a")], "models": models}, "config.yaml")


def test_a_pool_key_is_not_a_model() -> None:
    with pytest.raises(ValidationError, match="chat:beta"):
        config(models={"chat:beta": {"strategy": "least-busy"}})
