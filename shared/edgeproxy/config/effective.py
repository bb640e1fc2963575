"""Every effective setting of a pool, with the level it came from (``GET /admin/pools/{pool}/effective``).

Pure: a configuration, a pool, an operation and a protocol in, a JSON-ready
report out. Each setting is ``{"value", "level", "source"}``: the level of
``config.levels`` (``tier`` ... ``global``, ``default``) and the dotted path
of the YAML key that set it (``None`` for a built-in default).
"""

from __future__ import annotations

from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.levels import Layer, Level, param_sources, strategy_of
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.config.strategies import PARAMS

Setting = dict[str, Any]


def _setting(value: Any, level: Level, source: str | None) -> Setting:
    return {"value": value, "level": level.value, "source": source}


def _tier(config: GatewayConfig, pool: str, tier: int, op: Operation, protocol: str) -> Setting:
    layers = config.layers(pool, tier, op, protocol)
    chosen = strategy_of(layers)
    strategy = config.strategy_for(pool, tier, op, protocol)
    params = config.params_for(pool, tier, strategy, op, protocol).model_dump(mode="json")
    sources = param_sources(strategy, layers, list(PARAMS[strategy].model_fields))
    return {
        "strategy": _setting(strategy.value, chosen.level, chosen.strategy_path),
        "params": {
            name: _param(params[name], sources[name], strategy.value, name) for name in params
        },
        "levels": [_level(layer) for layer in layers],
    }


def _param(value: Any, layer: Layer | None, strategy: str, name: str) -> Setting:
    if layer is None:
        return _setting(value, Level.DEFAULT, None)
    return _setting(value, layer.level, f"{layer.params_path}.{strategy}.{name}")


def _level(layer: Layer) -> dict[str, Any]:
    """One level of the chain as it stands for this tier (what it sets, if anything)."""
    return {
        "level": layer.level.value,
        "source": layer.strategy_path,
        "strategy": None if layer.strategy is None else layer.strategy.value,
        "strategy_params": {s.value: dict(p) for s, p in layer.params.items()},
    }


def _overridden(value: Any, pool: str, name: str, fallback: Any, global_path: str) -> Setting:
    if value is not None:
        return _setting(value, Level.POOL, f"pools.{pool}.{name}")
    return _setting(fallback, Level.GLOBAL, global_path)


def report(
    config: GatewayConfig, pool: str, operation: Operation, protocol: str | None = None
) -> dict[str, Any]:
    """The pool's effective settings for requests of ``operation`` on ``protocol``."""
    protocol = protocol or f"openai.{operation.value}"
    tiers = sorted({d.priority for d in config.pool(pool)}, reverse=True)
    settings = config.pool_settings(pool)
    sticky = settings.sticky
    router = config.router
    continuation = settings.continuation
    return {
        "pool": pool,
        "model": pool.split(":", 1)[0],
        "operation": operation.value,
        "protocol": protocol,
        "precedence": [level.value for level in Level],
        "tiers": {str(t): _tier(config, pool, t, operation, protocol) for t in tiers},
        "sticky": {
            "enabled": _overridden(
                sticky.enabled,
                pool,
                "sticky.enabled",
                router.sticky.enabled,
                "router.sticky.enabled",
            ),
            "idle_ttl_seconds": _overridden(
                sticky.idle_ttl_seconds,
                pool,
                "sticky.idle_ttl_seconds",
                router.sticky.idle_ttl_seconds,
                "router.sticky.idle_ttl_seconds",
            ),
        },
        "continuation": _overridden(
            None if continuation is None else continuation.value,
            pool,
            "continuation",
            router.continuation.value,
            "router.continuation",
        ),
        "circuit": {
            name: _setting(value, Level.GLOBAL, f"router.circuit.{name}")
            for name, value in router.circuit.model_dump(mode="json").items()
        },
        "deadlines": _deadlines(config, pool, operation),
        "min_role": {dep.id: _reservation(config, dep) for dep in config.pool(pool)},
        "aliases": config.names_of(pool)[1:],
    }


def _reservation(config: GatewayConfig, dep: Deployment) -> Setting:
    """A deployment's effective ``min_role``: its own, or the strictest declared by a
    deployment sharing its credential (the source names that one)."""
    setter = dep
    if dep.reserved_for is not dep.min_role:
        setter = next(
            d
            for d in config.deployments
            if d.credential == dep.credential and d.min_role is dep.reserved_for
        )
    return {
        "value": dep.reserved_for.value,
        "level": "deployment",
        "source": f"deployments.{setter.id}.min_role",
    }


def _deadlines(config: GatewayConfig, pool: str, op: Operation) -> dict[str, Any]:
    """Per deployment and mode, each deadline of ``op``: the deployment's override or the global."""
    out: dict[str, Any] = {}
    for dep in config.pool(pool):
        override = dep.execution_policy_overrides.get(op)
        modes: dict[str, Any] = {}
        for mode, stream in (("json", False), ("stream", True)):
            part = (override.stream if stream else override.json_) if override else None
            own = set() if part is None else set(part.model_dump(exclude_none=True))
            mine = f"deployments.{dep.id}.execution_policy_overrides.{op.value}.{mode}"
            base = f"router.execution_policies.{op.value}.{mode}"
            modes[mode] = {
                name: {"value": value, "level": "deployment", "source": f"{mine}.{name}"}
                if name in own
                else _setting(value, Level.GLOBAL, f"{base}.{name}")
                for name, value in config.policy_for(dep, op, stream).model_dump().items()
            }
        out[dep.id] = modes
    return out
