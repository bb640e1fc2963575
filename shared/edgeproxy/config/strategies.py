"""The ordering strategies' names and parameters: a model per strategy, validated on load and writes.

A strategy's parameters are set under ``strategy_params`` keyed by the
strategy's name, at three levels that merge field by field (the most
specific wins): ``router.strategy_params`` (every pool),
``pools.<pool>.strategy_params`` and ``pools.<pool>.tier_strategy_params.<tier>``::

    router:
      strategy: simple-shuffle
      strategy_params:
        simple-shuffle: {intervene_inflight: 4}
    pools:
      chat:
        tier_strategy_params:
          2: {power-of-two-choices: {intervene_inflight: 1}}

Unknown strategy names and unknown parameter keys are refused, with the
names the strategy does take. ``PARAMS`` is the registry's parameter half
(``routing.ordering.registry`` adds each strategy's ranker and checks both agree).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, get_args

from pydantic import ConfigDict, Field, ValidationError

from edgeproxy.config.base import Strict


class Strategy(StrEnum):
    """The eight of the primary spec, the four of 003 and 001's power-of-two-choices."""

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
    POWER_OF_TWO_CHOICES = "power-of-two-choices"


# 001's intervene threshold, counted in attempts in flight fleet-wide (the
# in-flight counters of the last two minute buckets): below it, weights (or
# the metric) decide alone, since they encode cost and preference, not only
# capacity.
DEFAULT_INTERVENE_INFLIGHT = 8

_INTERVENE_DOC = (
    "keep the less busy of two weighted draws when the first has at least this many "
    "attempts in flight fleet-wide"
)

RawParams = dict[str, Any]  # one strategy's parameters as written, validated by its model


class StrategyParams(Strict):
    """A strategy without parameters (the base of every parameter model).

    Strict types: ``true`` is not a count and ``"8"`` is not a number.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class LoadAware(StrategyParams):
    """A strategy that applies 001's power-of-two-choices rule."""

    intervene_inflight: Annotated[int, Field(ge=0)] | None = DEFAULT_INTERVENE_INFLIGHT


class PrefillParams(StrategyParams):
    """001's prefill-aware rules (``routing.prefill``), with 001's defaults.

    The load is the uncached prompt tokens in prefill fleet-wide (a lease from
    an attempt's start to its first token, in the usage buckets).
    """

    intervene_tokens: Annotated[int, Field(ge=0)] = Field(
        50_000,
        description="keep the lighter of two weighted draws when the heavier has at least "
        "this many uncached prompt tokens in prefill",
    )
    elephant_tokens: Annotated[int, Field(ge=1)] = Field(
        200_000, description="a request with at least this many uncached prompt tokens is large"
    )
    elephant_limit: Annotated[int, Field(ge=1)] = Field(
        1, description="large prefills a deployment takes at once before large requests skip it"
    )
    affinity_ceiling: Annotated[int, Field(ge=0)] = Field(
        150_000,
        description="a sticky binding is given up while its deployment has more uncached "
        "prompt tokens than this in prefill",
    )
    hint_ttl_seconds: Annotated[float, Field(ge=0, le=86_400)] = Field(
        1200.0,
        description="how long a caller's last prompt size on a deployment counts as cached",
    )


class WeightedDrawParams(LoadAware):
    """``simple-shuffle``: weighted draws, load-aware only past the threshold when one is set.

    Off by default: the rule needs the in-flight counters in every routing read,
    which measured 24.6 -> 36.9 ms at p50 for one client on the embedded store
    (the default pool's read grows from 10 keys to 16, usage items included).
    ``prefill`` (off by default, for the same read): 001's prefill-aware rules.
    """

    intervene_inflight: Annotated[int, Field(ge=0)] | None = Field(
        None, description=_INTERVENE_DOC + "; null (the default): plain weighted draws"
    )
    prefill: PrefillParams | None = Field(
        None,
        description="the prefill-aware choice ({} for its defaults); null (the default): off",
    )


class TwoChoicesParams(LoadAware):
    """``power-of-two-choices``: two weighted draws, the less busy kept."""

    intervene_inflight: Annotated[int, Field(ge=0)] | None = Field(
        1, description=_INTERVENE_DOC + " (0 or 1: on any difference)"
    )


class RankedParams(LoadAware):
    """Metric strategies: power-of-two-choices among deployments whose metric ties."""

    intervene_inflight: Annotated[int, Field(ge=0)] | None = Field(
        DEFAULT_INTERVENE_INFLIGHT,
        description="among equal metric values, " + _INTERVENE_DOC + "; null: the first draw",
    )


PARAMS: dict[Strategy, type[StrategyParams]] = {
    Strategy.SIMPLE_SHUFFLE: WeightedDrawParams,
    Strategy.POWER_OF_TWO_CHOICES: TwoChoicesParams,
    Strategy.LEAST_BUSY: RankedParams,
    Strategy.USAGE_BASED_RPM: RankedParams,
    Strategy.USAGE_BASED_TPM: RankedParams,
    Strategy.LATENCY_BASED: RankedParams,
    Strategy.THROUGHPUT_BASED: RankedParams,
    Strategy.PRICE_BASED: RankedParams,
    Strategy.HEALTH_AWARE: RankedParams,
    Strategy.HASH_AFFINITY: StrategyParams,
    Strategy.WEIGHTED_RANDOM: StrategyParams,
    Strategy.WEIGHT_PRIORITY: StrategyParams,
    Strategy.WEIGHTED_ROUND_ROBIN: RankedParams,
}


def parse_params(strategy: Strategy, raw: Mapping[str, Any]) -> StrategyParams:
    """``raw`` as ``strategy``'s parameters; ValueError naming the key and what is allowed."""
    model = PARAMS[strategy]
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        known = ", ".join(model.model_fields) or "no parameters"
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"]) or "(parameters)"
            if error["type"] == "extra_forbidden":
                problems.append(f"unknown parameter {where!r} ({strategy.value} takes: {known})")
            else:
                problems.append(f"{where}: {error['msg']}")
        raise ValueError(f"{strategy.value}: " + "; ".join(problems)) from None


def check_levels(levels: Mapping[Strategy, Mapping[str, Any]], where: str = "") -> None:
    """Validate one level's ``strategy_params`` (each strategy's keys on their own)."""
    for strategy, raw in levels.items():
        try:
            parse_params(strategy, raw)
        except ValueError as exc:
            raise ValueError(f"{where}{exc}") from None


def merged(strategy: Strategy, *levels: Mapping[Strategy, Mapping[str, Any]]) -> StrategyParams:
    """``strategy``'s parameters with ``levels`` applied in order (later ones win)."""
    raw: dict[str, Any] = {}
    for level in levels:
        raw.update(level.get(strategy, {}))
    return parse_params(strategy, raw)


def describe(strategy: Strategy) -> list[dict[str, Any]]:
    """``strategy``'s parameters as ``GET /admin/strategies`` and the docs list them.

    A parameter that is a group of settings (``prefill``) is listed, then each
    of its settings as ``<group>.<name>``.
    """
    return _rows(PARAMS[strategy])


def _rows(model: type[StrategyParams], prefix: str = "") -> list[dict[str, Any]]:
    schema = model.model_json_schema()
    rows = []
    for name, field in model.model_fields.items():
        prop = schema["properties"][name]
        options = prop.get("anyOf", [prop])
        types = [o.get("type", "object" if "$ref" in o else "") for o in options]
        numeric = (o for o in options if o.get("type") in ("integer", "number"))
        bounds: dict[str, Any] = next(numeric, {})
        rows.append(
            {
                "name": prefix + name,
                "type": " or ".join(t for t in types if t),
                "minimum": bounds.get("minimum"),
                "maximum": bounds.get("maximum"),
                "default": field.default,
                "description": field.description or "",
            }
        )
        groups = [a for a in get_args(field.annotation) if isinstance(a, type)]
        for group in groups:
            if issubclass(group, StrategyParams):
                rows.extend(_rows(group, f"{prefix}{name}."))
    return rows
