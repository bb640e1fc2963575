"""Configuration rules: defaults from the spec, tighten-only overrides, consistent references."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.config.router import CircuitSettings, Strategy


def dep(dep_id: str, model: str = "chat", **fields: Any) -> dict[str, Any]:
    return {
        "id": dep_id,
        "model": model,
        "provider": "openai",
        "base_url": "https://api.example.com/v1",
        "upstream_model": "u",
        **fields,
    }


def test_defaults_are_the_specs() -> None:
    circuit = CircuitSettings()
    assert (circuit.allowed_fails, circuit.cooldown_seconds, circuit.retry_after_seconds) == (
        3,
        5,
        0,
    )
    assert (circuit.failure_window_seconds, circuit.max_cooldown_seconds) == (60, 300)
    assert (circuit.half_open_probe_seconds, circuit.configuration_cooldown_seconds) == (30, 300)
    assert circuit.throttle_cooldown_seconds == 5
    config = GatewayConfig()
    chat = config.router.execution_policies[Operation.CHAT]
    assert (chat.json_.response_ms, chat.json_.total_ms, chat.json_.max_attempts) == (
        600_000,
        1_800_000,
        3,
    )
    assert (chat.stream.idle_ms, chat.stream.total_ms) == (600_000, 3_600_000)
    embeddings = config.router.execution_policies[Operation.EMBEDDINGS].json_
    assert (embeddings.response_ms, embeddings.total_ms) == (120_000, 300_000)
    assert config.router.strategy is Strategy.SIMPLE_SHUFFLE
    assert (config.router.sticky.enabled, config.router.sticky.idle_ttl_seconds) == (True, 3600)


def test_overrides_may_only_tighten() -> None:
    tight = dep("a", execution_policy_overrides={"chat": {"json": {"total_ms": 10_000}}})
    config = GatewayConfig.model_validate({"deployments": [tight]})
    assert config.policy_for(config.deployments[0], Operation.CHAT, stream=False).total_ms == 10_000
    loose = dep("a", execution_policy_overrides={"chat": {"stream": {"idle_ms": 9_000_000}}})
    with pytest.raises(ValidationError, match=r"deployments\[0\] \(a\).*looser"):
        GatewayConfig.model_validate({"deployments": [loose]})


def test_the_policy_matrix_must_be_exhaustive() -> None:
    partial = {"chat": GatewayConfig().router.execution_policies[Operation.CHAT].model_dump()}
    with pytest.raises(ValidationError, match="missing: embeddings"):
        GatewayConfig.model_validate({"router": {"execution_policies": partial}})


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"deployments": [dep("a"), dep("a")]}, "duplicate deployment ids: a"),
        ({"deployments": [dep("a")], "pools": {"other": {}}}, "name no deployment's pool"),
        (
            {"deployments": [dep("a")], "fallbacks": [{"model": "chat", "to": ["nope"]}]},
            "unknown public model 'nope'",
        ),
    ],
)
def test_references_must_resolve(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        GatewayConfig.model_validate(document)


def test_strategy_and_sticky_inherit_tier_then_pool_then_global() -> None:
    config = GatewayConfig.model_validate(
        {
            "router": {"strategy": "least-busy", "sticky": {"idle_ttl_seconds": 100}},
            "deployments": [dep("a"), dep("b", model="other")],
            "pools": {
                "chat": {
                    "strategy": "latency-based",
                    "tier_strategies": {2: "weight_priority"},
                    "sticky": {"enabled": False},
                }
            },
        }
    )
    assert config.strategy_for("chat", 2) is Strategy.WEIGHT_PRIORITY
    assert config.strategy_for("chat", 0) is Strategy.LATENCY_BASED
    assert config.strategy_for("other", 0) is Strategy.LEAST_BUSY
    assert (config.sticky_for("chat").enabled, config.sticky_for("chat").idle_ttl_seconds) == (
        False,
        100,
    )
    assert config.sticky_for("other").enabled is True


def test_route_groups_form_their_own_pools() -> None:
    config = GatewayConfig.model_validate({"deployments": [dep("a"), dep("b", group="eu")]})
    assert config.public_models() == ["chat", "chat:eu"]
    assert [d.id for d in config.pool("chat:eu")] == ["b"]
