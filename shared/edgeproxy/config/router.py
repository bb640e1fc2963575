"""Router settings (``router:``) and the per-pool overrides of them (``pools:``)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Self

from pydantic import Field, field_validator, model_validator

from edgeproxy.config.base import NonNegative, Positive, Strict
from edgeproxy.config.policies import Operation, OperationPolicy, default_execution_policies
from edgeproxy.config.presets import Preset, with_preset
from edgeproxy.config.strategies import RawParams, Strategy, check_levels

__all__ = [
    "CircuitSettings",
    "Continuation",
    "PoolSettings",
    "RouterSettings",
    "StickyOverride",
    "StickySettings",
    "Strategy",
]


class Continuation(StrEnum):
    """What a stream cut after its commit point may do (``pools.*`` and ``fallbacks[*]``)."""

    OFF = "off"  # end it with the in-band error (the default)
    PREFILL = "prefill"  # continue it on a ``supports_prefill`` deployment


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
    # A failed probe doubles the cooldown up to max_cooldown_seconds (000);
    # a number holds it there instead, for prompt recovery (interactive: 5).
    max_probe_interval_seconds: Positive | None = None
    half_open_probe_seconds: Positive = 30
    configuration_cooldown_seconds: Positive = 300
    # The least a capacity circuit stays open after a provider 429 (000): the
    # provider's Retry-After may lengthen it, never shorten it ...
    throttle_cooldown_seconds: NonNegative = 5
    # ... unless this is set (interactive): then a Retry-After is followed
    # exactly, and the cooldown applies only to a 429 that names no wait.
    throttle_exact_retry_after: bool = False


class RouterSettings(Strict):
    """Gateway-wide router settings; pools and priority tiers may override the strategy.

    ``preset`` supplies the defaults of the settings left out (``config/presets.py``).
    ``continuation``: what pools and ``general`` fallback chains that set none do
    (with ``prefill``, only those with a ``supports_prefill`` deployment continue).
    """

    preset: Preset = Preset.PATIENT
    strategy: Strategy = Strategy.SIMPLE_SHUFFLE
    # Per strategy name, for every pool (config.strategies: levels merge field by field).
    strategy_params: dict[Strategy, RawParams] = Field(default_factory=dict)
    circuit: CircuitSettings = CircuitSettings()
    execution_policies: dict[Operation, OperationPolicy] = Field(
        default_factory=default_execution_policies
    )
    sticky: StickySettings = StickySettings()
    stream_header_hold_ms: NonNegative = 10_000
    max_fallback_depth: Positive = 3
    continuation: Continuation = Continuation.OFF
    # How long a request waits for a capacity slot (``max_parallel_requests``) when every
    # candidate is at its cap, polling with a growing delay, before it answers 429.
    capacity_wait_seconds: Annotated[float, Field(ge=0, le=60)] = 5.0

    @model_validator(mode="before")
    @classmethod
    def _preset_defaults(cls, data: Any) -> Any:
        return with_preset(data)

    @field_validator("strategy_params")
    @classmethod
    def _params_are_known(cls, levels: dict[Strategy, RawParams]) -> dict[Strategy, RawParams]:
        check_levels(levels)
        return levels

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
    strategy_params: dict[Strategy, RawParams] = Field(default_factory=dict)
    tier_strategy_params: dict[int, dict[Strategy, RawParams]] = Field(default_factory=dict)
    sticky: StickyOverride = StickyOverride()
    continuation: Continuation | None = None  # None: ``router.continuation``

    @field_validator("strategy_params")
    @classmethod
    def _params_are_known(cls, levels: dict[Strategy, RawParams]) -> dict[Strategy, RawParams]:
        check_levels(levels)
        return levels

    @field_validator("tier_strategy_params")
    @classmethod
    def _tier_params_are_known(
        cls, tiers: dict[int, dict[Strategy, RawParams]]
    ) -> dict[int, dict[Strategy, RawParams]]:
        for tier, levels in tiers.items():
            check_levels(levels, f"tier {tier}: ")
        return tiers
