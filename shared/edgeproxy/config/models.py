"""Configuration models: deployments, router settings, execution policies, fallbacks.

Every model forbids unknown keys, so a typo in the YAML fails at load time with
the key's name instead of silently falling back to a default. Field names are
the snake_case forms of the knobs in the routing spec (``allowedFails`` is
``allowed_fails``); defaults are the spec's.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

Positive = Annotated[int, Field(gt=0)]
NonNegative = Annotated[int, Field(ge=0)]


class Strict(BaseModel):
    """Base for configuration models: frozen, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ProviderKind(StrEnum):
    OPENAI = "openai"
    OPENAI_COMPAT = "openai_compat"
    ANTHROPIC = "anthropic"


class Strategy(StrEnum):
    """Ordering strategies: the eight of the primary spec and the four of 003."""

    SIMPLE_SHUFFLE = "simple-shuffle"
    LEAST_BUSY = "least-busy"
    USAGE_BASED_RPM = "usage-based-rpm"
    USAGE_BASED_TPM = "usage-based-tpm"
    LATENCY_BASED = "latency-based"
    THROUGHPUT_BASED = "throughput-based"
    PRICE_BASED = "price-based"
    HEALTH_AWARE = "health-aware"
    HASH_AFFINITY = "hash_affinity"
    WEIGHTED_RANDOM = "weighted_random"
    WEIGHT_PRIORITY = "weight_priority"
    WEIGHTED_ROUND_ROBIN = "weighted_round_robin"


class Operation(StrEnum):
    """Operations with their own execution policy (rows of the deadline matrix)."""

    CHAT = "chat"
    EMBEDDINGS = "embeddings"
    IMAGES = "images"
    AUDIO = "audio"
    VIDEO_SUBMIT = "video_submit"
    VIDEO_DOWNLOAD = "video_download"


class FallbackReason(StrEnum):
    GENERAL = "general"
    CONTEXT_WINDOW = "context_window"
    CONTENT_POLICY = "content_policy"


class Deadline(Strict):
    """How long the gateway waits, for one operation in one mode (json or stream).

    ``response_ms``: JSON, until the whole upstream answer arrived; stream, until
    the upstream sent response headers. ``idle_ms``: stream only, the longest
    silence between two upstream bytes (``None`` disables it). ``total_ms``: the
    whole request across attempts, retries and fallbacks.
    """

    response_ms: Positive
    idle_ms: Positive | None = None
    total_ms: Positive
    max_attempts: Positive

    def tightened_by(self, override: DeadlineOverride) -> Deadline:
        """Apply ``override``; raises ValueError if it loosens any value."""
        values = self.model_dump()
        for name, value in override.model_dump(exclude_none=True).items():
            current = values[name]
            if current is not None and value > current:
                raise ValueError(
                    f"execution policy override {name}={value} is looser than the "
                    f"global {current}; overrides may only tighten"
                )
            values[name] = value
        return Deadline(**values)


class DeadlineOverride(Strict):
    response_ms: Positive | None = None
    idle_ms: Positive | None = None
    total_ms: Positive | None = None
    max_attempts: Positive | None = None


class OperationPolicy(Strict):
    json_: Deadline = Field(alias="json")
    stream: Deadline

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class OperationPolicyOverride(Strict):
    json_: DeadlineOverride | None = Field(default=None, alias="json")
    stream: DeadlineOverride | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _policy(
    response_s: int,
    idle_s: int | None,
    total_s: int,
    attempts: int,
    *,
    json_response_s: int | None = None,
    json_idle: bool = False,
) -> OperationPolicy:
    stream = Deadline(
        response_ms=response_s * 1000,
        idle_ms=None if idle_s is None else idle_s * 1000,
        total_ms=total_s * 1000,
        max_attempts=attempts,
    )
    json = Deadline(
        response_ms=(json_response_s or response_s) * 1000,
        idle_ms=stream.idle_ms if json_idle else None,
        total_ms=total_s * 1000,
        max_attempts=attempts,
    )
    return OperationPolicy(json=json, stream=stream)


def default_execution_policies() -> dict[Operation, OperationPolicy]:
    """The spec's deadline matrix (defaults match the official SDKs' 600 s read timeout)."""
    return {
        Operation.CHAT: OperationPolicy(
            json=Deadline(response_ms=600_000, total_ms=1_800_000, max_attempts=3),
            stream=Deadline(
                response_ms=600_000, idle_ms=600_000, total_ms=3_600_000, max_attempts=3
            ),
        ),
        Operation.EMBEDDINGS: _policy(120, None, 300, 3),
        Operation.IMAGES: _policy(600, 300, 1800, 2),
        Operation.AUDIO: _policy(600, 300, 1800, 2, json_response_s=900),
        Operation.VIDEO_SUBMIT: _policy(120, None, 300, 2),
        Operation.VIDEO_DOWNLOAD: _policy(120, 120, 900, 2, json_idle=True),
    }


class StickySettings(Strict):
    """Sticky bindings: on by default, idle TTL renewed on success."""

    enabled: bool = True
    idle_ttl_seconds: Positive = 3600


class StickyOverride(Strict):
    enabled: bool | None = None
    idle_ttl_seconds: Positive | None = None


class CircuitSettings(Strict):
    """Circuit-breaker knobs, with the primary spec's defaults."""

    allowed_fails: NonNegative = 3
    cooldown_seconds: NonNegative = 5
    retry_after_seconds: NonNegative = 0
    failure_window_seconds: Positive = 60
    max_cooldown_seconds: Positive = 300
    half_open_probe_seconds: Positive = 30
    configuration_cooldown_seconds: Positive = 300
    throttle_cooldown_seconds: NonNegative = 5


class RouterSettings(Strict):
    """Gateway-wide router settings; pools and priority tiers may override the strategy."""

    strategy: Strategy = Strategy.SIMPLE_SHUFFLE
    circuit: CircuitSettings = CircuitSettings()
    execution_policies: dict[Operation, OperationPolicy] = Field(
        default_factory=default_execution_policies
    )
    sticky: StickySettings = StickySettings()
    stream_header_hold_ms: NonNegative = 10_000
    max_fallback_depth: Positive = 3

    @model_validator(mode="after")
    def _matrix_is_exhaustive(self) -> Self:
        missing = [op.value for op in Operation if op not in self.execution_policies]
        if missing:
            raise ValueError(
                "execution_policies must list every operation; missing: " + ", ".join(missing)
            )
        return self


class PoolSettings(Strict):
    """Per-pool overrides (keyed by public model, or ``model:group``)."""

    strategy: Strategy | None = None
    tier_strategies: dict[int, Strategy] = Field(default_factory=dict)
    sticky: StickyOverride = StickyOverride()


class Deployment(Strict):
    """One upstream target."""

    id: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")]
    model: Annotated[str, Field(min_length=1)]
    group: str | None = None
    provider: ProviderKind
    base_url: Annotated[str, Field(pattern=r"^https?://")]
    upstream_model: Annotated[str, Field(min_length=1)]
    credential: str | None = None
    weight: Annotated[float, Field(ge=0)] = 1.0
    priority: int = 0
    rpm_limit: Positive | None = None
    tpm_limit: Positive | None = None
    failure_domain: str | None = None
    input_price_per_mtok: Annotated[float, Field(ge=0)] | None = None
    output_price_per_mtok: Annotated[float, Field(ge=0)] | None = None
    modalities: frozenset[Literal["text", "image", "audio"]] = frozenset({"text"})
    operations: frozenset[Operation] = frozenset({Operation.CHAT, Operation.EMBEDDINGS})
    execution_policy_overrides: dict[Operation, OperationPolicyOverride] = Field(
        default_factory=dict
    )
    stream_usage: bool | None = None

    @property
    def asks_stream_usage(self) -> bool:
        """Whether streamed chats ask this upstream for a final usage chunk.

        Token counts of streams (tpm limits, usage-based-tpm, throughput) come
        from that chunk. On by default for ``openai``; OpenAI-compatible
        servers may reject ``stream_options``, so for them it is opt-in
        (``stream_usage: true``); Anthropic streams always report usage.
        """
        if self.stream_usage is not None:
            return self.stream_usage and self.provider is not ProviderKind.ANTHROPIC
        return self.provider is ProviderKind.OPENAI

    @property
    def pool_key(self) -> str:
        """``model`` or ``model:group``: the pool this deployment belongs to."""
        return f"{self.model}:{self.group}" if self.group else self.model

    @property
    def domain(self) -> str:
        """The failure domain; a deployment without one is its own domain."""
        return self.failure_domain or f"deployment:{self.id}"


class FallbackChain(Strict):
    model: str
    reason: FallbackReason = FallbackReason.GENERAL
    to: Annotated[list[str], Field(min_length=1)]


class ApiKey(Strict):
    """A client key, stored only as the SHA-256 hex digest of the key."""

    name: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    admin: bool = False


class GatewaySettings(Strict):
    """Request-surface settings.

    ``api_keys``: when non-empty, every request must present one of these keys
    (``Authorization: Bearer ...``); admin keys may also pin a deployment and
    read the deployment status view. When empty, the gateway relies on the
    platform (IAM authorization on AWS, loopback locally).
    """

    max_body_bytes: Positive = 4 * 1024 * 1024
    api_keys: list[ApiKey] = Field(default_factory=list)


class GatewayConfig(Strict):
    """The whole configuration, as stored in the table and cached by handlers."""

    router: RouterSettings = RouterSettings()
    gateway: GatewaySettings = GatewaySettings()
    pools: dict[str, PoolSettings] = Field(default_factory=dict)
    deployments: list[Deployment] = Field(default_factory=list)
    fallbacks: list[FallbackChain] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        ids = [d.id for d in self.deployments]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError("duplicate deployment ids: " + ", ".join(dupes))
        pools = {d.pool_key for d in self.deployments}
        unknown_pools = sorted(set(self.pools) - pools)
        if unknown_pools:
            raise ValueError(
                "pools settings name no deployment's pool: " + ", ".join(unknown_pools)
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

    def strategy_for(self, pool_key: str, tier: int) -> Strategy:
        """Tier override, then pool default, then the global strategy."""
        pool = self.pool_settings(pool_key)
        return pool.tier_strategies.get(tier) or pool.strategy or self.router.strategy

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

    def fallback_chain(self, model: str, reason: FallbackReason) -> list[str]:
        for chain in self.fallbacks:
            if chain.model == model and chain.reason == reason:
                return list(chain.to)
        return []
