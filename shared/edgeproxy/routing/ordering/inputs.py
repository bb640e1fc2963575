"""What the ordering strategies rank by: the pool's shared state and the tier's parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from edgeproxy.config.strategies import LoadAware, StrategyParams
from edgeproxy.routing.explain.notes import Notes
from edgeproxy.routing.prefill.hints import Hint
from edgeproxy.routing.snapshot import PoolSnapshot


@dataclass(frozen=True, slots=True)
class StrategyInputs:
    """The shared state strategies rank by, and the parameters of the tier's strategy.

    ``params``: None means the strategy's defaults. ``notes``: where the rank
    helpers put down what they ordered by (``routing.explain``), if anyone asks.
    ``prompt_tokens``, ``hints`` (the caller's, by deployment) and ``now``: what
    001's prefill rule estimates the request's uncached prompt tokens from.
    """

    snapshot: PoolSnapshot
    minute: int
    caller: str = ""
    params: StrategyParams | None = None
    notes: Notes | None = None
    protocol: str = ""  # the inbound protocol (``openai.chat``...): part of hash_affinity's key
    prompt_tokens: int = 0
    hints: Mapping[str, Hint] = field(default_factory=dict)
    now: float = 0.0

    def intervene(self) -> int | None:
        """The power-of-two-choices threshold (None: never intervene)."""
        return self.params.intervene_inflight if isinstance(self.params, LoadAware) else None
