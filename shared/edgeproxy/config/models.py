"""The whole configuration (``GatewayConfig``): its sections and the rules across them.

Sections live in their own modules: ``router`` (router and pool settings),
``policies`` (the deadline matrix), ``deployment`` (upstream targets); this
module adds fallbacks and the request surface, and checks that they agree.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Self

from pydantic import Field, PrivateAttr, model_validator

from edgeproxy.config import levels
from edgeproxy.config.alerts import AlertSettings, webhook_problem
from edgeproxy.config.aliases import Alias, AliasName, alias_problems, canonical, names_of
from edgeproxy.config.base import Positive, Strict
from edgeproxy.config.cache import CacheSettings
from edgeproxy.config.deployment import Deployment, shared_reservations
from edgeproxy.config.egress import EgressSettings
from edgeproxy.config.levels import Layer, ModelSettings, params_of, strategy_of
from edgeproxy.config.policies import Deadline, Operation
from edgeproxy.config.quota import QuotaSource
from edgeproxy.config.request_log import RequestLogSettings
from edgeproxy.config.roles import Role
from edgeproxy.config.router import (
    Continuation,
    PoolSettings,
    RouterSettings,
    StickySettings,
    Strategy,
)
from edgeproxy.config.strategies import StrategyParams, merged


class FallbackReason(StrEnum):
    GENERAL = "general"
    CONTEXT_WINDOW = "context_window"
    CONTENT_POLICY = "content_policy"


class FallbackChain(Strict):
    model: str
    reason: FallbackReason = FallbackReason.GENERAL
    to: Annotated[list[str], Field(min_length=1)]
    # May a cut stream continue on ``to``? None: ``router.continuation``.
    continuation: Continuation | None = None


class ApiKey(Strict):
    """A client key in the YAML (legacy; keys now live in the table, see ``edgeproxy keys``).

    Stored only as the SHA-256 hex digest of the key. ``admin: true`` is the
    ``admin`` role; otherwise ``role`` (default ``free``).
    """

    name: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    admin: bool = False
    role: Role = Role.FREE

    @property
    def effective_role(self) -> Role:
        """The caller role this key grants."""
        return Role.ADMIN if self.admin else self.role


class UpstreamLimits(Strict):
    """Caps on what one upstream attempt may send back; exceeding one is a transient failure.

    They bound the gateway's memory per attempt: a JSON answer is buffered
    whole (``answer_bytes``), a stream only one event at a time
    (``event_bytes``, also the cap on one SSE line), and ``stream_bytes``
    ends an attempt whose stream never stops.
    """

    answer_bytes: Positive = 32 * 1024 * 1024
    event_bytes: Positive = 1024 * 1024
    stream_bytes: Positive = 256 * 1024 * 1024


class GatewaySettings(Strict):
    """Request-surface settings.

    ``api_keys``: legacy client keys kept in the YAML, accepted beside the
    table's keys (``edgeproxy keys import`` moves them into the table). Every
    request needs a key either way, unless authentication is switched off
    (``EDGEPROXY_AUTH=off``, local only).
    """

    max_body_bytes: Positive = 4 * 1024 * 1024
    body_read_timeout_seconds: Annotated[float, Field(gt=0)] = 10.0
    upstream_limits: UpstreamLimits = UpstreamLimits()
    api_keys: list[ApiKey] = Field(default_factory=list)
    egress: EgressSettings = EgressSettings()  # hosts and ranges upstreams may reach
    request_log: RequestLogSettings = RequestLogSettings()  # the request log and its reports
    alerts: AlertSettings = AlertSettings()  # where budget alerts go (config.alerts)

    @model_validator(mode="after")
    def _webhook_egress(self) -> GatewaySettings:
        url = self.alerts.webhook_url
        problem = None if url is None else webhook_problem(url, self.egress)
        if problem is not None:
            raise ValueError(f"gateway.alerts.{problem}")
        if url is not None and self.alerts.webhook_secret_ref is None:
            raise ValueError("gateway.alerts.webhook_secret_ref is required with webhook_url")
        return self


class GatewayConfig(Strict):
    """The whole configuration, as stored in the table and cached by handlers."""

    router: RouterSettings = RouterSettings()
    gateway: GatewaySettings = GatewaySettings()
    pools: dict[str, PoolSettings] = Field(default_factory=dict)
    # 003's model levels: model default, protocol rules, capability rules (config.levels).
    models: dict[str, ModelSettings] = Field(default_factory=dict)
    aliases: dict[AliasName, Alias] = Field(default_factory=dict)  # config.aliases
    deployments: list[Deployment] = Field(default_factory=list)
    fallbacks: list[FallbackChain] = Field(default_factory=list)
    quota_sources: list[QuotaSource] = Field(default_factory=list)
    # A quota snapshot older than this is ignored by routing (the refresh runs every minute).
    quota_max_age_seconds: Positive = 600
    cache: CacheSettings = CacheSettings()  # the response cache (config.cache), off by default
    _params: dict[tuple[str, int, Strategy, Operation, str], StrategyParams] = PrivateAttr(
        default_factory=dict
    )
    _layers: dict[tuple[str, int, Operation, str], list[Layer]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        ids = [d.id for d in self.deployments]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError("duplicate deployment ids: " + ", ".join(dupes))
        names = [s.name for s in self.quota_sources]
        if len(set(names)) != len(names):
            raise ValueError("duplicate quota source names: " + ", ".join(sorted(names)))
        pools = {d.pool_key for d in self.deployments}
        unknown_pools = sorted(set(self.pools) - pools)
        if unknown_pools:
            raise ValueError(
                "pools settings name no deployment's pool: " + ", ".join(unknown_pools)
            )
        models = {d.model for d in self.deployments}
        unknown_models = sorted(set(self.models) - models)
        if unknown_models:
            raise ValueError(
                "models settings name no deployment's model: " + ", ".join(unknown_models)
            )
        problems = alias_problems(self.aliases, models)
        if problems:
            raise ValueError("; ".join(problems))
        unserved = sorted(p for p in self.cache.pools if canonical(self.aliases, p) not in pools)
        if unserved:
            raise ValueError(
                "cache.pools names a pool no deployment serves (no key may use it): "
                + ", ".join(unserved)
            )
        for chain in self.fallbacks:
            for target in [chain.model, *chain.to]:
                if target not in pools:
                    raise ValueError(f"fallback names unknown public model {target!r}")
        for index, dep in enumerate(self.deployments):
            for op, override in dep.execution_policy_overrides.items():
                base = self.router.execution_policies[op]
                for mode, part, deadline in (
                    ("json", override.json_, base.json_),
                    ("stream", override.stream, base.stream),
                ):
                    try:
                        if part is not None:
                            deadline.tightened_by(part)
                    except ValueError as exc:
                        raise ValueError(
                            f"deployments[{index}] ({dep.id}): "
                            f"execution_policy_overrides.{op.value}.{mode}: {exc}"
                        ) from None
        # 001: a credential reserved for a role stays reserved through every deployment of it.
        self.deployments[:] = shared_reservations(self.deployments)
        return self

    def pool(self, pool_key: str) -> list[Deployment]:
        """The deployments serving ``pool_key`` (``model`` or ``model:group``)."""
        return [d for d in self.deployments if d.pool_key == pool_key]

    def deployment(self, deployment_id: str) -> Deployment | None:
        return next((d for d in self.deployments if d.id == deployment_id), None)

    def public_models(self) -> list[str]:
        return sorted({d.pool_key for d in self.deployments})

    def pool_settings(self, pool_key: str) -> PoolSettings:
        return self.pools.get(pool_key, PoolSettings())

    def canonical(self, name: str) -> str:
        """The public model (pool key) ``name`` stands for: itself unless it is an alias."""
        return canonical(self.aliases, name)

    def names_of(self, pool_key: str) -> list[str]:
        """``pool_key`` and its aliases: a key allowed any of them may call every one."""
        return names_of(self.aliases, pool_key)

    def layers(
        self, pool_key: str, tier: int, operation: Operation, protocol: str | None = None
    ) -> list[Layer]:
        """003's setting levels of one pool tier for one operation and protocol (config.levels)."""
        protocol = protocol or f"openai.{operation.value}"
        key = (pool_key, tier, operation, protocol)
        found = self._layers.get(key)
        if found is None:
            pool = self.pool_settings(pool_key)
            found = levels.chain(
                pool_key=pool_key,
                tier=tier,
                tier_strategy=pool.tier_strategies.get(tier),
                tier_params=pool.tier_strategy_params.get(tier, {}),
                pool_strategy=pool.strategy,
                pool_params=pool.strategy_params,
                model=self.models.get(pool_key.split(":", 1)[0]),
                operation=operation,
                protocol=protocol,
                global_strategy=self.router.strategy,
                global_params=self.router.strategy_params,
            )
            self._layers[key] = found  # the config is immutable: computed once per key
        return found

    def strategy_for(
        self,
        pool_key: str,
        tier: int,
        operation: Operation = Operation.CHAT,
        protocol: str | None = None,
    ) -> Strategy:
        """The first strategy set along tier, pool, the model levels, then the global one."""
        found = strategy_of(self.layers(pool_key, tier, operation, protocol)).strategy
        assert found is not None  # the global level always sets one
        return found

    def params_for(
        self,
        pool_key: str,
        tier: int,
        strategy: Strategy,
        operation: Operation = Operation.CHAT,
        protocol: str | None = None,
    ) -> StrategyParams:
        """``strategy``'s parameters: its defaults, then each level up to the tier's."""
        key = (pool_key, tier, strategy, operation, protocol or "")
        found = self._params.get(key)
        if found is None:
            layers = self.layers(pool_key, tier, operation, protocol)
            found = merged(strategy, *params_of(layers))
            self._params[key] = found
        return found

    def sticky_for(self, pool_key: str) -> StickySettings:
        base = self.router.sticky
        over = self.pool_settings(pool_key).sticky
        return StickySettings(
            enabled=base.enabled if over.enabled is None else over.enabled,
            idle_ttl_seconds=over.idle_ttl_seconds or base.idle_ttl_seconds,
        )

    def policy_for(self, dep: Deployment, op: Operation, stream: bool) -> Deadline:
        """The deployment's effective deadline for ``op`` (validated to only tighten)."""
        base = self.router.execution_policies[op]
        deadline = base.stream if stream else base.json_
        override = dep.execution_policy_overrides.get(op)
        part = (override.stream if stream else override.json_) if override else None
        return deadline.tightened_by(part) if part else deadline

    def continuation_targets(self, model: str) -> list[str]:
        """The pools a stream served by ``model`` and cut after its commit may continue on.

        ``model`` itself when its pool opted in (``pools.<model>.continuation``),
        then the targets of its ``general`` chain when that chain opted in. A
        pool or chain that sets nothing follows ``router.continuation``, and
        then only to pools with a ``supports_prefill`` deployment.
        """

        def opted(setting: Continuation | None, pool: str) -> bool:
            if setting is not None:
                return setting is Continuation.PREFILL
            return self.router.continuation is Continuation.PREFILL and any(
                d.supports_prefill for d in self.pool(pool)
            )

        out = [model] if opted(self.pool_settings(model).continuation, model) else []
        for chain in self.fallbacks:
            if chain.model == model and chain.reason is FallbackReason.GENERAL:
                out.extend(m for m in chain.to if m not in out and opted(chain.continuation, m))
        return out

    def fallback_chain(self, model: str, reason: FallbackReason) -> list[str]:
        for chain in self.fallbacks:
            if chain.model == model and chain.reason == reason:
                return list(chain.to)
        return []
