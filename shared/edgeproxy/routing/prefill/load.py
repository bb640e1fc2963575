"""Prefill-aware choice (``reference/001``): uncached prompt tokens in prefill as the load.

A request counts one whatever its size, but a large uncached prompt holds a
replica for minutes while a small one takes milliseconds. Here the load of a
deployment is the uncached prompt tokens it is prefilling now, fleet-wide (a
lease in the usage buckets, taken with an attempt's start count and given
back at its first token: a long, cheap decode is no prefill pressure), and
the number of large requests among them.

- Two independent weighted draws; the first is kept unless the heavier of
  the two has at least ``intervene_tokens`` in prefill, then the lighter.
  Below that the weights decide alone (they encode cost and preference).
- A large request (``elephant_tokens`` uncached or more) skips deployments
  already at ``elephant_limit`` large prefills, so two of them queue on
  different replicas; when every candidate is at the limit the rule is
  dropped for the least loaded: it never refuses.
- A sticky binding is given up when its deployment's backlog is above
  ``affinity_ceiling`` (a cache-locality aid, not a promise to queue).

It never blocks, refuses or queues a request: it only picks another
deployment that was available anyway. Pure: loads in, a choice out.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.strategies import PrefillParams


@dataclass(frozen=True, slots=True)
class PrefillLoad:
    """What one deployment is prefilling now: uncached tokens, and large requests among them."""

    tokens: int = 0
    elephants: int = 0


IDLE = PrefillLoad()

Draw = Callable[[Sequence[Deployment], random.Random], Deployment]


def is_elephant(uncached_tokens: int, params: PrefillParams) -> bool:
    """Whether a request of ``uncached_tokens`` is large (001's elephant)."""
    return uncached_tokens >= params.elephant_tokens


def choose(
    candidates: Sequence[Deployment],
    loads: Mapping[str, PrefillLoad],
    uncached: Mapping[str, int],
    params: PrefillParams,
    rng: random.Random,
    draw: Draw,
) -> Deployment:
    """The deployment to try first. ``uncached``: the request's uncached tokens per deployment
    (``hints.uncached``); a deployment missing from ``loads`` is idle; ``draw``: one weighted
    draw (the strategy's own)."""
    if not candidates:
        raise ValueError("no candidates")

    def load(dep: Deployment) -> PrefillLoad:
        return loads.get(dep.id, IDLE)

    # A large request skips the deployments already at their limit of large prefills.
    capped = {
        d.id
        for d in candidates
        if is_elephant(uncached.get(d.id, 0), params) and load(d).elephants >= params.elephant_limit
    }
    pool = [d for d in candidates if d.id not in capped]
    if not pool:
        return min(candidates, key=lambda d: load(d).tokens)  # all at the limit: least loaded
    first, second = draw(pool, rng), draw(pool, rng)
    heavier = max(load(first).tokens, load(second).tokens)
    if heavier >= params.intervene_tokens and load(second).tokens < load(first).tokens:
        return second
    return first


def keep_binding(bound: PrefillLoad, params: PrefillParams) -> bool:
    """Whether a sticky binding is still followed: its deployment's backlog is within the ceiling."""
    return bound.tokens <= params.affinity_ceiling
