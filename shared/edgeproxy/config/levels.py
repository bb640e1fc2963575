"""The setting levels of a pool's strategy and its parameters (``reference/003``'s chain).

From the most specific to the least, the first level that sets a value wins::

    tier              pools.<pool>.tier_strategies.<tier> / tier_strategy_params.<tier>
    pool              pools.<pool>.strategy / strategy_params
    model_capability  models.<model>.capabilities.<operation>.strategy / strategy_params
    model_protocol    models.<model>.protocols.<protocol>.strategy / strategy_params
    model             models.<model>.strategy / strategy_params
    global            router.strategy / strategy_params
    default           the built-in default (a strategy's parameter defaults)

``<model>`` is the pool's public model without its route group (``fast-chat``
for the pool ``fast-chat:beta``); the capability is the request's operation
(``chat``, ``embeddings``, ``responses``, ...) and the protocol its inbound
surface (``openai.chat``, ``anthropic.messages``, ...). Parameters merge field
by field along the same chain. Everything here is pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import Field, field_validator

from edgeproxy.config.base import Strict
from edgeproxy.config.policies import Operation
from edgeproxy.config.strategies import RawParams, Strategy, check_levels

# The inbound protocols a request arrives on: OpenAI's per operation, Anthropic's Messages.
PROTOCOLS = frozenset({f"openai.{op.value}" for op in Operation} | {"anthropic.messages"})


class Level(StrEnum):
    """Where an effective setting came from, most specific first."""

    TIER = "tier"
    POOL = "pool"
    MODEL_CAPABILITY = "model_capability"
    MODEL_PROTOCOL = "model_protocol"
    MODEL = "model"
    GLOBAL = "global"
    DEFAULT = "default"


class StrategyRule(Strict):
    """A strategy and its parameters set at one model level (both optional)."""

    strategy: Strategy | None = None
    strategy_params: dict[Strategy, RawParams] = Field(default_factory=dict)

    @field_validator("strategy_params")
    @classmethod
    def _params_are_known(cls, levels: dict[Strategy, RawParams]) -> dict[Strategy, RawParams]:
        check_levels(levels)
        return levels


class ModelSettings(StrategyRule):
    """``models.<model>``: the model default, its protocol rules and its capability rules."""

    protocols: dict[str, StrategyRule] = Field(default_factory=dict)
    capabilities: dict[Operation, StrategyRule] = Field(default_factory=dict)

    @field_validator("protocols")
    @classmethod
    def _protocols_are_known(cls, rules: dict[str, StrategyRule]) -> dict[str, StrategyRule]:
        unknown = sorted(set(rules) - PROTOCOLS)
        if unknown:
            raise ValueError(
                "unknown protocol "
                + ", ".join(repr(p) for p in unknown)
                + "; one of "
                + ", ".join(sorted(PROTOCOLS))
            )
        return rules


@dataclass(frozen=True, slots=True)
class Layer:
    """One level as a request sees it: what it sets, and where in the YAML that is."""

    level: Level
    strategy_path: str  # where its strategy is set, e.g. ``pools.fast-chat.strategy``
    params_path: str  # where its parameters are, e.g. ``pools.fast-chat.strategy_params``
    strategy: Strategy | None
    params: Mapping[Strategy, Mapping[str, Any]] = field(default_factory=dict)


def base_model(pool_key: str) -> str:
    """The public model of a pool (``fast-chat:beta`` -> ``fast-chat``)."""
    return pool_key.split(":", 1)[0]


def chain(
    *,
    pool_key: str,
    tier: int,
    tier_strategy: Strategy | None,
    tier_params: Mapping[Strategy, Mapping[str, Any]],
    pool_strategy: Strategy | None,
    pool_params: Mapping[Strategy, Mapping[str, Any]],
    model: ModelSettings | None,
    operation: Operation,
    protocol: str,
    global_strategy: Strategy,
    global_params: Mapping[Strategy, Mapping[str, Any]],
) -> list[Layer]:
    """The levels of one (pool, tier, operation, protocol), most specific first."""
    pool = f"pools.{pool_key}"
    layers = [
        Layer(
            Level.TIER,
            f"{pool}.tier_strategies.{tier}",
            f"{pool}.tier_strategy_params.{tier}",
            tier_strategy,
            tier_params,
        ),
        _rule(Level.POOL, pool, pool_strategy, pool_params),
    ]
    if model is not None:
        where = f"models.{base_model(pool_key)}"
        capability = model.capabilities.get(operation)
        if capability is not None:
            path = f"{where}.capabilities.{operation.value}"
            layers.append(_rule(Level.MODEL_CAPABILITY, path, *_parts(capability)))
        rule = model.protocols.get(protocol)
        if rule is not None:
            path = f"{where}.protocols.{protocol}"
            layers.append(_rule(Level.MODEL_PROTOCOL, path, *_parts(rule)))
        layers.append(_rule(Level.MODEL, where, *_parts(model)))
    layers.append(_rule(Level.GLOBAL, "router", global_strategy, global_params))
    return layers


def _parts(rule: StrategyRule) -> tuple[Strategy | None, Mapping[Strategy, Mapping[str, Any]]]:
    return rule.strategy, rule.strategy_params


def _rule(
    level: Level,
    where: str,
    strategy: Strategy | None,
    params: Mapping[Strategy, Mapping[str, Any]],
) -> Layer:
    return Layer(level, f"{where}.strategy", f"{where}.strategy_params", strategy, params)


def strategy_of(layers: list[Layer]) -> Layer:
    """The layer whose strategy applies: the first that sets one (the global always does)."""
    return next(layer for layer in layers if layer.strategy is not None)


def params_of(layers: list[Layer]) -> list[Mapping[Strategy, Mapping[str, Any]]]:
    """Each layer's ``strategy_params``, least specific first (for ``strategies.merged``)."""
    return [layer.params for layer in reversed(layers)]


def param_sources(
    strategy: Strategy, layers: list[Layer], names: list[str]
) -> dict[str, Layer | None]:
    """Per parameter name, the most specific layer that sets it (None: the default)."""
    return {
        name: next((layer for layer in layers if name in layer.params.get(strategy, {})), None)
        for name in names
    }
