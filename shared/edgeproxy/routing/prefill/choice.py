"""001's prefill rule as the strategies and the binding check call it: loads from the snapshot.

The load of each deployment is its prefill lease as the pool read saw it
(``PoolSnapshot.prefill_of``); the request's uncached size on each is its
prompt estimate less the caller's fresh hint there (``hints.uncached``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.strategies import PrefillParams, StrategyParams, WeightedDrawParams
from edgeproxy.routing.ordering.inputs import StrategyInputs
from edgeproxy.routing.prefill.hints import Hint, uncached
from edgeproxy.routing.prefill.load import Draw, PrefillLoad, choose, is_elephant, keep_binding
from edgeproxy.routing.snapshot import PoolSnapshot


def load_of(snapshot: PoolSnapshot, deployment_id: str) -> PrefillLoad:
    """One deployment's prefill lease as the snapshot read it."""
    tokens, elephants = snapshot.prefill_of(deployment_id)
    return PrefillLoad(tokens, elephants)


def prefill_first(
    pool: Sequence[Deployment],
    inputs: StrategyInputs,
    params: PrefillParams,
    rng: random.Random,
    draw: Draw,
) -> Deployment:
    """The deployment 001's rule tries first among ``pool`` (non-empty, weights above 0)."""
    loads = {d.id: load_of(inputs.snapshot, d.id) for d in pool}
    sizes = {
        d.id: uncached(
            inputs.hints, d.id, inputs.prompt_tokens, inputs.now, params.hint_ttl_seconds
        )
        for d in pool
    }
    pick = choose(pool, loads, sizes, params, rng, draw)
    if inputs.notes is not None:
        load = loads[pick.id]
        large = " (large)" if is_elephant(sizes[pick.id], params) else ""
        inputs.notes.remark(
            pick.id, f"prefill: {sizes[pick.id]} uncached{large}; {load.tokens} in prefill here"
        )
    return pick


def binding_kept(snapshot: PoolSnapshot, deployment_id: str, params: PrefillParams) -> bool:
    """Whether a binding to ``deployment_id`` is followed under 001's affinity ceiling."""
    return keep_binding(load_of(snapshot, deployment_id), params)


def prefill_params(params: StrategyParams | None) -> PrefillParams | None:
    """The prefill rule's parameters when a tier's strategy runs it (None: the rule is off)."""
    return params.prefill if isinstance(params, WeightedDrawParams) else None


def lease_of(
    params: PrefillParams | None,
    deployment_id: str,
    prompt_tokens: int,
    hints: Mapping[str, Hint],
    now: float,
) -> tuple[int, int]:
    """The prefill lease an attempt on ``deployment_id`` takes: (uncached tokens, 1 if large).

    (0, 0) when the rule is off for its tier: nothing is leased, nothing written.
    """
    if params is None:
        return 0, 0
    size = uncached(hints, deployment_id, prompt_tokens, now, params.hint_ttl_seconds)
    return size, int(is_elephant(size, params))
